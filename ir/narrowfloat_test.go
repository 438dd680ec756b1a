package ir

import (
	"math"
	"testing"
)

// TestNarrowFloatLiterals: hexadecimal literals of the 8-bit float types and
// tf32 spell the type's own bits, and decimal ones round to the type, as in
// MLIR; each want is mlir-opt 19's print of the same attribute. (The hex
// bits were read as float64 bits: 0x1 : f8E4M3FN printed 4.940660e-324.)
func TestNarrowFloatLiterals(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"0x1 : f8E4M3FN", "1.953130e-03 : f8E4M3FN"},
		{"0x7E : f8E4M3FN", "4.480000e+02 : f8E4M3FN"},
		{"0x7F : f8E4M3FN", "0x7F : f8E4M3FN"},
		{"0xFF : f8E4M3FN", "0xFF : f8E4M3FN"},
		{"0x80 : f8E4M3FN", "-0.000000e+00 : f8E4M3FN"},
		{"0x1 : f8E5M2", "1.525880e-05 : f8E5M2"},
		{"0x3C : f8E5M2", "1.000000e+00 : f8E5M2"},
		{"0x7C : f8E5M2", "0x7C : f8E5M2"},
		{"0xFD : f8E5M2", "0xFD : f8E5M2"},
		{"0x7F : f8E4M3", "0x7F : f8E4M3"},
		{"0x80 : f8E4M3FNUZ", "0x80 : f8E4M3FNUZ"},
		{"0x1 : f8E4M3FNUZ", "9.765620e-04 : f8E4M3FNUZ"},
		{"0x1 : f8E4M3B11FNUZ", "1.220700e-04 : f8E4M3B11FNUZ"},
		{"0x1 : f8E5M2FNUZ", "7.629390e-06 : f8E5M2FNUZ"},
		{"0x1 : tf32", "1.147940e-41 : tf32"},
		{"0x7FC00 : tf32", "0x7FC00 : tf32"},
		{"0.3 : f8E4M3FN", "3.125000e-01 : f8E4M3FN"},
		{"1000.0 : f8E4M3FN", "0x7F : f8E4M3FN"},
		{"1.0e6 : f8E5M2", "0x7C : f8E5M2"},
		{"-0.0 : f8E4M3FNUZ", "0.000000e+00 : f8E4M3FNUZ"},
		{"0.1 : tf32", "9.997550e-02 : tf32"},
		{`dense<"0x017F"> : tensor<2xf8E4M3FN>`, "dense<[1.953130e-03, 0x7F]> : tensor<2xf8E4M3FN>"},
		{"dense<[0x1, 0x7E]> : tensor<2xf8E5M2>", "dense<[1.525880e-05, 0x7E]> : tensor<2xf8E5M2>"},
	} {
		m, err := Parse(newUnregistered(), `"t.op"() {a = `+tc.src+`} : () -> ()`, ParseOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		if got := m.Region(0).Front().First().Attr("a").String(); got != tc.want {
			t.Errorf("%s printed %s, want %s", tc.src, got, tc.want)
		}
	}
}

// TestRoundNarrow checks the rounding against values worked by hand: ties
// to even, subnormals, the largest finite value and what lies past it.
func TestRoundNarrow(t *testing.T) {
	e4m3fn := floatTypes["f8E4M3FN"]
	for _, tc := range []struct{ in, want float64 }{
		{1.0625, 1},                             // halfway between 1 and 1.125: even mantissa
		{1.1875, 1.25},                          // halfway between 1.125 and 1.25
		{math.Ldexp(3, -11), math.Ldexp(1, -9)}, // 1.5 subnormal steps: to 2
		{464, 448},
		{math.Copysign(0, -1), math.Copysign(0, -1)},
	} {
		got, ok := roundNarrow(tc.in, e4m3fn)
		if !ok || got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
			t.Errorf("roundNarrow(%v, f8E4M3FN) = %v, %v; want %v", tc.in, got, ok, tc.want)
		}
	}
	if got, _ := roundNarrow(481, e4m3fn); !math.IsNaN(got) {
		t.Errorf("roundNarrow(481, f8E4M3FN) = %v, want NaN (no infinity)", got)
	}
	if _, ok := roundNarrow(1, F16); ok {
		t.Error("roundNarrow took f16, which FloatToBits encodes itself")
	}
}
