package passtest_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/passes/passtest"
)

// The kit at its smallest (docs/tutorials/property-testing.md builds a pass
// and this test in a module of its own): passes checked on random graph
// programs for keeping their results and for idempotence.
func TestTutorialExample(t *testing.T) {
	gen := passtest.GraphProgram(passtest.Config{MaxOps: 6})
	passtest.PreservesSemantics(t, "func.func(canonicalize,cse)", gen)
	passtest.Idempotent(t, "func.func(canonicalize)", gen)
}

// CheckSemantics compares one program's results before and after a
// pipeline; here the program comes from the generator, but any Program
// (its generic source and function name) will do.
func ExampleCheckSemantics() {
	p := &passtest.Program{Func: "f", Source: `
func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}`}
	fmt.Println(passtest.CheckSemantics(p, "func.func(graph-decompose)", 1))
	// Output: <nil>
}
