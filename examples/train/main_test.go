package main

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// TestLossDecreases trains on the interpreter backends: the loss never
// rises by more than 1% in a step and ends below a fifth of where it
// started.
func TestLossDecreases(t *testing.T) {
	for _, backend := range []string{frontend.AOTEagerBackend, frontend.InterpBackend} {
		cfg := DefaultConfig()
		cfg.Backend = backend
		var log strings.Builder
		losses, err := Train(&log, cfg)
		if err != nil {
			t.Fatalf("%s: %v\n%s", backend, err, log.String())
		}
		if len(losses) != cfg.Steps+1 {
			t.Fatalf("%s: %d losses, want %d", backend, len(losses), cfg.Steps+1)
		}
		for i := 1; i < len(losses); i++ {
			if losses[i] > losses[i-1]*1.01 {
				t.Errorf("%s: the loss rose from %g to %g at step %d", backend, losses[i-1], losses[i], i)
			}
		}
		if first, last := losses[0], losses[len(losses)-1]; !(last < 0.2*first) {
			t.Errorf("%s: the loss went from %g to %g, want below a fifth", backend, first, last)
		}
		if !strings.Contains(log.String(), "saves 4 values") {
			t.Errorf("%s: no partition report in\n%s", backend, log.String())
		}
	}
}

// TestGradientsAtStart checks the gradients of the initial parameters, in
// float64, against central differences of the loss.
func TestGradientsAtStart(t *testing.T) {
	x, y := Data(frontend.Float64)
	args := append([]*frontend.Tensor{x, y}, Init(frontend.Float64)...)
	grads, err := frontend.Grad(Loss, Params...).Call(args...)
	if err != nil {
		t.Fatal(err)
	}
	loss := func(args []*frontend.Tensor) float64 {
		return Loss(args[0], args[1], args[2], args[3], args[4], args[5]).Item()
	}
	const h = 1e-6
	for gi, a := range Params {
		vs, gs := args[a].Float64s(), grads[gi].Float64s()
		for j := 0; j < len(vs); j += 1 + len(vs)/7 {
			at := func(delta float64) float64 {
				moved := slices.Clone(args)
				ws := slices.Clone(vs)
				ws[j] += delta
				moved[a] = frontend.FromSlice(ws, args[a].Shape()...)
				return loss(moved)
			}
			num := (at(h) - at(-h)) / (2 * h)
			if math.Abs(num-gs[j]) > 1e-6*(1+math.Abs(num)) {
				t.Errorf("parameter %d, element %d: gradient %g, central difference %g", a, j, gs[j], num)
			}
		}
	}
}

// TestGPUBackend trains on nvptx where it exists, else skips.
func TestGPUBackend(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Backend, cfg.Steps = frontend.NVPTXBackend, 5
	losses, err := Train(&strings.Builder{}, cfg)
	if errors.Is(err, frontend.ErrNoGPUBackend) {
		t.Skipf("no GPU backend in this build: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if losses[len(losses)-1] >= losses[0] {
		t.Errorf("nvptx: the loss went from %g to %g", losses[0], losses[len(losses)-1])
	}
}
