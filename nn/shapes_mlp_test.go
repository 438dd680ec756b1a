package nn_test

import (
	"errors"
	"math"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/nn"
	"pgregory.net/rapid"
)

// TestShapesMLPRapid draws two-layer MLPs of any sizes (products whose
// dimensions are no multiple of the tensor cores' 8 or 16: wgmma and mma
// tiles must mask or pad them) with or without biases, in float32, bf16
// and f16, and runs their forward pass and their loss's gradients on
// every model path against the eager float64 MLP.
func TestShapesMLPRapid(t *testing.T) {
	testsize.RapidChecks(t, 4)
	rapid.Check(t, func(rt *rapid.T) {
		rows := rapid.IntRange(1, 40).Draw(rt, "rows")
		in, hidden, out := rapid.IntRange(1, 72).Draw(rt, "in"), rapid.IntRange(1, 72).Draw(rt, "hidden"), rapid.IntRange(1, 72).Draw(rt, "out")
		bias := rapid.Bool().Draw(rt, "bias")
		dt := rapid.SampledFrom([]frontend.DType{frontend.Float32, frontend.BFloat16, frontend.Float16}).Draw(rt, "dtype")
		seed := rapid.Uint64().Draw(rt, "seed")
		build := func() *nn.Sequential {
			g := nn.NewRNG(seed)
			return &nn.Sequential{Layers: []nn.Layer{nn.NewLinear(g, in, hidden, bias), nn.GELU{Approximate: "tanh"}, nn.NewLinear(g, hidden, out, bias)}}
		}
		x := nn.NewRNG(seed+1).Uniform(-1, 1, rows, in)
		r := nn.NewRNG(seed+2).Uniform(-1, 1, rows, out)
		loss := func(m *nn.Sequential) func(in ...*frontend.Tensor) []*frontend.Tensor {
			return func(in ...*frontend.Tensor) []*frontend.Tensor {
				y := m.Forward(in[0].Cast(dt))
				return []*frontend.Tensor{y.Cast(frontend.Float32).Mul(in[1]).Sum(nil, false), y}
			}
		}
		ref := build()
		castModel(rt, ref, dt)
		castModel(rt, ref, frontend.Float64)
		refLoss := func(in ...*frontend.Tensor) []*frontend.Tensor {
			y := ref.Forward(in[0])
			return []*frontend.Tensor{y.Mul(in[1]).Sum(nil, false), y}
		}
		want, wantGrads, err := nn.NewGradStep(ref, refLoss, 2, frontend.Options{Backend: frontend.EagerBackend}).
			Call(x.Cast(dt).Cast(frontend.Float64), r.Cast(frontend.Float64))
		if err != nil {
			rt.Fatalf("reference: %v", err)
		}
		// The loss sums rows·out products of both signs, which can cancel
		// to far less than its terms: its rounding error scales with
		// Σ|y·r| (the sum's condition), not with its value.
		lossCondition := 0.0
		for i, y := range want[1].Float64s() {
			lossCondition += math.Abs(y * r.Float64s()[i])
		}
		macs := 3 * rows * hidden * (in + out)
		for _, p := range modelPaths {
			if !pathSelected(p.name) {
				continue
			}
			name, skip := p.backend(p.isHeavy(macs, dt))
			if skip != "" {
				continue
			}
			m := build()
			castModel(rt, m, dt)
			got, grads, err := nn.NewGradStep(m, loss(m), 2, frontend.Options{Backend: name}).Call(x, r)
			if errors.Is(err, frontend.ErrPTXOnly) {
				continue
			}
			if err != nil {
				rt.Fatalf("%s: %v", p.name, err)
			}
			closeTo(rt, p.name+": output", got[1], want[1].Shape(), want[1].Float64s(), tolOf(dt))
			sumCloseTo(rt, p.name+": loss", got[0], want[0].Float64s()[0], lossCondition, 2*tolOf(dt))
			for i, g := range grads {
				closeTo(rt, p.name+": gradient", g, wantGrads[i].Shape(), wantGrads[i].Float64s(), 2*tolOf(dt))
			}
		}
	})
}

// sumCloseTo fails unless the scalar got is within tol·cond of want, where
// cond is the sum of its terms' magnitudes.
func sumCloseTo(t tb, what string, got *frontend.Tensor, want, cond, tol float64) {
	t.Helper()
	if err := got.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(got.Shape()) != 0 {
		t.Fatalf("%s: shape %v, want a scalar", what, got.Shape())
	}
	if g := got.Float64s()[0]; !(math.Abs(g-want) <= tol*max(cond, 1e-3)) {
		t.Fatalf("%s: %g, want %g (|Δ| %.3g, Σ|terms| %.3g, tol %g)", what, g, want, math.Abs(g-want), cond, tol)
	}
}
