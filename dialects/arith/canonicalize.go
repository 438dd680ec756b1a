package arith

import (
	"math"

	"github.com/strata-ir/strata/ir"
)

// patterns holds each op's canonicalization patterns, installed into its
// OpDef by init. Most follow upstream's ArithCanonicalization.td; upstream
// does a few of them (constants to the right, in-place operand updates) in
// its folders, which here only return values or constants.
var patterns = map[string][]*ir.Pattern{
	OpAddI: {
		reassoc("arith.addi-fold-constants-reassoc", OpAddI, OpAddI, OpAddI, xc0c1, OpAddI),
		reassoc("arith.addi-subi-rhs-constant", OpAddI, OpSubI, OpAddI, xc1c0, OpSubI),
		reassoc("arith.addi-subi-lhs-constant", OpAddI, OpSubI, OpSubI, c0c1x, OpAddI),
		addMulNegOne, addDivRemOffset,
	},
	OpSubI: {
		reassoc("arith.subi-addi-rhs-constant", OpSubI, OpAddI, OpAddI, xc0c1, OpSubI),
		reassoc("arith.subi-subi-rhs-constant", OpSubI, OpSubI, OpSubI, xc0c1, OpAddI),
		reassoc("arith.subi-subi-lhs-rhs-constant", OpSubI, OpSubI, OpSubI, c0c1x, OpSubI),
		subConstOfAddi, subConstOfSubi, subSubSameLHS,
	},
	OpMulI: {
		reassoc("arith.muli-fold-constants-reassoc", OpMulI, OpMulI, OpMulI, xc0c1, OpMulI),
	},
	OpDivF:   {divfByPowerOfTwo},
	OpXOrI:   {xorNotCmpI},
	OpCmpI:   {cmpIConstantToRHS, cmpIOfExt(OpExtSI), cmpIOfExt(OpExtUI)},
	OpSelect: {selectI1ToNot, selectToExtUI, selectRedundant, selectNotCond},
	OpExtSI: {
		castOfCast("arith.extsi-of-extsi", OpExtSI, OpExtSI, OpExtSI),
		castOfCast("arith.extsi-of-extui", OpExtSI, OpExtUI, OpExtUI),
	},
	OpExtUI: {castOfCast("arith.extui-of-extui", OpExtUI, OpExtUI, OpExtUI)},
	OpExtF:  {castOfCast("arith.extf-of-extf", OpExtF, OpExtF, OpExtF)},
	OpTruncI: {
		castOfCast("arith.trunci-of-trunci", OpTruncI, OpTruncI, OpTruncI),
		truncOfExt("arith.trunci-of-extsi", OpTruncI, OpExtSI),
		truncOfExt("arith.trunci-of-extui", OpTruncI, OpExtUI),
	},
	OpTruncF: {truncOfExt("arith.truncf-of-extf", OpTruncF, OpExtF)},
	OpIndexCast: {
		indexCastRoundTrip(OpIndexCast),
		castOfCast("arith.index_cast-of-extsi", OpIndexCast, OpExtSI, OpIndexCast),
	},
	OpIndexCastUI: {
		indexCastRoundTrip(OpIndexCastUI),
		castOfCast("arith.index_castui-of-extui", OpIndexCastUI, OpExtUI, OpIndexCastUI),
	},
	OpBitcast: {castOfCast("arith.bitcast-of-bitcast", OpBitcast, OpBitcast, OpBitcast)},
}

func init() {
	for _, b := range binaryOps {
		if b.traits&ir.Commutative != 0 {
			name := "arith." + b.name
			patterns[name] = append([]*ir.Pattern{constantToRHS(name)}, patterns[name]...)
		}
	}
}

// replaceWith builds a replacement op of the same result type just before
// op and replaces op with it.
func replaceWith(r *ir.Rewriter, op *ir.Operation, name string, operands []*ir.Value, props ...ir.NamedAttr) {
	r.SetInsertionPointBefore(op)
	n := r.Op(name, op.Loc(), operands, op.ResultTypes(), props...)
	r.ReplaceOp(op, n.Results())
}

// newConstant inserts arith.constant a before op.
func newConstant(r *ir.Rewriter, op *ir.Operation, a ir.Attribute) *ir.Value {
	r.SetInsertionPointBefore(op)
	return Constant(&r.Builder, op.Loc(), a)
}

// constantToRHS moves a constant left operand of a commutative op to the
// right, so that the folders and patterns only look there.
func constantToRHS(name string) *ir.Pattern {
	return &ir.Pattern{
		Name: name + "-constant-to-rhs", Root: name,
		Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
			x, y := op.Operand(0), op.Operand(1)
			if constValue(x) == nil || constValue(y) != nil {
				return false
			}
			r.ModifyInPlace(op, func() { op.SetOperands([]*ir.Value{y, x}) })
			return true
		},
	}
}

// cmpIConstantToRHS swaps cmpi's operands and predicate to put a constant on the right.
var cmpIConstantToRHS = &ir.Pattern{
	Name: "arith.cmpi-constant-to-rhs", Root: OpCmpI,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		x, y := op.Operand(0), op.Operand(1)
		p, ok := predicateOf(op)
		if !ok || !CmpIPredicate(p).Valid() || constValue(x) == nil || constValue(y) != nil {
			return false
		}
		r.ModifyInPlace(op, func() {
			op.SetOperands([]*ir.Value{y, x})
			op.SetProperty("predicate", ir.IntegerAttr{Value: int64(CmpIPredicate(p).Swapped()), Type: ir.I64})
		})
		return true
	},
}

// overflowAnd returns the overflow flags both ops promise (absent flags are none).
func overflowAnd(a, b *ir.Operation) []ir.NamedAttr {
	if !containsString(opDefs[a.Name()].Inherent, overflow.prop) {
		return nil
	}
	ma, errA := overflow.mask(a.Properties().Get(overflow.prop))
	mb, errB := overflow.mask(b.Properties().Get(overflow.prop))
	if errA != nil || errB != nil {
		ma, mb = 0, 0
	}
	return []ir.NamedAttr{{Name: overflow.prop, Value: overflow.attr(ma & mb)}}
}

func containsString(ss []string, s string) bool { return indexOf(ss, s) >= 0 }

// shape says where x, c0 (the inner op's constant) and c1 (the outer op's)
// sit in a reassociation and how the new constant is computed.
type shape int

const (
	xc0c1 shape = iota // inner(x, c0), outer(inner, c1) → new(x, c0 ∘ c1)
	xc1c0              // inner(x, c0), outer(inner, c1) → new(x, c1 ∘ c0)
	c0c1x              // inner(c0, x), outer(inner, c1) → new(c0 ∘ c1, x)
)

// reassoc folds two constants through two integer ops: outer(inner(...),
// c1) with inner's constant c0 becomes result(x, c0 combine c1) (or the
// operand order that s says). The new op gets the overflow flags both ops
// had.
func reassoc(name, outer, inner, result string, s shape, combine string) *ir.Pattern {
	return &ir.Pattern{
		Name: name, Root: outer,
		Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
			c1 := constValue(op.Operand(1))
			in := definedBy(op.Operand(0), inner)
			if c1 == nil || in == nil {
				return false
			}
			xi, ci := 0, 1
			if s == c0c1x {
				xi, ci = 1, 0
			}
			x, c0 := in.Operand(xi), constValue(in.Operand(ci))
			if c0 == nil || constValue(x) != nil {
				return false
			}
			a, b := c0, c1
			if s == xc1c0 {
				a, b = c1, c0
			}
			c := evalConst(combine, op.Result(0).Type(), a, b)
			if c == nil {
				return false
			}
			cv := newConstant(r, op, c)
			operands := []*ir.Value{x, cv}
			if s == c0c1x {
				operands = []*ir.Value{cv, x}
			}
			replaceWith(r, op, result, operands, overflowAnd(op, in)...)
			return true
		},
	}
}

// subConstOfAddi rewrites subi(c1, addi(x, c0)) to subi(c1 - c0, x).
var subConstOfAddi = &ir.Pattern{
	Name: "arith.subi-constant-minus-addi", Root: OpSubI,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		return constMinus(r, op, OpAddI, func(x, cv *ir.Value) (string, []*ir.Value) {
			return OpSubI, []*ir.Value{cv, x}
		}, OpSubI, false)
	},
}

// subConstOfSubi rewrites subi(c1, subi(x, c0)) to subi(c1 + c0, x) and
// subi(c1, subi(c0, x)) to addi(x, c1 - c0).
var subConstOfSubi = &ir.Pattern{
	Name: "arith.subi-constant-minus-subi", Root: OpSubI,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		if constMinus(r, op, OpSubI, func(x, cv *ir.Value) (string, []*ir.Value) {
			return OpSubI, []*ir.Value{cv, x}
		}, OpAddI, false) {
			return true
		}
		return constMinus(r, op, OpSubI, func(x, cv *ir.Value) (string, []*ir.Value) {
			return OpAddI, []*ir.Value{x, cv}
		}, OpSubI, true)
	},
}

// constMinus matches subi(c1, inner(...)) where inner has the constant c0 on
// the right (or on the left with constLeft); it computes c1 combine c0 and
// builds the op that build says.
func constMinus(r *ir.Rewriter, op *ir.Operation, inner string, build func(x, cv *ir.Value) (string, []*ir.Value), combine string, constLeft bool) bool {
	c1 := constValue(op.Operand(0))
	in := definedBy(op.Operand(1), inner)
	if c1 == nil || in == nil {
		return false
	}
	xi, ci := 0, 1
	if constLeft {
		xi, ci = 1, 0
	}
	x, c0 := in.Operand(xi), constValue(in.Operand(ci))
	if c0 == nil || constValue(x) != nil {
		return false
	}
	c := evalConst(combine, op.Result(0).Type(), c1, c0)
	if c == nil {
		return false
	}
	name, operands := build(x, newConstant(r, op, c))
	replaceWith(r, op, name, operands, overflowAnd(op, in)...)
	return true
}

// subSubSameLHS rewrites subi(subi(a, b), a) to subi(0, b).
var subSubSameLHS = &ir.Pattern{
	Name: "arith.subi-subi-same-lhs", Root: OpSubI,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		in := definedBy(op.Operand(0), OpSubI)
		if in == nil || in.Operand(0) != op.Operand(1) {
			return false
		}
		z := makeConst(op.Result(0).Type(), []uint64{0})
		if z == nil {
			return false
		}
		replaceWith(r, op, OpSubI, []*ir.Value{newConstant(r, op, z), in.Operand(1)}, overflowAnd(op, in)...)
		return true
	},
}

// isConstSplat reports whether v is a constant whose every element satisfies pred.
func isConstSplat(v *ir.Value, pred intPred) bool {
	c, ok := splatOf(constValue(v))
	return ok && pred(int64(c), ir.ElementTypeOf(v.Type()))
}

// addMulNegOne rewrites addi(x, muli(y, -1)) to subi(x, y), and
// addi(muli(y, -1), x) likewise.
var addMulNegOne = &ir.Pattern{
	Name: "arith.addi-muli-negative-one", Root: OpAddI,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		for i := range 2 {
			m := definedBy(op.Operand(i), OpMulI)
			if m != nil && isConstSplat(m.Operand(1), isAllOnes) {
				replaceWith(r, op, OpSubI, []*ir.Value{op.Operand(1 - i), m.Operand(0)},
					ir.NamedAttr{Name: overflow.prop, Value: OverflowNone})
				return true
			}
		}
		return false
	},
}

// addDivRemOffset rewrites addi((x / c)·c, addi(x mod c, k)) to
// addi(x, k), with the operands of each addi in either order (see
// divRemRecombine for the forms of the product and the remainder). The
// lanes of a vectorized nest read at a row's offset plus its lane's
// column plus j: folded alike, lane 0's index is the flat index and lane
// j's this sum, and the loads stay recognizably adjacent.
var addDivRemOffset = &ir.Pattern{
	Name: "arith.addi-divui-remui-offset", Root: OpAddI,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		for i := range 2 {
			inner := definedBy(op.Operand(1-i), OpAddI)
			if inner == nil {
				continue
			}
			for j := range 2 {
				if x := recombined(op.Operand(i), inner.Operand(j)); x != nil && x.Type() == op.Result(0).Type() {
					replaceWith(r, op, OpAddI, []*ir.Value{x, inner.Operand(1 - j)},
						ir.NamedAttr{Name: overflow.prop, Value: OverflowNone})
					return true
				}
			}
		}
		return false
	},
}

// xorNotCmpI rewrites xori(cmpi(p, a, b), true) to cmpi(!p, a, b).
var xorNotCmpI = &ir.Pattern{
	Name: "arith.xori-not-cmpi", Root: OpXOrI,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		cmp := definedBy(op.Operand(0), OpCmpI)
		if cmp == nil || !isConstSplat(op.Operand(1), isOne) {
			return false
		}
		p, ok := predicateOf(cmp)
		if !ok || !CmpIPredicate(p).Valid() {
			return false
		}
		replaceWith(r, op, OpCmpI, cmp.Operands(),
			ir.NamedAttr{Name: "predicate", Value: ir.IntegerAttr{Value: int64(CmpIPredicate(p).Inverted()), Type: ir.I64}})
		return true
	},
}

// cmpIOfExt rewrites cmpi eq/ne of two extensions (of one kind, from one
// type) to the comparison of their sources: extensions are injective.
func cmpIOfExt(ext string) *ir.Pattern {
	return &ir.Pattern{
		Name: "arith.cmpi-of-" + ext[len("arith."):], Root: OpCmpI,
		Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
			p, _ := predicateOf(op)
			a, b := definedBy(op.Operand(0), ext), definedBy(op.Operand(1), ext)
			if (p != int64(CmpIEQ) && p != int64(CmpINE)) || a == nil || b == nil ||
				a.Operand(0).Type() != b.Operand(0).Type() {
				return false
			}
			replaceWith(r, op, OpCmpI, []*ir.Value{a.Operand(0), b.Operand(0)}, op.Properties()...)
			return true
		},
	}
}

// selectI1ToNot rewrites select(c, false, true) on i1 to xori(c, true).
var selectI1ToNot = &ir.Pattern{
	Name: "arith.select-i1-to-not", Root: OpSelect,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		if op.Result(0).Type() != ir.I1 || !isConstSplat(op.Operand(1), isZero) || !isConstSplat(op.Operand(2), isOne) {
			return false
		}
		one := newConstant(r, op, ir.Bool(true))
		replaceWith(r, op, OpXOrI, []*ir.Value{op.Operand(0), one})
		return true
	},
}

// selectToExtUI rewrites select(c: i1, 1, 0) on a wider integer to
// extui(c), and select(c, 0, 1) to extui(xori(c, true)).
var selectToExtUI = &ir.Pattern{
	Name: "arith.select-to-extui", Root: OpSelect,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		it, ok := op.Result(0).Type().(*ir.IntegerType)
		if !ok || it.Width == 1 || op.Operand(0).Type() != ir.I1 {
			return false
		}
		cond := op.Operand(0)
		switch {
		case isConstSplat(op.Operand(1), isOne) && isConstSplat(op.Operand(2), isZero):
		case isConstSplat(op.Operand(1), isZero) && isConstSplat(op.Operand(2), isOne):
			r.SetInsertionPointBefore(op)
			cond = Binary(&r.Builder, OpXOrI, op.Loc(), cond, newConstant(r, op, ir.Bool(true)))
		default:
			return false
		}
		replaceWith(r, op, OpExtUI, []*ir.Value{cond})
		return true
	},
}

// selectRedundant rewrites select(c, select(c, a, b), d) to select(c, a, d)
// and select(c, a, select(c, b, d)) to select(c, a, d).
var selectRedundant = &ir.Pattern{
	Name: "arith.select-redundant-inner-select", Root: OpSelect,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		c := op.Operand(0)
		if in := definedBy(op.Operand(1), OpSelect); in != nil && in.Operand(0) == c {
			r.ModifyInPlace(op, func() { op.SetOperand(1, in.Operand(1)) })
			return true
		}
		if in := definedBy(op.Operand(2), OpSelect); in != nil && in.Operand(0) == c {
			r.ModifyInPlace(op, func() { op.SetOperand(2, in.Operand(2)) })
			return true
		}
		return false
	},
}

// selectNotCond rewrites select(xori(c, -1), a, b) to select(c, b, a).
var selectNotCond = &ir.Pattern{
	Name: "arith.select-not-cond", Root: OpSelect,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		x := definedBy(op.Operand(0), OpXOrI)
		if x == nil || !isConstSplat(x.Operand(1), isAllOnes) {
			return false
		}
		r.ModifyInPlace(op, func() {
			op.SetOperands([]*ir.Value{x.Operand(0), op.Operand(2), op.Operand(1)})
		})
		return true
	},
}

// castOfCast rewrites outer(inner(x)) to result(x) converting straight to
// outer's result type: ext∘ext, trunc∘trunc, index_cast∘ext and the like
// compose into one cast.
func castOfCast(name, outer, inner, result string) *ir.Pattern {
	return &ir.Pattern{
		Name: name, Root: outer,
		Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
			in := definedBy(op.Operand(0), inner)
			if in == nil {
				return false
			}
			replaceWith(r, op, result, []*ir.Value{in.Operand(0)})
			return true
		},
	}
}

// truncOfExt rewrites trunc(ext(x)) (integer or float) when x's element type
// differs from the result's: to trunc(x) when x is wider, to ext(x) when it
// is narrower. The extension is exact, so both are equal. (When x has the
// result type, the folder returns x.)
func truncOfExt(name, trunc, ext string) *ir.Pattern {
	return &ir.Pattern{
		Name: name, Root: trunc,
		Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
			in := definedBy(op.Operand(0), ext)
			if in == nil {
				return false
			}
			x := in.Operand(0)
			wx, wr := bitWidth(ir.ElementTypeOf(x.Type())), bitWidth(ir.ElementTypeOf(op.Result(0).Type()))
			switch {
			case wx > wr:
				r.ModifyInPlace(op, func() { op.SetOperand(0, x) })
			case wx < wr:
				replaceWith(r, op, ext, []*ir.Value{x})
			default:
				return false
			}
			return true
		},
	}
}

// indexCastRoundTrip rewrites cast(cast(x)) to x when x has the result type
// and the intermediate type is at least as wide as x (index counting as 64
// bits), so that no bits were lost on the way.
func indexCastRoundTrip(cast string) *ir.Pattern {
	return &ir.Pattern{
		Name: cast + "-round-trip", Root: cast,
		Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
			in := definedBy(op.Operand(0), cast)
			if in == nil {
				return false
			}
			x := in.Operand(0)
			if x.Type() != op.Result(0).Type() ||
				ir.IntWidth(ir.ElementTypeOf(in.Result(0).Type())) < ir.IntWidth(ir.ElementTypeOf(x.Type())) {
				return false
			}
			r.ReplaceOp(op, []*ir.Value{x})
			return true
		},
	}
}

// divfByPowerOfTwo rewrites divf(x, ±2^k) to mulf(x, ±2^-k) when 2^-k is
// exactly representable in the element type. Both ops round the same real
// number x·2^-k once, so the results are identical bit for bit, NaN, zeros
// and infinities included; on the GPU the multiply is one instruction
// where an IEEE division is a subroutine the driver's JIT compiles anew.
var divfByPowerOfTwo = &ir.Pattern{
	Name: "arith.divf-by-power-of-two", Root: OpDivF,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		bits, ok := splatOf(constValue(op.Operand(1)))
		ft, isFloat := ir.ElementTypeOf(op.Result(0).Type()).(*ir.FloatType)
		if !ok || !isFloat || !foldableFloat(ft) {
			return false
		}
		c := ir.FloatFromBits(bits, ft)
		if frac, _ := math.Frexp(c); math.Abs(frac) != 0.5 {
			return false // not ±2^k (nor 0, inf or NaN)
		}
		inv := 1 / c // (+-inf when c is an f64 below 2^-1023)
		invBits := ir.FloatToBits(inv, ft)
		if math.IsInf(inv, 0) || ir.FloatFromBits(invBits, ft) != inv {
			return false // 2^-k overflows (or underflows) the type
		}
		a := makeConst(op.Operand(1).Type(), []uint64{invBits})
		if a == nil {
			return false
		}
		y := newConstant(r, op, a)
		replaceWith(r, op, OpMulF, []*ir.Value{op.Operand(0), y}, op.Properties()...)
		return true
	},
}
