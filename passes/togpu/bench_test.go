package togpu_test

import (
	"testing"

	"github.com/strata-ir/strata/passes/passtest"
	_ "github.com/strata-ir/strata/passes/togpu"
)

// BenchmarkLowerToGPU runs the whole lower-to-gpu pipeline (lower-to-loop,
// convert-loop-to-gpu, canonicalize, cse) on the 1000-op graph function of
// passes/lower's BenchmarkLowerToLoop.
func BenchmarkLowerToGPU(b *testing.B) {
	passtest.BenchmarkPipeline(b, "lower-to-gpu", passtest.RowChain(250))
}
