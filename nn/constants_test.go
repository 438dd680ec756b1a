package nn_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/runtime/interp"
)

// recordInputs registers a backend that runs graphs eagerly and appends
// each run's inputs to *runs, and returns its name.
func recordInputs(t *testing.T, runs *[][]*interp.Tensor) string {
	t.Helper()
	eager, ok := frontend.LookupBackend(frontend.EagerBackend)
	if !ok {
		t.Fatal("no eager backend")
	}
	name := fmt.Sprintf("nn-inputs-%s", t.Name())
	frontend.RegisterBackend(name, frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		exe, err := eager.Compile(g)
		if err != nil {
			return nil, err
		}
		return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
			*runs = append(*runs, slices.Clone(in))
			return exe.Run(in)
		}), nil
	}))
	return name
}

// TestConstantsOnce checks that the constants layers make inside a
// compiled function (the loss's class indices and bounds, its 1/N, the
// attention's head indices) are the same tensors every call: a compiled
// call copies to the device only the inputs that are not the tensors of
// its last call. Between two calls on fresh arguments only the arguments
// change.
func TestConstantsOnce(t *testing.T) {
	var runs [][]*interp.Tensor
	opts := frontend.Options{Backend: recordInputs(t, &runs)}
	g := nn.NewRNG(3)
	const b, tt, d, heads, classes = 2, 4, 8, 2, 11
	attn := nn.NewCausalSelfAttention(g, d, heads, 1)
	head := g.Normal(0.1, d, classes)
	fn := func(x, labels *frontend.Tensor) *frontend.Tensor {
		h := attn.ForwardRows(x, b, tt)
		return nn.CrossEntropy(h.MatMul(head), labels, 0)
	}
	c, err := frontend.Compile(fn, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		x := g.Normal(1, b*tt, d)
		labels := g.Int64s(classes, b*tt)
		if _, err := c.Invoke(x, labels); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if len(runs) != 3 {
		t.Fatalf("%d graph runs for 3 calls, want 3 (one graph)", len(runs))
	}
	changed := 0
	for i, x := range runs[2] {
		if i >= len(runs[1]) || runs[1][i] != x {
			changed++
		}
	}
	if changed != 2 {
		t.Errorf("%d of the graph's %d inputs changed between calls, want 2 (the arguments)", changed, len(runs[2]))
	}
}
