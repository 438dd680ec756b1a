package lower

import (
	"math"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/graph"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
)

// The scalar semantics of the graph ops in arith and math. Each mapping
// gives, in the interpreter, the bits graph's own rule gives (NaN payloads
// aside); docs/lowering.md has the table.

// floatUnaryOps are the float unary ops that are one arith or math op: the
// interpreter evaluates both sides with the same float64 function and
// rounds once to the element type.
var floatUnaryOps = map[string]string{
	graph.OpNeg: arith.OpNegF, graph.OpAbs: mathd.OpAbsF, graph.OpExp: mathd.OpExp, graph.OpLog: mathd.OpLog,
	graph.OpSqrt: mathd.OpSqrt, graph.OpRsqrt: mathd.OpRsqrt, graph.OpTanh: mathd.OpTanh, graph.OpErf: mathd.OpErf,
	graph.OpSin: mathd.OpSin, graph.OpCos: mathd.OpCos,
}

// floatBinaryOps map float binary ops: IEEE operations in the element type
// (graph computes in float64 and rounds once, which for these is the same),
// NaN-propagating maximum and minimum, and math.powf for pow.
var floatBinaryOps = map[string]string{
	graph.OpAdd: arith.OpAddF, graph.OpSub: arith.OpSubF, graph.OpMul: arith.OpMulF, graph.OpDiv: arith.OpDivF,
	graph.OpMax: arith.OpMaximumF, graph.OpMin: arith.OpMinimumF, graph.OpPow: mathd.OpPowF,
}

// intBinaryOps map the integer binary ops that need no guard.
var intBinaryOps = map[string]string{
	graph.OpAdd: arith.OpAddI, graph.OpSub: arith.OpSubI, graph.OpMul: arith.OpMulI, graph.OpMax: arith.OpMaxSI, graph.OpMin: arith.OpMinSI,
}

// cmpF and cmpI map graph.cmp predicates: comparisons with NaN are false
// except ne; i1 compares as 0 and 1, so unsigned.
var (
	cmpF  = map[string]arith.CmpFPredicate{"eq": arith.CmpFOEQ, "ne": arith.CmpFUNE, "lt": arith.CmpFOLT, "le": arith.CmpFOLE, "gt": arith.CmpFOGT, "ge": arith.CmpFOGE}
	cmpI  = map[string]arith.CmpIPredicate{"eq": arith.CmpIEQ, "ne": arith.CmpINE, "lt": arith.CmpISLT, "le": arith.CmpISLE, "gt": arith.CmpISGT, "ge": arith.CmpISGE}
	cmpI1 = map[string]arith.CmpIPredicate{"eq": arith.CmpIEQ, "ne": arith.CmpINE, "lt": arith.CmpIULT, "le": arith.CmpIULE, "gt": arith.CmpIUGT, "ge": arith.CmpIUGE}
	sqrt2 = math.Sqrt2
)

// approxDiv is the fastmath flag of a division that the GPU may compute
// as x·rcp.approx(y) (no IEEE slow path, a subroutine call that
// serializes a wgmma kernel's tensor-core instructions); the interpreter
// and the CPU divide exactly.
var approxDiv, _ = arith.FastMath("afn")

func (k *kernel) mathOp(name string, operands ...*ir.Value) *ir.Value {
	return k.emit(name, 0, nil, operands, func(b *ir.Builder) *ir.Value {
		op, err := mathd.New(b, name, k.loc, operands...)
		if err != nil {
			panic(err) // names come from the tables above
		}
		return op.Result(0)
	})
}

func (k *kernel) floatOp(name string, operands ...*ir.Value) *ir.Value {
	if len(operands) == 1 {
		if name == arith.OpNegF {
			return k.unary(name, operands[0])
		}
		return k.mathOp(name, operands...)
	}
	if name == mathd.OpPowF {
		return k.mathOp(name, operands...)
	}
	return k.binary(name, operands[0], operands[1])
}

// unaryElem emits unary op name on x of type elem.
func (k *kernel) unaryElem(name, approximate string, x *ir.Value, elem ir.Type) (*ir.Value, error) {
	if !ir.IsFloat(elem) {
		zero := k.intConst(0, elem)
		switch name {
		case graph.OpNeg:
			return k.binary(arith.OpSubI, zero, x), nil
		case graph.OpAbs:
			// A select rather than math.absi, which the GPU targets lack;
			// 0 - MIN wraps to MIN, as graph's abs.
			return k.sel(k.cmpi(arith.CmpISLT, x, zero), k.binary(arith.OpSubI, zero, x), x), nil
		case graph.OpRelu:
			return k.binary(arith.OpMaxSI, x, zero), nil
		}
		return nil, errorf(k.loc, "%s is not defined on %s", name, elem)
	}
	if m, ok := floatUnaryOps[name]; ok {
		return k.floatOp(m, x), nil
	}
	switch name {
	case graph.OpReciprocal:
		return k.binary(arith.OpDivF, k.floatConst(1, elem), x), nil
	case graph.OpRelu:
		return k.sel(k.cmpf(arith.CmpFOLT, x, k.zero(elem)), k.zero(elem), x), nil
	}
	// Formulas of several steps run in graph.ComputeType (f32 below f64),
	// step by step, as graph's own semantics compute them.
	ct := graph.ComputeType(elem)
	w := k.convert(x, elem, ct)
	c := func(v float64) *ir.Value { return k.floatConst(v, ct) }
	mul := func(a, b *ir.Value) *ir.Value { return k.binary(arith.OpMulF, a, b) }
	add := func(a, b *ir.Value) *ir.Value { return k.binary(arith.OpAddF, a, b) }
	div := func(a, b *ir.Value) *ir.Value { return k.binary(arith.OpDivF, a, b) }
	var r *ir.Value
	switch {
	case name == graph.OpSigmoid:
		// One exp and one division: e = e^-|w|, r = σ(|w|), e·r = σ(-|w|).
		e := k.mathOp(mathd.OpExp, k.unary(arith.OpNegF, k.mathOp(mathd.OpAbsF, w)))
		r = div(c(1), add(c(1), e))
		r = k.sel(k.cmpf(arith.CmpFOGE, w, c(0)), r, mul(e, r))
	case name == graph.OpGELU && approximate == "tanh":
		// graph.GELUTanh's x / (1 + e^(−2u)), step by step.
		a := mul(w, add(c(graph.GELUTanhConst), mul(c(graph.GELUTanhCubic), mul(w, w))))
		d := add(c(1), k.mathOp(mathd.OpExp, a))
		r = k.emit(arith.OpDivF, 1, nil, []*ir.Value{w, d}, func(b *ir.Builder) *ir.Value {
			return b.Op(arith.OpDivF, k.loc, []*ir.Value{w, d}, []ir.Type{ct},
				ir.NamedAttr{Name: arith.FastMathAttr, Value: approxDiv}).Result(0)
		})
	case name == graph.OpGELU:
		r = mul(mul(c(0.5), w), add(c(1), k.mathOp(mathd.OpErf, div(w, c(sqrt2)))))
	default:
		return nil, errorf(k.loc, "cannot lower %s", name)
	}
	return k.convert(r, ct, elem), nil
}

// binaryElem emits binary op name on a and b of type elem.
func (k *kernel) binaryElem(name string, a, b *ir.Value, elem ir.Type) (*ir.Value, error) {
	if ir.IsFloat(elem) {
		m, ok := floatBinaryOps[name]
		if !ok {
			return nil, errorf(k.loc, "cannot lower %s", name)
		}
		return k.floatOp(m, a, b), nil
	}
	if elem == ir.I1 {
		return nil, errorf(k.loc, "%s is not defined on i1", name)
	}
	if m, ok := intBinaryOps[name]; ok {
		return k.binary(m, a, b), nil
	}
	zero, one := k.intConst(0, elem), k.intConst(1, elem)
	switch name {
	case graph.OpDiv:
		// x / 0 = 0, and MIN / -1 wraps to MIN: neither may reach divsi.
		isZero, isM1 := k.cmpi(arith.CmpIEQ, b, zero), k.cmpi(arith.CmpIEQ, b, k.intConst(-1, elem))
		q := k.binary(arith.OpDivSI, a, k.sel(k.ori(isZero, isM1), one, b))
		return k.sel(isZero, zero, k.sel(isM1, k.binary(arith.OpSubI, zero, a), q)), nil
	case graph.OpPow:
		return k.intPow(a, b, elem)
	}
	return nil, errorf(k.loc, "cannot lower %s", name)
}

// intPow is graph's integer power (graph.intPow): square-and-multiply
// over the exponent's bits, wrapping, in a loop.for of one step per bit
// (math.ipowi has no GPU lowering); a negative exponent gives 1 for a = 1,
// ±1 for a = -1 and 0 otherwise.
func (k *kernel) intPow(a, b *ir.Value, elem ir.Type) (*ir.Value, error) {
	zero, one := k.intConst(0, elem), k.intConst(1, elem)
	neg := k.cmpi(arith.CmpISLT, b, zero)
	e0 := k.sel(neg, zero, b)
	res, err := k.forLoop(k.levelOf(a, b), k.index(0), k.index(int64(ir.IntWidth(elem)-1)), []*ir.Value{one, a, e0},
		func(_ *ir.Value, it []*ir.Value) ([]*ir.Value, error) {
			r, base, e := it[0], it[1], it[2]
			odd := k.cmpi(arith.CmpINE, k.binary(arith.OpAndI, e, one), zero)
			return []*ir.Value{
				k.sel(odd, k.binary(arith.OpMulI, r, base), r),
				k.binary(arith.OpMulI, base, base),
				k.binary(arith.OpShRUI, e, one),
			}, nil
		})
	if err != nil {
		return nil, err
	}
	minusOne := k.intConst(-1, elem)
	oddB := k.cmpi(arith.CmpINE, k.binary(arith.OpAndI, b, one), zero)
	negPow := k.sel(k.cmpi(arith.CmpIEQ, a, one), one,
		k.sel(k.cmpi(arith.CmpIEQ, a, minusOne), k.sel(oddB, minusOne, one), zero))
	return k.sel(neg, negPow, res[0]), nil
}

// compare emits graph.cmp.
func (k *kernel) compare(pred string, a, b *ir.Value) *ir.Value {
	t := a.Type()
	switch {
	case ir.IsFloat(t):
		return k.cmpf(cmpF[pred], a, b)
	case t == ir.I1:
		// i1 compares as 0 and 1, widened: PTX has no ordered compare of
		// predicates.
		return k.cmpi(cmpI1[pred], k.cast(arith.OpExtUI, a, ir.I32), k.cast(arith.OpExtUI, b, ir.I32))
	}
	return k.cmpi(cmpI[pred], a, b)
}

func floatWidth(t ir.Type) int {
	switch t {
	case ir.F16, ir.BF16:
		return 16
	case ir.F32:
		return 32
	}
	return 64
}

// convert emits graph.cast's conversion of x from one element type to
// another.
func (k *kernel) convert(x *ir.Value, from, to ir.Type) *ir.Value {
	if from == to {
		return x
	}
	fromF, toF := ir.IsFloat(from), ir.IsFloat(to)
	switch {
	case fromF && toF:
		wf, wt := floatWidth(from), floatWidth(to)
		switch {
		case wf < wt:
			return k.cast(arith.OpExtF, x, to)
		case wf > wt:
			return k.cast(arith.OpTruncF, x, to)
		}
		return k.cast(arith.OpTruncF, k.cast(arith.OpExtF, x, ir.F32), to) // f16 ↔ bf16
	case fromF && to == ir.I1:
		return k.cmpf(arith.CmpFUNE, x, k.zero(from))
	case fromF:
		// Truncate toward zero, saturate, NaN to 0: fptosi only sees values
		// in range.
		w := ir.IntWidth(to)
		v := k.convert(x, from, ir.F64)
		t := k.mathOp(mathd.OpTrunc, v)
		hi := math.Ldexp(1, w-1)
		isHi := k.cmpf(arith.CmpFOGE, t, k.floatConst(hi, ir.F64))
		isLo := k.cmpf(arith.CmpFOLT, t, k.floatConst(-hi, ir.F64))
		isNaN := k.cmpf(arith.CmpFUNO, v, v)
		safe := k.sel(k.ori(k.ori(isHi, isLo), isNaN), k.floatConst(0, ir.F64), t)
		r := k.cast(arith.OpFPToSI, safe, to)
		r = k.sel(isHi, k.intConst(1<<(w-1)-1, to), r)
		return k.sel(isLo, k.intConst(-1<<(w-1), to), r)
	case toF && from == ir.I1:
		// 0 and 1 are exact in every float type: a select, not two
		// conversions through float64 (a one-hot mask over GPT-2's 50304
		// classes converts 412 million of them a training step).
		return k.sel(x, k.floatConst(1, to), k.zero(to))
	case toF:
		// graph converts through float64, then rounds to the target.
		return k.convert(k.cast(arith.OpSIToFP, x, ir.F64), ir.F64, to)
	case to == ir.I1:
		return k.cmpi(arith.CmpINE, x, k.intConst(0, from))
	case from == ir.I1:
		return k.cast(arith.OpExtUI, x, to)
	case ir.IntWidth(from) < ir.IntWidth(to):
		return k.cast(arith.OpExtSI, x, to)
	}
	return k.cast(arith.OpTruncI, x, to)
}
