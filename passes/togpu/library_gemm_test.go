package togpu_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/lower"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
	"pgregory.net/rapid"
)

// libraryPipeline is lower-to-gpu with the matmuls on cuBLASLt.
const libraryPipeline = "builtin.module(lower-to-loop,convert-loop-to-gpu{matmul=cublaslt},canonicalize,cse)"

// libraryCases are products matmul=cublaslt hands to gpu.library_matmul
// (library: how many), with the kernels left (the epilogues, and any
// other nest): odd sizes with a fused bias and gelu, a bare product the
// library writes straight into the result, each operand stored
// transposed, batches, f16, and an f32 product that stays a kernel; a
// graph.matmul's bias goes to the library (bias: the bias operand's type
// expected last on the library op), a bias added after the rounding does
// not.
var libraryCases = []struct {
	name, args, result, body string
	library, kernels         int
	transposes               string // the transpose properties expected, in order
	bias                     string
}{
	{"bias-bare", "%x: tensor<37x19xbf16>, %w: tensor<19x23xbf16>, %b: tensor<23xbf16>", "tensor<37x23xbf16>", `
  %r = "graph.matmul"(%x, %w, %b) : (tensor<37x19xbf16>, tensor<19x23xbf16>, tensor<23xbf16>) -> tensor<37x23xbf16>`, 1, 0, "", "memref<23xbf16>"},
	{"bias-gelu-b-transposed", "%x: tensor<9x16xf16>, %w: tensor<5x16xf16>, %b: tensor<5xf16>", "tensor<9x5xf16>", `
  %t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<5x16xf16>) -> tensor<16x5xf16>
  %0 = "graph.matmul"(%x, %t, %b) : (tensor<9x16xf16>, tensor<16x5xf16>, tensor<5xf16>) -> tensor<9x5xf16>
  %r = "graph.gelu"(%0) <{approximate = "tanh"}> : (tensor<9x5xf16>) -> tensor<9x5xf16>`, 1, 1, "transpose_b", "memref<5xf16>"},
	{"bias-n-one", "%x: tensor<6x4xbf16>, %w: tensor<4x1xbf16>, %b: tensor<1xbf16>", "tensor<6x1xbf16>", `
  %r = "graph.matmul"(%x, %w, %b) : (tensor<6x4xbf16>, tensor<4x1xbf16>, tensor<1xbf16>) -> tensor<6x1xbf16>`, 1, 0, "", "memref<1xbf16>"},
	{"odd-bias-gelu", "%x: tensor<37x19xbf16>, %w: tensor<19x23xbf16>, %b: tensor<23xbf16>", "tensor<37x23xbf16>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<37x19xbf16>, tensor<19x23xbf16>) -> tensor<37x23xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<37x23xbf16>, tensor<23xbf16>) -> tensor<37x23xbf16>
  %r = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<37x23xbf16>) -> tensor<37x23xbf16>`, 1, 1, "", ""},
	{"bare", "%x: tensor<5x7xbf16>, %w: tensor<7x3xbf16>", "tensor<5x3xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<5x7xbf16>, tensor<7x3xbf16>) -> tensor<5x3xbf16>`, 1, 0, "", ""},
	{"a-transposed", "%x: tensor<9x13xbf16>, %w: tensor<9x6xbf16>", "tensor<13x6xbf16>", `
  %t = "graph.transpose"(%x) <{perm = array<i64: 1, 0>}> : (tensor<9x13xbf16>) -> tensor<13x9xbf16>
  %0 = "graph.matmul"(%t, %w) : (tensor<13x9xbf16>, tensor<9x6xbf16>) -> tensor<13x6xbf16>
  %r = "graph.relu"(%0) : (tensor<13x6xbf16>) -> tensor<13x6xbf16>`, 1, 1, "transpose_a", ""},
	{"b-transposed-f16", "%x: tensor<11x8xf16>, %w: tensor<5x8xf16>", "tensor<11x5xf16>", `
  %t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<5x8xf16>) -> tensor<8x5xf16>
  %r = "graph.matmul"(%x, %t) : (tensor<11x8xf16>, tensor<8x5xf16>) -> tensor<11x5xf16>`, 1, 0, "transpose_b", ""},
	{"batched-both-transposed", "%x: tensor<2x3x7x5xbf16>, %w: tensor<2x3x4x7xbf16>", "tensor<2x3x5x4xbf16>", `
  %tx = "graph.transpose"(%x) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<2x3x7x5xbf16>) -> tensor<2x3x5x7xbf16>
  %tw = "graph.transpose"(%w) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<2x3x4x7xbf16>) -> tensor<2x3x7x4xbf16>
  %0 = "graph.matmul"(%tx, %tw) : (tensor<2x3x5x7xbf16>, tensor<2x3x7x4xbf16>) -> tensor<2x3x5x4xbf16>
  %r = "graph.mul"(%0, %0) : (tensor<2x3x5x4xbf16>, tensor<2x3x5x4xbf16>) -> tensor<2x3x5x4xbf16>`, 1, 1, "transpose_a, transpose_b", ""},
	// Dimensions of size 1 are indexed by the constant 0, not the nest's
	// induction variable (TestGPUCuBLASLt drew b=1 and found no library op).
	{"batch-of-one-relu", "%x: tensor<1x27x6xbf16>, %w: tensor<1x6x15xbf16>", "tensor<1x27x15xbf16>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<1x27x6xbf16>, tensor<1x6x15xbf16>) -> tensor<1x27x15xbf16>
  %r = "graph.relu"(%0) : (tensor<1x27x15xbf16>) -> tensor<1x27x15xbf16>`, 1, 1, "", ""},
	{"m-one-b-transposed", "%x: tensor<1x9xbf16>, %w: tensor<4x9xbf16>", "tensor<1x4xbf16>", `
  %t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<4x9xbf16>) -> tensor<9x4xbf16>
  %r = "graph.matmul"(%x, %t) : (tensor<1x9xbf16>, tensor<9x4xbf16>) -> tensor<1x4xbf16>`, 1, 0, "transpose_b", ""},
	{"k-one", "%x: tensor<7x1xf16>, %w: tensor<1x5xf16>", "tensor<7x5xf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<7x1xf16>, tensor<1x5xf16>) -> tensor<7x5xf16>`, 1, 0, "", ""},
	{"all-one", "%x: tensor<1x1x1xbf16>, %w: tensor<1x1x1xbf16>", "tensor<1x1x1xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<1x1x1xbf16>, tensor<1x1x1xbf16>) -> tensor<1x1x1xbf16>`, 1, 0, "", ""},
	{"f32-stays-a-kernel", "%x: tensor<6x4xf32>, %w: tensor<4x3xf32>", "tensor<6x3xf32>", `
  %r = "graph.matmul"(%x, %w) : (tensor<6x4xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>`, 0, 1, "", ""},
}

// libraryOperands matches a gpu.library_matmul's operands and their types.
var libraryOperands = regexp.MustCompile(`"gpu\.library_matmul"\(([^)]*)\)[^:]*: \(([^)]*)\) -> \(\)`)

// TestLibraryMatmulLowering lowers each case with matmul=cublaslt, counts
// the library ops and kernels, and runs the lowered program in the
// interpreter (gpu.library_matmul's reference meaning) against the graph
// program on random inputs.
func TestLibraryMatmulLowering(t *testing.T) {
	for _, tc := range libraryCases {
		t.Run(tc.name, func(t *testing.T) {
			p := &passtest.Program{Func: "main", Source: fmt.Sprintf("func.func @main(%s) -> %s {%s\n  return %%r : %s\n}\n", tc.args, tc.result, tc.body, tc.result)}
			text := lowerText(t, p, libraryPipeline)
			if got := strings.Count(text, `"gpu.library_matmul"`); got != tc.library {
				t.Errorf("%d gpu.library_matmul ops, want %d:\n%s", got, tc.library, text)
			}
			if got := strings.Count(text, "gpu.launch_func"); got != tc.kernels {
				t.Errorf("%d kernel launches, want %d:\n%s", got, tc.kernels, text)
			}
			found := libraryOperands.FindAllStringSubmatch(text, -1)
			if len(found) != tc.library {
				t.Errorf("read the operands of %d library ops, want %d", len(found), tc.library)
			}
			for _, ops := range found {
				if biased := strings.Count(ops[1], ",") == 3; biased != (tc.bias != "") || biased && !strings.HasSuffix(ops[2], ", "+tc.bias) {
					t.Errorf("library op with operands (%s) of types (%s), want the bias %q:\n%s", ops[1], ops[2], tc.bias, text)
				}
			}
			if tc.transposes != "" && !strings.Contains(text, "<{"+tc.transposes+"}>") {
				t.Errorf("no <{%s}> on the library op:\n%s", tc.transposes, text)
			}
			if strings.Contains(text, `mapping = "mma"`) {
				t.Errorf("an mma kernel is left:\n%s", text)
			}
			if err := passtest.CheckSemantics(p, libraryPipeline, 3); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLibraryMatmulF32Product checks the product buffer of an epilogue
// that does not start by rounding the sum: it holds the f32 sum, which
// the epilogue kernel reads.
func TestLibraryMatmulF32Product(t *testing.T) {
	const src = `func.func @main(%a: memref<3x5xbf16>, %b: memref<5x4xbf16>, %c: memref<3x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %z = arith.constant 0.0 : f32
  "loop.parallel"(%c0, %c0, %c3, %c4, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %s = "loop.for"(%c0, %c5, %c1, %z) ({
    ^bb0(%k: index, %acc: f32):
      %x = loop.load %a[%i, %k] : memref<3x5xbf16>
      %y = loop.load %b[%k, %j] : memref<5x4xbf16>
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %n = arith.addf %acc, %p : f32
      loop.yield %n : f32
    }) : (index, index, index, f32) -> f32
    %d = arith.mulf %s, %s : f32
    loop.store %d, %c[%i, %j] : memref<3x4xf32>
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  return
}
`
	run := func(pipeline string) []float64 {
		ctx := dialects.NewContext()
		p := &passtest.Program{Func: "main", Source: src}
		m, err := p.Parse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if pipeline != "" {
			text := lowerText(t, p, pipeline)
			if !strings.Contains(text, "loop.alloc() : memref<3x4xf32>") || !strings.Contains(text, `"gpu.library_matmul"`) {
				t.Fatalf("no f32 product buffer:\n%s", text)
			}
			if m, err = ir.Parse(ctx, text, ir.ParseOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		ft, err := interp.FuncType(ir.NewSymTable(m).Lookup("main"))
		if err != nil {
			t.Fatal(err)
		}
		args, err := interp.RandomInputs(ft, 7)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := interp.New(m).Call("main", args...); err != nil {
			t.Fatal(err)
		}
		c, err := args[2].(*interp.Buffer).Tensor()
		if err != nil {
			t.Fatal(err)
		}
		return c.Float64s()
	}
	want, got := run(""), run(libraryPipeline)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("c[%d] = %g after lowering, %g before", i, got[i], want[i])
		}
	}
}

// TestLibraryMatmulPreservesSemantics draws matmul programs (sizes, a
// batch, the operands' storage, the element type and an epilogue), runs
// them through matmul=cublaslt and compares the interpreted result with
// the graph's.
func TestLibraryMatmulPreservesSemantics(t *testing.T) {
	passtest.PreservesSemantics(t, libraryPipeline, libraryPrograms)
}

// TestLibraryMatmulLibraryFusionPreservesSemantics is
// TestLibraryMatmulPreservesSemantics with graph-fuse told that the
// matmuls run on the library (matmul-library, as the nvptx backend
// lowers them): the epilogues become kernels of their own.
func TestLibraryMatmulLibraryFusionPreservesSemantics(t *testing.T) {
	passtest.PreservesSemantics(t, "builtin.module("+lower.LowerToLoop("matmul-library=true")+",convert-loop-to-gpu{matmul=cublaslt},canonicalize,cse)", libraryPrograms)
}

// libraryPrograms draws matmul programs (sizes, a batch, the operands'
// storage, the element type and an epilogue).
var libraryPrograms = rapid.Custom(func(t *rapid.T) *passtest.Program {
	m, n, k := rapid.Int64Range(1, 9).Draw(t, "m"), rapid.Int64Range(1, 9).Draw(t, "n"), rapid.Int64Range(1, 12).Draw(t, "k")
	batch := rapid.SliceOfN(rapid.Int64Range(1, 3), 0, 2).Draw(t, "batch")
	elem := rapid.SampledFrom([]string{"bf16", "f16"}).Draw(t, "elem")
	transA, transB := rapid.Bool().Draw(t, "transA"), rapid.Bool().Draw(t, "transB")
	typ := func(dims ...int64) string {
		var sb strings.Builder
		sb.WriteString("tensor<")
		for _, d := range append(append([]int64(nil), batch...), dims...) {
			fmt.Fprintf(&sb, "%dx", d)
		}
		return sb.String() + elem + ">"
	}
	perm := "array<i64: "
	for d := range batch {
		perm += fmt.Sprintf("%d, ", d)
	}
	perm += fmt.Sprintf("%d, %d>", len(batch)+1, len(batch))
	var body strings.Builder
	x, w := "%x", "%w"
	ta, tb := typ(m, k), typ(k, n)
	if transA {
		ta = typ(k, m)
		fmt.Fprintf(&body, "  %%tx = \"graph.transpose\"(%%x) <{perm = %s}> : (%s) -> %s\n", perm, ta, typ(m, k))
		x = "%tx"
	}
	if transB {
		tb = typ(n, k)
		fmt.Fprintf(&body, "  %%tw = \"graph.transpose\"(%%w) <{perm = %s}> : (%s) -> %s\n", perm, tb, typ(k, n))
		w = "%tw"
	}
	out := typ(m, n)
	if rapid.Bool().Draw(t, "bias") {
		fmt.Fprintf(&body, "  %%p = \"graph.matmul\"(%s, %s, %%b) : (%s, %s, tensor<%dx%s>) -> %s\n", x, w, typ(m, k), typ(k, n), n, elem, out)
		tb += fmt.Sprintf(", %%b: tensor<%dx%s>", n, elem)
	} else {
		fmt.Fprintf(&body, "  %%p = \"graph.matmul\"(%s, %s) : (%s, %s) -> %s\n", x, w, typ(m, k), typ(k, n), out)
	}
	switch rapid.IntRange(0, 2).Draw(t, "epilogue") {
	case 0:
		fmt.Fprintf(&body, "  %%r = \"graph.gelu\"(%%p) <{approximate = \"tanh\"}> : (%s) -> %s\n", out, out)
	case 1:
		fmt.Fprintf(&body, "  %%r = \"graph.mul\"(%%p, %%p) : (%s, %s) -> %s\n", out, out, out)
	default:
		body.WriteString("  %r = \"graph.relu\"(%p) : (" + out + ") -> " + out + "\n")
	}
	return &passtest.Program{Func: "main", Source: fmt.Sprintf("func.func @main(%%x: %s, %%w: %s) -> %s {\n%s  return %%r : %s\n}\n", ta, tb, out, body.String(), out)}
})

// TestLibraryMatmulHints checks that under matmul=cublaslt a matmul nest
// the library cannot take (a dynamic N: its plan takes a dynamic M only)
// stays on Strata's kernels, with the reason and location under
// STRATA_LOGS=perf_hints, and that a program whose matmuls all go to the
// library logs nothing.
func TestLibraryMatmulHints(t *testing.T) {
	var buf bytes.Buffer
	defer logs.SetOutput(logs.SetOutput(&buf))
	logs.Enable("perf_hints")
	defer logs.Disable()
	dynamic := `func.func @main(%a: memref<8x32xbf16>, %b: memref<32x?xbf16>, %c: memref<8x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %n = "loop.dim"(%b) <{index = 1 : i64}> : (memref<32x?xbf16>) -> index
  %zero = arith.constant 0.0 : f32
  "loop.parallel"(%c0, %c0, %c8, %n, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %s = "loop.for"(%c0, %c32, %c1, %zero) ({
    ^bb0(%k: index, %acc: f32):
      %x = "loop.load"(%a, %i, %k) : (memref<8x32xbf16>, index, index) -> bf16
      %y = "loop.load"(%b, %k, %j) : (memref<32x?xbf16>, index, index) -> bf16
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %t = arith.addf %acc, %p : f32
      "loop.yield"(%t) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %r = arith.truncf %s : f32 to bf16
    "loop.store"(%r, %c, %i, %j) : (bf16, memref<8x?xbf16>, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  return
}`
	static := `func.func @main(%x: tensor<8x32xbf16>, %w: tensor<32x16xbf16>) -> tensor<8x16xbf16> {
  %r = "graph.matmul"(%x, %w) : (tensor<8x32xbf16>, tensor<32x16xbf16>) -> tensor<8x16xbf16>
  return %r : tensor<8x16xbf16>
}`
	for _, tc := range []struct {
		name, src, pipeline, want string
	}{
		{"dynamic", dynamic, "builtin.module(convert-loop-to-gpu{matmul=cublaslt},canonicalize,cse)", "hints.mlir:8:3: remark: matmul nest stays on Strata's kernels, not cuBLASLt: a dynamic N"},
		{"static", static, libraryPipeline, ""},
	} {
		buf.Reset()
		ctx := dialects.NewContext()
		m, err := ir.Parse(ctx, tc.src, ir.ParseOptions{Filename: "hints.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		pm, err := passes.Parse(tc.pipeline)
		if err != nil {
			t.Fatal(err)
		}
		if err := pm.Run(ctx, m); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out := buf.String()
		if tc.want == "" && out != "" || !strings.Contains(out, tc.want) {
			t.Errorf("%s: log %q, want %q", tc.name, out, tc.want)
		}
		if lib := strings.Contains(ir.Sprint(m, ir.PrintOptions{}), "gpu.library_matmul"); lib != (tc.want == "") {
			t.Errorf("%s: library product %v", tc.name, lib)
		}
	}
}

// TestLibraryMatmulDynamicM lowers products whose M is a symbolic size
// (a graph compiled for every sequence length) with matmul=cublaslt: each
// is one gpu.library_matmul reading M off A at run time (A stored either
// way; a bias and GELU epilogue, a bare product written straight into the
// result, and an A reshaped from a larger rank, whose M the nest computes
// rather than reads off A: the library writes the result when that M is
// the result's size, else a product buffer of the nest's M), no mma
// kernel, and the lowered program computes the graph program at several
// M.
func TestLibraryMatmulDynamicM(t *testing.T) {
	const res = "tensor<?x23xbf16, #graph.dims<[s0, 23]>>"
	for _, tc := range []struct {
		name, x, res, body string
		kernels            int
		m                  func(n int64) []int64 // x's shape at M = n
	}{
		{"bias-gelu", "tensor<?x19xbf16, #graph.dims<[s0, 19]>>", res, `
  %0 = "graph.matmul"(%x, %w, %b) : (tensor<?x19xbf16, #graph.dims<[s0, 19]>>, tensor<19x23xbf16>, tensor<23xbf16>) -> tensor<?x23xbf16, #graph.dims<[s0, 23]>>
  %r = "graph.gelu"(%0) <{approximate = "tanh"}> : (tensor<?x23xbf16, #graph.dims<[s0, 23]>>) -> tensor<?x23xbf16, #graph.dims<[s0, 23]>>`,
			1, func(n int64) []int64 { return []int64{n, 19} }},
		{"bare-bias", "tensor<?x19xbf16, #graph.dims<[s0, 19]>>", res, `
  %r = "graph.matmul"(%x, %w, %b) : (tensor<?x19xbf16, #graph.dims<[s0, 19]>>, tensor<19x23xbf16>, tensor<23xbf16>) -> tensor<?x23xbf16, #graph.dims<[s0, 23]>>`,
			0, func(n int64) []int64 { return []int64{n, 19} }},
		{"a-transposed", "tensor<19x?xbf16, #graph.dims<[19, s0]>>", res, `
  %t = "graph.transpose"(%x) <{perm = array<i64: 1, 0>}> : (tensor<19x?xbf16, #graph.dims<[19, s0]>>) -> tensor<?x19xbf16, #graph.dims<[s0, 19]>>
  %0 = "graph.matmul"(%t, %w) : (tensor<?x19xbf16, #graph.dims<[s0, 19]>>, tensor<19x23xbf16>) -> tensor<?x23xbf16, #graph.dims<[s0, 23]>>
  %r = "graph.add"(%0, %b) : (tensor<?x23xbf16, #graph.dims<[s0, 23]>>, tensor<23xbf16>) -> tensor<?x23xbf16, #graph.dims<[s0, 23]>>`,
			1, func(n int64) []int64 { return []int64{19, n} }},
		{"a-reshaped", "tensor<2x?x19xbf16, #graph.dims<[2, s0, 19]>>", "tensor<?x23xbf16, #graph.dims<[s0*2, 23]>>", `
  %a = "graph.reshape"(%x) <{shape = array<i64: -1, 19>}> : (tensor<2x?x19xbf16, #graph.dims<[2, s0, 19]>>) -> tensor<?x19xbf16, #graph.dims<[s0*2, 19]>>
  %r = "graph.matmul"(%a, %w, %b) : (tensor<?x19xbf16, #graph.dims<[s0*2, 19]>>, tensor<19x23xbf16>, tensor<23xbf16>) -> tensor<?x23xbf16, #graph.dims<[s0*2, 23]>>`,
			0, func(n int64) []int64 { return []int64{2, n, 19} }},
		{"a-reshaped-gelu", "tensor<2x?x19xbf16, #graph.dims<[2, s0, 19]>>", "tensor<?x23xbf16, #graph.dims<[s0*2, 23]>>", `
  %a = "graph.reshape"(%x) <{shape = array<i64: -1, 19>}> : (tensor<2x?x19xbf16, #graph.dims<[2, s0, 19]>>) -> tensor<?x19xbf16, #graph.dims<[s0*2, 19]>>
  %0 = "graph.matmul"(%a, %w, %b) : (tensor<?x19xbf16, #graph.dims<[s0*2, 19]>>, tensor<19x23xbf16>, tensor<23xbf16>) -> tensor<?x23xbf16, #graph.dims<[s0*2, 23]>>
  %r = "graph.gelu"(%0) <{approximate = "tanh"}> : (tensor<?x23xbf16, #graph.dims<[s0*2, 23]>>) -> tensor<?x23xbf16, #graph.dims<[s0*2, 23]>>`,
			1, func(n int64) []int64 { return []int64{2, n, 19} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf("func.func @main(%%x: %s, %%w: tensor<19x23xbf16>, %%b: tensor<23xbf16>) -> %s {%s\n  return %%r : %s\n}\n", tc.x, tc.res, tc.body, tc.res)
			p := &passtest.Program{Func: "main", Source: src}
			text := lowerText(t, p, libraryPipeline)
			if got := strings.Count(text, `"gpu.library_matmul"`); got != 1 {
				t.Errorf("%d gpu.library_matmul ops, want 1:\n%s", got, text)
			}
			if got := strings.Count(text, "gpu.launch_func"); got != tc.kernels || strings.Contains(text, `mapping = "mma"`) {
				t.Errorf("%d kernel launches (want %d) or an mma kernel:\n%s", got, tc.kernels, text)
			}
			ctx := dialects.NewContext()
			ref, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "ref.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			low, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "low.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			pm, err := passes.Parse(libraryPipeline)
			if err != nil {
				t.Fatal(err)
			}
			if err := pm.Run(ctx, low); err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{1, 5, 37} {
				rng := rand.New(rand.NewPCG(uint64(n), 3))
				in := []*interp.Tensor{randomBF16(t, rng, tc.m(n)), randomBF16(t, rng, []int64{19, 23}), randomBF16(t, rng, []int64{23})}
				want, err := interp.New(ref).Call("main", in[0], in[1], in[2])
				if err != nil {
					t.Fatal(err)
				}
				got, err := interp.New(low).Call("main", interp.BufferFromTensor(in[0]), interp.BufferFromTensor(in[1]), interp.BufferFromTensor(in[2]))
				if err != nil {
					t.Fatalf("M = %d: %v", n, err)
				}
				if err := passtest.Compare(got[0], want[0]); err != nil {
					t.Errorf("M = %d: %v", n, err)
				}
			}
		})
	}
}
