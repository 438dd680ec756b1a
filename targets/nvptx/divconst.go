package nvptx

import (
	"math/bits"

	"github.com/llir/llvm/ir/value"
)

// Unsigned division and remainder by a constant. ptxas compiles div.u32
// and rem.u32 by an immediate as by a register (a reciprocal and its
// correction: ten 32-bit divisions by distinct constants assembled to 168
// instructions, by one register 128), and the 64-bit ones as a long
// routine (one div.u64 and one rem.u64 by constants: 152 instructions
// against 48 for the 32-bit pair). Every pointwise kernel divides its
// flat index by the output's extents to get N-D coordinates, so the
// native backend divides by a constant d as a multiplication by a magic
// number (Granlund and Montgomery's round-up method, as compilers do):
// with l = ⌈log2 d⌉ and m = ⌊2^W·(2^l − d)/d⌋ + 1 (W the width, m < 2^W),
//
//	t = mulhi(x, m);  q = (t + ((x − t) >> 1)) >> (l − 1)
//
// is x / d for every W-bit x (d ≥ 2; x − t cannot underflow and the sum
// cannot overflow); a power of two is a shift, and x % d is x − q·d.

// divMagic returns the magic number and shift of division by d at width w
// (32 or 64), false for d that takes no multiplication: 0, 1, a power of
// two, or above 2^(w−1) (a quotient of 0 or 1).
func divMagic(d uint64, w int) (m uint64, l int, ok bool) {
	if d < 2 || d&(d-1) == 0 || d > 1<<(w-1) || (w == 32 && d > 1<<32-1) {
		return 0, 0, false
	}
	l = bits.Len64(d - 1) // ⌈log2 d⌉, at least 2 here
	if w == 32 {
		return (uint64(1)<<l-d)<<32/d + 1, l, true
	}
	q, _ := bits.Div64(uint64(1)<<l-d, 0, d) // (2^l − d)·2^64 / d, 2^l − d < d
	return q + 1, l, true
}

// divByConstant emits x / d or x % d (rem) into dst for an unsigned
// integer of kind k (32 or 64 bits) and a constant d, and reports false
// (emitting nothing) when d takes the plain instruction.
func (e *emitter) divByConstant(k scalarKind, dst reg, x string, d uint64, rem bool) bool {
	w := k.bits
	u := k.intSuffix("u")
	imm := func(v uint64) string { return immText(scalarConst{k: k, bits: v}) }
	if d >= 2 && d&(d-1) == 0 && d <= 1<<(w-1) {
		// A power of two (canonicalize turns most into shifts already).
		if rem {
			e.inst("and%s %s, %s, %s;", k.intSuffix("b"), dst, x, imm(d-1))
		} else {
			e.inst("shr%s %s, %s, %d;", u, dst, x, bits.TrailingZeros64(d))
		}
		return true
	}
	m, l, ok := divMagic(d, w)
	if !ok {
		return false
	}
	t, s, q := e.newReg(k.class), e.newReg(k.class), dst
	if rem {
		q = e.newReg(k.class)
	}
	e.inst("mul.hi%s %s, %s, %s;", u, t, x, imm(m))
	e.inst("sub%s %s, %s, %s;", u, s, x, t)
	e.inst("shr%s %s, %s, 1;", u, s, s)
	e.inst("add%s %s, %s, %s;", u, s, s, t)
	e.inst("shr%s %s, %s, %d;", u, q, s, l-1)
	if rem {
		p := e.newReg(k.class)
		e.inst("mul.lo%s %s, %s, %s;", u, p, q, imm(d))
		e.inst("sub%s %s, %s, %s;", u, dst, x, p)
	}
	return true
}

// constDivisor returns the constant a udiv or urem divides by, when y is
// one scalar constant.
func (e *emitter) constDivisor(y value.Value) (uint64, bool) {
	c, ok := e.plan.constOf(y)
	if !ok || c.k.float || c.k.ptr {
		return 0, false
	}
	return c.bits, true
}
