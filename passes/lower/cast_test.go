package lower_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
)

// TestBoolToFloatIsASelect checks that a cast of i1 to a float type lowers
// to a select of 1 and 0, with no conversion through float64 (a one-hot
// mask converts one a class and token); TestEveryGraphOpRunsOnTheGPU
// checks its values against the op.
func TestBoolToFloatIsASelect(t *testing.T) {
	for _, elt := range []string{"f16", "bf16", "f32", "f64"} {
		src := fmt.Sprintf(`func.func @main(%%a: tensor<8xf32>, %%b: tensor<8xf32>) -> tensor<8x%[1]s> {
  %%c = "graph.cmp"(%%a, %%b) <{predicate = "lt"}> : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  %%r = "graph.cast"(%%c) : (tensor<8xi1>) -> tensor<8x%[1]s>
  return %%r : tensor<8x%[1]s>
}`, elt)
		m := passtest.Run(t, src, "builtin.module(lower-to-loop)")
		counts := map[string]int{}
		m.Walk(func(o *ir.Operation) bool {
			counts[o.Name()]++
			return true
		})
		if counts[arith.OpSelect] != 1 || counts[arith.OpUIToFP]+counts[arith.OpSIToFP]+counts[arith.OpTruncF] != 0 {
			t.Errorf("%s: %d selects, %d uitofp, %d sitofp, %d truncf; want one select and no conversion:\n%s",
				elt, counts[arith.OpSelect], counts[arith.OpUIToFP], counts[arith.OpSIToFP], counts[arith.OpTruncF], m)
		}
	}
}
