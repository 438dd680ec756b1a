package nn

import (
	"sync"

	"github.com/strata-ir/strata/frontend"
)

// The constants layers make while a compiled function runs are the same
// tensors every call. A compiled call takes each concrete tensor its
// function uses as an input of its graph, and copies it to the device
// only when it is not the tensor of the last call: a fresh constant per
// call was a copy per call (GPT-2's loss: the 50304 class indices,
// 402 KB, in the forward and the backward pass of every step, and the
// attention's three head indices a layer). Tensors are immutable, so one
// serves every caller.
var constants sync.Map // constKey → *frontend.Tensor

// constKey names a constant: a rank-0 value of a dtype, a 1-element int64
// index, or the int64 or int32 range [0, n).
type constKey struct {
	kind byte // 'f' full, 'i' index, 'r' range, 's' int32 range
	dt   frontend.DType
	v    float64
	n    int64
}

// cached returns the constant of k, made by mk on first use.
func cached(k constKey, mk func() *frontend.Tensor) *frontend.Tensor {
	if t, ok := constants.Load(k); ok {
		return t.(*frontend.Tensor)
	}
	t, _ := constants.LoadOrStore(k, mk())
	return t.(*frontend.Tensor)
}

// Scalar returns the rank-0 constant v of dtype dt, the same tensor for
// every call with that dtype and value: model code that makes its
// constants with it inside a compiled function does not copy them to the
// device each call.
func Scalar(dt frontend.DType, v float64) *frontend.Tensor {
	return cached(constKey{kind: 'f', dt: dt, v: v}, func() *frontend.Tensor { return frontend.Full(dt, v) })
}

// full returns the rank-0 constant v of x's dtype.
func full(x *frontend.Tensor, v float64) *frontend.Tensor { return Scalar(x.DType(), v) }

// index returns the int64 tensor [v] (shape [1]).
func index(v int64) *frontend.Tensor {
	return cached(constKey{kind: 'i', n: v}, func() *frontend.Tensor { return frontend.FromSlice([]int64{v}, 1) })
}

// classes returns the int64 tensor [0, 1, …, c-1].
func classes(c int) *frontend.Tensor {
	return cached(constKey{kind: 'r', n: int64(c)}, func() *frontend.Tensor {
		idx := make([]int64, c)
		for i := range idx {
			idx[i] = int64(i)
		}
		return frontend.FromSlice(idx, c)
	})
}

// classes32 returns the int32 tensor [0, 1, …, c-1] (c at most 2³¹).
func classes32(c int) *frontend.Tensor {
	return cached(constKey{kind: 's', n: int64(c)}, func() *frontend.Tensor {
		idx := make([]int32, c)
		for i := range idx {
			idx[i] = int32(i)
		}
		return frontend.FromSlice(idx, c)
	})
}
