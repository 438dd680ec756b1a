package bench

import (
	"path/filepath"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn/safetensors"
)

// TestReferenceCheck checks the float32-reference comparison of a bf16
// row: Strata passes when it is no further from float32 than PyTorch is,
// fails when it is further, and a row without a reference has none.
func TestReferenceCheck(t *testing.T) {
	ref := []float32{1, -2, 0.5, 3, -0.25, 0}
	write := func(dir, file string, delta []float32) {
		vs := make([]float32, len(ref))
		for i := range vs {
			vs[i] = ref[i] + delta[i]
		}
		st, err := safetensors.FromFrontend("logits", frontend.FromSlice(vs, len(vs)), safetensors.F32)
		if err != nil {
			t.Fatal(err)
		}
		if err := safetensors.Write(filepath.Join(dir, file), []*safetensors.Tensor{st}, nil); err != nil {
			t.Fatal(err)
		}
	}
	small := []float32{0.01, 0, -0.01, 0, 0, 0.01}
	large := []float32{-0.2, 0.1, 0.05, -0.2, 0, 0}
	for _, tc := range []struct {
		name          string
		strata, torch []float32
		want          bool
	}{{"strata-closer", small, large, true}, {"torch-closer", large, small, false}} {
		dir := t.TempDir()
		write(dir, "row.f32.safetensors", make([]float32, len(ref)))
		write(dir, "row.strata.safetensors", tc.strata)
		write(dir, "row.torch.safetensors", tc.torch)
		r, err := referenceCheck(dir, "row", 0.04)
		if err != nil || r == nil {
			t.Fatalf("%s: %v, %v", tc.name, r, err)
		}
		if r.AsAccurate != tc.want || r.Strata.MaxScaled == 0 || r.Torch.MaxScaled == 0 {
			t.Errorf("%s: %+v, want as_accurate=%v", tc.name, r, tc.want)
		}
	}
	if r, err := referenceCheck(t.TempDir(), "row", 0.04); r != nil || err != nil {
		t.Errorf("no reference file: %v, %v", r, err)
	}
}
