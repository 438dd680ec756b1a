package autodiff

import (
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// vjp is the vector-Jacobian product of one op: given g, the gradient of
// the loss with respect to op's result (of the result's type), it builds
// with e and returns one gradient per operand, each of its operand's type,
// or nil for an operand that has none (indices, conditions). Rules may
// compute gradients nobody needs; the unused ops are removed afterwards.
type vjp func(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value

// rules maps each graph op to its VJP. Ops that are absent (fusion)
// cannot be differentiated; noGrad marks ops whose result carries no
// gradient to their operands.
var rules = map[string]vjp{
	// Constants have no operands; comparisons and argmax are piecewise
	// constant, so their operands get nothing.
	graph.OpConstant: noGrad,
	graph.OpIota:     noGrad,
	graph.OpFull:     noGrad,
	graph.OpArgmax:   noGrad,
	graph.OpCmp:      noGrad,

	graph.OpNeg: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value { return e.neg(g) }),
	// abs: sign(x)·g, with 0 at x = 0 as in PyTorch.
	graph.OpAbs: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value {
		zero := e.scalarLike(x, 0)
		return e.sel(e.cmp("gt", x, zero), g, e.sel(e.cmp("lt", x, zero), e.neg(g), zero))
	}),
	graph.OpExp: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value { return e.mul(g, y) }),
	graph.OpLog: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value { return e.div(g, x) }),
	// sqrt: g / (2√x).
	graph.OpSqrt: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value {
		return e.div(e.mulc(g, 0.5), y)
	}),
	// rsqrt: -½·x^(-3/2)·g = -½·y³·g, as PyTorch computes it: products
	// rather than y/x, whose per-element division compiles to a
	// subroutine call on the GPU (div.rn.f32's slow path; 64 of them made
	// ResNet-50's batch-norm backward kernel 255 registers with spills and
	// twice the ptxas time). In a 16-bit type y/x, one rounding.
	graph.OpRsqrt: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value {
		if t := ir.ElementTypeOf(y.Type()); t == ir.BF16 || t == ir.F16 {
			return e.mul(e.mulc(g, -0.5), e.div(y, x))
		}
		return e.mul(e.mulc(g, -0.5), e.mul(y, e.mul(y, y)))
	}),
	graph.OpTanh: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value {
		return e.mul(g, e.sub(e.scalarLike(y, 1), e.mul(y, y)))
	}),
	graph.OpSigmoid: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value {
		return e.mul(g, e.mul(y, e.sub(e.scalarLike(y, 1), y)))
	}),
	// relu: g where x > 0, else 0 (0 at x = 0, as in PyTorch).
	graph.OpRelu: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value {
		zero := e.scalarLike(x, 0)
		return e.sel(e.cmp("gt", x, zero), g, zero)
	}),
	graph.OpGELU: unary(geluGrad),
	// erf: 2/√π·e^(-x²)·g.
	graph.OpErf: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value {
		return e.mul(e.mulc(g, 2/math.Sqrt(math.Pi)), e.Unary(graph.OpExp, e.neg(e.mul(x, x))))
	}),
	graph.OpSin: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value {
		return e.mul(g, e.Unary(graph.OpCos, x))
	}),
	graph.OpCos: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value {
		return e.neg(e.mul(g, e.Unary(graph.OpSin, x)))
	}),
	// reciprocal: -g/x² = -g·y².
	graph.OpReciprocal: unary(func(e *emitter, _ *ir.Operation, x, y, g *ir.Value) *ir.Value {
		return e.neg(e.mul(g, e.mul(y, y)))
	}),

	graph.OpAdd: binary(func(e *emitter, a, b, y, g *ir.Value) (*ir.Value, *ir.Value) { return g, g }),
	graph.OpSub: binary(func(e *emitter, a, b, y, g *ir.Value) (*ir.Value, *ir.Value) { return g, e.neg(g) }),
	graph.OpMul: binary(func(e *emitter, a, b, y, g *ir.Value) (*ir.Value, *ir.Value) {
		return e.mul(g, b), e.mul(g, a)
	}),
	// div: g/b and -g·a/b² = -g·y/b.
	graph.OpDiv: binary(func(e *emitter, a, b, y, g *ir.Value) (*ir.Value, *ir.Value) {
		gb := e.div(g, b)
		return gb, e.neg(e.mul(gb, y))
	}),
	// pow: g·b·a^(b-1), and g·y·ln a for the exponent, taken as 0 where
	// a = 0 (PyTorch's convention; a < 0 gives NaN).
	graph.OpPow: binary(func(e *emitter, a, b, y, g *ir.Value) (*ir.Value, *ir.Value) {
		one := e.scalarLike(b, 1)
		ga := e.mul(e.mul(g, b), e.Op(graph.OpPow, []*ir.Value{a, e.sub(b, one)}))
		zero := e.scalarLike(a, 0)
		gb := e.sel(e.cmp("eq", a, zero), zero, e.mul(e.mul(g, y), e.Unary(graph.OpLog, a)))
		return ga, gb
	}),
	// max and min: the gradient goes to the chosen operand; on a tie each
	// gets half (PyTorch's torch.maximum); where either is NaN, neither.
	graph.OpMax: binary(extremumGrad("gt", "lt")),
	graph.OpMin: binary(extremumGrad("lt", "gt")),

	graph.OpSelect: selectGrad,
	graph.OpCast:   castGrad,

	graph.OpReduceSum:  reduceSumGrad,
	graph.OpReduceMean: reduceSumGrad,
	graph.OpReduceMax:  reduceExtremumGrad,
	graph.OpReduceMin:  reduceExtremumGrad,

	graph.OpReshape:     reshapeGrad,
	graph.OpTranspose:   transposeGrad,
	graph.OpBroadcastTo: broadcastGrad,
	graph.OpConcat:      concatGrad,
	graph.OpSlice:       sliceGrad,
	graph.OpPad:         padGrad,
	graph.OpGather:      gatherGrad,
	graph.OpScatterAdd:  scatterAddGrad,
	graph.OpMatmul:      matmulGrad,
	graph.OpConv2D:      conv2dGrad,

	graph.OpSoftmax:    softmaxGrad,
	graph.OpLogSoftmax: softmaxGrad,
	graph.OpLogSumExp:  logSumExpGrad,
	graph.OpLayerNorm:  normGrad,
	graph.OpRMSNorm:    normGrad,
	graph.OpAttention:  attentionGrad,
}

// Differentiable reports whether ops named name have a VJP rule (noGrad
// counts: their operands simply get no gradient).
func Differentiable(name string) bool {
	_, ok := rules[name]
	return ok
}

func noGrad(*emitter, *ir.Operation, *ir.Value) []*ir.Value { return nil }

// notDifferentiable are the graph ops without a VJP, each with the reason.
var notDifferentiable = map[string]string{
	graph.OpFusion: "graph-autodiff runs before graph-fuse makes fusions",
	graph.OpYield:  "it only ends a graph.fusion body",
	// (Second derivatives of attention would need it.)
	graph.OpAttentionGrad: "attention's gradients are not differentiated again",
}

// NotDifferentiable returns why ops named name have no VJP rule, when they
// are marked so; an op with neither a rule nor a mark is an omission, which
// the completeness test (test.TestEveryGraphOpHasItsRules) reports.
func NotDifferentiable(name string) (reason string, ok bool) {
	reason, ok = notDifferentiable[name]
	return reason, ok
}

// unary lifts the gradient formula of an elementwise unary op, which sees
// the operand x, the result y and the result's gradient g.
func unary(f func(e *emitter, op *ir.Operation, x, y, g *ir.Value) *ir.Value) vjp {
	return func(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
		return []*ir.Value{f(e, op, op.Operand(0), op.Result(0), g)}
	}
}

// binary lifts the gradient formulas of a broadcasting binary op: f
// returns gradients of the broadcast shape, summed back to each operand's
// shape here.
func binary(f func(e *emitter, a, b, y, g *ir.Value) (*ir.Value, *ir.Value)) vjp {
	return func(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
		a, b := op.Operand(0), op.Operand(1)
		ga, gb := f(e, a, b, op.Result(0), g)
		as, _ := e.shape(a)
		bs, _ := e.shape(b)
		return []*ir.Value{e.unbroadcast(ga, as), e.unbroadcast(gb, bs)}
	}
}

// geluGrad differentiates both forms of gelu:
//
//	exact: Φ(x) + x·φ(x), Φ(x) = ½(1 + erf(x/√2)), φ(x) = e^(-x²/2)/√(2π)
//	tanh:  ½(1 + t) + ½x(1 - t²)·c(1 + 3a·x²), t = tanh(c(x + a·x³)), c = √(2/π), a = 0.044715
func geluGrad(e *emitter, op *ir.Operation, x, _, g *ir.Value) *ir.Value {
	half, one := e.scalarLike(x, 0.5), e.scalarLike(x, 1)
	x2 := e.mul(x, x)
	var d *ir.Value
	if graph.Approximate(op) == "tanh" {
		const a = 0.044715
		c := math.Sqrt(2 / math.Pi)
		t := e.Unary(graph.OpTanh, e.mulc(e.add(x, e.mulc(e.mul(x2, x), a)), c))
		left := e.mul(half, e.add(one, t))
		dt := e.mul(e.sub(one, e.mul(t, t)), e.mulc(e.add(one, e.mulc(x2, 3*a)), c))
		d = e.add(left, e.mul(e.mul(half, x), dt))
	} else {
		cdf := e.mul(half, e.add(one, e.Unary(graph.OpErf, e.mulc(x, 1/math.Sqrt2))))
		pdf := e.mulc(e.Unary(graph.OpExp, e.mulc(x2, -0.5)), 1/math.Sqrt(2*math.Pi))
		d = e.add(cdf, e.mul(x, pdf))
	}
	return e.mul(g, d)
}

// extremumGrad is the rule of max (wins = "gt") or min (wins = "lt").
func extremumGrad(wins, loses string) func(e *emitter, a, b, y, g *ir.Value) (*ir.Value, *ir.Value) {
	return func(e *emitter, a, b, y, g *ir.Value) (*ir.Value, *ir.Value) {
		one, half, zero := e.scalarLike(g, 1), e.scalarLike(g, 0.5), e.scalarLike(g, 0)
		tie := e.sel(e.cmp("eq", a, b), half, zero)
		wa := e.sel(e.cmp(wins, a, b), one, tie)
		wb := e.sel(e.cmp(loses, a, b), one, tie)
		return e.mul(g, wa), e.mul(g, wb)
	}
}

// selectGrad routes g to a where cond holds and to b elsewhere.
func selectGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	c, a, b := op.Operand(0), op.Operand(1), op.Operand(2)
	zero := e.scalarLike(g, 0)
	as, _ := e.shape(a)
	bs, _ := e.shape(b)
	return []*ir.Value{nil, e.unbroadcast(e.sel(c, g, zero), as), e.unbroadcast(e.sel(c, zero, g), bs)}
}

// castGrad converts g back for a float-to-float cast; casts to or from
// integers are piecewise constant (or have no float operand).
func castGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	x := op.Operand(0)
	if !isFloatTensor(x.Type()) {
		return nil
	}
	return []*ir.Value{e.castTo(g, ir.ElementTypeOf(x.Type()))}
}

// reduceSumGrad broadcasts g back over the reduced dims, divided by their
// size for reduce_mean.
func reduceSumGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	xs, _ := e.shape(op.Operand(0))
	axes := e.reduceAxes(op, len(xs))
	if e.Err != nil {
		return nil
	}
	gx := e.broadcast(e.reshape(g, keptShape(xs, axes)), xs)
	if op.Name() == graph.OpReduceMean {
		n := int64(1)
		for _, a := range axes {
			n *= xs[a]
		}
		gx = e.mulc(gx, 1/float64(max(n, 1)))
	}
	return []*ir.Value{gx}
}

// reduceExtremumGrad sends g to the elements equal to the maximum (or
// minimum), split evenly among ties as PyTorch's amax does. Where the
// result is NaN no element equals it and the gradient is zero.
func reduceExtremumGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	x := op.Operand(0)
	xs, elem := e.shape(x)
	axes := e.reduceAxes(op, len(xs))
	if e.Err != nil {
		return nil
	}
	kept := keptShape(xs, axes)
	hit := e.cmp("eq", x, e.reshape(op.Result(0), kept))
	count := e.Reduce(graph.OpReduceSum, e.castTo(hit, elem), axes, true)
	share := e.div(e.reshape(g, kept), count)
	return []*ir.Value{e.sel(hit, e.broadcast(share, xs), e.Scalar(elem, 0))}
}

func reshapeGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	xs, _ := e.shape(op.Operand(0))
	return []*ir.Value{e.reshape(g, xs)}
}

// transposeGrad transposes g by the inverse permutation.
func transposeGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	perm, _ := intsAttr(op, "perm")
	inv := make([]int64, len(perm))
	for i, p := range perm {
		if p < 0 || int(p) >= len(perm) {
			e.Fail("invalid permutation %v", perm)
			return nil
		}
		inv[p] = int64(i)
	}
	return []*ir.Value{e.transpose(g, inv)}
}

func broadcastGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	xs, _ := e.shape(op.Operand(0))
	return []*ir.Value{e.unbroadcast(g, xs)}
}

// concatGrad slices each operand's part out of g.
func concatGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	gs, _ := e.shape(g)
	if e.Err != nil {
		return nil
	}
	axis := e.normAxis(graph.Axis(op), len(gs))
	out := make([]*ir.Value, op.NumOperands())
	starts, limits, strides := make([]int64, len(gs)), slices.Clone(gs), ones(len(gs))
	for i, x := range op.Operands() {
		xs, _ := e.shape(x)
		if e.Err != nil {
			return nil
		}
		limits[axis] = starts[axis] + xs[axis]
		out[i] = e.slice(g, starts, limits, strides)
		starts[axis] = limits[axis]
	}
	return out
}

// sliceGrad scatters g back into zeros of x's shape: it spreads g by the
// strides (dilate), then pads with starts before and the rest after.
func sliceGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	x := op.Operand(0)
	xs, _ := e.shape(x)
	gs, _ := e.shape(g)
	if e.Err != nil {
		return nil
	}
	if ir.NumElements(gs) == 0 {
		return []*ir.Value{e.zeros(x.Type())}
	}
	starts, _ := intsAttr(op, "starts")
	strides, ok := intsAttr(op, "strides")
	if !ok {
		strides = ones(len(xs))
	}
	cur := g
	for d, s := range strides {
		cur = e.dilate(cur, d, s)
	}
	cs, _ := e.shape(cur)
	if e.Err != nil {
		return nil
	}
	high := make([]int64, len(xs))
	for d := range xs {
		high[d] = xs[d] - starts[d] - cs[d]
	}
	return []*ir.Value{e.pad(cur, starts, high)}
}

// dilate spreads x along dim d by s, putting s-1 zeros between
// neighbours, so that n elements become (n-1)·s+1: reshape to [n, 1], pad
// to [n, s], reshape to [n·s], drop the trailing zeros. x must not be
// empty along d.
func (e *emitter) dilate(x *ir.Value, d int, s int64) *ir.Value {
	xs, _ := e.shape(x)
	if e.Err != nil || s == 1 {
		return x
	}
	n := xs[d]
	split := slices.Insert(slices.Clone(xs), d+1, 1)
	high := make([]int64, len(split))
	high[d+1] = s - 1
	cur := e.pad(e.reshape(x, split), make([]int64, len(split)), high)
	spread := slices.Clone(xs)
	spread[d] = n * s
	cur = e.reshape(cur, spread)
	limits := slices.Clone(spread)
	limits[d] = (n-1)*s + 1
	return e.slice(cur, make([]int64, len(xs)), limits, ones(len(xs)))
}

// padGrad slices the unpadded window out of g.
func padGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	xs, _ := e.shape(op.Operand(0))
	low, _ := intsAttr(op, "low")
	if e.Err != nil || len(low) != len(xs) {
		e.Fail("invalid padding %v for shape %v", low, xs)
		return nil
	}
	limits := make([]int64, len(xs))
	for d := range xs {
		limits[d] = low[d] + xs[d]
	}
	return []*ir.Value{e.slice(g, low, limits, ones(len(xs)))}
}

// gatherGrad scatter-adds g into x's shape: grad[a, j, b] is the sum of
// g[a, i, b] over the positions i whose index is j (repeated indices
// accumulate). graph.scatter_add sums in f32 or f64: a bf16 or f16 g is
// widened first and the sum rounded once to x's type, as the one-hot
// product this replaces accumulated in f32.
func gatherGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	x, idx := op.Operand(0), op.Operand(1)
	xs, elem := e.shape(x)
	if e.Err != nil {
		return nil
	}
	axis := e.normAxis(graph.Axis(op), len(xs))
	if e.Err != nil {
		return nil
	}
	if xs[axis] == ir.Dynamic {
		e.Fail("the gradient of a gather needs the static size of the axis it indexes, got %v", xs)
		return nil
	}
	wide := ir.Type(ir.F32)
	if elem == ir.F64 {
		wide = ir.F64
	}
	sum := e.Op(graph.OpScatterAdd, []*ir.Value{e.castTo(g, wide), idx},
		ir.NamedAttr{Name: "axis", Value: ir.IntegerAttr{Value: int64(axis), Type: ir.I64}},
		ir.NamedAttr{Name: "size", Value: ir.IntegerAttr{Value: xs[axis], Type: ir.I64}})
	return []*ir.Value{e.castTo(sum, elem), nil}
}

// scatterAddGrad: the adjoint of a scatter-add is the gather of g at the
// same indices; the indices get no gradient.
func scatterAddGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	return []*ir.Value{e.Op(graph.OpGather, []*ir.Value{g, op.Operand(1)},
		ir.NamedAttr{Name: "axis", Value: ir.IntegerAttr{Value: int64(graph.Axis(op)), Type: ir.I64}}), nil}
}

// intScalar builds a rank-0 integer constant of type elem.
func (e *emitter) intScalar(elem ir.Type, v int64) *ir.Value {
	return e.Op(graph.OpConstant, nil, ir.NamedAttr{Name: "value",
		Value: ir.DenseAttr{Type: ir.TensorOf(nil, elem), Bits: []uint64{uint64(v)}, Splat: true}})
}

// matmulGrad: ga = g·bᵀ and gb = aᵀ·g, with 1-D operands promoted to
// matrices as numpy.matmul does and broadcast batch dims summed away; a
// bias's gradient is g summed over its rows.
func matmulGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	a, b := op.Operand(0), op.Operand(1)
	as, _ := e.shape(a)
	bs, _ := e.shape(b)
	if e.Err != nil {
		return nil
	}
	as2, bs2 := as, bs
	if len(as) == 1 {
		as2 = []int64{1, as[0]}
	}
	if len(bs) == 1 {
		bs2 = []int64{bs[0], 1}
	}
	ys2, err := graph.MatmulShape(as2, bs2)
	if err != nil {
		e.Fail("%v", err)
		return nil
	}
	a2, b2, g2 := e.reshape(a, as2), e.reshape(b, bs2), e.reshape(g, ys2)
	ga := e.Op(graph.OpMatmul, []*ir.Value{g2, e.mT(b2)})
	gb := e.Op(graph.OpMatmul, []*ir.Value{e.mT(a2), g2})
	grads := []*ir.Value{
		e.reshape(e.unbroadcast(ga, as2), as),
		e.reshape(e.unbroadcast(gb, bs2), bs),
	}
	if op.NumOperands() == 3 {
		// The bias [N] is added to every row: its gradient is g summed
		// over every dim but the last.
		gs, _ := e.shape(g)
		gbias := g
		if len(gs) > 1 {
			axes := make([]int64, len(gs)-1)
			for d := range axes {
				axes[d] = int64(d)
			}
			gbias = e.Reduce(graph.OpReduceSum, g, axes, false)
		}
		grads = append(grads, gbias)
	}
	return grads
}

// conv2dGrad differentiates y = conv2d(x, w[, b]) with strides s,
// padding (lo, hi), dilations d and G groups, per spatial dim:
//
//	gx: the transposed convolution. g spread by s (dilate), convolved
//	    with w flipped and with its channel dims swapped within each group
//	    (padding d·(k-1) on both sides, dilation d, G groups), is the
//	    gradient of the padded input from position -lo on; the window at
//	    lo of length x's size is gx (zeros where the output missed rows).
//	gw: a convolution of x, with its batch made the channels, by g as the
//	    kernel, strides and dilations swapped (stride d, dilation s) and
//	    the forward padding; its first k positions are gw.
//	gb: g summed over the batch and spatial dims.
//
// A channels-last convolution (layout "NHWC") of one group has
// channels-last gradients (conv2dGradNHWC); one of several groups is
// differentiated as the NCHW one of its operands transposed, the
// gradients transposed back.
func conv2dGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	x, w := op.Operand(0), op.Operand(1)
	p, err := graph.Conv2DParamsOf(op)
	if err != nil {
		e.Fail("%v", err)
		return nil
	}
	if p.ChannelsLast && p.Groups == 1 {
		return conv2dGradNHWC(e, op, g, p)
	}
	if p.ChannelsLast {
		x, w, g = e.transpose(x, graph.NCHWOfNHWC), e.transpose(w, graph.NCHWOfNHWC), e.transpose(g, graph.NCHWOfNHWC)
	}
	xs, _ := e.shape(x)
	ws, _ := e.shape(w)
	gs, _ := e.shape(g)
	if e.Err != nil {
		return nil
	}
	if len(xs) != 4 || len(ws) != 4 || len(gs) != 4 {
		e.Fail("internal error: conv2d of ranks %d and %d", len(xs), len(ws))
		return nil
	}
	n, c, o, groups := xs[0], xs[1], ws[0], p.Groups
	cg, og := ws[1], o/groups

	// gx: the convolution of g dilated by the strides by the flipped,
	// transposed kernel.
	gd := e.dilate(e.dilate(g, 2, p.Strides[0]), 3, p.Strides[1])
	// (Flipped last: the swap is views, the flips gathers, so that the
	// kernel is one buffer the convolution reads.)
	wt := e.reshape(e.transpose(e.reshape(w, []int64{groups, og, cg, ws[2], ws[3]}), []int64{0, 2, 1, 3, 4}), []int64{c, og, ws[2], ws[3]})
	wt = e.flip(e.flip(wt, 2), 3)
	gx := e.convTranspose(gd, wt, xs, p, [2]int64{p.Dilations[0] * (ws[2] - 1), p.Dilations[1] * (ws[3] - 1)}, groups, "")

	// gw.
	xt := e.reshape(e.transpose(e.reshape(x, []int64{n, groups, cg, xs[2], xs[3]}), []int64{2, 1, 0, 3, 4}), []int64{cg, groups * n, xs[2], xs[3]})
	gt := e.reshape(e.transpose(e.reshape(g, []int64{n, groups, og, gs[2], gs[3]}), []int64{1, 2, 0, 3, 4}), []int64{o, n, gs[2], gs[3]})
	r := e.conv2d(xt, gt, p.Dilations, p.Padding, p.Strides, groups)
	gw := e.transpose(e.window(r, make([]int64, 4), []int64{cg, o, ws[2], ws[3]}), []int64{1, 0, 2, 3})

	if p.ChannelsLast {
		gx, gw = e.transpose(gx, graph.NHWCOfNCHW), e.transpose(gw, graph.NHWCOfNCHW)
	}
	out := []*ir.Value{gx, gw}
	if op.NumOperands() == 3 {
		out = append(out, e.Reduce(graph.OpReduceSum, g, []int64{0, 2, 3}, false))
	}
	return out
}

// conv2dGradNHWC differentiates a channels-last convolution of one
// group, x [N, H, W, C], w [O, KH, KW, C], g [N, OH, OW, O], as
// conv2dGrad does in NCHW, with channels-last convolutions only, so that
// a training step stored channels last stays so in its backward pass:
//
//	gx: g dilated by the strides, convolved with w transposed to
//	    [C, KH, KW, O] and flipped; for an unpadded strided 1×1 kernel
//	    (ResNet's downsampling projections), g convolved with w
//	    transposed, then spread to the strided positions (spreadNHWC):
//	    the dilated form multiplied s_h·s_w times as many zeros.
//	gw: x transposed to [C, H, W, N] (the batch made the channels)
//	    convolved with g transposed to [O, OH, OW, N] as the kernel,
//	    strides and dilations swapped: r [C, KH', KW', O], whose first
//	    KH×KW positions, transposed to [O, KH, KW, C], are gw. (The
//	    library's filter gradient reads x and g themselves: togpu's
//	    filterGradientPlan.)
func conv2dGradNHWC(e *emitter, op *ir.Operation, g *ir.Value, p graph.Conv2DParams) []*ir.Value {
	x, w := op.Operand(0), op.Operand(1)
	xs, _ := e.shape(x)
	ws, _ := e.shape(w)
	if e.Err != nil {
		return nil
	}
	if len(xs) != 4 || len(ws) != 4 {
		e.Fail("internal error: conv2d of ranks %d and %d", len(xs), len(ws))
		return nil
	}
	swap := []int64{3, 1, 2, 0} // [A, H, W, B] ↔ [B, H, W, A]
	var gx *ir.Value
	if ws[1] == 1 && ws[2] == 1 && p.Padding == [4]int64{} && p.Strides != [2]int64{1, 1} {
		unit := [2]int64{1, 1}
		gx = e.spreadNHWC(e.conv2dLayout(g, e.transpose(w, swap), unit, [4]int64{}, unit, 1, graph.LayoutNHWC), p.Strides, xs)
	} else {
		gd := e.dilate(e.dilate(g, 1, p.Strides[0]), 2, p.Strides[1])
		wt := e.flip(e.flip(e.transpose(w, swap), 1), 2)
		gx = e.convTranspose(gd, wt, xs, p, [2]int64{p.Dilations[0] * (ws[1] - 1), p.Dilations[1] * (ws[2] - 1)}, 1, graph.LayoutNHWC)
	}

	r := e.conv2dLayout(e.transpose(x, swap), e.transpose(g, swap), p.Dilations, p.Padding, p.Strides, 1, graph.LayoutNHWC)
	gw := e.transpose(e.window(r, make([]int64, 4), []int64{ws[3], ws[1], ws[2], ws[0]}), swap)
	out := []*ir.Value{gx, gw}
	if op.NumOperands() == 3 {
		out = append(out, e.Reduce(graph.OpReduceSum, g, []int64{0, 1, 2}, false))
	}
	return out
}

// spreadNHWC places v [N, OH, OW, C] at the strided positions
// (s_h·i, s_w·j) of a zero tensor of shape xs [N, H, W, C]: one pad of v
// viewed as [N, OH, 1, OW, 1, C], the result viewed as
// [N, OH·s_h, OW·s_w, C] and cut (or padded) to xs.
func (e *emitter) spreadNHWC(v *ir.Value, s [2]int64, xs []int64) *ir.Value {
	vs, _ := e.shape(v)
	if e.Err != nil {
		return nil
	}
	n, oh, ow, c := vs[0], vs[1], vs[2], vs[3]
	cur := e.pad(e.reshape(v, []int64{n, oh, 1, ow, 1, c}), make([]int64, 6), []int64{0, 0, s[0] - 1, 0, s[1] - 1, 0})
	return e.window(e.reshape(cur, []int64{n, oh * s[0], ow * s[1], c}), make([]int64, 4), xs)
}

// convTranspose returns the input gradient of a convolution of
// parameters p (xs the input's shape, span its dilated kernel's extent
// less one, (h, w)) from gd, the output gradient dilated by the strides,
// and wt, the flipped, transposed kernel. That is the full convolution
// of gd by wt (padding span on every side) cut to the window of the
// input, at the forward padding's offset; when the padding that yields
// exactly that window directly is the same on both sides of each
// dimension (every unstrided convolution whose padding is symmetric and
// at most span: ResNet's 3×3 ones), the convolution with it computes no
// more than the window, a convolution the libraries take (cuDNN pads both
// sides alike). Layer 4's 3×3 convolutions of ResNet-50 computed 9×9
// outputs for a 7×7 gradient in the full form. With layout NHWC the
// operands are channels last (gd [N, OH', OW', O], wt [C, KH, KW, O],
// xs [N, H, W, C]); "" is NCHW.
func (e *emitter) convTranspose(gd, wt *ir.Value, xs []int64, p graph.Conv2DParams, span [2]int64, groups int64, layout string) *ir.Value {
	gs, _ := e.shape(gd)
	if e.Err != nil {
		return nil
	}
	sp := 2 // the first spatial dim: NCHW's H, or NHWC's (1)
	if layout == graph.LayoutNHWC {
		sp = 1
	}
	var direct [4]int64 // top, left, bottom, right
	exact := true
	for d := range 2 {
		// Row r of the window is row r + padding of the full convolution:
		// padding span - p before, and after as many rows as make xs's.
		direct[d] = span[d] - p.Padding[d]
		direct[2+d] = xs[sp+d] - gs[sp+d] + p.Padding[d]
		exact = exact && direct[d] >= 0 && direct[d] == direct[2+d]
	}
	if exact {
		return e.conv2dLayout(gd, wt, [2]int64{1, 1}, direct, p.Dilations, groups, layout)
	}
	full := e.conv2dLayout(gd, wt, [2]int64{1, 1}, [4]int64{span[0], span[1], span[0], span[1]}, p.Dilations, groups, layout)
	at := make([]int64, 4)
	at[sp], at[sp+1] = p.Padding[0], p.Padding[1]
	return e.window(full, at, xs)
}

// conv2d builds a convolution of x by w without bias.
func (e *emitter) conv2d(x, w *ir.Value, strides [2]int64, padding [4]int64, dilations [2]int64, groups int64) *ir.Value {
	return e.conv2dLayout(x, w, strides, padding, dilations, groups, "")
}

// conv2dLayout builds a convolution of x by w without bias in layout
// ("" or "NCHW": NCHW, "NHWC": channels last).
func (e *emitter) conv2dLayout(x, w *ir.Value, strides [2]int64, padding [4]int64, dilations [2]int64, groups int64, layout string) *ir.Value {
	attrs := []ir.NamedAttr{
		{Name: "strides", Value: graph.Ints(strides[:]...)},
		{Name: "padding", Value: graph.Ints(padding[:]...)},
		{Name: "dilations", Value: graph.Ints(dilations[:]...)},
		{Name: "groups", Value: ir.IntegerAttr{Value: groups, Type: ir.I64}},
	}
	if layout == graph.LayoutNHWC {
		attrs = append(attrs, ir.NamedAttr{Name: "layout", Value: ir.StringAttr{Value: layout}})
	}
	return e.Op(graph.OpConv2D, []*ir.Value{x, w}, attrs...)
}

// flip reverses x along dim d, gathering with the indices n-1, …, 0. The
// indices are computed (n-1 - iota), not a dense constant: a constant
// index tensor would be filled by host-side stores, which a GPU launch
// plan cannot run, while iota and a splat fuse into the gather's kernel.
func (e *emitter) flip(x *ir.Value, d int) *ir.Value {
	xs, _ := e.shape(x)
	if e.Err != nil || xs[d] == 1 {
		return x
	}
	it := ir.TensorOf([]int64{xs[d]}, ir.I64)
	last := e.Op(graph.OpConstant, nil, ir.NamedAttr{Name: "value", Value: ir.DenseAttr{Type: it, Bits: []uint64{uint64(xs[d] - 1)}, Splat: true}})
	pos := e.Typed(graph.OpIota, nil, it, ir.NamedAttr{Name: "axis", Value: ir.IntegerAttr{Value: 0, Type: ir.I64}})
	idx := e.Binary(graph.OpSub, last, pos)
	return e.Op(graph.OpGather, []*ir.Value{x, idx}, ir.NamedAttr{Name: "axis", Value: ir.IntegerAttr{Value: int64(d), Type: ir.I64}})
}

// window returns the part of x of the given shape starting at start,
// zero-filled where it extends past x's end.
func (e *emitter) window(x *ir.Value, start, shape []int64) *ir.Value {
	xs, elem := e.shape(x)
	if e.Err != nil {
		return nil
	}
	lo, hi, pad := make([]int64, len(xs)), make([]int64, len(xs)), make([]int64, len(xs))
	for d := range xs {
		lo[d] = min(start[d], xs[d])
		hi[d] = min(start[d]+shape[d], xs[d])
		pad[d] = shape[d] - (hi[d] - lo[d])
		if hi[d] == lo[d] {
			return e.zeros(ir.TensorOf(shape, elem))
		}
	}
	zero := make([]int64, len(xs))
	if !slices.Equal(lo, zero) || !slices.Equal(hi, xs) {
		x = e.slice(x, lo, hi, ones(len(xs)))
	}
	if !slices.Equal(pad, zero) {
		x = e.pad(x, zero, pad)
	}
	return x
}

// softmaxGrad: for y = softmax(x), y·(g - Σ g·y); for y = log_softmax(x),
// g - e^y·Σ g; sums along the axis.
func softmaxGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	y := op.Result(0)
	ys, _ := e.shape(y)
	if e.Err != nil {
		return nil
	}
	axes := []int64{e.normAxis(graph.Axis(op), len(ys))}
	if op.Name() == graph.OpLogSoftmax {
		return []*ir.Value{e.sub(g, e.mul(e.Unary(graph.OpExp, y), e.Reduce(graph.OpReduceSum, g, axes, true)))}
	}
	return []*ir.Value{e.mul(y, e.sub(g, e.Reduce(graph.OpReduceSum, e.mul(g, y), axes, true)))}
}

// logSumExpGrad: for y = logsumexp(x), g·exp(x - y), y and g broadcast
// back along the axis. It reads only x and y, so the partition saves
// nothing of x's size for it beyond x.
func logSumExpGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	x := op.Operand(0)
	xs, _ := e.shape(x)
	axis := e.normAxis(graph.Axis(op), len(xs))
	if e.Err != nil {
		return nil
	}
	kept := keptShape(xs, []int64{axis})
	back := func(v *ir.Value) *ir.Value { return e.broadcast(e.reshape(v, kept), xs) }
	return []*ir.Value{e.mul(back(g), e.Unary(graph.OpExp, e.sub(x, back(op.Result(0)))))}
}

// normGrad differentiates layer_norm and rms_norm over dims axis…rank-1.
// With r = 1/√(var + ε) and x̂ the normalized input, ĝ = g·w:
//
//	layer_norm: gx = r·(ĝ - mean(ĝ) - x̂·mean(ĝ·x̂)), gw = Σ g·x̂, gb = Σ g
//	rms_norm:   gx = r·(ĝ - x·r²·mean(ĝ·x)),         gw = Σ g·x·r
//
// where the sums for w and b run over the leading (batch) dims.
func normGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	x, w := op.Operand(0), op.Operand(1)
	xs, elem := e.shape(x)
	ws, _ := e.shape(w)
	if e.Err != nil {
		return nil
	}
	axis := e.normAxis(graph.Axis(op), len(xs))
	var axes []int64
	for d := axis; d < int64(len(xs)); d++ {
		axes = append(axes, d)
	}
	eps := e.Scalar(elem, graph.Epsilon(op))
	gh := e.mul(g, w)
	if op.Name() == graph.OpRMSNorm {
		r := e.Unary(graph.OpReciprocal, e.Unary(graph.OpSqrt, e.add(e.Reduce(graph.OpReduceMean, e.mul(x, x), axes, true), eps)))
		gx := e.mul(r, e.sub(gh, e.mul(e.mul(x, e.mul(r, r)), e.Reduce(graph.OpReduceMean, e.mul(gh, x), axes, true))))
		return []*ir.Value{gx, e.unbroadcast(e.mul(g, e.mul(x, r)), ws)}
	}
	bs, _ := e.shape(op.Operand(2))
	xc := e.sub(x, e.Reduce(graph.OpReduceMean, x, axes, true))
	r := e.Unary(graph.OpReciprocal, e.Unary(graph.OpSqrt, e.add(e.Reduce(graph.OpReduceMean, e.mul(xc, xc), axes, true), eps)))
	xh := e.mul(xc, r)
	inner := e.sub(e.sub(gh, e.Reduce(graph.OpReduceMean, gh, axes, true)), e.mul(xh, e.Reduce(graph.OpReduceMean, e.mul(gh, xh), axes, true)))
	return []*ir.Value{e.mul(r, inner), e.unbroadcast(e.mul(g, xh), ws), e.unbroadcast(g, bs)}
}

// attentionGrad emits graph.attention_grad for an attention without a
// mask over equal batch dims; otherwise it recomputes p = softmax(s),
// s = q·kᵀ·scale (+ mask), and differentiates out = p·v:
//
//	gv = pᵀ·g, gs = p·(g·vᵀ - Σ (g·vᵀ)·p), gq = gs·k·scale, gk = gsᵀ·q·scale
//
// A float mask receives gs (summed to its shape); an i1 mask nothing.
func attentionGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	q, k, v := op.Operand(0), op.Operand(1), op.Operand(2)
	qs, elem := e.shape(q)
	ks, _ := e.shape(k)
	vs, _ := e.shape(v)
	if e.Err != nil {
		return nil
	}
	if len(qs) < 2 || len(ks) < 2 || len(vs) < 2 {
		e.Fail("q, k and v must have rank >= 2")
		return nil
	}
	if op.NumOperands() == 3 && slices.Equal(qs[:len(qs)-2], ks[:len(ks)-2]) && slices.Equal(qs[:len(qs)-2], vs[:len(vs)-2]) {
		// The fused form, which graph-attention-to-flash runs as kernels.
		var attrs []ir.NamedAttr
		if a := op.Attr("scale"); a != nil {
			attrs = append(attrs, ir.NamedAttr{Name: "scale", Value: a})
		}
		if graph.Causal(op) {
			attrs = append(attrs, ir.NamedAttr{Name: "causal", Value: ir.Bool(true)})
		}
		return e.Results(graph.OpAttentionGrad, []*ir.Value{q, k, v, op.Result(0), g}, attrs...)
	}
	scale, ok := graph.Scale(op)
	if !ok {
		scale = 1 / math.Sqrt(float64(qs[len(qs)-1]))
	}
	s := e.mulc(e.Op(graph.OpMatmul, []*ir.Value{q, e.mT(k)}), scale)
	var mask *ir.Value
	if op.NumOperands() == 4 {
		mask = op.Operand(3)
		if ir.ElementTypeOf(mask.Type()) == ir.I1 {
			s = e.sel(mask, s, e.Scalar(elem, math.Inf(-1)))
		} else {
			s = e.add(s, mask)
		}
	}
	if graph.Causal(op) {
		lq, lk := qs[len(qs)-2], ks[len(ks)-2]
		pos := ir.TensorOf([]int64{lq, lk}, ir.I64)
		row := e.Typed(graph.OpIota, nil, pos, ir.NamedAttr{Name: "axis", Value: ir.IntegerAttr{Value: 0, Type: ir.I64}})
		col := e.Typed(graph.OpIota, nil, pos, ir.NamedAttr{Name: "axis", Value: ir.IntegerAttr{Value: 1, Type: ir.I64}})
		s = e.sel(e.cmp("le", col, row), s, e.Scalar(elem, math.Inf(-1)))
	}
	last := []int64{-1}
	ex := e.Unary(graph.OpExp, e.sub(s, e.Reduce(graph.OpReduceMax, s, last, true)))
	p := e.div(ex, e.Reduce(graph.OpReduceSum, ex, last, true))

	gv := e.Op(graph.OpMatmul, []*ir.Value{e.mT(p), g})
	gp := e.Op(graph.OpMatmul, []*ir.Value{g, e.mT(v)})
	gs := e.mul(p, e.sub(gp, e.Reduce(graph.OpReduceSum, e.mul(gp, p), []int64{-1}, true)))
	gq := e.mulc(e.Op(graph.OpMatmul, []*ir.Value{gs, k}), scale)
	gk := e.mulc(e.Op(graph.OpMatmul, []*ir.Value{e.mT(gs), q}), scale)
	out := []*ir.Value{e.unbroadcast(gq, qs), e.unbroadcast(gk, ks), e.unbroadcast(gv, vs)}
	if mask != nil {
		var gm *ir.Value
		if isFloatTensor(mask.Type()) {
			ms, _ := e.shape(mask)
			gm = e.unbroadcast(gs, ms)
		}
		out = append(out, gm)
	}
	return out
}

// ones returns n ones.
func ones(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}
