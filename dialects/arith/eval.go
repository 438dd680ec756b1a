package arith

import (
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/strata-ir/strata/ir"
)

// This file holds the scalar semantics of every arith op. The folders and the
// reference interpreter both call these functions, so constant folding and
// execution cannot disagree.
//
// Integers travel as int64 in ir.TruncInt's canonical form for their type:
// sign-extended from the type's width (i1 as 0 or 1). Signed ops read the low
// bits as two's complement, unsigned ops as a natural number. Floats travel
// as float64 holding a value of their type exactly.

// CmpIPredicate is the predicate of arith.cmpi, encoded as upstream MLIR's
// i64 property value.
type CmpIPredicate int64

// The cmpi predicates, in upstream's encoding.
const (
	CmpIEQ CmpIPredicate = iota
	CmpINE
	CmpISLT
	CmpISLE
	CmpISGT
	CmpISGE
	CmpIULT
	CmpIULE
	CmpIUGT
	CmpIUGE
)

// CmpIPredicateNames maps each cmpi predicate to its keyword.
var CmpIPredicateNames = [...]string{"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"}

// String returns the predicate's keyword, or its number when out of range.
func (p CmpIPredicate) String() string {
	if p.Valid() {
		return CmpIPredicateNames[p]
	}
	return "cmpi-predicate(" + strconv.FormatInt(int64(p), 10) + ")"
}

// Valid reports whether p is one of the ten predicates.
func (p CmpIPredicate) Valid() bool { return p >= 0 && int(p) < len(CmpIPredicateNames) }

// ParseCmpIPredicate returns the predicate spelled s.
func ParseCmpIPredicate(s string) (CmpIPredicate, bool) {
	i := slices.Index(CmpIPredicateNames[:], s)
	return CmpIPredicate(i), i >= 0
}

// Swapped returns the predicate q with a p b ⇔ b q a.
func (p CmpIPredicate) Swapped() CmpIPredicate {
	return [...]CmpIPredicate{CmpIEQ, CmpINE, CmpISGT, CmpISGE, CmpISLT, CmpISLE, CmpIUGT, CmpIUGE, CmpIULT, CmpIULE}[p]
}

// Inverted returns the predicate q with a q b ⇔ !(a p b).
func (p CmpIPredicate) Inverted() CmpIPredicate {
	return [...]CmpIPredicate{CmpINE, CmpIEQ, CmpISGE, CmpISGT, CmpISLE, CmpISLT, CmpIUGE, CmpIUGT, CmpIULE, CmpIULT}[p]
}

// CmpFPredicate is the predicate of arith.cmpf, encoded as upstream MLIR's
// i64 property value. "o" predicates are false when an operand is NaN
// (ordered), "u" predicates are true (unordered).
type CmpFPredicate int64

// The cmpf predicates, in upstream's encoding.
const (
	CmpFAlwaysFalse CmpFPredicate = iota
	CmpFOEQ
	CmpFOGT
	CmpFOGE
	CmpFOLT
	CmpFOLE
	CmpFONE
	CmpFORD
	CmpFUEQ
	CmpFUGT
	CmpFUGE
	CmpFULT
	CmpFULE
	CmpFUNE
	CmpFUNO
	CmpFAlwaysTrue
)

// CmpFPredicateNames maps each cmpf predicate to its keyword.
var CmpFPredicateNames = [...]string{
	"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
	"ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
}

// String returns the predicate's keyword, or its number when out of range.
func (p CmpFPredicate) String() string {
	if p.Valid() {
		return CmpFPredicateNames[p]
	}
	return "cmpf-predicate(" + strconv.FormatInt(int64(p), 10) + ")"
}

// Valid reports whether p is one of the sixteen predicates.
func (p CmpFPredicate) Valid() bool { return p >= 0 && int(p) < len(CmpFPredicateNames) }

// ParseCmpFPredicate returns the predicate spelled s.
func ParseCmpFPredicate(s string) (CmpFPredicate, bool) {
	i := slices.Index(CmpFPredicateNames[:], s)
	return CmpFPredicate(i), i >= 0
}

// sext reads the low w bits of v as a two's-complement number.
func sext(v int64, w int) int64 {
	if w >= 64 {
		return v
	}
	return v << (64 - w) >> (64 - w)
}

// zext reads the low w bits of v as a natural number.
func zext(v int64, w int) uint64 {
	if w >= 64 {
		return uint64(v)
	}
	return uint64(v) & (1<<w - 1)
}

// intSem computes an integer binary op on operands of width w; ok is false
// when the result is undefined (division by zero, signed division overflow,
// shift by at least the width). The result need not be truncated.
type intSem func(a, b int64, w int) (r int64, ok bool)

// intOps is the semantics of every integer binary op.
var intOps = map[string]intSem{
	OpAddI: func(a, b int64, _ int) (int64, bool) { return a + b, true },
	OpSubI: func(a, b int64, _ int) (int64, bool) { return a - b, true },
	OpMulI: func(a, b int64, _ int) (int64, bool) { return a * b, true },
	OpAndI: func(a, b int64, _ int) (int64, bool) { return a & b, true },
	OpOrI:  func(a, b int64, _ int) (int64, bool) { return a | b, true },
	OpXOrI: func(a, b int64, _ int) (int64, bool) { return a ^ b, true },
	OpDivSI: func(a, b int64, w int) (int64, bool) {
		q, _, ok := sdivrem(a, b, w)
		return q, ok
	},
	OpRemSI: func(a, b int64, w int) (int64, bool) {
		if sext(b, w) == -1 { // the remainder is 0 even when the quotient overflows
			return 0, true
		}
		_, r, ok := sdivrem(a, b, w)
		return r, ok
	},
	OpCeilDivSI: func(a, b int64, w int) (int64, bool) {
		q, r, ok := sdivrem(a, b, w)
		if r != 0 && (r < 0) == (sext(b, w) < 0) {
			q++
		}
		return q, ok
	},
	OpFloorDivSI: func(a, b int64, w int) (int64, bool) {
		q, r, ok := sdivrem(a, b, w)
		if r != 0 && (r < 0) != (sext(b, w) < 0) {
			q--
		}
		return q, ok
	},
	OpDivUI: func(a, b int64, w int) (int64, bool) {
		if zext(b, w) == 0 {
			return 0, false
		}
		return int64(zext(a, w) / zext(b, w)), true
	},
	OpRemUI: func(a, b int64, w int) (int64, bool) {
		if zext(b, w) == 0 {
			return 0, false
		}
		return int64(zext(a, w) % zext(b, w)), true
	},
	OpCeilDivUI: func(a, b int64, w int) (int64, bool) {
		x, y := zext(a, w), zext(b, w)
		if y == 0 {
			return 0, false
		}
		q := x / y
		if x%y != 0 {
			q++
		}
		return int64(q), true
	},
	OpMaxSI: func(a, b int64, w int) (int64, bool) { return max(sext(a, w), sext(b, w)), true },
	OpMinSI: func(a, b int64, w int) (int64, bool) { return min(sext(a, w), sext(b, w)), true },
	OpMaxUI: func(a, b int64, w int) (int64, bool) { return int64(max(zext(a, w), zext(b, w))), true },
	OpMinUI: func(a, b int64, w int) (int64, bool) { return int64(min(zext(a, w), zext(b, w))), true },
	OpShLI: func(a, b int64, w int) (int64, bool) {
		s := zext(b, w)
		return a << s, s < uint64(w)
	},
	OpShRSI: func(a, b int64, w int) (int64, bool) {
		s := zext(b, w)
		return sext(a, w) >> s, s < uint64(w)
	},
	OpShRUI: func(a, b int64, w int) (int64, bool) {
		s := zext(b, w)
		return int64(zext(a, w) >> s), s < uint64(w)
	},
}

// sdivrem divides signed w-bit numbers, truncating toward zero; ok is false
// on division by zero and on the one overflowing case, MIN / -1.
func sdivrem(a, b int64, w int) (q, r int64, ok bool) {
	x, y := sext(a, w), sext(b, w)
	if y == 0 || (y == -1 && x == -1<<(w-1)) {
		return 0, 0, false
	}
	return x / y, x % y, true
}

// EvalInt computes the integer binary op opName ("arith.addi", "arith.divsi",
// ...) on a and b of the signless integer or index type t (or a shaped type of
// them: t's element type is used). The result is in ir.TruncInt's form: the
// arithmetic wraps at the type's width, as LLVM's does. ok is false when the
// op is not an integer binary op or its result is undefined: division or
// remainder by zero, MIN / -1 for the signed divisions, or a shift amount of
// at least the width. The signed ceiling and floor divisions give the exact
// rounded quotient (upstream's folder declines some cases, such as
// ceildivsi(MIN, 2), whose intermediate steps overflow).
func EvalInt(opName string, t ir.Type, a, b int64) (int64, bool) {
	elem := ir.ElementTypeOf(t)
	w := ir.IntWidth(elem)
	f := intOps[opName]
	if f == nil || w == 0 || w > 64 {
		return 0, false
	}
	r, ok := f(a, b, w)
	if !ok {
		return 0, false
	}
	return ir.TruncInt(r, elem), true
}

// IsIntBinary reports whether opName is an integer binary op EvalInt knows.
func IsIntBinary(opName string) bool { return intOps[opName] != nil }

// floatSem computes a float op exactly in float64; the caller rounds.
type floatSem func(a, b float64) float64

// defaultNaN is the quiet NaN that IEEE operations produce from non-NaN
// operands, as APFloat makes it (positive, payload 0).
var defaultNaN = math.Float64frombits(0x7ff8000000000000)

// quiet returns the NaN a with its quiet bit set. The quiet bit of every
// narrower format lands on bit 51 once widened to float64.
func quiet(a float64) float64 { return math.Float64frombits(math.Float64bits(a) | 1<<51) }

// arithmetic wraps an IEEE operation with APFloat's NaN rules: a NaN operand
// propagates (quieted, the first one winning), and an invalid operation
// gives the default NaN.
func arithmetic(f func(a, b float64) float64) floatSem {
	return func(a, b float64) float64 {
		switch {
		case math.IsNaN(a):
			return quiet(a)
		case math.IsNaN(b):
			return quiet(b)
		}
		if r := f(a, b); !math.IsNaN(r) {
			return r
		}
		return defaultNaN
	}
}

// floatOps is the semantics of every float op; unary ops ignore b. Each
// computes in float64, which is exact or rounds innocuously for f16, bf16 and
// f32 (float64 has more than twice their precision plus two bits); f32 ops
// are nevertheless computed in float32 by EvalFloat.
var floatOps = map[string]floatSem{
	OpAddF: arithmetic(func(a, b float64) float64 { return a + b }),
	OpSubF: arithmetic(func(a, b float64) float64 { return a - b }),
	OpMulF: arithmetic(func(a, b float64) float64 { return a * b }),
	OpDivF: arithmetic(func(a, b float64) float64 { return a / b }),
	OpRemF: arithmetic(math.Mod),
	OpNegF: func(a, _ float64) float64 { return -a },
	// maximumf/minimumf propagate NaN and order -0 below +0 (llvm::maximum).
	OpMaximumF: func(a, b float64) float64 {
		switch {
		case math.IsNaN(a):
			return a
		case math.IsNaN(b):
			return b
		case a == 0 && b == 0 && math.Signbit(a) != math.Signbit(b):
			return math.Copysign(0, 1)
		}
		return math.Max(a, b)
	},
	OpMinimumF: func(a, b float64) float64 {
		switch {
		case math.IsNaN(a):
			return a
		case math.IsNaN(b):
			return b
		case a == 0 && b == 0 && math.Signbit(a) != math.Signbit(b):
			return math.Copysign(0, -1)
		}
		return math.Min(a, b)
	},
	// maxnumf/minnumf ignore a NaN operand (IEEE maxNum, llvm::maxnum).
	OpMaxNumF: func(a, b float64) float64 {
		switch {
		case math.IsNaN(a):
			return b
		case math.IsNaN(b):
			return a
		}
		return math.Max(a, b)
	},
	OpMinNumF: func(a, b float64) float64 {
		switch {
		case math.IsNaN(a):
			return b
		case math.IsNaN(b):
			return a
		}
		return math.Min(a, b)
	},
}

// float32Ops computes the rounding ops directly in float32.
var float32Ops = map[string]func(a, b float32) float32{
	OpAddF: func(a, b float32) float32 { return a + b },
	OpSubF: func(a, b float32) float32 { return a - b },
	OpMulF: func(a, b float32) float32 { return a * b },
	OpDivF: func(a, b float32) float32 { return a / b },
}

// foldableFloat reports whether values of t are exactly representable by
// ir.FloatToBits, and so can be computed with EvalFloat and Cast.
func foldableFloat(t ir.Type) bool {
	return t == ir.F16 || t == ir.BF16 || t == ir.F32 || t == ir.F64
}

// EvalFloat computes the float op opName ("arith.addf", "arith.maximumf",
// "arith.negf", ...) on a and b (b is ignored by unary ops), which must be
// values of type t, and returns the result rounded to t with round-to-nearest-
// even, as APFloat does: f32 in float32 arithmetic, f64 in float64, f16 and
// bf16 computed in float64 and rounded with ir.RoundToType. NaN results follow
// APFloat: a NaN operand propagates quieted, an invalid operation gives the
// positive default NaN. ok is false for ops that are not float ops and for
// float types other than f16, bf16, f32 and f64.
func EvalFloat(opName string, t *ir.FloatType, a, b float64) (float64, bool) {
	f := floatOps[opName]
	if f == nil || !foldableFloat(t) {
		return 0, false
	}
	if f32 := float32Ops[opName]; t == ir.F32 && f32 != nil {
		f = arithmetic(func(a, b float64) float64 { return float64(f32(float32(a), float32(b))) })
	}
	return ir.RoundToType(f(a, b), t), true
}

// IsFloatOp reports whether opName is a float op EvalFloat knows.
func IsFloatOp(opName string) bool { return floatOps[opName] != nil }

// CmpI compares integers a and b of type t (or of t's element type) with
// predicate p; it is false for an invalid predicate.
func CmpI(p CmpIPredicate, t ir.Type, a, b int64) bool {
	w := ir.IntWidth(ir.ElementTypeOf(t))
	sa, sb, ua, ub := sext(a, w), sext(b, w), zext(a, w), zext(b, w)
	switch p {
	case CmpIEQ:
		return ua == ub
	case CmpINE:
		return ua != ub
	case CmpISLT:
		return sa < sb
	case CmpISLE:
		return sa <= sb
	case CmpISGT:
		return sa > sb
	case CmpISGE:
		return sa >= sb
	case CmpIULT:
		return ua < ub
	case CmpIULE:
		return ua <= ub
	case CmpIUGT:
		return ua > ub
	case CmpIUGE:
		return ua >= ub
	}
	return false
}

// CmpF compares floats a and b with predicate p: ordered predicates are
// false and unordered ones true when either operand is NaN.
func CmpF(p CmpFPredicate, a, b float64) bool {
	unordered := math.IsNaN(a) || math.IsNaN(b)
	switch p {
	case CmpFAlwaysFalse:
		return false
	case CmpFAlwaysTrue:
		return true
	case CmpFORD:
		return !unordered
	case CmpFUNO:
		return unordered
	}
	if unordered {
		return p >= CmpFUEQ
	}
	switch p {
	case CmpFOEQ, CmpFUEQ:
		return a == b
	case CmpFOGT, CmpFUGT:
		return a > b
	case CmpFOGE, CmpFUGE:
		return a >= b
	case CmpFOLT, CmpFULT:
		return a < b
	case CmpFOLE, CmpFULE:
		return a <= b
	case CmpFONE, CmpFUNE:
		return a != b
	}
	return false
}

// Cast converts one element with the cast op opName from type from to type
// to (scalar element types). Integer bits are in ir.TruncInt's form (as
// uint64), float bits in the type's encoding. ok is false when the result is
// undefined (fptosi/fptoui of NaN or a value out of the target's range), when
// the types do not suit the op, and for float types other than f16, bf16, f32
// and f64. Float results round to nearest even; truncf reports the rounded
// value, so callers that must not lose precision (the folder) compare.
func Cast(opName string, from, to ir.Type, bits uint64) (uint64, bool) {
	wf, wt := ir.IntWidth(from), ir.IntWidth(to)
	ff, _ := from.(*ir.FloatType)
	ft, _ := to.(*ir.FloatType)
	v := int64(bits)
	switch opName {
	case OpExtSI, OpTruncI, OpIndexCast:
		if wf == 0 || wt == 0 {
			return 0, false
		}
		return uint64(ir.TruncInt(sext(v, wf), to)), true
	case OpExtUI, OpIndexCastUI:
		if wf == 0 || wt == 0 {
			return 0, false
		}
		return uint64(ir.TruncInt(int64(zext(v, wf)), to)), true
	case OpExtF, OpTruncF:
		if !foldableFloat(ff) || !foldableFloat(ft) {
			return 0, false
		}
		return ir.FloatToBits(ir.FloatFromBits(bits, ff), ft), true
	case OpSIToFP, OpUIToFP:
		if wf == 0 || !foldableFloat(ft) {
			return 0, false
		}
		// big.Float rounds once, to the target's precision; converting through
		// float64 first could round twice.
		x := new(big.Float).SetPrec(uint(ft.Mantissa)).SetMode(big.ToNearestEven)
		if opName == OpSIToFP {
			x.SetInt64(sext(v, wf))
		} else {
			x.SetUint64(zext(v, wf))
		}
		f, _ := x.Float64()
		return ir.FloatToBits(f, ft), true
	case OpFPToSI, OpFPToUI:
		if !foldableFloat(ff) || wt == 0 {
			return 0, false
		}
		f := math.Trunc(ir.FloatFromBits(bits, ff))
		lo, hi := -math.Ldexp(1, wt-1), math.Ldexp(1, wt-1) // [lo, hi)
		if opName == OpFPToUI {
			lo, hi = 0, math.Ldexp(1, wt)
		}
		if math.IsNaN(f) || f < lo || f >= hi {
			return 0, false
		}
		if f >= math.Ldexp(1, 63) { // fptoui to i64 above MaxInt64
			return uint64(ir.TruncInt(int64(uint64(f)), to)), true
		}
		return uint64(ir.TruncInt(int64(f), to)), true
	case OpBitcast:
		w := func(t ir.Type) int {
			if f, ok := t.(*ir.FloatType); ok {
				return f.Width
			}
			if _, ok := t.(*ir.IntegerType); ok {
				return ir.IntWidth(t)
			}
			return 0
		}
		if w(from) == 0 || w(from) != w(to) || w(from) > 64 {
			return 0, false
		}
		raw := bits
		if ff == nil {
			raw = zext(v, wf)
		}
		if ft == nil {
			return uint64(ir.TruncInt(int64(raw), to)), true
		}
		return raw, true
	}
	return 0, false
}
