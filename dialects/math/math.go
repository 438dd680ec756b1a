// Package math defines MLIR's math dialect: elementwise transcendental and
// rounding functions on float (and a few on integer) scalars, vectors and
// tensors, with upstream MLIR 19's syntax, verification and constant folding.
package math

import (
	"fmt"
	gomath "math"
	"math/bits"
	"strings"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/internal/refmath"
	"github.com/strata-ir/strata/ir"
)

// kind is what an op computes on: floats, signless integers, or (fpowi)
// a float and an integer power.
type kind uint8

const (
	floatOp kind = iota
	intOp
	fpowiOp
)

// precision says which float types a folder handles, mirroring upstream:
// ops folded with host libm calls fold only f32 and f64; ops folded with
// exact APFloat arithmetic fold every float type Strata can encode.
type precision uint8

const (
	libm precision = iota
	exact
)

// opSpec is one row of the op table.
type opSpec struct {
	name    string // without the "math." prefix
	arity   int
	kind    kind
	summary string
	desc    string
	// fold computes one element; ok=false leaves the op unfolded. nil
	// means upstream does not fold the op.
	foldF func(x []float64, ft *ir.FloatType) (r float64, ok bool)
	prec  precision
	foldI func(x []int64, width int) (r int64, ok bool)
}

func unary(f func(float64) float64) func([]float64, *ir.FloatType) (float64, bool) {
	return func(x []float64, _ *ir.FloatType) (float64, bool) { return f(x[0]), true }
}

// nonNegative folds f only when x's sign bit is clear, as upstream does for
// log and sqrt (so log(-0.0) stays unfolded while log(0.0) is -inf).
func nonNegative(f func(float64) float64) func([]float64, *ir.FloatType) (float64, bool) {
	return func(x []float64, _ *ir.FloatType) (float64, bool) {
		if gomath.Signbit(x[0]) {
			return 0, false
		}
		return f(x[0]), true
	}
}

// specs lists the ops. Their docs follow upstream's.
var specs = []opSpec{
	{name: "absf", arity: 1, summary: "floating point absolute-value operation", desc: "Computes the absolute value |x| of each element.", foldF: unary(gomath.Abs), prec: exact},
	{name: "acos", arity: 1, summary: "arcus cosine of the specified value", desc: "Computes the arcus cosine of each element, in radians.", foldF: unary(gomath.Acos)},
	{name: "acosh", arity: 1, summary: "Hyperbolic arcus cosine of the given value", desc: "Computes the inverse hyperbolic cosine of each element.", foldF: unary(gomath.Acosh)},
	{name: "asin", arity: 1, summary: "arcus sine of the given value", desc: "Computes the arcus sine of each element, in radians.", foldF: unary(gomath.Asin)},
	{name: "asinh", arity: 1, summary: "hyperbolic arcus sine of the given value", desc: "Computes the inverse hyperbolic sine of each element.", foldF: unary(gomath.Asinh)},
	{name: "atan", arity: 1, summary: "arcus tangent of the given value", desc: "Computes the arcus tangent of each element, in radians.", foldF: unary(gomath.Atan)},
	{name: "atan2", arity: 2, summary: "2-argument arcus tangent of the given values", desc: "Computes atan(lhs/rhs) elementwise, using the signs of both to pick the quadrant; atan2(±0, ±0) follows IEEE 754 (±0 or ±π) and is not folded.", foldF: atan2, prec: exact},
	{name: "atanh", arity: 1, summary: "hyperbolic arcus tangent of the given value", desc: "Computes the inverse hyperbolic tangent of each element.", foldF: unary(gomath.Atanh)},
	{name: "cbrt", arity: 1, summary: "cube root of the specified value", desc: "Computes the cube root of each element. Upstream does not fold it."},
	{name: "ceil", arity: 1, summary: "ceiling of the specified value", desc: "Rounds each element up to the nearest integer value.", foldF: unary(gomath.Ceil), prec: exact},
	{name: "copysign", arity: 2, summary: "A copysign operation", desc: "Returns lhs with the sign of rhs, elementwise.", foldF: func(x []float64, _ *ir.FloatType) (float64, bool) { return gomath.Copysign(x[0], x[1]), true }, prec: exact},
	{name: "cos", arity: 1, summary: "cosine of the specified value", desc: "Computes the cosine of each element, in radians.", foldF: unary(gomath.Cos)},
	{name: "cosh", arity: 1, summary: "hyperbolic cosine of the specified value", desc: "Computes the hyperbolic cosine of each element.", foldF: unary(refmath.Cosh)},
	{name: "erf", arity: 1, summary: "error function of the specified value", desc: "Computes the Gauss error function of each element.", foldF: unary(gomath.Erf)},
	{name: "exp", arity: 1, summary: "base-e exponential of the specified value", desc: "Computes e raised to each element.", foldF: unary(refmath.Exp)},
	{name: "exp2", arity: 1, summary: "base-2 exponential of the specified value", desc: "Computes 2 raised to each element.", foldF: unary(gomath.Exp2)},
	{name: "expm1", arity: 1, summary: "base-e exponential of the specified value minus 1", desc: "Computes exp(x)-1 of each element, accurately for x near zero.", foldF: unary(gomath.Expm1)},
	{name: "floor", arity: 1, summary: "floor of the specified value", desc: "Rounds each element down to the nearest integer value.", foldF: unary(gomath.Floor), prec: exact},
	{name: "fma", arity: 3, summary: "floating point fused multiply-add operation", desc: "Computes a*b+c elementwise with a single rounding. Upstream does not fold it."},
	{name: "log", arity: 1, summary: "base-e logarithm of the specified value", desc: "Computes the natural logarithm of each element.", foldF: nonNegative(refmath.Log)},
	{name: "log10", arity: 1, summary: "base-10 logarithm of the specified value", desc: "Computes the base-10 logarithm of each element.", foldF: nonNegative(refmath.Log10)},
	{name: "log1p", arity: 1, summary: "Computes the natural logarithm of one plus the given value", desc: "Computes log(1+x) of each element, accurately for x near zero.", foldF: func(x []float64, _ *ir.FloatType) (float64, bool) {
		if gomath.Signbit(x[0] + 1) {
			return 0, false
		}
		return gomath.Log1p(x[0]), true
	}},
	{name: "log2", arity: 1, summary: "base-2 logarithm of the specified value", desc: "Computes the base-2 logarithm of each element.", foldF: nonNegative(gomath.Log2)},
	{name: "powf", arity: 2, summary: "floating point raised to the power of operation", desc: "Computes lhs raised to the power rhs, elementwise.", foldF: func(x []float64, _ *ir.FloatType) (float64, bool) { return refmath.Pow(x[0], x[1]), true }},
	{name: "round", arity: 1, summary: "round of the specified value", desc: "Rounds each element to the nearest integer value, halfway cases away from zero.", foldF: unary(gomath.Round)},
	{name: "roundeven", arity: 1, summary: "round of the specified value with halfway cases to even", desc: "Rounds each element to the nearest integer value, halfway cases to even.", foldF: unary(gomath.RoundToEven), prec: exact},
	{name: "rsqrt", arity: 1, summary: "reciprocal of sqrt (1 / sqrt of the specified value)", desc: "Computes 1/sqrt(x) of each element. Upstream does not fold it."},
	{name: "sin", arity: 1, summary: "sine of the specified value", desc: "Computes the sine of each element, in radians.", foldF: unary(gomath.Sin)},
	{name: "sinh", arity: 1, summary: "hyperbolic sine of the specified value", desc: "Computes the hyperbolic sine of each element.", foldF: unary(refmath.Sinh)},
	{name: "sqrt", arity: 1, summary: "sqrt of the specified value", desc: "Computes the square root of each element.", foldF: nonNegative(gomath.Sqrt)},
	{name: "tan", arity: 1, summary: "tangent of the specified value", desc: "Computes the tangent of each element, in radians.", foldF: unary(gomath.Tan)},
	{name: "tanh", arity: 1, summary: "hyperbolic tangent of the specified value", desc: "Computes the hyperbolic tangent of each element.", foldF: unary(gomath.Tanh)},
	{name: "trunc", arity: 1, summary: "trunc of the specified value", desc: "Rounds each element toward zero to the nearest integer value.", foldF: unary(gomath.Trunc)},

	{name: "fpowi", arity: 2, kind: fpowiOp, summary: "floating point raised to the signed integer power", desc: "Computes lhs raised to the integer power rhs, elementwise; rhs has the shape of lhs with a signless integer element type. Upstream does not fold it."},

	{name: "absi", arity: 1, kind: intOp, summary: "integer absolute-value operation", desc: "Computes the absolute value of each element; the most negative value stays as it is.", foldI: func(x []int64, _ int) (int64, bool) {
		if x[0] < 0 {
			return -x[0], true
		}
		return x[0], true
	}},
	{name: "ctlz", arity: 1, kind: intOp, summary: "counts the leading zeros an integer value", desc: "Counts the leading zero bits of each element; zero gives the bit width.", foldI: func(x []int64, w int) (int64, bool) {
		return int64(bits.LeadingZeros64(uint64(x[0])&mask(w)) - (64 - w)), true
	}},
	{name: "ctpop", arity: 1, kind: intOp, summary: "counts the number of set bits of an integer value", desc: "Counts the set bits of each element.", foldI: func(x []int64, w int) (int64, bool) {
		return int64(bits.OnesCount64(uint64(x[0]) & mask(w))), true
	}},
	{name: "cttz", arity: 1, kind: intOp, summary: "counts the trailing zeros an integer value", desc: "Counts the trailing zero bits of each element; zero gives the bit width.", foldI: func(x []int64, w int) (int64, bool) {
		if uint64(x[0])&mask(w) == 0 {
			return int64(w), true
		}
		return int64(bits.TrailingZeros64(uint64(x[0]))), true
	}},
	{name: "ipowi", arity: 2, kind: intOp, summary: "signed integer raised to the power of operation", desc: "Computes lhs raised to the power rhs, elementwise, wrapping on overflow; a negative power gives 0 unless |lhs| is 1, and 0 to a negative power is undefined.", foldI: ipowi},
}

// atan2 folds only in f32 and f64 (checked here, since atan2 bypasses the
// caller's libm gate by being marked exact). Upstream folds atan2(±0, ±0) to
// NaN, but IEEE 754, the interpreter and the GPU give ±0 or ±π there, and a
// fold must never change a program's results: two zeros are left unfolded.
func atan2(x []float64, ft *ir.FloatType) (float64, bool) {
	if x[0] == 0 && x[1] == 0 {
		return 0, false
	}
	if !foldable(ft, libm) {
		return 0, false
	}
	return gomath.Atan2(x[0], x[1]), true
}

// mask returns the low w bits set.
func mask(w int) uint64 {
	if w >= 64 {
		return ^uint64(0)
	}
	return 1<<w - 1
}

// ipowi folds base**power as upstream does, by repeated squaring with
// wrap-around (the caller truncates to the element width).
func ipowi(x []int64, w int) (int64, bool) {
	base, power := x[0], x[1]
	switch {
	case power == 0:
		return 1, true
	case power < 0:
		switch base {
		case 0:
			return 0, false // 0 to a negative power: left alone
		case 1:
			return 1, true
		case -1:
			if power&1 != 0 {
				return -1, true
			}
			return 1, true
		}
		return 0, true
	}
	r := int64(1)
	for p := uint64(power) & mask(w); p != 0; p >>= 1 {
		if p&1 != 0 {
			r *= base
		}
		base *= base
	}
	return r, true
}

// Dialect is the math dialect.
var Dialect = &ir.Dialect{
	Name:    "math",
	Summary: "Elementwise mathematical functions.",
	Description: "The math dialect holds elementwise mathematical functions beyond " +
		"arith's basic arithmetic: exponentials, logarithms, trigonometric and " +
		"hyperbolic functions, roundings and bit counts, on scalars, vectors and " +
		"tensors. Float ops carry `fastmath` flags. Ops on constants fold as upstream " +
		"MLIR folds them; folded constants materialise as `arith.constant`.",
	MaterializeConstant: materializeConstant,
}

func init() {
	for _, s := range specs {
		Dialect.Ops = append(Dialect.Ops, s.def())
	}
}

// Names of the operands by arity, as upstream names them.
var operandNames = [][]string{1: {"operand"}, 2: {"lhs", "rhs"}, 3: {"a", "b", "c"}}

func (s opSpec) def() *ir.OpDef {
	name := "math." + s.name
	d := &ir.OpDef{
		Name:        name,
		Summary:     s.summary,
		Description: s.desc,
		Traits:      ir.Pure | ir.SameOperandsAndResultType,
		Results:     []ir.ArgDoc{{Name: "result", Doc: "of the operands' type"}},
	}
	what := "a float scalar, or a vector or tensor of floats"
	switch s.kind {
	case intOp:
		what = "a signless integer scalar, or a vector or tensor of them"
	case fpowiOp:
		d.Traits = ir.Pure
		d.Results[0].Doc = "of lhs's type"
	}
	for i, n := range operandNames[s.arity] {
		doc := what
		if s.kind == fpowiOp && i == 1 {
			doc = "a signless integer power, of lhs's shape"
		}
		d.Operands = append(d.Operands, ir.ArgDoc{Name: n, Doc: doc})
	}
	if s.kind != intOp {
		d.Inherent = []string{arith.FastMathAttr}
		d.Attrs = []ir.ArgDoc{{Name: arith.FastMathAttr, Doc: "#arith.fastmath<...> flags (default none)"}}
	}
	d.Example = s.example()
	d.Verify = s.verify
	d.Parse = s.parse
	d.Print = s.print
	if s.foldF != nil || s.foldI != nil {
		d.Fold = s.fold
	}
	return d
}

func (s opSpec) example() string {
	switch {
	case s.kind == fpowiOp:
		return "%0 = math.fpowi %x, %n : f32, i32"
	case s.kind == intOp:
		return fmt.Sprintf("%%0 = math.%s %s : i32", s.name, operandList(s.arity))
	case s.arity == 1:
		return fmt.Sprintf("%%0 = math.%s %%x : f32\n%%1 = math.%s %%t fastmath<fast> : tensor<4x?xf32>", s.name, s.name)
	}
	return fmt.Sprintf("%%0 = math.%s %s : f32\n%%1 = math.%s %s fastmath<afn> : vector<4xf32>", s.name, operandList(s.arity), s.name, operandList(s.arity))
}

func operandList(n int) string {
	return [...]string{1: "%x", 2: "%x, %y", 3: "%x, %y, %z"}[n]
}

// elementKindOK reports whether t is a scalar of the wanted element class or
// a vector or tensor of them.
func elementKindOK(t ir.Type, wantFloat bool) bool {
	switch t.(type) {
	case *ir.TensorType, *ir.VectorType:
		t = ir.ElementTypeOf(t)
	}
	if wantFloat {
		return ir.IsFloat(t)
	}
	it, ok := t.(*ir.IntegerType)
	return ok && it.Signedness == ir.Signless
}

func (s opSpec) verify(op *ir.Operation) error {
	if op.NumOperands() != s.arity {
		return fmt.Errorf("expected %d operands, but found %d", s.arity, op.NumOperands())
	}
	if op.NumResults() != 1 {
		return fmt.Errorf("expected 1 result, but found %d", op.NumResults())
	}
	for i, t := range append(op.OperandTypes(), op.ResultTypes()...) {
		wantFloat := s.kind != intOp && !(s.kind == fpowiOp && i == 1)
		if elementKindOK(t, wantFloat) {
			continue
		}
		what := "operand #" + fmt.Sprint(i)
		if i == s.arity {
			what = "result #0"
		}
		class := "floating-point-like"
		if !wantFloat {
			class = "signless-integer-like"
		}
		return fmt.Errorf("%s must be %s, but got '%s'", what, class, t)
	}
	if s.kind == fpowiOp {
		if err := verifyFPowI(op); err != nil {
			return err
		}
	}
	if s.kind != intOp {
		if err := arith.VerifyFastMath(op); err != nil {
			return err
		}
	}
	return nil
}

// verifyFPowI checks that the result has lhs's type and rhs its shape.
func verifyFPowI(op *ir.Operation) error {
	lhs, rhs := op.Operand(0).Type(), op.Operand(1).Type()
	if op.Result(0).Type() != lhs {
		return fmt.Errorf("failed to verify that all of {lhs, result} have same type")
	}
	ls, lok := lhs.(ir.ShapedType)
	rs, rok := rhs.(ir.ShapedType)
	if lok != rok || (lok && (fmt.Sprint(ls.Shape()) != fmt.Sprint(rs.Shape()) || fmt.Sprintf("%T", ls) != fmt.Sprintf("%T", rs))) {
		return fmt.Errorf("failed to verify that lhs and rhs have the same shape")
	}
	return nil
}

// parse reads `%a[, %b[, %c]] [fastmath<flags>] [attr-dict] : type`, or for
// fpowi `: lhs-type, rhs-type`.
func (s opSpec) parse(p *ir.Parser, st *ir.OperationState) error {
	pos := p.Pos()
	operands, err := p.ParseOperandList()
	if err != nil {
		return err
	}
	if len(operands) != s.arity {
		return p.ErrorAt(pos, "expected %d operands, but found %d", s.arity, len(operands))
	}
	if s.kind != intOp {
		if err := arith.ParseFastMath(p, st); err != nil {
			return err
		}
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	typePos := p.Pos()
	types, err := p.ParseColonTypeList()
	if err != nil {
		return err
	}
	want := 1
	if s.kind == fpowiOp {
		want = 2
	}
	if len(types) != want {
		return p.ErrorAt(typePos, "expected %d types, but found %d", want, len(types))
	}
	for len(types) < s.arity {
		types = append(types, types[0])
	}
	if st.Operands, err = p.ResolveAll(operands, types, typePos); err != nil {
		return err
	}
	st.ResultTypes = []ir.Type{types[0]}
	return nil
}

func (s opSpec) print(p *ir.Printer, op *ir.Operation) {
	p.Write(" ")
	p.PrintOperands(op.Operands())
	if s.kind != intOp {
		arith.PrintFastMath(p, op)
	}
	p.PrintAttrDict(op.Attributes(), arith.FastMathAttr)
	p.Write(" : ")
	if s.kind == fpowiOp {
		p.PrintTypes(op.OperandTypes())
		return
	}
	p.PrintType(op.Result(0).Type())
}

// New builds math.<name> of the operands (fastmath none for float ops) at
// b's insertion point; the result has the first operand's type. It fails
// for an unknown op name.
func New(b *ir.Builder, name string, loc ir.Location, operands ...*ir.Value) (*ir.Operation, error) {
	short := strings.TrimPrefix(name, "math.")
	for _, s := range specs {
		if s.name != short {
			continue
		}
		if len(operands) != s.arity {
			return nil, fmt.Errorf("math.%s takes %d operands, got %d", s.name, s.arity, len(operands))
		}
		var props []ir.NamedAttr
		if s.kind != intOp {
			props = append(props, ir.NamedAttr{Name: arith.FastMathAttr, Value: arith.FastMathNone})
		}
		return b.Op("math."+s.name, loc, operands, []ir.Type{operands[0].Type()}, props...), nil
	}
	return nil, fmt.Errorf("unknown math op %q", name)
}
