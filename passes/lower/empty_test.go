package lower_test

import (
	"testing"

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
