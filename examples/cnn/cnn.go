// Package cnn is the canonical small CNN of torch.compile's tutorial —
// conv-bn-relu-pool twice, flatten, linear — built with package nn, and
// its training on a synthetic dataset with SGD and momentum.
//
//	go run ./examples/models cnn
package cnn

import (
	"fmt"
	"io"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
)

// Config is the model's and the dataset's size.
type Config struct {
	Batch, Size, InChannels int // images [Batch, InChannels, Size, Size]
	C1, C2, Classes         int
	Seed                    uint64
}

// Bench is the size of the cnn_small_train benchmark (batch 256, 32×32).
var Bench = Config{Batch: 256, Size: 32, InChannels: 3, C1: 32, C2: 64, Classes: 10, Seed: 1}

// Tiny is a size the interpreter trains in seconds.
var Tiny = Config{Batch: 16, Size: 8, InChannels: 3, C1: 4, C2: 8, Classes: 4, Seed: 1}

// CNN is the model.
type CNN struct {
	Conv1 *nn.Conv2d
	BN1   *nn.BatchNorm2d
	Conv2 *nn.Conv2d
	BN2   *nn.BatchNorm2d
	FC    *nn.Linear
}

// New returns the model for cfg, initialised from cfg.Seed.
func New(cfg Config) *CNN {
	g := nn.NewRNG(cfg.Seed)
	flat := cfg.C2 * (cfg.Size / 4) * (cfg.Size / 4)
	return &CNN{
		Conv1: nn.NewConv2d(g, cfg.InChannels, cfg.C1, 3, nn.ConvOptions{Padding: 1, Bias: true}),
		BN1:   nn.NewBatchNorm2d(cfg.C1),
		Conv2: nn.NewConv2d(g, cfg.C1, cfg.C2, 3, nn.ConvOptions{Padding: 1, Bias: true}),
		BN2:   nn.NewBatchNorm2d(cfg.C2),
		FC:    nn.NewLinear(g, flat, cfg.Classes, true),
	}
}

// Forward maps images [N, C, H, W] to logits [N, classes].
func (m *CNN) Forward(x *frontend.Tensor) *frontend.Tensor {
	pool := nn.MaxPool2d{Kernel: 2}
	x = pool.Forward(m.BN1.Forward(m.Conv1.Forward(x)).Relu())
	x = pool.Forward(m.BN2.Forward(m.Conv2.Forward(x)).Relu())
	return m.FC.Forward(nn.Flatten{}.Forward(x))
}

// Loss is the mean cross-entropy of the model on images x and int64
// labels y (no label smoothing).
func (m *CNN) Loss(in ...*frontend.Tensor) []*frontend.Tensor {
	return []*frontend.Tensor{nn.CrossEntropy(m.Forward(in[0]), in[1], 0)}
}

// MixedLoss is Loss computed in dt (bf16 mixed precision, as PyTorch's
// autocast trains): the images and the float32 parameters are cast to dt
// (nn.Autocast; the parameters stay float32 master weights, their
// gradients float32), batch norm keeps its statistics in float32, and the
// logits are cast back to float32 for the cross-entropy.
func (m *CNN) MixedLoss(dt frontend.DType) func(in ...*frontend.Tensor) []*frontend.Tensor {
	return func(in ...*frontend.Tensor) []*frontend.Tensor {
		return nn.Autocast(m, dt, func() []*frontend.Tensor {
			logits := m.Forward(in[0].Cast(dt)).Cast(frontend.Float32)
			return []*frontend.Tensor{nn.CrossEntropy(logits, in[1], 0)}
		})
	}
}

// Data returns a synthetic dataset: each class has a fixed random
// template, and an image is its class's template plus noise of the same
// scale, so the classes are learnable but not trivially.
func Data(cfg Config) (x, y *frontend.Tensor) {
	g := nn.NewRNG(cfg.Seed + 100)
	px := cfg.InChannels * cfg.Size * cfg.Size
	templates := g.Normal(1, cfg.Classes, px).Float32s()
	noise := g.Normal(1, cfg.Batch, px).Float32s()
	labels := g.Int64s(cfg.Classes, cfg.Batch).Int64s()
	data := make([]float32, cfg.Batch*px)
	for i, l := range labels {
		for j := range px {
			data[i*px+j] = templates[int(l)*px+j] + noise[i*px+j]
		}
	}
	return frontend.FromSlice(data, cfg.Batch, cfg.InChannels, cfg.Size, cfg.Size), frontend.FromSlice(labels, cfg.Batch)
}

// Train runs steps of SGD (momentum 0.9) on one batch of the synthetic
// dataset, the gradient and the update compiled with opts, and returns
// the trained model and the loss before each step.
func Train(w io.Writer, cfg Config, steps int, lr float64, opts frontend.Options) (*CNN, []float64, error) {
	m := New(cfg)
	x, y := Data(cfg)
	if err := nn.CheckLabels(y, cfg.Classes); err != nil {
		return nil, nil, err
	}
	step := nn.NewGradStep(m, m.Loss, 2, opts)
	opt, err := optim.NewSGD(step.Params(), optim.SGDConfig{LR: lr, Momentum: 0.9, WeightDecay: 5e-4}, opts)
	if err != nil {
		return nil, nil, err
	}
	var losses []float64
	for i := range steps {
		values, grads, err := step.Call(x, y)
		if err != nil {
			return nil, nil, fmt.Errorf("step %d: %w", i, err)
		}
		losses = append(losses, values[0].Item())
		if err := opt.Step(grads); err != nil {
			return nil, nil, fmt.Errorf("step %d: %w", i, err)
		}
		fmt.Fprintf(w, "step %3d: loss %.4f\n", i, losses[i])
	}
	return m, losses, nil
}

// Accuracy returns the fraction of x classified as y by m in evaluation
// mode (batch norm with its running statistics).
func Accuracy(m *CNN, x, y *frontend.Tensor) (float64, error) {
	nn.SetTraining(m, false)
	defer nn.SetTraining(m, true)
	pred := m.Forward(x).Argmax(1, false)
	p, l := pred.Int64s(), y.Int64s()
	if err := pred.Err(); err != nil {
		return 0, err
	}
	ok := 0
	for i := range p {
		if p[i] == l[i] {
			ok++
		}
	}
	return float64(ok) / float64(len(p)), nil
}
