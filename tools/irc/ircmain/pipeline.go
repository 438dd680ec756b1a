package ircmain

import (
	"errors"
	"fmt"

	"github.com/strata-ir/strata/dialects/builtin"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/lower"
)

// usageError marks an error that is the command line's fault (a bad
// pipeline, a reproducer without one): it ends irc with ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// checkLogs checks the topics of --logs and of STRATA_LOGS: an unknown
// topic is a usage error that lists the known ones.
func checkLogs(f *pipelineFlags) error {
	if err := logs.EnvError(); err != nil {
		return err
	}
	if err := logs.Check(logs.Parse(f.logs)); err != nil {
		return fmt.Errorf("--logs: %w (irc help logs describes them)", err)
	}
	return nil
}

// newPassManager builds the pass manager of --pass-pipeline, instrumented
// as the flags ask. Without a pipeline it is empty, so that instrumentation
// such as --timing still reports.
func (t *tool) newPassManager(f *pipelineFlags) (*passes.PassManager, error) {
	pm := passes.NewPassManager(builtin.OpModule)
	if f.pipeline != "" {
		var err error
		if pm, err = passes.Parse(f.pipeline); err != nil {
			return nil, usageError{fmt.Errorf("--pass-pipeline: %w", err)}
		}
	}
	t.instrument(pm, f)
	return pm, nil
}

// instrument sets pm's instrumentation from the flags; reports go to
// standard error, as in mlir-opt.
func (t *tool) instrument(pm *passes.PassManager, f *pipelineFlags) {
	pm.Instr = passes.Instrumentation{
		VerifyEach:        f.verifyEach,
		PrintBefore:       f.printBefore,
		PrintAfter:        f.printAfter,
		PrintAfterChange:  f.printAfterChange,
		PrintAfterFailure: f.printAfterFailure,
		Output:            t.stderr,
		TraceFile:         f.trace,
		Reproducer:        f.reproducer,
	}
	if f.timing {
		pm.Instr.Timing = t.stderr
	}
	if f.statistics {
		pm.Instr.Statistics = t.stderr
	}
	if f.debugRewrites {
		pm.Instr.DebugRewrites = t.stderr
	}
	if f.memoryPlan {
		lower.SetPlanOutput(t.stderr)
	}
	if topics := logs.Parse(f.logs); len(topics) > 0 {
		logs.SetOutput(t.stderr)
		logs.Enable(topics...)
	}
}

// reproducerPassManager returns the pass manager recorded in a reproducer
// module (--run-reproducer), keeping its verification setting and taking
// the rest of the instrumentation from the flags.
func (t *tool) reproducerPassManager(mod *ir.Operation, f *pipelineFlags) (*passes.PassManager, error) {
	pm, err := passes.ReproducerPipeline(mod)
	if err != nil {
		return nil, usageError{fmt.Errorf("--run-reproducer: %w", err)}
	}
	verify := pm.Instr.VerifyEach
	t.instrument(pm, f)
	pm.Instr.VerifyEach = verify
	return pm, nil
}

// listPasses prints the registered passes and pipelines.
func (t *tool) listPasses() int {
	if err := passes.ListPasses(t.stdout); err != nil {
		return t.errorf("%v", err)
	}
	return ExitOK
}

// diagnostics flattens an error from parsing, verification or a pass
// manager (which may join several) into diagnostics.
func diagnostics(err error) []*ir.Diagnostic {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*ir.Diagnostic
		for _, e := range joined.Unwrap() {
			out = append(out, diagnostics(e)...)
		}
		return out
	}
	var d *ir.Diagnostic
	var list ir.DiagnosticList
	switch {
	case errors.As(err, &d):
		return []*ir.Diagnostic{d}
	case errors.As(err, &list):
		return list
	}
	return ir.Diagnostics(err)
}
