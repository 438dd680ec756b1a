package togpu

import (
	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The lanes of a vectorized pointwise nest are V consecutive points of its
// innermost dimension, the first at a multiple of V. A laneForm says how a
// value of the nest varies across them, provided V divides mult (0: any
// V): the same in every lane (laneSame: it does not depend on the
// innermost index, or only through a quotient by a multiple of V, or a
// comparison with one), or lane j's value is lane 0's plus j with lane 0's
// a multiple of V (laneStep: the index itself, plus multiples of V, or its
// remainder by a multiple of V). The heads of a fused q, k, v gradient,
// concatenated along the columns ([8, 12, 1024, 64] each, read at column
// c as head (c/64) mod 12 of the third c/768), are so: a chunk of V
// columns reads V adjacent elements of one head of one of them.
type laneForm struct {
	kind int
	mult int64
}

const (
	laneVaries = iota // no relation the analysis knows
	laneSame
	laneStep
)

// laneForms computes the forms of the values of a nest, memoized.
type laneForms struct {
	iv   *ir.Value // the innermost induction variable
	lb   int64     // its lower bound
	nest *ir.Operation
	memo map[*ir.Value]laneForm
	// pow2 is set when a form relies on V being a power of two (a cast,
	// quotient, remainder or comparison of a laneStep value).
	pow2 bool
}

func newLaneForms(nest *ir.Operation, iv *ir.Value, lb int64) *laneForms {
	return &laneForms{iv: iv, lb: lb, nest: nest, memo: map[*ir.Value]laneForm{}}
}

// of returns v's form.
func (f *laneForms) of(v *ir.Value) laneForm {
	if r, ok := f.memo[v]; ok {
		return r
	}
	f.memo[v] = laneForm{}
	r := f.compute(v)
	f.memo[v] = r
	return r
}

// usable reports whether lanes of width vec may rely on v's form.
func (f *laneForms) usable(v *ir.Value, vec int64) (laneForm, bool) {
	r, ok := f.memo[v]
	return r, ok && r.kind != laneVaries && (r.mult == 0 || r.mult%vec == 0)
}

func (f *laneForms) compute(v *ir.Value) laneForm {
	same := laneForm{kind: laneSame}
	if v == f.iv {
		return laneForm{kind: laneStep, mult: max(f.lb, -f.lb)}
	}
	if !definedIn(v, f.nest) {
		return same
	}
	d := v.DefiningOp()
	if d == nil {
		// The nest's other induction variables (a chunk never crosses a
		// row) and an inner loop.for's (one loop runs every lane) are the
		// same in every lane; iter arguments are each lane's own.
		p := v.ParentBlock().ParentOp()
		if p == f.nest || p.Name() == loop.ForOp && v.Index() == 0 {
			return same
		}
		return laneForm{}
	}
	if d.NumRegions() > 0 || d.NumResults() != 1 {
		return laneForm{}
	}
	ops := make([]laneForm, d.NumOperands())
	all, m := true, int64(0)
	for i, o := range d.Operands() {
		ops[i] = f.of(o)
		all = all && ops[i].kind == laneSame
		m = gcd(m, ops[i].mult)
	}
	if all && (d.HasTrait(ir.Pure) || d.Name() == loop.LoadOp) {
		return laneForm{kind: laneSame, mult: m}
	}
	step := func(i int) bool { return ops[i].kind == laneStep }
	c, isConst := int64(0), false
	if d.NumOperands() == 2 {
		c, isConst = staticInt(d.Operand(1))
		isConst = isConst && c > 0
	}
	r := f.rule(d, ops, step, c, isConst)
	if r.kind != laneVaries && d.Name() != arith.OpAddI && d.Name() != arith.OpSubI {
		f.pow2 = true
	}
	return r
}

// rule is the form of d's result by its op, its operands' forms ops (step
// tells a laneStep operand) and its second operand's value c when that is
// a positive constant.
func (f *laneForms) rule(d *ir.Operation, ops []laneForm, step func(int) bool, c int64, isConst bool) laneForm {
	switch d.Name() {
	case arith.OpIndexCast, arith.OpIndexCastUI, arith.OpExtUI, arith.OpExtSI, arith.OpTruncI:
		// Lane 0's value is a multiple of V, a power of two, and V
		// divides 2^16: a chunk crosses no wrap-around of 16 bits or
		// more.
		if t := d.Result(0).Type(); t == ir.Index || ir.IntWidth(t) >= 16 {
			return ops[0]
		}
	case arith.OpAddI, arith.OpSubI:
		x, y, yv := ops[0], ops[1], d.Operand(1)
		if d.Name() == arith.OpAddI && y.kind == laneStep {
			x, y, yv = y, x, d.Operand(0)
		}
		if x.kind == laneStep && y.kind == laneSame {
			return laneForm{kind: laneStep, mult: gcd(gcd(x.mult, y.mult), loop.KnownMultiple(yv))}
		}
	case arith.OpDivUI:
		if step(0) && isConst {
			return laneForm{kind: laneSame, mult: gcd(ops[0].mult, c)}
		}
	case arith.OpShRUI:
		if step(0) && isConst && c < 62 {
			return laneForm{kind: laneSame, mult: gcd(ops[0].mult, int64(1)<<c)}
		}
	case arith.OpRemUI:
		if step(0) && isConst {
			return laneForm{kind: laneStep, mult: gcd(ops[0].mult, c)}
		}
	case arith.OpAndI:
		if step(0) && isConst && (c+1)&c == 0 {
			return laneForm{kind: laneStep, mult: gcd(ops[0].mult, c+1)}
		}
	case arith.OpCmpI:
		return f.compare(d, ops)
	}
	return laneForm{}
}

// compare is the form of arith.cmpi d, its operands' forms ops: the same
// in every lane when it orders a laneStep value against a constant K that
// the lanes cannot straddle (x < K and x ≥ K with V dividing K; x ≤ K and
// x > K with V dividing K+1).
func (f *laneForms) compare(d *ir.Operation, ops []laneForm) laneForm {
	p, ok := d.Attr("predicate").(ir.IntegerAttr)
	if !ok {
		return laneForm{}
	}
	pred := arith.CmpIPredicate(p.Value)
	x, k := 0, 1
	if ops[1].kind == laneStep {
		x, k, pred = 1, 0, pred.Swapped()
	}
	K, isConst := staticInt(d.Operand(k))
	if ops[x].kind != laneStep || !isConst || !pred.Valid() {
		return laneForm{}
	}
	switch pred {
	case arith.CmpISLT, arith.CmpISGE, arith.CmpIULT, arith.CmpIUGE:
	case arith.CmpISLE, arith.CmpISGT, arith.CmpIULE, arith.CmpIUGT:
		K++
	default:
		return laneForm{}
	}
	return laneForm{kind: laneSame, mult: gcd(ops[x].mult, max(K, -K))}
}

// laneShare derives lanes' values from lane 0's by their forms.
type laneShare struct {
	forms *laneForms
	vec   int64
}

// derive maps op's result in lane j (map m; lane 0's clone already made,
// mapped by m0) from lane 0's when its form allows: a laneSame value (a
// pure op or a load: the lanes' loads are adjacent) is lane 0's, a
// laneStep index is lane 0's plus j, which is what keeps the lanes'
// accesses visibly adjacent for targets/llvm's vector accesses. It reports
// whether it did.
func (sh *laneShare) derive(b *ir.Builder, loc ir.Location, op *ir.Operation, m0, m map[*ir.Value]*ir.Value, j int) bool {
	if sh == nil || sh.forms == nil || op.NumRegions() > 0 || op.NumResults() != 1 || !op.HasTrait(ir.Pure) && op.Name() != loop.LoadOp {
		return false
	}
	r := op.Result(0)
	f, ok := sh.forms.usable(r, sh.vec)
	switch {
	case !ok:
		return false
	case f.kind == laneSame:
		m[r] = m0[r]
	case op.Name() == loop.LoadOp:
		return false
	case r.Type() == ir.Index:
		m[r] = arith.Binary(b, arith.OpAddI, loc, m0[r], arith.ConstantIndex(b, loc, int64(j)))
	case ir.IsInteger(r.Type()):
		m[r] = arith.Binary(b, arith.OpAddI, loc, m0[r], arith.ConstantInt(b, loc, int64(j), r.Type()))
	default:
		return false
	}
	return true
}
