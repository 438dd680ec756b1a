// Command train fits a two-layer perceptron to synthetic data with
// stochastic gradient descent: frontend.ValueAndGrad traces the loss,
// differentiates it and splits it into a forward and a backward pass
// (printing what the forward pass saves), and a compiled update applies
// the step. Both run on the backend named by -backend: aot_eager (the
// interpreter, default), interp, or nvptx on a GPU once that backend
// exists.
//
//	go run ./examples/train [-backend aot_eager] [-steps 40] [-lr 0.2]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/strata-ir/strata/frontend"
)

func main() {
	cfg := DefaultConfig()
	flag.StringVar(&cfg.Backend, "backend", cfg.Backend, "the frontend backend running the training step")
	flag.IntVar(&cfg.Steps, "steps", cfg.Steps, "SGD steps")
	flag.Float64Var(&cfg.LR, "lr", cfg.LR, "learning rate")
	flag.Parse()
	if _, err := Train(os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

// Sizes of the problem: a batch of inputs, the hidden layer, the targets.
const batch, in, hidden, out = 32, 8, 16, 4

// Config is a training run.
type Config struct {
	Backend string // frontend backend of the gradient and the update
	Steps   int
	LR      float64
	DType   frontend.DType // of the data and the parameters
}

// DefaultConfig trains in float32 on the interpreter.
func DefaultConfig() Config {
	return Config{Backend: frontend.AOTEagerBackend, Steps: 40, LR: 0.2, DType: frontend.Float32}
}

// Loss is the model and its loss: mean((tanh(x·w1 + b1)·w2 + b2 - y)²).
func Loss(x, y, w1, b1, w2, b2 *frontend.Tensor) *frontend.Tensor {
	h := x.MatMul(w1).Add(b1).Tanh()
	d := h.MatMul(w2).Add(b2).Sub(y)
	return d.Mul(d).Mean(nil, false)
}

// Params are the indices of Loss's parameters among its arguments.
var Params = []int{2, 3, 4, 5}

// Data returns inputs uniform in [-1, 1) and targets from a fixed teacher,
// y = sin(x·a).
func Data(dt frontend.DType) (x, y *frontend.Tensor) {
	x = centered(10, 1, batch, in).Cast(dt)
	a := centered(11, 1, in, out).Cast(dt)
	return x, x.MatMul(a).Sin()
}

// Init returns the initial parameters w1, b1, w2, b2: uniform in ±1/√fan-in.
func Init(dt frontend.DType) []*frontend.Tensor {
	return []*frontend.Tensor{
		centered(1, 1/sqrt(in), in, hidden).Cast(dt), centered(2, 1/sqrt(in), hidden).Cast(dt),
		centered(3, 1/sqrt(hidden), hidden, out).Cast(dt), centered(4, 1/sqrt(hidden), out).Cast(dt),
	}
}

// centered is uniform in [-scale, scale).
func centered(seed uint64, scale float64, shape ...int) *frontend.Tensor {
	return frontend.Rand(seed, shape...).Sub(frontend.Scalar(0.5)).Mul(frontend.Scalar(float32(2 * scale)))
}

func sqrt(n int) float64 { return math.Sqrt(float64(n)) }

// Train runs cfg.Steps steps of SGD and returns the loss before each step
// and after the last.
func Train(w io.Writer, cfg Config) ([]float64, error) {
	opts := frontend.Options{Backend: cfg.Backend}
	step := frontend.ValueAndGrad(Loss, Params...).WithOptions(opts)
	// One compiled SGD step updates every parameter in place (Assign's
	// functionalization: the new values are the graph's outputs, written
	// back into the parameters); lr is a Go value read at every call.
	update, err := frontend.Compile(func(params, grads []*frontend.Tensor, lr float64) error {
		for j, p := range params {
			if err := p.SubInPlace(grads[j].Mul(frontend.Full(p.DType(), lr))); err != nil {
				return err
			}
		}
		return nil
	}, opts)
	if err != nil {
		return nil, err
	}
	x, y := Data(cfg.DType)
	params := Init(cfg.DType)
	var losses []float64
	for i := range cfg.Steps {
		values, grads, err := step.Call(append([]*frontend.Tensor{x, y}, params...)...)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		losses = append(losses, values[0].Item())
		if i == 0 {
			fmt.Fprintf(w, "training an MLP %d -> %d -> %d on %d samples with SGD (lr %g) on %s\n", in, hidden, out, batch, cfg.LR, cfg.Backend)
			fmt.Fprint(w, step.Report())
		}
		if i%10 == 0 {
			fmt.Fprintf(w, "step %3d: loss %.6f\n", i, losses[i])
		}
		if _, err := update.Invoke(params, grads, cfg.LR); err != nil {
			return nil, fmt.Errorf("step %d, update: %w", i, err)
		}
	}
	final := Loss(x, y, params[0], params[1], params[2], params[3])
	if err := final.Err(); err != nil {
		return nil, err
	}
	losses = append(losses, final.Item())
	fmt.Fprintf(w, "final:    loss %.6f (%.1f%% of the initial loss)\n", losses[len(losses)-1], 100*losses[len(losses)-1]/losses[0])
	return losses, nil
}
