package resnet

import (
	"math"
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
