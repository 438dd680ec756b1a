package loop

import (
	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/ir"
)

// KnownMultiple returns a number the integer or index v is known to be a
// multiple of (0 when v is the constant 0, 1 when nothing is known, at
// most 2^30 for products): constants, arith.muli (product), arith.addi and
// arith.remui (gcd), arith.andi, extensions and casts (the power-of-two
// part), arith.shli by a constant, and the induction variable of a
// loop.for (gcd of its lower bound and step). Alignment facts of
// lowerings and targets (vector widths, aligned offsets) come from here.
func KnownMultiple(v *ir.Value) int64 { return knownMultiple(v, 0) }

func knownMultiple(v *ir.Value, depth int) int64 {
	if c, ok := constInt(v); ok {
		return max(c, -c)
	}
	if depth > 8 {
		return 1
	}
	if d := v.DefiningOp(); d != nil {
		switch d.Name() {
		case arith.OpMulI:
			x, y := knownMultiple(d.Operand(0), depth+1), knownMultiple(d.Operand(1), depth+1)
			if x == 0 || y == 0 {
				return 0
			}
			if x > 1<<30 || y > 1<<30 {
				return 1 << 30
			}
			return x * y
		case arith.OpAddI:
			return gcd(knownMultiple(d.Operand(0), depth+1), knownMultiple(d.Operand(1), depth+1))
		case arith.OpRemUI:
			// a = g·a', c = g·c' ⇒ a mod c = g·(a' mod c'): the column
			// of a flattened N-D index, x·V mod n, stays a multiple of V.
			return gcd(knownMultiple(d.Operand(0), depth+1), knownMultiple(d.Operand(1), depth+1))
		case arith.OpAndI:
			// Low bits that are zero in either operand are zero in the result.
			x, y := knownMultiple(d.Operand(0), depth+1), knownMultiple(d.Operand(1), depth+1)
			if x == 0 || y == 0 {
				return 0
			}
			return max(x&-x, y&-y)
		case arith.OpIndexCastUI, arith.OpIndexCast, arith.OpExtUI, arith.OpExtSI:
			// A widened offset (convert-loop-to-gpu's index-bits=32): the
			// power-of-two part of a multiple survives wrapping in the
			// narrow type and the extension.
			x := knownMultiple(d.Operand(0), depth+1)
			if x == 0 {
				return 0
			}
			return x & -x
		case arith.OpShLI:
			if c, ok := constInt(d.Operand(1)); ok && c >= 0 && c < 30 {
				x := knownMultiple(d.Operand(0), depth+1)
				return min(x<<c, 1<<30)
			}
		}
		return 1
	}
	if blk := v.ParentBlock(); blk != nil && v.IsBlockArgument() && v.Index() == 0 {
		if owner := blk.ParentOp(); owner != nil && owner.Name() == ForOp && Body(owner) == blk {
			return gcd(knownMultiple(owner.Operand(0), depth+1), knownMultiple(owner.Operand(2), depth+1))
		}
	}
	return 1
}

// constInt returns v's value when an arith.constant defines it.
func constInt(v *ir.Value) (int64, bool) {
	d := v.DefiningOp()
	if d == nil || d.Name() != arith.OpConstant {
		return 0, false
	}
	a, ok := d.Attr("value").(ir.IntegerAttr)
	return a.Value, ok
}

// gcd is the greatest common divisor of a, b ≥ 0 (gcd(0, b) = b).
func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
