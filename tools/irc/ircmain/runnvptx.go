package ircmain

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/autotune"
	"github.com/strata-ir/strata/runtime/cache"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/llvm"
)

// lowerToGPU is the pipeline irc run --backend nvptx applies to inputs
// that are not at the gpu level yet.
const lowerToGPU = "lower-to-gpu"

// nvptxFlags are the flags of irc run --backend nvptx.
type nvptxFlags struct {
	targetFlags
	cache        string
	explainCache bool
	mode         string
	tuneBudget   time.Duration
}

func (f *nvptxFlags) register(fs *flag.FlagSet) {
	f.targetFlags.register(fs)
	fs.StringVar(&f.cache, "cache", "on", "with --backend nvptx, use the compile cache (`on` or off) under $STRATA_CACHE_DIR or the user cache directory")
	fs.BoolVar(&f.explainCache, "explain-cache", false, "with --backend nvptx, say on standard error why the compile cache missed")
	fs.StringVar(&f.mode, "mode", "default", "with --backend nvptx, the compile `mode`: default, reduce-overhead (CUDA graphs), max-autotune (autotuned launch parameters, then CUDA graphs) or max-autotune-no-cudagraphs")
	fs.DurationVar(&f.tuneBudget, "autotune-budget", autotune.DefaultBudget, "with --mode max-autotune*, the time the search may take")
}

// checkMode validates --mode; a mode other than default with a backend
// other than nvptx is accepted and ignored with a note on stderr.
func (t *tool) checkMode(f *runFlags) (status int, ok bool) {
	m, err := exec.ParseMode(f.nvptx.mode)
	if err != nil {
		return t.usageErrorf("run: --mode: %v", err), false
	}
	if m != exec.ModeDefault && f.backend != "nvptx" {
		fmt.Fprintf(t.stderr, "%s: run: note: --mode %s applies to --backend nvptx; ignored with --backend %s\n", t.name, m, f.backend)
	}
	return 0, true
}

// runNVPTX is irc run --backend nvptx: lower mod to the gpu level if it is
// not there yet, compile its kernels (or take them from the compile
// cache), run the function on GPU 0 and print its results as the
// interpreter backends do.
func (t *tool) runNVPTX(ctx *ir.Context, f *runFlags, name string, mod *ir.Operation, pm *passes.PassManager, fail func(error) int) int {
	if f.nvptx.cache != "on" && f.nvptx.cache != "off" {
		return t.usageErrorf("run: --cache must be on or off, got %q", f.nvptx.cache)
	}
	if err := f.nvptx.check(); err != nil {
		return t.usageErrorf("run: %v", err)
	}
	mode, _ := exec.ParseMode(f.nvptx.mode) // checked by checkMode
	if mode.Autotunes() {
		return t.runAutotuned(ctx, f, mode, mod, pm, fail)
	}
	// Compile and check first: compile errors and the cache's
	// explanations do not need a GPU.
	prog, err := t.compileNVPTX(ctx, f, name, mod, pm)
	if err != nil {
		return fail(err)
	}
	fn, err := pickFunc(prog.Module(), f.funcName)
	if err != nil {
		return t.usageErrorf("run: %s: %v", name, err)
	}
	fnName := ir.SymbolName(fn)
	ft, err := interp.FuncType(fn)
	if err != nil {
		return fail(err)
	}
	if err := prog.Check(fnName); err != nil {
		return fail(err)
	}
	argv, status, ok := t.runArgs(f, fnName, ft)
	if !ok {
		return status
	}
	rt, err := exec.Open(0)
	if err != nil {
		return t.errorf("run: --backend nvptx %v", err)
	}
	defer rt.Close()
	return t.runProgram(f, mode, rt, prog, fnName, argv, fail)
}

// runProgram runs a compiled program in mode and prints its results;
// with CUDA graphs it reports the graph and its static pool, or why the
// plan was not captured, on stderr.
func (t *tool) runProgram(f *runFlags, mode exec.Mode, rt *exec.Runtime, prog *exec.Program, fnName string, argv []interp.Value, fail func(error) int) int {
	r := exec.NewRunner(prog, rt, fnName, mode.CUDAGraphs())
	defer r.Close()
	saved, err := inputArrays(argv)
	if err != nil {
		return t.errorf("run: @%s: --save-inputs: %v", fnName, err)
	}
	results, err := r.Run(argv)
	if err != nil {
		return fail(err)
	}
	if err := t.repeatCalls(f.repeat, func() error { _, err := r.Run(argv); return err }); err != nil {
		return fail(err)
	}
	if status := t.saveInputs(f, fnName, saved); status != ExitOK {
		return status
	}
	if mode.CUDAGraphs() {
		if info, err := r.Graph(argv); err != nil {
			fmt.Fprintf(t.stderr, "%s: no CUDA graph: %v\n", mode, err)
		} else {
			fmt.Fprintf(t.stderr, "%s: %v\n", mode, info)
		}
	}
	return t.writeResults(f, fnName, results)
}

// runAutotuned is --mode max-autotune(-no-cudagraphs): after the user's
// pipeline, lower-to-loop runs once and every candidate configuration of
// convert-loop-to-gpu is compiled from its output and timed on the
// arguments; the decision is kept in the tuning database (runtime/
// autotune), so a later run compiles only the chosen configuration. The
// compile cache is not used on this path.
func (t *tool) runAutotuned(ctx *ir.Context, f *runFlags, mode exec.Mode, mod *ir.Operation, pm *passes.PassManager, fail func(error) int) int {
	source := cache.SourceHash(mod)
	if err := pm.Run(ctx, mod); err != nil {
		return fail(err)
	}
	eopts := exec.Options{PTXBackend: f.nvptx.ptxBackend, Target: f.nvptx.ptxTarget, PTXVersion: f.nvptx.ptxVersion}
	compile := func(togpu.Config) (*exec.Program, error) { return exec.Compile(mod, eopts) }
	tunable := len(llvm.GPUModules(mod)) == 0
	if tunable {
		lpm, err := passes.Parse("builtin.module(lower-to-loop)")
		if err != nil {
			return fail(err)
		}
		lpm.Instr = pm.Instr
		if err := lpm.Run(ctx, mod); err != nil {
			return fail(err)
		}
		compile = (&autotune.Compiler{Ctx: ctx, Loop: mod, Exec: eopts, Instr: pm.Instr}).Compile
	} else {
		fmt.Fprintf(t.stderr, "%s: the input is already at the gpu level: nothing to tune\n", mode)
	}
	def, err := compile(togpu.DefaultConfig)
	if err != nil {
		return fail(err)
	}
	fn, err := pickFunc(def.Module(), f.funcName)
	if err != nil {
		return t.usageErrorf("run: %v", err)
	}
	fnName := ir.SymbolName(fn)
	ft, err := interp.FuncType(fn)
	if err != nil {
		return fail(err)
	}
	if err := def.Check(fnName); err != nil {
		return fail(err)
	}
	argv, status, ok := t.runArgs(f, fnName, ft)
	if !ok {
		return status
	}
	rt, err := exec.Open(0)
	if err != nil {
		return t.errorf("run: --backend nvptx %v", err)
	}
	defer rt.Close()
	prog := def
	if tunable {
		db, err := autotune.OpenDB("")
		if err != nil {
			fmt.Fprintf(t.stderr, "%s: run: tuning database off: %v\n", t.name, err)
		}
		key := autotune.Key{Device: rt.Device().Name(), Source: source, Shapes: autotune.ShapesOf(argv)}
		opts := autotune.Options{Budget: f.nvptx.tuneBudget}
		if file, ok := t.stderr.(*os.File); ok {
			opts.Progress = autotune.Terminal(file)
		}
		withDefault := func(c togpu.Config) (*exec.Program, error) {
			if c == togpu.DefaultConfig {
				return def, nil
			}
			return compile(c)
		}
		res, err := autotune.Tune(rt, db, key, fnName, argv, withDefault, opts)
		if err != nil {
			return fail(err)
		}
		how := fmt.Sprintf("%d candidates", res.Tried)
		if res.Cached {
			how = "from the tuning database"
		}
		fmt.Fprintf(t.stderr, "%s: @%s %s: %.4f ms (default %.4f ms; %s)\n", mode, fnName, autotune.ConfigString(res.Config), res.MS, res.DefaultMS, how)
		prog = res.Program
	}
	return t.runProgram(f, mode, rt, prog, fnName, argv, fail)
}

// compileNVPTX returns the compiled program of mod, from the compile
// cache when it holds it.
func (t *tool) compileNVPTX(ctx *ir.Context, f *runFlags, name string, mod *ir.Operation, pm *passes.PassManager) (*exec.Program, error) {
	lower := passes.LookupPipeline(lowerToGPU)
	recipe := f.pipeline
	if lower != nil {
		recipe += " then, below the gpu level, " + lower.Text
	}
	key := cache.Key{
		Source:   cache.SourceHash(mod),
		Pipeline: recipe,
		Target:   f.nvptx.ptxBackend + " " + f.nvptx.ptxTarget + " " + f.nvptx.ptxVersion,
		Compiler: cache.CompilerVersion(),
	}
	var c *cache.Cache
	if f.nvptx.cache == "on" {
		var err error
		if c, err = cache.Open(""); err != nil {
			fmt.Fprintf(t.stderr, "%s: run: compile cache off: %v\n", t.name, err)
		}
	}
	entryName := name
	if abs, err := filepath.Abs(name); err == nil && name != "<stdin>" {
		entryName = abs
	}
	if c != nil {
		e, hit, err := c.Get(key)
		if err != nil {
			fmt.Fprintf(t.stderr, "%s: run: %v\n", t.name, err)
		}
		if hit {
			plan, err := ir.Parse(ctx, e.Plan, ir.ParseOptions{Filename: name})
			if err == nil {
				return exec.NewProgram(plan, e.PTX)
			}
			fmt.Fprintf(t.stderr, "%s: run: unreadable cache entry, recompiling: %v\n", t.name, err)
		} else if f.nvptx.explainCache {
			fmt.Fprintln(t.stderr, c.Explain(entryName, key))
		}
	}
	if err := pm.Run(ctx, mod); err != nil {
		return nil, err
	}
	if err := lowerToGPUIfNeeded(ctx, mod, pm.Instr); err != nil {
		return nil, err
	}
	prog, err := exec.Compile(mod, exec.Options{PTXBackend: f.nvptx.ptxBackend, Target: f.nvptx.ptxTarget, PTXVersion: f.nvptx.ptxVersion})
	if err != nil {
		return nil, err
	}
	if c != nil {
		entry := &cache.Entry{PTX: prog.PTX(), Plan: ir.Sprint(mod, ir.PrintOptions{Generic: true, DebugInfo: true})}
		if err := c.Put(entryName, key, entry); err != nil {
			fmt.Fprintf(t.stderr, "%s: run: %v\n", t.name, err)
		}
	}
	return prog, nil
}

// lowerToGPUIfNeeded runs the lower-to-gpu pipeline on mod when it holds no
// gpu.module yet (and the pipeline is registered), with the same
// instrumentation as the user's pipeline.
func lowerToGPUIfNeeded(ctx *ir.Context, mod *ir.Operation, instr passes.Instrumentation) error {
	if len(llvm.GPUModules(mod)) > 0 || passes.LookupPipeline(lowerToGPU) == nil {
		return nil
	}
	lpm, err := passes.Parse("builtin.module(" + lowerToGPU + ")")
	if err != nil {
		return err
	}
	lpm.Instr = instr
	return lpm.Run(ctx, mod)
}
