package lower_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
)

// TestLowerToLoopEmptyTensors runs lower-to-loop on the programs on empty
// tensors (passtest.EmptyTensorPrograms) and checks their results in the
// interpreter: no load out of bounds, no division by an empty extent.
func TestLowerToLoopEmptyTensors(t *testing.T) {
	progs := passtest.EmptyTensorPrograms()
	if len(progs) < 30 {
		t.Fatalf("%d programs on empty tensors, want at least 30", len(progs))
	}
	for _, p := range progs {
		t.Run(p.Func, func(t *testing.T) {
			for seed := int64(1); seed <= 2; seed++ {
				if err := passtest.CheckSemantics(p, "lower-to-loop", seed); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestConcatSkipsEmptyOperands: the inputs of a concat empty along its
// axis get no branch: concat(x, y, x) of an empty x reads y with no
// loop.if.
func TestConcatSkipsEmptyOperands(t *testing.T) {
	n := 0
	for _, p := range passtest.EmptyTensorPrograms() {
		if p.Func != "concat_empty_operand" && p.Func != "concat_empty_columns" {
			continue
		}
		n++
		text := ir.Sprint(passtest.Run(t, p.Source, "lower-to-loop"), ir.PrintOptions{})
		if strings.Contains(text, "loop.if") {
			t.Errorf("%s: a loop.if is left:\n%s", p.Func, text)
		}
	}
	if n != 2 {
		t.Errorf("%d concat programs, want 2", n)
	}
}
