package interp

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// The graph dialect. Every op computes on whole tensors in its element
// type's precision: each primitive rounds its results to the element type
// (f32 results are float32 values, f16 and bf16 round to nearest even).
// Composites compute in graph.ComputeType of their element type, as
// PyTorch does: f16 and bf16 operands are widened to f32, every step is
// rounded to f32 as the decomposition's f32 primitives would round it, and
// the result is rounded to the element type once (attention rounds its
// probabilities once, before the second product). Sums, matmul and conv2d
// accumulate in float32 for f32, f16 and bf16 (float64 for f64). Scalar
// semantics come from dialects/graph, shared with its folder.
func init() {
	table := map[string]Rule{
		graph.OpConstant:      graphConstant,
		graph.OpIota:          graphIota,
		graph.OpFull:          graphFull,
		graph.OpCmp:           graphCmp,
		graph.OpSelect:        graphSelect,
		graph.OpCast:          graphCast,
		graph.OpReduceSum:     graphReduce,
		graph.OpReduceMax:     graphReduce,
		graph.OpReduceMin:     graphReduce,
		graph.OpReduceMean:    graphReduce,
		graph.OpArgmax:        graphArgmax,
		graph.OpReshape:       graphReshape,
		graph.OpTranspose:     graphTranspose,
		graph.OpBroadcastTo:   graphBroadcastTo,
		graph.OpConcat:        graphConcat,
		graph.OpSlice:         graphSlice,
		graph.OpPad:           graphPad,
		graph.OpGather:        graphGather,
		graph.OpScatterAdd:    graphScatterAdd,
		graph.OpMatmul:        graphMatmul,
		graph.OpConv2D:        graphConv2D,
		graph.OpSoftmax:       graphSoftmax,
		graph.OpLogSoftmax:    graphSoftmax,
		graph.OpLogSumExp:     graphLogSumExp,
		graph.OpLayerNorm:     graphNorm,
		graph.OpRMSNorm:       graphNorm,
		graph.OpAttention:     graphAttention,
		graph.OpAttentionGrad: graphAttentionGrad,
		graph.OpFusion:        graphFusion,
		graph.OpYield:         func(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) { return args, nil },
	}
	for _, name := range []string{graph.OpNeg, graph.OpAbs, graph.OpExp, graph.OpLog, graph.OpSqrt, graph.OpRsqrt, graph.OpTanh,
		graph.OpSigmoid, graph.OpRelu, graph.OpGELU, graph.OpErf, graph.OpSin, graph.OpCos, graph.OpReciprocal} {
		table[name] = graphUnary(name)
	}
	for _, name := range []string{graph.OpAdd, graph.OpSub, graph.OpMul, graph.OpDiv, graph.OpPow, graph.OpMax, graph.OpMin} {
		table[name] = graphBinary(name)
	}
	registerAll(table)
}

// tensorArgs returns the operands as tensors.
func tensorArgs(args []Value) ([]*Tensor, error) {
	ts := make([]*Tensor, len(args))
	for i, a := range args {
		t, ok := a.(*Tensor)
		if !ok {
			return nil, fmt.Errorf("operand %d is %s, not a tensor", i, a)
		}
		ts[i] = t
	}
	return ts, nil
}

// one wraps a single result.
func one(t *Tensor, err error) ([]Value, error) {
	if err != nil {
		return nil, err
	}
	return []Value{t}, nil
}

// rounder returns the rounding of a float64 to elem.
func rounder(elem ir.Type) func(float64) float64 {
	switch elem {
	case ir.F64:
		return func(x float64) float64 { return x }
	case ir.F32:
		return func(x float64) float64 { return float64(float32(x)) }
	}
	ft := elem.(*ir.FloatType)
	return func(x float64) float64 { return ir.RoundToType(x, ft) }
}

// accRounder returns the rounding of the accumulator used for elem:
// float64 for f64, float32 otherwise.
func accRounder(elem ir.Type) func(float64) float64 {
	if elem == ir.F64 {
		return rounder(ir.F64)
	}
	return rounder(ir.F32)
}

// staticShape returns the shape of op's result #0 when it is static.
func staticShape(op *ir.Operation) ([]int64, bool) {
	t, ok := op.Result(0).Type().(*ir.TensorType)
	if !ok || !t.Ranked() || ir.NumElements(t.Shape()) < 0 {
		return nil, false
	}
	return t.Shape(), true
}

// symbolicShape is the shape of v's ranked tensor type with its dynamic
// sizes computed from f's symbols (those of the function's arguments'
// #graph.dims).
func symbolicShape(f *Frame, v *ir.Value) ([]int64, error) {
	t, ok := v.Type().(*ir.TensorType)
	if !ok || !t.Ranked() {
		return nil, fmt.Errorf("result of type %s, want a ranked tensor", v.Type())
	}
	shape := slices.Clone(t.Shape())
	dims := graph.DimsOf(t)
	for i, n := range shape {
		if n != ir.Dynamic {
			continue
		}
		s, err := dims[i].Eval(f.syms)
		if err != nil || graph.IsUnknown(dims[i]) {
			return nil, fmt.Errorf("result type %s: dim %d is no size of the function's arguments", t, i)
		}
		shape[i] = s
	}
	return shape, nil
}

func resultElem(op *ir.Operation) ir.Type { return ir.ElementTypeOf(op.Result(0).Type()) }

// intsAttr reads op's integer-list attribute name.
func intsAttr(op *ir.Operation, name string) ([]int64, bool) { return graph.IntList(op.Attr(name)) }

// axisAttr reads op's axis attribute (graph.Axis, with the row's default)
// and normalizes it against rank.
func axisAttr(op *ir.Operation, rank int) (int, error) {
	a := graph.Axis(op)
	if a < -int64(rank) || a >= int64(rank) {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", a, rank)
	}
	if a < 0 {
		a += int64(rank)
	}
	return int(a), nil
}

// scalarBits encodes a fill or padding attribute in elem.
func scalarBits(a ir.Attribute, elem ir.Type) uint64 {
	switch a := a.(type) {
	case ir.FloatAttr:
		if ft, ok := elem.(*ir.FloatType); ok {
			return ir.FloatToBits(a.Value(), ft)
		}
		return uint64(graph.FloatToInt(a.Value(), elem))
	case ir.IntegerAttr:
		if ft, ok := elem.(*ir.FloatType); ok {
			return ir.FloatToBits(float64(a.Value), ft)
		}
		return uint64(ir.TruncInt(a.Value, elem))
	}
	return 0
}

func graphConstant(_ *Frame, op *ir.Operation, _ []Value) ([]Value, error) {
	d, ok := op.Attr("value").(ir.DenseAttr)
	if !ok {
		return nil, errors.New("has no dense 'value'")
	}
	return one(FromBits(d.Type.ElementType(), d.Type.Shape(), d.Bits))
}

func graphFull(_ *Frame, op *ir.Operation, _ []Value) ([]Value, error) {
	shape, ok := staticShape(op)
	if !ok {
		return nil, errors.New("needs a static result shape")
	}
	return one(FromBits(resultElem(op), shape, []uint64{scalarBits(op.Attr("fill"), resultElem(op))}))
}

func graphIota(f *Frame, op *ir.Operation, _ []Value) ([]Value, error) {
	shape, err := symbolicShape(f, op.Result(0))
	if err != nil {
		return nil, err
	}
	axis, err := axisAttr(op, len(shape))
	if err != nil {
		return nil, err
	}
	if _, err := reserve(resultElem(op), shape); err != nil {
		return nil, err
	}
	inner := ir.NumElements(shape[axis+1:])
	n := ir.NumElements(shape)
	elem := resultElem(op)
	if ir.IsFloat(elem) {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = float64(int64(i) / inner % shape[axis])
		}
		return one(FromFloat64s(elem, shape, vs))
	}
	vs := make([]int64, n)
	for i := range vs {
		vs[i] = int64(i) / inner % shape[axis]
	}
	return one(FromInt64s(elem, shape, vs))
}

func graphUnary(name string) Rule {
	return func(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
		ts, err := tensorArgs(args)
		if err != nil {
			return nil, err
		}
		x := ts[0]
		if ir.IsFloat(x.elem) {
			f := graph.UnaryFloatFunc(name, graph.Approximate(op), x.elem)
			if o, ok := x.data.([]float32); ok { // the common case, without a float64 copy
				out := make([]float32, len(o))
				for i, v := range o {
					out[i] = float32(f(float64(v)))
				}
				return one(FromData(x.elem, x.shape, out))
			}
			vs := x.Float64s()
			for i, v := range vs {
				vs[i] = f(v)
			}
			return one(FromFloat64s(x.elem, x.shape, vs))
		}
		f := graph.UnaryIntFunc(name)
		if f == nil || x.elem == ir.I1 {
			return nil, fmt.Errorf("is not defined on %s", x.elem)
		}
		vs := x.Int64s()
		for i, v := range vs {
			vs[i] = f(v)
		}
		return one(FromInt64s(x.elem, x.shape, vs))
	}
}

// broadcast2 returns the broadcast shape of a and b and, for each, the
// index of the element read at each result position (nil when the operand
// already has the result's shape).
func broadcast2(a, b *Tensor) ([]int64, []int64, []int64, error) {
	shape, ok := graph.BroadcastShape(a.shape, b.shape)
	if !ok {
		return nil, nil, nil, fmt.Errorf("operands %s and %s do not broadcast", a, b)
	}
	if _, err := reserve(a.elem, shape); err != nil {
		return nil, nil, nil, err
	}
	return shape, broadcastIdx(shape, a.shape), broadcastIdx(shape, b.shape), nil
}

func broadcastIdx(out, in []int64) []int64 {
	if slices.Equal(out, in) {
		return nil
	}
	return graph.BroadcastIndex(out, in)
}

func at(idx []int64, i int) int {
	if idx == nil {
		return i
	}
	return int(idx[i])
}

func graphBinary(name string) Rule {
	ff, fi := graph.BinaryFloatFunc(name), graph.BinaryIntFunc(name)
	return func(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
		ts, err := tensorArgs(args)
		if err != nil {
			return nil, err
		}
		a, b := ts[0], ts[1]
		if a.elem != b.elem {
			return nil, fmt.Errorf("operands have different element types: %s vs %s", a, b)
		}
		shape, ia, ib, err := broadcast2(a, b)
		if err != nil {
			return nil, err
		}
		n := int(ir.NumElements(shape))
		if ir.IsFloat(a.elem) {
			if xa, ok := a.data.([]float32); ok { // float32 fast path
				xb := b.data.([]float32)
				out := make([]float32, n)
				for i := range out {
					out[i] = float32(ff(float64(xa[at(ia, i)]), float64(xb[at(ib, i)])))
				}
				return one(FromData(a.elem, shape, out))
			}
			xa, xb := a.Float64s(), b.Float64s()
			out := make([]float64, n)
			for i := range out {
				out[i] = ff(xa[at(ia, i)], xb[at(ib, i)])
			}
			return one(FromFloat64s(a.elem, shape, out))
		}
		if a.elem == ir.I1 {
			return nil, fmt.Errorf("is not defined on i1")
		}
		xa, xb := a.Int64s(), b.Int64s()
		out := make([]int64, n)
		for i := range out {
			out[i] = fi(xa[at(ia, i)], xb[at(ib, i)])
		}
		return one(FromInt64s(a.elem, shape, out))
	}
}

func graphCmp(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	a, b := ts[0], ts[1]
	shape, ia, ib, err := broadcast2(a, b)
	if err != nil {
		return nil, err
	}
	pred := graph.Predicate(op)
	ff, fi := graph.CmpFloatFunc(pred), graph.CmpIntFunc(pred)
	if ff == nil {
		return nil, fmt.Errorf("unknown predicate %q", pred)
	}
	out := make([]int64, ir.NumElements(shape))
	if ir.IsFloat(a.elem) {
		xa, xb := a.Float64s(), b.Float64s()
		for i := range out {
			if ff(xa[at(ia, i)], xb[at(ib, i)]) {
				out[i] = 1
			}
		}
	} else {
		xa, xb := a.Int64s(), b.Int64s()
		for i := range out {
			if fi(xa[at(ia, i)], xb[at(ib, i)]) {
				out[i] = 1
			}
		}
	}
	return one(FromInt64s(ir.I1, shape, out))
}

func graphSelect(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	c, a, b := ts[0], ts[1], ts[2]
	shape, ok := graph.BroadcastShape(c.shape, a.shape)
	if ok {
		shape, ok = graph.BroadcastShape(shape, b.shape)
	}
	if !ok {
		return nil, fmt.Errorf("operands %s, %s and %s do not broadcast", c, a, b)
	}
	if _, err := reserve(a.elem, shape); err != nil {
		return nil, err
	}
	ic, ia, ib := broadcastIdx(shape, c.shape), broadcastIdx(shape, a.shape), broadcastIdx(shape, b.shape)
	xc, xa, xb := c.Int64s(), a.Bits(), b.Bits()
	out := make([]uint64, ir.NumElements(shape))
	for i := range out {
		if xc[at(ic, i)] != 0 {
			out[i] = xa[at(ia, i)]
		} else {
			out[i] = xb[at(ib, i)]
		}
	}
	return one(fromBitsExact(a.elem, shape, out))
}

// fromBitsExact is FromBits without the splat of a single pattern over a
// larger shape (out always has one pattern per element).
func fromBitsExact(elem ir.Type, shape []int64, bits []uint64) (*Tensor, error) {
	if len(bits) == 0 {
		return NewTensor(elem, shape)
	}
	return FromBits(elem, shape, bits)
}

func graphCast(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	x, to := ts[0], resultElem(op)
	switch {
	case ir.IsFloat(x.elem) && ir.IsFloat(to):
		return one(FromFloat64s(to, x.shape, x.Float64s()))
	case ir.IsFloat(x.elem):
		vs := x.Float64s()
		out := make([]int64, len(vs))
		for i, v := range vs {
			out[i] = graph.FloatToInt(v, to)
		}
		return one(FromInt64s(to, x.shape, out))
	case ir.IsFloat(to):
		vs := x.Int64s()
		out := make([]float64, len(vs))
		for i, v := range vs {
			out[i] = float64(v)
		}
		return one(FromFloat64s(to, x.shape, out))
	}
	vs := x.Int64s()
	if to == ir.I1 {
		for i, v := range vs {
			if v != 0 {
				vs[i] = 1
			}
		}
	}
	return one(FromInt64s(to, x.shape, vs))
}

// reduceLayout maps each element of shape to its slot in the reduction over
// axes: it returns the reduced shape (without keepdims) and the slot of
// every input element.
func reduceLayout(shape []int64, axes []int) ([]int64, []int64) {
	var outShape []int64
	stride := make([]int64, len(shape))
	s := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		if !slices.Contains(axes, d) {
			stride[d] = s
			s *= shape[d]
		}
	}
	for d, n := range shape {
		if !slices.Contains(axes, d) {
			outShape = append(outShape, n)
		}
	}
	n := ir.NumElements(shape)
	slot := make([]int64, n)
	pos := make([]int64, len(shape))
	var cur int64
	for k := range n {
		slot[k] = cur
		for d := len(shape) - 1; d >= 0; d-- {
			pos[d]++
			cur += stride[d]
			if pos[d] < shape[d] {
				break
			}
			cur -= stride[d] * pos[d]
			pos[d] = 0
		}
	}
	return outShape, slot
}

// reduceAxesOf returns op's normalized axes attribute (all axes if absent).
func reduceAxesOf(op *ir.Operation, rank int) ([]int, error) {
	vs, ok := intsAttr(op, "axes")
	if !ok {
		all := make([]int, rank)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	out := make([]int, len(vs))
	for i, a := range vs {
		if a < -int64(rank) || a >= int64(rank) {
			return nil, fmt.Errorf("axis %d is out of range for rank %d", a, rank)
		}
		if a < 0 {
			a += int64(rank)
		}
		out[i] = int(a)
	}
	return out, nil
}

// keptShape is the result shape of a reduction, with or without keepdims.
func keptShape(shape []int64, axes []int, reduced []int64, keepdims bool) []int64 {
	if !keepdims {
		return reduced
	}
	out := slices.Clone(shape)
	for _, a := range axes {
		out[a] = 1
	}
	return out
}

func graphReduce(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	axes, err := reduceAxesOf(op, len(x.shape))
	if err != nil {
		return nil, err
	}
	reduced, slot := reduceLayout(x.shape, axes)
	shape := keptShape(x.shape, axes, reduced, graph.KeepDims(op))
	m := ir.NumElements(reduced)
	count := float64(ir.NumElements(x.shape)) / float64(max(m, 1))
	kind := op.Name()
	if ir.IsFloat(x.elem) {
		acc := accRounder(x.elem)
		out := make([]float64, m)
		init := map[string]float64{graph.OpReduceMax: math.Inf(-1), graph.OpReduceMin: math.Inf(1)}[kind]
		for i := range out {
			out[i] = init
		}
		for k, v := range x.Float64s() {
			o := &out[slot[k]]
			switch kind {
			case graph.OpReduceMax:
				if v > *o || v != v {
					*o = v
				}
			case graph.OpReduceMin:
				if v < *o || v != v {
					*o = v
				}
			default:
				if *o == *o { // once NaN, stays NaN
					*o = acc(*o + v)
				}
			}
		}
		if kind == graph.OpReduceMean {
			for i := range out {
				out[i] = acc(out[i] / count)
			}
		}
		return one(FromFloat64s(x.elem, shape, out))
	}
	out := make([]int64, m)
	bits := ir.IntWidth(x.elem)
	lo, hi := int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
	for i := range out {
		switch kind {
		case graph.OpReduceMax:
			out[i] = lo
		case graph.OpReduceMin:
			out[i] = hi
		}
	}
	for k, v := range x.Int64s() {
		o := &out[slot[k]]
		switch kind {
		case graph.OpReduceMax:
			*o = max(*o, v)
		case graph.OpReduceMin:
			*o = min(*o, v)
		default:
			*o += v
		}
	}
	return one(FromInt64s(x.elem, shape, out))
}

// axisLayout splits shape around axis into outer × n × inner.
func axisLayout(shape []int64, axis int) (outer, n, inner int) {
	return int(ir.NumElements(shape[:axis])), int(shape[axis]), int(ir.NumElements(shape[axis+1:]))
}

func graphArgmax(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	axis, err := axisAttr(op, len(x.shape))
	if err != nil {
		return nil, err
	}
	outer, n, inner := axisLayout(x.shape, axis)
	if n == 0 {
		return nil, fmt.Errorf("argmax over an empty axis of %s", x)
	}
	var vs []float64
	if ir.IsFloat(x.elem) {
		vs = x.Float64s()
	}
	is := []int64(nil)
	if vs == nil {
		is = x.Int64s()
	}
	out := make([]int64, outer*inner)
	for o := range outer {
		for in := range inner {
			best := 0
			for j := 1; j < n; j++ {
				k, b := (o*n+j)*inner+in, (o*n+best)*inner+in
				if vs != nil {
					if vs[b] != vs[b] {
						break // the first NaN wins
					}
					if vs[k] > vs[b] || vs[k] != vs[k] {
						best = j
					}
				} else if is[k] > is[b] {
					best = j
				}
			}
			out[o*inner+in] = int64(best)
		}
	}
	shape := keptShape(x.shape, []int{axis}, slices.Delete(slices.Clone(x.shape), axis, axis+1), graph.KeepDims(op))
	return one(FromInt64s(ir.I64, shape, out))
}

// reshaped returns x's data with a new shape.
func reshaped(x *Tensor, shape []int64) (*Tensor, error) {
	return FromData(x.elem, shape, x.data)
}

func graphReshape(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	shape, ok := staticShape(op)
	if !ok {
		// A dynamic result: the shape attribute with its -1 resolved.
		attr, has := intsAttr(op, "shape")
		if !has {
			return nil, errors.New("has a dynamic result type and no 'shape' attribute")
		}
		shape = slices.Clone(attr)
		known := int64(1)
		for _, d := range shape {
			if d >= 0 {
				known *= d
			}
		}
		for i, d := range shape {
			if d == -1 && known > 0 {
				shape[i] = int64(x.Len()) / known
			}
		}
	}
	if ir.NumElements(shape) != int64(x.Len()) {
		return nil, fmt.Errorf("cannot reshape %s to %v", x, shape)
	}
	return one(reshaped(x, shape))
}

// gatherBits builds a tensor of shape whose element at each position is x's
// element at src(position), src given the multi-index.
func gatherBits(x *Tensor, shape []int64, src func(pos []int64) int64) (*Tensor, error) {
	bits := x.Bits()
	n := ir.NumElements(shape)
	out := make([]uint64, n)
	pos := make([]int64, len(shape))
	for k := range n {
		out[k] = bits[src(pos)]
		for d := len(shape) - 1; d >= 0; d-- {
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
	}
	return fromBitsExact(x.elem, shape, out)
}

// strides returns the row-major strides of shape.
func strides(shape []int64) []int64 {
	s := make([]int64, len(shape))
	acc := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		s[d] = acc
		acc *= shape[d]
	}
	return s
}

func graphTranspose(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	perm, _ := intsAttr(op, "perm")
	if len(perm) != len(ts[0].shape) {
		return nil, fmt.Errorf("perm %v does not fit %s", perm, ts[0])
	}
	return one(transposeTensor(ts[0], perm))
}

func graphBroadcastTo(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	shape, _ := intsAttr(op, "shape")
	if b, ok := graph.BroadcastShape(x.shape, shape); !ok || !slices.Equal(b, shape) {
		return nil, fmt.Errorf("cannot broadcast %s to %v", x, shape)
	}
	if _, err := reserve(x.elem, shape); err != nil {
		return nil, err
	}
	idx := graph.BroadcastIndex(shape, x.shape)
	bits := x.Bits()
	out := make([]uint64, len(idx))
	for i, k := range idx {
		out[i] = bits[k]
	}
	return one(fromBitsExact(x.elem, shape, out))
}

func graphConcat(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	axis, err := axisAttr(op, len(ts[0].shape))
	if err != nil {
		return nil, err
	}
	shape := slices.Clone(ts[0].shape)
	shape[axis] = 0
	for _, t := range ts {
		if len(t.shape) != len(shape) || t.elem != ts[0].elem {
			return nil, fmt.Errorf("cannot concatenate %s and %s", ts[0], t)
		}
		shape[axis] += t.shape[axis]
	}
	outer, _, inner := axisLayout(shape, axis)
	var out []uint64
	for o := range outer {
		for _, t := range ts {
			chunk := int(t.shape[axis]) * inner
			out = append(out, t.Bits()[o*chunk:(o+1)*chunk]...)
		}
	}
	return one(fromBitsExact(ts[0].elem, shape, out))
}

func graphSlice(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	starts, _ := intsAttr(op, "starts")
	limits, _ := intsAttr(op, "limits")
	steps, ok := intsAttr(op, "strides")
	if !ok {
		steps = slices.Repeat([]int64{1}, len(x.shape))
	}
	shape := make([]int64, len(x.shape))
	for d := range shape {
		if starts[d] < 0 || limits[d] > x.shape[d] || starts[d] > limits[d] || steps[d] < 1 {
			return nil, fmt.Errorf("slice %v:%v:%v is out of bounds for %s", starts, limits, steps, x)
		}
		shape[d] = (limits[d] - starts[d] + steps[d] - 1) / steps[d]
	}
	st := strides(x.shape)
	return one(gatherBits(x, shape, func(pos []int64) int64 {
		var k int64
		for d, p := range pos {
			k += (starts[d] + p*steps[d]) * st[d]
		}
		return k
	}))
}

func graphPad(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	low, _ := intsAttr(op, "low")
	high, _ := intsAttr(op, "high")
	if len(low) != len(x.shape) || len(high) != len(x.shape) {
		return nil, fmt.Errorf("padding %v, %v does not fit %s", low, high, x)
	}
	shape := make([]int64, len(x.shape))
	for d := range shape {
		// Each term is below 2^63 but the sum may not be: add in float64
		// to tell an overflow from a size.
		if sz := float64(low[d]) + float64(x.shape[d]) + float64(high[d]); sz < 0 || sz >= 1<<62 {
			return nil, fmt.Errorf("padding %v, %v of %s gives dim %d the size %.0f", low, high, x, d, sz)
		}
		shape[d] = low[d] + x.shape[d] + high[d]
	}
	if _, err := reserve(x.elem, shape); err != nil {
		return nil, err
	}
	fill := uint64(0)
	if v := op.Attr("value"); v != nil {
		fill = scalarBits(v, x.elem)
	}
	st := strides(x.shape)
	bits := x.Bits()
	n := ir.NumElements(shape)
	out := make([]uint64, n)
	pos := make([]int64, len(shape))
	for k := range n {
		out[k] = fill
		var src int64
		inside := true
		for d, p := range pos {
			q := p - low[d]
			if q < 0 || q >= x.shape[d] {
				inside = false
				break
			}
			src += q * st[d]
		}
		if inside {
			out[k] = bits[src]
		}
		for d := len(shape) - 1; d >= 0; d-- {
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
	}
	return one(fromBitsExact(x.elem, shape, out))
}

func graphGather(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	x, indices := ts[0], ts[1]
	axis, err := axisAttr(op, len(x.shape))
	if err != nil {
		return nil, err
	}
	outer, n, inner := axisLayout(x.shape, axis)
	idx := indices.Int64s()
	for i, v := range idx {
		if v < -int64(n) || v >= int64(n) {
			return nil, fmt.Errorf("index %d is out of range for axis %d of size %d", v, axis, n)
		}
		if v < 0 {
			idx[i] = v + int64(n)
		}
	}
	shape := slices.Concat(x.shape[:axis], indices.shape, x.shape[axis+1:])
	if _, err := reserve(x.elem, shape); err != nil {
		return nil, err
	}
	bits := x.Bits()
	out := make([]uint64, 0, outer*len(idx)*inner)
	for o := range outer {
		for _, v := range idx {
			start := (o*n + int(v)) * inner
			out = append(out, bits[start:start+inner]...)
		}
	}
	return one(fromBitsExact(x.elem, shape, out))
}

// graphScatterAdd adds updates[o, i, in] into result[o, indices[i], in]
// (indices flattened to i) in the order of i, in the element type (f32 or
// f64, which the verifier requires).
func graphScatterAdd(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	upd, indices := ts[0], ts[1]
	rt, ok := op.Result(0).Type().(*ir.TensorType)
	if !ok || len(upd.shape) < len(indices.shape) {
		return nil, fmt.Errorf("updates %s do not hold indices %s", upd, indices)
	}
	axis, err := axisAttr(op, len(upd.shape)-len(indices.shape)+1)
	if err != nil {
		return nil, err
	}
	size, _ := op.Attr("size").(ir.IntegerAttr)
	if !slices.Equal(upd.shape[axis:axis+len(indices.shape)], indices.shape) {
		return nil, fmt.Errorf("updates %s do not have indices %s at axis %d", upd, indices, axis)
	}
	shape := slices.Concat(upd.shape[:axis], []int64{size.Value}, upd.shape[axis+len(indices.shape):])
	if rt.ElementType() != upd.elem {
		return nil, fmt.Errorf("result %s does not hold updates of %s", rt, upd.elem)
	}
	n := int(size.Value)
	idx := indices.Int64s()
	for i, v := range idx {
		if v < -int64(n) || v >= int64(n) {
			return nil, fmt.Errorf("index %d is out of range for axis %d of size %d", v, axis, n)
		}
		if v < 0 {
			idx[i] = v + int64(n)
		}
	}
	out, err := NewTensor(upd.elem, shape)
	if err != nil {
		return nil, err
	}
	outer, inner := int(ir.NumElements(shape[:axis])), int(ir.NumElements(shape[axis+1:]))
	switch upd.elem {
	case ir.F32:
		scatterAdd(Elems[float32](out), Elems[float32](upd), idx, outer, n, inner)
	case ir.F64:
		scatterAdd(Elems[float64](out), Elems[float64](upd), idx, outer, n, inner)
	default:
		return nil, fmt.Errorf("updates of %s: scatter_add sums f32 or f64", upd.elem)
	}
	return one(out, nil)
}

// scatterAdd adds u[o, i, :] to out[o, idx[i], :] for each o and i in order.
func scatterAdd[T float32 | float64](out, u []T, idx []int64, outer, n, inner int) {
	for o := range outer {
		for i, v := range idx {
			dst := out[(o*n+int(v))*inner:][:inner]
			src := u[(o*len(idx)+i)*inner:][:inner]
			for j := range dst {
				dst[j] += src[j]
			}
		}
	}
}

// floatData returns a float tensor's elements as float32 values (f32, f16,
// bf16, all exact) or float64 values (f64), the precision its products
// accumulate in.
func floatData(t *Tensor) ([]float32, []float64) {
	if t.elem == ir.F64 {
		return nil, t.Float64s()
	}
	if f, ok := t.data.([]float32); ok {
		return f, nil
	}
	vs := t.Float64s()
	out := make([]float32, len(vs))
	for i, v := range vs {
		out[i] = float32(v)
	}
	return out, nil
}

// matmulInto computes c[m×n] += a[m×k] · b[k×n] with the given element
// arithmetic; the i-k-j order streams rows of b.
func matmulInto[T float32 | float64 | int64](c, a, b []T, m, k, n int) {
	for i := range m {
		ci := c[i*n : (i+1)*n]
		for p := range k {
			av := a[i*k+p]
			bp := b[p*n : (p+1)*n]
			for j, bv := range bp {
				ci[j] += T(av * bv) // the conversion forbids fusing into an FMA
			}
		}
	}
}

// batchedMatmul multiplies the matrices of a [batchA…, m, k] and
// b [batchB…, k, n], broadcasting batch dims to batch.
func batchedMatmul[T float32 | float64 | int64](a, b []T, batch, batchA, batchB []int64, m, k, n int) []T {
	nb := int(ir.NumElements(batch))
	ia, ib := broadcastIdx(batch, batchA), broadcastIdx(batch, batchB)
	out := make([]T, nb*m*n)
	for i := range nb {
		sa, sb := at(ia, i), at(ib, i)
		matmulInto(out[i*m*n:(i+1)*m*n], a[sa*m*k:(sa+1)*m*k], b[sb*k*n:(sb+1)*k*n], m, k, n)
	}
	return out
}

func graphMatmul(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	a, b := ts[0], ts[1]
	shape, err := graph.MatmulShape(a.shape, b.shape)
	if err != nil {
		return nil, err
	}
	if a.elem != b.elem {
		return nil, fmt.Errorf("operands have different element types: %s vs %s", a, b)
	}
	as, bs := a.shape, b.shape
	if len(as) == 1 {
		as = []int64{1, as[0]}
	}
	if len(bs) == 1 {
		bs = []int64{bs[0], 1}
	}
	m, k, n := int(as[len(as)-2]), int(as[len(as)-1]), int(bs[len(bs)-1])
	batchA, batchB := as[:len(as)-2], bs[:len(bs)-2]
	batch, _ := graph.BroadcastShape(batchA, batchB)
	var bias *Tensor
	if len(ts) == 3 {
		bias = ts[2]
		if bias.elem != a.elem || len(b.shape) < 2 || len(bias.shape) != 1 || bias.shape[0] != int64(n) {
			return nil, fmt.Errorf("bias %s must be [%d] of %s (the result's last dim)", bias, n, a.elem)
		}
	}
	return one(matmulTensor(a, b, bias, a.elem, shape, batch, batchA, batchB, m, k, n))
}

// matmulTensor runs batchedMatmul in the accumulation type of elem, adds
// bias (nil: none) along the last dim in that type and rounds the result
// to elem once.
func matmulTensor(a, b, bias *Tensor, elem ir.Type, shape, batch, batchA, batchB []int64, m, k, n int) (*Tensor, error) {
	// The operands may hold nothing (k = 0) while the product is huge.
	if _, err := reserve(elem, shape); err != nil {
		return nil, err
	}
	switch {
	case ir.IsFloat(elem):
		fa, da := floatData(a)
		fb, db := floatData(b)
		if da != nil {
			out := batchedMatmul(da, db, batch, batchA, batchB, m, k, n)
			if bias != nil {
				_, bd := floatData(bias)
				addBias(out, bd)
			}
			return FromFloat64s(elem, shape, out)
		}
		out := batchedMatmul(fa, fb, batch, batchA, batchB, m, k, n)
		if bias != nil {
			bf, _ := floatData(bias)
			addBias(out, bf)
		}
		if elem == ir.F32 {
			return FromData(elem, shape, out)
		}
		wide := make([]float64, len(out))
		for i, v := range out {
			wide[i] = float64(v)
		}
		return FromFloat64s(elem, shape, wide)
	case elem == ir.I1:
		return nil, errors.New("is not defined on i1")
	}
	out := batchedMatmul(a.Int64s(), b.Int64s(), batch, batchA, batchB, m, k, n)
	if bias != nil {
		addBias(out, bias.Int64s())
	}
	return FromInt64s(elem, shape, out)
}

// addBias adds bias[j] to every element j of each row of out, whose rows
// are len(bias) long (graph.matmul's bias, added before the rounding).
func addBias[T float32 | float64 | int64](out, bias []T) {
	for i := range out {
		out[i] += bias[i%len(bias)]
	}
}

func graphConv2D(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	x, w := ts[0], ts[1]
	if len(x.shape) != 4 || len(w.shape) != 4 {
		return nil, fmt.Errorf("expects rank-4 input and weight, got %s and %s", x, w)
	}
	p, err := graph.Conv2DParamsOf(op)
	if err != nil {
		return nil, err
	}
	xShape, wShape := x.shape, w.shape
	if p.ChannelsLast {
		xShape, wShape = graph.ToNCHW(xShape), graph.ToNCHW(wShape)
	}
	N, C, H, W := xShape[0], xShape[1], xShape[2], xShape[3]
	O, CG, KH, KW := wShape[0], wShape[1], wShape[2], wShape[3]
	g := p.Groups
	if g < 1 || C%g != 0 || O%g != 0 || C/g != CG {
		return nil, fmt.Errorf("channels of %s and %s do not fit %d groups", x, w, g)
	}
	OH := graph.ConvOutSize(H, KH, p.Padding[0], p.Padding[2], p.Strides[0], p.Dilations[0])
	OW := graph.ConvOutSize(W, KW, p.Padding[1], p.Padding[3], p.Strides[1], p.Dilations[1])
	if OH < 1 || OW < 1 {
		return nil, fmt.Errorf("kernel %s does not fit the input %s", w, x)
	}
	// The operands may hold nothing (no channels) while the result is huge.
	if _, err := reserve(x.elem, []int64{N, O, OH, OW}); err != nil {
		return nil, err
	}
	var xs, ws, bias []float64
	if ir.IsFloat(x.elem) {
		xs, ws = x.Float64s(), w.Float64s()
	} else {
		xs, ws = intsAsFloats(x.Int64s()), intsAsFloats(w.Int64s())
	}
	if p.ChannelsLast {
		// The same sums in the same order, on the operands read
		// channels second.
		xs, ws = permute4(xs, x.shape, graph.NCHWOfNHWC), permute4(ws, w.shape, graph.NCHWOfNHWC)
	}
	if len(ts) == 3 {
		if ir.IsFloat(x.elem) {
			bias = ts[2].Float64s()
		} else {
			bias = intsAsFloats(ts[2].Int64s())
		}
	}
	acc := accRounder(x.elem)
	if !ir.IsFloat(x.elem) {
		acc = func(v float64) float64 { return v }
	}
	out := make([]float64, N*O*OH*OW)
	opg := O / g
	for n := range N {
		for o := range O {
			grp := o / opg
			for oh := range OH {
				for ow := range OW {
					var s float64
					for c := range CG {
						ci := grp*CG + c
						for kh := range KH {
							ih := oh*p.Strides[0] - p.Padding[0] + kh*p.Dilations[0]
							if ih < 0 || ih >= H {
								continue
							}
							for kw := range KW {
								iw := ow*p.Strides[1] - p.Padding[1] + kw*p.Dilations[1]
								if iw < 0 || iw >= W {
									continue
								}
								xv := xs[((n*C+ci)*H+ih)*W+iw]
								wv := ws[((o*CG+c)*KH+kh)*KW+kw]
								s = acc(s + acc(xv*wv))
							}
						}
					}
					if bias != nil {
						s = acc(s + bias[o])
					}
					out[((n*O+o)*OH+oh)*OW+ow] = s
				}
			}
		}
	}
	shape := []int64{N, O, OH, OW}
	if p.ChannelsLast {
		out, shape = permute4(out, shape, graph.NHWCOfNCHW), graph.ToNHWC(shape)
	}
	if ir.IsFloat(x.elem) {
		return one(FromFloat64s(x.elem, shape, out))
	}
	ints := make([]int64, len(out))
	for i, v := range out {
		ints[i] = int64(v)
	}
	return one(FromInt64s(x.elem, shape, ints))
}

// permute4 returns vs, a row-major [s0, s1, s2, s3], transposed by perm:
// element (i0, …, i3) of the result is vs at i_perm⁻¹, as graph.transpose.
func permute4(vs []float64, shape, perm []int64) []float64 {
	out := make([]float64, len(vs))
	var strides [4]int64
	stride := int64(1)
	for d := 3; d >= 0; d-- {
		strides[d] = stride
		stride *= shape[d]
	}
	dims := [4]int64{shape[perm[0]], shape[perm[1]], shape[perm[2]], shape[perm[3]]}
	i := 0
	for a := range dims[0] {
		for b := range dims[1] {
			for c := range dims[2] {
				for d := range dims[3] {
					out[i] = vs[a*strides[perm[0]]+b*strides[perm[1]]+c*strides[perm[2]]+d*strides[perm[3]]]
					i++
				}
			}
		}
	}
	return out
}

func intsAsFloats(vs []int64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = float64(v)
	}
	return out
}

// softmaxRows applies softmax (or log_softmax) in place to each of the
// outer×inner rows of length n (stride inner) of vs, rounding every step
// with r and sums with acc.
func softmaxRows(vs []float64, outer, n, inner int, logForm bool, r, acc func(float64) float64) {
	for o := range outer {
		for in := range inner {
			row := func(j int) *float64 { return &vs[(o*n+j)*inner+in] }
			m := math.Inf(-1)
			for j := range n {
				if v := *row(j); v > m || v != v {
					m = v
				}
			}
			var sum float64
			for j := range n {
				sum = acc(sum + r(math.Exp(r(*row(j)-m))))
			}
			sum = r(sum)
			for j := range n {
				d := r(*row(j) - m)
				if logForm {
					*row(j) = r(d - r(math.Log(sum)))
				} else {
					*row(j) = r(r(math.Exp(d)) / sum)
				}
			}
		}
	}
}

// floatAxisArgs returns the tensor operands of an op normalizing its float
// first operand along the "axis" attribute (default -1), and that axis.
func floatAxisArgs(op *ir.Operation, args []Value) ([]*Tensor, int, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, 0, err
	}
	if !ir.IsFloat(ts[0].elem) {
		return nil, 0, fmt.Errorf("expects a float tensor, got %s", ts[0])
	}
	axis, err := axisAttr(op, len(ts[0].shape))
	return ts, axis, err
}

func graphSoftmax(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, axis, err := floatAxisArgs(op, args)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	outer, n, inner := axisLayout(x.shape, axis)
	vs := x.Float64s()
	ct := graph.ComputeType(x.elem)
	softmaxRows(vs, outer, n, inner, op.Name() == graph.OpLogSoftmax, rounder(ct), accRounder(ct))
	return one(FromFloat64s(x.elem, x.shape, vs))
}

// graphLogSumExp computes logsumexp along the axis as its decomposition
// does, in the compute type, rounding every step: m the row's maximum (0
// when infinite), then m + log(Σ exp(x - m)).
func graphLogSumExp(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, axis, err := floatAxisArgs(op, args)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	outer, n, inner := axisLayout(x.shape, axis)
	vs := x.Float64s()
	ct := graph.ComputeType(x.elem)
	r, acc := rounder(ct), accRounder(ct)
	out := make([]float64, outer*inner)
	for o := range outer {
		for in := range inner {
			at := func(j int) float64 { return vs[(o*n+j)*inner+in] }
			m := math.Inf(-1)
			for j := range n {
				if v := at(j); v > m || v != v {
					m = v
				}
			}
			if math.IsInf(m, 0) {
				m = 0
			}
			var sum float64
			for j := range n {
				sum = acc(sum + r(math.Exp(r(at(j)-m))))
			}
			out[o*inner+in] = r(m + r(math.Log(r(sum))))
		}
	}
	shape := keptShape(x.shape, []int{axis}, slices.Delete(slices.Clone(x.shape), axis, axis+1), graph.KeepDims(op))
	return one(FromFloat64s(x.elem, shape, out))
}

// graphNorm runs layer_norm (x, w, b) and rms_norm (x, w) over the
// trailing dims from axis, with the biased variance.
func graphNorm(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, axis, err := floatAxisArgs(op, args)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	n := int(ir.NumElements(x.shape[axis:]))
	outer := int(ir.NumElements(x.shape[:axis]))
	w := ts[1].Float64s()
	var b []float64
	if len(ts) == 3 {
		b = ts[2].Float64s()
	}
	if len(w) != n || (b != nil && len(b) != n) {
		return nil, fmt.Errorf("weight and bias must have %d elements", n)
	}
	ct := graph.ComputeType(x.elem)
	r, acc := rounder(ct), accRounder(ct)
	eps := r(graph.Epsilon(op))
	vs := x.Float64s()
	rms := op.Name() == graph.OpRMSNorm
	for o := range outer {
		row := vs[o*n : (o+1)*n]
		var mean float64
		if !rms {
			var s float64
			for _, v := range row {
				s = acc(s + v)
			}
			mean = r(s / float64(n))
		}
		var ss float64
		for _, v := range row {
			d := r(v - mean)
			ss = acc(ss + r(d*d))
		}
		variance := r(ss / float64(n))
		inv := r(1 / r(math.Sqrt(r(variance+eps))))
		for j, v := range row {
			y := r(r(r(v-mean)*inv) * w[j])
			if b != nil {
				y = r(y + b[j])
			}
			row[j] = y
		}
	}
	return one(FromFloat64s(x.elem, x.shape, vs))
}

// graphAttention runs softmax(q·kᵀ·scale + mask)·v over the last two dims.
func graphAttention(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	q, v := ts[0], ts[2]
	at, err := attentionProbs(op, ts)
	if err != nil {
		return nil, err
	}
	probs, err := FromFloat64s(q.elem, at.scores, at.p)
	if err != nil {
		return nil, err
	}
	rv := len(v.shape)
	outShape := append(slices.Clone(at.batch), at.lq, v.shape[rv-1])
	return one(matmulTensor(probs, v, nil, q.elem, outShape, at.batch, at.batch, v.shape[:rv-2], int(at.lq), int(at.lk), int(v.shape[rv-1])))
}

// attention is the softmax of graph.attention: p holds the probabilities
// (rounded to the compute type) of the scores shape, batch dims then Lq
// by Lk; scale is the score scale as the compute type holds it.
type attention struct {
	p             []float64
	scores, batch []int64
	lq, lk, d     int64
	scale         float64
}

// attentionProbs computes softmax(q·kᵀ·scale + mask) of graph.attention
// (or attention_grad, which has no mask) op on its operands ts, all in
// the compute type.
func attentionProbs(op *ir.Operation, ts []*Tensor) (attention, error) {
	q, k, v := ts[0], ts[1], ts[2]
	rq, rk, rv := len(q.shape), len(k.shape), len(v.shape)
	if rq < 2 || rk < 2 || rv < 2 || !ir.IsFloat(q.elem) {
		return attention{}, fmt.Errorf("expects float q, k, v of rank >= 2, got %s, %s, %s", q, k, v)
	}
	lq, d := q.shape[rq-2], q.shape[rq-1]
	lk := k.shape[rk-2]
	// kᵀ as a tensor of shape [..., D, Lk].
	kt, err := transposeTensor(k, lastSwapped(rk))
	if err != nil {
		return attention{}, err
	}
	batch, ok := graph.BroadcastShape(q.shape[:rq-2], k.shape[:rk-2])
	if ok {
		batch, ok = graph.BroadcastShape(batch, v.shape[:rv-2])
	}
	if !ok {
		return attention{}, fmt.Errorf("batch dims of %s, %s and %s do not broadcast", q, k, v)
	}
	// The scores are the product in the compute type (f32 for f16 and
	// bf16, as PyTorch's scaled_dot_product_attention keeps them); scaling,
	// masking and the softmax run in it too.
	ct := graph.ComputeType(q.elem)
	scoreShape := append(slices.Clone(batch), lq, lk)
	scores, err := matmulTensor(q, kt, nil, ct, scoreShape, batch, q.shape[:rq-2], kt.shape[:rk-2], int(lq), int(d), int(lk))
	if err != nil {
		return attention{}, err
	}
	r := rounder(ct)
	scale, ok := graph.Scale(op)
	if !ok {
		scale = 1 / math.Sqrt(float64(d))
	}
	scale = r(scale)
	sv := scores.Float64s()
	for i := range sv {
		sv[i] = r(sv[i] * scale)
	}
	if op.Name() == graph.OpAttention && len(ts) == 4 {
		mask := ts[3]
		idx := broadcastIdx(scoreShape, mask.shape)
		if ir.IsFloat(mask.elem) {
			mv := mask.Float64s()
			for i := range sv {
				sv[i] = r(sv[i] + mv[at(idx, i)])
			}
		} else {
			mv := mask.Int64s()
			for i := range sv {
				if mv[at(idx, i)] == 0 {
					sv[i] = math.Inf(-1)
				}
			}
		}
	}
	if graph.Causal(op) {
		for i := range sv {
			row, col := int64(i)/lk%lq, int64(i)%lk
			if col > row {
				sv[i] = math.Inf(-1)
			}
		}
	}
	softmaxRows(sv, int(ir.NumElements(batch)*lq), int(lk), 1, false, r, accRounder(ct))
	return attention{p: sv, scores: scoreShape, batch: batch, lq: lq, lk: lk, d: d, scale: scale}, nil
}

// transposeTensor permutes x's dims.
func transposeTensor(x *Tensor, perm []int64) (*Tensor, error) {
	st := strides(x.shape)
	shape := make([]int64, len(perm))
	for i, p := range perm {
		shape[i] = x.shape[p]
	}
	return gatherBits(x, shape, func(pos []int64) int64 {
		var k int64
		for i, p := range perm {
			k += pos[i] * st[p]
		}
		return k
	})
}

// graphFusion runs the fusion's body on its operands.
func graphFusion(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	return f.RunRegion(op.Region(0), args)
}
