package togpu_test

import (
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"

	// The passes of lower-to-loop.
	_ "github.com/strata-ir/strata/passes/decompose"
	_ "github.com/strata-ir/strata/passes/fusion"
	_ "github.com/strata-ir/strata/passes/lower"
)

// small keeps programs small: every launch is simulated a goroutine per
// thread.
var small = passtest.Config{MaxDim: 5, MaxOps: 8}

func TestLowerToGPUPreservesSemantics(t *testing.T) {
	passtest.PreservesSemantics(t, "builtin.module(lower-to-gpu)", passtest.GraphProgram(small))
}

// TestLoopToGPUPreservesSemantics keeps index arithmetic 64-bit (the
// default is 32 where provably exact: TestLoopToGPUIndex32PreservesSemantics).
func TestLoopToGPUPreservesSemantics(t *testing.T) {
	passtest.PreservesSemantics(t, "builtin.module(lower-to-loop,convert-loop-to-gpu{block=64 vector=2 max-blocks=3 index-bits=64})",
		passtest.GraphProgram(passtest.Config{MaxDim: 5, MaxOps: 8, Floats: []ir.Type{ir.F32, ir.F64}}))
}

func TestLoopToGPUIndex32PreservesSemantics(t *testing.T) {
	passtest.PreservesSemantics(t, "builtin.module(lower-to-loop,convert-loop-to-gpu{index-bits=32},canonicalize,cse)", passtest.GraphProgram(small))
	passtest.PreservesSemantics(t, "builtin.module(lower-to-loop,convert-loop-to-gpu{block=64 vector=2 max-blocks=3 index-bits=32})",
		passtest.GraphProgram(passtest.Config{MaxDim: 5, MaxOps: 8, Floats: []ir.Type{ir.F32, ir.F64}}))
}
