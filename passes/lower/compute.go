package lower

import (
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/decompose"
	"github.com/strata-ir/strata/sym"
)

// resolve follows a block argument of the fusion body to the operand.
func (k *kernel) resolve(v *ir.Value) *ir.Value {
	if k.body != nil && v.IsBlockArgument() && v.ParentBlock() == k.body {
		return k.fusion.Operand(v.Index())
	}
	return v
}

// value emits the element of tensor v at idx.
//
// A tensor with a static size of 0 has no element: one is asked for only
// by code hoisted out of a loop over that empty dim (see kernel), which
// runs zero times, so its value is never used. It is the zero of the
// element type rather than code that would read its operands out of bounds
// (a slice of a non-empty tensor at its limit, an element of an empty
// buffer).
func (k *kernel) value(v *ir.Value, idx []*ir.Value) (*ir.Value, error) {
	v = k.resolve(v)
	if slices.Contains(shapeOf(v), 0) {
		return k.zero(elemOf(v)), nil
	}
	if m := k.c.bufs[v]; m != nil {
		return k.load(m, idx), nil
	}
	op := v.DefiningOp()
	if op == nil {
		return nil, errorf(k.loc, "cannot read %s: not a function argument or a graph value", v.Type())
	}
	key := k.elemKey("value", v, idx)
	if r := k.lookup(key); r != nil {
		return r, nil
	}
	r, err := k.compute(op, idx)
	if err != nil {
		return nil, err
	}
	k.remember(key, r)
	return r, nil
}

// size returns the size of dim d of tensor v, at function level.
func (k *kernel) size(v *ir.Value, d int) (*ir.Value, error) {
	v = k.resolve(v)
	if n := shapeOf(v)[d]; n != ir.Dynamic {
		return arith.ConstantIndex(k.outer(), k.loc, n), nil
	}
	if m := k.c.bufs[v]; m != nil {
		return loop.Dim(k.outer(), k.loc, m, d), nil
	}
	op := v.DefiningOp()
	if op == nil {
		return nil, errorf(k.loc, "unknown dynamic size of %s", v.Type())
	}
	if op.Name() == graph.OpFusion {
		return k.size(op.Region(0).Front().Terminator().Operand(v.Index()), d)
	}
	if s, ok, err := k.resultSize(op, d); ok {
		return s, err
	}
	// Elementwise ops and reductions: a dynamic operand dim at the aligned
	// position gives the size; where several operands have one, their
	// broadcast (each is the size or 1 at run time: the first that is not
	// 1, broadcastSize; not the largest, as a 1 against a 0 gives 0).
	rank := len(shapeOf(v))
	var widest *ir.Value
	var seen []sym.Expr // the symbolic sizes already in widest
	for _, o := range op.Operands() {
		os := shapeOf(o)
		if isReduction(op) {
			keep, _ := op.Attr("keepdims").(ir.IntegerAttr)
			axes := reductionAxes(op, len(os))
			j := 0
			for od := range os {
				if slices.Contains(axes, od) {
					if keep.Value != 0 {
						j++
					}
					continue
				}
				if j == d {
					return k.size(o, od)
				}
				j++
			}
			continue
		}
		if od := d - (rank - len(os)); od >= 0 && od < len(os) && os[od] == ir.Dynamic && isElementwise(op) {
			// Operands whose types name the same symbolic size are equal:
			// one of them gives it, with no maximum to take.
			if tt, ok := o.Type().(*ir.TensorType); ok {
				e := graph.DimsOf(tt)[od]
				if !graph.IsUnknown(e) {
					if slices.ContainsFunc(seen, e.Equal) {
						continue
					}
					seen = append(seen, e)
				}
			}
			s, err := k.size(o, od)
			if err != nil {
				return nil, err
			}
			if widest != nil {
				s = k.broadcastSize(widest, s)
			}
			widest = s
		}
	}
	if widest != nil {
		return widest, nil
	}
	return nil, errorf(op.Loc(), "unknown dynamic size of dim %d of '%s'", d, op.Name())
}

func isElementwise(op *ir.Operation) bool { return isElementwiseName(op.Name()) }

func isElementwiseName(name string) bool {
	_, u := floatUnaryOps[name]
	_, b := floatBinaryOps[name]
	return u || b || slices.Contains([]string{graph.OpSigmoid, graph.OpRelu, graph.OpGELU, graph.OpReciprocal, graph.OpCmp, graph.OpSelect, graph.OpCast, graph.OpBroadcastTo}, name)
}

// computed are the graph ops other than the elementwise ones whose
// element compute emits (its switch): with isElementwiseName, the ops
// lower-to-loop lowers itself.
var computed = map[string]bool{
	graph.OpConstant: true, graph.OpFull: true, graph.OpIota: true, graph.OpCmp: true, graph.OpSelect: true,
	graph.OpCast: true, graph.OpBroadcastTo: true, graph.OpReshape: true, graph.OpTranspose: true,
	graph.OpSlice: true, graph.OpPad: true, graph.OpConcat: true, graph.OpGather: true,
	graph.OpReduceSum: true, graph.OpReduceMax: true, graph.OpReduceMin: true, graph.OpReduceMean: true,
	graph.OpArgmax: true, graph.OpMatmul: true, graph.OpConv2D: true,
}

// Lowers reports whether lower-to-loop lowers the graph op named name to
// loops itself (an element formula or a matmul or conv2d template).
// Composites are expanded by graph-decompose first, and graph.fusion and
// graph.yield are the kernels' structure; the completeness test
// (test.TestEveryGraphOpHasItsRules) checks that every graph op is one of
// these. Collectives lower to loop.collective, a host step rather than a
// loop nest (collective.go); scatter_add to a nest of its own (scatter.go).
func Lowers(name string) bool {
	return computed[name] || isElementwiseName(name) || graph.IsCollective(name) || name == graph.OpScatterAdd
}

// operandIndex maps idx of the result r to the index of operand o under
// NumPy broadcasting. A dynamic dim of o may be 1 at run time, broadcast,
// so its index is selected by its size, unless the types name the same
// symbolic size for it and r's dim: the sizes are then equal, and so are
// the indices (a 1 included).
func (k *kernel) operandIndex(o, r *ir.Value, idx []*ir.Value) ([]*ir.Value, error) {
	// o's own type names its symbolic sizes; resolved (a fusion's block
	// argument to the fusion's operand, which may be a memref by now) it
	// gives the sizes.
	typed := o
	o = k.resolve(o)
	os, out := shapeOf(o), shapeOf(r)
	off := len(out) - len(os)
	if off == 0 && len(idx) == len(os) && !slices.ContainsFunc(os, func(n int64) bool { return n == 1 || n == ir.Dynamic }) {
		return idx, nil // no broadcasting: the same index (which nobody modifies)
	}
	res := make([]*ir.Value, len(os))
	for d, n := range os {
		switch {
		case n == 1:
			res[d] = k.index(0)
		case n == ir.Dynamic && sameSymbolicDim(typed, d, r, off+d):
			res[d] = idx[off+d]
		case n == ir.Dynamic:
			s, err := k.size(o, d)
			if err != nil {
				return nil, err
			}
			res[d] = k.sel(k.cmpi(arith.CmpIEQ, s, k.index(1)), k.index(0), idx[off+d])
		default:
			res[d] = idx[off+d]
		}
	}
	return res, nil
}

// sameSymbolicDim reports whether dim d of a and dim e of b are the same
// symbolic size (#graph.dims), which makes them equal at run time.
func sameSymbolicDim(a *ir.Value, d int, b *ir.Value, e int) bool {
	at, ok1 := a.Type().(*ir.TensorType)
	bt, ok2 := b.Type().(*ir.TensorType)
	if !ok1 || !ok2 {
		return false
	}
	x, y := graph.DimsOf(at)[d], graph.DimsOf(bt)[e]
	return !graph.IsUnknown(x) && x.Equal(y)
}

// operands emits the broadcast operands of an elementwise op.
func (k *kernel) operands(op *ir.Operation, idx []*ir.Value) ([]*ir.Value, error) {
	vals := make([]*ir.Value, op.NumOperands())
	for i := range vals {
		o := op.Operand(i)
		oi, err := k.operandIndex(o, op.Result(0), idx)
		if err != nil {
			return nil, err
		}
		if vals[i], err = k.value(o, oi); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// compute emits the element at idx of op's result.
func (k *kernel) compute(op *ir.Operation, idx []*ir.Value) (*ir.Value, error) {
	name := op.Name()
	if slices.Contains(decompose.Composites(), name) {
		return nil, errorf(op.Loc(), "cannot lower '%s', a composite: run graph-decompose first (lower-to-loop does)", name)
	}
	if !Lowers(name) {
		return nil, errorf(op.Loc(), "cannot lower '%s'", op.Name())
	}
	out := shapeOf(op.Result(0))
	elem := elemOf(op.Result(0))
	switch name {
	case graph.OpConstant:
		return k.constantElem(op, idx)
	case graph.OpFull:
		return k.constant(scalarAttr(op.Attr("fill"), elem)), nil
	case graph.OpIota:
		axis := graph.Axis(op)
		if axis < 0 {
			axis += int64(len(out))
		}
		i := k.cast(arith.OpIndexCast, idx[axis], ir.I64)
		if ir.IsFloat(elem) {
			return k.convert(i, ir.I64, elem), nil
		}
		return k.convert(i, ir.I64, elem), nil
	case graph.OpCmp, graph.OpSelect, graph.OpCast:
		vals, err := k.operands(op, idx)
		if err != nil {
			return nil, err
		}
		switch name {
		case graph.OpCmp:
			return k.compare(graph.Predicate(op), vals[0], vals[1]), nil
		case graph.OpSelect:
			return k.sel(vals[0], vals[1], vals[2]), nil
		}
		return k.convert(vals[0], elemOf(op.Operand(0)), elem), nil
	case graph.OpBroadcastTo:
		oi, err := k.operandIndex(op.Operand(0), op.Result(0), idx)
		if err != nil {
			return nil, err
		}
		return k.value(op.Operand(0), oi)
	case graph.OpReshape:
		in := shapeOf(k.resolve(op.Operand(0)))
		if !squeezeEqual(out, in) && (ir.NumElements(out) < 0 || ir.NumElements(in) < 0) {
			from, err := k.sizes(op.Result(0))
			if err != nil {
				return nil, err
			}
			to, err := k.sizes(op.Operand(0))
			if err != nil {
				return nil, err
			}
			// Group by group where the symbolic sizes show runs of dims
			// of equal products (GPT-2's rows [s0·8, 768] as heads [8,
			// s0, 12, 64]: b·s0 + t, and h·64 + d with constants), else
			// through the linear index.
			gs := symbolicReshapeGroups(k.symDims(op.Result(0)), k.symDims(op.Operand(0)))
			if gs == nil {
				return k.value(op.Operand(0), k.remapDynamic(from, idx, to))
			}
			oi := make([]*ir.Value, len(in))
			for _, g := range gs {
				fs, ts := out[g.from[0]:g.from[1]], in[g.to[0]:g.to[1]]
				if ir.NumElements(fs) >= 0 && ir.NumElements(ts) >= 0 {
					copy(oi[g.to[0]:g.to[1]], k.regroup(fs, idx[g.from[0]:g.from[1]], ts))
				} else {
					copy(oi[g.to[0]:g.to[1]], k.remapDynamic(from[g.from[0]:g.from[1]], idx[g.from[0]:g.from[1]], to[g.to[0]:g.to[1]]))
				}
			}
			return k.value(op.Operand(0), oi)
		}
		oi, err := k.remap(out, idx, in)
		if err != nil {
			return nil, err
		}
		return k.value(op.Operand(0), oi)
	case graph.OpTranspose:
		perm, _ := graph.IntList(op.Attr("perm"))
		in := make([]*ir.Value, len(perm))
		for i, p := range perm {
			in[p] = idx[i]
		}
		return k.value(op.Operand(0), in)
	case graph.OpSlice:
		starts, _ := graph.IntList(op.Attr("starts"))
		steps, ok := graph.IntList(op.Attr("strides"))
		in := make([]*ir.Value, len(idx))
		for d := range idx {
			step := int64(1)
			if ok {
				step = steps[d]
			}
			in[d] = k.indexOp(arith.OpAddI, k.indexOp(arith.OpMulI, idx[d], k.index(step)), k.index(starts[d]))
		}
		return k.value(op.Operand(0), in)
	case graph.OpPad:
		return k.pad(op, idx)
	case graph.OpConcat:
		return k.concat(op, idx, 0, k.index(0))
	case graph.OpGather:
		return k.gather(op, idx)
	case graph.OpReduceSum, graph.OpReduceMax, graph.OpReduceMin, graph.OpReduceMean:
		return k.reduce(op, name, idx)
	case graph.OpArgmax:
		return k.argmax(op, idx)
	case graph.OpMatmul:
		return k.matmul(op, idx)
	case graph.OpConv2D:
		return k.conv2d(op, idx)
	}
	if isElementwise(op) {
		vals, err := k.operands(op, idx)
		if err != nil {
			return nil, err
		}
		if len(vals) == 1 {
			return k.unaryElem(name, graph.Approximate(op), vals[0], elem)
		}
		return k.binaryElem(name, vals[0], vals[1], elem)
	}
	return nil, errorf(op.Loc(), "cannot lower '%s'", op.Name())
}

// scalarAttr converts a fill or padding attribute to a constant of elem,
// as the interpreter does.
func scalarAttr(a ir.Attribute, elem ir.Type) ir.Attribute {
	ft, isF := elem.(*ir.FloatType)
	switch a := a.(type) {
	case ir.FloatAttr:
		if isF {
			return ir.Float(a.Value(), ft)
		}
		return ir.IntegerAttr{Value: ir.TruncInt(graph.FloatToInt(a.Value(), elem), elem), Type: elem}
	case ir.IntegerAttr:
		if isF {
			return ir.Float(float64(a.Value), ft)
		}
		return ir.IntegerAttr{Value: ir.TruncInt(a.Value, elem), Type: elem}
	}
	if isF {
		return ir.Float(0, ft)
	}
	return ir.IntegerAttr{Value: 0, Type: elem}
}

// bitsAttr is the constant of type elem with the given storage bits.
func bitsAttr(bits uint64, elem ir.Type) ir.Attribute {
	if ft, ok := elem.(*ir.FloatType); ok {
		return ir.FloatAttr{Bits: bits, Type: ft}
	}
	return ir.IntegerAttr{Value: ir.TruncInt(int64(bits), elem), Type: elem}
}

// constantElem reads a graph.constant: a splat, or a constant whose
// elements are all equal (folds write those element by element), is a
// scalar; anything else a buffer filled at function entry (stores on the
// host, which the nvptx executor cannot run: frontend.Load and irc lift
// such constants to arguments first).
func (k *kernel) constantElem(op *ir.Operation, idx []*ir.Value) (*ir.Value, error) {
	d, ok := op.Attr("value").(ir.DenseAttr)
	if !ok {
		return nil, errorf(op.Loc(), "graph.constant without a dense value")
	}
	elem := elemOf(op.Result(0))
	if len(d.Bits) == 1 || (ir.IsFloat(elem) || ir.IsIntOrIndex(elem)) && len(d.Bits) > 0 && !slices.ContainsFunc(d.Bits, func(b uint64) bool { return b != d.Bits[0] }) {
		return k.constant(bitsAttr(d.Bits[0], elem)), nil
	}
	v := op.Result(0)
	m := k.c.bufs[v]
	if m == nil {
		shape := shapeOf(v)
		b := k.c.startBuilder()
		m = loop.Alloc(b, op.Loc(), ir.MemRefOf(shape, elem))
		pos := make([]int64, len(shape))
		for _, bits := range d.Bits {
			ix := make([]*ir.Value, len(pos))
			for i, p := range pos {
				ix[i] = arith.ConstantIndex(b, op.Loc(), p)
			}
			loop.Store(b, op.Loc(), arith.Constant(b, op.Loc(), bitsAttr(bits, elem)), m, ix...)
			for i := len(pos) - 1; i >= 0; i-- {
				if pos[i]++; pos[i] < shape[i] {
					break
				}
				pos[i] = 0
			}
		}
		k.c.bufs[v] = m
	}
	return k.load(m, idx), nil
}

func (k *kernel) pad(op *ir.Operation, idx []*ir.Value) (*ir.Value, error) {
	x := op.Operand(0)
	xs := shapeOf(k.resolve(x))
	low, _ := graph.IntList(op.Attr("low"))
	elem := elemOf(op.Result(0))
	fill := k.constant(scalarAttr(op.Attr("value"), elem))
	in := make([]*ir.Value, len(idx))
	var cond *ir.Value
	high, _ := graph.IntList(op.Attr("high"))
	for d := range idx {
		in[d] = k.indexOp(arith.OpSubI, idx[d], k.index(low[d]))
		if low[d] == 0 && high[d] == 0 {
			continue
		}
		end := k.index(low[d] + xs[d])
		if xs[d] == ir.Dynamic {
			n, err := k.size(x, d)
			if err != nil {
				return nil, err
			}
			end = k.indexOp(arith.OpAddI, n, k.index(low[d]))
		}
		c := k.andi(k.cmpi(arith.CmpISGE, idx[d], k.index(low[d])), k.cmpi(arith.CmpISLT, idx[d], end))
		if cond == nil {
			cond = c
		} else {
			cond = k.andi(cond, c)
		}
	}
	if cond == nil {
		return k.value(x, in)
	}
	return k.ifElse(cond, idx, elem, func() (*ir.Value, error) { return k.value(x, in) },
		func() (*ir.Value, error) { return fill, nil })
}

func (k *kernel) andi(a, b *ir.Value) *ir.Value { return k.binary(arith.OpAndI, a, b) }
func (k *kernel) ori(a, b *ir.Value) *ir.Value  { return k.binary(arith.OpOrI, a, b) }

// concat emits the element from input j onward, whose slice along the axis
// starts at off.
//
// Inputs of a static size of 0 along the axis hold none of the elements
// and get no branch.
func (k *kernel) concat(op *ir.Operation, idx []*ir.Value, j int, off *ir.Value) (*ir.Value, error) {
	axis := concatAxis(op)
	empty := func(i int) bool { return shapeOf(k.resolve(op.Operand(i)))[axis] == 0 }
	for j < op.NumOperands()-1 && empty(j) {
		j++
	}
	x := op.Operand(j)
	in := slices.Clone(idx)
	in[axis] = k.indexOp(arith.OpSubI, idx[axis], off)
	last := true
	for i := j + 1; i < op.NumOperands(); i++ {
		last = last && empty(i)
	}
	if last {
		return k.value(x, in)
	}
	n, err := k.size(x, int(axis))
	if err != nil {
		return nil, err
	}
	end := k.indexOp(arith.OpAddI, off, n)
	cond := k.cmpi(arith.CmpISLT, idx[axis], end)
	return k.ifElse(cond, idx, elemOf(op.Result(0)), func() (*ir.Value, error) { return k.value(x, in) },
		func() (*ir.Value, error) { return k.concat(op, idx, j+1, end) })
}

func (k *kernel) gather(op *ir.Operation, idx []*ir.Value) (*ir.Value, error) {
	x, indices := op.Operand(0), op.Operand(1)
	xs := shapeOf(k.resolve(x))
	axis := int(graph.Axis(op))
	if axis < 0 {
		axis += len(xs)
	}
	r := len(shapeOf(k.resolve(indices)))
	iv, err := k.value(indices, idx[axis:axis+r])
	if err != nil {
		return nil, err
	}
	i := k.cast(arith.OpIndexCast, iv, ir.Index)
	n, err := k.size(x, axis)
	if err != nil {
		return nil, err
	}
	i = k.sel(k.cmpi(arith.CmpISLT, i, k.index(0)), k.indexOp(arith.OpAddI, i, n), i)
	in := slices.Concat(idx[:axis], []*ir.Value{i}, idx[axis+r:])
	return k.value(x, in)
}

// accType is the accumulator type of sums and products of elem: f32 for
// f16, bf16 and f32, elem otherwise.
func accType(elem ir.Type) ir.Type {
	if elem == ir.F16 || elem == ir.BF16 {
		return ir.F32
	}
	return elem
}

// reduce emits a reduction at idx of its result: loop.for over the
// reduced dims in row-major order (the interpreter's order).
func (k *kernel) reduce(op *ir.Operation, name string, idx []*ir.Value) (*ir.Value, error) {
	x := op.Operand(0)
	xs := shapeOf(k.resolve(x))
	axes := reductionAxes(op, len(xs))
	keep := graph.KeepDims(op)
	kept := make([]*ir.Value, 0, len(xs))
	for d := range xs {
		if slices.Contains(axes, d) {
			continue
		}
		if keep {
			kept = append(kept, idx[d])
		} else {
			kept = append(kept, idx[len(kept)])
		}
	}
	elem := elemOf(op.Result(0))
	isF := ir.IsFloat(elem)
	acc := elem
	var init *ir.Value
	switch {
	case name == graph.OpReduceMax && isF:
		init = k.floatConst(math.Inf(-1), elem)
	case name == graph.OpReduceMin && isF:
		init = k.floatConst(math.Inf(1), elem)
	case name == graph.OpReduceMax:
		init = k.intConst(-1<<(ir.IntWidth(elem)-1), elem)
	case name == graph.OpReduceMin:
		init = k.intConst(1<<(ir.IntWidth(elem)-1)-1, elem)
	default:
		acc = accType(elem)
		init = k.zero(acc)
	}
	ubs := make([]*ir.Value, len(axes))
	count := int64(1)
	for j, a := range axes {
		s, err := k.size(x, a)
		if err != nil {
			return nil, err
		}
		ubs[j] = s
		if xs[a] == ir.Dynamic {
			count = -1
		} else if count >= 0 {
			count *= xs[a]
		}
	}
	res, err := k.loops(k.levelOf(kept...), ubs, []*ir.Value{init}, func(ivs, iters []*ir.Value) ([]*ir.Value, error) {
		v, err := k.value(x, expand(len(xs), axes, kept, ivs))
		if err != nil {
			return nil, err
		}
		o := iters[0]
		switch {
		case name == graph.OpReduceMax && isF:
			return []*ir.Value{k.sel(k.ori(k.cmpf(arith.CmpFOGT, v, o), k.cmpf(arith.CmpFUNO, v, v)), v, o)}, nil
		case name == graph.OpReduceMin && isF:
			return []*ir.Value{k.sel(k.ori(k.cmpf(arith.CmpFOLT, v, o), k.cmpf(arith.CmpFUNO, v, v)), v, o)}, nil
		case name == graph.OpReduceMax:
			return []*ir.Value{k.binary(arith.OpMaxSI, o, v)}, nil
		case name == graph.OpReduceMin:
			return []*ir.Value{k.binary(arith.OpMinSI, o, v)}, nil
		case isF:
			return []*ir.Value{k.binary(arith.OpAddF, o, k.convert(v, elem, acc))}, nil
		}
		return []*ir.Value{k.binary(arith.OpAddI, o, v)}, nil
	})
	if err != nil {
		return nil, err
	}
	r := res[0]
	if name == graph.OpReduceMean {
		var n *ir.Value
		if count >= 0 {
			n = k.floatConst(float64(count), acc)
		} else {
			c := k.index(1)
			for _, u := range ubs {
				c = k.indexOp(arith.OpMulI, c, u)
			}
			n = k.convert(k.cast(arith.OpIndexCast, c, ir.I64), ir.I64, acc)
		}
		r = k.binary(arith.OpDivF, r, n)
	}
	return k.convert(r, acc, elem), nil
}

// argmax keeps the first largest element, and the first NaN.
func (k *kernel) argmax(op *ir.Operation, idx []*ir.Value) (*ir.Value, error) {
	x := op.Operand(0)
	xs := shapeOf(k.resolve(x))
	axes := reductionAxes(op, len(xs))
	a := axes[0]
	keep := graph.KeepDims(op)
	kept := slices.Clone(idx)
	if keep {
		kept = slices.Delete(kept, a, a+1)
	}
	at := func(i *ir.Value) []*ir.Value { return expand(len(xs), axes, kept, []*ir.Value{i}) }
	first, err := k.value(x, at(k.index(0)))
	if err != nil {
		return nil, err
	}
	n, err := k.size(x, a)
	if err != nil {
		return nil, err
	}
	isF := ir.IsFloat(elemOf(k.resolve(x)))
	res, err := k.forLoop(k.levelOf(kept...), k.index(1), n, []*ir.Value{k.index(0), first},
		func(iv *ir.Value, iters []*ir.Value) ([]*ir.Value, error) {
			v, err := k.value(x, at(iv))
			if err != nil {
				return nil, err
			}
			bi, bv := iters[0], iters[1]
			var better *ir.Value
			if isF {
				better = k.andi(k.cmpf(arith.CmpFORD, bv, bv), k.ori(k.cmpf(arith.CmpFOGT, v, bv), k.cmpf(arith.CmpFUNO, v, v)))
			} else {
				better = k.cmpi(arith.CmpISGT, v, bv)
			}
			return []*ir.Value{k.sel(better, iv, bi), k.sel(better, v, bv)}, nil
		})
	if err != nil {
		return nil, err
	}
	return k.cast(arith.OpIndexCast, res[0], ir.I64), nil
}

// matmul accumulates over K in the accumulator type (f32 for f16 and bf16),
// multiplying and adding with one rounding each, in the interpreter's order.
func (k *kernel) matmul(op *ir.Operation, idx []*ir.Value) (*ir.Value, error) {
	lhs, rhs := op.Operand(0), op.Operand(1)
	as, bs := shapeOf(k.resolve(lhs)), shapeOf(k.resolve(rhs))
	elem := elemOf(op.Result(0))
	out := shapeOf(op.Result(0))
	var m, n *ir.Value
	batch := idx
	if len(bs) > 1 {
		n, batch = batch[len(batch)-1], batch[:len(batch)-1]
	}
	if len(as) > 1 {
		m, batch = batch[len(batch)-1], batch[:len(batch)-1]
	}
	batchShape := out[:len(batch)]
	// bidx is the batch index into operand v of shape s: broadcast dims,
	// static or dynamic, read index 0.
	bidx := func(v *ir.Value, s []int64) ([]*ir.Value, error) {
		if len(s) <= 2 {
			return nil, nil
		}
		bsh := s[:len(s)-2]
		res := make([]*ir.Value, len(bsh))
		off := len(batchShape) - len(bsh)
		for d, size := range bsh {
			switch size {
			case 1:
				res[d] = k.index(0)
			case ir.Dynamic:
				n, err := k.size(v, d)
				if err != nil {
					return nil, err
				}
				res[d] = k.sel(k.cmpi(arith.CmpIEQ, n, k.index(1)), k.index(0), batch[off+d])
			default:
				res[d] = batch[off+d]
			}
		}
		return res, nil
	}
	ab, err := bidx(lhs, as)
	if err != nil {
		return nil, err
	}
	bb, err := bidx(rhs, bs)
	if err != nil {
		return nil, err
	}
	kdim, err := k.size(lhs, len(as)-1)
	if err != nil {
		return nil, err
	}
	acc := accType(elem)
	av, aView := k.operandView(lhs)
	bv, bView := k.operandView(rhs)
	res, err := k.forLoop(k.levelOf(idx...), k.index(0), kdim, []*ir.Value{k.zero(acc)},
		func(p *ir.Value, iters []*ir.Value) ([]*ir.Value, error) {
			ai := append(slices.Clip(ab), p)
			if m != nil {
				ai = append(slices.Clip(ab), m, p)
			}
			bi := []*ir.Value{p}
			if n != nil {
				bi = append(slices.Clip(bb), p, n)
			}
			var a, b *ir.Value
			var err error
			if aView {
				a = k.read(av, ai)
			} else if a, err = k.value(lhs, ai); err != nil {
				return nil, err
			}
			if bView {
				b = k.read(bv, bi)
			} else if b, err = k.value(rhs, bi); err != nil {
				return nil, err
			}
			if ir.IsFloat(elem) {
				prod := k.binary(arith.OpMulF, k.convert(a, elem, acc), k.convert(b, elem, acc))
				return []*ir.Value{k.binary(arith.OpAddF, iters[0], prod)}, nil
			}
			return []*ir.Value{k.binary(arith.OpAddI, iters[0], k.binary(arith.OpMulI, a, b))}, nil
		})
	if err != nil {
		return nil, err
	}
	sum := res[0]
	if op.NumOperands() == 3 && n != nil {
		// The bias joins the sum in the accumulator, before the one
		// rounding (graph.matmul's bias).
		bias, err := k.value(op.Operand(2), []*ir.Value{n})
		if err != nil {
			return nil, err
		}
		add := arith.OpAddI
		if ir.IsFloat(elem) {
			add = arith.OpAddF
		}
		sum = k.binary(add, sum, k.convert(bias, elem, acc))
	}
	return k.convert(sum, acc, elem), nil
}
