package lower

import (
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// resultSize computes a dynamic dim of the result of a shape-changing op
// from its operands' sizes, at function level; ok is false for other ops
// (elementwise ops and reductions are handled in size).
func (k *kernel) resultSize(op *ir.Operation, d int) (v *ir.Value, ok bool, err error) {
	var f func(*ir.Operation, int) (*ir.Value, error)
	switch op.Name() {
	case graph.OpConv2D:
		f = k.convSize
	case graph.OpTranspose:
		f = k.transposeSize
	case graph.OpPad:
		f = k.padSize
	case graph.OpConcat:
		f = k.concatSize
	case graph.OpGather:
		f = k.gatherSize
	case graph.OpMatmul:
		f = k.matmulSize
	case graph.OpReshape:
		f = k.reshapeSize
	case graph.OpIota:
		f = k.iotaSize
	default:
		return nil, false, nil
	}
	v, err = f(op, d)
	return v, true, err
}

// iotaSize is an argument's size that the iota's symbolic size d is (the
// verifier refuses an unnamed ?).
func (k *kernel) iotaSize(op *ir.Operation, d int) (*ir.Value, error) {
	want := graph.DimsOf(op.Result(0).Type().(*ir.TensorType))[d]
	for _, a := range k.c.entry.Arguments() {
		for i, e := range k.c.argDims[a] {
			if shapeOf(a)[i] == ir.Dynamic && e.Equal(want) {
				return loop.Dim(k.outer(), k.loc, a, i), nil
			}
		}
	}
	return nil, errorf(op.Loc(), "dim %d of '%s' is %s, which no argument's size is", d, op.Name(), want)
}

// outerOp emits an index op at function level, before the nest.
func (k *kernel) outerOp(name string, a, b *ir.Value) *ir.Value {
	return arith.Binary(k.outer(), name, k.loc, a, b)
}

func (k *kernel) outerIndex(n int64) *ir.Value { return arith.ConstantIndex(k.outer(), k.loc, n) }

// broadcastSize is the size of a dim where operands of sizes a and b
// broadcast, at function level: b where a is 1, a otherwise (each is 1 or
// the size). Not their maximum: a 1 broadcast against a 0 gives 0.
func (k *kernel) broadcastSize(a, b *ir.Value) *ir.Value {
	bld := k.outer()
	isOne := arith.NewCmpI(bld, k.loc, arith.CmpIEQ, a, k.outerIndex(1))
	return arith.NewSelect(k.outer(), k.loc, isOne, b, a)
}

func (k *kernel) transposeSize(op *ir.Operation, d int) (*ir.Value, error) {
	perm, _ := graph.IntList(op.Attr("perm"))
	return k.size(op.Operand(0), int(perm[d]))
}

// padSize is low + size + high.
func (k *kernel) padSize(op *ir.Operation, d int) (*ir.Value, error) {
	low, _ := graph.IntList(op.Attr("low"))
	high, _ := graph.IntList(op.Attr("high"))
	s, err := k.size(op.Operand(0), d)
	if err != nil {
		return nil, err
	}
	return k.outerOp(arith.OpAddI, s, k.outerIndex(low[d]+high[d])), nil
}

// concatSize is the sum of the inputs' sizes along the axis, the first
// input's size along the other dims.
func (k *kernel) concatSize(op *ir.Operation, d int) (*ir.Value, error) {
	if d != int(concatAxis(op)) {
		return k.size(op.Operand(0), d)
	}
	var sum *ir.Value
	for _, x := range op.Operands() {
		s, err := k.size(x, d)
		if err != nil {
			return nil, err
		}
		if sum == nil {
			sum = s
		} else {
			sum = k.outerOp(arith.OpAddI, sum, s)
		}
	}
	return sum, nil
}

// gatherSize: the result is x.shape[:axis] + indices.shape + x.shape[axis+1:].
func (k *kernel) gatherSize(op *ir.Operation, d int) (*ir.Value, error) {
	x, indices := op.Operand(0), op.Operand(1)
	axis := gatherAxis(op, len(shapeOf(k.resolve(x))))
	r := len(shapeOf(k.resolve(indices)))
	switch {
	case d < axis:
		return k.size(x, d)
	case d < axis+r:
		return k.size(indices, d-axis)
	}
	return k.size(x, d-r+1)
}

// matmulSize: N from rhs, M from lhs, batch dims broadcast (the larger of
// the two where both have the dim: one of them is 1 or they are equal).
func (k *kernel) matmulSize(op *ir.Operation, d int) (*ir.Value, error) {
	lhs, rhs := op.Operand(0), op.Operand(1)
	as, bs := shapeOf(k.resolve(lhs)), shapeOf(k.resolve(rhs))
	rank := len(shapeOf(op.Result(0)))
	batch := rank
	if len(bs) > 1 {
		batch--
		if d == rank-1 {
			return k.size(rhs, len(bs)-1)
		}
	}
	if len(as) > 1 {
		batch--
		if d == batch {
			return k.size(lhs, len(as)-2)
		}
	}
	var res *ir.Value
	for _, o := range []struct {
		v     *ir.Value
		shape []int64
	}{{lhs, as}, {rhs, bs}} {
		od := d - (batch - (len(o.shape) - 2))
		if len(o.shape) <= 2 || od < 0 {
			continue
		}
		s, err := k.size(o.v, od)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = s
		} else {
			res = k.broadcastSize(res, s)
		}
	}
	if res == nil {
		return nil, errorf(op.Loc(), "unknown dynamic size of dim %d of 'graph.matmul'", d)
	}
	return res, nil
}

// reshapeSize: the one dynamic dim of the result holds the elements the
// static ones leave.
func (k *kernel) reshapeSize(op *ir.Operation, d int) (*ir.Value, error) {
	x := op.Operand(0)
	n, err := k.numElements(x)
	if err != nil {
		return nil, err
	}
	rest := int64(1)
	for i, s := range shapeOf(op.Result(0)) {
		if i == d {
			continue
		}
		if s == ir.Dynamic {
			return nil, errorf(op.Loc(), "graph.reshape to a shape with several dynamic dims is not supported")
		}
		rest *= s
	}
	if rest == 0 {
		return k.outerIndex(0), nil
	}
	return k.outerOp(arith.OpDivUI, n, k.outerIndex(rest)), nil
}

// numElements is the element count of tensor v, at function level.
func (k *kernel) numElements(v *ir.Value) (*ir.Value, error) {
	n := k.outerIndex(1)
	for d := range shapeOf(k.resolve(v)) {
		s, err := k.size(v, d)
		if err != nil {
			return nil, err
		}
		n = k.outerOp(arith.OpMulI, n, s)
	}
	return n, nil
}

// sizes returns every dim of tensor v as index values at function level.
func (k *kernel) sizes(v *ir.Value) ([]*ir.Value, error) {
	shape := shapeOf(k.resolve(v))
	out := make([]*ir.Value, len(shape))
	for d := range shape {
		var err error
		if out[d], err = k.size(v, d); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// remapDynamic converts idx of a tensor of sizes from into the index of
// the same element of a tensor of sizes to, through the row-major linear
// index, with sizes known at run time.
func (k *kernel) remapDynamic(from []*ir.Value, idx []*ir.Value, to []*ir.Value) []*ir.Value {
	lin := k.index(0)
	for d, n := range from {
		lin = k.indexOp(arith.OpAddI, k.indexOp(arith.OpMulI, lin, n), idx[d])
	}
	out := make([]*ir.Value, len(to))
	for d := len(to) - 1; d > 0; d-- {
		out[d] = k.indexOp(arith.OpRemUI, lin, to[d])
		lin = k.indexOp(arith.OpDivUI, lin, to[d])
	}
	// (The linear index is below the sizes' product: what is left is
	// below to[0], no remainder to take.)
	if len(to) > 0 {
		out[0] = lin
	}
	return out
}

// symDims returns the sizes of v's tensor type (#graph.dims), or of the
// function argument it is (its type read before it became a buffer); nil
// when neither says.
func (k *kernel) symDims(v *ir.Value) []sym.Expr {
	v = k.resolve(v)
	if t, ok := v.Type().(*ir.TensorType); ok && t.Ranked() {
		return graph.DimsOf(t)
	}
	return k.c.argDims[v]
}

// symbolicReshapeGroups splits the sizes of a reshape's result and
// operand (#graph.dims: constants and symbolic expressions) into the
// shortest runs of dims whose products are equal, in order; nil when some
// run has none (an unnamed ?, or products that only the whole shapes
// share).
func symbolicReshapeGroups(from, to []sym.Expr) []dimGroup {
	// (A product too large to expand compares unequal: no group.)
	equal := func(a, b []sym.Expr) bool {
		pa, ok1 := sym.ProductWithin(a...)
		pb, ok2 := sym.ProductWithin(b...)
		return ok1 && ok2 && pa.Equal(pb)
	}
	for _, e := range append(slices.Clone(from), to...) {
		if graph.IsUnknown(e) {
			return nil
		}
	}
	if len(from) == 0 || len(to) == 0 {
		return nil
	}
	var gs []dimGroup
	i, j := 0, 0
	for i < len(from) || j < len(to) {
		found := false
		// The pair of non-empty runs with the fewest dims in all.
		for n := 2; n <= len(from)-i+len(to)-j && !found; n++ {
			for a := 1; a < n && !found; a++ {
				b := n - a
				if i+a > len(from) || j+b > len(to) || !equal(from[i:i+a], to[j:j+b]) {
					continue
				}
				gs = append(gs, dimGroup{from: [2]int{i, i + a}, to: [2]int{j, j + b}})
				i, j, found = i+a, j+b, true
			}
		}
		if !found {
			return nil
		}
	}
	return gs
}

func concatAxis(op *ir.Operation) int64 {
	axis := graph.Axis(op)
	if axis < 0 {
		axis += int64(len(shapeOf(op.Result(0))))
	}
	return axis
}

func gatherAxis(op *ir.Operation, rank int) int {
	axis := int(graph.Axis(op))
	if axis < 0 {
		axis += rank
	}
	return axis
}
