package lower_test

import (
	"testing"

	"github.com/strata-ir/strata/passes/passtest"
)

// BenchmarkLowerToLoop runs the whole lower-to-loop pipeline (decompose,
// fuse, convert, buffer reuse, cleanups) on a 1000-op graph function: 250
// rounds of exp, row max, subtract, tanh, each a persistent-row kernel.
func BenchmarkLowerToLoop(b *testing.B) {
	passtest.BenchmarkPipeline(b, "lower-to-loop", passtest.RowChain(250))
}
