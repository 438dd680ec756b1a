package lower_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"

	_ "github.com/strata-ir/strata/passes/decompose"
	_ "github.com/strata-ir/strata/passes/fusion"
	"github.com/strata-ir/strata/passes/lower"
)

func TestLowerToLoopPreservesSemantics(t *testing.T) {
	passtest.PreservesSemantics(t, "lower-to-loop", passtest.GraphProgram(passtest.Config{}))
}

func TestConvertAfterFusePreservesSemantics(t *testing.T) {
	passtest.PreservesSemantics(t, "builtin.module(func.func(graph-decompose,graph-fuse),convert-graph-to-loop)",
		passtest.GraphProgram(passtest.Config{MaxOps: 16}))
}

// TestLowerToLoopEmptyHeavyPreservesSemantics draws dims of 0 and 1 only
// (a third of them 0) up to rank 4, from the families that reduce, reshape
// and multiply, through lower-to-loop and through graph-fuse without the
// cleanups before it: programs on empty tensors and their views
// (passtest.EmptyTensorPrograms has the cases this found).
func TestLowerToLoopEmptyHeavyPreservesSemantics(t *testing.T) {
	cfg := passtest.Config{MaxDim: 1, MaxOps: 16, MaxRank: 4,
		Families: []string{"reduce", "reduce", "composite", "composite", "matmul", "matmul", "shape", "shape", "unary", "binary", "constant", "select", "cast", "compare"}}
	passtest.PreservesSemantics(t, "lower-to-loop", passtest.GraphProgram(cfg))
	passtest.PreservesSemantics(t, "builtin.module(func.func(graph-decompose,graph-fuse),convert-graph-to-loop)", passtest.GraphProgram(cfg))
}

// loopLevel are the dialects a lowered program may use.
var loopLevel = []string{"builtin.", "func.", "arith.", "math.", "loop."}

// checkLoopLevel reports an op of m outside the loop level or a tensor type.
func checkLoopLevel(m *ir.Operation) error {
	var bad error
	m.Walk(func(op *ir.Operation) bool {
		ok := false
		for _, p := range loopLevel {
			ok = ok || strings.HasPrefix(op.Name(), p)
		}
		if !ok {
			bad = fmt.Errorf("'%s' is left after lowering", op.Name())
		}
		for _, t := range append(op.OperandTypes(), op.ResultTypes()...) {
			if _, isTensor := t.(*ir.TensorType); isTensor {
				bad = fmt.Errorf("'%s' has a tensor type %s", op.Name(), t)
			}
		}
		return bad == nil
	})
	return bad
}

func TestOnlyLoopLevelOpsRemain(t *testing.T) {
	gen := passtest.GraphProgram(passtest.Config{})
	rapid.Check(t, func(rt *rapid.T) {
		p := gen.Draw(rt, "program")
		m := passtest.Run(rt, p.Source, "lower-to-loop")
		if err := checkLoopLevel(m); err != nil {
			rt.Fatalf("%v\n%s", err, ir.Sprint(m, ir.PrintOptions{}))
		}
	})
}

// TestMemoryPlanNeverOverlaps checks, on random programs, that no two
// buffers live at the same time share a slot.
func TestMemoryPlanNeverOverlaps(t *testing.T) {
	gen := passtest.GraphProgram(passtest.Config{MaxOps: 16})
	rapid.Check(t, func(rt *rapid.T) {
		p := gen.Draw(rt, "program")
		m := passtest.Run(rt, p.Source, "builtin.module(func.func(graph-decompose,graph-fuse),convert-graph-to-loop)")
		for _, fn := range funcsOf(m) {
			plan := lower.PlanBuffers(fn)
			if err := plan.Check(); err != nil {
				rt.Fatalf("%v\n%s", err, plan)
			}
			for i, a := range plan.Buffers {
				for j, b := range plan.Buffers {
					if i != j && a.Slot == b.Slot && a.Def <= b.Last && b.Def <= a.Last {
						rt.Fatalf("buffers %d and %d share slot %d while live\n%s", i, j, a.Slot, plan)
					}
				}
			}
			if before, after := plan.Peak(); after > before {
				rt.Fatalf("reuse raised the peak from %d to %d bytes\n%s", before, after, plan)
			}
		}
	})
}

func funcsOf(m *ir.Operation) []*ir.Operation {
	var out []*ir.Operation
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() == "func.func" {
			out = append(out, op)
			return false
		}
		return true
	})
	return out
}
