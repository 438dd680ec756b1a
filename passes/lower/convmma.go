package lower

import (
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// tensorCoreConv reports whether convert-loop-to-gpu can run the
// convolution cv as an implicit GEMM on tensor cores (loop.ConvAttr), and
// then marks the nest for it: bf16 or f16 operands, one group, static
// shapes, and both operands read from buffers or through a view of one in
// the reshape's shape (reshapeView; another view would reach the nest as
// index arithmetic the kernel cannot gather from). Such a nest
// computes one output channel a point (no channel block): the tensor-core
// kernel tiles the channels itself.
func (k *kernel) tensorCoreConv(cv *ir.Operation, p graph.Conv2DParams) bool {
	elem := elemOf(cv.Result(0))
	if (elem != ir.BF16 && elem != ir.F16) || p.Groups != 1 {
		return false
	}
	for _, v := range []*ir.Value{cv.Operand(0), cv.Operand(1), cv.Result(0)} {
		v = k.resolve(v)
		if !allStatic(shapeOf(v)) {
			return false
		}
	}
	for _, v := range cv.Operands()[:2] {
		if k.c.bufs[k.resolve(v)] == nil && k.reshapeView(v) == nil {
			return false
		}
	}
	k.conv = &loop.Conv{Strides: p.Strides, Padding: p.Padding, Dilations: p.Dilations, ChannelsLast: p.ChannelsLast}
	return true
}

// allStatic reports whether a shape has no dynamic dimension.
func allStatic(shape []int64) bool {
	for _, n := range shape {
		if n == ir.Dynamic {
			return false
		}
	}
	return true
}
