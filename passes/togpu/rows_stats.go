package togpu

import (
	"maps"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// A row's mean and variance are two reductions, the second over the
// deviations from the first's result: two trips across the row's threads,
// each a shuffle butterfly, a barrier and a read of every warp's partial.
// With the row in registers (an unrolled loop) they can be one trip
// (Config.RowWelford): each thread sums its n values, takes its own mean
// and the sum of squared deviations from it (exact two-pass statistics of
// its values), and the threads merge (sum, M2) pairs with Chan et al.'s
// parallel formula
//
//	M2 = M2a + M2b + (mean_b − mean_a)² · na·nb / (na + nb)
//
// whose counts are static. This is as stable as the two-pass form (no
// sum-of-squares cancellation); the variance differs from it by rounding
// only (within a few ulp for f32 rows).

// meanVariance is a pair of row loops: sum, the sum of a value x over the
// row, and sq, the sum of (x' − sum/n)² with x' the same value as x at the
// same iteration and n the trip count.
type meanVariance struct {
	sum, sq *rowLoop
	x       *ir.Value // the summed value, in sum's body
}

// meanVariancePairs finds the mean/variance pairs among a row nest's loops
// (in body order): both one f32 addf reduction over the same static range,
// no stores or nested regions in either, sq's value mulf(d, d) with
// d = subf(x', m), m = divf(sum's result, n) and x' computed from the same
// loads at the same iteration as sum's value, and no store between the
// loops into a buffer the sum loads.
func meanVariancePairs(body *ir.Block, order []*rowLoop) []meanVariance {
	var out []meanVariance
	used := map[*rowLoop]bool{}
	for i, a := range order {
		for _, c := range order[i+1:] {
			if used[a] || used[c] {
				continue
			}
			if x, ok := matchMeanVariance(body, a, c); ok {
				out = append(out, meanVariance{sum: a, sq: c, x: x})
				used[a], used[c] = true, true
			}
		}
	}
	return out
}

// matchMeanVariance reports whether sum and sq are a mean/variance pair
// (see meanVariancePairs) and returns sum's value.
func matchMeanVariance(body *ir.Block, sum, sq *rowLoop) (*ir.Value, bool) {
	if !simpleSum(sum) || !simpleSum(sq) {
		return nil, false
	}
	n, ok := sameStaticRange(sum.op, sq.op)
	if !ok {
		return nil, false
	}
	x, y := iterValue(sum, 0), iterValue(sq, 0)
	mul := y.DefiningOp()
	if mul == nil || mul.Name() != arith.OpMulF || mul.Operand(0) != mul.Operand(1) || !definedIn(y, sq.op) {
		return nil, false
	}
	sub := mul.Operand(0).DefiningOp()
	if sub == nil || sub.Name() != arith.OpSubF || !definedIn(sub.Result(0), sq.op) {
		return nil, false
	}
	div := sub.Operand(1).DefiningOp()
	if div == nil || div.Name() != arith.OpDivF || div.Operand(0) != sum.op.Result(0) || div.Block() != body {
		return nil, false
	}
	c, ok := div.Operand(1).DefiningOp().Attr("value").(ir.FloatAttr)
	if !isConstant(div.Operand(1)) || !ok || c.Value() != float64(n) {
		return nil, false
	}
	if !sameValue(x, sub.Operand(0), sum.op, sq.op) {
		return nil, false
	}
	loaded := buffers(sum.op, loop.LoadOp)
	for op := sum.op.Next(); op != nil && op != sq.op; op = op.Next() {
		if overlaps(buffers(op, loop.StoreOp), loaded) {
			return nil, false
		}
	}
	return x, true
}

// simpleSum reports whether rl is one f32 addf reduction whose body has
// no stores and no nested regions.
func simpleSum(rl *rowLoop) bool {
	if len(rl.reds) != 1 || len(rl.reds[0].ops) != 1 || rl.reds[0].op.Name() != arith.OpAddF || rl.reds[0].acc.Type() != ir.F32 {
		return false
	}
	for op := loop.Body(rl.op).First(); op != nil; op = op.Next() {
		if op.Name() == loop.StoreOp || op.NumRegions() > 0 {
			return false
		}
	}
	return true
}

// iterValue is the value reduction i of a row loop combines per iteration.
func iterValue(rl *rowLoop, i int) *ir.Value {
	if rl.op.Name() == loop.ForOp {
		return rl.reds[i].val
	}
	return loop.Body(rl.op).Terminator().Operand(i)
}

// loopRange returns the bounds of a row loop (loop.for or 1-D loop.parallel).
func loopRange(op *ir.Operation) (lb, ub, step *ir.Value) {
	if op.Name() == loop.ForOp {
		return loop.ForBounds(op)
	}
	lbs, ubs, steps, _, _ := loop.ParallelBounds(op)
	return lbs[0], ubs[0], steps[0]
}

// sameStaticRange reports whether two loops have the same static bounds
// and returns their trip count.
func sameStaticRange(a, b *ir.Operation) (int64, bool) {
	var r [2][3]int64
	for i, op := range []*ir.Operation{a, b} {
		lb, ub, step := loopRange(op)
		for j, v := range []*ir.Value{lb, ub, step} {
			c, ok := staticInt(v)
			if !ok {
				return 0, false
			}
			r[i][j] = c
		}
	}
	if r[0] != r[1] || r[0][2] <= 0 || r[0][1] <= r[0][0] {
		return 0, false
	}
	return (r[0][1] - r[0][0] + r[0][2] - 1) / r[0][2], true
}

// sameValue reports whether x (in loop a) and y (in loop b) compute the
// same value at the same iteration: the induction variables, one value
// from outside both loops, or the same pure op (or load) of such values.
func sameValue(x, y *ir.Value, a, b *ir.Operation) bool {
	ia, ib := loop.Body(a).Argument(0), loop.Body(b).Argument(0)
	switch {
	case x == ia || y == ib:
		return x == ia && y == ib
	case !definedIn(x, a) || !definedIn(y, b):
		return x == y
	}
	ox, oy := x.DefiningOp(), y.DefiningOp()
	if ox == nil || oy == nil || ox.Name() != oy.Name() || x.Index() != y.Index() || ox.NumOperands() != oy.NumOperands() ||
		ox.NumRegions() > 0 || oy.NumRegions() > 0 || !ir.AttrEqual(ox.Properties(), oy.Properties()) || !ir.AttrEqual(ox.Attributes(), oy.Attributes()) {
		return false
	}
	for i := range ox.NumOperands() {
		if !sameValue(ox.Operand(i), oy.Operand(i), a, b) {
			return false
		}
	}
	return true
}

// chanMerge is the rowCombine of (sum, M2) pairs whose threads each covered n
// iterations (see the comment at the top of the file).
func chanMerge(loc ir.Location, n int64) rowCombine {
	return func(b *ir.Builder, x, y []*ir.Value, nx, ny int64) []*ir.Value {
		na, nb := float64(nx*n), float64(ny*n)
		c := func(v float64) *ir.Value { return arith.ConstantFloat(b, loc, v, ir.F32) }
		f := func(name string, p, q *ir.Value) *ir.Value { return arith.Binary(b, name, loc, p, q) }
		delta := f(arith.OpSubF, f(arith.OpMulF, y[0], c(1/nb)), f(arith.OpMulF, x[0], c(1/na)))
		m2 := f(arith.OpAddF, f(arith.OpAddF, x[1], y[1]), f(arith.OpMulF, f(arith.OpMulF, delta, delta), c(na*nb/(na+nb))))
		return []*ir.Value{f(arith.OpAddF, x[0], y[0]), m2}
	}
}

// emitMeanVariance emits a mean/variance pair's sum loop as one reduction
// of (sum, M2) when the loop is unrolled, sets the sum loop's result and
// returns M2 for the variance loop; it returns nil (nothing emitted) when
// the loop is not unrolled.
func (r *row) emitMeanVariance(k *kernelGen, b *ir.Builder, th rowThread, mv meanVariance) *ir.Value {
	rl := mv.sum
	loc := rl.op.Loc()
	lb, ub, step := loopRange(rl.op)
	bounds := mapped(k.m, []*ir.Value{lb, ub, step})
	v := r.loopVector(rl, bounds[0], bounds[1], bounds[2])
	steps := r.registerSteps(bounds[0], bounds[1], v)
	if steps == 0 {
		return nil
	}
	lbv, _ := staticInt(bounds[0])
	rcp := r.reciprocals(b, k, th, rl)
	body := loop.Body(rl.op)
	red := rl.reds[0]
	// xs[s*v+j] is the thread's value at step s, lane j; the loads are the
	// row's registers, shared with later loops.
	xs := make([]*ir.Value, 0, steps*v)
	for s := range steps {
		ms := make([]map[*ir.Value]*ir.Value, v)
		for j := range ms {
			ms[j] = maps.Clone(k.m)
			ms[j][body.Argument(0)] = th.regs.position(b, loc, th.lane, lbv, v, r.threads, s, int64(j))
		}
		for op := body.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
			if op == red.op {
				continue
			}
			for _, m := range ms {
				r.cloneOp(b, op, m, rcp, th.regs)
			}
		}
		for _, m := range ms {
			xs = append(xs, mapped(m, []*ir.Value{mv.x})[0])
		}
	}
	// One accumulator per lane, as the plain loop has, then the lanes.
	lanes := func(f func(acc, x *ir.Value) *ir.Value, term func(x *ir.Value) *ir.Value) *ir.Value {
		accs := make([]*ir.Value, v)
		for i, x := range xs {
			j := i % int(v)
			if accs[j] == nil {
				accs[j] = term(x)
			} else {
				accs[j] = f(accs[j], x)
			}
		}
		out := accs[0]
		for _, a := range accs[1:] {
			out = arith.Binary(b, arith.OpAddF, loc, out, a)
		}
		return out
	}
	id := func(x *ir.Value) *ir.Value { return x }
	sum := lanes(func(acc, x *ir.Value) *ir.Value { return arith.Binary(b, arith.OpAddF, loc, acc, x) }, id)
	n := int64(len(xs))
	mean := arith.Binary(b, arith.OpMulF, loc, sum, arith.ConstantFloat(b, loc, 1/float64(n), ir.F32))
	sq := func(x *ir.Value) *ir.Value {
		d := arith.Binary(b, arith.OpSubF, loc, x, mean)
		return arith.Binary(b, arith.OpMulF, loc, d, d)
	}
	m2 := lanes(func(acc, x *ir.Value) *ir.Value { return arith.Binary(b, arith.OpAddF, loc, acc, sq(x)) }, sq)
	total := r.reduceRow(k, b, loc, []*ir.Value{sum, m2}, chanMerge(loc, n), th)
	init := mapped(k.m, rowInits(rl.op))[0]
	k.m[rl.op.Result(0)] = red.combine(b, init, total[0])
	return total[1]
}

// rowInits returns the initial values of a row loop's reductions.
func rowInits(op *ir.Operation) []*ir.Value {
	if op.Name() == loop.ForOp {
		return loop.ForInits(op)
	}
	_, _, _, inits, _ := loop.ParallelBounds(op)
	return inits
}
