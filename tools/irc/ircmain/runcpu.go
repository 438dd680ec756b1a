package ircmain

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/cpu"
	"github.com/strata-ir/strata/runtime/interp"
	cputarget "github.com/strata-ir/strata/targets/cpu"
)

// lowerToLoop is the pipeline irc run --backend cpu applies to inputs that
// still hold graph ops after --pass-pipeline.
const lowerToLoop = "builtin.module(lower-to-loop)"

// runCPU is irc run --backend cpu: run --pass-pipeline, lower what is
// still at the graph level to the loop level, compile every nest for this
// CPU (targets/cpu, cached) and run the function on all cores. Without the
// LLVM tools, or for a program the cpu target does not compile, a note on
// stderr says so and the interpreter runs the lowered program.
func (t *tool) runCPU(ctx *ir.Context, f *runFlags, name string, mod *ir.Operation, pm *passes.PassManager, fail func(error) int) int {
	if err := pm.Run(ctx, mod); err != nil {
		return fail(err)
	}
	if err := lowerToLoopIfNeeded(ctx, mod, pm.Instr); err != nil {
		return fail(err)
	}
	fn, err := pickFunc(mod, f.funcName)
	if err != nil {
		return t.usageErrorf("run: %s: %v", name, err)
	}
	fnName := ir.SymbolName(fn)
	ft, err := interp.FuncType(fn)
	if err != nil {
		return fail(err)
	}
	argv, status, ok := t.runArgs(f, fnName, ft)
	if !ok {
		return status
	}
	if err := checkGuards(fn, argv); err != nil {
		return t.errorf("run: @%s: %v", fnName, err)
	}
	saved, err := inputArrays(argv)
	if err != nil {
		return t.errorf("run: @%s: --save-inputs: %v", fnName, err)
	}
	prog, err := cpu.Compile(mod)
	if err != nil {
		var d *ir.Diagnostic
		switch {
		case errors.Is(err, cpu.ErrNoTools):
			fmt.Fprintf(t.stderr, "%s: run: note: %v; running in the interpreter\n", t.name, err)
		case errors.As(err, &d):
			fmt.Fprintf(t.stderr, "%s: run: note: the cpu backend cannot compile this program (%v); running in the interpreter\n", t.name, err)
		default:
			return fail(err)
		}
		in := interp.New(mod)
		results, err := in.Call(fnName, argv...)
		if err != nil {
			return fail(err)
		}
		if err := t.repeatCalls(f.repeat, func() error { _, err := in.Call(fnName, argv...); return err }); err != nil {
			return fail(err)
		}
		if status := t.saveInputs(f, fnName, saved); status != ExitOK {
			return status
		}
		return t.writeResults(f, fnName, results)
	}
	inputs := make([]*interp.Tensor, len(argv))
	for i, a := range argv {
		switch a := a.(type) {
		case *interp.Tensor:
			inputs[i] = a
		case *interp.Buffer:
			if inputs[i], err = a.Tensor(); err != nil {
				return fail(err)
			}
		default:
			return t.errorf("run: @%s: argument %d is %s, not a tensor", fnName, i, a)
		}
	}
	outs, err := prog.Run(fnName, inputs)
	if err != nil {
		return fail(err)
	}
	// The repeated calls' results are dropped: each is given back to the
	// program for the next call's results (as PyTorch's caching allocator
	// does with a freed tensor).
	repeat := func() error {
		outs, err := prog.Run(fnName, inputs)
		prog.Release(outs...)
		return err
	}
	if err := t.repeatCalls(f.repeat, repeat); err != nil {
		return fail(err)
	}
	if status := t.saveInputs(f, fnName, saved); status != ExitOK {
		return status
	}
	results := make([]interp.Value, len(outs))
	for i, o := range outs {
		results[i] = o
	}
	return t.writeResults(f, fnName, results)
}

// lowerToLoopIfNeeded runs lower-to-loop over a module that still holds
// graph ops (irc --emit=llvm --target=x86_64).
func lowerToLoopIfNeeded(ctx *ir.Context, mod *ir.Operation, instr passes.Instrumentation) error {
	if !hasGraphOps(mod) {
		return nil
	}
	lpm, err := passes.Parse(lowerToLoop)
	if err != nil {
		return err
	}
	lpm.Instr = instr
	return lpm.Run(ctx, mod)
}

// emitCPU writes the host LLVM IR of mod's loop-level functions
// (targets/cpu).
func emitCPU(out *bytes.Buffer, mod *ir.Operation) error {
	m, err := cputarget.Translate(mod)
	if err != nil {
		return err
	}
	if len(m.Funcs) == 0 {
		return ir.Errorf(mod.Loc(), "--emit=llvm --target=x86_64: the program has no function with a body")
	}
	out.WriteString(m.LLVM.String())
	return nil
}

// hasGraphOps reports whether mod holds an op of the graph dialect.
func hasGraphOps(mod *ir.Operation) bool {
	found := false
	mod.Walk(func(op *ir.Operation) bool {
		found = found || strings.HasPrefix(op.Name(), "graph.")
		return !found
	})
	return found
}
