package interp

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"

	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/internal/refmath"
	"github.com/strata-ir/strata/ir"
)

// The math dialect. Float functions are evaluated in float64 and rounded to
// the element type once per op, so an f32 result is the f32 nearest to the
// float64 result: results never carry more precision than their type into
// the next op. Fast-math flags are ignored (the precise result is allowed).
func init() {
	registerAll(map[string]Rule{
		mathd.OpAbsF:      floatUnary(math.Abs),
		mathd.OpAcos:      floatUnary(math.Acos),
		mathd.OpAcosh:     floatUnary(math.Acosh),
		mathd.OpAsin:      floatUnary(math.Asin),
		mathd.OpAsinh:     floatUnary(math.Asinh),
		mathd.OpAtan:      floatUnary(math.Atan),
		mathd.OpAtanh:     floatUnary(math.Atanh),
		mathd.OpCbrt:      floatUnary(math.Cbrt),
		mathd.OpCeil:      floatUnary(math.Ceil),
		mathd.OpCos:       floatUnary(math.Cos),
		mathd.OpCosh:      floatUnary(refmath.Cosh),
		mathd.OpErf:       floatUnary(math.Erf),
		mathd.OpExp:       floatUnary(refmath.Exp),
		mathd.OpExp2:      floatUnary(math.Exp2),
		mathd.OpExpm1:     floatUnary(math.Expm1),
		mathd.OpFloor:     floatUnary(math.Floor),
		mathd.OpLog:       floatUnary(refmath.Log),
		mathd.OpLog10:     floatUnary(refmath.Log10),
		mathd.OpLog1p:     floatUnary(math.Log1p),
		mathd.OpLog2:      floatUnary(math.Log2),
		mathd.OpRound:     floatUnary(math.Round),
		mathd.OpRoundEven: floatUnary(math.RoundToEven),
		mathd.OpRsqrt:     floatUnary(func(x float64) float64 { return 1 / math.Sqrt(x) }),
		mathd.OpSin:       floatUnary(math.Sin),
		mathd.OpSinh:      floatUnary(refmath.Sinh),
		mathd.OpSqrt:      floatUnary(math.Sqrt),
		mathd.OpTan:       floatUnary(math.Tan),
		mathd.OpTanh:      floatUnary(math.Tanh),
		mathd.OpTrunc:     floatUnary(math.Trunc),

		mathd.OpAtan2:    floatBinaryFn(math.Atan2),
		mathd.OpCopySign: floatBinaryFn(math.Copysign),
		mathd.OpPowF:     floatBinaryFn(refmath.Pow),
		mathd.OpFMA:      fmaRule,
		mathd.OpFPowI:    fpowiRule,

		mathd.OpAbsI: intUnary(func(x int64, _ int) int64 {
			if x < 0 {
				return -x // the most negative value wraps to itself
			}
			return x
		}),
		mathd.OpCtlz: intUnary(func(x int64, w int) int64 {
			return int64(bits.LeadingZeros64(zext(x, w)) - (64 - w))
		}),
		mathd.OpCttz: intUnary(func(x int64, w int) int64 {
			return int64(min(bits.TrailingZeros64(zext(x, w)), w))
		}),
		mathd.OpCtpop: intUnary(func(x int64, w int) int64 {
			return int64(bits.OnesCount64(zext(x, w)))
		}),
		mathd.OpIPowI: ipowiRule,
	})
}

// floatArgs returns args as float tensors of one shape and element type.
func floatArgs(args []Value) ([]*Tensor, *ir.FloatType, error) {
	ts, err := sameElemArgs(args)
	if err != nil {
		return nil, nil, err
	}
	ft, ok := ts[0].elem.(*ir.FloatType)
	if !ok {
		return nil, nil, fmt.Errorf("expected float operands, got %s", ts[0])
	}
	return ts, ft, nil
}

// floatUnary is the rule of a float function of one argument.
func floatUnary(f func(float64) float64) Rule {
	return func(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
		ts, ft, err := floatArgs(args)
		if err != nil {
			return nil, err
		}
		out := like(ts[0], ft)
		switch o := out.data.(type) {
		case []float32: // the common case, without a float64 copy
			for i, x := range Elems[float32](ts[0]) {
				o[i] = float32(f(float64(x)))
			}
		default:
			xs := ts[0].Float64s()
			for i, x := range xs {
				xs[i] = f(x)
			}
			out.setFloats(xs)
		}
		return []Value{out}, nil
	}
}

// floatBinaryFn is the rule of a float function of two arguments.
func floatBinaryFn(f func(x, y float64) float64) Rule {
	return func(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
		ts, ft, err := floatArgs(args)
		if err != nil {
			return nil, err
		}
		xs, ys := ts[0].Float64s(), ts[1].Float64s()
		for i := range xs {
			xs[i] = f(xs[i], ys[i])
		}
		out := like(ts[0], ft)
		out.setFloats(xs)
		return []Value{out}, nil
	}
}

// fmaRule computes a*b+c with one rounding to the element type.
func fmaRule(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	ts, ft, err := floatArgs(args)
	if err != nil {
		return nil, err
	}
	xs, ys, zs := ts[0].Float64s(), ts[1].Float64s(), ts[2].Float64s()
	for i := range xs {
		if ft == ir.F64 {
			xs[i] = math.FMA(xs[i], ys[i], zs[i])
		} else {
			xs[i] = fmaRoundToOdd(xs[i], ys[i], zs[i])
		}
	}
	out := like(ts[0], ft)
	out.setFloats(xs)
	return []Value{out}, nil
}

// fmaRoundToOdd returns a*b+c rounded to float64 with round-to-odd. Rounding
// that once more to a format of at most 26 bits of precision (f32, f16,
// bf16) gives the correctly rounded fma, which rounding a round-to-nearest
// float64 result could miss.
func fmaRoundToOdd(a, b, c float64) float64 {
	r := math.FMA(a, b, c)
	if math.IsInf(r, 0) || math.IsNaN(r) || math.Float64bits(r)&1 != 0 {
		return r
	}
	// Inexact results with an even last bit step one ulp toward the exact value.
	const prec = 2200 // enough for any exact sum of float64 products and addends
	exact := new(big.Float).SetPrec(prec).SetFloat64(a)
	exact.Mul(exact, new(big.Float).SetPrec(prec).SetFloat64(b))
	exact.Add(exact, new(big.Float).SetPrec(prec).SetFloat64(c))
	switch exact.Cmp(big.NewFloat(r)) {
	case 1:
		return math.Nextafter(r, math.Inf(1))
	case -1:
		return math.Nextafter(r, math.Inf(-1))
	}
	return r
}

// fpowiRule raises floats to signed integer powers.
func fpowiRule(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	ts, err := sameShapeArgs(args)
	if err != nil {
		return nil, err
	}
	ft, ok := ts[0].elem.(*ir.FloatType)
	if !ok || !ir.IsInteger(ts[1].elem) {
		return nil, fmt.Errorf("expected a float base and an integer power, got %s and %s", ts[0], ts[1])
	}
	xs, ns := ts[0].Float64s(), ts[1].Int64s()
	for i := range xs {
		xs[i] = refmath.Pow(xs[i], float64(ns[i]))
	}
	out := like(ts[0], ft)
	out.setFloats(xs)
	return []Value{out}, nil
}

// intArgs returns args as integer tensors of one shape and element type,
// and the type's width.
func intArgs(args []Value) ([]*Tensor, int, error) {
	ts, err := sameElemArgs(args)
	if err != nil {
		return nil, 0, err
	}
	if !ir.IsIntOrIndex(ts[0].elem) {
		return nil, 0, fmt.Errorf("expected integer operands, got %s", ts[0])
	}
	return ts, ir.IntWidth(ts[0].elem), nil
}

// intUnary is the rule of an integer function of one argument; f may
// return any int64, which is wrapped to the element type.
func intUnary(f func(x int64, width int) int64) Rule {
	return func(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
		ts, w, err := intArgs(args)
		if err != nil {
			return nil, err
		}
		xs := ts[0].Int64s()
		for i, x := range xs {
			xs[i] = f(x, w)
		}
		out := like(ts[0], ts[0].elem)
		out.setInts(xs)
		return []Value{out}, nil
	}
}

// ipowiRule raises signed integers to signed integer powers, wrapping on
// overflow; a negative power gives 0 unless the base is 1 or -1, and zero to
// a negative power is undefined.
func ipowiRule(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	ts, _, err := intArgs(args)
	if err != nil {
		return nil, err
	}
	xs, ps := ts[0].Int64s(), ts[1].Int64s()
	for i := range xs {
		base, p := xs[i], ps[i]
		switch {
		case p < 0 && base == 0:
			return nil, errors.New("zero raised to a negative power" + elemSuffix(ts[0], i))
		case p < 0 && base == -1 && p&1 != 0:
			xs[i] = -1
		case p < 0 && (base == 1 || base == -1):
			xs[i] = 1
		case p < 0:
			xs[i] = 0
		default:
			r := int64(1)
			for ; p != 0; p >>= 1 {
				if p&1 != 0 {
					r *= base
				}
				base *= base
			}
			xs[i] = r
		}
	}
	out := like(ts[0], ts[0].elem)
	out.setInts(xs)
	return []Value{out}, nil
}
