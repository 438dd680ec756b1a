package gpt2

import (
	"slices"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestMixedLossInputsOnce checks that the toy model's mixed-precision loss
// takes the same tensors for everything but its arguments every call (the
// positions, the embedding rows' carry scales, the loss's class table): a
// compiled call copies to the device only the inputs that are not the
// tensors of its last call.
func TestMixedLossInputsOnce(t *testing.T) {
	eager, ok := frontend.LookupBackend(frontend.EagerBackend)
	if !ok {
		t.Fatal("no eager backend")
	}
	var runs [][]*interp.Tensor
	frontend.RegisterBackend("gpt2-inputs", frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		exe, err := eager.Compile(g)
		if err != nil {
			return nil, err
		}
		return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
			runs = append(runs, slices.Clone(in))
			return exe.Run(in)
		}), nil
	}))
	m := New(Toy)
	c, err := nn.Compile(m, m.MixedLoss(frontend.BFloat16), 2, frontend.Options{Backend: "gpt2-inputs"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		g := nn.NewRNG(uint64(20 + i))
		if _, err := c.Call(g.Int64s(Toy.Vocab, 2, 8), g.Int64s(Toy.Vocab, 2, 8)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if len(runs) != 3 {
		t.Fatalf("%d graph runs for 3 calls, want 3", len(runs))
	}
	changed := 0
	for i, x := range runs[2] {
		if i >= len(runs[1]) || runs[1][i] != x {
			changed++
			t.Logf("changed input %d: %v %v", i, x.ElemType(), x.Shape())
		}
	}
	if changed != 2 {
		t.Errorf("%d of the graph's %d inputs changed between calls, want 2 (the tokens and targets)", changed, len(runs[2]))
	}
}
