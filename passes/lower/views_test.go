package lower_test

import (
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
)

// TestMatmulViewsPreserveSemantics checks that the matmuls whose operands
// come through views (read through loop.view, staged by graph-fuse,
// folded to 2-D by canonicalize) compute what the interpreter computes
// of the graph.
func TestMatmulViewsPreserveSemantics(t *testing.T) {
	gen := passtest.MatmulViewProgram(ir.F32, ir.BF16, ir.F16)
	for _, pipeline := range []string{"builtin.module(func.func(canonicalize))", "lower-to-loop"} {
		t.Run(pipeline, func(t *testing.T) { passtest.PreservesSemantics(t, pipeline, gen) })
	}
}
