package interp

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/ir"
)

// The arith dialect. Every op works elementwise on scalars, vectors and
// tensors. Element semantics come from dialects/arith (EvalInt, EvalFloat,
// CmpI, CmpF, Cast), the functions its folders use; the hottest ops also
// have native loops over typed storage, which compute the same values (see
// fastKind) and defer to arith for NaN results, whose bits they might not match.
func init() {
	registerAll(map[string]Rule{
		arith.OpConstant: constantRule,

		arith.OpAddF:     floatBinary(fastAdd),
		arith.OpSubF:     floatBinary(fastSub),
		arith.OpMulF:     floatBinary(fastMul),
		arith.OpDivF:     floatBinary(fastDiv),
		arith.OpRemF:     floatBinary(noFast),
		arith.OpMaximumF: floatBinary(noFast),
		arith.OpMinimumF: floatBinary(noFast),
		arith.OpMaxNumF:  floatBinary(noFast),
		arith.OpMinNumF:  floatBinary(noFast),
		arith.OpNegF:     negfRule,

		arith.OpAddI:       intBinary(fastAdd),
		arith.OpSubI:       intBinary(fastSub),
		arith.OpMulI:       intBinary(fastMul),
		arith.OpDivSI:      intBinary(noFast),
		arith.OpDivUI:      intBinary(noFast),
		arith.OpRemSI:      intBinary(noFast),
		arith.OpRemUI:      intBinary(noFast),
		arith.OpCeilDivSI:  intBinary(noFast),
		arith.OpCeilDivUI:  intBinary(noFast),
		arith.OpFloorDivSI: intBinary(noFast),
		arith.OpMaxSI:      intBinary(noFast),
		arith.OpMaxUI:      intBinary(noFast),
		arith.OpMinSI:      intBinary(noFast),
		arith.OpMinUI:      intBinary(noFast),
		arith.OpAndI:       intBinary(noFast),
		arith.OpOrI:        intBinary(noFast),
		arith.OpXOrI:       intBinary(noFast),
		arith.OpShLI:       intBinary(noFast),
		arith.OpShRSI:      intBinary(noFast),
		arith.OpShRUI:      intBinary(noFast),

		arith.OpCmpI:   cmpiRule,
		arith.OpCmpF:   cmpfRule,
		arith.OpSelect: selectRule,

		arith.OpExtSI:       castRule,
		arith.OpExtUI:       castRule,
		arith.OpTruncI:      castRule,
		arith.OpExtF:        castRule,
		arith.OpTruncF:      castRule,
		arith.OpSIToFP:      castRule,
		arith.OpUIToFP:      castRule,
		arith.OpFPToSI:      castRule,
		arith.OpFPToUI:      castRule,
		arith.OpIndexCast:   castRule,
		arith.OpIndexCastUI: castRule,
		arith.OpBitcast:     castRule,
	})
}

// fastKind names an op that has a native loop over typed storage.
type fastKind uint8

const (
	noFast fastKind = iota
	fastAdd
	fastSub
	fastMul
	fastDiv
)

// fastLoop computes out = a op b with Go's own arithmetic: wrapping for
// integers of the storage's exact width, round-to-nearest-even for floats of
// the storage's precision. It reports false when k has no loop for T.
func fastLoop[T int8 | int16 | int32 | int64 | float32 | float64](k fastKind, out, a, b []T) bool {
	a, b = a[:len(out)], b[:len(out)]
	switch k {
	case fastAdd:
		for i := range out {
			out[i] = a[i] + b[i]
		}
	case fastSub:
		for i := range out {
			out[i] = a[i] - b[i]
		}
	case fastMul:
		for i := range out {
			out[i] = a[i] * b[i]
		}
	case fastDiv:
		var zero T
		if any(zero) != any(float32(0)) && any(zero) != any(float64(0)) {
			return false // integer division has undefined cases
		}
		for i := range out {
			out[i] = a[i] / b[i]
		}
	default:
		return false
	}
	return true
}

// sameShapeArgs returns args as tensors, which must all have one shape.
func sameShapeArgs(args []Value) ([]*Tensor, error) {
	ts := make([]*Tensor, len(args))
	for i, a := range args {
		t, ok := a.(*Tensor)
		if !ok {
			return nil, fmt.Errorf("operand %d: expected a tensor, vector or scalar, got %s", i, a)
		}
		if i > 0 && !slices.Equal(t.shape, ts[0].shape) {
			return nil, fmt.Errorf("operand %d has shape %v, operand 0 has shape %v", i, t.shape, ts[0].shape)
		}
		ts[i] = t
	}
	return ts, nil
}

// sameElemArgs is sameShapeArgs for operands that also share an element type.
func sameElemArgs(args []Value) ([]*Tensor, error) {
	ts, err := sameShapeArgs(args)
	if err != nil {
		return nil, err
	}
	for i, t := range ts[1:] {
		if t.elem != ts[0].elem {
			return nil, fmt.Errorf("operand %d has element type %s, operand 0 has %s", i+1, t.elem, ts[0].elem)
		}
	}
	return ts, nil
}

// elemSuffix locates element i in messages about shaped values.
func elemSuffix(t *Tensor, i int) string {
	if len(t.shape) == 0 {
		return ""
	}
	return fmt.Sprintf(" (element %d)", i)
}

func constantRule(_ *Frame, op *ir.Operation, _ []Value) ([]Value, error) {
	if op.NumResults() != 1 {
		return nil, fmt.Errorf("expected one result")
	}
	rt := op.Result(0).Type()
	var (
		t   *Tensor
		err error
	)
	switch a := op.Attr("value").(type) {
	case ir.DenseAttr:
		if _, complex := a.Type.ElementType().(*ir.ComplexType); complex {
			return nil, fmt.Errorf("complex constants are not supported by the interpreter")
		}
		if a.Type.ElementType() != ir.ElementTypeOf(rt) {
			return nil, fmt.Errorf("value of type %s for a result of type %s", a.Type, rt)
		}
		t, err = FromBits(a.Type.ElementType(), a.Type.Shape(), a.Bits)
	case ir.IntegerAttr:
		t, err = ScalarInt(rt, a.Value)
	case ir.FloatAttr:
		t, err = FromBits(a.Type, nil, []uint64{a.Bits})
	case nil:
		return nil, fmt.Errorf("has no value attribute")
	default:
		return nil, fmt.Errorf("value %s is not supported by the interpreter", a)
	}
	if err != nil {
		return nil, err
	}
	return []Value{t}, nil
}

// floatBinary is the rule of a float binary op.
func floatBinary(k fastKind) Rule {
	return func(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
		ts, err := sameElemArgs(args)
		if err != nil {
			return nil, err
		}
		a, b := ts[0], ts[1]
		ft, ok := a.elem.(*ir.FloatType)
		if !ok {
			return nil, fmt.Errorf("expected float operands, got %s", a)
		}
		name := op.Name()
		out := like(a, ft)
		slow := func(x, y float64) float64 {
			r, _ := arith.EvalFloat(name, ft, x, y)
			return r
		}
		switch o := out.data.(type) {
		case []float32:
			if fastLoop(k, o, Elems[float32](a), Elems[float32](b)) {
				fixNaNs(o, Elems[float32](a), Elems[float32](b), slow)
				return []Value{out}, nil
			}
		case []float64:
			if fastLoop(k, o, Elems[float64](a), Elems[float64](b)) {
				fixNaNs(o, Elems[float64](a), Elems[float64](b), slow)
				return []Value{out}, nil
			}
		}
		if !arith.IsFloatOp(name) {
			return nil, fmt.Errorf("is not a float op known to dialects/arith")
		}
		xs, ys := a.Float64s(), b.Float64s()
		for i := range xs {
			xs[i] = slow(xs[i], ys[i])
		}
		out.setFloats(xs)
		return []Value{out}, nil
	}
}

// fixNaNs recomputes NaN results with arith's semantics, which pick the
// NaN's sign and payload as APFloat does rather than as the hardware does.
func fixNaNs[T float32 | float64](out, a, b []T, slow func(x, y float64) float64) {
	for i, r := range out {
		if r != r {
			out[i] = T(slow(float64(a[i]), float64(b[i])))
		}
	}
}

func negfRule(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := sameShapeArgs(args)
	if err != nil {
		return nil, err
	}
	ft, ok := ts[0].elem.(*ir.FloatType)
	if !ok {
		return nil, fmt.Errorf("expected a float operand, got %s", ts[0])
	}
	xs := ts[0].Float64s()
	for i, x := range xs {
		xs[i], _ = arith.EvalFloat(op.Name(), ft, x, 0)
	}
	out := like(ts[0], ft)
	out.setFloats(xs)
	return []Value{out}, nil
}

// intBinary is the rule of an integer binary op.
func intBinary(k fastKind) Rule {
	return func(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
		ts, err := sameElemArgs(args)
		if err != nil {
			return nil, err
		}
		a, b := ts[0], ts[1]
		if !ir.IsIntOrIndex(a.elem) {
			return nil, fmt.Errorf("expected integer operands, got %s", a)
		}
		out := like(a, a.elem)
		// The native loops wrap exactly like arith when the storage has the
		// type's width: i8, i16, i32, i64 and index.
		// (Narrower and unsigned types are stored as int64; see newStorage.)
		var done bool
		switch o := out.data.(type) {
		case []int64:
			done = ir.IntWidth(a.elem) == 64 && fastLoop(k, o, Elems[int64](a), Elems[int64](b))
		case []int32:
			done = fastLoop(k, o, Elems[int32](a), Elems[int32](b))
		case []int16:
			done = fastLoop(k, o, Elems[int16](a), Elems[int16](b))
		case []int8:
			done = fastLoop(k, o, Elems[int8](a), Elems[int8](b))
		}
		if done {
			return []Value{out}, nil
		}
		name := op.Name()
		if !arith.IsIntBinary(name) {
			return nil, fmt.Errorf("is not an integer op known to dialects/arith")
		}
		xs, ys := a.Int64s(), b.Int64s()
		for i := range xs {
			r, ok := arith.EvalInt(name, a.elem, xs[i], ys[i])
			if !ok {
				return nil, fmt.Errorf("%s%s", intUndefined(name, a.elem, ys[i]), elemSuffix(a, i))
			}
			xs[i] = r
		}
		out.setInts(xs)
		return []Value{out}, nil
	}
}

// intUndefined explains why arith.EvalInt found no result for an op whose
// right operand is y.
func intUndefined(name string, t ir.Type, y int64) string {
	w := ir.IntWidth(t)
	switch name {
	case arith.OpShLI, arith.OpShRSI, arith.OpShRUI:
		return fmt.Sprintf("shift amount %d is not less than the bit width %d (the result is poison)", zext(y, w), w)
	}
	if y == 0 {
		return "integer division by zero"
	}
	return fmt.Sprintf("signed division overflow: %d / -1", ir.TruncInt(-1<<(w-1), t))
}

func cmpiRule(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := sameElemArgs(args)
	if err != nil {
		return nil, err
	}
	p, ok := op.Attr("predicate").(ir.IntegerAttr)
	if !ok || !arith.CmpIPredicate(p.Value).Valid() {
		return nil, fmt.Errorf("has no valid predicate")
	}
	pred, elem := arith.CmpIPredicate(p.Value), ts[0].elem
	xs, ys := ts[0].Int64s(), ts[1].Int64s()
	out := like(ts[0], ir.I1)
	o := Elems[bool](out)
	for i := range o {
		o[i] = arith.CmpI(pred, elem, xs[i], ys[i])
	}
	return []Value{out}, nil
}

func cmpfRule(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := sameElemArgs(args)
	if err != nil {
		return nil, err
	}
	p, ok := op.Attr("predicate").(ir.IntegerAttr)
	if !ok || !arith.CmpFPredicate(p.Value).Valid() {
		return nil, fmt.Errorf("has no valid predicate")
	}
	pred := arith.CmpFPredicate(p.Value)
	out := like(ts[0], ir.I1)
	o := Elems[bool](out)
	switch a := ts[0].data.(type) {
	case []float32: // no conversion needed: comparing widened values is exact
		b := Elems[float32](ts[1])
		for i := range o {
			o[i] = arith.CmpF(pred, float64(a[i]), float64(b[i]))
		}
	default:
		xs, ys := ts[0].Float64s(), ts[1].Float64s()
		for i := range o {
			o[i] = arith.CmpF(pred, xs[i], ys[i])
		}
	}
	return []Value{out}, nil
}

func selectRule(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	c, ok := args[0].(*Tensor)
	if !ok || c.elem != ir.I1 {
		return nil, fmt.Errorf("condition must be i1, got %s", args[0])
	}
	vs, err := sameElemArgs(args[1:])
	if err != nil {
		return nil, err
	}
	cond := Elems[bool](c)
	if len(c.shape) == 0 { // one condition picks a whole value
		if cond[0] {
			return []Value{vs[0]}, nil
		}
		return []Value{vs[1]}, nil
	}
	if !slices.Equal(c.shape, vs[0].shape) {
		return nil, fmt.Errorf("condition has shape %v, values have shape %v", c.shape, vs[0].shape)
	}
	out := like(vs[0], vs[0].elem)
	switch o := out.data.(type) {
	case []float64:
		pick(o, cond, Elems[float64](vs[0]), Elems[float64](vs[1]))
	case []float32:
		pick(o, cond, Elems[float32](vs[0]), Elems[float32](vs[1]))
	case []uint16:
		pick(o, cond, Elems[uint16](vs[0]), Elems[uint16](vs[1]))
	case []int64:
		pick(o, cond, Elems[int64](vs[0]), Elems[int64](vs[1]))
	case []int32:
		pick(o, cond, Elems[int32](vs[0]), Elems[int32](vs[1]))
	case []int16:
		pick(o, cond, Elems[int16](vs[0]), Elems[int16](vs[1]))
	case []int8:
		pick(o, cond, Elems[int8](vs[0]), Elems[int8](vs[1]))
	case []bool:
		pick(o, cond, Elems[bool](vs[0]), Elems[bool](vs[1]))
	}
	return []Value{out}, nil
}

// pick sets out[i] to a[i] where cond[i] holds and to b[i] elsewhere.
func pick[T Storage](out []T, cond []bool, a, b []T) {
	for i, c := range cond {
		if c {
			out[i] = a[i]
		} else {
			out[i] = b[i]
		}
	}
}

// castRule converts each element with arith.Cast.
func castRule(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := sameShapeArgs(args)
	if err != nil {
		return nil, err
	}
	a := ts[0]
	name, from, to := op.Name(), a.elem, ir.ElementTypeOf(op.Result(0).Type())
	if rm, ok := op.Attr("roundingmode").(ir.IntegerAttr); ok && rm.Value != 0 {
		return nil, fmt.Errorf("rounding mode %d is not supported by the interpreter (only to_nearest_even)", rm.Value)
	}
	if err := CheckElemType(to); err != nil {
		return nil, err
	}
	out := like(a, to)
	// Integer to f32/f64 needs no arbitrary precision: Go's conversions
	// round once, to nearest even.
	if (name == arith.OpSIToFP || name == arith.OpUIToFP) && (to == ir.F32 || to == ir.F64) {
		w := ir.IntWidth(from)
		xs := a.Int64s()
		fs := make([]float64, len(xs))
		for i, x := range xs {
			switch {
			case name == arith.OpUIToFP && to == ir.F32:
				fs[i] = float64(float32(zext(x, w)))
			case name == arith.OpUIToFP:
				fs[i] = float64(zext(x, w))
			case to == ir.F32:
				fs[i] = float64(float32(x))
			default:
				fs[i] = float64(x)
			}
		}
		out.setFloats(fs)
		return []Value{out}, nil
	}
	bits := a.Bits()
	for i, x := range bits {
		r, ok := arith.Cast(name, from, to, x)
		if !ok {
			return nil, fmt.Errorf("cannot convert %s%s from %s to %s: the result is poison",
				formatBits(from, x), elemSuffix(a, i), from, to)
		}
		bits[i] = r
	}
	t, err := FromBits(to, a.shape, bits)
	if err != nil {
		return nil, err
	}
	return []Value{t}, nil
}

// zext reads the low w bits of v as a natural number.
func zext(v int64, w int) uint64 {
	if w >= 64 {
		return uint64(v)
	}
	return uint64(v) & (1<<w - 1)
}

// formatBits renders one element's bits as a value of type t.
func formatBits(t ir.Type, bits uint64) string {
	if ft, ok := t.(*ir.FloatType); ok {
		return fmt.Sprint(ir.FloatFromBits(bits, ft))
	}
	return fmt.Sprint(int64(bits))
}
