package nn_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/nn"
	"pgregory.net/rapid"
)

// convShape is a legal Conv2d configuration of unusual sizes.
type convShape struct {
	cin, cout, k int
	o            nn.ConvOptions
}

func (c convShape) String() string {
	return fmt.Sprintf("c%d-%d_k%d_s%d_p%d_d%d_g%d_b%v", c.cin, c.cout, c.k, c.o.Stride, c.o.Padding, c.o.Dilation, c.o.Groups, c.o.Bias)
}

// convShapes: odd channel counts, kernels 1–7, strides 2 and 3, padding,
// dilation 2, depthwise and 2-group convolutions, with and without bias.
var convShapes = []convShape{
	{1, 3, 3, nn.ConvOptions{Stride: 1, Padding: 1, Dilation: 1, Groups: 1, Bias: true}},
	{3, 5, 5, nn.ConvOptions{Stride: 2, Padding: 2, Dilation: 1, Groups: 1}},
	{5, 7, 7, nn.ConvOptions{Stride: 3, Padding: 3, Dilation: 1, Groups: 1, Bias: true}},
	{7, 7, 3, nn.ConvOptions{Stride: 1, Padding: 2, Dilation: 2, Groups: 1}},
	{7, 7, 3, nn.ConvOptions{Stride: 2, Padding: 1, Dilation: 1, Groups: 7, Bias: true}},
	{6, 4, 3, nn.ConvOptions{Stride: 1, Padding: 1, Dilation: 1, Groups: 2}},
	{3, 6, 1, nn.ConvOptions{Stride: 2, Padding: 0, Dilation: 1, Groups: 1, Bias: true}},
	{5, 5, 5, nn.ConvOptions{Stride: 1, Padding: 0, Dilation: 2, Groups: 5}},
	{4, 6, 7, nn.ConvOptions{Stride: 2, Padding: 3, Dilation: 1, Groups: 2, Bias: true}},
	{3, 1, 3, nn.ConvOptions{Stride: 3, Padding: 0, Dilation: 1, Groups: 1, Bias: true}},
}

// image is a batch of images: N × H × W.
type image struct{ n, h, w int }

var images = []image{{1, 15, 15}, {3, 17, 17}, {1, 31, 31}, {3, 15, 17}, {1, 17, 31}}

// dtypes are the precisions the model path takes: float32 and bf16, and
// f16 too under testsize.Long.
var dtypes = func() []frontend.DType {
	if testsize.Long() {
		return []frontend.DType{frontend.Float32, frontend.BFloat16, frontend.Float16}
	}
	return []frontend.DType{frontend.Float32, frontend.BFloat16}
}()

// rounded returns x's values as dt holds them, and x in dt.
func rounded(x *nd, dt frontend.DType) (*nd, *frontend.Tensor) {
	t := tensor(x, dt)
	return &nd{shape: x.shape, data: t.Float64s()}, t
}

// TestShapesConv2d runs convolutions of unusual shapes on every model
// path in float32 and bf16 against the float64 loops.
func TestShapesConv2d(t *testing.T) {
	cover := testsize.Cover(len(convShapes), len(images)*len(dtypes), nil)
	for i, cs := range convShapes {
		for j := range len(images) * len(dtypes) {
			if !cover(i, j) {
				continue
			}
			im, dt := images[j/len(dtypes)], dtypes[j%len(dtypes)]
			t.Run(fmt.Sprintf("%v/n%d_%dx%d/%v", cs, im.n, im.h, im.w, dt), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(i), uint64(j)))
				build := func() *nn.Conv2d {
					c := nn.NewConv2d(nn.NewRNG(uint64(10*i+j)), cs.cin, cs.cout, cs.k, cs.o)
					if err := nn.Cast(c, dt); err != nil {
						t.Fatal(err)
					}
					return c
				}
				ref := build()
				x, xt := rounded(randND(r, im.n, cs.cin, im.h, im.w), dt)
				var b []float64
				if ref.Bias != nil {
					b = ref.Bias.Float64s()
				}
				want := refConv2d(x, ndOf(t, ref.Weight), b, cs.o.Stride, cs.o.Padding, cs.o.Dilation, cs.o.Groups)
				macs := len(want.data) * cs.cin / cs.o.Groups * cs.k * cs.k
				forPaths(t, macs, dt, func(t *testing.T, opts frontend.Options) {
					c := build()
					comp, err := nn.Compile(c, func(in ...*frontend.Tensor) []*frontend.Tensor {
						return []*frontend.Tensor{c.Forward(in[0]).Relu()}
					}, 1, opts)
					if err != nil {
						t.Fatal(err)
					}
					out, err := comp.Call(xt)
					called(t, "conv2d", err)
					relu := make([]float64, len(want.data))
					for i, v := range want.data {
						relu[i] = math.Max(v, 0)
					}
					closeTo(t, "conv2d+relu", out[0], want.shape, relu, tolOf(dt))
				})
			})
		}
	}
}

// layerCase is a pooling or normalization layer of unusual sizes and its
// float64 reference; buffers, when set, are the reference's new values
// of the layer's buffers (batch norm's running statistics).
type layerCase struct {
	name string
	// build returns the layer, fresh (its buffers at their start).
	build func() any
	fwd   func(m any, x *frontend.Tensor) *frontend.Tensor
	ref   func(x *nd) (y *nd, buffers [][]float64)
}

func poolCase(k, s, p int, isMax bool) layerCase { return poolModeCase(k, s, p, isMax, false, false) }

// poolModeCase is poolCase with PyTorch's ceil_mode and (average)
// count_include_pad=False.
func poolModeCase(k, s, p int, isMax, ceil, exclude bool) layerCase {
	kind := "avg"
	if isMax {
		kind = "max"
	}
	name := fmt.Sprintf("%spool_k%d_s%d_p%d", kind, k, s, p)
	if ceil {
		name += "_ceil"
	}
	if exclude {
		name += "_excludepad"
	}
	return layerCase{
		name:  name,
		build: func() any { return &struct{}{} },
		fwd: func(_ any, x *frontend.Tensor) *frontend.Tensor {
			if isMax {
				return nn.MaxPool2d{Kernel: k, Stride: s, Padding: p, CeilMode: ceil}.Forward(x)
			}
			return nn.AvgPool2d{Kernel: k, Stride: s, Padding: p, CeilMode: ceil, ExcludePad: exclude}.Forward(x)
		},
		ref: func(x *nd) (*nd, [][]float64) { return refPoolModes(x, k, s, p, isMax, ceil, !exclude), nil },
	}
}

func adaptiveCase(oh, ow int) layerCase {
	return layerCase{
		name:  fmt.Sprintf("adaptive_%dx%d", oh, ow),
		build: func() any { return &struct{}{} },
		fwd: func(_ any, x *frontend.Tensor) *frontend.Tensor {
			return nn.AdaptiveAvgPool2d{OutH: oh, OutW: ow}.Forward(x)
		},
		ref: func(x *nd) (*nd, [][]float64) { return refAdaptiveAvg(x, oh, ow), nil },
	}
}

// bnCase is a batch norm of c channels with drawn weights and running
// statistics, in training or evaluation mode.
func bnCase(c int, training bool) layerCase {
	build := func() *nn.BatchNorm2d {
		bn := nn.NewBatchNorm2d(c)
		g := nn.NewRNG(uint64(c))
		bn.Weight, bn.Bias = g.Uniform(0.5, 1.5, c), g.Uniform(-1, 1, c)
		bn.RunningMean, bn.RunningVar = g.Uniform(-1, 1, c), g.Uniform(0.5, 2, c)
		bn.Training = training
		return bn
	}
	return layerCase{
		name:  fmt.Sprintf("batchnorm_c%d_train%v", c, training),
		build: func() any { return build() },
		fwd:   func(m any, x *frontend.Tensor) *frontend.Tensor { return m.(*nn.BatchNorm2d).Forward(x) },
		ref: func(x *nd) (*nd, [][]float64) {
			bn := build()
			w, b, rm, rv := bn.Weight.Float64s(), bn.Bias.Float64s(), bn.RunningMean.Float64s(), bn.RunningVar.Float64s()
			if training {
				y, nm, nv := refBatchNormTrain(x, w, b, rm, rv, 1e-5, 0.1)
				return y, [][]float64{nm, nv}
			}
			y := newND(x.shape...)
			hw := x.shape[2] * x.shape[3]
			for i := range y.data {
				ch := (i / hw) % c
				y.data[i] = (x.data[i]-rm[ch])/math.Sqrt(rv[ch]+1e-5)*w[ch] + b[ch]
			}
			return y, [][]float64{rm, rv}
		},
	}
}

// layerCases and the channel count each takes (0: any; the images' is
// the case's).
var layerCases = []struct {
	c int
	l layerCase
}{
	{3, poolCase(3, 2, 1, true)}, {5, poolCase(3, 3, 0, true)}, {1, poolCase(5, 2, 2, true)}, {7, poolCase(2, 2, 0, true)},
	{3, poolCase(3, 2, 1, false)}, {5, poolCase(5, 3, 2, false)}, {7, poolCase(7, 1, 3, false)}, {1, poolCase(2, 3, 1, false)},
	{3, poolModeCase(3, 2, 0, true, true, false)}, {5, poolModeCase(3, 2, 1, false, true, true)}, {1, poolModeCase(2, 3, 1, false, false, true)},
	{5, adaptiveCase(1, 1)}, {3, adaptiveCase(2, 2)}, {7, adaptiveCase(3, 2)},
	{3, bnCase(3, true)}, {5, bnCase(5, false)}, {7, bnCase(7, true)}, {1, bnCase(1, true)},
}

// TestShapesPoolingAndBatchNorm runs max and average pools with odd
// windows and strides (floor and ceil mode, average pools with and
// without the padding counted), adaptive average pools to 1×1, 2×2
// and 3×2, and batch norm in training and evaluation mode, on odd images
// on every model path in float32 and bf16 (batch norm's statistics in
// float32) against the float64 loops.
func TestShapesPoolingAndBatchNorm(t *testing.T) {
	cover := testsize.Cover(len(layerCases), len(images)*len(dtypes), nil)
	for i, lc := range layerCases {
		for j := range len(images) * len(dtypes) {
			if !cover(i, j) {
				continue
			}
			im, dt := images[j/len(dtypes)], dtypes[j%len(dtypes)]
			t.Run(fmt.Sprintf("%s/n%d_%dx%d/%v", lc.l.name, im.n, im.h, im.w, dt), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(i), uint64(j)))
				x, xt := rounded(randND(r, im.n, lc.c, im.h, im.w), dt)
				want, wantBufs := lc.l.ref(x)
				forPaths(t, len(x.data)*9, dt, func(t *testing.T, opts frontend.Options) {
					m := lc.l.build()
					comp, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor {
						return []*frontend.Tensor{lc.l.fwd(m, in[0])}
					}, 1, opts)
					if err != nil {
						t.Fatal(err)
					}
					out, err := comp.Call(xt)
					called(t, lc.l.name, err)
					if out[0].DType() != dt {
						t.Errorf("result of %v, want %v", out[0].DType(), dt)
					}
					closeTo(t, lc.l.name, out[0], want.shape, want.data, tolOf(dt))
					for k, b := range nn.Buffers(m) {
						closeTo(t, b.Name, b.Tensor(), b.Tensor().Shape(), wantBufs[k], 1e-5)
					}
				})
			})
		}
	}
}

// TestShapesConvBlockRapid draws small CNN blocks of legal but unusual
// configurations (a convolution of any stride, padding, dilation and
// grouping, an optional batch norm in either mode, ReLU, an optional max
// or average pool) on images of odd sizes, and runs them on every model
// path against the eager float64 block.
func TestShapesConvBlockRapid(t *testing.T) {
	testsize.RapidChecks(t, 4)
	rapid.Check(t, func(rt *rapid.T) {
		groups := rapid.SampledFrom([]int{1, 1, 2, 3}).Draw(rt, "groups")
		cin := groups * rapid.IntRange(1, 3).Draw(rt, "cin/groups")
		cout := groups * rapid.IntRange(1, 3).Draw(rt, "cout/groups")
		if rapid.Bool().Draw(rt, "depthwise") {
			groups, cout = cin, cin
		}
		k := rapid.SampledFrom([]int{1, 2, 3, 5, 7}).Draw(rt, "k")
		o := nn.ConvOptions{Stride: rapid.IntRange(1, 3).Draw(rt, "stride"), Padding: rapid.IntRange(0, k/2).Draw(rt, "pad"),
			Dilation: rapid.IntRange(1, 2).Draw(rt, "dilation"), Groups: groups, Bias: rapid.Bool().Draw(rt, "bias")}
		ext := o.Dilation*(k-1) + 1
		h := rapid.IntRange(max(ext-2*o.Padding, 1), 19).Draw(rt, "h")
		w := rapid.IntRange(max(ext-2*o.Padding, 1), 19).Draw(rt, "w")
		n := rapid.IntRange(1, 3).Draw(rt, "n")
		oh, ow := nn.OutSize(h, k, o.Stride, o.Padding, o.Dilation), nn.OutSize(w, k, o.Stride, o.Padding, o.Dilation)
		bn := rapid.SampledFrom([]string{"none", "train", "eval"}).Draw(rt, "batchnorm")
		if bn == "train" && n*oh*ow < 2 {
			bn = "eval"
		}
		var pool nn.Layer
		if pk := rapid.IntRange(0, min(oh, ow, 3)).Draw(rt, "pool kernel"); pk > 0 {
			ps, pp := rapid.IntRange(1, 3).Draw(rt, "pool stride"), rapid.IntRange(0, pk/2).Draw(rt, "pool pad")
			if rapid.Bool().Draw(rt, "max pool") {
				pool = nn.MaxPool2d{Kernel: pk, Stride: ps, Padding: pp}
			} else {
				pool = nn.AvgPool2d{Kernel: pk, Stride: ps, Padding: pp}
			}
		}
		dt := rapid.SampledFrom(dtypes).Draw(rt, "dtype")
		seed := rapid.Uint64().Draw(rt, "seed")
		build := func() *nn.Sequential {
			g := nn.NewRNG(seed)
			layers := []nn.Layer{nn.NewConv2d(g, cin, cout, k, o)}
			if bn != "none" {
				b := nn.NewBatchNorm2d(cout)
				b.Weight, b.Bias = g.Uniform(0.5, 1.5, cout), g.Uniform(-1, 1, cout)
				b.RunningMean, b.RunningVar = g.Uniform(-1, 1, cout), g.Uniform(0.5, 2, cout)
				b.Training = bn == "train"
				layers = append(layers, b)
			}
			layers = append(layers, nn.ReLU{})
			if pool != nil {
				layers = append(layers, pool)
			}
			return &nn.Sequential{Layers: layers}
		}
		x := nn.NewRNG(seed+1).Uniform(-1, 1, n, cin, h, w)
		compile := func(m *nn.Sequential, backend string) (*nn.Compiled, error) {
			return nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor {
				if dt == frontend.Float32 {
					return []*frontend.Tensor{m.Forward(in[0])}
				}
				return nn.Autocast(m, dt, func() []*frontend.Tensor { return []*frontend.Tensor{m.Forward(in[0].Cast(dt))} })
			}, 1, frontend.Options{Backend: backend})
		}
		ref := build()
		var want *frontend.Tensor
		if dt != frontend.Float32 && bn == "train" {
			// Batch statistics over as few as two values a channel
			// amplify the rounding of 16-bit convolution outputs past
			// any tolerance (two that round to one value normalize to
			// 0): the reference is the eager autocast block.
			c, err := compile(ref, frontend.EagerBackend)
			if err != nil {
				rt.Fatalf("eager: %v", err)
			}
			out, err := c.Call(x)
			if err != nil {
				rt.Fatalf("eager: %v", err)
			}
			want = out[0]
		} else {
			if dt != frontend.Float32 {
				castModel(rt, ref.Layers[0], dt) // the rounded weights
			}
			castModel(rt, ref, frontend.Float64)
			want = ref.Forward(x.Cast(dt).Cast(frontend.Float64))
		}
		wantBufs := nn.Tensors(nn.Buffers(ref))
		macs := n * cout * oh * ow * cin / groups * k * k
		for _, p := range modelPaths {
			if !pathSelected(p.name) {
				continue
			}
			name, skip := p.backend(p.isHeavy(macs, dt))
			if skip != "" {
				continue
			}
			m := build()
			c, err := compile(m, name)
			if err != nil {
				rt.Fatalf("%s: %v", p.name, err)
			}
			out, err := c.Call(x)
			if errors.Is(err, frontend.ErrPTXOnly) {
				continue // compiled and assembled only
			}
			if err != nil {
				rt.Fatalf("%s: %v", p.name, err)
			}
			closeTo(rt, p.name+": block", out[0], want.Shape(), want.Float64s(), tolOf(dt))
			for i, b := range nn.Buffers(m) {
				closeTo(rt, p.name+": "+b.Name, b.Tensor(), wantBufs[i].Shape(), wantBufs[i].Float64s(), tolOf(dt))
			}
		}
	})
}
