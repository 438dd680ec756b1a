package nn

import "github.com/strata-ir/strata/frontend"

// Autocast runs fn with each float32 parameter of m replaced by its cast
// to dt, and restores them afterwards: mixed-precision training with
// float32 master weights. Parameters tagged `nn:"float32"` (Ref.Float32:
// batch norm's weight and bias) stay float32, as under PyTorch's
// autocast, where cuDNN's batch norm takes a bf16 input with a float32
// weight and bias: their gradients come out float32, not rounded to bf16
// by a cast's gradient. Inside a traced function (a GradStep's loss)
// the casts are ops of the graph, so fn computes in dt (bf16 matmuls on
// the tensor cores) while the gradients, through the casts, come out
// float32 for the float32 parameters the optimizer updates. Buffers keep
// their type. Unlike PyTorch's autocast, which picks a precision per op,
// every op of fn then runs in dt: a loss that needs float32 (a softmax
// over a large vocabulary) casts its input back itself. For autocast's
// per-op policy see Linear.Autocast and GPT2Block.SetAutocast (used by
// examples/gpt2's MixedLoss).
func Autocast(m any, dt frontend.DType, fn func() []*frontend.Tensor) []*frontend.Tensor {
	params := Parameters(m)
	saved := Tensors(params)
	defer func() { _ = SetTensors(params, saved) }()
	for _, r := range params {
		if t := *r.Ptr; !r.Float32 && t.DType() == frontend.Float32 && dt != frontend.Float32 {
			*r.Ptr = t.Cast(dt)
		}
	}
	return fn()
}
