package gpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/internal/mlirtest"
	"github.com/strata-ir/strata/ir"
)

// libraryHost is a host function holding one gpu.library_matmul of the
// given properties and operand types.
func libraryHost(props, a, b, c string) string {
	return fmt.Sprintf(`func.func @f(%%a: %[2]s, %%b: %[3]s, %%c: %[4]s) {
  "gpu.library_matmul"(%%a, %%b, %%c) %[1]s : (%[2]s, %[3]s, %[4]s) -> ()
  return
}`, props, a, b, c)
}

// biasHost is libraryHost with a bias operand of type bias.
func biasHost(a, b, c, bias string) string {
	return fmt.Sprintf(`func.func @f(%%a: %[1]s, %%b: %[2]s, %%c: %[3]s, %%d: %[4]s) {
  "gpu.library_matmul"(%%a, %%b, %%c, %%d) : (%[1]s, %[2]s, %[3]s, %[4]s) -> ()
  return
}`, a, b, c, bias)
}

// TestLibraryMatmulVerify checks the shapes and types gpu.library_matmul
// accepts, with each transpose, and those it refuses.
func TestLibraryMatmulVerify(t *testing.T) {
	for _, src := range []string{
		libraryHost("", "memref<4x3xbf16>", "memref<3x5xbf16>", "memref<4x5xbf16>"),
		libraryHost("<{transpose_a, transpose_b}>", "memref<2x3x4xf16>", "memref<2x5x3xf16>", "memref<2x4x5xf32>"),
		libraryHost("<{transpose_b}>", "memref<?x3xbf16>", "memref<?x3xbf16>", "memref<?x?xbf16>"),
		// A shared by every batch (an unstrided 1×1 convolution).
		libraryHost("", "memref<4x3xbf16>", "memref<2x3x5xbf16>", "memref<2x4x5xbf16>"),
		biasHost("memref<4x3xbf16>", "memref<3x5xbf16>", "memref<4x5xbf16>", "memref<5xbf16>"),
		biasHost("memref<?x3xf16>", "memref<3x5xf16>", "memref<?x5xf16>", "memref<5xf16>"),
	} {
		ctx := newCtx()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{})
		if err == nil {
			err = ir.Verify(m)
		}
		if err != nil {
			t.Errorf("%s\n: %v", src, err)
		}
	}
	for _, c := range []struct{ name, src, want string }{
		{"k-mismatch", libraryHost("", "memref<4x3xbf16>", "memref<2x5xbf16>", "memref<4x5xbf16>"), "K is 3 in one operand and 2 in another"},
		{"transposed-a-mismatch", libraryHost("<{transpose_a}>", "memref<4x3xbf16>", "memref<3x5xbf16>", "memref<4x5xbf16>"), "M is 3 in one operand and 4 in another"},
		{"batch-mismatch", libraryHost("", "memref<2x4x3xbf16>", "memref<3x3x5xbf16>", "memref<2x4x5xbf16>"), "batch dimension 0 is 2"},
		{"shared-a-mismatch", libraryHost("", "memref<4x3xbf16>", "memref<2x3x5xbf16>", "memref<2x6x5xbf16>"), "M is 4 in one operand and 6 in another"},
		{"rank", libraryHost("", "memref<3xbf16>", "memref<3xbf16>", "memref<3xbf16>"), "one rank of at least 2"},
		{"f32-operands", libraryHost("", "memref<4x3xf32>", "memref<3x5xf32>", "memref<4x5xf32>"), "A must hold bf16 or f16"},
		{"mixed-operands", libraryHost("", "memref<4x3xbf16>", "memref<3x5xf16>", "memref<4x5xf32>"), "B must hold A's bf16"},
		{"f16-result-of-bf16", libraryHost("", "memref<4x3xbf16>", "memref<3x5xbf16>", "memref<4x5xf16>"), "C must hold bf16 or f32"},
		{"empty-k", libraryHost("", "memref<4x0xbf16>", "memref<0x5xbf16>", "memref<4x5xbf16>"), "K must be positive"},
		{"bias-f32-result", biasHost("memref<4x3xbf16>", "memref<3x5xbf16>", "memref<4x5xf32>", "memref<5xbf16>"), "a bias must hold A's bf16, as C must"},
		{"bias-f32", biasHost("memref<4x3xbf16>", "memref<3x5xbf16>", "memref<4x5xbf16>", "memref<5xf32>"), "a bias must hold A's bf16, as C must"},
		{"bias-shape", biasHost("memref<4x3xbf16>", "memref<3x5xbf16>", "memref<4x5xbf16>", "memref<4xbf16>"), "the bias must be [N] = [5], not [4]"},
		{"bias-rank", biasHost("memref<4x3xbf16>", "memref<3x5xbf16>", "memref<4x5xbf16>", "memref<1x5xbf16>"), "the bias must be [N] = [5]"},
		{"not-unit", libraryHost("<{transpose_a = 1 : i64}>", "memref<3x4xbf16>", "memref<3x5xbf16>", "memref<4x5xbf16>"), "'transpose_a' must be a unit attribute"},
		{"in-kernel", `module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<4x3xbf16>, %b: memref<3x5xbf16>, %c: memref<4x5xbf16>) kernel {
      "gpu.library_matmul"(%a, %b, %c) : (memref<4x3xbf16>, memref<3x5xbf16>, memref<4x5xbf16>) -> ()
      gpu.return
    }
  }
}`, "is a host op"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mlirtest.VerifyError(t, newCtx(), c.src); !strings.Contains(got, c.want) {
				t.Errorf("got error %q, want %q", got, c.want)
			}
		})
	}
}

// TestLibraryMatmulBuilder builds the op with each transpose and reads the
// properties back.
func TestLibraryMatmulBuilder(t *testing.T) {
	ctx := newCtx()
	src := libraryHost("", "memref<3x4xbf16>", "memref<5x3xbf16>", "memref<4x5xbf16>")
	m, err := ir.Parse(ctx, src, ir.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := ir.NewSymTable(m).Lookup("f").Region(0).Front().First()
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(old)
	op := gpu.LibraryMatmul(b, old.Loc(), old.Operand(0), old.Operand(1), old.Operand(2), nil, true, true)
	old.Erase()
	if ta, tb := gpu.LibraryTransposes(op); !ta || !tb {
		t.Errorf("LibraryTransposes = %v, %v", ta, tb)
	}
	if bias := gpu.LibraryBias(op); bias != nil {
		t.Errorf("LibraryBias = %v without a bias", bias)
	}
	if err := ir.Verify(m); err != nil {
		t.Error(err)
	}
}

// convHost is a host function holding one gpu.library_conv2d of the given
// properties and operand types.
func convHost(props, x, w, y string) string {
	return fmt.Sprintf(`func.func @f(%%x: %[2]s, %%w: %[3]s, %%y: %[4]s) {
  "gpu.library_conv2d"(%%x, %%w, %%y) %[1]s : (%[2]s, %[3]s, %[4]s) -> ()
  return
}`, props, x, w, y)
}

// TestLibraryConv2DVerify checks the shapes, types and properties
// gpu.library_conv2d accepts and those it refuses.
func TestLibraryConv2DVerify(t *testing.T) {
	geo := func(s, p, d string) string {
		return fmt.Sprintf("<{strides = array<i64: %s>, padding = array<i64: %s>, dilations = array<i64: %s>}>", s, p, d)
	}
	std := geo("1, 1", "1, 1", "1, 1")
	for _, src := range []string{
		convHost(std, "memref<2x3x8x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x8x8xbf16>"),
		convHost(geo("2, 1", "3, 0", "1, 2"), "memref<1x3x9x8xf16>", "memref<5x3x7x2xf16>", "memref<1x5x5x6xf16>"),
	} {
		ctx := newCtx()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{})
		if err == nil {
			err = ir.Verify(m)
		}
		if err != nil {
			t.Errorf("%s\n: %v", src, err)
		}
	}
	for _, c := range []struct{ name, src, want string }{
		{"channels", convHost(std, "memref<2x3x8x8xbf16>", "memref<4x5x3x3xbf16>", "memref<2x4x8x8xbf16>"), "w has 5 input channels and x 3"},
		{"out-shape", convHost(std, "memref<2x3x8x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x6x6xbf16>"), "y must be [2 4 8 8], not [2 4 6 6]"},
		{"window", convHost(geo("1, 1", "0, 0", "1, 1"), "memref<2x3x2x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x1x6xbf16>"), "does not fit in x's padded [2, 8]"},
		{"f32", convHost(std, "memref<2x3x8x8xf32>", "memref<4x3x3x3xf32>", "memref<2x4x8x8xf32>"), "must hold bf16 or f16, not f32"},
		{"mixed", convHost(std, "memref<2x3x8x8xbf16>", "memref<4x3x3x3xf16>", "memref<2x4x8x8xbf16>"), "must hold x's bf16, not f16"},
		{"dynamic", convHost(std, "memref<?x3x8x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x8x8xbf16>"), "static shape"},
		{"rank", convHost(std, "memref<3x8x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x8x8xbf16>"), "must be a 4-D memref"},
		{"stride-0", convHost(geo("0, 1", "1, 1", "1, 1"), "memref<2x3x8x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x8x8xbf16>"), "'strides' must be at least 1"},
		{"padding-missing", convHost("<{strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}>", "memref<2x3x8x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x8x8xbf16>"), "'padding' must be an array<i64> of two values"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mlirtest.VerifyError(t, newCtx(), c.src); !strings.Contains(got, c.want) {
				t.Errorf("got error %q, want %q", got, c.want)
			}
		})
	}
}

// TestLibraryConv2DDirection checks the direction property: the three
// values verify, another value or type does not.
func TestLibraryConv2DDirection(t *testing.T) {
	geo := "strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilations = array<i64: 1, 1>"
	for _, d := range []string{"forward", "backward_data", "backward_filter"} {
		src := convHost(fmt.Sprintf("<{%s, direction = %q}>", geo, d), "memref<2x3x8x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x8x8xbf16>")
		m, err := ir.Parse(newCtx(), src, ir.ParseOptions{})
		if err == nil {
			err = ir.Verify(m)
		}
		if err != nil {
			t.Errorf("direction %s: %v", d, err)
		}
	}
	for _, c := range []struct{ attr, want string }{
		{`direction = "sideways"`, `'direction' must be "forward", "backward_data" or "backward_filter", not "sideways"`},
		{`direction = 1 : i64`, `'direction' must be a string`},
	} {
		src := convHost("<{"+geo+", "+c.attr+"}>", "memref<2x3x8x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x8x8xbf16>")
		if got := mlirtest.VerifyError(t, newCtx(), src); !strings.Contains(got, c.want) {
			t.Errorf("%s: got error %q, want %q", c.attr, got, c.want)
		}
	}
}

// TestLibraryConv2DLayout checks the layout property: "NHWC" takes the
// operands channels last (and checks them in that order), another value
// is refused.
func TestLibraryConv2DLayout(t *testing.T) {
	geo := "strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilations = array<i64: 1, 1>"
	nhwc := "<{" + geo + `, layout = "NHWC"}>`
	src := convHost(nhwc, "memref<2x8x8x3xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x4x4xbf16>")
	m, err := ir.Parse(newCtx(), src, ir.ParseOptions{})
	if err == nil {
		err = ir.Verify(m)
	}
	if err != nil {
		t.Errorf("NHWC: %v", err)
	}
	for _, c := range []struct{ name, src, want string }{
		{"nchw-shapes", convHost(nhwc, "memref<2x3x8x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x4x4xbf16>"), "w has 3 input channels and x 8"},
		{"out-shape", convHost(nhwc, "memref<2x8x8x3xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x4x5xbf16>"), "y must be [2 4 4 4], not [2 5 4 4]"},
		{"value", convHost("<{"+geo+`, layout = "NCHW"}>`, "memref<2x3x8x8xbf16>", "memref<4x3x3x3xbf16>", "memref<2x4x4x4xbf16>"), `'layout' must be "NHWC" (or absent for NCHW)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mlirtest.VerifyError(t, newCtx(), c.src); !strings.Contains(got, c.want) {
				t.Errorf("got error %q, want %q", got, c.want)
			}
		})
	}
}
