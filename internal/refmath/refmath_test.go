package refmath

import (
	"math"
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
