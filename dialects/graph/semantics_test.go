package graph_test

import (
	"math"
	"testing"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// TestSigmoidSpecialValues checks sigmoid where its formula is delicate, in
// both compute types (f16 and bf16 share f32's).
func TestSigmoidSpecialValues(t *testing.T) {
	cases := []struct{ x, want float64 }{
		{0, 0.5}, {math.Copysign(0, -1), 0.5},
		{math.Inf(1), 1}, {math.Inf(-1), 0},
		{1e30, 1}, {-1e30, 0}, {math.MaxFloat32, 1}, {-math.MaxFloat32, 0},
		{math.NaN(), math.NaN()},
	}
	for _, elem := range []ir.Type{ir.F64, ir.F32, ir.F16, ir.BF16} {
		f := graph.UnaryFloatFunc("sigmoid", "none", elem)
		for _, c := range cases {
			got := f(c.x)
			if math.IsNaN(c.want) {
				if !math.IsNaN(got) {
					t.Errorf("sigmoid(NaN) in %s = %g, want NaN", elem, got)
				}
				continue
			}
			if got != c.want || math.Signbit(got) {
				t.Errorf("sigmoid(%g) in %s = %g, want %g", c.x, elem, got, c.want)
			}
		}
	}
}

// TestSigmoidAccuracy compares sigmoid with the textbook formula, evaluated
// in float64 on the side that cannot overflow, over the whole range where
// the result is neither 0 nor 1: within 2 ulps in f32 and 4 in f64.
func TestSigmoidAccuracy(t *testing.T) {
	ref := func(x float64) float64 {
		if x >= 0 {
			return 1 / (1 + math.Exp(-x))
		}
		return math.Exp(x) / (1 + math.Exp(x))
	}
	f32 := graph.UnaryFloatFunc("sigmoid", "none", ir.F32)
	for x := float32(-110); x <= 20; x += 1.0 / 1024 {
		got, want := float32(f32(float64(x))), float32(ref(float64(x)))
		if d := ulps32(got, want); d > 2 {
			t.Fatalf("f32 sigmoid(%g) = %g, want %g (%d ulps)", x, got, want, d)
		}
	}
	f64 := graph.UnaryFloatFunc("sigmoid", "none", ir.F64)
	for x := -750.0; x <= 40; x += 1.0 / 256 {
		got, want := f64(x), ref(x)
		if d := ulps64(got, want); d > 4 {
			t.Fatalf("f64 sigmoid(%g) = %g, want %g (%d ulps)", x, got, want, d)
		}
	}
}

// ulps32 and ulps64 count the representable values between two
// non-negative floats.
func ulps32(a, b float32) int64 { return abs(int64(math.Float32bits(a)) - int64(math.Float32bits(b))) }
func ulps64(a, b float64) int64 { return abs(int64(math.Float64bits(a) - math.Float64bits(b))) }

func abs(v int64) int64 { return max(v, -v) }
