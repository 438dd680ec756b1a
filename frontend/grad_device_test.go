package frontend_test

import (
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// TestValueAndGradRunsOnDevice checks that ValueAndGrad on a backend
// whose executables keep data on a device runs its forward and backward
// passes through RunDevice (so parameters on the GPU are passed, not
// downloaded, and the saved values and gradients stay there), with the
// values and gradients of the host passes, and that a tensor assigned in
// place is written back.
func TestValueAndGradRunsOnDevice(t *testing.T) {
	b := &deviceBackend{}
	name := "device-" + t.Name()
	frontend.RegisterBackend(name, b)
	stat := frontend.FromSlice([]float32{1, 1})
	loss := func(x, w *frontend.Tensor) *frontend.Tensor {
		if err := stat.Assign(stat.Add(w)); err != nil {
			return frontend.Failed(err)
		}
		return x.Mul(w).Mul(w).Sum(nil, false)
	}
	vg := frontend.ValueAndGrad(loss, 1).WithOptions(frontend.Options{Backend: name})
	for i := range 2 {
		vals, grads, err := vg.Call(frontend.FromSlice([]float32{1, 2}), frontend.FromSlice([]float32{3, float32(i)}))
		if err != nil {
			t.Fatal(err)
		}
		near(t, vals[0].Float32s(), []float32{9 + 2*float32(i*i)})
		near(t, grads[0].Float32s(), []float32{6, 4 * float32(i)}) // 2·x·w
	}
	if r := b.runs.Load(); r != 4 {
		t.Errorf("RunDevice ran %d times, want 4 (forward and backward, twice)", r)
	}
	near(t, stat.Float32s(), []float32{7, 2}) // 1 + 3 + 3, 1 + 0 + 1
}
