// Package refmath holds float64 functions where Go's math package is not
// within a few ulps of the exact result, for the code that defines what an
// op computes (the reference interpreter, the constant folders) and the
// tests that check the compiled ops against it.
//
// On amd64, math.Exp overflows to +Inf from x = 709.436139303104 on, where
// e^x is 1.27e308, though the true overflow is above 709.782712893384;
// math.Cosh and math.Sinh, built on it, overflow early with it. There
// these functions sum e^x in 500 bits instead. math.Log (and math.Log10,
// built on it) returns log(2^−1023) for every subnormal x: Log and Log10
// scale a subnormal x into the normal range first. math.Sinh loses a few
// ulps to cancellation below |x| = 22; Sinh goes through math.Expm1
// there, as C libraries do. math.Pow loses about |y·ln x| ulps; Pow works
// in double-double arithmetic (pow.go).
package refmath

import (
	"math"
	"math/big"
)

// nearOverflow is below the first x whose math.Exp is wrong on amd64.
const nearOverflow = 709.4

// Exp is e^x.
func Exp(x float64) float64 {
	if x > nearOverflow && x < 710 {
		return scaledExp(x, 0)
	}
	return math.Exp(x)
}

// Cosh is the hyperbolic cosine of x.
func Cosh(x float64) float64 {
	if a := math.Abs(x); a > nearOverflow && a < 711 {
		return scaledExp(a, -1) // e^−|x| is below an ulp of e^|x|/2 there
	}
	return math.Cosh(x)
}

// Sinh is the hyperbolic sine of x.
func Sinh(x float64) float64 {
	a := math.Abs(x)
	switch {
	case a < 22: // (above, e^−|x| is below an ulp of e^|x|/2)
		t := math.Expm1(a)
		r := 0.5 * (t + t/(t+1))
		if a < 1 {
			r = 0.5 * (2*t - t*t/(t+1))
		}
		return math.Copysign(r, x)
	case a > nearOverflow && a < 711:
		return math.Copysign(scaledExp(a, -1), x)
	}
	return math.Sinh(x)
}

// minNormal is the least normal float64, 2^−1022.
const minNormal = 0x1p-1022

// normalize is 2^54, which takes every subnormal float64 into the normal
// range exactly.
const normalize = 0x1p54

// Log is the natural logarithm of x.
func Log(x float64) float64 {
	if x > 0 && x < minNormal {
		// The subtraction's error is far below the result's ulp (2^−43
		// at |log x| ≥ 708).
		return math.Log(x*normalize) - 54*math.Ln2
	}
	return math.Log(x)
}

// Log10 is the base-10 logarithm of x.
func Log10(x float64) float64 {
	if x > 0 && x < minNormal {
		return Log(x) * (1 / math.Ln10) // (as math.Log10 computes it)
	}
	return math.Log10(x)
}

// prec is the working precision of scaledExp, in bits: far more than the
// 53 of the result, so that it rounds once, to nearest.
const prec = 500

// ln2 is ln 2 to 110 digits.
var ln2, _, _ = big.ParseFloat("0.69314718055994530941723212145817656807550013436025525412068000949339362196969471560586332699641868754200148102", 10, prec, big.ToNearestEven)

// scaledExp is e^x·2^k rounded once, for x in [709, 711]: e^x =
// 2^1023·e^r with r = x − 1023·ln 2 in [−0.1, 1.9], whose Taylor series
// has converged far below 2^−500 after 80 terms.
func scaledExp(x float64, k int) float64 {
	r := new(big.Float).SetPrec(prec).SetFloat64(x)
	r.Sub(r, new(big.Float).SetPrec(prec).Mul(ln2, big.NewFloat(1023)))
	sum := expSeries(r, 80)
	v, _ := sum.SetMantExp(sum, 1023+k).Float64()
	return v
}

// expSeries is e^r's Taylor series to r^(terms−1)/(terms−1)!, in prec bits.
func expSeries(r *big.Float, terms int) *big.Float {
	sum := new(big.Float).SetPrec(prec).SetFloat64(1)
	term := new(big.Float).SetPrec(prec).SetFloat64(1)
	for i := 1; i < terms; i++ {
		term.Mul(term, r)
		term.Quo(term, big.NewFloat(float64(i)))
		sum.Add(sum, term)
	}
	return sum
}
