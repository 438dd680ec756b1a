package lower_test

import (
	"testing"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
)

// TestUniformConstantIsScalar: a constant whose elements are all equal
// but that is not written as a splat (graph-decompose's folds write the
// float32 bias of an f16 layer norm without one so) lowers to a scalar in
// the kernel that reads it, not to a buffer stored element by element on
// the host, which the nvptx executor cannot run: an f16 ONNX
// LayerNormalization without a bias failed to load on the GPU.
func TestUniformConstantIsScalar(t *testing.T) {
	const src = `module {
  func.func @main(%x: tensor<2x12xf16>, %w: tensor<12xf16>) -> tensor<2x12xf16> {
    %0 = "graph.constant"() <{value = dense<0.0> : tensor<f16>}> : () -> tensor<f16>
    %1 = "graph.broadcast_to"(%0) <{shape = [12]}> : (tensor<f16>) -> tensor<12xf16>
    %2 = "graph.layer_norm"(%x, %w, %1) <{axis = 1 : i64, epsilon = 1.0e-5 : f32}> : (tensor<2x12xf16>, tensor<12xf16>, tensor<12xf16>) -> tensor<2x12xf16>
    return %2 : tensor<2x12xf16>
  }
}`
	m := passtest.Run(t, src, "lower-to-loop")
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() == loop.StoreOp && op.ParentOp() != nil && op.ParentOp().Name() == "func.func" {
			t.Errorf("a store on the host: %s", op)
		}
		return true
	})
}
