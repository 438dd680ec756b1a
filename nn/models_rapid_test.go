package nn_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/nn"
	"pgregory.net/rapid"
)

// rapidNet is a CNN of drawn architecture: a body of stages, global
// average pooling to a drawn size, a linear head.
type rapidNet struct {
	Body *nn.Sequential
	Pool nn.AdaptiveAvgPool2d `nn:"-"`
	Head *nn.Linear
}

func (m *rapidNet) Forward(x *frontend.Tensor) *frontend.Tensor {
	return m.Head.Forward(nn.Flatten{}.Forward(m.Pool.Forward(m.Body.Forward(x))))
}

// netPlan is what drawNet drew: build makes the network from a seed (the
// same weights each time), desc names its layers.
type netPlan struct {
	n, c, h, w int
	classes    int
	smoothing  float64
	training   bool
	macs       int
	desc       []string
	build      func(seed uint64) *rapidNet
}

// drawNet draws a legal CNN of one to three stages, each a convolution
// (any kernel 1–7, stride, padding, dilation, grouping or depthwise, bias
// or not) with an optional batch norm and an activation (ReLU, GELU exact
// or tanh, SiLU, ReLU6, Hardswish), a residual basic block (downsampling
// when the stride or width changes), an inverted residual block
// (MobileNetV2/V3's and EfficientNet's: expansion, 3×3 or 5×5 depthwise,
// ReLU6, Hardswish or SiLU, squeeze-excite gated by Sigmoid or
// Hardsigmoid, or none), or a max or average pool (padding, stride); dropout
// in evaluation mode; then adaptive average pooling to a size that need
// not divide the map (or exceed it), and a linear head.
func drawNet(rt *rapid.T) netPlan {
	p := netPlan{
		n: rapid.IntRange(1, 3).Draw(rt, "n"), c: rapid.IntRange(1, 5).Draw(rt, "c"),
		h: rapid.IntRange(3, 14).Draw(rt, "h"), w: rapid.IntRange(3, 14).Draw(rt, "w"),
		training: rapid.Bool().Draw(rt, "training"),
	}
	type stage func(g *nn.RNG) []nn.Layer
	var stages []stage
	c, h, w := p.c, p.h, p.w
	for i := range rapid.IntRange(1, 3).Draw(rt, "stages") {
		kind := rapid.SampledFrom([]string{"conv", "conv", "block", "pool", "mbconv"}).Draw(rt, fmt.Sprintf("stage %d", i))
		switch {
		case kind == "mbconv" && (!p.training || p.n*h*w >= 2):
			out, stride := rapid.IntRange(1, 6).Draw(rt, "mbconv width"), rapid.IntRange(1, 2).Draw(rt, "mbconv stride")
			expand, k := rapid.IntRange(1, 4).Draw(rt, "mbconv expand"), rapid.SampledFrom([]int{3, 5}).Draw(rt, "mbconv kernel")
			oh, ow := nn.OutSize(h, k, stride, k/2, 1), nn.OutSize(w, k, stride, k/2, 1)
			if p.training && p.n*oh*ow < 2 {
				stride, oh, ow = 1, h, w // batch norm's training needs two values a channel
			}
			act := rapid.SampledFrom([]string{"relu6", "hardswish", "silu"}).Draw(rt, "mbconv activation")
			se := rapid.SampledFrom([]string{"", "sigmoid", "hardsigmoid"}).Draw(rt, "squeeze-excite gate")
			in, hidden := c, c*expand
			p.macs += h*w*hidden*in*min(expand-1, 1) + oh*ow*hidden*(k*k+out)
			h, w, c = oh, ow, out
			p.desc = append(p.desc, fmt.Sprintf("mbconv %d→%d×%d→%d k%d/s%d %s se=%q", in, hidden, expand, out, k, stride, act, se))
			stages = append(stages, func(g *nn.RNG) []nn.Layer {
				o := nn.InvertedResidualOptions{Expand: expand, Kernel: k, Stride: stride, Act: activation(act)}
				if se != "" {
					o.SE = nn.NewSqueezeExcite(g, hidden, max(hidden/4, 1), nn.ReLU{}, activation(se))
				}
				return []nn.Layer{nn.NewInvertedResidual(g, in, out, o)}
			})
		case kind == "pool" && min(h, w) >= 2:
			k := rapid.IntRange(2, min(h, w, 3)).Draw(rt, "pool kernel")
			s, pad := rapid.IntRange(1, 3).Draw(rt, "pool stride"), rapid.IntRange(0, k/2).Draw(rt, "pool pad")
			var l nn.Layer = nn.AvgPool2d{Kernel: k, Stride: s, Padding: pad}
			if rapid.Bool().Draw(rt, "max") {
				l = nn.MaxPool2d{Kernel: k, Stride: s, Padding: pad}
			}
			h, w = nn.OutSize(h, k, s, pad, 1), nn.OutSize(w, k, s, pad, 1)
			p.desc = append(p.desc, fmt.Sprintf("%T%+v", l, l))
			stages = append(stages, func(*nn.RNG) []nn.Layer { return []nn.Layer{l} })
		case kind == "block" && (!p.training || p.n*h*w >= 2):
			out, stride := rapid.IntRange(1, 6).Draw(rt, "block width"), rapid.IntRange(1, 2).Draw(rt, "block stride")
			if p.training && p.n*nn.OutSize(h, 3, stride, 1, 1)*nn.OutSize(w, 3, stride, 1, 1) < 2 {
				stride = 1 // batch norm's training needs two values a channel
			}
			in := c
			p.macs += 9 * out * (in + out) * h * w
			h, w = nn.OutSize(h, 3, stride, 1, 1), nn.OutSize(w, 3, stride, 1, 1)
			c = out
			p.desc = append(p.desc, fmt.Sprintf("block %d→%d/s%d", in, out, stride))
			stages = append(stages, func(g *nn.RNG) []nn.Layer { return []nn.Layer{nn.NewBasicBlock(g, in, out, stride)} })
		default:
			groups := 1
			switch rapid.IntRange(0, 2).Draw(rt, "grouping") {
			case 1:
				groups = c // depthwise
			case 2:
				for _, d := range []int{3, 2} {
					if c%d == 0 {
						groups = d
						break
					}
				}
			}
			cout := groups * rapid.IntRange(1, 3).Draw(rt, "cout/groups")
			k := rapid.SampledFrom([]int{1, 2, 3, 5, 7}).Draw(rt, "k")
			o := nn.ConvOptions{Stride: rapid.IntRange(1, 3).Draw(rt, "stride"), Dilation: rapid.IntRange(1, 2).Draw(rt, "dilation"),
				Groups: groups, Bias: rapid.Bool().Draw(rt, "bias")}
			ext := o.Dilation*(k-1) + 1
			o.Padding = rapid.IntRange(max(0, (ext-min(h, w)+1)/2), max(0, (ext-min(h, w)+1)/2, ext/2)).Draw(rt, "pad")
			in := c
			oh, ow := nn.OutSize(h, k, o.Stride, o.Padding, o.Dilation), nn.OutSize(w, k, o.Stride, o.Padding, o.Dilation)
			p.macs += oh * ow * cout * in / groups * k * k
			h, w, c = oh, ow, cout
			bn := rapid.Bool().Draw(rt, "batch norm") && (!p.training || p.n*h*w >= 2)
			act := rapid.SampledFrom([]string{"relu", "gelu", "gelu_tanh", "silu", "relu6", "hardswish"}).Draw(rt, "activation")
			p.desc = append(p.desc, fmt.Sprintf("conv %d→%d k%d %+v bn=%v %s", in, cout, k, o, bn, act))
			stages = append(stages, func(g *nn.RNG) []nn.Layer {
				ls := []nn.Layer{nn.NewConv2d(g, in, cout, k, o)}
				if bn {
					b := nn.NewBatchNorm2d(cout)
					b.Weight, b.Bias = g.Uniform(0.5, 1.5, cout), g.Uniform(-0.5, 0.5, cout)
					b.RunningMean, b.RunningVar = g.Uniform(-0.5, 0.5, cout), g.Uniform(0.5, 2, cout)
					ls = append(ls, b)
				}
				return append(ls, activation(act))
			})
		}
	}
	dropout := !p.training && rapid.Bool().Draw(rt, "dropout")
	oh, ow := rapid.IntRange(1, 3).Draw(rt, "adaptive h"), rapid.IntRange(1, 3).Draw(rt, "adaptive w") // also more cells than the map has, as PyTorch allows
	p.classes = rapid.IntRange(2, 6).Draw(rt, "classes")
	p.smoothing = rapid.SampledFrom([]float64{0, 0.1, 0.25}).Draw(rt, "label smoothing")
	p.desc = append(p.desc, fmt.Sprintf("dropout=%v adaptive %dx%d linear %d→%d", dropout, oh, ow, c*oh*ow, p.classes))
	p.macs = p.n * (p.macs + c*oh*ow*p.classes)
	feat := c * oh * ow
	training := p.training
	p.build = func(seed uint64) *rapidNet {
		g := nn.NewRNG(seed)
		body := &nn.Sequential{}
		for _, s := range stages {
			body.Layers = append(body.Layers, s(g)...)
		}
		if dropout {
			body.Layers = append(body.Layers, nn.NewDropout(0.3))
		}
		m := &rapidNet{Body: body, Pool: nn.AdaptiveAvgPool2d{OutH: oh, OutW: ow}, Head: nn.NewLinear(g, feat, p.classes, true)}
		// Batch norms with the statistics and affine maps of a trained
		// model: in evaluation mode, the defaults (mean 0, variance 1,
		// weight 1, bias 0) map an input a dead ReLU made all zero to
		// exactly 0 before the next ReLU, a kink that the central
		// differences of the reference check straddle.
		for _, bn := range nn.Modules[nn.BatchNorm2d](m) {
			c := bn.Weight.Shape()[0]
			bn.RunningMean, bn.RunningVar = g.Uniform(-0.5, 0.5, c), g.Uniform(0.5, 2, c)
			bn.Weight, bn.Bias = g.Uniform(0.5, 1.5, c), g.Uniform(-0.5, 0.5, c)
		}
		nn.SetTraining(m, training)
		return m
	}
	return p
}

// activation is the layer drawNet's activation names.
func activation(name string) nn.Layer {
	switch name {
	case "relu":
		return nn.ReLU{}
	case "gelu":
		return nn.GELU{Approximate: "none"}
	case "gelu_tanh":
		return nn.GELU{Approximate: "tanh"}
	case "relu6":
		return nn.ReLU6{}
	case "hardswish":
		return nn.Hardswish{}
	case "sigmoid":
		return nn.Sigmoid{}
	case "hardsigmoid":
		return nn.Hardsigmoid{}
	}
	return nn.SiLU{}
}

// TestModelsRapid draws whole CNNs (drawNet) in training or evaluation
// mode and runs a step of each on every model path: the logits, the
// cross-entropy loss with label smoothing, the gradients of every
// parameter and batch norm's new running statistics, in float32 against
// the eager float64 network and under bf16 autocast against the eager
// bf16 autocast network. A default run takes the interpreter and one
// other path a check, in turn.
func TestModelsRapid(t *testing.T) {
	check := 0
	rapid.Check(t, func(rt *rapid.T) {
		check++
		p := drawNet(rt)
		dt := rapid.SampledFrom(dtypes).Draw(rt, "dtype")
		seed := rapid.Uint64().Draw(rt, "seed")
		rt.Logf("%s %dx%dx%dx%d train=%v: %s", dt, p.n, p.c, p.h, p.w, p.training, strings.Join(p.desc, "; "))
		g := nn.NewRNG(seed + 1)
		x, y := g.Uniform(-1, 1, p.n, p.c, p.h, p.w), g.Int64s(p.classes, p.n)
		step := func(m *rapidNet, dt frontend.DType) func(in ...*frontend.Tensor) []*frontend.Tensor {
			return func(in ...*frontend.Tensor) []*frontend.Tensor {
				if dt == frontend.Float32 || dt == frontend.Float64 {
					logits := m.Forward(in[0].Cast(dt))
					return []*frontend.Tensor{nn.CrossEntropy(logits, in[1], p.smoothing), logits}
				}
				return nn.Autocast(m, dt, func() []*frontend.Tensor {
					logits := m.Forward(in[0].Cast(dt)).Cast(frontend.Float32)
					return []*frontend.Tensor{nn.CrossEntropy(logits, in[1], p.smoothing), logits}
				})
			}
		}
		ref := p.build(seed)
		refDT := frontend.Float64
		if dt == frontend.Float32 {
			castModel(rt, ref, frontend.Float64)
		} else {
			refDT = dt // the eager autocast step: bf16 rounding of gradients is amplified by batch norm's backward
		}
		refStep := nn.NewGradStep(ref, step(ref, refDT), 2, frontend.Options{Backend: frontend.EagerBackend})
		want, wantGrads, err := refStep.Call(x, y)
		if err != nil {
			rt.Fatalf("eager: %v", err)
		}
		wantBufs := nn.Tensors(nn.Buffers(ref))
		if dt == frontend.Float32 {
			centralDifferences(rt, rand.New(rand.NewPCG(seed, 3)), ref, refStep.Params(), wantGrads, func() float64 {
				return step(ref, frontend.Float64)(x, y)[0].Item()
			})
		}
		for i, path := range modelPaths {
			// A default run takes the interpreter and one other path a
			// check, in turn (each compile for LLVM or the GPU takes
			// seconds); all of them under testsize.Long.
			if !pathSelected(path.name) || !testsize.Long() && *pathsFlag == "" && i > 0 && i != 1+check%(len(modelPaths)-1) {
				continue
			}
			name, skip := path.backend(path.isHeavy(10*p.macs, dt))
			if skip != "" {
				continue
			}
			m := p.build(seed)
			s := nn.NewGradStep(m, step(m, dt), 2, frontend.Options{Backend: name})
			got, grads, err := s.Call(x, y)
			if errors.Is(err, frontend.ErrPTXOnly) {
				continue
			}
			if err != nil {
				rt.Fatalf("%s: %v", path.name, err)
			}
			tol := tolOf(dt)
			closeTo(rt, path.name+": logits", got[1], want[1].Shape(), want[1].Float64s(), 2*tol)
			closeTo(rt, path.name+": loss", got[0], nil, want[0].Float64s(), tol)
			gradTol := gradTols(wantGrads, 3*tol)
			for i, r := range s.Params() {
				closeTo(rt, path.name+": gradient of "+r.Name, grads[i], wantGrads[i].Shape(), wantGrads[i].Float64s(), gradTol[i])
			}
			for i, b := range nn.Buffers(m) {
				closeTo(rt, path.name+": "+b.Name, b.Tensor(), wantBufs[i].Shape(), wantBufs[i].Float64s(), tol)
			}
		}
	})
}

// centralDifferences checks grads, the gradients of loss (an eager
// float64 evaluation of module m) with respect to params, at two random
// elements of each parameter against central differences of loss: the
// references the model paths are compared with come from the same
// autodiff, which this checks. m's buffers are restored after each
// evaluation (a training-mode batch norm rebinds them).
func centralDifferences(t tb, r *rand.Rand, m any, params []nn.Ref, grads []*frontend.Tensor, loss func() float64) {
	t.Helper()
	bufs := nn.Buffers(m)
	saved := nn.Tensors(bufs)
	const h = 1e-6
	for k, p := range params {
		orig := p.Tensor()
		base := orig.Float64s()
		g := grads[k].Float64s()
		for range 2 {
			j := r.IntN(len(base))
			at := func(d float64) float64 {
				vs := slices.Clone(base)
				vs[j] += d
				*p.Ptr = frontend.FromSlice(vs, orig.Shape()...)
				defer func() {
					*p.Ptr = orig
					if err := nn.SetTensors(bufs, saved); err != nil {
						t.Fatalf("%v", err)
					}
				}()
				return loss()
			}
			num := (at(h) - at(-h)) / (2 * h)
			if math.Abs(num-g[j]) > 1e-5*(1+math.Abs(num)) {
				t.Fatalf("eager float64 gradient of %s, element %d: %g, central difference %g", p.Name, j, g[j], num)
			}
		}
	}
}
