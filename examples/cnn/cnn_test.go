package cnn

import (
	"errors"
	"io"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestTrainLossFalls trains the tiny CNN on the interpreter: the loss
// falls to a third of where it started, and the trained model (batch
// norm in evaluation mode, with the running statistics it learned)
// classifies most of the batch.
func TestTrainLossFalls(t *testing.T) {
	m, losses, err := Train(io.Discard, Tiny, 12, 0.05, frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, last := losses[0], losses[len(losses)-1]
	t.Logf("loss %.4f -> %.4f", first, last)
	if !(last < first/3) {
		t.Fatalf("loss %v: did not fall below a third of %g", losses, first)
	}
	x, y := Data(Tiny)
	acc, err := Accuracy(m, x, y)
	if err != nil {
		t.Fatal(err)
	}
	if acc < 0.75 {
		t.Errorf("accuracy %.2f after training, want ≥ 0.75", acc)
	}
	// Batch norm's running statistics moved from their initial values.
	if rm := m.BN1.RunningMean.Float32s(); rm[0] == 0 {
		t.Errorf("running mean not updated: %v", rm)
	}
}

// TestMixedTrainLossFalls trains the tiny CNN in bf16 mixed precision
// (MixedLoss) on the interpreter: the loss falls, and the parameters
// and batch norm's running statistics stay float32.
func TestMixedTrainLossFalls(t *testing.T) {
	m := New(Tiny)
	x, y := Data(Tiny)
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, frontend.Options{})
	opt, err := optim.NewSGD(step.Params(), optim.SGDConfig{LR: 0.05, Momentum: 0.9}, frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for i := range 10 {
		v, grads, err := step.Call(x, y)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		losses = append(losses, v[0].Item())
		if err := opt.Step(grads); err != nil {
			t.Fatal(err)
		}
	}
	if first, last := losses[0], losses[len(losses)-1]; !(last < first/2) {
		t.Fatalf("loss %v: did not fall below half of %g", losses, first)
	}
	for _, r := range nn.Refs(m) {
		if dt := r.Tensor().DType(); dt != frontend.Float32 {
			t.Errorf("%s is %v after mixed-precision steps, want float32", r.Name, dt)
		}
	}
}

// errLowered stops a training step once its graphs are lowered.
var errLowered = errors.New("lowered")

// TestBenchStepFillsTheGrid lowers the bench's mixed-precision training
// step (batch 256 of 32×32: batch norm's statistics fold 262144 elements
// per channel) with the nvptx backend's passes and checks that no SIMT
// kernel of its forward or backward pass runs a large buffer on a few
// blocks (togpu.NarrowLaunches): the statistics ran on one block of 32
// or 64 working threads each before graph-split-reductions, twelve such
// kernels a step.
func TestBenchStepFillsTheGrid(t *testing.T) {
	var narrow [][]string
	name := "lowering-" + t.Name()
	frontend.RegisterBackend(name, frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		pm, err := passes.Parse("builtin.module(" + togpu.FlashPassName + ",lower-to-gpu)")
		if err != nil {
			return nil, err
		}
		if err := pm.Run(g.Context, g.Module); err != nil {
			return nil, err
		}
		narrow = append(narrow, togpu.NarrowLaunches(g.Module))
		return frontend.ExecutableFunc(func([]*interp.Tensor) ([]*interp.Tensor, error) { return nil, errLowered }), nil
	}))
	m := New(Bench)
	x, y := Data(Bench)
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, frontend.Options{Backend: name})
	if _, _, err := step.Call(x, y); !errors.Is(err, errLowered) {
		t.Fatalf("training step: %v, want the backend's stop", err)
	}
	if len(narrow) != 2 {
		t.Fatalf("%d graphs lowered, want the step's forward and backward", len(narrow))
	}
	for i, n := range narrow {
		if len(n) > 0 {
			t.Errorf("graph %d: kernels with ≥ %d elements of a buffer a block: %v", i, togpu.NarrowPerBlock, n)
		}
	}
}
