package llvm_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// TestShortPTX checks that the native backend still recognizes the
// sequences this package writes for arith.maximumf, the bf16 widening
// (arith.extf) and the bf16 round to nearest even (arith.truncf) of the
// pointwise kernel of test/targets/kernels.mlir, and selects each as one
// instruction: editing toF32 or fromF32 must keep the patterns of
// targets/nvptx/optimize.go in step.
func TestShortPTX(t *testing.T) {
	m, err := llvm.Translate(llvm.GPUModules(kernels(t))[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.String(), "call float @llvm.maximum.f32(") {
		t.Errorf("arith.maximumf on f32 is not llvm.maximum.f32")
	}
	cases := []struct {
		target    string
		want, not []string
	}{
		// 32767 and 4194304 are the rounding's bias and quiet bit.
		{"sm_90", []string{"max.NaN.f32", "cvt.rn.bf16.f32", "cvt.f32.bf16"}, []string{"32767", "4194304"}},
		// cvt.f32.bf16 is new in sm_90: sm_80 widens by a shift.
		{"sm_80", []string{"max.NaN.f32", "cvt.rn.bf16.f32", "shl.b32"}, []string{"cvt.f32.bf16", "32767"}},
	}
	for _, c := range cases {
		ptx, err := nvptx.Native{}.Compile(m, nvptx.Options{Target: c.target})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(ptx, w) {
				t.Errorf("%s: native PTX lacks %q", c.target, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(ptx, n) {
				t.Errorf("%s: native PTX holds %q", c.target, n)
			}
		}
	}
}

// TestBF16PairPTX checks that the native backend selects what the flash
// kernel writes with arith ops as single conversions: a value rounded to
// bf16 and widened back (truncf, extf) is one cvt.rn.bf16x2.f32 with a
// zero half, and two rounded values packed into an i32 (bitcast to i16,
// extui, shli 16, ori) one cvt.rn.bf16x2.f32; none of the integer
// rounding is left.
func TestBF16PairPTX(t *testing.T) {
	src := `module attributes {gpu.container_module} {
  gpu.module @g {
    gpu.func @k(%a: memref<?xf32>, %o: memref<?xi32>, %f: memref<?xf32>) kernel {
      %i = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %i1 = arith.addi %i, %c1 : index
      %x = loop.load %a[%i] : memref<?xf32>
      %y = loop.load %a[%i1] : memref<?xf32>
      %xb = arith.truncf %x : f32 to bf16
      %xw = arith.extf %xb : bf16 to f32
      loop.store %xw, %f[%i] : memref<?xf32>
      %yb = arith.truncf %y : f32 to bf16
      %x16 = arith.bitcast %xb : bf16 to i16
      %y16 = arith.bitcast %yb : bf16 to i16
      %x32 = arith.extui %x16 : i16 to i32
      %y32 = arith.extui %y16 : i16 to i32
      %c16 = arith.constant 16 : i32
      %hi = arith.shli %y32, %c16 : i32
      %p = arith.ori %x32, %hi : i32
      loop.store %p, %o[%i] : memref<?xi32>
      gpu.return
    }
  }
}
`
	m, err := llvm.Translate(llvm.GPUModules(parse(t, src))[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"sm_90", "sm_80"} {
		ptx, err := nvptx.Native{}.Compile(m, nvptx.Options{Target: target})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(ptx, "cvt.rn.bf16x2.f32"); n != 2 {
			t.Errorf("%s: %d cvt.rn.bf16x2.f32, want 2 (the widened round, the pair)\n%s", target, n, ptx)
		}
		for _, bad := range []string{"32767", "cvt.rn.bf16.f32", "cvt.f32.bf16"} {
			if strings.Contains(ptx, bad) {
				t.Errorf("%s: native PTX holds %q\n%s", target, bad, ptx)
			}
		}
	}
}
