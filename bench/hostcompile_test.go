package bench

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-ir/strata/examples/cnn"
	"github.com/strata-ir/strata/examples/gpt2"
	"github.com/strata-ir/strata/examples/resnet"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// hostRows names the model rows BenchmarkModelsHostCompile runs
// (-hostrows a,b; all when empty).
var hostRows = flag.String("hostrows", "", "model rows of BenchmarkModelsHostCompile (default: all)")

// hostGraph is one graph a row's first call compiled with PTXOnly.
type hostGraph struct {
	fn              string
	times           frontend.CompileTimes
	kernels, ptxLen int
	distinct        int // kernels that are not the same code as another
	ptx             map[string]string
	// module is the lowered module (TestModelsHostCompile only).
	module *ir.Operation
}

// hostCompiler is a PTXOnly backend for the H200 (capability 9.0, with
// the libraries) that records what it compiled.
type hostCompiler struct {
	name   string
	keep   bool // the lowered modules
	mu     sync.Mutex
	graphs []hostGraph
}

func newHostCompiler(t testing.TB, keep bool) *hostCompiler {
	h := &hostCompiler{name: "ptxonly-" + t.Name(), keep: keep}
	frontend.RegisterBackend(h.name, frontend.PTXOnly(frontend.PTXOnlyOptions{Major: 9, Minor: 0, Libraries: true,
		Keep: func(g *frontend.Graph, prog *exec.Program, times frontend.CompileTimes) {
			hg := hostGraph{fn: g.Func, times: times, ptx: prog.PTX()}
			if h.keep {
				hg.module = g.Module
			}
			for _, text := range prog.PTX() {
				hg.kernels += strings.Count(text, ".entry ")
				hg.ptxLen += len(text)
				deduped, _, _ := cuda.DedupPTX(text)
				hg.distinct += strings.Count(deduped, ".entry ")
			}
			h.mu.Lock()
			h.graphs = append(h.graphs, hg)
			h.mu.Unlock()
		}}))
	return h
}

// stopped checks that err is PTXOnly's stop.
func stopped(what string, err error) error {
	if !errors.Is(err, frontend.ErrPTXOnly) {
		return fmt.Errorf("%s: %v, want the PTXOnly backend's stop", what, err)
	}
	return nil
}

// hostFirstCall is a row's first call as the device makes it, up to the
// code generation: the model built (not timed), then fn, which compiles
// every graph of the first call.
type hostFirstCall struct {
	name string
	// build makes the model and returns the first call.
	build func(s Size, opts frontend.Options) (func() error, error)
}

// trainFirstCall is a training row's first step: the gradient step's
// forward and backward graphs, then the optimizer's (which it compiled
// ahead when it was made), on gradients of the parameters' shapes and
// dtypes.
func trainFirstCall(step *nn.GradStep, opt optim.Optimizer, x, y *frontend.Tensor) func() error {
	return func() error {
		if _, _, err := step.Call(x, y); stopped("gradient step", err) != nil {
			return stopped("gradient step", err)
		}
		grads := make([]*frontend.Tensor, len(step.Params()))
		for i, p := range step.Params() {
			grads[i] = frontend.Zeros(p.Tensor().DType(), p.Tensor().Shape()...)
		}
		return stopped("optimizer step", opt.Step(grads))
	}
}

var hostFirstCalls = []hostFirstCall{
	{"cnn_small_train", func(s Size, opts frontend.Options) (func() error, error) {
		cfg := cnnConfig(s)
		m := cnn.New(cfg)
		x, y := ready(cnn.Data(cfg))
		step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, opts)
		opt, err := optim.NewSGD(step.Params(), optim.SGDConfig{LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4}, opts)
		if err != nil {
			return nil, err
		}
		return trainFirstCall(step, opt, x, y), nil
	}},
	{"gpt2_prefill", func(s Size, opts frontend.Options) (func() error, error) {
		b, t := 8, 1024
		if s == Small {
			b, t = 2, 8
		}
		m, err := newGPT2(s, frontend.BFloat16)
		if err != nil {
			return nil, err
		}
		c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{m.Logits(in[0])} }, 1, opts)
		if err != nil {
			return nil, err
		}
		idx := tokens(nn.NewRNG(5), gpt2Config(s).Vocab, b, t)
		return func() error { _, err := c.Call(idx); return stopped("prefill", err) }, nil
	}},
	{"gpt2_decode", func(s Size, opts frontend.Options) (func() error, error) {
		prompt := 128
		if s == Small {
			prompt = 4
		}
		m, err := newGPT2(s, frontend.BFloat16)
		if err != nil {
			return nil, err
		}
		opts.Mode = frontend.ModeReduceOverhead
		gen, err := gpt2.NewGenerator(gpt2.NewDecoder(m, 1, frontend.BFloat16), opts)
		if err != nil {
			return nil, err
		}
		pf, dc := gen.Steps()
		idx := tokens(nn.NewRNG(6), gpt2Config(s).Vocab, 1, prompt)
		return func() error {
			if _, err := pf.Call(idx); stopped("prefill", err) != nil {
				return stopped("prefill", err)
			}
			_, err := dc.Call(frontend.FromSlice([]int64{0}, 1, 1), frontend.FromSlice([]int64{int64(prompt)}, []int{}...))
			return stopped("decode step", err)
		}, nil
	}},
	{"resnet50_infer", func(s Size, opts frontend.Options) (func() error, error) {
		cfg, b, hw := resnet.ResNet50, 64, 224
		if s == Small {
			cfg, b, hw = resnet.Tiny, 2, 32
		}
		m := resnet.New(cfg)
		nn.SetTraining(m, false)
		if err := nn.Cast(m, frontend.BFloat16); err != nil {
			return nil, err
		}
		x, _ := ready(nn.NewRNG(8).Normal(1, b, 3, hw, hw).Cast(frontend.BFloat16), nil)
		c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor {
			return []*frontend.Tensor{m.Forward(in[0]).Cast(frontend.Float32)}
		}, 1, opts)
		if err != nil {
			return nil, err
		}
		return func() error { _, err := c.Call(x); return stopped("forward", err) }, nil
	}},
	{"resnet50_train", func(s Size, opts frontend.Options) (func() error, error) {
		cfg, b, hw := resnet.ResNet50, 64, 224
		if s == Small {
			cfg, b, hw = resnet.Tiny, 4, 32
		}
		m := resnet.New(cfg)
		g := nn.NewRNG(10)
		x, y := ready(g.Normal(1, b, 3, hw, hw), g.Int64s(cfg.Classes, b))
		step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, opts)
		opt, err := optim.NewSGD(step.Params(), optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-4}, opts)
		if err != nil {
			return nil, err
		}
		return trainFirstCall(step, opt, x, y), nil
	}},
	{"gpt2_train", func(s Size, opts frontend.Options) (func() error, error) {
		cfg := gpt2Config(s)
		b, t := 8, 1024
		if s == Small {
			b, t = 2, 8
		}
		m := gpt2.New(cfg)
		g := nn.NewRNG(9)
		x, y := ready(tokens(g, cfg.Vocab, b, t), tokens(g, cfg.Vocab, b, t))
		step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, opts)
		opt, err := optim.NewAdamW(step.Params(), optim.AdamWConfig{LR: 3e-4, WeightDecay: 0.1}, opts)
		if err != nil {
			return nil, err
		}
		return trainFirstCall(step, opt, x, y), nil
	}},
}

// ready computes x and y (nil: none) now, as the rows do when they
// upload them, rather than in the first call.
func ready(x, y *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor) {
	for _, t := range []*frontend.Tensor{x, y} {
		if t != nil {
			t.Float64s()
		}
	}
	return x, y
}

// hostCompile builds row r at size s and makes its first call with a
// PTXOnly backend: the wall time of the call, its CPU time, the part of
// it on the calling goroutine's thread, and the graphs compiled.
func hostCompile(t testing.TB, r hostFirstCall, s Size) (wall, cpu, serial time.Duration, graphs []hostGraph) {
	h := newHostCompiler(t, s == Small)
	call, err := r.build(s, frontend.Options{Backend: h.name})
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	runtime.GC()
	// The call's own goroutine keeps its thread: that thread's CPU time
	// is the call's serial work, the rest of the process's is the work
	// it ran on other goroutines (code generation's).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, cpu0, serial0 := time.Now(), cpuTime(syscall.RUSAGE_SELF), cpuTime(rusageThread)
	if err := call(); err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	return time.Since(start), cpuTime(syscall.RUSAGE_SELF) - cpu0, cpuTime(rusageThread) - serial0, h.graphs
}

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// cpuTime is the CPU time (user and system) of the process
// (syscall.RUSAGE_SELF) or of the calling thread (rusageThread): on a
// shared machine, the work done whatever else ran.
func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestModelsHostCompile makes each model row's first call at the small
// size with the PTXOnly backend: every graph of the call (the training
// rows' forward, backward and optimizer graphs; the decoding row's
// prefill and step) reaches PTX with kernels in it, and that PTX is the
// text of generating the kernels one at a time (the native backend
// generates them in parallel).
func TestModelsHostCompile(t *testing.T) {
	want := map[string]int{"cnn_small_train": 3, "gpt2_prefill": 1, "gpt2_decode": 2, "resnet50_infer": 1, "resnet50_train": 3, "gpt2_train": 3}
	for _, r := range hostFirstCalls {
		_, _, _, graphs := hostCompile(t, r, Small)
		if len(graphs) != want[r.name] {
			t.Errorf("%s: %d graphs compiled, want %d", r.name, len(graphs), want[r.name])
		}
		for _, g := range graphs {
			if g.kernels == 0 || g.times.Codegen <= 0 {
				t.Errorf("%s %s: %d kernels, codegen %v", r.name, g.fn, g.kernels, g.times.Codegen)
			}
			for _, gm := range llvm.GPUModules(g.module) {
				m, err := llvm.Translate(gm)
				if err != nil {
					t.Fatal(err)
				}
				opts, err := exec.ModuleTarget(gm, nvptx.Options{Jobs: 1})
				if err != nil {
					t.Fatal(err)
				}
				every, err := nvptx.Native{}.Compile(m, opts)
				if err != nil {
					t.Fatal(err)
				}
				if name := ir.SymbolName(gm); g.ptx[name] != every {
					t.Errorf("%s %s: gpu.module @%s: the PTX differs from that of one job", r.name, g.fn, name)
				}
			}
		}
	}
}

// TestModelsHostCompileParallel checks that the training rows' graphs
// compile to the same PTX on one core as on several: convert-loop-to-gpu
// builds a function's kernels at once (and code generation runs its jobs
// at once), and neither may make the output depend on the scheduling.
func TestModelsHostCompileParallel(t *testing.T) {
	for _, r := range hostFirstCalls {
		if !strings.HasSuffix(r.name, "_train") {
			continue
		}
		prev := runtime.GOMAXPROCS(1)
		_, _, _, one := hostCompile(t, r, Small)
		runtime.GOMAXPROCS(max(prev, 4))
		_, _, _, many := hostCompile(t, r, Small)
		runtime.GOMAXPROCS(prev)
		// The graphs of a step compile at once: in the order they end.
		byFn := map[string]hostGraph{}
		for _, g := range many {
			byFn[g.fn] = g
		}
		if len(one) != len(many) || len(byFn) != len(many) {
			t.Fatalf("%s: %d graphs on one core, %d on several (%d functions)", r.name, len(one), len(many), len(byFn))
		}
		for _, g := range one {
			if len(g.ptx) == 0 {
				t.Errorf("%s %s: no PTX", r.name, g.fn)
			}
			other := byFn[g.fn]
			for name, text := range g.ptx {
				if other.ptx[name] != text {
					t.Errorf("%s %s: gpu.module @%s: the PTX on several cores differs from that on one", r.name, g.fn, name)
				}
			}
			if len(other.ptx) != len(g.ptx) {
				t.Errorf("%s %s: %d gpu.modules on several cores, %d on one", r.name, g.fn, len(other.ptx), len(g.ptx))
			}
		}
	}
}

// BenchmarkModelsHostCompile makes each model row's first call at the
// bench's size with the PTXOnly backend for the H200 (capability 9.0, the
// libraries taken to load) and reports its host phases in ms: passes,
// codegen, the rest of the call (trace, autodiff, guards), the kernels
// and the PTX generated; cpu-ms is the process's CPU time during the
// call (the work, however loaded the machine), serial-cpu-ms the part on
// the calling goroutine (trace, passes, translation to LLVM IR: the
// rest, PTX generation, runs on every core). Run it with -benchtime=1x (each row takes
// seconds) and -hostrows to pick rows; -v logs each graph.
func BenchmarkModelsHostCompile(b *testing.B) {
	var only []string
	if *hostRows != "" {
		only = strings.Split(*hostRows, ",")
	}
	for _, r := range hostFirstCalls {
		if len(only) > 0 && !slices.Contains(only, r.name) {
			continue
		}
		b.Run(r.name, func(b *testing.B) {
			var wall, cpu, serial, passes, codegen time.Duration
			var kernels, ptxLen int
			for b.Loop() {
				w, c, sc, graphs := hostCompile(b, r, Full)
				wall, cpu, serial = wall+w, cpu+c, serial+sc
				for _, g := range graphs {
					passes += g.times.Passes
					codegen += g.times.Codegen
					kernels += g.kernels
					ptxLen += g.ptxLen
					b.Logf("%s %s: passes %v, codegen %v, %d kernels (%d distinct) in %d modules, %d KB PTX", r.name, g.fn, g.times.Passes, g.times.Codegen, g.kernels, g.distinct, len(g.ptx), g.ptxLen>>10)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(wall.Milliseconds())/n, "wall-ms")
			b.ReportMetric(float64(cpu.Milliseconds())/n, "cpu-ms")
			b.ReportMetric(float64(serial.Milliseconds())/n, "serial-cpu-ms")
			b.ReportMetric(float64(passes.Milliseconds())/n, "passes-ms")
			b.ReportMetric(float64(codegen.Milliseconds())/n, "codegen-ms")
			b.ReportMetric(float64((wall-passes-codegen).Milliseconds())/n, "other-ms")
			b.ReportMetric(float64(kernels)/n, "kernels")
			b.ReportMetric(float64(ptxLen>>10)/n, "ptx-KB")
		})
	}
}
