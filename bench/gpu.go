package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	_ "github.com/strata-ir/strata/passes/decompose" // graph-decompose
	_ "github.com/strata-ir/strata/passes/fusion"    // graph-fuse
	_ "github.com/strata-ir/strata/passes/lower"     // lower-to-loop
	"github.com/strata-ir/strata/passes/togpu"       // lower-to-gpu
	"github.com/strata-ir/strata/runtime/autotune"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/npy"
)

func init() {
	engines["nvptx"] = func() (Engine, error) { return OpenGPU(0) }
}

// LowerPipeline is the lowering the GPU engine runs before PTX generation
// when no library is used: lower-to-gpu, with bf16/f16 attention as one
// flash kernel (graph-attention-to-flash, which must run before
// decomposition). The modes that do not search run it with the matmul
// policy of autotune.ModeConfig (see Compile).
const LowerPipeline = "builtin.module(graph-attention-to-flash,lower-to-gpu)"

// loopPipeline is the part of LowerPipeline that autotuning runs once; each
// candidate configuration then lowers a clone of its output to the gpu level.
const loopPipeline = "builtin.module(graph-attention-to-flash,lower-to-loop)"

// GPU is the engine that lowers with lower-to-gpu, generates PTX with
// runtime/exec (targets/llvm and the native nvptx backend) and runs on the
// device, in each of exec's modes: default and reduce-overhead run matmuls
// where autotune.ModeConfig puts them (cuBLASLt when it loads),
// reduce-overhead replays CUDA graphs, and the max-autotune modes search
// launch parameters and Strata's kernels against cuBLASLt on the first call
// (which its first-call time then includes, as torch.compile's does).
type GPU struct {
	rt *exec.Runtime
	// Options select the PTX backend and target.
	Options exec.Options
}

// OpenGPU opens GPU ordinal. Without a driver or device the error wraps
// exec.ErrNoGPU.
func OpenGPU(ordinal int) (*GPU, error) {
	rt, err := exec.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return &GPU{rt: rt}, nil
}

// flashPass is graph-attention-to-flash for the device as g's target
// lets kernels use it.
func (g *GPU) flashPass() string { return autotune.FlashPass(g.capability()) }

// capability is the device's compute capability as far as g's target
// lets kernels use it: 9.0 only when the target is sm_90's (or unset),
// 0.0 without a device.
func (g *GPU) capability() (major, minor int) {
	dev := g.rt.Device()
	if dev == nil {
		return 0, 0
	}
	major, minor = dev.ComputeCapability()
	if major == 9 && minor == 0 && g.Options.Target != "" && !strings.HasPrefix(g.Options.Target, "sm_90") {
		return 0, 0
	}
	return major, minor
}

// Close releases the device.
func (g *GPU) Close() error { return g.rt.Close() }

// Name implements Engine.
func (*GPU) Name() string { return "nvptx" }

// Modes implements Engine.
func (*GPU) Modes() []string {
	names := make([]string, len(exec.Modes))
	for i, m := range exec.Modes {
		names[i] = string(m)
	}
	return names
}

// Compile implements Engine: it records the entry's tensor signature, lowers
// the module and compiles its kernels. The phases it reports are "lower",
// "llvm" and "ptx"; loading the PTX happens on the first call (its "load"
// phase).
func (g *GPU) Compile(ctx *ir.Context, module *ir.Operation, entry, mode string) (Program, error) {
	m, err := exec.ParseMode(mode)
	if err != nil {
		return nil, fmt.Errorf("nvptx: %w", err)
	}
	ft, err := entrySignature(module, entry)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	// The modes that search lower to the loop level here and compile
	// each candidate (Strata's kernels and cuBLASLt) on the first call.
	flashPass := g.flashPass()
	pipeline := strings.Replace(loopPipeline, "graph-attention-to-flash", flashPass, 1)
	if !m.Autotunes() {
		// The flash rewrite first: an attention it takes needs no
		// matmul library, whose load would cost the first call 50–250 ms.
		flash, err := passes.Parse("builtin.module(" + flashPass + ")")
		if err != nil {
			return nil, err
		}
		if err := flash.Run(ctx, module); err != nil {
			return nil, fmt.Errorf("graph-attention-to-flash: %w", err)
		}
		// Strata's own matmul kernels take the device's tiling (wgmma on
		// sm_90).
		major, minor := g.capability()
		cfg := autotune.ForDevice(autotune.ModeConfig(m, module), major, minor)
		pipeline = "builtin.module(" + autotune.LowerPipelineFor(cfg) + ")"
		// The handles and workspaces are made while the rest compiles.
		g.rt.WarmLibraries(exec.LibrariesOf(cfg.CuBLASLt, cfg.CuDNN)...)
	}
	pm, err := passes.Parse(pipeline)
	if err != nil {
		return nil, err
	}
	// The verifier runs once, on the lowered module, as the frontend's
	// nvptx backend does: not after each pass of the pipeline.
	pm.Instr.VerifyEach = false
	if err := pm.Run(ctx, module); err != nil {
		return nil, fmt.Errorf("%s: %w", pipeline, err)
	}
	if err := ir.Verify(module); err != nil {
		return nil, fmt.Errorf("%s: the lowered module does not verify: %w", pipeline, err)
	}
	if err := checkLowered(module); err != nil {
		return nil, err
	}
	var tune func(togpu.Config) (*exec.Program, error)
	prog := (*exec.Program)(nil)
	if m.Autotunes() {
		tune = (&autotune.Compiler{Ctx: ctx, Loop: module, Exec: g.Options}).Compile
		prog, err = tune(togpu.DefaultConfig)
	} else {
		prog, err = exec.Compile(module, g.Options)
	}
	if err != nil {
		return nil, err
	}
	lower := time.Since(t0).Seconds()
	host := prog.Func(entry)
	if host == nil {
		return nil, fmt.Errorf("nvptx: no host function @%s after lowering", entry)
	}
	kernels := 0
	host.Walk(func(op *ir.Operation) bool {
		if op.Name() == gpu.OpLaunchFunc {
			kernels++
		}
		return true
	})
	times := prog.Times()
	return &gpuProgram{
		rt: g.rt, prog: prog, entry: entry, ft: ft, kernels: kernels, mode: m, tune: tune,
		phases: map[string]float64{"lower": lower, "llvm": times.LLVM.Seconds(), "ptx": times.PTX.Seconds()},
	}, nil
}

// entrySignature returns the graph-level signature of entry: the
// arguments' tensor types, which .npy inputs are converted to.
func entrySignature(module *ir.Operation, entry string) (*ir.FunctionType, error) {
	fn := ir.NewSymTable(module).Lookup(entry)
	if fn == nil {
		return nil, fmt.Errorf("nvptx: no function @%s", entry)
	}
	return interp.FuncType(fn)
}

type gpuProgram struct {
	rt      *exec.Runtime
	prog    *exec.Program
	entry   string
	ft      *ir.FunctionType
	kernels int
	phases  map[string]float64
	mode    exec.Mode
	// tune compiles the loop-level program with a configuration; it is set
	// until the max-autotune modes have tuned (on the first call).
	tune   func(togpu.Config) (*exec.Program, error)
	runner *exec.Runner // CUDA graphs of the graph modes, made on first use
	// transfer is what the last Run spent converting, uploading and
	// downloading (see Transferrer).
	transfer time.Duration
}

// ready tunes on the first call of the max-autotune modes and makes the
// graph runner of the modes that replay CUDA graphs.
func (p *gpuProgram) ready(vals []interp.Value) error {
	if p.tune != nil {
		def := p.prog
		compile := func(c togpu.Config) (*exec.Program, error) {
			if c == togpu.DefaultConfig {
				return def, nil
			}
			return p.tune(c)
		}
		t0 := time.Now()
		res, err := autotune.Tune(p.rt, nil, autotune.Key{}, p.entry, vals, compile, autotune.Options{})
		if err != nil {
			return err
		}
		p.phases["autotune"] = time.Since(t0).Seconds()
		p.prog, p.tune = res.Program, nil
	}
	if p.mode.CUDAGraphs() && p.runner == nil {
		p.runner = exec.NewRunner(p.prog, p.rt, p.entry, true)
	}
	return nil
}

// Run calls the program once. Apart from the CUDA-graph modes (whose
// Runner uploads and launches in one), it takes the call in the steps a
// first call with inputs already on the device is made of: module load
// (the "load" phase, first call only), then the launch and the wait. The
// conversions and copies around them are counted in TransferS instead.
func (p *gpuProgram) Run(args []*npy.Array) ([]*npy.Array, error) {
	t0 := time.Now()
	vals, err := argValues(p.entry, p.ft, args)
	if err != nil {
		return nil, err
	}
	p.transfer = time.Since(t0)
	if err := p.ready(vals); err != nil {
		return nil, err
	}
	var res []interp.Value
	if p.runner != nil {
		if res, err = p.runner.Run(vals); err != nil {
			return nil, err
		}
	} else {
		if _, ok := p.phases["load"]; !ok {
			t := time.Now()
			if err := p.prog.Load(p.rt, p.entry); err != nil {
				return nil, err
			}
			p.phases["load"] = time.Since(t).Seconds()
		}
		t := time.Now()
		b, err := p.prog.Prepare(p.rt, p.entry, vals)
		if err != nil {
			return nil, err
		}
		defer b.Free()
		p.transfer += time.Since(t)
		if err := b.Launch(); err != nil {
			return nil, err
		}
		if err := b.Wait(); err != nil {
			return nil, err
		}
		t = time.Now()
		res, err = b.Results()
		p.transfer += time.Since(t)
		if err != nil {
			return nil, err
		}
	}
	t1 := time.Now()
	out := make([]*npy.Array, len(res))
	for i, r := range res {
		if out[i], err = interp.ToNPY(r); err != nil {
			return nil, fmt.Errorf("result %d: %w", i, err)
		}
	}
	p.transfer += time.Since(t1)
	return out, nil
}

// TransferS implements Transferrer.
func (p *gpuProgram) TransferS() float64 { return p.transfer.Seconds() }

// Time uploads the arguments once and times the launches alone with CUDA
// events (exec.Bound.Time), or the replays of the CUDA graph in the modes
// that use them.
func (p *gpuProgram) Time(args []*npy.Array, warmup, iters int) (float64, error) {
	vals, err := argValues(p.entry, p.ft, args)
	if err != nil {
		return 0, err
	}
	if err := p.ready(vals); err != nil {
		return 0, err
	}
	if p.runner != nil {
		return p.runner.Time(vals, warmup, iters)
	}
	return p.prog.RunTimed(p.rt, p.entry, vals, warmup, iters)
}

// Estimate implements Estimator: cache clears and launches (or graph
// replays) on the device-resident arguments (exec.Bound.Estimate).
func (p *gpuProgram) Estimate(args []*npy.Array, n int) (float64, error) {
	return p.onDevice(args,
		func(vals []interp.Value) (float64, error) { return p.runner.Estimate(vals, n) },
		func(b *exec.Bound) (float64, error) { return b.Estimate(n) })
}

// WallTime implements WallTimer: back-to-back calls on the device-resident
// arguments, timed with the host clock.
func (p *gpuProgram) WallTime(args []*npy.Array, iters int) (float64, error) {
	return p.onDevice(args,
		func(vals []interp.Value) (float64, error) { return p.runner.WallTime(vals, iters) },
		func(b *exec.Bound) (float64, error) { return b.WallTime(iters) })
}

// onDevice times the call of args on the device: through the Runner in
// the modes that have one (graph replays), on a Bound prepared for it
// otherwise.
func (p *gpuProgram) onDevice(args []*npy.Array, runner func([]interp.Value) (float64, error), bound func(*exec.Bound) (float64, error)) (float64, error) {
	vals, err := argValues(p.entry, p.ft, args)
	if err != nil {
		return 0, err
	}
	if err := p.ready(vals); err != nil {
		return 0, err
	}
	if p.runner != nil {
		return runner(vals)
	}
	b, err := p.prog.Prepare(p.rt, p.entry, vals)
	if err != nil {
		return 0, err
	}
	defer b.Free()
	return bound(b)
}

func (p *gpuProgram) Phases() map[string]float64 { return p.phases }
func (p *gpuProgram) Kernels() int               { return p.kernels }

// checkLowered reports graph ops left after lowering: the pipeline running
// on nothing must not pass for a program that runs.
func checkLowered(module *ir.Operation) error {
	var left *ir.Operation
	module.Walk(func(op *ir.Operation) bool {
		if left == nil && strings.HasPrefix(op.Name(), "graph.") {
			left = op
		}
		return left == nil
	})
	if left != nil {
		return ir.Errorf(left.Loc(), "'%s' left after lowering", left.Name())
	}
	return nil
}
