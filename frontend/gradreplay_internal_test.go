package frontend

import (
	"runtime"
	"testing"
	"weak"

	"github.com/strata-ir/strata/runtime/interp"
)

// TestGradReplayKeepsNoArgument: after a replayed call the gradient keeps
// none of the tensors the call read alive (an argument dropped by the
// caller, a weight replaced by the optimizer, on a GPU their memory).
func TestGradReplayKeepsNoArgument(t *testing.T) {
	g := Grad(func(x *Tensor) *Tensor { return x.Mul(x).Sum(nil, false) }, 0)
	var wp weak.Pointer[interp.Tensor] // the argument's elements
	for i := range 3 {
		x := FromSlice([]float32{1, 2, float32(i)}, 3)
		if _, err := x.data("test argument"); err != nil {
			t.Fatal(err)
		}
		wp = weak.Make(x.val)
		if _, err := g.Call(x); err != nil {
			t.Fatal(err)
		}
	}
	if s := g.Stats(); s.Replays != 2 {
		t.Fatalf("%d replays, want 2", s.Replays)
	}
	runtime.GC()
	if wp.Value() != nil {
		t.Fatal("the last call's argument's elements are still reachable after the call")
	}
	runtime.KeepAlive(g)
}
