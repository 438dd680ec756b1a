package togpu_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
)

// lossProgram is a language model's loss as nn.CrossEntropy writes it,
// the mean over every row and class of log-probabilities times one-hot
// weights, on [rows, classes] f32 inputs.
const lossProgram = `func.func @main(%%lp: tensor<%[1]dx%[2]dxf32>, %%hot: tensor<%[1]dx%[2]dxf32>) -> tensor<f32> {
  %%0 = "graph.mul"(%%lp, %%hot) : (tensor<%[1]dx%[2]dxf32>, tensor<%[1]dx%[2]dxf32>) -> tensor<%[1]dx%[2]dxf32>
  %%1 = "graph.reduce_mean"(%%0) : (tensor<%[1]dx%[2]dxf32>) -> tensor<f32>
  return %%1 : tensor<f32>
}`

// launchBlocks returns the blocks of a gpu.launch_func whose grid sizes
// are constants, and false otherwise.
func launchBlocks(l *ir.Operation) (int64, bool) {
	n := int64(1)
	for i := range 3 { // grid x, y, z
		c := l.Operand(i).DefiningOp()
		if c == nil || c.Name() != arith.OpConstant {
			return 0, false
		}
		v, ok := c.Attr("value").(ir.IntegerAttr)
		if !ok {
			return 0, false
		}
		n *= v.Value
	}
	return n, true
}

// TestLossFillsTheGrid lowers the loss of GPT-2's training step (8192
// tokens, 50304 classes) and checks that every kernel launched on its
// 412 million elements runs at least 1024 blocks (the H200 has 132
// multiprocessors): unsplit, the mean was one kernel of one block over
// all of them.
func TestLossFillsTheGrid(t *testing.T) {
	m := lowerGraph(t, fmt.Sprintf(lossProgram, 8192, 50304), "builtin.module(lower-to-gpu)")
	launches := 0
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() != gpu.LaunchFuncOp {
			return true
		}
		launches++
		big := false
		for _, v := range op.Operands() {
			if mt, ok := v.Type().(*ir.MemRefType); ok && ir.NumElements(mt.Shape()) >= 1<<20 {
				big = true
			}
		}
		blocks, ok := launchBlocks(op)
		if !ok {
			t.Errorf("launch of %v with a grid that is not constant", op.Attr("kernel"))
		} else if big && blocks < 1024 {
			t.Errorf("a kernel reading a buffer of ≥ 2^20 elements runs %d blocks: %v", blocks, op.Attr("kernel"))
		}
		return true
	})
	if launches < 2 {
		t.Errorf("%d kernels, want the split mean's two or more", launches)
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
