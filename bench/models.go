package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sort"
	"time"

	"github.com/strata-ir/strata/examples/cnn"
	"github.com/strata-ir/strata/examples/gpt2"
	"github.com/strata-ir/strata/examples/resnet"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/nn/safetensors"
	"github.com/strata-ir/strata/optim"
	"github.com/strata-ir/strata/runtime/exec"
)

// This file is the model rows of the suite (issues 20 and 21): whole
// models built with package nn from examples/, run through the frontend
// (not graph text like workloads.go's kernels). One device call runs
//
//	strata-models run --out DIR       weights and inputs (DIR/NAME.in.safetensors),
//	                                  Strata's outputs (NAME.strata.safetensors)
//	                                  and timings (models-strata.json)
//	python3 models_torch.py DIR       the same models in PyTorch on the same weights:
//	                                  NAME.torch.safetensors, models-torch.json
//	strata-models report DIR OUT.json compares the outputs, writes rows in the
//	                                  suite's results format
//
// The rows are the issues' names: cnn_small_train, gpt2_prefill,
// gpt2_decode (and gpt2_decode_b8), gpt2_dynamic, resnet50_infer,
// resnet50_train, gpt2_train.

// ModelRow is one model workload.
type ModelRow struct {
	Name, Summary, Shape string
	Tol                  float64
	// Flops is one call's floating-point operations (0: unknown).
	Flops int64
	// Tokens is the tokens one call generates, for a decoding row (whose
	// Ms is per decoding step): the report's rate is then tokens/s.
	Tokens int
	// run builds the model at size s, writes its weights and inputs to
	// in, runs it with opts and returns its outputs (by name) and timings.
	run func(s Size, opts frontend.Options, tm timing, log io.Writer) (in, out map[string]*frontend.Tensor, m *StrataMode, err error)
}

// ModelRows lists the model rows in run order (cheapest first).
var ModelRows = []*ModelRow{
	{Name: "cnn_small_train", Summary: "small CNN training step (conv-bn-relu-pool ×2, linear; SGD momentum), bf16 mixed precision (f32 master weights)", Shape: "batch 256, 3×32×32",
		Tol: 5e-2, run: runCNNTrain},
	{Name: "gpt2_prefill", Summary: "GPT-2 124M forward, logits of every position, bf16", Shape: "batch 8, seq 1024",
		Tol: tolBF16 * 2, Flops: gpt2Flops(8, 1024), run: runGPT2Prefill},
	{Name: "gpt2_decode", Summary: "GPT-2 124M greedy decoding with a KV cache, 128 new tokens after 128, bf16, reduce-overhead (CUDA graphs) on both sides; ms per token", Shape: "batch 1, 128+128",
		Tol: tolBF16 * 2, Tokens: 1, run: gpt2Decode(1)},
	{Name: "gpt2_decode_b8", Summary: "gpt2_decode on 8 sequences at once; ms per step (8 tokens)", Shape: "batch 8, 128+128",
		Tol: tolBF16 * 2, Tokens: 8, run: gpt2Decode(8)},
	{Name: "gpt2_dynamic", Summary: "GPT-2 124M forward at 10 sequence lengths compiled once (dynamic sequence length), logits of the last position, bf16; ms is one pass over the lengths, total_s the first pass (compiles included)", Shape: "batch 8, seq 128…1024 (10 lengths)",
		Tol: tolBF16 * 2, Flops: gpt2DynamicFlops(), run: runGPT2Dynamic},
	{Name: "resnet50_infer", Summary: "ResNet-50 inference (eval batch norm), bf16", Shape: "batch 64, 3×224×224",
		Tol: 5e-2, Flops: 64 * 2 * 4_089_184_256, run: runResNetInfer},
	{Name: "resnet50_train", Summary: "ResNet-50 training step (forward, backward, batch-norm running statistics; SGD momentum), bf16 mixed precision (f32 master weights)", Shape: "batch 64, 3×224×224",
		Tol: 5e-2, Flops: 3 * 64 * 2 * 4_089_184_256, run: runResNetTrain},
	{Name: "gpt2_train", Summary: "GPT-2 124M training step (forward, backward; AdamW), bf16 mixed precision with f32 master weights", Shape: "batch 8, seq 1024",
		Tol: 2e-2, Flops: 3 * gpt2Flops(8, 1024), run: runGPT2Train},
}

// gpt2Flops counts the matrix products of a GPT-2 124M forward pass.
func gpt2Flops(b, t int64) int64 {
	c := gpt2.GPT2Small
	d, l, v := int64(c.D), int64(c.Layers), int64(c.Vocab)
	perTok := l*(2*d*3*d+2*d*d+2*2*d*4*d) + 2*d*v
	attn := l * 2 * 2 * t * t * d / 2 // causal: half of q·kᵀ and p·v
	return b*t*perTok + b*attn
}

// gpt2DynamicLengths are gpt2_dynamic's sequence lengths at size s
// (all ≥ 2: a length of 1 is specialized, as in PyTorch).
func gpt2DynamicLengths(s Size) []int {
	if s == Small {
		return []int{2, 3, 4, 5, 6, 8, 10, 12, 14, 16}
	}
	return []int{128, 200, 256, 384, 448, 512, 640, 768, 900, 1024}
}

// gpt2DynamicFlops counts the products of one pass of gpt2_dynamic (as
// gpt2Flops, causal attention's half of the scores).
func gpt2DynamicFlops() int64 {
	var f int64
	for _, t := range gpt2DynamicLengths(Full) {
		f += gpt2Flops(8, int64(t))
	}
	return f
}

// timing says how a row times its calls: iters timed calls, then
// profile more under a device profile (exec.Runtime.StartProfile), whose
// ops are added to *profiled (by the row's first timed calls only).
type timing struct {
	iters, profile int
	profiled       *[]exec.ProfileEntry
	// log, when set, gets the number of Go collections the timed calls
	// ran (the executor starts them by the device memory handed out).
	log io.Writer
	// cpuProfile, when it points at a path, is the file of a Go CPU
	// profile of the timed calls (a row's first timed calls only: the
	// path is cleared once the profile starts).
	cpuProfile *string
	// gpu, when set, is the Runtime whose memory counters the log line
	// reports per call: the device memory left to the collector, and
	// the collections that started.
	gpu *exec.Runtime
	// decodeMode is the compile mode of the decoding rows (ModelsTiming.DecodeMode).
	decodeMode frontend.Mode
}

// with returns tm timing iters calls.
func (tm timing) with(iters int) timing {
	tm.iters = iters
	return tm
}

// callTimes are a row's timed calls: the fastest, median and slowest wall
// milliseconds of a call and its wait. The median is the row's figure;
// the spread shows the host's noise (a slow period fills the median of a
// few calls on a host-bound row).
type callTimes struct{ Min, Median, Max float64 }

// set records t in sm: Ms is the median.
func (t callTimes) set(sm *StrataMode) {
	sm.Ms, sm.MinMs, sm.MaxMs = t.Median, t.Min, t.Max
}

// calls runs call tm.iters times after one warm-up and the final JIT tier
// (frontend.Settle) and returns the wall milliseconds per call, each
// followed by a wait for the GPU; then tm.profile more calls under a
// profile.
func (tm timing) calls(call func() error) (callTimes, error) {
	if err := call(); err != nil {
		return callTimes{}, err
	}
	if err := frontend.Synchronize(); err != nil {
		return callTimes{}, err
	}
	// The final JIT tier's code, not the first's (frontend.Settle).
	if err := frontend.Settle(); err != nil {
		return callTimes{}, err
	}
	var ms []float64
	gc0, heap0 := gcCycles(), heapAllocs()
	var mem0 exec.MemoryCounters
	if tm.gpu != nil {
		mem0 = tm.gpu.MemoryCounters()
	}
	stop, err := tm.startCPUProfile()
	if err != nil {
		return callTimes{}, err
	}
	for range tm.iters {
		t0 := time.Now()
		if err := call(); err != nil {
			return callTimes{}, err
		}
		if err := frontend.Synchronize(); err != nil {
			return callTimes{}, err
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
	}
	if err := stop(); err != nil {
		return callTimes{}, err
	}
	if tm.log != nil {
		n := float64(max(tm.iters, 1))
		fmt.Fprintf(tm.log, "  %d Go collections in %d timed calls (host heap: %.1f MB allocated a call", gcCycles()-gc0, tm.iters, float64(heapAllocs()-heap0)/n/1e6)
		if tm.gpu != nil {
			m := tm.gpu.MemoryCounters()
			fmt.Fprintf(tm.log, "; device: %d collections started, %.0f MB handed out a call, %.0f MB of it left to the collector",
				m.Collections-mem0.Collections, float64(m.HandedOut-mem0.HandedOut)/n/1e6,
				(float64(m.HandedOut-mem0.HandedOut)-float64(m.Returned-mem0.Returned))/n/1e6)
		}
		fmt.Fprintln(tm.log, ")")
	}
	if len(ms) == 0 {
		return callTimes{}, errors.New("no timed calls")
	}
	sort.Float64s(ms)
	if tm.profile > 0 && len(*tm.profiled) == 0 { // a row's first timed calls only
		if err := tm.profileCalls(call); err != nil {
			return callTimes{}, fmt.Errorf("profile: %w", err)
		}
	}
	t := callTimes{Min: ms[0], Median: ms[len(ms)/2], Max: ms[len(ms)-1]}
	if tm.log != nil {
		fmt.Fprintf(tm.log, "  %d timed calls: min %.3f, median %.3f, max %.3f ms\n", len(ms), t.Min, t.Median, t.Max)
	}
	return t, nil
}

// startCPUProfile starts the Go CPU profile tm asks for, and returns the
// function that stops it and writes the file (the row's first timed
// calls only: later ones stop nothing).
func (tm timing) startCPUProfile() (func() error, error) {
	if tm.cpuProfile == nil || *tm.cpuProfile == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(*tm.cpuProfile)
	if err != nil {
		return nil, err
	}
	*tm.cpuProfile = ""
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// profileCalls runs call tm.profile times under a device profile and adds
// its ops, each divided by tm.profile (per call), to *tm.profiled.
func (tm timing) profileCalls(call func() error) error {
	rt, err := frontend.GPURuntime()
	if err != nil {
		return err
	}
	if err := rt.StartProfile(); err != nil {
		return err
	}
	for range tm.profile {
		if err = call(); err != nil {
			break
		}
	}
	entries, perr := rt.StopProfile()
	if err != nil || perr != nil {
		return errors.Join(err, perr)
	}
	for _, e := range entries {
		e.Ms /= float64(tm.profile)
		e.Calls /= tm.profile
		*tm.profiled = append(*tm.profiled, e)
	}
	return nil
}

// onDevice uploads t when opts runs on the GPU.
func onDevice(t *frontend.Tensor, opts frontend.Options) *frontend.Tensor {
	if opts.Backend == frontend.NVPTXBackend {
		return t.ToGPU()
	}
	return t
}

func paramsOf(m any, prefix string) map[string]*frontend.Tensor {
	out := map[string]*frontend.Tensor{}
	for _, r := range nn.Refs(m) {
		out[prefix+r.Name] = r.Tensor()
	}
	return out
}

// cnnConfig is the CNN of the size.
func cnnConfig(s Size) cnn.Config {
	if s == Small {
		return cnn.Tiny
	}
	return cnn.Bench
}

func runCNNTrain(s Size, opts frontend.Options, tm timing, log io.Writer) (map[string]*frontend.Tensor, map[string]*frontend.Tensor, *StrataMode, error) {
	cfg := cnnConfig(s)
	m := cnn.New(cfg)
	x, y := cnn.Data(cfg)
	in := paramsOf(m, "")
	in["input.x"], in["input.y"] = x, y
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, stepOptions(opts))
	newOpt := func() (optim.Optimizer, error) {
		return optim.NewSGD(step.Params(), optim.SGDConfig{LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4}, opts)
	}
	out, sm, err := timeTrain(m, step, newOpt, onDevice(x, opts), onDevice(y, opts), tm, log, trainOutputs{grads: []string{"conv1.weight", "fc.weight", "bn2.bias"}})
	if err != nil {
		return nil, nil, nil, err
	}
	return in, out, sm, nil
}

// stepOptions are the options of a training row's gradient step: aot_eager
// where the row asks for the interpreter or the default backend.
func stepOptions(opts frontend.Options) frontend.Options {
	if opts.Backend == "" || opts.Backend == frontend.InterpBackend {
		opts.Backend = frontend.AOTEagerBackend
	}
	return opts
}

// trainOutputs names what a training row compares with PyTorch besides
// the first step's loss: the gradients of the parameters grads (as
// "grad.NAME"), and the changes the first step made to the parameters
// and buffers moved (as "step.NAME": new value - old value; the
// optimizer's update, batch norm's running statistics' update). The
// changes, not the new values: a wrong learning rate or momentum hides
// in a new weight at bf16 tolerances, not in its update.
type trainOutputs struct {
	grads, moved []string
}

// timeTrain makes the optimizer (newOpt, over step's parameters), times
// iters training steps of m (a gradient step on x, y, then the
// optimizer's update) and returns the outputs keep names, read before the
// next step replaces them. The first step's time (FirstCallS) counts from
// before the optimizer is made, which starts compiling its update
// (optim's compile ahead).
func timeTrain(m any, step *nn.GradStep, newOpt func() (optim.Optimizer, error), x, y *frontend.Tensor, tm timing, log io.Writer, keep trainOutputs) (map[string]*frontend.Tensor, *StrataMode, error) {
	out := map[string]*frontend.Tensor{}
	first := true
	sm := &StrataMode{}
	// moved holds the first step's changes: the old values until then.
	moved := map[string][]float32{}
	hostCopies := func(f func(name string, old, v []float32, shape []int)) error {
		for _, r := range nn.Refs(m) {
			if slices.Contains(keep.moved, r.Name) {
				t := r.Tensor()
				v := t.Float32s()
				if err := t.Err(); err != nil {
					return fmt.Errorf("%s: %w", r.Name, err)
				}
				f(r.Name, moved[r.Name], v, t.Shape())
			}
		}
		return nil
	}
	if err := hostCopies(func(name string, _, v []float32, _ []int) { moved[name] = v }); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	opt, err := newOpt()
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(log, "  optimizer made (its update compiling ahead) in %.1f s\n", time.Since(start).Seconds())
	call := func() error {
		v, grads, err := step.Call(x, y)
		if err != nil {
			return err
		}
		if first {
			// Progress, so that a row cut short by a timeout shows where
			// its time went.
			fmt.Fprintf(log, "  first gradient step queued at %.1f s\n", time.Since(start).Seconds())
		}
		if first {
			out["loss"] = v[0]
			for i, p := range step.Params() {
				if slices.Contains(keep.grads, p.Name) {
					out["grad."+p.Name] = grads[i]
				}
			}
			// Read them now: the step below replaces the parameters.
			for _, t := range out {
				t.Float64s()
			}
			fmt.Fprintf(log, "  first gradients read (forward and backward ran) at %.1f s\n", time.Since(start).Seconds())
		}
		if err := opt.Step(grads); err != nil {
			return err
		}
		// The gradients are dropped once the update is queued, as
		// zero_grad(set_to_none=True) does: their memory goes back now
		// (a CUDA graph's pool then moves nothing out before its next
		// replay). The first step's were read above: they keep their
		// host copies.
		for _, g := range grads {
			if err := g.Free(); err != nil {
				return err
			}
		}
		if first {
			fmt.Fprintf(log, "  first optimizer step queued at %.1f s\n", time.Since(start).Seconds())
			if err := frontend.Synchronize(); err != nil {
				return err
			}
			sm.FirstCallS = time.Since(start).Seconds()
			fmt.Fprintf(log, "  first step (gradients, optimizer) done in %.1f s\n", sm.FirstCallS)
			err := hostCopies(func(name string, old, v []float32, shape []int) {
				for i := range v {
					v[i] -= old[i]
				}
				out["step."+name] = frontend.FromSlice(v, shape...)
			})
			if err != nil {
				return fmt.Errorf("after the first step: %w", err)
			}
			first = false
		}
		return nil
	}
	// The kernels' final JIT tier, timed apart from the steps (timeCalls
	// waits for it too).
	if err := call(); err != nil {
		return nil, nil, err
	}
	t0 := time.Now()
	if err := frontend.Settle(); err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(log, "  final JIT tier settled in %.1f s\n", time.Since(t0).Seconds())
	ct, err := tm.calls(call)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(log, "  %.2f ms a step\n", ct.Median)
	ct.set(sm)
	return out, sm, nil
}

func gpt2Config(s Size) gpt2.Config {
	if s == Small {
		return gpt2.Toy
	}
	return gpt2.GPT2Small
}

func tokens(g *nn.RNG, vocab, b, t int) *frontend.Tensor { return g.Int64s(vocab, b, t) }

// gpt2Models caches the models newGPT2 built: building and casting
// GPT-2 124M on the host takes seconds, and two rows share it.
var gpt2Models = map[[2]int]*gpt2.Model{}

// newGPT2 builds the model in dt (the same model for the same size and
// dtype: the rows do not change its parameters).
func newGPT2(s Size, dt frontend.DType) (*gpt2.Model, error) {
	key := [2]int{int(s), int(dt)}
	if m := gpt2Models[key]; m != nil {
		return m, nil
	}
	m := gpt2.New(gpt2Config(s))
	if dt != frontend.Float32 {
		if err := nn.Cast(m, dt); err != nil {
			return nil, err
		}
	}
	gpt2Models[key] = m
	return m, nil
}

func runGPT2Prefill(s Size, opts frontend.Options, tm timing, log io.Writer) (map[string]*frontend.Tensor, map[string]*frontend.Tensor, *StrataMode, error) {
	cfg := gpt2Config(s)
	b, t := 8, 1024
	if s == Small {
		b, t = 2, 8
	}
	m, err := newGPT2(s, frontend.BFloat16)
	if err != nil {
		return nil, nil, nil, err
	}
	idx := tokens(nn.NewRNG(5), cfg.Vocab, b, t)
	in := paramsOf(m, "")
	in["input.idx"] = idx
	// The model's tensors go to the GPU once, as torch's .cuda().
	for _, r := range nn.Refs(m) {
		*r.Ptr = onDevice(r.Tensor(), opts)
	}
	c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{m.Logits(in[0])} }, 1, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	last, err := frontend.Compile(func(l *frontend.Tensor) *frontend.Tensor {
		return l.Slice([]int{0, t - 1, 0}, []int{b, t, cfg.Vocab}, nil).Cast(frontend.Float32)
	}, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	idxd := onDevice(idx, opts)
	sm := &StrataMode{}
	t0 := time.Now()
	res, err := c.Call(idxd)
	if err == nil {
		err = frontend.Synchronize()
	}
	if err != nil {
		return nil, nil, nil, err
	}
	sm.FirstCallS = time.Since(t0).Seconds()
	fmt.Fprintf(log, "  gpt2_prefill: first call %.2f s (%v; the rest is the first run)\n", sm.FirstCallS, c.Frontend().CompileTimes())
	lr, err := last.Call(res[0])
	if err != nil {
		return nil, nil, nil, err
	}
	out := map[string]*frontend.Tensor{"logits_last": lr[0]}
	lr[0].Float64s()
	if err := res[0].Free(); err != nil {
		return nil, nil, nil, err
	}
	// Ms is the wall clock of a call and its wait, as the PyTorch side's
	// events see one. PyTorch frees a call's logits (824 MB) when their
	// tensor dies, and its allocator serves the next call's from them; a
	// Go program frees them with Free, or the collector does when it
	// runs. Both are timed: the row's figure frees them, as PyTorch does.
	var queued []float64
	call := func(free bool) func() error {
		return func() error {
			t0 := time.Now()
			r, err := c.Call(idxd)
			if err != nil {
				return err
			}
			queued = append(queued, float64(time.Since(t0).Microseconds())/1000)
			if free {
				return r[0].Free()
			}
			return nil
		}
	}
	ct, err := tm.calls(call(true))
	if err != nil {
		return nil, nil, nil, err
	}
	ct.set(sm)
	fmt.Fprintf(log, "  gpt2_prefill: %.2f ms a call and its wait (logits freed; the host queues a call in %.2f ms)\n", sm.Ms, median(queued))
	queued = queued[:0]
	kept, err := tm.calls(call(false))
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintf(log, "  gpt2_prefill: %.2f ms a call with its logits left to the collector (queued in %.2f ms)\n", kept.Median, median(queued))
	if opts.Backend == frontend.NVPTXBackend {
		if kt, err := c.Frontend().KernelTime(tm.iters, c.Args(idxd)...); err == nil {
			sm.KernelMs = float64(kt.Microseconds()) / 1000
			fmt.Fprintf(log, "  gpt2_prefill: kernels %.2f ms a call (CUDA events, cold L2)\n", sm.KernelMs)
		} else {
			fmt.Fprintf(log, "gpt2_prefill: KernelTime: %v\n", err)
		}
	}
	return in, out, sm, nil
}

// median returns the median of ms (0 for none).
func median(ms []float64) float64 {
	if len(ms) == 0 {
		return 0
	}
	s := slices.Clone(ms)
	sort.Float64s(s)
	return s[len(s)/2]
}

// gpt2Decode returns the run of a gpt2_decode row on batch sequences:
// greedy decoding of 128 tokens after a 128-token prompt (4 after 4 at
// the small size). The outputs are the prompt's logits, the first
// decoding step's (the KV cache the prefill wrote, read by the decoding
// step) and the first sequence's tokens; Ms is per decoding step.
func gpt2Decode(batch int) func(Size, frontend.Options, timing, io.Writer) (map[string]*frontend.Tensor, map[string]*frontend.Tensor, *StrataMode, error) {
	return func(s Size, opts frontend.Options, tm timing, log io.Writer) (map[string]*frontend.Tensor, map[string]*frontend.Tensor, *StrataMode, error) {
		return runGPT2Decode(s, batch, opts, tm, log)
	}
}

func runGPT2Decode(s Size, batch int, opts frontend.Options, tm timing, log io.Writer) (map[string]*frontend.Tensor, map[string]*frontend.Tensor, *StrataMode, error) {
	cfg := gpt2Config(s)
	prompt, n := 128, 128
	if s == Small {
		prompt, n = 4, 4
	}
	m, err := newGPT2(s, frontend.BFloat16)
	if err != nil {
		return nil, nil, nil, err
	}
	idx := tokens(nn.NewRNG(6), cfg.Vocab, batch, prompt)
	in := paramsOf(m, "")
	in["input.idx"] = idx
	in["input.new_tokens"] = frontend.FromSlice([]int64{int64(n)}, []int{}...)
	for _, r := range nn.Refs(m) {
		*r.Ptr = onDevice(r.Tensor(), opts)
	}
	dec := gpt2.NewDecoder(m, batch, frontend.BFloat16)
	for _, c := range dec.Caches {
		c.K, c.V = onDevice(c.K, opts), onDevice(c.V, opts)
	}
	// As the PyTorch side (gpt-fast's setup): the decode step replays a
	// CUDA graph (reduce-overhead) over the static cache, unless the run
	// asks for another mode (a profile of the step's kernels one by one).
	opts.Mode = frontend.ModeReduceOverhead
	if tm.decodeMode != "" {
		opts.Mode = tm.decodeMode
	}
	gen, err := gpt2.NewGenerator(dec, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	idxd := onDevice(idx, opts)
	sm := &StrataMode{}
	t0 := time.Now()
	toks, logits, err := gen.Generate(idxd, n)
	if err != nil {
		return nil, nil, nil, err
	}
	sm.FirstCallS = time.Since(t0).Seconds()
	ids := make([]int64, len(toks[0]))
	copy(ids, toks[0])
	out := map[string]*frontend.Tensor{
		"tokens":        frontend.FromSlice(ids, 1, len(ids)),
		"first_logits":  logits[0].Cast(frontend.Float32),
		"decode_logits": logits[1].Cast(frontend.Float32),
	}
	for _, o := range out {
		if o.Float64s(); o.Err() != nil {
			return nil, nil, nil, o.Err()
		}
	}
	ct, err := tm.with(max(tm.iters/4, 1)).calls(func() error { _, _, err := gen.Generate(idxd, n); return err })
	if err != nil {
		return nil, nil, nil, err
	}
	// Ms is per decoding step (the figure is tokens/s: batch/Ms).
	sm.WallMs = ct.Median
	sm.Ms, sm.MinMs, sm.MaxMs = ct.Median/float64(n), ct.Min/float64(n), ct.Max/float64(n)
	_, dc := gen.Steps()
	fmt.Fprintf(log, "gpt2_decode b%d: decoding step (%s) %+v\n", batch, opts.Mode, dc.Frontend().Stats())
	if opts.Backend == frontend.NVPTXBackend {
		// The decoding step's kernels alone (its CUDA graph replayed,
		// timed by events): the rest of a step's wall time is the host's
		// and the copies into and out of the graph. The timed replays do
		// not donate the caches, so they copy them before updating them
		// (exec's copyUpdated), which Generate's steps do not: the
		// profile's "cuda graph" op is the steps' own time.
		tok := frontend.FromSlice(make([]int64, batch), batch, 1)
		pos := frontend.FromSlice([]int64{int64(prompt)}, []int{}...)
		kt, err := dc.Frontend().KernelTime(20, dc.Args(tok, pos)...)
		if err != nil {
			return nil, nil, nil, err
		}
		fmt.Fprintf(log, "gpt2_decode b%d: decoding step kernels %.3f ms (graph replay between events, the caches copied in: not donated), wall %.3f ms a step\n", batch, kt.Seconds()*1e3, sm.Ms)
		// What one generation copies (uploads of the positions, device
		// copies into and out of the CUDA graphs' buffers), per step.
		rt, err := frontend.GPURuntime()
		if err != nil {
			return nil, nil, nil, err
		}
		before, mem := rt.Transfers(), rt.Allocator().Stats()
		if _, _, err := gen.Generate(idxd, n); err != nil {
			return nil, nil, nil, err
		}
		x, now := rt.Transfers().Sub(before), rt.Allocator().Stats()
		// A miss is a cuMemAlloc, which synchronises the device.
		fmt.Fprintf(log, "gpt2_decode b%d: per step %.1f uploads (%.0f B), %.1f downloads, %.1f device copies (%.0f B), %.1f allocator misses; device memory allocated %.2f GiB, cached %.2f GiB, peak %.2f GiB\n", batch,
			float64(x.HtoD)/float64(n), float64(x.HtoDBytes)/float64(n), float64(x.DtoH)/float64(n),
			float64(x.DtoD)/float64(n), float64(x.DtoDBytes)/float64(n), float64(now.Misses-mem.Misses)/float64(n),
			float64(now.Allocated)/(1<<30), float64(now.Cached)/(1<<30), float64(now.Peak)/(1<<30))
	}
	return in, out, sm, nil
}

// runGPT2Dynamic runs GPT-2's prefill compiled once for every sequence
// length (gpt2.DynamicPrefill) over the lengths of gpt2DynamicLengths:
// the tokens of each are the first T of one [B, Tmax] draw. FirstCallS is
// the first length's call, TotalS the first pass (compile and one call
// per length), Ms a later pass, Compiles the graphs compiled; the outputs
// are each length's logits at its last position.
func runGPT2Dynamic(s Size, opts frontend.Options, tm timing, log io.Writer) (map[string]*frontend.Tensor, map[string]*frontend.Tensor, *StrataMode, error) {
	cfg := gpt2Config(s)
	lengths := gpt2DynamicLengths(s)
	b, tmax := 8, slices.Max(lengths)
	if s == Small {
		b = 2
	}
	m, err := newGPT2(s, frontend.BFloat16)
	if err != nil {
		return nil, nil, nil, err
	}
	all := tokens(nn.NewRNG(7), cfg.Vocab, b, tmax)
	in := paramsOf(m, "")
	in["input.idx"] = all
	lens := make([]int64, len(lengths))
	for i, t := range lengths {
		lens[i] = int64(t)
	}
	in["input.lengths"] = frontend.FromSlice(lens, len(lens))
	for _, r := range nn.Refs(m) {
		*r.Ptr = onDevice(r.Tensor(), opts)
	}
	ids := all.Int64s()
	idxs := make([]*frontend.Tensor, len(lengths))
	for i, t := range lengths {
		p := make([]int64, 0, b*t)
		for r := range b {
			p = append(p, ids[r*tmax:r*tmax+t]...)
		}
		idxs[i] = onDevice(frontend.FromSlice(p, b, t), opts)
	}
	pf, err := gpt2.NewDynamicPrefill(m, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	// The last position's logits, by a gather of index T-1 (a slice would
	// need a static T): one graph for every length too.
	last, err := frontend.Compile(func(l, i *frontend.Tensor) *frontend.Tensor {
		return l.Gather(i, 1).Flatten(1, 2).Cast(frontend.Float32)
	}, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	sm := &StrataMode{}
	out := map[string]*frontend.Tensor{}
	logits := make([]*frontend.Tensor, len(lengths))
	t0 := time.Now()
	for i, idx := range idxs {
		if logits[i], err = pf.Call(idx); err == nil {
			err = frontend.Synchronize()
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("gpt2_dynamic: length %d: %w", lengths[i], err)
		}
		if i == 0 {
			sm.FirstCallS = time.Since(t0).Seconds()
		}
	}
	sm.TotalS = time.Since(t0).Seconds()
	for i, t := range lengths {
		at := onDevice(frontend.FromSlice([]int64{int64(t - 1)}, 1), opts)
		lr, err := last.Call(frontend.MarkDynamic(logits[i], 1), at)
		if err != nil {
			return nil, nil, nil, err
		}
		out[fmt.Sprintf("logits_last.%d", t)] = lr[0]
		lr[0].Float64s()
	}
	if st := last.Stats(); st.Compiles != 1 {
		fmt.Fprintf(log, "gpt2_dynamic: the last-position gather compiled %d times\n", st.Compiles)
	}
	pass := func() error {
		for _, idx := range idxs {
			if _, err := pf.Call(idx); err != nil {
				return err
			}
		}
		return nil
	}
	ct, err := tm.with(max(tm.iters/4, 1)).calls(pass)
	if err != nil {
		return nil, nil, nil, err
	}
	ct.set(sm)
	st := pf.Compiled().Frontend().Stats()
	sm.Compiles = st.Compiles
	fmt.Fprintf(log, "gpt2_dynamic: %d lengths, stats %+v\n", len(lengths), st)
	return in, out, sm, nil
}

func runResNetInfer(s Size, opts frontend.Options, tm timing, log io.Writer) (map[string]*frontend.Tensor, map[string]*frontend.Tensor, *StrataMode, error) {
	cfg, b, hw := resnet.ResNet50, 64, 224
	if s == Small {
		cfg, b, hw = resnet.Tiny, 2, 32
	}
	m := resnet.New(cfg)
	nn.SetTraining(m, false)
	// Non-trivial running statistics, so that eval-mode batch norm matters.
	g := nn.NewRNG(8)
	for _, r := range nn.Buffers(m) {
		n := r.Tensor().Shape()[0]
		if filepath.Ext(r.Name) == ".running_mean" {
			*r.Ptr = g.Uniform(-0.1, 0.1, n)
		} else {
			*r.Ptr = g.Uniform(0.5, 1.5, n)
		}
	}
	if err := nn.Cast(m, frontend.BFloat16); err != nil {
		return nil, nil, nil, err
	}
	x := g.Normal(1, b, 3, hw, hw).Cast(frontend.BFloat16)
	in := paramsOf(m, "")
	in["input.x"] = x
	for _, r := range nn.Refs(m) {
		*r.Ptr = onDevice(r.Tensor(), opts)
	}
	c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor {
		return []*frontend.Tensor{m.Forward(in[0]).Cast(frontend.Float32)}
	}, 1, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	xd := onDevice(x, opts)
	sm := &StrataMode{}
	t0 := time.Now()
	res, err := c.Call(xd)
	if err == nil {
		err = frontend.Synchronize()
	}
	if err != nil {
		return nil, nil, nil, err
	}
	sm.FirstCallS = time.Since(t0).Seconds()
	fmt.Fprintf(log, "  resnet50_infer: first call %.2f s (%v; the rest is the first run)\n", sm.FirstCallS, c.Frontend().CompileTimes())
	out := map[string]*frontend.Tensor{"logits": res[0]}
	res[0].Float64s()
	ct, err := tm.calls(func() error { _, err := c.Call(xd); return err })
	if err != nil {
		return nil, nil, nil, err
	}
	ct.set(sm)
	return in, out, sm, nil
}

// resnetTrainOutputs are what resnet50_train compares with PyTorch: the
// gradients of the stem, the first block's last batch norm, the last
// stage's first and last convolutions and the classifier (at several
// depths: at initialization the gradients far from the loss are
// ill-conditioned, float32's own 2% from float64 at the stem), and the
// first step's changes to the stem's and the classifier's parameters and
// to the stem's and the last block's running statistics.
func resnetTrainOutputs(cfg resnet.Config) trainOutputs {
	s, b := len(cfg.Blocks)-1, cfg.Blocks[len(cfg.Blocks)-1]-1
	last := fmt.Sprintf("stages.%d.%d.c3.bn.", s, b)
	return trainOutputs{
		grads: []string{"stem.conv.weight", "stages.0.0.c3.bn.weight", fmt.Sprintf("stages.%d.0.c1.conv.weight", s),
			fmt.Sprintf("stages.%d.%d.c3.conv.weight", s, b), "fc.weight"},
		moved: []string{"stem.conv.weight", "fc.bias", "stem.bn.running_mean", "stem.bn.running_var", last + "running_mean", last + "running_var"},
	}
}

func runResNetTrain(s Size, opts frontend.Options, tm timing, log io.Writer) (map[string]*frontend.Tensor, map[string]*frontend.Tensor, *StrataMode, error) {
	cfg, b, hw := resnet.ResNet50, 64, 224
	if s == Small {
		cfg, b, hw = resnet.Tiny, 4, 32
	}
	m := resnet.New(cfg)
	g := nn.NewRNG(10)
	x, y := g.Normal(1, b, 3, hw, hw), g.Int64s(cfg.Classes, b)
	in := paramsOf(m, "")
	in["input.x"], in["input.y"] = x, y
	// The float32 master weights and running statistics live on the GPU;
	// the step computes in bf16 (torch.autocast on the PyTorch side).
	for _, r := range nn.Refs(m) {
		*r.Ptr = onDevice(r.Tensor(), opts)
	}
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, stepOptions(opts))
	newOpt := func() (optim.Optimizer, error) {
		return optim.NewSGD(step.Params(), optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-4}, opts)
	}
	out, sm, err := timeTrain(m, step, newOpt, onDevice(x, opts), onDevice(y, opts), tm, log, resnetTrainOutputs(cfg))
	if err != nil {
		return nil, nil, nil, err
	}
	return in, out, sm, nil
}

func runGPT2Train(s Size, opts frontend.Options, tm timing, log io.Writer) (map[string]*frontend.Tensor, map[string]*frontend.Tensor, *StrataMode, error) {
	cfg := gpt2Config(s)
	b, t := 8, 1024
	if s == Small {
		b, t = 2, 8
	}
	m := gpt2.New(cfg)
	g := nn.NewRNG(9)
	x, y := tokens(g, cfg.Vocab, b, t), tokens(g, cfg.Vocab, b, t)
	in := paramsOf(m, "")
	in["input.x"], in["input.y"] = x, y
	// The float32 master weights live on the GPU, as torch's .cuda();
	// the step computes in bf16 (torch.autocast on the PyTorch side).
	for _, r := range nn.Refs(m) {
		*r.Ptr = onDevice(r.Tensor(), opts)
	}
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, stepOptions(opts))
	newOpt := func() (optim.Optimizer, error) {
		return optim.NewAdamW(step.Params(), optim.AdamWConfig{LR: 3e-4, WeightDecay: 0.1}, opts)
	}
	// The gradients and the first AdamW step's changes of three
	// parameters (models_torch.py's GPT2_KEEP; PyTorch's steps, and the
	// float32 ones, are computed from Strata's gradients: they check the
	// optimizer's arithmetic, the gradients are checked apart). wpe's
	// gradient is the embedding gather's alone, which Strata takes as a
	// bf16 one-hot product of the rounded upstream gradient where PyTorch
	// sums it in float32.
	keep := []string{"wpe.weight", "h.0.attn.c_attn.weight", "ln_f.weight"}
	out, sm, err := timeTrain(m, step, newOpt, onDevice(x, opts), onDevice(y, opts), tm, log, trainOutputs{grads: keep, moved: keep})
	if err != nil {
		return nil, nil, nil, err
	}
	return in, out, sm, nil
}

// ModelsStrataFile is the JSON RunModels writes.
const ModelsStrataFile = "models-strata.json"

// ModelsTorchFile is the JSON models_torch.py writes: like torch.json,
// workload name → modes.
const ModelsTorchFile = "models-torch.json"

// ModelsManifest is what RunModels leaves for the PyTorch side and the
// report.
type ModelsManifest struct {
	Date    string `json:"date"`
	Size    string `json:"size"`
	Backend string `json:"backend"`
	// Mode is the frontend mode the rows were compiled in ("" in older
	// manifests: default).
	Mode  string                 `json:"mode,omitempty"`
	Rows  map[string]*StrataMode `json:"rows"`
	Order []string               `json:"order"`
}

// ModelsTiming says how RunModels times each row.
type ModelsTiming struct {
	// Iters is the number of timed calls.
	Iters int
	// Profile, when positive (nvptx only), is the number of calls run
	// after the timed ones under a device profile, whose ops (per call,
	// longest first) go to the log (the top 30) and to DIR/NAME.profile.txt.
	Profile int
	// CPUProfile writes a Go CPU profile of the timed calls (the host's
	// side of each call: the frontend, the executor's steps, the driver
	// and library calls) to DIR/NAME.cpu.pprof.
	CPUProfile bool
	// Mode is the compile mode of the rows ("" is the default mode; an
	// unknown one is refused before any row runs); gpt2_decode and
	// gpt2_decode_b8 run DecodeMode whatever it is. The manifest and the
	// report's rows are labelled with it.
	Mode frontend.Mode
	// DecodeMode is the compile mode of gpt2_decode and gpt2_decode_b8
	// ("" is reduce-overhead, as gpt-fast's setup on PyTorch's side). A
	// device profile of a replayed CUDA graph times the whole graph:
	// ModeDefault launches the step's kernels one by one, so that the
	// profile times each of them.
	DecodeMode frontend.Mode
}

// RunModels runs the rows named in only (all when empty) at size s with
// the frontend backend, writes their weights, inputs and outputs as
// safetensors files and their timings (as tm says) to
// dir/models-strata.json. A row that fails records its error and the
// others still run.
func RunModels(dir string, only []string, s Size, backend string, tm ModelsTiming, log io.Writer) (*ModelsManifest, error) {
	if tm.Profile > 0 && backend != frontend.NVPTXBackend {
		return nil, fmt.Errorf("a device profile needs the %s backend, not %s", frontend.NVPTXBackend, backend)
	}
	mode, err := exec.ParseMode(string(tm.Mode))
	if err != nil {
		return nil, err
	}
	decodeMode := exec.ModeReduceOverhead
	if tm.DecodeMode != "" {
		if decodeMode, err = exec.ParseMode(string(tm.DecodeMode)); err != nil {
			return nil, fmt.Errorf("the decoding rows' mode: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	man := &ModelsManifest{Date: time.Now().UTC().Format(time.RFC3339), Size: sizeName(s), Backend: backend, Mode: string(mode), Rows: map[string]*StrataMode{}}
	opts := frontend.Options{Backend: backend, Mode: frontend.Mode(mode)}
	for _, row := range ModelRows {
		if len(only) > 0 && !slices.Contains(only, row.Name) {
			continue
		}
		man.Order = append(man.Order, row.Name)
		t0 := time.Now()
		var profiled []exec.ProfileEntry
		rt := timing{iters: tm.Iters, profile: tm.Profile, profiled: &profiled, log: log, decodeMode: frontend.Mode(decodeMode)}
		if backend == frontend.NVPTXBackend {
			rt.gpu, _ = frontend.GPURuntime() // nil without a GPU: the row reports the error
		}
		if tm.CPUProfile {
			path := filepath.Join(dir, row.Name+".cpu.pprof")
			rt.cpuProfile = &path
		}
		in, out, sm, err := row.run(s, opts, rt, log)
		if err == nil && len(profiled) > 0 {
			fmt.Fprintf(log, "%s: device profile of one call (%d calls averaged):\n%s", row.Name, tm.Profile, exec.FormatProfile(profiled, 30))
			err = os.WriteFile(filepath.Join(dir, row.Name+".profile.txt"), []byte(exec.FormatProfile(profiled, 0)), 0o644)
		}
		if err == nil {
			err = writeTensors(filepath.Join(dir, row.Name+".in.safetensors"), in)
		}
		if err == nil {
			err = writeTensors(filepath.Join(dir, row.Name+".strata.safetensors"), out)
		}
		if err != nil {
			sm = &StrataMode{Error: err.Error()}
		}
		man.Rows[row.Name] = sm
		fmt.Fprintf(log, "%s: %+v (%.1f s)\n", row.Name, *sm, time.Since(t0).Seconds())
		// Write after every row: a later row that runs out of time
		// leaves the earlier ones.
		if err := writeJSON(filepath.Join(dir, ModelsStrataFile), man); err != nil {
			return nil, err
		}
	}
	return man, nil
}

// writeTensors writes named tensors: bf16 and f16 as they are, the other
// floats as F32, integers as I64.
func writeTensors(path string, ts map[string]*frontend.Tensor) error {
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*safetensors.Tensor
	for _, n := range names {
		t := ts[n]
		dt := safetensors.F32
		switch t.DType() {
		case frontend.BFloat16:
			dt = safetensors.BF16
		case frontend.Float16:
			dt = safetensors.F16
		case frontend.Int64, frontend.Int32, frontend.Bool:
			dt = safetensors.I64
		}
		st, err := safetensors.FromFrontend(n, t, dt)
		if err != nil {
			return err
		}
		out = append(out, st)
	}
	return safetensors.Write(path, out, nil)
}

// ReportModels compares Strata's outputs with PyTorch's (eager) and
// returns the rows in the suite's results format.
func ReportModels(dir string) (*Results, error) {
	var man ModelsManifest
	if err := readJSON(filepath.Join(dir, ModelsStrataFile), &man); err != nil {
		return nil, err
	}
	var torch TorchSide
	if err := readJSON(filepath.Join(dir, ModelsTorchFile), &torch); err != nil {
		return nil, err
	}
	mode := man.Mode
	if mode == "" {
		mode = string(exec.ModeDefault)
	}
	res := &Results{Date: man.Date, GPU: torch.GPU, CUDA: torch.CUDA, Torch: torch.Torch, Triton: torch.Triton,
		Engine: "frontend/" + man.Backend, Size: man.Size, Ceiling: torch.Ceilings, Modes: []string{mode}}
	for _, name := range man.Order {
		row := lookupModel(name)
		sm := man.Rows[name]
		wr := WorkloadResult{Name: name, Strata: map[string]*StrataMode{mode: sm}, Ratios: map[string]float64{}}
		if row != nil {
			wr.Summary, wr.Shape, wr.Flops = row.Summary, row.Shape, row.Flops
		}
		tw := torch.Workloads[name]
		wr.Torch = tw.Modes
		if tw.Error != "" && wr.Torch == nil {
			wr.Torch = map[string]*TorchMode{"eager": {Error: tw.Error}}
		}
		if sm != nil && sm.Error == "" && row != nil {
			if ts, err := checkTensors(dir, name, row.Tol); err == nil {
				wr.Tensors = ts
				vs := make([]*Check, len(ts))
				for i := range ts {
					vs[i] = &ts[i].VsTorch
				}
				// The row passes when every output does (modelcheck.go).
				wr.Correctness = worstCheck(vs)
				wr.Correctness.OK = true
				for _, tc := range ts {
					wr.Correctness.OK = wr.Correctness.OK && tc.Pass != ""
				}
				wr.Reference = referenceCheck(ts)
			} else {
				wr.Correctness = &Check{Tol: row.Tol}
				wr.Unsupported = "comparison: " + err.Error()
			}
			if d := wr.Torch["default"]; d != nil && d.Ms > 0 {
				wr.Ratios["default"] = sm.Ms / d.Ms
			}
			if e := wr.Torch["eager"]; e != nil && e.Ms > 0 {
				wr.Ratios["eager"] = sm.Ms / e.Ms
			}
			if d := wr.Torch["default"]; d != nil && d.FirstCallS > 0 && sm.FirstCallS > 0 {
				wr.Ratios["first_call"] = sm.FirstCallS / d.FirstCallS
			}
			if d := wr.Torch["default"]; d != nil && d.TotalS > 0 && sm.TotalS > 0 {
				wr.Ratios["total"] = sm.TotalS / d.TotalS
			}
			if row.Flops > 0 && sm.Ms > 0 {
				wr.Rate, wr.RateUnit = float64(row.Flops)/(sm.Ms*1e-3)/1e12, "TFLOP/s"
			}
			if row.Tokens > 0 && sm.Ms > 0 {
				wr.Rate, wr.RateUnit = float64(row.Tokens)/(sm.Ms*1e-3), "tokens/s"
				if d := wr.Torch["default"]; d != nil && d.Ms > 0 {
					wr.TorchRate = float64(row.Tokens) / (d.Ms * 1e-3)
				}
			}
		}
		res.Workloads = append(res.Workloads, wr)
	}
	return res, nil
}

func lookupModel(name string) *ModelRow {
	for _, r := range ModelRows {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// WriteModelResults writes r to path.
func WriteModelResults(path string, r *Results) error { return writeJSON(path, r) }
