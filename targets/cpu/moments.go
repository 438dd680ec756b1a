package cpu

import (
	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// A normalisation row (layer_norm, instance and group norms, the
// variance of reduce ops) is lowered to two loops over the same range:
// a sum Σ x[…, j], and, after the mean m is derived from it, Σ (x[…, j]
// − m)². Run as written the row is read twice. Where both loops have
// exactly that form, the first becomes one pass computing the shifted
// sums s1 = Σ (x − c) and s2 = Σ (x − c)², with c the row's first
// element, in vector registers; the sum is s1 + n·c and the second loop
// becomes the identity Σ (x − m)² = s2 − 2δ·s1 + n·δ² with δ = m − c
// (exact for any m). Shifting by an element of the row keeps the
// cancellation bounded (s2 ≤ (n + 1) times the result, as every term of
// Σ (x − m)² includes (c − m)²; on data near its mean, as normalised
// activations are, the two agree to a few ulps).

// moments is one such pair of loops.
type moments struct {
	sum, sq *ir.Operation // the loops
	x       *ir.Value     // the buffer both read
	idx     []*ir.Value   // the sum loop's load indices (the last its iv)
	m       *ir.Value     // the value the second loop subtracts
	// mean, when not nil, is an arith.divf of the sum by its static trip
	// count: it becomes c + s1/n, which keeps the bits an f32 sum of
	// values far from zero loses (s1 + n·c rounds at the sum's scale).
	mean *ir.Operation
	// s1, s2, c and n are the fused loop's results, set when the sum loop
	// is translated.
	s1, s2, c, n value.Value
}

// findMoments records the pairs of loops of body (a nest's body) that
// one pass computes.
func (k *kt) findMoments(nest *ir.Operation, body *ir.Block) {
	stored := map[*ir.Value]bool{}
	nest.Walk(func(op *ir.Operation) bool {
		if op.Name() == loop.StoreOp {
			stored[op.Operand(1)] = true
		}
		return true
	})
	var fors []*ir.Operation
	for _, op := range body.Ops() {
		if op.Name() == loop.ForOp {
			fors = append(fors, op)
		}
	}
	for i, a := range fors {
		if k.moments[a] != nil {
			continue
		}
		x, idx := sumOfLoads(a)
		if x == nil || stored[x] || !indicesBefore(idx[:len(idx)-1], a) {
			continue
		}
		for _, b := range fors[i+1:] {
			if k.moments[b] != nil || !sameRange(a, b) {
				continue
			}
			if m := sumOfSquares(b, x, idx); m != nil {
				mo := &moments{sum: a, sq: b, x: x, idx: idx, m: m}
				k.moments[a], k.moments[b] = mo, mo
				if mo.mean = meanOf(a); mo.mean != nil {
					k.moments[mo.mean] = mo
				}
				break
			}
		}
	}
}

// meanOf returns the arith.divf that divides the result of loop a by its
// trip count, when both are constants, or nil.
func meanOf(a *ir.Operation) *ir.Operation {
	c := func(v *ir.Value) (int64, bool) {
		def := v.DefiningOp()
		if def == nil || def.Name() != "arith.constant" {
			return 0, false
		}
		x, ok := def.Attr("value").(ir.IntegerAttr)
		return x.Value, ok
	}
	lb, ok1 := c(a.Operand(0))
	ub, ok2 := c(a.Operand(1))
	step, ok3 := c(a.Operand(2))
	if !ok1 || !ok2 || !ok3 || step <= 0 || ub <= lb {
		return nil
	}
	n := float64((ub - lb + step - 1) / step)
	for _, op := range a.Result(0).Users() {
		if op.Name() != "arith.divf" || op.Operand(0) != a.Result(0) || op.Block() != a.Block() {
			continue
		}
		if def := op.Operand(1).DefiningOp(); def != nil && def.Name() == "arith.constant" {
			if f, ok := def.Attr("value").(ir.FloatAttr); ok && f.Value() == n {
				return op
			}
		}
	}
	return nil
}

// accumulation returns the body of a loop.for carrying one f32 or f64
// accumulator whose body is ops followed by a yield of acc + the last
// op's result (n ops in all, yield included), or nil.
func accumulation(l *ir.Operation, n int) []*ir.Operation {
	if l.NumResults() != 1 || (l.Result(0).Type() != ir.F32 && l.Result(0).Type() != ir.F64) {
		return nil
	}
	body := loop.Body(l)
	ops := body.Ops()
	if len(ops) != n || body.NumArguments() != 2 {
		return nil
	}
	add, yield := ops[n-2], ops[n-1]
	acc := body.Argument(1)
	if add.Name() != "arith.addf" || yield.Name() != loop.YieldOp || yield.NumOperands() != 1 || yield.Operand(0) != add.Result(0) {
		return nil
	}
	prev := ops[n-3].Result(0)
	if !(add.Operand(0) == acc && add.Operand(1) == prev || add.Operand(1) == acc && add.Operand(0) == prev) {
		return nil
	}
	return ops
}

// sumOfLoads matches `acc += x[i…, j]` (j the loop's iv, i… invariant)
// and returns x and the load's indices.
func sumOfLoads(a *ir.Operation) (*ir.Value, []*ir.Value) {
	ops := accumulation(a, 3)
	if ops == nil || ops[0].Name() != loop.LoadOp || ops[0].Result(0).Type() != a.Result(0).Type() {
		return nil, nil
	}
	ld := ops[0]
	idx := ld.Operands()[1:]
	if len(idx) == 0 || idx[len(idx)-1] != loop.Body(a).Argument(0) || inside(ld.Operand(0), a) {
		return nil, nil
	}
	for _, v := range idx[:len(idx)-1] {
		if inside(v, a) {
			return nil, nil
		}
	}
	return ld.Operand(0), idx
}

// sumOfSquares matches `d = x[i…, j] − m; acc += d·d` in loop b, with the
// same buffer and invariant indices as the sum's load, and returns m.
func sumOfSquares(b *ir.Operation, x *ir.Value, idx []*ir.Value) *ir.Value {
	ops := accumulation(b, 5)
	if ops == nil || b.Result(0).Type() != loop.Body(b).Argument(1).Type() {
		return nil
	}
	ld, sub, mul := ops[0], ops[1], ops[2]
	if ld.Name() != loop.LoadOp || ld.Operand(0) != x || ld.NumOperands() != len(idx)+1 || ld.Result(0).Type() != b.Result(0).Type() {
		return nil
	}
	got := ld.Operands()[1:]
	for i, v := range idx[:len(idx)-1] {
		if got[i] != v && !sameConstant(got[i], v) {
			return nil
		}
	}
	if got[len(got)-1] != loop.Body(b).Argument(0) {
		return nil
	}
	if sub.Name() != "arith.subf" || sub.Operand(0) != ld.Result(0) || inside(sub.Operand(1), b) {
		return nil
	}
	if mul.Name() != "arith.mulf" || mul.Operand(0) != sub.Result(0) || mul.Operand(1) != sub.Result(0) {
		return nil
	}
	return sub.Operand(1)
}

// sumPass translates the sum loop of mo as the one pass over the row.
func (k *kt) sumPass(mo *moments) error {
	a := mo.sum
	t := types.Float
	if a.Result(0).Type() == ir.F64 {
		t = types.Double
	}
	lb, ub, step := k.get(a.Operand(0)), k.get(a.Operand(1)), k.get(a.Operand(2))
	zero := constant.NewFloat(t, 0)
	// c = x[i…, lb] when the range is not empty.
	pre := k.cur
	first, join := k.newBlock("first"), k.newBlock("shift")
	pre.NewCondBr(pre.NewICmp(enum.IPredSLT, lb, ub), first, join)
	k.cur = first
	idx := make([]value.Value, len(mo.idx))
	for i, v := range mo.idx[:len(mo.idx)-1] {
		idx[i] = k.get(v)
	}
	idx[len(idx)-1] = lb
	p, elem, err := k.addressOf(mo.x, idx)
	if err != nil {
		return err
	}
	c0 := k.cur.NewLoad(elem, p)
	k.cur.NewBr(join)
	k.enter(join)
	c := join.NewPhi(llir.NewIncoming(zero, pre), llir.NewIncoming(c0, first))
	sums, err := k.loop(lb, ub, step, []value.Value{zero, zero}, vecOn, func(iv value.Value, acc []value.Value) ([]value.Value, error) {
		idx[len(idx)-1] = iv
		p, elem, err := k.addressOf(mo.x, idx)
		if err != nil {
			return nil, err
		}
		d := k.cur.NewFSub(k.cur.NewLoad(elem, p), c)
		s1 := k.cur.NewFAdd(acc[0], d)
		sq := k.cur.NewFMul(d, d)
		s2 := k.cur.NewFAdd(acc[1], sq)
		for _, v := range []value.Value{s1, sq, s2} {
			setFlags(v, enum.FastMathFlagReassoc, enum.FastMathFlagContract)
		}
		return []value.Value{s1, s2}, nil
	})
	if err != nil {
		return err
	}
	mo.s1, mo.s2, mo.c = sums[0], sums[1], c
	mo.n = k.cur.NewSIToFP(k.trip(lb, ub, step), t)
	total := k.cur.NewFAdd(mo.s1, k.cur.NewFMul(mo.n, c))
	k.set(a, k.cur.NewFAdd(k.get(loop.ForInits(a)[0]), total))
	return nil
}

// meanPass translates the division of the sum by its trip count.
func (k *kt) meanPass(mo *moments) {
	k.set(mo.mean, k.cur.NewFAdd(mo.c, k.cur.NewFDiv(mo.s1, mo.n)))
}

// squaresPass translates the second loop of mo: s2 − 2δ·s1 + n·δ².
func (k *kt) squaresPass(mo *moments) error {
	b := k.cur
	delta := b.NewFSub(k.get(mo.m), mo.c)
	two := constant.NewFloat(delta.Type().(*types.FloatType), 2)
	// s2 + δ·(n·δ − 2·s1)
	r := b.NewFAdd(mo.s2, b.NewFMul(delta, b.NewFSub(b.NewFMul(mo.n, delta), b.NewFMul(two, mo.s1))))
	k.set(mo.sq, b.NewFAdd(k.get(loop.ForInits(mo.sq)[0]), r))
	return nil
}
