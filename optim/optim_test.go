package optim_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
	"pgregory.net/rapid"
)

// model is two parameters of different shapes.
type model struct{ A, B *frontend.Tensor }

func newModel(r *rand.Rand, dt frontend.DType) (*model, [][]float64) {
	ts, vs := pair(r, dt)
	return &model{A: ts[0], B: ts[1]}, vs
}

// grads draws a gradient for each parameter of model.
func grads(r *rand.Rand, dt frontend.DType) ([]*frontend.Tensor, [][]float64) { return pair(r, dt) }

// pair draws a [2, 3] and a [3] tensor uniform in [-1, 1), as dt and as
// float64 references.
func pair(r *rand.Rand, dt frontend.DType) ([]*frontend.Tensor, [][]float64) {
	a, b := make([]float64, 6), make([]float64, 3)
	for i := range a {
		a[i] = 2*r.Float64() - 1
	}
	for i := range b {
		b[i] = 2*r.Float64() - 1
	}
	return []*frontend.Tensor{frontend.FromSlice(a, 2, 3).Cast(dt), frontend.FromSlice(b, 3).Cast(dt)}, [][]float64{a, b}
}

func check(t *rapid.T, m *model, want [][]float64, tol float64) {
	for i, p := range []*frontend.Tensor{m.A, m.B} {
		got := p.Float64s()
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want[i]) {
			t.Fatalf("parameter %d: %d elements, want %d", i, len(got), len(want[i]))
		}
		for j := range got {
			if math.Abs(got[j]-want[i][j]) > tol*(1+math.Abs(want[i][j])) {
				t.Fatalf("parameter %d, element %d: %g, reference %g", i, j, got[j], want[i][j])
			}
		}
	}
}

// TestSGD compares four fused steps with a float64 reference of
// torch.optim.SGD.
func TestSGD(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1))
		cfg := optim.SGDConfig{
			LR:          rapid.Float64Range(0.01, 0.5).Draw(rt, "lr"),
			Momentum:    rapid.SampledFrom([]float64{0, 0.9}).Draw(rt, "momentum"),
			WeightDecay: rapid.SampledFrom([]float64{0, 0.01}).Draw(rt, "wd"),
		}
		cfg.Nesterov = cfg.Momentum > 0 && rapid.Bool().Draw(rt, "nesterov")
		m, ref := newModel(r, frontend.Float32)
		opt, err := optim.NewSGD(nn.Parameters(m), cfg, frontend.Options{})
		if err != nil {
			rt.Fatal(err)
		}
		bufs := [][]float64{make([]float64, 6), make([]float64, 3)}
		for range 4 {
			gs, gv := grads(r, frontend.Float32)
			if err := opt.Step(gs); err != nil {
				rt.Fatal(err)
			}
			for i := range ref {
				for j := range ref[i] {
					g := float64(float32(gv[i][j])) + cfg.WeightDecay*ref[i][j]
					if cfg.Momentum != 0 {
						bufs[i][j] = cfg.Momentum*bufs[i][j] + g
						if cfg.Nesterov {
							g += cfg.Momentum * bufs[i][j]
						} else {
							g = bufs[i][j]
						}
					}
					ref[i][j] -= cfg.LR * g
				}
			}
		}
		check(rt, m, ref, 1e-5)
		if s := opt.Compiled().Stats(); s.Compiles != 1 {
			rt.Fatalf("%d compiles for 4 steps, want 1 (one fused graph)", s.Compiles)
		}
	})
}

// TestAdamW compares five fused steps with a float64 reference of
// torch.optim.AdamW, changing the learning rate between steps.
func TestAdamW(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 2))
		cfg := optim.AdamWConfig{
			LR:          rapid.Float64Range(1e-3, 0.1).Draw(rt, "lr"),
			WeightDecay: rapid.SampledFrom([]float64{0, 0.01, 0.1}).Draw(rt, "wd"),
			Beta1:       rapid.SampledFrom([]float64{0.9, 0.8}).Draw(rt, "b1"),
		}
		m, ref := newModel(r, frontend.Float64)
		opt, err := optim.NewAdamW(nn.Parameters(m), cfg, frontend.Options{})
		if err != nil {
			rt.Fatal(err)
		}
		b1, b2, eps := cfg.Beta1, 0.999, 1e-8
		ms := [][]float64{make([]float64, 6), make([]float64, 3)}
		vs := [][]float64{make([]float64, 6), make([]float64, 3)}
		lr := cfg.LR
		for step := 1; step <= 5; step++ {
			if step == 3 {
				lr /= 2
				opt.SetLR(lr)
			}
			gs, gv := grads(r, frontend.Float64)
			if err := opt.Step(gs); err != nil {
				rt.Fatal(err)
			}
			for i := range ref {
				for j := range ref[i] {
					g := gv[i][j]
					ref[i][j] *= 1 - lr*cfg.WeightDecay
					ms[i][j] = b1*ms[i][j] + (1-b1)*g
					vs[i][j] = b2*vs[i][j] + (1-b2)*g*g
					mh := ms[i][j] / (1 - math.Pow(b1, float64(step)))
					vh := vs[i][j] / (1 - math.Pow(b2, float64(step)))
					ref[i][j] -= lr * mh / (math.Sqrt(vh) + eps)
				}
			}
		}
		check(rt, m, ref, 1e-6)
		if s := opt.Compiled().Stats(); s.Compiles != 1 {
			rt.Fatalf("%d compiles for 5 steps, want 1", s.Compiles)
		}
	})
}

func TestErrors(t *testing.T) {
	m, _ := newModel(rand.New(rand.NewPCG(1, 1)), frontend.Float32)
	if _, err := optim.NewSGD(nil, optim.SGDConfig{LR: 1}, frontend.Options{}); err == nil {
		t.Error("SGD over no parameters: no error")
	}
	if _, err := optim.NewSGD(nn.Parameters(m), optim.SGDConfig{LR: 1, Nesterov: true}, frontend.Options{}); err == nil {
		t.Error("Nesterov without momentum: no error")
	}
	if _, err := optim.NewAdamW(nn.Parameters(m), optim.AdamWConfig{LR: 1, Beta1: 1}, frontend.Options{}); err == nil {
		t.Error("β1 = 1: no error")
	}
	opt, err := optim.NewSGD(nn.Parameters(m), optim.SGDConfig{LR: 1}, frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.Step([]*frontend.Tensor{frontend.Zeros(frontend.Float32, 3, 2), frontend.Zeros(frontend.Float32, 3)}); err == nil {
		t.Error("a gradient of the wrong shape: no error")
	}
	if err := opt.Step([]*frontend.Tensor{frontend.Zeros(frontend.Float32, 2, 3)}); err == nil {
		t.Error("too few gradients: no error")
	}
}
