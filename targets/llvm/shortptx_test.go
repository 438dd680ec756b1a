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
