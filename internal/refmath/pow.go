package refmath

import "math"

// Pow in double-double arithmetic: x^y = e^(y·ln x), with ln x and the
// product carried to about 2^−100 and e^t summed to as much, then rounded
// once to float64 (twice where the result is subnormal: within an ulp
// there). math.Pow loses about |y·ln x| ulps instead: it takes e^(yf·ln x)
// for y's fraction yf in float64 and squares x's mantissa for the integer
// part (pow(2^−1022, 0.84375) is 82 ulps off, pow(1.0001220703125,
// 709.78…) 38), and takes ln of a subnormal x wrong on amd64.

// dd is the unevaluated sum hi + lo with |lo| ≤ ulp(hi)/2.
type dd struct{ hi, lo float64 }

// twoSum is a + b exactly.
func twoSum(a, b float64) dd {
	s := a + b
	v := s - a
	return dd{s, (a - (s - v)) + (b - v)}
}

// fastTwoSum is a + b exactly, for |a| ≥ |b|.
func fastTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

// twoProd is a·b exactly.
func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

// add is x + y to about 2^−104 relative.
func (x dd) add(y dd) dd {
	s, t := twoSum(x.hi, y.hi), twoSum(x.lo, y.lo)
	s = fastTwoSum(s.hi, s.lo+t.hi)
	return fastTwoSum(s.hi, s.lo+t.lo)
}

func (x dd) neg() dd { return dd{-x.hi, -x.lo} }

// mul is x·y, dropping lo·lo.
func (x dd) mul(y dd) dd {
	p := twoProd(x.hi, y.hi)
	return fastTwoSum(p.hi, p.lo+(x.hi*y.lo+x.lo*y.hi))
}

// mulF is x·y for a float64 y.
func (x dd) mulF(y float64) dd {
	p := twoProd(x.hi, y)
	return fastTwoSum(p.hi, p.lo+x.lo*y)
}

// div is x/y by long division: three float64 quotients, each taken off
// the remainder exactly enough.
func (x dd) div(y dd) dd {
	q1 := x.hi / y.hi
	r := x.add(y.mulF(q1).neg())
	q2 := r.hi / y.hi
	r = r.add(y.mulF(q2).neg())
	q3 := r.hi / y.hi
	q := fastTwoSum(q1, q2)
	return q.add(dd{q3, 0})
}

// ln2DD is ln 2 to about 2^−107.
var ln2DD = dd{0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56}

// Series lengths: |z| ≤ (√2−1)/(√2+1) in logDD (z² < 0.0295, so z^44 is
// below 2^−220), |r| ≤ ln2/2 in expDD (0.35^25/25! is below 2^−120).
const (
	logTerms = 22
	expTerms = 25
)

// oddRecips are 1/(2i+1) and invFacts 1/i!, as double-doubles.
var oddRecips, invFacts = func() (odd, fact []dd) {
	odd = make([]dd, logTerms)
	for i := range odd {
		odd[i] = dd{1, 0}.div(dd{float64(2*i + 1), 0})
	}
	fact = make([]dd, expTerms)
	fact[0] = dd{1, 0}
	for i := 1; i < expTerms; i++ {
		fact[i] = fact[i-1].div(dd{float64(i), 0})
	}
	return odd, fact
}()

// logDD is ln x for finite x > 0: with x = m·2^k, m in [√½, √2), k·ln 2 +
// 2·atanh(z), z = (m−1)/(m+1), by the odd series of atanh.
func logDD(x float64) dd {
	m, k := math.Frexp(x) // m in [½, 1)
	if m < math.Sqrt2/2 {
		m, k = 2*m, k-1
	}
	z := dd{m - 1, 0}.div(twoSum(m, 1)) // (m−1 is exact)
	z2 := z.mul(z)
	s := oddRecips[logTerms-1]
	for i := logTerms - 2; i >= 0; i-- {
		s = s.mul(z2).add(oddRecips[i])
	}
	return ln2DD.mulF(float64(k)).add(z.mul(s).mulF(2))
}

// expDD is e^t rounded to float64, for t between the underflow and
// overflow thresholds: 2^n·e^r with r = t − n·ln 2 in [−ln2/2, ln2/2].
func expDD(t dd) float64 {
	n := math.Round(t.hi / ln2DD.hi)
	r := t.add(ln2DD.mulF(n).neg())
	s := invFacts[expTerms-1]
	for i := expTerms - 2; i >= 0; i-- {
		s = s.mul(r).add(invFacts[i])
	}
	return math.Ldexp(s.hi+s.lo, int(n))
}

// Pow is x to the power y. Special operands (zeros, infinities, NaN,
// x = 1, y = 0) follow math.Pow, as do negative bases but for the sign of
// an odd integer power; x^1 is x and x^½ math.Sqrt(x).
func Pow(x, y float64) float64 {
	switch {
	case x == 0 || y == 0 || x == 1 || math.IsInf(x, 0) || math.IsInf(y, 0) || math.IsNaN(x) || math.IsNaN(y):
		return math.Pow(x, y)
	case y == 1:
		return x
	case y == 0.5 && x > 0:
		return math.Sqrt(x) // (rounded once; square roots of all-ones mantissas sit next to midpoints)
	case x < 0:
		if y != math.Trunc(y) {
			return math.NaN()
		}
		p := Pow(-x, y)
		if math.Mod(y, 2) != 0 {
			p = -p
		}
		return p
	}
	l := logDD(x)
	switch t := l.hi * y; {
	case t > 710: // (e^709.79 is past MaxFloat64)
		return math.Inf(1)
	case t < -746: // (e^−745.14 rounds to 0)
		return 0
	}
	return expDD(l.mulF(y))
}
