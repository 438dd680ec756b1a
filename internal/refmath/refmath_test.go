package refmath

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestNearOverflow checks Exp, Cosh and Sinh where Go's amd64 math.Exp
// overflows early against values rounded from 60-digit decimal
// exponentials (glibc's cosh(710) is an ulp above) and the true
// overflows; and in a sweep, that Exp is math.Exp below that range and
// within a few ulp of e^(x/2)², an independent route, throughout.
func TestNearOverflow(t *testing.T) {
	for _, c := range []struct {
		name    string
		f       func(float64) float64
		x, want float64
	}{
		{"Exp", Exp, 709.4375, 1.2728918482977176e+308},
		{"Exp", Exp, 709.5, 1.3549863193146328e+308},
		{"Exp", Exp, 709.436139303104, 1.271161006153651e+308},
		{"Exp", Exp, 709.782712893383, 1.7976931348604338e+308},
		{"Exp", Exp, 709.79, math.Inf(1)},
		{"Exp", Exp, 1, math.E},
		{"Cosh", Cosh, 710, 1.1169973830808555e+308},
		{"Cosh", Cosh, -710, 1.1169973830808555e+308},
		{"Sinh", Sinh, -710, -1.1169973830808555e+308},
		{"Cosh", Cosh, 710.48, math.Inf(1)},
		{"Sinh", Sinh, -710.48, math.Inf(-1)},
	} {
		if got := c.f(c.x); got != c.want {
			t.Errorf("%s(%v) = %v, want %v", c.name, c.x, got, c.want)
		}
	}
	for x := 700.0; x < 709.78; x += 0.0137 {
		got := Exp(x)
		if x < nearOverflow && got != math.Exp(x) {
			t.Errorf("Exp(%v) = %v, math.Exp %v", x, got, math.Exp(x))
		}
		h := math.Exp(x / 2)
		if sq := h * h; math.IsInf(got, 0) || math.Abs(got-sq) > 3*ulp(got) {
			t.Errorf("Exp(%v) = %v, e^(x/2)² = %v", x, got, sq)
		}
	}
}

func ulp(x float64) float64 { return math.Nextafter(x, math.Inf(1)) - x }

// bigLog is ln x in prec bits, for finite x > 0: with x = m·2^k (m in
// [½, 1)), k·ln 2 + 2·atanh((m−1)/(m+1)), whose series in z² (|z| ≤ ⅓)
// has converged far below 2^−500 after 200 terms.
func bigLog(x float64) *big.Float {
	m, k := math.Frexp(x)
	z := new(big.Float).SetPrec(prec).SetFloat64(m - 1) // (exact; m+1 is not)
	mp1 := new(big.Float).SetPrec(prec).SetFloat64(m)
	z.Quo(z, mp1.Add(mp1, big.NewFloat(1)))
	z2 := new(big.Float).SetPrec(prec).Mul(z, z)
	sum := new(big.Float).SetPrec(prec)
	term := new(big.Float).SetPrec(prec).Set(z)
	for i := 0; i < 200; i++ {
		sum.Add(sum, new(big.Float).SetPrec(prec).Quo(term, big.NewFloat(float64(2*i+1))))
		term.Mul(term, z2)
	}
	sum.Mul(sum, big.NewFloat(2))
	return sum.Add(sum, new(big.Float).SetPrec(prec).Mul(ln2, big.NewFloat(float64(k))))
}

// bigExp is e^t rounded once to float64: 2^n·e^r with r = t − n·ln 2 in
// [−0.35, 0.35], whose Taylor series has converged after 90 terms.
func bigExp(t *big.Float) float64 {
	q, _ := new(big.Float).Quo(t, ln2).Float64()
	n := math.Round(q)
	r := new(big.Float).SetPrec(prec).Sub(t, new(big.Float).SetPrec(prec).Mul(ln2, big.NewFloat(n)))
	sum := expSeries(r, 90)
	v, _ := sum.SetMantExp(sum, int(n)).Float64()
	return v
}

// within reports whether got is within n ulps of want (of the smaller of
// the two's ulp, so that n counts in the subnormal range too).
func within(got, want float64, n float64) bool {
	if got == want {
		return true
	}
	if math.IsInf(got, 0) || math.IsInf(want, 0) || math.IsNaN(got) || math.IsNaN(want) {
		return false
	}
	return math.Abs(got-want) <= n*ulp(math.Min(math.Abs(got), math.Abs(want)))
}

// subnormals are the ones the tests check: the least and the greatest,
// powers of two and random ones.
func subnormals(rng *rand.Rand) []float64 {
	xs := []float64{math.SmallestNonzeroFloat64, math.Float64frombits(1<<52 - 1), 0x1p-1023, 0x1p-1050, 1e-320, 1e-310}
	for range 300 {
		xs = append(xs, math.Float64frombits(1+rng.Uint64N(1<<52-1)))
	}
	return xs
}

// TestSubnormalLog checks Log and Log10 of subnormals against logarithms in
// 500 bits (Go's amd64 math.Log gives log(2^−1023) = −709.09 for every
// one: log(5e−324) is −744.44), and that normal x keep Go's.
func TestSubnormalLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ln10 := bigLog(10)
	for _, x := range subnormals(rng) {
		want, _ := bigLog(x).Float64()
		if got := Log(x); !within(got, want, 1) {
			t.Errorf("Log(%v) = %v, want %v", x, got, want)
		}
		want10, _ := new(big.Float).Quo(bigLog(x), ln10).Float64()
		if got := Log10(x); !within(got, want10, 2) {
			t.Errorf("Log10(%v) = %v, want %v", x, got, want10)
		}
	}
	for _, x := range []float64{0x1p-1022, 1e-300, 0.5, 1, 2, 10, 1e300, 0, -1, math.Inf(1)} {
		if got, want := Log(x), math.Log(x); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("Log(%v) = %v, math.Log %v", x, got, want)
		}
		if got, want := Log10(x), math.Log10(x); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("Log10(%v) = %v, math.Log10 %v", x, got, want)
		}
	}
}

// TestPow checks Pow against e^(y·ln x) in 500 bits, within an ulp (it
// rounds twice where the result is subnormal, and double-double cannot
// round a near-tie right: pow(2^−1022 − 2^−1074, −0.5) lies 1.9e−32 of
// itself from a midpoint, and Pow gives the farther neighbour):
// bases across the range, subnormal ones included (Go's
// math.Pow(5e−324, 0.25) is 1.03e−77, not 1.49e−81), near 1, negative
// ones with integer powers, and powers that take y·ln x across [−746,
// 710], integer and half-integer ones among them; then that special
// operands follow math.Pow.
func TestPow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bases := subnormals(rng)[:60]
	for range 300 {
		bases = append(bases, math.Ldexp(1+rng.Float64(), rng.IntN(2040)-1020))
	}
	for range 100 {
		bases = append(bases, 1+(rng.Float64()-0.5)*math.Ldexp(1, -rng.IntN(40)))
	}
	worst := 0.0
	for _, x := range bases {
		ln, _ := bigLog(x).Float64()
		ys := []float64{0.25, -0.25, 1.0 / 3, 0.84375, 2, -3, 7.5, 1e-5}
		for range 8 {
			ys = append(ys, (rng.Float64()*1450-745)/ln) // (y·ln x across the range)
		}
		ys = append(ys, math.Round(ys[len(ys)-1]), math.Round(2*ys[len(ys)-2])/2)
		for _, y := range ys {
			want := bigExp(new(big.Float).SetPrec(prec).Mul(bigLog(x), big.NewFloat(y)))
			got := Pow(x, y)
			if !within(got, want, 1) {
				t.Errorf("Pow(%v, %v) = %v, want %v", x, y, got, want)
			}
			if want != 0 && !math.IsInf(want, 0) && math.Abs(want) >= minNormal {
				worst = max(worst, math.Abs(got-want)/ulp(math.Abs(want)))
			}
			if y == math.Trunc(y) {
				if got, want := Pow(-x, y), math.Copysign(want, math.Pow(-1, y)); !within(got, want, 1) {
					t.Errorf("Pow(%v, %v) = %v, want %v", -x, y, got, want)
				}
			}
		}
	}
	t.Logf("normal results: worst %v ulp", worst)
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range [][2]float64{{0, 2}, {0, -1}, {math.Copysign(0, -1), -3}, {1, nan}, {nan, 0}, {-1, inf}, {2, inf}, {0.5, inf},
		{inf, -2}, {-inf, 3}, {-2, 0.5}, {nan, 2}, {2, nan}, {1e300, 1e300}, {1e-300, 1e300}, {-8, 1e300}, {2, 1024}, {2, -1075}} {
		if got, want := Pow(c[0], c[1]), math.Pow(c[0], c[1]); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("Pow(%v, %v) = %v, math.Pow %v", c[0], c[1], got, want)
		}
	}
}

// bigSinh is sinh x rounded once to float64, for |x| < 22: its Taylor
// series, whose terms all have x's sign (no cancellation), has converged
// far below 2^−500 of the sum after 200 terms.
func bigSinh(x float64) float64 {
	bx := new(big.Float).SetPrec(prec).SetFloat64(x)
	x2 := new(big.Float).SetPrec(prec).Mul(bx, bx)
	sum := new(big.Float).SetPrec(prec)
	term := new(big.Float).SetPrec(prec).Set(bx)
	for i := 1; i < 400; i += 2 {
		sum.Add(sum, term)
		term.Mul(term, x2)
		term.Quo(term, big.NewFloat(float64((i+1)*(i+2))))
	}
	v, _ := sum.Float64()
	return v
}

// TestSinh checks Sinh below |x| = 22, where it goes through math.Expm1,
// against sinh's series in 500 bits: within an ulp.
func TestSinh(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	xs := []float64{1e-300, 1e-8, 0.5, 1, 1.5, 21.9}
	for range 500 {
		xs = append(xs, math.Ldexp(1+rng.Float64(), rng.IntN(40)-35))
	}
	for _, x := range xs {
		for _, x := range []float64{x, -x} {
			if got, want := Sinh(x), bigSinh(x); !within(got, want, 1) {
				t.Errorf("Sinh(%v) = %v, want %v", x, got, want)
			}
		}
	}
}
