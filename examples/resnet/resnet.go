// Package resnet is ResNet-50 (torchvision's resnet50: bottleneck blocks,
// the stride on the 3×3 convolution) built with package nn, at any depth
// and width, so that a tiny configuration runs on the interpreter.
//
//	go run ./examples/models resnet
package resnet

import (
	"fmt"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
)

// Config is the architecture: Blocks bottlenecks per stage (the stages'
// widths are Width, 2·Width, 4·Width, …; each stage after the first
// halves the resolution), Classes outputs.
type Config struct {
	Blocks  []int
	Width   int
	Classes int
	Seed    uint64
}

// ResNet50 is the ImageNet model: 25 557 032 parameters.
var ResNet50 = Config{Blocks: []int{3, 4, 6, 3}, Width: 64, Classes: 1000, Seed: 1}

// Tiny has two stages of one block each, width 4: the interpreter runs it
// on 32×32 images.
var Tiny = Config{Blocks: []int{1, 1}, Width: 4, Classes: 10, Seed: 1}

// ResNet is the model: a 7×7 stride-2 stem with batch norm, ReLU and a 3×3
// stride-2 max pool, the stages, global average pooling and a linear
// classifier.
type ResNet struct {
	Stem   *nn.ConvBN
	Stages [][]*nn.Bottleneck
	FC     *nn.Linear
}

// New returns the model for cfg, initialised from cfg.Seed.
func New(cfg Config) *ResNet {
	g := nn.NewRNG(cfg.Seed)
	m := &ResNet{Stem: nn.NewConvBN(g, 3, cfg.Width, 7, 2)}
	in := cfg.Width
	for s, n := range cfg.Blocks {
		width := cfg.Width << s
		stride := 2
		if s == 0 {
			stride = 1
		}
		var stage []*nn.Bottleneck
		for b := range n {
			if b > 0 {
				stride = 1
			}
			stage = append(stage, nn.NewBottleneck(g, in, width, stride))
			in = width * nn.Expansion
		}
		m.Stages = append(m.Stages, stage)
	}
	m.FC = nn.NewLinear(g, in, cfg.Classes, true)
	return m
}

// Forward maps images [N, 3, H, W] to logits [N, classes].
func (m *ResNet) Forward(x *frontend.Tensor) *frontend.Tensor {
	x = m.Stem.Forward(x).Relu()
	x = nn.MaxPool2d{Kernel: 3, Stride: 2, Padding: 1}.Forward(x)
	for _, stage := range m.Stages {
		for _, b := range stage {
			x = b.Forward(x)
		}
	}
	x = nn.AdaptiveAvgPool2d{OutH: 1, OutW: 1}.Forward(x)
	return m.FC.Forward(nn.Flatten{}.Forward(x))
}

// Loss is the mean cross-entropy of the model on images in[0] and int64
// labels in[1], with label smoothing 0.1 (torchvision's recipe).
func (m *ResNet) Loss(in ...*frontend.Tensor) []*frontend.Tensor {
	return []*frontend.Tensor{nn.CrossEntropy(m.Forward(in[0]), in[1], 0.1)}
}

// MixedLoss is Loss computed in dt (bf16 mixed precision, as PyTorch's
// autocast trains): the images and the float32 parameters are cast to dt
// (nn.Autocast: the parameters stay float32 master weights and their
// gradients come out float32), batch norm keeps its statistics and
// running averages in float32, and the logits are cast back to float32
// for the cross-entropy.
func (m *ResNet) MixedLoss(dt frontend.DType) func(in ...*frontend.Tensor) []*frontend.Tensor {
	return func(in ...*frontend.Tensor) []*frontend.Tensor {
		return nn.Autocast(m, dt, func() []*frontend.Tensor {
			logits := m.Forward(in[0].Cast(dt)).Cast(frontend.Float32)
			return []*frontend.Tensor{nn.CrossEntropy(logits, in[1], 0.1)}
		})
	}
}

// ParamCount returns the number of parameters of cfg's model without
// building it.
func ParamCount(cfg Config) int {
	convBN := func(in, out, k int) int { return in*out*k*k + 2*out }
	n := convBN(3, cfg.Width, 7)
	in := cfg.Width
	for s, blocks := range cfg.Blocks {
		width := cfg.Width << s
		out := width * nn.Expansion
		for b := range blocks {
			n += convBN(in, width, 1) + convBN(width, width, 3) + convBN(width, out, 1)
			if b == 0 && (s > 0 || in != out) {
				n += convBN(in, out, 1)
			}
			in = out
		}
	}
	return n + in*cfg.Classes + cfg.Classes
}

// String describes cfg.
func (c Config) String() string {
	return fmt.Sprintf("ResNet(blocks %v, width %d, %d classes, %d parameters)", c.Blocks, c.Width, c.Classes, ParamCount(c))
}
