package optim_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
	"github.com/strata-ir/strata/runtime/interp"
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

// TestConstantsOnce checks that the updates take their constants as the
// same tensors every step: a compiled call copies to the device only the
// inputs it did not get last time, and a fresh constant per parameter
// and step was a copy each (888 a step for GPT-2's AdamW). Between two
// steps only the per-step scalars, the parameters, the gradients and the
// state change; the graph has one input per distinct constant.
func TestConstantsOnce(t *testing.T) {
	var calls [][]*interp.Tensor
	eager, ok := frontend.LookupBackend(frontend.EagerBackend)
	if !ok {
		t.Fatal("no eager backend")
	}
	frontend.RegisterBackend("optim-inputs", frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		exe, err := eager.Compile(g)
		if err != nil {
			return nil, err
		}
		return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
			calls = append(calls, slices.Clone(in))
			return exe.Run(in)
		}), nil
	}))
	opts := frontend.Options{Backend: "optim-inputs"}
	r := rand.New(rand.NewPCG(7, 7))
	for _, c := range []struct {
		name string
		make func(ps []nn.Ref) (optim.Optimizer, error)
		// scalars per step, state slots, distinct constants
		scalars, slots, consts int
	}{
		{"AdamW", func(ps []nn.Ref) (optim.Optimizer, error) {
			return optim.NewAdamW(ps, optim.AdamWConfig{LR: 1e-3, WeightDecay: 0.1}, opts)
		}, 3, 2, 6}, // wd, β1, 1-β1, β2, 1-β2, eps
		{"SGD", func(ps []nn.Ref) (optim.Optimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01}, opts)
		}, 1, 1, 2}, // wd, momentum
	} {
		calls = nil
		m, _ := newModel(r, frontend.Float32)
		ps := nn.Parameters(m)
		opt, err := c.make(ps)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			gs, _ := grads(r, frontend.Float32)
			if err := opt.Step(gs); err != nil {
				t.Fatal(err)
			}
		}
		n := len(ps)
		if len(calls) != 3 {
			t.Fatalf("%s: %d graph runs for 3 steps, want 3", c.name, len(calls))
		}
		if got, want := len(calls[2]), c.scalars+(2+c.slots)*n+c.consts; got != want {
			t.Errorf("%s: the graph takes %d inputs, want %d (%d scalars, %d parameters with gradients and %d state slots, %d constants)",
				c.name, got, want, c.scalars, n, c.slots, c.consts)
		}
		changed := 0
		for i, x := range calls[2] {
			if i >= len(calls[1]) || calls[1][i] != x {
				changed++
			}
		}
		if want := c.scalars + (2+c.slots)*n; changed != want {
			t.Errorf("%s: %d inputs changed between steps, want %d (the constants must not)", c.name, changed, want)
		}
	}
}

// compiledOptimizer is an optimizer with its compiled update.
type compiledOptimizer interface {
	optim.Optimizer
	Compiled() *frontend.Compiled
}

// TestCompiledAhead checks that an optimizer compiles its update when it
// is made (frontend.Compiled.Precompile), before any gradient exists, and
// that the first Step runs that graph rather than compiling another: the
// first training step then compiles the update while its gradient step
// compiles.
func TestCompiledAhead(t *testing.T) {
	var compiles, runs int
	interpBackend, ok := frontend.LookupBackend(frontend.InterpBackend)
	if !ok {
		t.Fatal("no interp backend")
	}
	frontend.RegisterBackend("optim-ahead", frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		compiles++
		exe, err := interpBackend.Compile(g)
		if err != nil {
			return nil, err
		}
		return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
			runs++
			return exe.Run(in)
		}), nil
	}))
	opts := frontend.Options{Backend: "optim-ahead"}
	makers := map[string]func(ps []nn.Ref) (compiledOptimizer, error){
		"AdamW": func(ps []nn.Ref) (compiledOptimizer, error) {
			return optim.NewAdamW(ps, optim.AdamWConfig{LR: 1e-3, WeightDecay: 0.1}, opts)
		},
		"SGD": func(ps []nn.Ref) (compiledOptimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9}, opts)
		},
	}
	r := rand.New(rand.NewPCG(3, 3))
	for _, dt := range []frontend.DType{frontend.Float32, frontend.BFloat16} {
		for name, newOpt := range makers {
			compiles, runs = 0, 0
			m, _ := newModel(r, dt)
			opt, err := newOpt(nn.Parameters(m))
			if err != nil {
				t.Fatal(err)
			}
			if compiles != 1 || runs != 0 {
				t.Fatalf("%s %v: made: %d compiles and %d runs, want 1 and 0", name, dt, compiles, runs)
			}
			for range 2 {
				gs, _ := grads(r, dt)
				if err := opt.Step(gs); err != nil {
					t.Fatal(err)
				}
			}
			if compiles != 1 || runs != 2 {
				t.Errorf("%s %v: 2 steps: %d compiles and %d runs, want 1 and 2", name, dt, compiles, runs)
			}
			if s := opt.Compiled().Stats(); s.Compiles != 1 || s.Calls != 2 {
				t.Errorf("%s %v: stats %+v, want 1 compile and 2 calls", name, dt, s)
			}
		}
	}
}

// TestCompiledAheadServesGradStep checks that the update compiled when
// the optimizer is made is the one a training step's gradients run:
// those of an nn.GradStep on float32 parameters with the loss computed
// in bfloat16 (mixed precision, as the bench's training rows), whose
// gradients come back as float32 tensors of the parameters' shapes.
func TestCompiledAheadServesGradStep(t *testing.T) {
	opts := frontend.Options{Backend: frontend.InterpBackend}
	r := rand.New(rand.NewPCG(4, 4))
	m, _ := newModel(r, frontend.Float32)
	loss := func(in ...*frontend.Tensor) []*frontend.Tensor {
		x := in[0].Cast(frontend.BFloat16)
		y := x.MatMul(m.A.Cast(frontend.BFloat16)).Add(m.B.Cast(frontend.BFloat16)).Tanh()
		return []*frontend.Tensor{y.Mul(y).Sum(nil, false).Cast(frontend.Float32)}
	}
	step := nn.NewGradStep(m, loss, 1, opts)
	opt, err := optim.NewAdamW(step.Params(), optim.AdamWConfig{LR: 1e-2}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if s := opt.Compiled().Stats(); s.Compiles != 1 || s.Calls != 0 {
		t.Fatalf("stats %+v once made: want the update compiled, not called", s)
	}
	x, _ := pair(r, frontend.Float32)
	for range 2 {
		_, gs, err := step.Call(x[0].Reshape(3, 2))
		if err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(gs); err != nil {
			t.Fatal(err)
		}
	}
	if s := opt.Compiled().Stats(); s.Compiles != 1 || s.CacheHits < 1 {
		t.Errorf("stats %+v: want 1 compile (ahead), found by the first step", s)
	}
}
