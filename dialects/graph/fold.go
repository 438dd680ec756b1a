package graph

import (
	"strings"

	"github.com/strata-ir/strata/ir"
)

// FoldLimit is the largest element count the folder computes: folding is
// for small constants (masks, scales), not for evaluating programs.
const FoldLimit = 1024

// foldConstant folds graph.constant to its value.
func foldConstant(op *ir.Operation, _ []ir.Attribute) []ir.FoldResult {
	if v, ok := op.Attr("value").(ir.DenseAttr); ok {
		return []ir.FoldResult{{Attr: v}}
	}
	return nil
}

// foldSplatShape folds a shape op (reshape, transpose, broadcast_to) of a
// splat constant to a splat of the result type.
func foldSplatShape(op *ir.Operation, operands []ir.Attribute) []ir.FoldResult {
	in, ok := operands[0].(ir.DenseAttr)
	t, static := staticTensor(op.Result(0).Type())
	if !ok || !static || !(in.Splat || in.Len() == 1) {
		return nil
	}
	return []ir.FoldResult{{Attr: ir.DenseAttr{Type: t, Bits: []uint64{in.At(0)}, Splat: true}}}
}

// staticTensor returns t as a ranked tensor type of static shape.
func staticTensor(t ir.Type) (*ir.TensorType, bool) {
	tt, ok := t.(*ir.TensorType)
	return tt, ok && tt.Ranked() && numElements(tt.Shape()) >= 0
}

// foldElementwise computes an elementwise op (unary, binary, cmp, select,
// cast) whose operands are all constant and whose result has at most
// FoldLimit elements, in the result's element precision.
func foldElementwise(op *ir.Operation, operands []ir.Attribute) []ir.FoldResult {
	out, ok := staticTensor(op.Result(0).Type())
	if !ok || numElements(out.Shape()) > FoldLimit {
		return nil
	}
	ins := make([]ir.DenseAttr, len(operands))
	for i, a := range operands {
		d, ok := a.(ir.DenseAttr)
		if !ok || !sameShapeAndElem(d.Type, op.Operand(i).Type()) {
			return nil
		}
		ins[i] = d
	}
	name := strings.TrimPrefix(op.Name(), Name+".")
	n := numElements(out.Shape())
	idx := make([][]int64, len(ins))
	for i, d := range ins {
		idx[i] = BroadcastIndex(out.Shape(), d.Type.Shape())
	}
	elem := func(i int, k int64) scalar { return scalarOf(ins[i], idx[i][k]) }
	f := elementFunc(name, op, ins)
	if f == nil {
		return nil
	}
	bits := make([]uint64, n)
	for k := range n {
		args := make([]scalar, len(ins))
		for i := range ins {
			args[i] = elem(i, k)
		}
		v, ok := f(args)
		if !ok {
			return nil
		}
		bits[k] = v.bits(out.ElementType())
	}
	return []ir.FoldResult{{Attr: ir.DenseAttr{Type: out, Bits: bits}}}
}

// scalar is one element read from a constant: an integer (i for integer
// types, 0/1 for i1) or a float.
type scalar struct {
	isFloat bool
	f       float64
	i       int64
}

func scalarOf(d ir.DenseAttr, k int64) scalar {
	if ft, ok := d.Type.ElementType().(*ir.FloatType); ok {
		return scalar{isFloat: true, f: ir.FloatFromBits(d.At(k), ft)}
	}
	return scalar{i: d.Int(k)}
}

// bits encodes s in elem, rounding floats and wrapping integers.
func (s scalar) bits(elem ir.Type) uint64 {
	if ft, ok := elem.(*ir.FloatType); ok {
		return ir.FloatToBits(s.f, ft)
	}
	return uint64(ir.TruncInt(s.i, elem))
}

// elementFunc returns the per-element computation of op, or nil when the op
// does not fold.
func elementFunc(name string, op *ir.Operation, ins []ir.DenseAttr) func([]scalar) (scalar, bool) {
	switch name {
	case "select":
		return func(a []scalar) (scalar, bool) {
			if a[0].i != 0 {
				return a[1], true
			}
			return a[2], true
		}
	case "cast":
		return castFunc(ir.ElementTypeOf(op.Result(0).Type()))
	case "cmp":
		pred := attrView{op.Properties()}.str("predicate", "")
		ff, fi := CmpFloatFunc(pred), CmpIntFunc(pred)
		if ff == nil {
			return nil
		}
		return func(a []scalar) (scalar, bool) {
			r := fi(a[0].i, a[1].i)
			if a[0].isFloat {
				r = ff(a[0].f, a[1].f)
			}
			return boolScalar(r), true
		}
	}
	isFloat := ir.IsFloat(ins[0].Type.ElementType())
	switch len(ins) {
	case 1:
		if isFloat {
			f := UnaryFloatFunc(name, attrView{op.Properties()}.str("approximate", "none"), ir.ElementTypeOf(op.Result(0).Type()))
			if f == nil {
				return nil
			}
			return func(a []scalar) (scalar, bool) { return scalar{isFloat: true, f: f(a[0].f)}, true }
		}
		f := UnaryIntFunc(name)
		if f == nil {
			return nil
		}
		return func(a []scalar) (scalar, bool) { return scalar{i: f(a[0].i)}, true }
	case 2:
		if isFloat {
			f := BinaryFloatFunc(name)
			if f == nil {
				return nil
			}
			return func(a []scalar) (scalar, bool) { return scalar{isFloat: true, f: f(a[0].f, a[1].f)}, true }
		}
		f := BinaryIntFunc(name)
		if f == nil {
			return nil
		}
		return func(a []scalar) (scalar, bool) { return scalar{i: f(a[0].i, a[1].i)}, true }
	}
	return nil
}

func boolScalar(b bool) scalar {
	if b {
		return scalar{i: 1}
	}
	return scalar{}
}

// castFunc converts one element to the target element type.
func castFunc(to ir.Type) func([]scalar) (scalar, bool) {
	return func(a []scalar) (scalar, bool) {
		x := a[0]
		switch {
		case ir.IsFloat(to) && x.isFloat:
			return x, true
		case ir.IsFloat(to):
			return scalar{isFloat: true, f: float64(x.i)}, true
		case x.isFloat:
			return scalar{i: FloatToInt(x.f, to)}, true
		case to == ir.I1:
			return boolScalar(x.i != 0), true
		}
		return x, true
	}
}

// BroadcastIndex maps each flat (row-major) index of shape out to the flat
// index of the element of shape in that NumPy broadcasting reads there. Both
// shapes are static and in broadcasts to out.
func BroadcastIndex(out, in []int64) []int64 {
	n := numElements(out)
	idx := make([]int64, n)
	// stride[d] is in's stride for out's dim d, 0 where in is broadcast.
	stride := make([]int64, len(out))
	s := int64(1)
	for d := len(out) - 1; d >= 0; d-- {
		j := d - (len(out) - len(in))
		if j >= 0 && in[j] != 1 {
			stride[d] = s
		}
		if j >= 0 {
			s *= in[j]
		}
	}
	pos := make([]int64, len(out))
	var cur int64
	for k := range n {
		idx[k] = cur
		// Advance the multi-index like an odometer.
		for d := len(out) - 1; d >= 0; d-- {
			pos[d]++
			cur += stride[d]
			if pos[d] < out[d] {
				break
			}
			cur -= stride[d] * pos[d]
			pos[d] = 0
		}
	}
	return idx
}
