package graph

import (
	"slices"

	"github.com/strata-ir/strata/ir"
)

// Emitter builds graph ops at one location for code that expands one op
// into many (decompositions, gradients). It keeps the first error, so that
// expansions read as straight-line formulas: after an error every method
// returns nil and builds nothing, and the caller checks Err once at the end.
type Emitter struct {
	B   *ir.Builder
	Loc ir.Location
	Err error
}

// Fail records a diagnostic at the emitter's location, unless an error is
// already recorded.
func (e *Emitter) Fail(format string, args ...any) {
	if e.Err == nil {
		e.Err = ir.Errorf(e.Loc, format, args...)
	}
}

// Op builds graph op name on operands with attrs, its type inferred (see
// Build).
func (e *Emitter) Op(name string, operands []*ir.Value, attrs ...ir.NamedAttr) *ir.Value {
	if e.Err != nil {
		return nil
	}
	if slices.Contains(operands, nil) {
		e.Fail("internal error: missing operand building graph.%s", name)
		return nil
	}
	v, err := Build(e.B, name, e.Loc, operands, ir.Dict(attrs...))
	if err != nil {
		e.Err = err
		return nil
	}
	return v
}

// Typed builds graph op name with the given result type (see BuildTyped).
func (e *Emitter) Typed(name string, operands []*ir.Value, t ir.Type, attrs ...ir.NamedAttr) *ir.Value {
	if e.Err != nil {
		return nil
	}
	v, err := BuildTyped(e.B, name, e.Loc, operands, ir.Dict(attrs...), t)
	if err != nil {
		e.Err = err
		return nil
	}
	return v
}

// Unary builds the one-operand op name on x.
func (e *Emitter) Unary(name string, x *ir.Value) *ir.Value { return e.Op(name, []*ir.Value{x}) }

// Binary builds the two-operand op name on x and y.
func (e *Emitter) Binary(name string, x, y *ir.Value) *ir.Value {
	return e.Op(name, []*ir.Value{x, y})
}

// Reduce builds the reduction name (OpReduceSum…) of x over axes, keeping
// the reduced dims as size 1 when keep is set.
func (e *Emitter) Reduce(name string, x *ir.Value, axes []int64, keep bool) *ir.Value {
	return e.Op(name, []*ir.Value{x},
		ir.NamedAttr{Name: "axes", Value: Ints(axes...)}, ir.NamedAttr{Name: "keepdims", Value: ir.Bool(keep)})
}

// Scalar builds a rank-0 constant of the float type elem holding v rounded
// to elem; broadcasting stretches it to any shape.
func (e *Emitter) Scalar(elem ir.Type, v float64) *ir.Value {
	ft, ok := elem.(*ir.FloatType)
	if !ok {
		e.Fail("expected a float element type, got %s", elem)
		return nil
	}
	return e.Op("constant", nil, ir.NamedAttr{Name: "value",
		Value: ir.DenseAttr{Type: ir.TensorOf(nil, ft), Bits: []uint64{ir.FloatToBits(v, ft)}, Splat: true}})
}

// Results builds graph op name on operands with attrs, its types inferred,
// and returns all its results (Op returns the first).
func (e *Emitter) Results(name string, operands []*ir.Value, attrs ...ir.NamedAttr) []*ir.Value {
	v := e.Op(name, operands, attrs...)
	if v == nil {
		return nil
	}
	return v.DefiningOp().Results()
}
