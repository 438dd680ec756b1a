package togpu_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
)

// TestMatmulViewsReachTensorCores draws half-precision matmuls whose
// operands come through the views models make (a reshape of the rows, a
// transpose then a reshape, a slice, a batch against one shared weight;
// passtest.MatmulViewProgram) and checks that each becomes exactly one
// mma kernel, or one gpu.library_matmul under matmul=cublaslt, as a plain
// 2-D product does, computing what the graph computes (the interpreter
// simulates the mma kernel lane by lane, for one program in eight).
func TestMatmulViewsReachTensorCores(t *testing.T) {
	gen := passtest.MatmulViewProgram(ir.BF16, ir.F16)
	tile := togpu.MMATiles[2] // the smallest block: the interpreter's time
	rapid.Check(t, func(rt *rapid.T) {
		p := gen.Draw(rt, "program")
		if got := mmaKernels(t, p, mmaPipeline(tile), 32*tile.Warps()); got != 1 {
			rt.Fatalf("%d mma kernels, want 1:\n%s", got, p)
		}
		text := lowerText(t, p, libraryPipeline)
		if got := strings.Count(text, `"gpu.library_matmul"`); got != 1 {
			rt.Fatalf("%d gpu.library_matmul, want 1:\n%s\n%s", got, p, text)
		}
		// The lane-by-lane simulation is slow: one program in eight runs
		// (passes/lower's TestMatmulViewsPreserveSemantics runs them all
		// at the loop level, whose loads the mma kernel reads).
		if rapid.IntRange(0, 7).Draw(rt, "simulate") != 0 {
			return
		}
		if err := passtest.CheckSemantics(p, mmaPipeline(tile), rapid.Int64().Draw(rt, "seed")); err != nil {
			rt.Fatal(err)
		}
	})
}
