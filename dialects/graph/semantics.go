package graph

import (
	"math"
	"strings"

	"github.com/strata-ir/strata/internal/refmath"
	"github.com/strata-ir/strata/ir"
)

// The scalar semantics of the elementwise ops, shared by the constant folder
// and the reference interpreter so that the two cannot disagree. Float
// functions work on float64; a caller computing in f32 (or f16/bf16) rounds
// each result to its element type, which for these single operations gives
// the correctly rounded result in that type.

// unaryFloat maps each float unary op to its function.
var unaryFloat = map[string]func(float64) float64{
	"neg":        func(x float64) float64 { return -x },
	"abs":        math.Abs,
	"exp":        refmath.Exp,
	"log":        refmath.Log,
	"sqrt":       math.Sqrt,
	"rsqrt":      func(x float64) float64 { return 1 / math.Sqrt(x) },
	"tanh":       math.Tanh,
	"sigmoid":    sigmoid,
	"relu":       relu,
	"gelu":       func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) },
	"erf":        math.Erf,
	"sin":        math.Sin,
	"cos":        math.Cos,
	"reciprocal": func(x float64) float64 { return 1 / x },
}

// sigmoid takes one exp and one division for every x: with e = e^-|x| in
// (0, 1], r = 1/(1+e) is σ(|x|) and e·r is σ(-|x|), so nothing overflows.
// NaN fails x >= 0 and propagates through e·r. The lowering computes the
// same steps.
func sigmoid(x float64) float64 {
	e := math.Exp(-math.Abs(x))
	r := 1 / (1 + e)
	if x >= 0 {
		return r
	}
	return e * r
}

func relu(x float64) float64 {
	if x < 0 {
		return 0
	}
	return x // NaN, +0 and -0 pass through
}

// GELUTanh is PyTorch's tanh approximation of GELU, 0.5·x·(1 + tanh u)
// with u = √(2/π)·(x + 0.044715·x³), computed as the equal x·σ(2u) =
// x / (1 + e^(−2u)): one exponential and one division, where the tanh
// form costs an exponential, a division and the steps around them (the
// fused GEMM epilogues of the GPU kernels compute it per element while
// the tensor cores wait), and no cancellation in 1 + tanh u for negative
// x. (GELUTanhConst and GELUTanhCubic are −2·√(2/π) and its product with
// 0.044715: −2u = x·(GELUTanhConst + GELUTanhCubic·x²).)
func GELUTanh(x float64) float64 {
	return x / (1 + refmath.Exp(x*(GELUTanhConst+GELUTanhCubic*x*x)))
}

// The constants of GELUTanh's exponent.
const (
	GELUTanhConst = -2 * 0.7978845608028654 // −2·√(2/π)
	GELUTanhCubic = GELUTanhConst * 0.044715
)

// UnaryFloatFunc returns the function of the float unary op name on
// elements of type elem (gelu reads approximate), or nil when name is not
// one. Single operations are computed in float64 and rounded once by the
// caller. Formulas of several steps (sigmoid, gelu) are computed step by step
// in ComputeType(elem), each step rounded, as the compiled code computes them
// (a GPU has no float64 exp or tanh worth using).
func UnaryFloatFunc(name, approximate string, elem ir.Type) func(float64) float64 {
	name = shortName(name)
	if ComputeType(elem) == ir.F32 {
		switch {
		case name == "sigmoid":
			return sigmoid32
		case name == "gelu" && approximate == "tanh":
			return geluTanh32
		case name == "gelu":
			return geluErf32
		}
	}
	if name == "gelu" && approximate == "tanh" {
		return GELUTanh
	}
	return unaryFloat[name]
}

// ComputeType is the type elementwise formulas of several steps are computed
// in for elements of type elem: f64 for f64, f32 for every narrower float.
func ComputeType(elem ir.Type) *ir.FloatType {
	if elem == ir.F64 {
		return ir.F64
	}
	return ir.F32
}

// The f32 formulas use float32 arithmetic, one operation per statement or
// explicit conversion, so that no step is fused or kept wider (as the
// arith/math ops of the lowered code compute them); single functions (exp,
// tanh, erf) are the correctly rounded float32 results.

// sigmoid32 is sigmoid's formula in float32.
func sigmoid32(x float64) float64 {
	v := float32(x)
	e := float32(math.Exp(float64(-float32(math.Abs(float64(v))))))
	r := float32(1 / float32(1+e))
	if v >= 0 {
		return float64(r)
	}
	return float64(float32(e * r))
}

// geluTanh32 is GELUTanh's formula in float32.
func geluTanh32(x float64) float64 {
	const c, c3 = float32(GELUTanhConst), float32(GELUTanhCubic)
	w := float32(x)
	a := float32(w * float32(c+float32(c3*float32(w*w))))
	e := float32(math.Exp(float64(a)))
	return float64(float32(w / float32(1+e)))
}

func geluErf32(x float64) float64 {
	w := float32(x)
	e := float32(math.Erf(float64(float32(w / float32(math.Sqrt2)))))
	return float64(float32(float32(0.5*w) * float32(1+e)))
}

// UnaryIntFunc returns the function of an integer unary op (neg, abs, relu),
// or nil. Results wrap to the element width.
func UnaryIntFunc(name string) func(int64) int64 {
	name = shortName(name)
	switch name {
	case "neg":
		return func(x int64) int64 { return -x }
	case "abs":
		return func(x int64) int64 {
			if x < 0 {
				return -x
			}
			return x
		}
	case "relu":
		return func(x int64) int64 { return max(x, 0) }
	}
	return nil
}

// BinaryFloatFunc returns the function of a float binary op, or nil.
func BinaryFloatFunc(name string) func(a, b float64) float64 {
	name = shortName(name)
	switch name {
	case "add":
		return func(a, b float64) float64 { return a + b }
	case "sub":
		return func(a, b float64) float64 { return a - b }
	case "mul":
		return func(a, b float64) float64 { return a * b }
	case "div":
		return func(a, b float64) float64 { return a / b }
	case "pow":
		return refmath.Pow
	case "max":
		return func(a, b float64) float64 {
			if a != a || b != b {
				return math.NaN()
			}
			return math.Max(a, b)
		}
	case "min":
		return func(a, b float64) float64 {
			if a != a || b != b {
				return math.NaN()
			}
			return math.Min(a, b)
		}
	}
	return nil
}

// BinaryIntFunc returns the function of an integer binary op, or nil.
// Division truncates toward zero and x/0 is 0; results wrap to the width.
func BinaryIntFunc(name string) func(a, b int64) int64 {
	name = shortName(name)
	switch name {
	case "add":
		return func(a, b int64) int64 { return a + b }
	case "sub":
		return func(a, b int64) int64 { return a - b }
	case "mul":
		return func(a, b int64) int64 { return a * b }
	case "div":
		return func(a, b int64) int64 {
			if b == 0 {
				return 0
			}
			return a / b
		}
	case "pow":
		return intPow
	case "max":
		return func(a, b int64) int64 { return max(a, b) }
	case "min":
		return func(a, b int64) int64 { return min(a, b) }
	}
	return nil
}

func intPow(a, b int64) int64 {
	if b < 0 {
		switch a {
		case 1:
			return 1
		case -1:
			return 1 - 2*(b&1)
		}
		return 0
	}
	r := int64(1)
	for ; b > 0; b >>= 1 {
		if b&1 != 0 {
			r *= a
		}
		a *= a
	}
	return r
}

// CmpFloatFunc returns the float comparison of predicate pred, or nil.
// Every comparison with NaN is false except "ne".
func CmpFloatFunc(pred string) func(a, b float64) bool {
	switch pred {
	case "eq":
		return func(a, b float64) bool { return a == b }
	case "ne":
		return func(a, b float64) bool { return a != b }
	case "lt":
		return func(a, b float64) bool { return a < b }
	case "le":
		return func(a, b float64) bool { return a <= b }
	case "gt":
		return func(a, b float64) bool { return a > b }
	case "ge":
		return func(a, b float64) bool { return a >= b }
	}
	return nil
}

// CmpIntFunc returns the signed integer comparison of predicate pred, or nil.
func CmpIntFunc(pred string) func(a, b int64) bool {
	switch pred {
	case "eq":
		return func(a, b int64) bool { return a == b }
	case "ne":
		return func(a, b int64) bool { return a != b }
	case "lt":
		return func(a, b int64) bool { return a < b }
	case "le":
		return func(a, b int64) bool { return a <= b }
	case "gt":
		return func(a, b int64) bool { return a > b }
	case "ge":
		return func(a, b int64) bool { return a >= b }
	}
	return nil
}

// FloatToInt converts v to the integer type t as graph.cast does: truncation
// toward zero, saturating at t's range, NaN giving 0; to i1, v ≠ 0.
func FloatToInt(v float64, t ir.Type) int64 {
	w := ir.IntWidth(t)
	if w == 1 {
		if v != 0 {
			return 1
		}
		return 0
	}
	if v != v {
		return 0
	}
	hi := math.Ldexp(1, w-1) // 2^(w-1), just above the largest value
	switch t := math.Trunc(v); {
	case t >= hi:
		return 1<<(w-1) - 1
	case t < -hi:
		return -1 << (w - 1)
	default:
		return int64(t)
	}
}

// shortName strips the dialect prefix of a graph op name: the semantics
// functions take OpExp as well as "exp".
func shortName(name string) string { return strings.TrimPrefix(name, Name+".") }
