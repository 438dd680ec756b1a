package togpu_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
)

// lowerPrinted parses p in a fresh context, runs pipeline and prints the
// result, or returns the pipeline's error text.
func lowerPrinted(t *rapid.T, p *passtest.Program, pipeline string) string {
	ctx := dialects.NewContext()
	m, err := p.Parse(ctx)
	if err != nil {
		t.Fatalf("parsing: %v", err)
	}
	pm, err := passes.Parse(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		return "error: " + err.Error()
	}
	return ir.Sprint(m, ir.PrintOptions{})
}

// TestAfterConversionPerFunction checks that the cleanups after the
// conversion, run on each function (togpu.AfterConversion: the kernels at
// once), give the module exactly what they give when run on the whole
// module.
func TestAfterConversionPerFunction(t *testing.T) {
	gen := passtest.GraphProgram(passtest.Config{MaxDim: 5, MaxOps: 10})
	const head = "builtin.module(lower-to-loop," + togpu.PassName + ","
	rapid.Check(t, func(t *rapid.T) {
		p := gen.Draw(t, "program")
		whole := lowerPrinted(t, p, head+togpu.DedupKernelsPassName+",expand-math,canonicalize,cse,"+togpu.DedupKernelsPassName+")")
		each := lowerPrinted(t, p, head+togpu.AfterConversion+")")
		if whole != each {
			t.Fatalf("per function:\n%s\nwhole module:\n%s", each, whole)
		}
	})
}
