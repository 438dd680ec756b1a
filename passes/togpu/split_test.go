package togpu_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
)

// lossProgram is a language model's loss as nn.CrossEntropy writes it,
// the mean over every row and class of log-probabilities times one-hot
// weights, on [rows, classes] f32 inputs.
const lossProgram = `func.func @main(%%lp: tensor<%[1]dx%[2]dxf32>, %%hot: tensor<%[1]dx%[2]dxf32>) -> tensor<f32> {
  %%0 = "graph.mul"(%%lp, %%hot) : (tensor<%[1]dx%[2]dxf32>, tensor<%[1]dx%[2]dxf32>) -> tensor<%[1]dx%[2]dxf32>
  %%1 = "graph.reduce_mean"(%%0) : (tensor<%[1]dx%[2]dxf32>) -> tensor<f32>
  return %%1 : tensor<f32>
}`

// TestLossFillsTheGrid lowers the loss of GPT-2's training step (8192
// tokens, 50304 classes) and checks that no kernel runs its 412 million
// elements on a few blocks (togpu.NarrowLaunches): unsplit, the mean was
// one kernel of one block over all of them.
func TestLossFillsTheGrid(t *testing.T) {
	m := lowerGraph(t, fmt.Sprintf(lossProgram, 8192, 50304), "builtin.module(lower-to-gpu)")
	launches := 0
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() == gpu.LaunchFuncOp {
			launches++
		}
		return true
	})
	if launches < 2 {
		t.Errorf("%d kernels, want the split mean's two or more", launches)
	}
	if n := togpu.NarrowLaunches(m); len(n) > 0 {
		t.Errorf("kernels with ≥ %d elements of a buffer a block: %v", togpu.NarrowPerBlock, n)
	}
}

// TestSplitLossSemantics runs the lowered loss at a size the split takes
// (256 rows of 512) in the interpreter's GPU simulation and compares it
// with the graph program's.
func TestSplitLossSemantics(t *testing.T) {
	p := &passtest.Program{Source: fmt.Sprintf(lossProgram, 256, 512), Func: "main"}
	for _, seed := range []int64{1, 2} {
		if err := passtest.CheckSemantics(p, "builtin.module(lower-to-gpu)", seed); err != nil {
			t.Fatal(err)
		}
	}
}
