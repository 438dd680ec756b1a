package frontend_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// TestAssignInValueAndGrad checks that a tensor fn assigns in place (a
// batch-norm running statistic) is written back by ValueAndGrad, on every
// call, without changing the gradients; and that a failed call leaves it as
// it was.
func TestAssignInValueAndGrad(t *testing.T) {
	stat := frontend.FromSlice([]float32{0, 0}, 2)
	fail := false
	f := func(x *frontend.Tensor) (*frontend.Tensor, error) {
		// stat ← 0.5·stat + x²: reads the old value, as a running average does.
		if err := stat.Assign(stat.Mul(frontend.Scalar(0.5)).Add(x.Mul(x))); err != nil {
			return nil, err
		}
		if fail {
			return nil, errors.New("boom")
		}
		return x.Mul(x).Sum([]int{0}, false), nil
	}
	vg := frontend.ValueAndGrad(f, 0)
	x := frontend.FromSlice([]float32{1, 2}, 2)
	want := []float32{0, 0}
	for call := range 3 {
		vals, grads, err := vg.Call(x)
		if err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		want = []float32{0.5*want[0] + 1, 0.5*want[1] + 4}
		if got := stat.Float32s(); !slices.Equal(got, want) {
			t.Fatalf("call %d: stat = %v, want %v (err %v)", call, got, want, stat.Err())
		}
		if got := vals[0].Item(); got != 5 {
			t.Errorf("call %d: loss = %v, want 5", call, got)
		}
		if got := grads[0].Float32s(); !slices.Equal(got, []float32{2, 4}) {
			t.Errorf("call %d: gradient = %v, want [2 4]", call, got)
		}
	}
	fail = true
	if _, _, err := vg.Call(x); err == nil {
		t.Fatal("the failing call succeeded")
	}
	if got := stat.Float32s(); !slices.Equal(got, want) {
		t.Fatalf("after a failed call: stat = %v, want %v as before it (err %v)", got, want, stat.Err())
	}
}
