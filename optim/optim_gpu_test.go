package optim_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
)

// TestGPUCompiledAhead runs AdamW and SGD on the GPU, their parameters
// and gradients in GPU memory, and compares three steps with the
// interpreter's: the update made when the optimizer was (compiled in the
// background, frontend.Compiled.Precompile) is the one the steps run,
// and computes what the interpreter does.
func TestGPUCompiledAhead(t *testing.T) {
	if _, err := frontend.GPURuntime(); errors.Is(err, frontend.ErrNoGPUBackend) {
		t.Skipf("no GPU: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	makers := map[string]func(ps []nn.Ref, opts frontend.Options) (compiledOptimizer, error){
		"AdamW": func(ps []nn.Ref, opts frontend.Options) (compiledOptimizer, error) {
			return optim.NewAdamW(ps, optim.AdamWConfig{LR: 1e-2, WeightDecay: 0.1}, opts)
		},
		"SGD": func(ps []nn.Ref, opts frontend.Options) (compiledOptimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-3}, opts)
		},
	}
	for name, newOpt := range makers {
		r := rand.New(rand.NewPCG(5, 5))
		m, _ := newModel(r, frontend.Float32)
		var gs [][]*frontend.Tensor
		for range 3 {
			g, _ := grads(r, frontend.Float32)
			gs = append(gs, g)
		}
		ref := &model{A: m.A, B: m.B}
		gpu := &model{A: m.A.ToGPU(), B: m.B.ToGPU()}
		want, err := newOpt(nn.Parameters(ref), frontend.Options{Backend: frontend.InterpBackend})
		if err != nil {
			t.Fatal(err)
		}
		opt, err := newOpt(nn.Parameters(gpu), frontend.Options{Backend: frontend.NVPTXBackend})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			if err := want.Step(g); err != nil {
				t.Fatal(err)
			}
			if err := opt.Step([]*frontend.Tensor{g[0].ToGPU(), g[1].ToGPU()}); err != nil {
				t.Fatal(err)
			}
		}
		for i, p := range []*frontend.Tensor{gpu.A, gpu.B} {
			if !p.IsGPU() {
				t.Errorf("%s: parameter %d left the GPU", name, i)
			}
			w := []*frontend.Tensor{ref.A, ref.B}[i].Float32s()
			got := p.Float32s()
			if err := p.Err(); err != nil {
				t.Fatal(err)
			}
			for j := range w {
				if d := got[j] - w[j]; d > 1e-5 || d < -1e-5 {
					t.Fatalf("%s: parameter %d, element %d: GPU %g, interpreter %g", name, i, j, got[j], w[j])
				}
			}
		}
		if s := opt.Compiled().Stats(); s.Compiles != 1 || s.CacheHits < 1 {
			t.Errorf("%s: stats %+v: want the update compiled once, ahead, and found by the first step", name, s)
		}
	}
}
