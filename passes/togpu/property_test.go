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

// emptyHeavy draws dims of 0 and 1 only (a third of them 0) up to rank 4,
// from the families that reduce, reshape and multiply: programs on empty
// tensors and their views, whose hoisted code must not read out of bounds
// or divide by an empty extent (passtest.EmptyTensorPrograms has the
// cases these found).
var emptyHeavy = passtest.Config{MaxDim: 1, MaxOps: 12, MaxRank: 4,
	Families: []string{"reduce", "reduce", "composite", "composite", "matmul", "matmul", "shape", "shape", "unary", "binary", "constant", "select", "cast", "compare"}}

func TestLowerToGPUEmptyHeavyPreservesSemantics(t *testing.T) {
	passtest.PreservesSemantics(t, "builtin.module(lower-to-gpu)", passtest.GraphProgram(emptyHeavy))
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
