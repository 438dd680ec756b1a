package ir

import (
	"math"
	"strconv"
	"strings"
)

// nanStyle says how a narrow float format spells its special values.
type nanStyle int

const (
	// ieeeSpecials: an all-ones exponent is an infinity (zero mantissa) or
	// a NaN.
	ieeeSpecials nanStyle = iota
	// finiteNaNOnes ("FN"): no infinities; only the all-ones exponent and
	// mantissa is a NaN, of either sign.
	finiteNaNOnes
	// finiteNaNNegZero ("FNUZ"): no infinities and no negative zero; the
	// negative zero's pattern is the one NaN.
	finiteNaNNegZero
)

// narrowLayout is the encoding of a float type narrower than f16 whose
// FloatAttr holds the value as float64 bits (FloatFromBits), while
// hexadecimal literals spell the type's own bits.
type narrowLayout struct {
	expBits, mantBits, bias int
	style                   nanStyle
}

// narrowFloats are the layouts, by type name (LLVM's APFloat semantics).
var narrowFloats = map[string]narrowLayout{
	"tf32":          {8, 10, 127, ieeeSpecials},
	"f8E5M2":        {5, 2, 15, ieeeSpecials},
	"f8E4M3":        {4, 3, 7, ieeeSpecials},
	"f8E4M3FN":      {4, 3, 7, finiteNaNOnes},
	"f8E5M2FNUZ":    {5, 2, 16, finiteNaNNegZero},
	"f8E4M3FNUZ":    {4, 3, 8, finiteNaNNegZero},
	"f8E4M3B11FNUZ": {4, 3, 11, finiteNaNNegZero},
}

// narrowBitsToFloat64 decodes bits in t's own encoding into the float64
// bits FloatAttr keeps for t; ok is false when t is not a narrow type.
// A NaN keeps its sign and mantissa at the top of float64's mantissa (as
// halfToFloat does), so that narrowSpecialHex prints its pattern back.
func narrowBitsToFloat64(bits uint64, t *FloatType) (f64 uint64, ok bool) {
	lay, ok := narrowFloats[t.Name]
	if !ok {
		return 0, false
	}
	width := 1 + lay.expBits + lay.mantBits
	neg := bits>>(width-1)&1 != 0
	maxExp := uint64(1)<<lay.expBits - 1
	maxMant := uint64(1)<<lay.mantBits - 1
	e, m := bits>>lay.mantBits&maxExp, bits&maxMant
	nan := func() (uint64, bool) {
		f := uint64(0x7FF0000000000000) | m<<(52-lay.mantBits)
		if m == 0 { // FNUZ's NaN has no mantissa: float64's quiet NaN
			f |= 1 << 51
		}
		if neg {
			f |= 1 << 63
		}
		return f, true
	}
	switch lay.style {
	case ieeeSpecials:
		if e == maxExp {
			if m != 0 {
				return nan()
			}
			inf := math.Inf(1)
			if neg {
				inf = math.Inf(-1)
			}
			return math.Float64bits(inf), true
		}
	case finiteNaNOnes:
		if e == maxExp && m == maxMant {
			return nan()
		}
	case finiteNaNNegZero:
		if neg && e == 0 && m == 0 {
			return nan()
		}
	}
	var v float64
	if e == 0 {
		v = math.Ldexp(float64(m), 1-lay.bias-lay.mantBits)
	} else {
		v = math.Ldexp(float64(m|(maxMant+1)), int(e)-lay.bias-lay.mantBits)
	}
	if neg {
		v = -v
	}
	return math.Float64bits(v), true
}

// narrowSpecialHex is the bit pattern of an infinity or NaN of a narrow
// type, as upstream prints them, for FormatFloat; ok is false for other
// types and for an infinity the type cannot hold.
func narrowSpecialHex(v float64, t *FloatType) (string, bool) {
	lay, ok := narrowFloats[t.Name]
	if !ok {
		return "", false
	}
	width := 1 + lay.expBits + lay.mantBits
	maxExp := uint64(1)<<lay.expBits - 1
	maxMant := uint64(1)<<lay.mantBits - 1
	var sign uint64
	if math.Signbit(v) {
		sign = 1 << (width - 1)
	}
	var bits uint64
	switch {
	case math.IsInf(v, 0) && lay.style == ieeeSpecials:
		bits = sign | maxExp<<lay.mantBits
	case math.IsInf(v, 0):
		return "", false
	case lay.style == ieeeSpecials: // the mantissa kept, else the quiet NaN
		m := math.Float64bits(v) >> (52 - lay.mantBits) & maxMant
		if m == 0 {
			m = 1 << (lay.mantBits - 1)
		}
		bits = sign | maxExp<<lay.mantBits | m
	case lay.style == finiteNaNOnes:
		bits = sign | maxExp<<lay.mantBits | maxMant
	default: // the negative zero's pattern
		bits = 1 << (width - 1)
	}
	return "0x" + strings.ToUpper(strconv.FormatUint(bits, 16)), true
}

// roundNarrow rounds v to the nearest value of t's format (ties to even),
// as upstream's parser rounds a decimal literal: past the largest finite
// value an IEEE-style type gets an infinity and the others a NaN, and a
// type without negative zero gets +0. ok is false when t is not narrow.
func roundNarrow(v float64, t *FloatType) (float64, bool) {
	lay, ok := narrowFloats[t.Name]
	if !ok {
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v, true
	}
	maxExpField := 1<<lay.expBits - 1
	var maxFinite float64
	switch lay.style {
	case ieeeSpecials:
		maxFinite = math.Ldexp(2-math.Ldexp(1, -lay.mantBits), maxExpField-1-lay.bias)
	case finiteNaNOnes:
		maxFinite = math.Ldexp(2-math.Ldexp(2, -lay.mantBits), maxExpField-lay.bias)
	default:
		maxFinite = math.Ldexp(2-math.Ldexp(1, -lay.mantBits), maxExpField-lay.bias)
	}
	a := math.Abs(v)
	if a != 0 {
		_, e := math.Frexp(a) // a = f * 2^e, f in [0.5, 1)
		e = max(e-1, 1-lay.bias)
		ulp := math.Ldexp(1, e-lay.mantBits)
		a = math.RoundToEven(a/ulp) * ulp
	}
	switch {
	case a > maxFinite && lay.style == ieeeSpecials:
		a = math.Inf(1)
	case a > maxFinite:
		return math.NaN(), true
	case a == 0 && lay.style == finiteNaNNegZero:
		return 0, true
	}
	return math.Copysign(a, v), true
}
