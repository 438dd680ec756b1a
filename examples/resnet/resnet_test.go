package resnet

import (
	"math"
	"slices"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
)

func TestParamCount(t *testing.T) {
	if n := ParamCount(ResNet50); n != 25557032 {
		t.Errorf("ResNet-50 has %d parameters, torchvision's 25557032", n)
	}
	for _, cfg := range []Config{Tiny, {Blocks: []int{2, 1, 1}, Width: 2, Classes: 3}} {
		if got, want := nn.NumElements(nn.Parameters(New(cfg))), ParamCount(cfg); got != want {
			t.Errorf("%v: the model has %d parameters, ParamCount says %d", cfg.Blocks, got, want)
		}
	}
}

// TestTinyResNet runs the tiny configuration on 32×32 images: the
// compiled forward pass (interpreter backend) equals the eager one, and
// three training steps (gradients, SGD with momentum, batch-norm updates)
// lower the loss on a fixed batch.
func TestTinyResNet(t *testing.T) {
	m := New(Tiny)
	g := nn.NewRNG(7)
	x, y := g.Normal(1, 4, 3, 32, 32), g.Int64s(Tiny.Classes, 4)

	nn.SetTraining(m, false)
	eager := m.Forward(x).Float32s()
	if err := m.Forward(x).Err(); err != nil {
		t.Fatal(err)
	}
	c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{m.Forward(in[0])} }, 1,
		frontend.Options{Backend: frontend.InterpBackend, Fullgraph: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Call(x)
	if err != nil {
		t.Fatal(err)
	}
	got := res[0].Float32s()
	if len(got) != 4*Tiny.Classes {
		t.Fatalf("logits of shape %v", res[0].Shape())
	}
	for i := range got {
		if math.Abs(float64(got[i]-eager[i])) > 1e-5 {
			t.Fatalf("logit %d: compiled %g, eager %g", i, got[i], eager[i])
		}
	}

	nn.SetTraining(m, true)
	step := nn.NewGradStep(m, m.Loss, 2, frontend.Options{})
	opt, err := optim.NewSGD(step.Params(), optim.SGDConfig{LR: 0.05, Momentum: 0.9}, frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for range 4 {
		v, grads, err := step.Call(x, y)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, v[0].Item())
		if err := opt.Step(grads); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("losses %v", losses)
	if !(losses[3] < losses[0]) {
		t.Errorf("loss did not fall: %v", losses)
	}
	if rv := m.Stem.BN.RunningVar.Float32s(); rv[0] == 1 {
		t.Error("the stem's running variance was not updated")
	}
}

// TestTinyResNetMixed trains the tiny configuration in bf16 mixed
// precision (MixedLoss) on the interpreter: the loss falls on a fixed
// batch, the gradients are float32 and not all zero, every batch norm's
// running statistics move, and the parameters and buffers stay float32
// (master weights).
func TestTinyResNetMixed(t *testing.T) {
	m := New(Tiny)
	g := nn.NewRNG(7)
	x, y := g.Normal(1, 4, 3, 32, 32), g.Int64s(Tiny.Classes, 4)
	before := map[string][]float32{}
	for _, r := range nn.Buffers(m) {
		before[r.Name] = r.Tensor().Float32s()
	}
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, frontend.Options{})
	opt, err := optim.NewSGD(step.Params(), optim.SGDConfig{LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4}, frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for i := range 5 {
		v, grads, err := step.Call(x, y)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i == 0 {
			for j, p := range step.Params() {
				if dt := grads[j].DType(); dt != frontend.Float32 {
					t.Errorf("the gradient of %s is %v, want float32", p.Name, dt)
				}
			}
			if s := sumAbs(grads[0].Float32s()); s == 0 || math.IsNaN(s) {
				t.Errorf("the gradient of %s sums to %g in absolute value", step.Params()[0].Name, s)
			}
		}
		losses = append(losses, v[0].Item())
		if err := opt.Step(grads); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("losses %v", losses)
	if !(losses[4] < losses[0]) {
		t.Errorf("loss did not fall: %v", losses)
	}
	for _, r := range nn.Refs(m) {
		if dt := r.Tensor().DType(); dt != frontend.Float32 {
			t.Errorf("%s is %v after mixed-precision steps, want float32", r.Name, dt)
		}
	}
	for _, r := range nn.Buffers(m) {
		if slices.Equal(before[r.Name], r.Tensor().Float32s()) {
			t.Errorf("%s was not updated by the training steps", r.Name)
		}
	}
}

func sumAbs(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += math.Abs(float64(x))
	}
	return s
}
