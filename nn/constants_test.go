package nn_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
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

// TestCrossEntropyBadLabels checks that labels out of range in a compiled
// step are an error located at the caller's line and that nothing runs,
// on the first call (recorded) and on later ones (replayed), and that the
// step runs again on good labels.
func TestCrossEntropyBadLabels(t *testing.T) {
	var runs [][]*interp.Tensor
	opts := frontend.Options{Backend: recordInputs(t, &runs)}
	g := nn.NewRNG(5)
	const n, classes = 6, 4
	w := g.Normal(0.1, 3, classes)
	c, err := frontend.Compile(func(x, labels *frontend.Tensor) *frontend.Tensor {
		return nn.CrossEntropy(x.MatMul(w), labels, 0.1)
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	for i, bad := range []int64{-2, 0, classes, 0, 0, -1, 0} {
		ls := g.Int64s(classes, n).Int64s()
		if bad != 0 {
			ls[2] = bad
		}
		x := g.Normal(1, n, 3)
		x.Float32s() // the draw runs here, not in the step
		before := len(runs)
		_, err := c.Invoke(x, frontend.FromSlice(ls, n))
		switch {
		case bad == 0 && (err != nil || len(runs) != before+1):
			t.Errorf("call %d (good labels): error %v, %d graph runs; want none and 1", i, err, len(runs)-before)
		case bad != 0 && len(runs) != before:
			t.Errorf("call %d (label %d): %d graph runs, want none: %v; err %v", i, bad, len(runs)-before, runs[before:], err)
		case bad != 0:
			want := fmt.Sprintf("label %d at position 2 is out of range [0, %d)", bad, classes)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(ir.Position(locOf(err)), file+":") {
				t.Errorf("call %d: error %v, want %q located in %s", i, err, want, file)
			}
		}
	}
}
