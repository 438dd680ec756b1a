package frontend

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
	_ "github.com/strata-ir/strata/passes/lower" // lower-to-loop
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/autotune"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/nvptx"
)

// ErrNoGPUBackend is wrapped by the nvptx backend's error when it cannot
// run for want of an NVIDIA driver or device; the message says which.
var ErrNoGPUBackend = exec.ErrNoGPU

// LowerToGPUPipeline is the pipeline the nvptx backend lowers graphs with.
const LowerToGPUPipeline = "lower-to-gpu"

// gpuRuntime is the process's runtime on GPU 0, opened on first use.
var gpuRuntime = sync.OnceValues(func() (*exec.Runtime, error) {
	rt, err := exec.Open(0)
	if err == nil {
		opened.Store(rt)
	}
	return rt, err
})

// findPTXAS is exec.FindPTXAS, looked up once.
var findPTXAS = sync.OnceValues(exec.FindPTXAS)

// opened is gpuRuntime's runtime once it opened.
var opened atomic.Pointer[exec.Runtime]

// openedRuntime returns the GPU runtime if it is open, without opening it.
func openedRuntime() (*exec.Runtime, bool) {
	rt := opened.Load()
	return rt, rt != nil
}

// nvptxBackend lowers graphs to the gpu level, compiles their kernels to
// PTX and runs the launch plans on GPU 0 with runtime/exec.
type nvptxBackend struct {
	// capability, when set, is the compute capability the kernels are
	// generated for, in place of targetCapability's (PTXBackend's
	// programs for a device that is not there).
	capability *[2]int
	// libraries, when set, says whether cuBLASLt and cuDNN are taken to
	// load (autotune.AssumedConfig) rather than tried.
	libraries *bool
	// startLoads, when set, replaces autotune.StartLibraryLoads (tests:
	// whether the libraries' searches have ended is the process's).
	startLoads func(module *ir.Operation) bool
}

// Start opens the GPU runtime in the background: the driver and the
// context take about 0.2 s, which the program's own work until its first
// call (and that call's passes and code generation) then hides. The
// vendor libraries start loading too (autotune.LoadLibraries), as
// importing PyTorch loads cuDNN and cuBLAS: hundreds of megabytes each
// (0.34 s on the H200's host from a cold disk), which a first compile
// needing them otherwise waits for. Once both the device and a library
// are there, the library's handle, workspace and start-up call follow
// (exec.Runtime.WarmLibraries: 0.1 s and 0.2–0.4 s of a cold first call),
// still in the background: which libraries a program needs is known only
// once its first graph is traced and lowered, and a process that needs
// none loses only their memory. A library that is absent or off is
// skipped, as it is by the compile.
func (nvptxBackend) Start() {
	// The libraries load once the driver has: the dynamic loader loads
	// one library at a time, and the device's opening should not wait
	// for theirs (hundreds of megabytes) to take the driver's.
	go func() {
		_ = cuda.Load() // an error is the runtime's to report
		autotune.LoadLibraries()
	}()
	go func() {
		rt, err := gpuRuntime()
		if err != nil {
			return // Compile reports it
		}
		rt.WarmLibraries(exec.CuBLASLt, exec.CuDNN)
	}()
}

func (nvptxBackend) Describe() string {
	return "runs bf16/f16 attention as flash kernels (" + togpu.FlashPassName + "), lowers with " + LowerToGPUPipeline + " (bf16/f16 matmuls on cuBLASLt when it loads, as Inductor's default uses cuBLAS), compiles the kernels to PTX and runs them on an NVIDIA GPU (options: ptx_backend native|llc, ptx_target " + ptxTargets() + ")"
}

// ptxTargets lists the values of the ptx_target option: the portable
// targets, then the architecture-specific ones (sm_90a: every kernel
// compiled for Hopper only, at PTX ISA 8.0; without the option, only the
// gpu.modules that need sm_90a, the wgmma flash kernels, get it).
func ptxTargets() string {
	return strings.Join(append(append([]string{}, nvptx.Targets...), nvptx.ArchTargets...), "|")
}

func (b nvptxBackend) Compile(g *Graph) (Executable, error) {
	// reduce-overhead and max-autotune replay a CUDA graph per input
	// signature (runtime/exec.Runner); a plan that cannot be captured
	// runs launch by launch with the reason under STRATA_LOGS=cudagraphs.
	mode, err := exec.ParseMode(string(g.Mode))
	if err != nil {
		return nil, err
	}
	var before CompileTimes
	if g.times != nil {
		before = *g.times
	}
	start := time.Now()
	release := holdGC() // see holdGC: a fifth to two fifths of this time is the collector's otherwise
	prog, cfg, err := b.generate(g, mode)
	release()
	if err != nil {
		return nil, err
	}
	// While the device opens (≈ 0.2 s, which Start began), the toolkit's
	// ptxas compiles the kernels where it is installed: the driver can
	// compile only once the context exists (exec.Program.Precompile).
	if _, open := openedRuntime(); !open {
		if path, ok := findPTXAS(); ok {
			prog.Precompile(g.Func, path) // errors only for a missing function, which generate checked
		}
	}
	// The device is needed from here on only: passes and code generation
	// overlap its opening.
	var rt *exec.Runtime
	if err := g.Time(PhaseDevice, func() (err error) { rt, err = gpuRuntime(); return err }); err != nil {
		return nil, fmt.Errorf("nvptx backend: %w", err)
	}
	// The libraries' handles and workspaces, and the first call of each
	// library op (cuDNN's plans and choice of algorithms, cuBLASLt's
	// plans), while the PTX loads.
	rt.WarmLibraries(exec.LibrariesOf(cfg.CuBLASLt, cfg.CuDNN)...)
	name := g.Func
	prog.WarmLibraryCalls(rt, name)
	// The driver's JIT of the PTX, here rather than hidden in the first
	// run: in tiers (exec.LoadPolicy.Tier) in the default mode, so that
	// the first call runs quickly compiled code while the final code is
	// compiled in the background; at the final level at once with CUDA
	// graphs, whose capture would wait for it.
	load := prog.Load
	if mode.CUDAGraphs() {
		load = prog.LoadFinal
	}
	if err := g.Time(PhaseLoad, func() error { return load(rt, name) }); err != nil {
		return nil, err
	}
	if logs.Enabled(topicCompile) && g.times != nil {
		logCompile(g, prog, rt, before, time.Since(start))
	}
	return &nvptxExecutable{runner: exec.NewRunner(prog, rt, name, mode.CUDAGraphs()), rt: rt, name: name}, nil
}

// logCompile logs under topicCompile what compiling g cost: its phases
// since before (the graph's times when its compile began), the compile's
// wall time, its kernels and what the driver's JIT took of the load.
func logCompile(g *Graph, prog *exec.Program, rt *exec.Runtime, before CompileTimes, wall time.Duration) {
	ct := *g.times
	kernels := 0
	for _, text := range prog.PTX() {
		kernels += strings.Count(text, ".entry ")
	}
	var jit time.Duration
	parts := 0
	var each []exec.PartLoad
	if loads, err := prog.Loads(rt, g.Func); err == nil {
		for _, l := range loads {
			jit += l.JIT
			parts += l.Parts
			each = append(each, l.Each...)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	logs.Printf(topicCompile, "%s: %.1f ms: passes %.1f, codegen %.1f (%d kernels), device wait %.1f, load %.1f (%d driver modules, JIT %.1f ms of CPU)",
		g.Func, ms(wall), ms(ct.Passes-before.Passes), ms(ct.Codegen-before.Codegen), kernels, ms(ct.Device-before.Device),
		ms(ct.Load-before.Load), parts, ms(jit))
	if len(each) == 0 {
		return
	}
	// The longest compiles bound the load: their JIT time against their
	// PTX size says whether a kernel is too large for the first call.
	slices.SortFunc(each, func(a, b exec.PartLoad) int { return cmp.Compare(b.JIT, a.JIT) })
	var b strings.Builder
	for i, p := range each[:min(len(each), 5)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.1f ms JIT in %.1f ms for %d KB", ms(p.JIT), ms(p.Wall), p.Bytes>>10)
	}
	logs.Printf(topicCompile, "%s: longest driver compiles: %s", g.Func, b.String())
}

// generate is the host's part of Compile, before the device: it lowers
// g's module to the gpu level and compiles its kernels to PTX.
func (b nvptxBackend) generate(g *Graph, mode exec.Mode) (*exec.Program, togpu.Config, error) {
	var opts exec.Options
	for k, v := range g.Options {
		s, ok := v.(string)
		if !ok {
			return nil, togpu.Config{}, fmt.Errorf("backend option %s must be a string, got %T", k, v)
		}
		switch k {
		case "ptx_backend":
			opts.PTXBackend = s
		case "ptx_target":
			if !slices.Contains(nvptx.Targets, s) && !slices.Contains(nvptx.ArchTargets, s) {
				return nil, togpu.Config{}, fmt.Errorf("backend option ptx_target %q: want one of %s", s, ptxTargets())
			}
			opts.Target = s
		default:
			return nil, togpu.Config{}, fmt.Errorf("backend has no option %q (it takes: ptx_backend, ptx_target)", k)
		}
	}
	if passes.LookupPipeline(LowerToGPUPipeline) == nil {
		return nil, togpu.Config{}, fmt.Errorf("nvptx backend: the %s pipeline is not registered in this program (import the packages of its passes)", LowerToGPUPipeline)
	}
	// As Inductor's default runs GEMMs on cuBLAS, bf16/f16 matmuls go to
	// cuBLASLt when the process can load it (autotune.ModeConfig, logged
	// under STRATA_LOGS=autotune), and to Strata's kernels otherwise
	// (deviceConfig: wgmma on Hopper); the library's load counts as
	// passes time.
	var cfg togpu.Config
	err := g.Time(PhasePasses, func() error {
		// bf16/f16 attention runs as one flash kernel, as the bench's
		// engine does; first, so that an attention it takes asks for no
		// matmul library (whose load costs a first call 50–250 ms).
		flash, err := passes.Parse("builtin.module(" + b.flashPass(opts.Target) + ")")
		if err != nil {
			return err
		}
		flash.Instr.VerifyEach = false
		if err := flash.Run(g.Context, g.Module); err != nil {
			return fmt.Errorf("%s: %w", togpu.FlashPassName, err)
		}
		var settle func() (togpu.Config, *ir.Operation)
		cfg, settle = b.speculativeConfig(mode, g.Module, opts.Target)
		// The libraries' handles and start-up calls while the passes
		// run, where the device is open already (a model's parameters
		// on it): Compile's own WarmLibraries, after the passes, finds
		// them made.
		if rt, open := openedRuntime(); open && b.capability == nil {
			rt.WarmLibraries(exec.LibrariesOf(cfg.CuBLASLt, cfg.CuDNN)...)
		}
		err = b.lower(g, cfg)
		if settle == nil {
			return err
		}
		real, orig := settle()
		if real == cfg {
			return err
		}
		// A library did not load: the graph is lowered again, as it
		// was, without it (also when the first lowering failed: the
		// library's part of the pipeline may be what failed).
		cfg, g.Module = real, orig
		return b.lower(g, cfg)
	})
	if err != nil {
		return nil, cfg, fmt.Errorf("running %s: %w", LowerToGPUPipeline, err)
	}
	var prog *exec.Program
	err = g.Time(PhaseCodegen, func() error {
		var err error
		if prog, err = exec.Compile(g.Module, opts); err == nil {
			err = prog.Check(g.Func)
		}
		return err
	})
	return prog, cfg, err
}

// targetCapability is the compute capability the kernels are compiled
// for: 9.0 with the ptx_target option sm_90a, b's capability when it has
// one, the device's without a target when the GPU runtime is open
// already (a model's parameters on the device open it before its first
// compile), else 0.0 (none known: kernels every target runs).
func (b nvptxBackend) targetCapability(target string) (major, minor int) {
	if target == "sm_90a" {
		return 9, 0
	}
	if b.capability != nil {
		return b.capability[0], b.capability[1]
	}
	if rt, open := openedRuntime(); open && target == "" {
		if dev := rt.Device(); dev != nil {
			return dev.ComputeCapability()
		}
	}
	return 0, 0
}

// flashPass is graph-attention-to-flash, with Hopper's wgmma kernels
// (wgmma=true) when the kernels are compiled for sm_90a
// (targetCapability 9.0), otherwise the mma.sync kernels, which every
// target runs.
func (b nvptxBackend) flashPass(target string) string {
	return autotune.FlashPass(b.targetCapability(target))
}

// lower runs the lowering to the gpu level configured by cfg on g's
// module and verifies the result.
func (b nvptxBackend) lower(g *Graph, cfg togpu.Config) error {
	pm, err := passes.Parse("builtin.module(" + autotune.LowerPipelineFor(cfg) + ")")
	if err != nil {
		return err
	}
	// The verifier runs once, on the lowered module, rather than after
	// each of the pipeline's ten passes (a fifth of the passes' time):
	// the input is a traced graph, which is valid by construction, and a
	// pass that breaks the IR is still caught before code generation (irc
	// --pass-pipeline with the same passes names it).
	pm.Instr.VerifyEach = false
	var timing strings.Builder
	if logs.Enabled(topicPassTiming) {
		pm.Instr.Timing = &timing
	}
	// The libraries' first calls (cuDNN's plans and timings, cuBLASLt's)
	// start as soon as convert-loop-to-gpu has made the library ops,
	// while the cleanups, the code generation and the load follow, where
	// the device is open (exec.Runtime.WarmLibraryCallsIn).
	if rt, open := openedRuntime(); open && b.capability == nil && (cfg.CuBLASLt || cfg.CuDNN) {
		pm.Instr.AfterPass = func(pass string, op *ir.Operation) {
			if pass == togpu.PassName && op == g.Module {
				rt.WarmLibraryCallsIn(op, g.Func)
			}
		}
	}
	if err := pm.Run(g.Context, g.Module); err != nil {
		return err
	}
	if timing.Len() > 0 {
		logs.Printf(topicPassTiming, "%s:\n%s", g.Func, strings.TrimSuffix(timing.String(), "\n"))
	}
	if err := ir.Verify(g.Module); err != nil {
		return fmt.Errorf("the lowered module does not verify: %w", err)
	}
	return nil
}

// speculativeConfig is deviceConfig without waiting for the libraries'
// loads: when module needs a library whose search has not ended
// (autotune.StartLibraryLoads), the loads start in the background and
// the configuration returned assumes they succeed, so that the passes
// run while hundreds of megabytes load (a process's first compile waited
// for them). settle, non-nil then, waits for the loads and returns
// deviceConfig's answer with a copy of module as it was, to lower again
// when the answers differ. Otherwise it is deviceConfig with a nil
// settle.
func (b nvptxBackend) speculativeConfig(mode exec.Mode, module *ir.Operation, target string) (cfg togpu.Config, settle func() (togpu.Config, *ir.Operation)) {
	start := autotune.StartLibraryLoads
	if b.startLoads != nil {
		start = b.startLoads
	}
	if b.libraries != nil || !start(module) {
		return b.deviceConfig(mode, module, target), nil
	}
	// The answer is decided on a copy: the passes change module
	// meanwhile.
	orig := module.Clone(nil)
	decided := make(chan togpu.Config, 1)
	go func() { decided <- b.deviceConfig(mode, orig, target) }()
	major, minor := b.targetCapability(target)
	return autotune.ForDevice(autotune.AssumedConfig(mode, module, true), major, minor), func() (togpu.Config, *ir.Operation) {
		return <-decided, orig
	}
}

// deviceConfig is the lowering's configuration in mode: the library
// policy's (autotune.ModeConfig), with the tiling of Strata's own matmul
// kernels for the target's compute capability (autotune.ForDevice: the
// wgmma kernel on Hopper).
func (b nvptxBackend) deviceConfig(mode exec.Mode, module *ir.Operation, target string) togpu.Config {
	major, minor := b.targetCapability(target)
	if b.libraries != nil {
		return autotune.ForDevice(autotune.AssumedConfig(mode, module, *b.libraries), major, minor)
	}
	return autotune.ForDevice(autotune.ModeConfig(mode, module), major, minor)
}

// nvptxExecutable runs a compiled graph on the GPU: results stay there
// (RunDevice), and a call returns without waiting for the kernels.
type nvptxExecutable struct {
	runner *exec.Runner
	rt     *exec.Runtime
	name   string
	// ran is set by the first call, which logs under topicCompile how
	// long it took to queue (the libraries' first use, cuDNN's choice of
	// algorithms, a CUDA graph's capture).
	ran atomic.Bool
}

// RunDevice implements DeviceExecutable.
func (e *nvptxExecutable) RunDevice(inputs []interp.Value) ([]interp.Value, error) {
	return e.RunDeviceDonating(inputs, nil)
}

// RunDeviceDonating implements DonatingExecutable.
func (e *nvptxExecutable) RunDeviceDonating(inputs []interp.Value, donated []bool) ([]interp.Value, error) {
	gpuWork.queued(e.name, 1)
	first := !e.ran.Swap(true)
	var start time.Time
	if first {
		start = time.Now()
	}
	res, err := e.runner.RunDeviceDonating(inputs, donated)
	if first && err == nil && logs.Enabled(topicCompile) {
		logs.Printf(topicCompile, "%s: first run queued in %.1f ms", e.name, float64(time.Since(start).Microseconds())/1000)
	}
	if err != nil {
		// A fault of earlier, asynchronous work fails the next call with
		// the driver's error: name the calls that queued work since.
		return nil, gpuWork.explain(err)
	}
	return res, nil
}

// quiet implements quietRunner: the libraries' warm-ups time their
// candidates on the device.
func (e *nvptxExecutable) quiet() <-chan struct{} { return e.rt.WarmUpsIdle() }

// Run implements Executable: inputs and results on the host.
func (e *nvptxExecutable) Run(inputs []*interp.Tensor) ([]*interp.Tensor, error) {
	args := make([]interp.Value, len(inputs))
	for i, t := range inputs {
		args[i] = t
	}
	res, err := e.RunDevice(args)
	if err != nil {
		return nil, err
	}
	out := make([]*interp.Tensor, len(res))
	for i, r := range res {
		switch r := r.(type) {
		case *interp.Tensor:
			out[i] = r
		case *exec.Array:
			out[i], err = (&devData{arr: r}).download()
			if rerr := r.Release(); err == nil {
				err = rerr
			}
			if err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("result %d is %v, not a tensor", i, r)
		}
	}
	return out, nil
}

// trainingLayout implements trainingLayout: graph-channels-last when
// the convolutions go to cuDNN, as the lowering of each pass would run
// it (autotune.ChannelsLastPass). While the libraries still load, they
// are assumed to (as speculativeConfig assumes): without cuDNN after
// all, the channels-last convolutions run on Strata's SIMT nests.
func (b nvptxBackend) trainingLayout(g *Graph) string {
	mode, err := exec.ParseMode(string(g.Mode))
	if err != nil {
		return "" // Compile reports it
	}
	var cfg togpu.Config
	switch {
	case b.libraries != nil:
		cfg = autotune.AssumedConfig(mode, g.Module, *b.libraries)
	case autotune.StartLibraryLoads(g.Module):
		cfg = autotune.AssumedConfig(mode, g.Module, true)
	default:
		cfg = autotune.ModeConfig(mode, g.Module)
	}
	return autotune.ChannelsLastPass(cfg)
}

// concurrentCompile implements concurrentCompiler: generate's state is
// its graph's, and the runtime loads programs concurrently.
func (nvptxBackend) concurrentCompile() {}
