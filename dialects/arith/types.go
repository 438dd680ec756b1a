package arith

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/ir"
)

// typeClass is a constraint on an operand or result type: an element kind
// taken as a scalar or as the elements of a vector or tensor.
type typeClass struct {
	name string // as upstream's verifier messages spell it
	elem func(ir.Type) bool
}

var (
	signlessIntLike = typeClass{"signless-integer-like", isSignlessIntOrIndex}
	floatLike       = typeClass{"floating-point-like", ir.IsFloat}
	boolLike        = typeClass{"bool-like", func(t ir.Type) bool { return t == ir.I1 }}
	// signlessIntOnlyLike excludes index (for the cast ops between widths).
	signlessIntOnlyLike = typeClass{"signless-fixed-width-integer-like", isSignlessInt}
	indexOrIntLike      = typeClass{"signless-integer-like or index-like", isSignlessIntOrIndex}
	intOrFloatLike      = typeClass{"signless-integer-or-float-like", func(t ir.Type) bool {
		return isSignlessInt(t) || ir.IsFloat(t)
	}}
)

func isSignlessInt(t ir.Type) bool {
	it, ok := t.(*ir.IntegerType)
	return ok && it.Signedness == ir.Signless
}

func isSignlessIntOrIndex(t ir.Type) bool { return t == ir.Index || isSignlessInt(t) }

// matches reports whether t is a scalar, vector or tensor of the class.
func (c typeClass) matches(t ir.Type) bool {
	switch t.(type) {
	case *ir.VectorType, *ir.TensorType:
	case ir.ShapedType: // memrefs are not values arith computes on
		return false
	}
	return c.elem(ir.ElementTypeOf(t))
}

// check returns upstream's message when t is not of the class.
func (c typeClass) check(what string, i int, t ir.Type) error {
	if c.matches(t) {
		return nil
	}
	return fmt.Errorf("%s #%d must be %s, but got '%s'", what, i, c.name, t)
}

// sameShape reports whether a and b are both scalars, or vectors or tensors
// of the same kind and shape (element types aside).
func sameShape(a, b ir.Type) bool {
	switch a := a.(type) {
	case *ir.TensorType:
		b, ok := b.(*ir.TensorType)
		return ok && a.Ranked() == b.Ranked() && slices.Equal(a.Shape(), b.Shape())
	case *ir.VectorType:
		b, ok := b.(*ir.VectorType)
		return ok && slices.Equal(a.Shape(), b.Shape()) && slices.Equal(a.Scalable, b.Scalable)
	}
	_, shaped := b.(ir.ShapedType)
	return !shaped
}

// sameTensorDims is the first shape rule of the casts: when either side is
// a tensor, the other is a tensor of the same dims (ranked alike), or a
// scalar against a tensor of rank 0.
func sameTensorDims(a, b ir.Type) bool {
	_, at := a.(*ir.TensorType)
	_, bt := b.(*ir.TensorType)
	if !at && !bt {
		return true
	}
	dims := func(t ir.Type) (shape []int64, ranked, ok bool) {
		switch t := t.(type) {
		case *ir.TensorType:
			return t.Shape(), t.Ranked(), true
		case ir.ShapedType:
			return nil, false, false
		}
		return nil, true, true // a scalar has the dims of a rank-0 tensor
	}
	as, ar, aok := dims(a)
	bs, br, bok := dims(b)
	return aok && bok && ar == br && slices.Equal(as, bs)
}

// encoding returns a ranked tensor's encoding, nil for other types.
func encoding(t ir.Type) ir.Attribute {
	if tt, ok := t.(*ir.TensorType); ok {
		return tt.Encoding
	}
	return nil
}

// withElem returns t with its element type replaced by e (e itself for a scalar).
func withElem(t, e ir.Type) ir.Type {
	switch t := t.(type) {
	case *ir.TensorType:
		if !t.Ranked() {
			return ir.UnrankedTensorOf(e)
		}
		return ir.TensorWithEncoding(t.Shape(), e, t.Encoding)
	case *ir.VectorType:
		return ir.ScalableVectorOf(t.Shape(), t.Scalable, e)
	}
	return e
}

// bitWidth is the width of an integer or float type, 0 for others (index
// has no fixed width in arith's casts).
func bitWidth(t ir.Type) int {
	switch t := t.(type) {
	case *ir.IntegerType:
		return t.Width
	case *ir.FloatType:
		return t.Width
	}
	return 0
}
