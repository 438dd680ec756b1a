package ircmain

import (
	"flag"
	"fmt"
	"path/filepath"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
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
}

func (f *nvptxFlags) register(fs *flag.FlagSet) {
	f.targetFlags.register(fs)
	fs.StringVar(&f.cache, "cache", "on", "with --backend nvptx, use the compile cache (`on` or off) under $STRATA_CACHE_DIR or the user cache directory")
	fs.BoolVar(&f.explainCache, "explain-cache", false, "with --backend nvptx, say on standard error why the compile cache missed")
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
	results, err := prog.Run(rt, fnName, argv)
	if err != nil {
		return fail(err)
	}
	return t.writeResults(f, fnName, results)
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
