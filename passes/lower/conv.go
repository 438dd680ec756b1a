package lower

import (
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// convParams reads graph.conv2d's attributes with their defaults (the
// verifier has checked them).
func convParams(op *ir.Operation) (graph.Conv2DParams, error) {
	p, err := graph.Conv2DParamsOf(op)
	if err != nil {
		return p, errorf(op.Loc(), "%v", err)
	}
	return p, nil
}

// conv2d emits the element idx = (n, o, oh, ow) of a convolution, or
// idx = (n, oh, ow, o) of a channels-last one.
func (k *kernel) conv2d(op *ir.Operation, idx []*ir.Value) (*ir.Value, error) {
	p, err := convParams(op)
	if err != nil {
		return nil, err
	}
	if p.ChannelsLast {
		idx = graph.ToNCHW(idx)
	}
	vs, err := k.conv2dChannels(op, idx[0], idx[1:2], idx[2], idx[3])
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// conv2dChannels emits the elements (n, o, oh, ow) of a convolution for
// each o of os, output channels of one group: one loop.for nest over
// (c, kh, kw) of the group's input channels and the window, in the
// interpreter's order, carrying one accumulator per channel, so each input
// element loaded serves every channel. Each accumulates x·w in f32 (f16,
// bf16, f32) or f64 (f64; integers, which the interpreter also sums in
// float64), then the bias, then rounds once to the element type. Window
// positions in the padding add nothing: the load reads a clamped index and
// a select keeps the sum (no branch, and 0·inf never enters it).
func (k *kernel) conv2dChannels(op *ir.Operation, n *ir.Value, os []*ir.Value, oh, ow *ir.Value) ([]*ir.Value, error) {
	p, err := convParams(op)
	if err != nil {
		return nil, err
	}
	x, w := op.Operand(0), op.Operand(1)
	// The dims of x and w (c, kh, kw or h, w) in NCHW order, and the
	// indices of an element in their own order.
	dims, at := []int{0, 1, 2, 3}, func(v []*ir.Value) []*ir.Value { return v }
	if p.ChannelsLast {
		dims, at = graph.ToNCHW(dims), graph.ToNHWC[*ir.Value]
	}
	// A factor that is a reshape of a buffer (a strided 1×1 convolution's
	// weight [O, C, 1, 1] read as [O, 1, 1, C] channels last) is read
	// through a loop.view of the buffer in the reshape's shape, as a
	// matmul's operand is (views.go): the loads are the plain ones the
	// tensor-core and library plans recognize, and nothing copies it.
	xView, wView := k.reshapeView(x), k.reshapeView(w)
	read := func(v, view *ir.Value, idx []*ir.Value) (*ir.Value, error) {
		if view != nil {
			return k.load(view, idx), nil
		}
		return k.value(v, idx)
	}
	elem := elemOf(op.Result(0))
	acc := accType(elem)
	if !ir.IsFloat(elem) {
		acc = ir.F64
	}
	// The input channel block of the output channels: o / (O / groups).
	grp := k.index(0)
	if p.Groups > 1 {
		outs, err := k.size(w, 0)
		if err != nil {
			return nil, err
		}
		grp = k.indexOp(arith.OpDivUI, os[0], k.outerOp(arith.OpDivUI, outs, k.outerIndex(p.Groups)))
	}
	ubs := make([]*ir.Value, 3)
	for i, d := range dims[1:] {
		if ubs[i], err = k.size(w, d); err != nil {
			return nil, err
		}
	}
	var inSize [2]*ir.Value // read where the bottom (right) padding needs a bound
	for i := range inSize {
		if p.Padding[2+i] > 0 {
			if inSize[i], err = k.size(x, dims[2+i]); err != nil {
				return nil, err
			}
		}
	}
	base := [2]*ir.Value{ // oh·stride - pad_lo, the window's first row (column)
		k.indexOp(arith.OpSubI, k.indexOp(arith.OpMulI, oh, k.index(p.Strides[0])), k.index(p.Padding[0])),
		k.indexOp(arith.OpSubI, k.indexOp(arith.OpMulI, ow, k.index(p.Strides[1])), k.index(p.Padding[1])),
	}
	inits := make([]*ir.Value, len(os))
	for i := range inits {
		inits[i] = k.zero(acc)
	}
	level := k.levelOf(append([]*ir.Value{n, oh, ow}, os...)...)
	res, err := k.loops(level, ubs, inits, func(ivs, iters []*ir.Value) ([]*ir.Value, error) {
		c, kh, kw := ivs[0], ivs[1], ivs[2]
		ci := k.indexOp(arith.OpAddI, k.indexOp(arith.OpMulI, grp, ubs[0]), c)
		pos := [2]*ir.Value{
			k.indexOp(arith.OpAddI, base[0], k.indexOp(arith.OpMulI, kh, k.index(p.Dilations[0]))),
			k.indexOp(arith.OpAddI, base[1], k.indexOp(arith.OpMulI, kw, k.index(p.Dilations[1]))),
		}
		var inside *ir.Value
		for i, q := range pos {
			// Only a side with padding can be left: a position in the top
			// or left padding is negative (signed compare), one in the
			// bottom or right padding is at least the size.
			var in *ir.Value
			if p.Padding[i] > 0 {
				in = k.cmpi(arith.CmpISGE, q, k.index(0))
			}
			if p.Padding[2+i] > 0 {
				hi := k.cmpi(arith.CmpISLT, q, inSize[i])
				if in == nil {
					in = hi
				} else {
					in = k.andi(in, hi)
				}
			}
			if in == nil {
				continue
			}
			if inside == nil {
				inside = in
			} else {
				inside = k.andi(inside, in)
			}
			pos[i] = k.sel(in, q, k.index(0))
		}
		xv, err := read(x, xView, at([]*ir.Value{n, ci, pos[0], pos[1]}))
		if err != nil {
			return nil, err
		}
		xa := k.convert(xv, elem, acc)
		next := make([]*ir.Value, len(os))
		for i, o := range os {
			wv, err := read(w, wView, at([]*ir.Value{o, c, kh, kw}))
			if err != nil {
				return nil, err
			}
			next[i] = k.binary(arith.OpAddF, iters[i], k.binary(arith.OpMulF, xa, k.convert(wv, elem, acc)))
			if inside != nil {
				next[i] = k.sel(inside, next[i], iters[i])
			}
		}
		return next, nil
	})
	if err != nil {
		return nil, err
	}
	res = slices.Clone(res) // not the loop's own result list
	for i, o := range os {
		if op.NumOperands() == 3 {
			b, err := k.value(op.Operand(2), []*ir.Value{o})
			if err != nil {
				return nil, err
			}
			res[i] = k.binary(arith.OpAddF, res[i], k.convert(b, elem, acc))
		}
		if ir.IsFloat(elem) {
			res[i] = k.convert(res[i], acc, elem)
		} else {
			// The interpreter converts its float64 sum with Go's int64();
			// then the integer wraps to the element type.
			res[i] = k.convert(k.cast(arith.OpFPToSI, res[i], ir.I64), ir.I64, elem)
		}
	}
	return res, nil
}

// convChannelBlock is the most output channels one thread of a conv2d
// kernel computes: they share each input element it loads.
const convChannelBlock = 4

// convBlock returns the fusion's convolution and the number of its output
// channels each point of the nest computes: the largest of
// convChannelBlock, ..., 2 that divides the channels of a group, when the
// group has one convolution whose shape every output has; 1 otherwise.
func (k *kernel) convBlock(outs []*ir.Value) (*ir.Operation, int64) {
	var cv *ir.Operation
	for op := range k.body.All() {
		if op.Name() == graph.OpConv2D {
			if cv != nil {
				return nil, 1
			}
			cv = op
		}
	}
	if cv == nil {
		return nil, 1
	}
	shape := shapeOf(cv.Result(0))
	for _, o := range outs {
		if !slices.Equal(shapeOf(o), shape) {
			return nil, 1
		}
	}
	p, err := convParams(cv)
	if err != nil || shape[1] == ir.Dynamic {
		return nil, 1
	}
	// A channels-last convolution's points are (n, oh, ow, o): no block
	// of channels along dim 1.
	if k.tensorCoreConv(cv, p) || p.ChannelsLast {
		return nil, 1
	}
	for t := int64(convChannelBlock); t > 1; t-- {
		if shape[1]%p.Groups == 0 && (shape[1]/p.Groups)%t == 0 {
			return cv, t
		}
	}
	return nil, 1
}

// writeConvBlock stores the outputs at the t output channels
// idx[1]·t … idx[1]·t + t-1 of the point idx: it computes the convolution
// for all of them in one nest and memoizes its elements, so the epilogue
// of each output reads them.
func (k *kernel) writeConvBlock(cv *ir.Operation, t int64, outs, bufs []*ir.Value, idx []*ir.Value) error {
	os := make([]*ir.Value, t)
	for i := range os {
		os[i] = k.indexOp(arith.OpAddI, k.indexOp(arith.OpMulI, idx[1], k.index(t)), k.index(int64(i)))
	}
	vals, err := k.conv2dChannels(cv, idx[0], os, idx[2], idx[3])
	if err != nil {
		return err
	}
	for i, o := range os {
		at := []*ir.Value{idx[0], o, idx[2], idx[3]}
		k.remember(k.elemKey("value", cv.Result(0), at), vals[i])
		for j, out := range outs {
			if err := k.store(out, at, bufs[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// convSize returns dim d of a convolution's result at function level:
// N from the input, O from the weight, and the spatial sizes by
// graph.ConvOutSize in index arithmetic.
func (k *kernel) convSize(op *ir.Operation, d int) (*ir.Value, error) {
	p, err := convParams(op)
	if err != nil {
		return nil, err
	}
	if d < 0 || d > 3 {
		return nil, errorf(op.Loc(), "graph.conv2d has no dim %d", d)
	}
	// The result's channels are dim 1 (NCHW) or 3 (NHWC); its spatial
	// dim i is dim 2+i (1+i) of it, of the input and of the weight alike.
	channels, first := 1, 2
	if p.ChannelsLast {
		channels, first = 3, 1
	}
	switch d {
	case 0:
		return k.size(op.Operand(0), 0)
	case channels:
		return k.size(op.Operand(1), 0)
	}
	in, err := k.size(op.Operand(0), d)
	if err != nil {
		return nil, err
	}
	kn, err := k.size(op.Operand(1), d)
	if err != nil {
		return nil, err
	}
	i := d - first
	b := k.outer()
	c := func(v int64) *ir.Value { return arith.ConstantIndex(b, k.loc, v) }
	bin := func(name string, x, y *ir.Value) *ir.Value { return arith.Binary(b, name, k.loc, x, y) }
	// (in + pad_lo + pad_hi - dilation·(k-1) - 1) / stride + 1, where the
	// numerator is non-negative for a verified op.
	span := bin(arith.OpMulI, bin(arith.OpSubI, kn, c(1)), c(p.Dilations[i]))
	num := bin(arith.OpSubI, bin(arith.OpSubI, bin(arith.OpAddI, in, c(p.Padding[i]+p.Padding[2+i])), span), c(1))
	return bin(arith.OpAddI, bin(arith.OpDivUI, num, c(p.Strides[i])), c(1)), nil
}
