// Package arith is Strata's arith dialect, compatible with upstream MLIR 19:
// integer and floating-point arithmetic, comparisons, select and casts,
// elementwise on scalars, vectors and tensors.
//
// The ops are defined by tables (binaryOps, castOps) in ops.go; their
// pretty syntax is in syntax.go, their folders in fold.go and their
// canonicalization patterns in canonicalize.go. The scalar semantics that
// folding and the reference interpreter share are exported from eval.go:
// EvalInt, EvalFloat, CmpI, CmpF and Cast.
package arith

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// materializeConstant builds arith.constant for an integer, float or dense
// attribute whose type is t.
func materializeConstant(b *ir.Builder, a ir.Attribute, t ir.Type, loc ir.Location) *ir.Operation {
	if typeOfAttr(a) != t || !(intOrFloatLike.matches(t) || signlessIntLike.matches(t)) {
		return nil
	}
	return b.Op(OpConstant, loc, nil, []ir.Type{t}, ir.NamedAttr{Name: "value", Value: a})
}

// Constant inserts arith.constant with value a (an ir.IntegerAttr,
// ir.FloatAttr or ir.DenseAttr) and returns its result. It panics if a is of
// another kind: that is a bug in the caller.
func Constant(b *ir.Builder, loc ir.Location, a ir.Attribute) *ir.Value {
	op := materializeConstant(b, a, typeOfAttr(a), loc)
	if op == nil {
		panic(fmt.Sprintf("arith.Constant: %s is not an integer, float or dense constant", a))
	}
	return op.Result(0)
}

// ConstantIndex inserts the index constant v.
func ConstantIndex(b *ir.Builder, loc ir.Location, v int64) *ir.Value {
	return Constant(b, loc, ir.IntegerAttr{Value: v, Type: ir.Index})
}

// ConstantInt inserts the integer constant v of type t (a signless integer
// or index type, or a vector or tensor of them, which v fills), wrapped to
// the element width.
func ConstantInt(b *ir.Builder, loc ir.Location, v int64, t ir.Type) *ir.Value {
	elem := ir.ElementTypeOf(t)
	return Constant(b, loc, splat(t, uint64(ir.TruncInt(v, elem))))
}

// ConstantFloat inserts the float constant v of type t (a float type, or a
// vector or tensor of floats, which v fills), rounded to the element type.
func ConstantFloat(b *ir.Builder, loc ir.Location, v float64, t ir.Type) *ir.Value {
	ft, ok := ir.ElementTypeOf(t).(*ir.FloatType)
	if !ok {
		panic(fmt.Sprintf("arith.ConstantFloat: %s is not a float type", t))
	}
	return Constant(b, loc, splat(t, ir.FloatToBits(v, ft)))
}

func splat(t ir.Type, bits uint64) ir.Attribute {
	a := makeConst(t, []uint64{bits})
	if a == nil {
		panic(fmt.Sprintf("arith: cannot make a constant of type %s", t))
	}
	return a
}

// defaultProps returns the properties upstream's builders give op name by
// default: fastmath or overflow flags of none.
func defaultProps(name string) []ir.NamedAttr {
	if d := opDefs[name]; d != nil {
		for _, p := range d.Inherent {
			switch p {
			case fastMath.prop:
				if name != OpExtF && name != OpTruncF {
					return []ir.NamedAttr{{Name: p, Value: FastMathNone}}
				}
			case overflow.prop:
				return []ir.NamedAttr{{Name: p, Value: OverflowNone}}
			}
		}
	}
	return nil
}

// Binary inserts the binary op name ("arith.addf", "arith.muli", ...) on x
// and y with default flags and returns its result, of x's type.
func Binary(b *ir.Builder, name string, loc ir.Location, x, y *ir.Value) *ir.Value {
	return b.Op(name, loc, []*ir.Value{x, y}, []ir.Type{x.Type()}, defaultProps(name)...).Result(0)
}

// Unary inserts a unary op such as "arith.negf" on x.
func Unary(b *ir.Builder, name string, loc ir.Location, x *ir.Value) *ir.Value {
	return b.Op(name, loc, []*ir.Value{x}, []ir.Type{x.Type()}, defaultProps(name)...).Result(0)
}

// NewCmpI inserts arith.cmpi p on x and y; the result is i1 of their shape.
func NewCmpI(b *ir.Builder, loc ir.Location, p CmpIPredicate, x, y *ir.Value) *ir.Value {
	return b.Op(OpCmpI, loc, []*ir.Value{x, y}, []ir.Type{withElem(x.Type(), ir.I1)},
		ir.NamedAttr{Name: "predicate", Value: ir.IntegerAttr{Value: int64(p), Type: ir.I64}}).Result(0)
}

// NewCmpF inserts arith.cmpf p on x and y; the result is i1 of their shape.
func NewCmpF(b *ir.Builder, loc ir.Location, p CmpFPredicate, x, y *ir.Value) *ir.Value {
	return b.Op(OpCmpF, loc, []*ir.Value{x, y}, []ir.Type{withElem(x.Type(), ir.I1)},
		ir.NamedAttr{Name: "predicate", Value: ir.IntegerAttr{Value: int64(p), Type: ir.I64}},
		ir.NamedAttr{Name: "fastmath", Value: FastMathNone}).Result(0)
}

// NewSelect inserts arith.select c, x, y.
func NewSelect(b *ir.Builder, loc ir.Location, c, x, y *ir.Value) *ir.Value {
	return b.Op(OpSelect, loc, []*ir.Value{c, x, y}, []ir.Type{x.Type()}).Result(0)
}

// NewCast inserts the cast op name ("arith.extf", "arith.index_cast", ...)
// converting x to type to.
func NewCast(b *ir.Builder, name string, loc ir.Location, x *ir.Value, to ir.Type) *ir.Value {
	return b.Op(name, loc, []*ir.Value{x}, []ir.Type{to}).Result(0)
}
