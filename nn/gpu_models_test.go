package nn_test

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/strata-ir/strata/examples/cnn"
	"github.com/strata-ir/strata/examples/gpt2"
	"github.com/strata-ir/strata/examples/resnet"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
	"github.com/strata-ir/strata/runtime/cuda"
)

// The GPU-only paths of issues #20 and #21 (cuDNN and cuBLASLt plans,
// the flash kernels forward and backward, Strata's tensor-core conv
// kernels, the in-place KV cache) on models of a user's odd sizes, larger
// than the shapes tests' (those run kernels in the interpreter here):
// each runs on the GPU (the device path) against the eager float64 model
// or the float64 loops. On a GPU machine: `cd nn && ../.device/nn.test
// -test.run TestGPUModels -test.v`, and again with STRATA_CUDNN=off
// STRATA_CUBLASLT=off for Strata's own kernels; without a GPU they skip.

// modelsBackend runs the TestGPUModels tests on another backend instead
// of the GPU's, to check the tests themselves on a host without one.
var modelsBackend = flag.String("models-backend", "", "run TestGPUModels on this backend (e.g. interp) instead of the GPU")

// needDevice skips t without a GPU (before its references are computed).
func needDevice(t *testing.T) {
	t.Helper()
	if *modelsBackend != "" {
		return
	}
	if !pathSelected("device") {
		t.Skip("-paths leaves out the device path")
	}
	if _, skip := deviceBackend(); skip != "" {
		t.Skip(skip)
	}
}

// onDevice runs check on the device path, or skips without a GPU.
func onDevice(t *testing.T, check func(t *testing.T, opts frontend.Options)) {
	t.Helper()
	if *modelsBackend != "" {
		check(t, frontend.Options{Backend: *modelsBackend})
		return
	}
	name, skip := deviceBackend()
	if skip != "" {
		t.Skip(skip)
	}
	before := gpuDownloads()
	check(t, frontend.Options{Backend: name})
	if !t.Failed() && gpuDownloads() == before {
		t.Errorf("nothing was read back from the GPU")
	}
}

// gpuGPT is a GPT-2 of a user's sizes on the GPU: head dims 16 to 128
// (multiples of 16 take the flash kernels: mma.sync, wgmma at 64 and
// 128), sequences past one 64- or 128-row tile with ragged tails.
type gpuGPT struct {
	s  gptShape
	sh seqShape
}

var gpuGPTs = []gpuGPT{
	{gptShape{96, 3, 97, 2}, seqShape{2, 200}},    // dh 32
	{gptShape{160, 2, 1000, 1}, seqShape{1, 333}}, // dh 80
	{gptShape{192, 2, 97, 3}, seqShape{2, 130}},   // dh 96
	{gptShape{224, 2, 97, 1}, seqShape{1, 150}},   // dh 112
	{gptShape{256, 2, 500, 1}, seqShape{1, 257}},  // dh 128
	{gptShape{128, 2, 97, 2}, seqShape{3, 65}},    // dh 64
	{gptShape{48, 3, 97, 1}, seqShape{2, 129}},    // dh 16
	{gptShape{120, 3, 97, 1}, seqShape{2, 77}},    // dh 40: no flash kernel
}

// TestGPUModelsGPT2 runs GPT-2 models of odd sizes on the GPU: logits in
// float32 and with bf16 parameters, a bf16 mixed-precision training step
// (loss and gradients) and AdamW, against the eager float64 model.
func TestGPUModelsGPT2(t *testing.T) {
	needDevice(t)
	for i, c := range gpuGPTs {
		t.Run(fmt.Sprintf("%v/b%d_t%d", c.s, c.sh.b, c.sh.t), func(t *testing.T) {
			seed := uint64(100 + i)
			ctx := c.sh.t + 2
			x, y := gptTokens(seed, c.s.vocab, c.sh)
			for _, dt := range []frontend.DType{frontend.Float32, frontend.BFloat16} {
				t.Run("logits_"+dt.String(), func(t *testing.T) {
					ref := newGPT(c.s, ctx, seed)
					castModel(t, ref, dt)
					castModel(t, ref, frontend.Float64)
					want := ref.Logits(x)
					onDevice(t, func(t *testing.T, opts frontend.Options) {
						m := newGPT(c.s, ctx, seed)
						castModel(t, m, dt)
						comp, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{m.Logits(in[0])} }, 1, opts)
						if err != nil {
							t.Fatal(err)
						}
						out, err := comp.Call(x)
						called(t, "logits", err)
						closeTo(t, "logits", out[0], want.Shape(), want.Float64s(), tolOf(dt))
					})
				})
			}
			t.Run("train_bf16", func(t *testing.T) {
				ref := newGPT(c.s, ctx, seed)
				castModel(t, ref, frontend.Float64)
				wantLoss, wantGrads, err := nn.NewGradStep(ref, ref.Loss, 2, frontend.Options{Backend: frontend.EagerBackend}).Call(x, y)
				if err != nil {
					t.Fatal(err)
				}
				onDevice(t, func(t *testing.T, opts frontend.Options) {
					m := newGPT(c.s, ctx, seed)
					step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, opts)
					got, grads, err := step.Call(x, y)
					called(t, "training step", err)
					closeTo(t, "loss", got[0], nil, wantLoss[0].Float64s(), tolOf(frontend.BFloat16))
					for k, p := range step.Params() {
						closeTo(t, "gradient of "+p.Name, grads[k], wantGrads[k].Shape(), wantGrads[k].Float64s(), 2*tolOf(frontend.BFloat16))
					}
					checkAdamW(t, step.Params(), grads, opts)
				})
			})
		})
	}
}

// TestGPUModelsGPT2Decode prefills a KV cache with a prompt past one
// tile and decodes to the cache's end on the GPU, each step's logits
// against the eager float64 model on the whole sequence so far.
func TestGPUModelsGPT2Decode(t *testing.T) {
	needDevice(t)
	for i, c := range []gpuGPT{gpuGPTs[0], gpuGPTs[2], gpuGPTs[4]} {
		for _, dt := range []frontend.DType{frontend.Float32, frontend.BFloat16} {
			t.Run(fmt.Sprintf("%v/b%d_t%d/%v", c.s, c.sh.b, c.sh.t, dt), func(t *testing.T) {
				seed := uint64(200 + i)
				prompt := c.sh.t
				ctx := prompt + 3
				all, _ := gptTokens(seed, c.s.vocab, seqShape{c.sh.b, ctx})
				ref := newGPT(c.s, ctx, seed)
				castModel(t, ref, dt)
				castModel(t, ref, frontend.Float64)
				full := ref.Logits(all).Float64s()
				at := func(pos int) []float64 {
					out := make([]float64, 0, c.sh.b*c.s.vocab)
					for b := range c.sh.b {
						row := (b*ctx + pos) * c.s.vocab
						out = append(out, full[row:row+c.s.vocab]...)
					}
					return out
				}
				onDevice(t, func(t *testing.T, opts frontend.Options) {
					m := newGPT(c.s, ctx, seed)
					castModel(t, m, dt)
					d := gpt2.NewDecoder(m, c.sh.b, dt)
					pf, err := nn.Compile(d, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{d.Prefill(in[0])} }, 1, opts)
					if err != nil {
						t.Fatal(err)
					}
					dec, err := nn.Compile(d, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{d.Decode(in[0], in[1])} }, 2, opts)
					if err != nil {
						t.Fatal(err)
					}
					out, err := pf.Call(all.Slice([]int{0, 0}, []int{c.sh.b, prompt}, nil))
					called(t, "prefill", err)
					closeTo(t, "prefill logits", out[0], []int{c.sh.b, c.s.vocab}, at(prompt-1), tolOf(dt))
					for pos := prompt; pos < ctx; pos++ {
						tok := all.Slice([]int{0, pos}, []int{c.sh.b, pos + 1}, nil)
						out, err := dec.Call(tok, frontend.FromSlice([]int64{int64(pos)}, []int{}...))
						called(t, fmt.Sprintf("decode at %d", pos), err)
						closeTo(t, fmt.Sprintf("decode logits at %d", pos), out[0], []int{c.sh.b, c.s.vocab}, at(pos), tolOf(dt))
					}
				})
			})
		}
	}
}

// gpuConvs are convolutions of the channel counts the tensor-core and
// library plans take, on odd images: the stem's 7×7 stride 2, 1×1
// downsampling, dilation, depthwise, 2 groups, stride 3, no bias.
var gpuConvs = []struct {
	cs convShape
	im image
}{
	{convShape{16, 32, 3, nn.ConvOptions{Stride: 1, Padding: 1, Dilation: 1, Groups: 1, Bias: true}}, image{4, 29, 29}},
	{convShape{32, 64, 1, nn.ConvOptions{Stride: 2, Padding: 0, Dilation: 1, Groups: 1}}, image{2, 27, 27}},
	{convShape{3, 16, 7, nn.ConvOptions{Stride: 2, Padding: 3, Dilation: 1, Groups: 1}}, image{4, 33, 33}},
	{convShape{32, 32, 3, nn.ConvOptions{Stride: 1, Padding: 2, Dilation: 2, Groups: 1, Bias: true}}, image{2, 19, 23}},
	{convShape{32, 32, 3, nn.ConvOptions{Stride: 2, Padding: 1, Dilation: 1, Groups: 32}}, image{2, 21, 21}},
	{convShape{32, 64, 3, nn.ConvOptions{Stride: 1, Padding: 1, Dilation: 1, Groups: 2, Bias: true}}, image{2, 17, 17}},
	{convShape{64, 64, 5, nn.ConvOptions{Stride: 1, Padding: 2, Dilation: 1, Groups: 1}}, image{1, 13, 13}},
	{convShape{16, 24, 3, nn.ConvOptions{Stride: 3, Padding: 0, Dilation: 1, Groups: 1, Bias: true}}, image{3, 31, 31}},
	{convShape{64, 128, 1, nn.ConvOptions{Stride: 1, Padding: 0, Dilation: 1, Groups: 1}}, image{2, 7, 9}},
}

// convPair is a convolution of a gpuConvs case followed by a 3×3 one,
// so that the case's data gradient is taken too.
type convPair struct{ A, B *nn.Conv2d }

// TestGPUModelsConv runs the convolutions of gpuConvs on the GPU, in
// float32 and bf16: forward (with ReLU) against the float64 loops, and
// the gradients of a pair of convolutions (weights, bias, and the data
// gradient between them) against the eager float64 pair.
func TestGPUModelsConv(t *testing.T) {
	needDevice(t)
	for i, c := range gpuConvs {
		for _, dt := range []frontend.DType{frontend.Float32, frontend.BFloat16} {
			t.Run(fmt.Sprintf("%v/n%d_%dx%d/%v", c.cs, c.im.n, c.im.h, c.im.w, dt), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(i), 7))
				build := func() *convPair {
					g := nn.NewRNG(uint64(300 + i))
					p := &convPair{
						A: nn.NewConv2d(g, c.cs.cin, c.cs.cout, c.cs.k, c.cs.o),
						B: nn.NewConv2d(g, c.cs.cout, 8, 3, nn.ConvOptions{Stride: 1, Padding: 1, Dilation: 1, Groups: 1, Bias: true}),
					}
					castModel(t, p, dt)
					return p
				}
				ref := build()
				x, xt := rounded(randND(r, c.im.n, c.cs.cin, c.im.h, c.im.w), dt)
				var b []float64
				if ref.A.Bias != nil {
					b = ref.A.Bias.Float64s()
				}
				want := refConv2d(x, ndOf(t, ref.A.Weight), b, c.cs.o.Stride, c.cs.o.Padding, c.cs.o.Dilation, c.cs.o.Groups)
				for k, v := range want.data {
					want.data[k] = math.Max(v, 0)
				}
				pairLoss := func(p *convPair) func(in ...*frontend.Tensor) []*frontend.Tensor {
					return func(in ...*frontend.Tensor) []*frontend.Tensor {
						y := p.B.Forward(p.A.Forward(in[0]).Relu())
						return []*frontend.Tensor{y.Cast(in[1].DType()).Mul(in[1]).Sum(nil, false)}
					}
				}
				castModel(t, ref, frontend.Float64)
				oh := (c.im.h+2*c.cs.o.Padding-c.cs.o.Dilation*(c.cs.k-1)-1)/c.cs.o.Stride + 1
				ow := (c.im.w+2*c.cs.o.Padding-c.cs.o.Dilation*(c.cs.k-1)-1)/c.cs.o.Stride + 1
				probe := nn.NewRNG(uint64(400+i)).Uniform(-1, 1, c.im.n, 8, oh, ow)
				_, wantGrads, err := nn.NewGradStep(ref, pairLoss(ref), 2, frontend.Options{Backend: frontend.EagerBackend}).Call(xt.Cast(frontend.Float64), probe.Cast(frontend.Float64))
				if err != nil {
					t.Fatal(err)
				}
				onDevice(t, func(t *testing.T, opts frontend.Options) {
					p := build()
					comp, err := nn.Compile(p, func(in ...*frontend.Tensor) []*frontend.Tensor {
						return []*frontend.Tensor{p.A.Forward(in[0]).Relu()}
					}, 1, opts)
					if err != nil {
						t.Fatal(err)
					}
					out, err := comp.Call(xt)
					called(t, "conv2d", err)
					closeTo(t, "conv2d+relu", out[0], want.shape, want.data, tolOf(dt))
					step := nn.NewGradStep(p, pairLoss(p), 2, opts)
					_, grads, err := step.Call(xt, probe)
					called(t, "gradients", err)
					for k, q := range step.Params() {
						closeTo(t, "gradient of "+q.Name, grads[k], wantGrads[k].Shape(), wantGrads[k].Float64s(), 2*tolOf(dt))
					}
				})
			})
		}
	}
}

// gpuResNets are ResNets of widths the tensor-core plans take, on odd
// images.
var gpuResNets = []resnetShape{
	{16, 10, image{4, 29, 29}}, {8, 7, image{2, 33, 37}}, {32, 5, image{2, 23, 23}},
}

// TestGPUModelsResNet runs small ResNets on the GPU: the forward pass in
// evaluation mode (batch norm folded where the compiler folds it) and in
// training mode (batch statistics, the running averages written back),
// in float32 and under bf16 autocast, against the eager float64 model;
// then two training steps (label smoothing 0.1) with SGD (momentum,
// weight decay), each against the eager model's from the same state
// (checkSGDSteps).
func TestGPUModelsResNet(t *testing.T) {
	needDevice(t)
	for i, s := range gpuResNets {
		seed := uint64(500 + i)
		x := nn.NewRNG(seed).Uniform(-1, 1, s.im.n, 3, s.im.h, s.im.w)
		y := nn.NewRNG(seed+1).Int64s(s.classes, s.im.n)
		newNet := func() *resnet.ResNet {
			return resnet.New(resnet.Config{Blocks: []int{1, 1}, Width: s.width, Classes: s.classes, Seed: seed})
		}
		for _, dt := range []frontend.DType{frontend.Float32, frontend.BFloat16} {
			for _, training := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%v/train%v", s, dt, training), func(t *testing.T) {
					checkResNetForward(t, newNet, training, dt, x, onDevice)
				})
			}
			t.Run(fmt.Sprintf("%v/%v/sgd", s, dt), func(t *testing.T) {
				checkSGDSteps(t, newNet, dt, x, y, optim.SGDConfig{LR: 0.05, Momentum: 0.9, WeightDecay: 1e-4}, 2)
			})
		}
	}
}

// TestGPUModelsCNN trains the canonical small CNN (conv-BN-ReLU-pool
// twice, linear) on images whose size 4 does not divide, three steps of
// SGD with momentum on the GPU, each against the eager model's step from
// the same state (checkSGDSteps).
func TestGPUModelsCNN(t *testing.T) {
	needDevice(t)
	cfg := cnn.Config{Batch: 12, Size: 22, InChannels: 3, C1: 16, C2: 32, Classes: 10, Seed: 3}
	x, y := cnn.Data(cfg)
	newNet := func() *cnn.CNN { return cnn.New(cfg) }
	for _, dt := range []frontend.DType{frontend.Float32, frontend.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			checkSGDSteps(t, newNet, dt, x, y, optim.SGDConfig{LR: 0.02, Momentum: 0.9}, 3)
		})
	}
}

// trainable is a model the SGD tests train: its loss on (images, labels)
// in float32, and in dt under mixed precision.
type trainable interface {
	Loss(in ...*frontend.Tensor) []*frontend.Tensor
	MixedLoss(dt frontend.DType) func(in ...*frontend.Tensor) []*frontend.Tensor
}

// lossIn returns m's loss computed in dt (float32, or mixed precision).
func lossIn[M trainable](m M, dt frontend.DType) func(in ...*frontend.Tensor) []*frontend.Tensor {
	if dt == frontend.Float32 {
		return m.Loss
	}
	return m.MixedLoss(dt)
}

// checkSGDSteps trains a model made by newNet on the device path (a
// compiled training step, its loss computed in dt, and a compiled SGD
// update), steps steps on (x, y), and checks every step from the state
// the trained model is in: the loss, the gradients and the batch-norm
// running statistics against the eager model given the same parameters
// and statistics, and the update against SGD's formula (PyTorch's, in
// float64) applied to the step's own gradients.
//
// Each step is compared from the same state, not whole trajectories: a
// step's rounding (1e-7) moves the next state, and a pre-ReLU value that
// lies within float32's error of zero there (ResNet w16 after one step:
// 1e-6 in float64, −3e-7 in float32) takes the other side of the kink,
// which moves the stem's gradient by 1.4% — as much in eager float32 as
// on any backend.
func checkSGDSteps[M trainable](t *testing.T, newNet func() M, dt frontend.DType, x, y *frontend.Tensor, cfg optim.SGDConfig, steps int) {
	eager := frontend.Options{Backend: frontend.EagerBackend}
	onDevice(t, func(t *testing.T, opts frontend.Options) {
		m := newNet()
		step := nn.NewGradStep(m, lossIn(m, dt), 2, opts)
		params := step.Params()
		opt, err := optim.NewSGD(params, cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		bufs := make([][]float64, len(params)) // SGD's momentum
		for k := range steps {
			// The eager model in m's state: host copies of its tensors.
			ref := newNet()
			state := nn.Refs(m)
			for i, r := range nn.Refs(ref) {
				src := state[i].Tensor()
				*r.Ptr = frontend.FromSlice(src.Float64s(), src.Shape()...).Cast(src.DType())
			}
			before := make([][]float64, len(params))
			for i, p := range params {
				before[i] = p.Tensor().Float64s()
			}
			refStep := nn.NewGradStep(ref, lossIn(ref, dt), 2, eager)
			wantLoss, wantGrads, err := refStep.Call(x, y)
			if err != nil {
				t.Fatal(err)
			}
			loss, grads, err := step.Call(x, y)
			called(t, "training step", err)
			what := fmt.Sprintf("step %d: ", k+1)
			closeTo(t, what+"loss", loss[0], nil, wantLoss[0].Float64s(), tolOf(dt))
			tols := gradTols(wantGrads, 3*tolOf(dt))
			for i, p := range params {
				closeTo(t, what+"gradient of "+p.Name, grads[i], wantGrads[i].Shape(), wantGrads[i].Float64s(), tols[i])
			}
			wantBufs := nn.Tensors(nn.Buffers(ref))
			for i, b := range nn.Buffers(m) {
				closeTo(t, what+b.Name, b.Tensor(), wantBufs[i].Shape(), wantBufs[i].Float64s(), tolOf(dt))
			}
			called(t, "SGD step", opt.Step(grads))
			for i, p := range params {
				g, want := grads[i].Float64s(), before[i]
				if bufs[i] == nil {
					bufs[i] = make([]float64, len(g))
				}
				for j := range want {
					d := g[j] + cfg.WeightDecay*want[j]
					bufs[i][j] = cfg.Momentum*bufs[i][j] + d
					if cfg.Nesterov {
						d += cfg.Momentum * bufs[i][j]
					} else {
						d = bufs[i][j]
					}
					want[j] -= cfg.LR * d
				}
				closeTo(t, what+"SGD update of "+p.Name, p.Tensor(), grads[i].Shape(), want, 1e-5)
			}
		}
	})
}

// TestGPUModelsOutOfMemory: a batch too large for the GPU fails the call
// with an out-of-memory error that says how much was asked and how much
// is free, located at the user's line that made the tensor, and the GPU
// still runs the next call.
func TestGPUModelsOutOfMemory(t *testing.T) {
	if *modelsBackend != "" {
		t.Skip("the GPU's memory only (256 GiB asked)")
	}
	needDevice(t)
	onDevice(t, func(t *testing.T, opts frontend.Options) {
		big := func(in ...*frontend.Tensor) []*frontend.Tensor {
			return []*frontend.Tensor{in[0].Add(in[1]).Relu()} // [N, M] from [N, 1] and [1, M]
		}
		c, err := frontend.Compile(big, opts)
		if err != nil {
			t.Fatal(err)
		}
		const n, m = 1 << 16, 1 << 20 // 256 GiB of float32
		g := nn.NewRNG(1)
		_, err = c.Call(g.Uniform(-1, 1, n, 1), g.Uniform(-1, 1, 1, m))
		var oom *cuda.OutOfMemoryError
		if !errors.As(err, &oom) || oom.Requested < n*m*4 {
			t.Fatalf("error %v, want an out-of-memory error asking for at least %d bytes", err, n*m*4)
		}
		msg := err.Error()
		if !strings.Contains(msg, " GiB") || !strings.Contains(msg, "free") || !strings.HasPrefix(msg, thisGPUFile) {
			t.Errorf("error %q, want it located in %s, saying what was asked and what is free", msg, thisGPUFile)
		}
		t.Logf("%v", err)
		out, err := c.Call(g.Uniform(-1, 1, 3, 1), g.Uniform(-1, 1, 1, 5))
		if err != nil {
			t.Fatalf("the call after the out-of-memory error: %v", err)
		}
		if got := out[0].Float64s(); len(got) != 15 {
			t.Fatalf("the call after the out-of-memory error returned %d values, want 15", len(got))
		}
	})
}

// thisGPUFile is this file's path, where the out-of-memory error is
// located.
var thisGPUFile = func() string { _, f, _, _ := goruntime.Caller(0); return f + ":" }()
