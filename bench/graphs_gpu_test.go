package bench

import (
	"fmt"
	"math"
	"testing"

	"github.com/strata-ir/strata/examples/cnn"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
)

// TestGPUTrainReduceOverheadMatchesDefault trains a small CNN (batch
// norm, cuDNN convolutions, cuBLASLt, AdamW) for several steps in the
// default mode (launch by launch) and in reduce-overhead (each pass a
// CUDA graph, the backward pass reading what the forward pass saved in
// place, the optimizer its state and the gradients): the losses, the
// parameters and the running statistics after the steps must agree. It
// logs the device copies of the last steps, which the variants that read
// in place keep small.
func TestGPUTrainReduceOverheadMatchesDefault(t *testing.T) {
	rt, err := frontend.GPURuntime()
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	cfg := cnn.Config{Batch: 64, Size: 16, InChannels: 3, C1: 16, C2: 32, Classes: 10, Seed: 3}
	const steps = 7
	type run struct {
		losses []float64
		state  map[string][]float32
	}
	train := func(mode frontend.Mode) run {
		m := cnn.New(cfg)
		for _, r := range nn.Refs(m) {
			*r.Ptr = r.Tensor().ToGPU()
		}
		x, y := cnn.Data(cfg)
		x, y = x.ToGPU(), y.ToGPU()
		opts := frontend.Options{Backend: frontend.NVPTXBackend, Mode: mode}
		step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, opts)
		opt, err := optim.NewAdamW(step.Params(), optim.AdamWConfig{LR: 1e-3, WeightDecay: 0.01}, opts)
		if err != nil {
			t.Fatal(err)
		}
		var out run
		for i := range steps {
			x0 := rt.Transfers()
			v, grads, err := step.Call(x, y)
			if err != nil {
				t.Fatalf("%s, step %d: %v", mode, i, err)
			}
			if err := opt.Step(grads); err != nil {
				t.Fatalf("%s, step %d: %v", mode, i, err)
			}
			for _, g := range grads {
				if err := g.Free(); err != nil {
					t.Fatal(err)
				}
			}
			if err := frontend.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if i >= steps-2 {
				d := rt.Transfers().Sub(x0)
				t.Logf("%s, step %d: %d device copies (%.2f MiB)", mode, i, d.DtoD, float64(d.DtoDBytes)/(1<<20))
			}
			out.losses = append(out.losses, v[0].Item())
		}
		out.state = map[string][]float32{}
		for _, r := range nn.Refs(m) {
			out.state[r.Name] = r.Tensor().Float32s()
			if err := r.Tensor().Err(); err != nil {
				t.Fatalf("%s: %s: %v", mode, r.Name, err)
			}
		}
		return out
	}
	def, ro := train(frontend.ModeDefault), train(frontend.ModeReduceOverhead)
	if def.losses[steps-1] >= def.losses[0] {
		t.Errorf("default: the loss did not fall: %v", def.losses)
	}
	for i := range def.losses {
		if d := math.Abs(def.losses[i] - ro.losses[i]); d > 1e-3*math.Abs(def.losses[i]) {
			t.Errorf("step %d: loss %g in reduce-overhead, %g in the default mode", i, ro.losses[i], def.losses[i])
		}
	}
	for name, want := range def.state {
		got := ro.state[name]
		if err := closeF32(got, want, 2e-3); err != nil {
			t.Errorf("%s after %d steps: %v", name, steps, err)
		}
	}
}

// closeF32 reports the first element of got farther from want than tol
// times want's largest magnitude.
func closeF32(got, want []float32, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d elements, want %d", len(got), len(want))
	}
	scale := 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > tol*scale || math.IsNaN(float64(got[i])) {
			return fmt.Errorf("element %d is %g, want %g (scale %g)", i, got[i], want[i], scale)
		}
	}
	return nil
}
