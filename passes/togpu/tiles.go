package togpu

import (
	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/ir"
)

// ix is offset arithmetic at one insertion point, in the kernel's offset
// type t (i32 where every offset fits, index otherwise).
type ix struct {
	b   *ir.Builder
	loc ir.Location
	t   ir.Type
}

func (x ix) at(b *ir.Builder) ix { return ix{b, x.loc, x.t} }
func (x ix) c(v int64) *ir.Value {
	if x.t == ir.Index {
		return arith.ConstantIndex(x.b, x.loc, v)
	}
	return arith.ConstantInt(x.b, x.loc, v, x.t)
}
func (x ix) op(name string, a, b *ir.Value) *ir.Value {
	return arith.Binary(x.b, name, x.loc, a, b)
}
func (x ix) add(a, b *ir.Value) *ir.Value { return x.op(arith.OpAddI, a, b) }
func (x ix) sub(a, b *ir.Value) *ir.Value { return x.op(arith.OpSubI, a, b) }
func (x ix) mul(a, b *ir.Value) *ir.Value { return x.op(arith.OpMulI, a, b) }
func (x ix) div(a, b *ir.Value) *ir.Value { return x.op(arith.OpDivUI, a, b) }
func (x ix) rem(a, b *ir.Value) *ir.Value { return x.op(arith.OpRemUI, a, b) }

// div32 and rem32 divide offsets known to fit 32 bits (block indices,
// row-block counts) in 32 bits whatever the offset type: a 64-bit
// division by a register is a subroutine call in SASS, and a call
// serializes every wgmma of the kernel (docs/lowering.md, "No calls in a
// wgmma kernel").
func (x ix) div32(a, b *ir.Value) *ir.Value { return x.narrow(arith.OpDivUI, a, b) }
func (x ix) rem32(a, b *ir.Value) *ir.Value { return x.narrow(arith.OpRemUI, a, b) }

// narrow applies the binary op to a and b truncated to i32 and widens the
// result back to the offset type.
func (x ix) narrow(op string, a, b *ir.Value) *ir.Value {
	if x.t == ir.I32 {
		return x.op(op, a, b)
	}
	r := arith.Binary(x.b, op, x.loc, x.i32(a), x.i32(b))
	return arith.NewCast(x.b, arith.OpIndexCastUI, x.loc, r, x.t)
}
func (x ix) addc(a *ir.Value, v int64) *ir.Value {
	if v == 0 {
		return a
	}
	return x.add(a, x.c(v))
}
func (x ix) mulc(a *ir.Value, v int64) *ir.Value { return x.mul(a, x.c(v)) }
func (x ix) shr(a *ir.Value, v int64) *ir.Value  { return x.op(arith.OpShRUI, a, x.c(v)) }
func (x ix) and(a *ir.Value, v int64) *ir.Value  { return x.op(arith.OpAndI, a, x.c(v)) }
func (x ix) xor(a, b *ir.Value) *ir.Value        { return x.op(arith.OpXOrI, a, b) }
func (x ix) xorc(a *ir.Value, v int64) *ir.Value {
	if v == 0 {
		return a
	}
	return x.xor(a, x.c(v))
}
func (x ix) lt(a, b *ir.Value) *ir.Value   { return arith.NewCmpI(x.b, x.loc, arith.CmpIULT, a, b) }
func (x ix) both(a, b *ir.Value) *ir.Value { return x.op(arith.OpAndI, a, b) }

// from converts an index to the offset type; index converts back.
func (x ix) from(v *ir.Value) *ir.Value {
	if x.t == ir.Index {
		return v
	}
	return arith.NewCast(x.b, arith.OpIndexCastUI, x.loc, v, x.t)
}
func (x ix) index(v *ir.Value) *ir.Value {
	if x.t == ir.Index {
		return v
	}
	return arith.NewCast(x.b, arith.OpIndexCastUI, x.loc, v, ir.Index)
}

// size is a matrix size: the constant when static, else the nest's bound.
func (x ix) size(static int64, bound *ir.Value) *ir.Value {
	if static != ir.Dynamic {
		return x.c(static)
	}
	return x.from(bound)
}

// i32 returns v, an offset, as i32: the type of mbarrier parities, TMA
// coordinates and cluster ranks, whatever the kernel's offset type.
func (x ix) i32(v *ir.Value) *ir.Value {
	if v.Type() == ir.I32 {
		return v
	}
	return arith.NewCast(x.b, arith.OpIndexCastUI, x.loc, v, ir.I32)
}

// both2 ands two optional predicates (nil is true).
func (x ix) both2(a, b *ir.Value) *ir.Value {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return x.both(a, b)
}
