package togpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// 32-bit index arithmetic (Config.IndexBits = 32). A pointwise or row
// kernel computes its thread positions, flattened N-D coordinates (div/rem
// by extents) and buffer offsets in `index`, which the targets make 64-bit:
// mul.lo.s64 and 64-bit div/rem in PTX, several instructions each. When an
// interval analysis proves that every index value of the kernel lies in
// [-2^31, 2^31) (static shapes, every buffer under 2^31 elements), the
// arithmetic is retyped to i32, exactly: no value overflows. The values
// stay `index` where the loop dialect requires it (loop.for bounds, load
// and store indices): each is widened once there, with a constant offset
// added after the widening (base + j in index), so that targets/llvm still
// sees the lanes of a vectorized access as adjacent.

// span is a closed interval of integers.
type span struct{ lo, hi int64 }

const limit32 = int64(1) << 31

func (s span) fits() bool   { return s.lo >= -limit32 && s.hi < limit32 }
func (s span) nonNeg() bool { return s.lo >= 0 }

// indexNarrowing is the analysis of one kernel: the range of each index
// value, the roots (index values of ops that must keep the type: gpu ids,
// loop.for induction variables, casts into index) and the values retyped.
type indexNarrowing struct {
	rng    map[*ir.Value]span
	roots  []*ir.Value
	isRoot map[*ir.Value]bool
	narrow []*ir.Value
	// narrowOps are the ops whose index operands become i32 directly
	// (retyped arith ops and cmpi); every other reader gets the value
	// widened back to index.
	narrowOps map[*ir.Operation]bool
	// ub is the upper bound (exclusive) of each loop.for induction
	// variable: a grid-stride loop over a flattened space of P·Y points
	// divides by Y and gets a quotient below P (see quotientBound).
	ub map[*ir.Value]*ir.Value
	// guards caches the bounds each loop.if's condition puts on the
	// values it compares, inside its then-region (guarded).
	guards map[*ir.Operation]map[*ir.Value]span
}

// narrowableOps are the integer ops retyped to i32, with their ranges.
var narrowableOps = map[string]func(x, y span) (span, bool){
	arith.OpAddI: func(x, y span) (span, bool) { return span{x.lo + y.lo, x.hi + y.hi}, true },
	arith.OpSubI: func(x, y span) (span, bool) { return span{x.lo - y.hi, x.hi - y.lo}, true },
	arith.OpMulI: func(x, y span) (span, bool) {
		ps := [4]int64{x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi}
		s := span{ps[0], ps[0]}
		for _, p := range ps[1:] {
			s = span{min(s.lo, p), max(s.hi, p)}
		}
		return s, true
	},
	// Division and remainder need non-negative operands (the unsigned ops
	// read a negative index differently at another width); the unsigned
	// maximum and minimum too, for their ranges.
	arith.OpDivUI: divSpan, arith.OpDivSI: divSpan,
	arith.OpRemUI: remSpan, arith.OpRemSI: remSpan,
	arith.OpMaxSI: func(x, y span) (span, bool) { return span{max(x.lo, y.lo), max(x.hi, y.hi)}, true },
	arith.OpMinSI: func(x, y span) (span, bool) { return span{min(x.lo, y.lo), min(x.hi, y.hi)}, true },
	arith.OpMaxUI: func(x, y span) (span, bool) {
		return span{max(x.lo, y.lo), max(x.hi, y.hi)}, x.nonNeg() && y.nonNeg()
	},
	arith.OpMinUI: func(x, y span) (span, bool) {
		return span{min(x.lo, y.lo), min(x.hi, y.hi)}, x.nonNeg() && y.nonNeg()
	},
}

func divSpan(x, y span) (span, bool) {
	if !x.nonNeg() || y.lo < 1 {
		return span{}, false
	}
	return span{x.lo / y.hi, x.hi / y.lo}, true
}

func remSpan(x, y span) (span, bool) {
	if !x.nonNeg() || y.lo < 1 {
		return span{}, false
	}
	return span{0, min(x.hi, y.hi-1)}, true
}

// staticGrid returns the largest grid of a pointwise or row kernel over a
// nest of static extents (as the plan's grid computes it on the host).
func staticGrid(plan mapping, exts []int64, cfg Config) (int64, bool) {
	n := int64(1)
	for _, e := range exts {
		if e > 0 && n > (1<<62)/e {
			return 0, false
		}
		n *= max(e, 0)
	}
	switch p := plan.(type) {
	case *pointwise:
		chunks := n / p.vec
		return max(min((chunks+cfg.Block-1)/cfg.Block, cfg.MaxBlocks), 1), true
	case *row:
		return max((n+p.rows-1)/p.rows, 1), true
	}
	return 0, false
}

// narrowIndices retypes the index arithmetic of the kernel to i32 when the
// analysis proves it exact, and leaves the kernel as it is otherwise.
//
// A kernel over dynamic shapes is narrowed too when every dynamic size it
// sees is a size symbol of the host function's graph guards (a dimension
// of an argument, "argN.shape[D] == s0", or of a buffer allocated with
// such sizes): the analysis then runs with every symbol bounded by the
// largest B that keeps the kernel's index values in i32, and the host
// function gets the guard "s0 <= B" for each symbol, which the executor
// checks before every call (a call with larger sizes fails with the guard
// named instead of overflowing).
func (k *kernelGen) narrowIndices(plan mapping) {
	hb := newHostBounds(k.nest)
	hb.common = limit32 - 1
	a, ok := k.analyzeWithin(plan, hb)
	if len(hb.used) > 0 {
		// The largest bound common to every symbol that still proves the
		// kernel exact (the analysis only gets easier as bounds fall),
		// then each symbol in turn, the first-seen first (an argument's
		// leading dim: a batch), raised as far as the others allow.
		least := int64(1)
		for _, s := range hb.used {
			least = max(least, hb.least[s])
		}
		largest := func(lo int64, set func(int64)) int64 {
			best := int64(0)
			for hi := limit32 - 1; lo <= hi; {
				mid := lo + (hi-lo)/2
				set(mid)
				if _, ok := k.analyzeWithin(plan, hb); ok {
					best, lo = mid, mid+1
				} else {
					hi = mid - 1
				}
			}
			return best
		}
		hb.common = largest(least, func(b int64) { hb.common = b })
		if hb.common < 1 {
			return
		}
		for _, s := range slices.Clone(hb.used) {
			hb.bounds[s] = largest(hb.common, func(b int64) { hb.bounds[s] = b })
		}
		if a, ok = k.analyzeWithin(plan, hb); !ok || !k.roomy(hb) {
			return
		}
		k.guards = hb // the host function's guards change in place, one kernel at a time
	}
	if ok {
		a.rewrite(k.ctx)
	}
}

// minGuardedElements is the least size (in elements) that the bounds of
// a dynamic kernel's guard must leave its largest buffer. With one symbol
// the bound only rules out buffers near 2^31 elements, which 64-bit
// arithmetic would need anyway; several symbols bound each other (s0 and
// s1 about 46340 each for [s0, s1]), and where the interval analysis
// cannot relate an index to the extents it was computed from, far below
// that. A guard that would refuse calls on buffers smaller than this is
// not worth 32-bit arithmetic: the kernel keeps 64-bit.
const minGuardedElements = 1 << 27

// roomy reports whether hb's bounds leave one of the kernel's buffers at
// least minGuardedElements elements.
func (k *kernelGen) roomy(hb *hostBounds) bool {
	for i, arg := range k.entry.Arguments() {
		if _, ok := arg.Type().(*ir.MemRefType); ok && i < len(k.hostArgs) {
			if n, ok := hb.elements(k.hostArgs[i].v); ok && n >= minGuardedElements {
				return true
			}
		}
	}
	return false
}

// analyzeWithin runs the analysis of the kernel with the size symbols of
// the host function within hb's bounds; false when the kernel cannot be
// narrowed so.
func (k *kernelGen) analyzeWithin(plan mapping, hb *hostBounds) (*indexNarrowing, bool) {
	args := map[*ir.Value]span{}
	for i, arg := range k.entry.Arguments() {
		if i >= len(k.hostArgs) {
			break
		}
		h := k.hostArgs[i]
		switch arg.Type().(type) {
		case *ir.MemRefType:
			if n, ok := hb.elements(h.v); !ok || n >= limit32 {
				return nil, false
			}
		case *ir.IndexType:
			var r span
			var ok bool
			if h.dim >= 0 {
				r, ok = hb.dim(h.v, h.dim)
			} else {
				r, ok = hb.value(h.v)
			}
			if !ok || !r.fits() {
				return nil, false
			}
			args[arg] = r
		}
	}
	lbs, ubs, steps, _, _ := loop.ParallelBounds(k.nest)
	exts := make([]int64, len(lbs))
	for d := range lbs {
		lb, ok1 := staticInt(lbs[d])
		ub, ok2 := hb.value(ubs[d])
		st, ok3 := staticInt(steps[d])
		if !ok1 || !ok2 || !ok3 || st < 1 {
			return nil, false
		}
		exts[d] = max(ub.hi-lb+st-1, 0) / st
	}
	grid, ok := staticGrid(plan, exts, k.cfg)
	if !ok || grid >= limit32 {
		return nil, false
	}
	a := &indexNarrowing{rng: map[*ir.Value]span{}, isRoot: map[*ir.Value]bool{}, narrowOps: map[*ir.Operation]bool{}, ub: map[*ir.Value]*ir.Value{}}
	for _, arg := range k.entry.Arguments() {
		if s, ok := args[arg]; ok {
			a.rng[arg], a.isRoot[arg] = s, true
			a.roots = append(a.roots, arg)
		}
	}
	if !a.analyze(k.kernel, plan.block(k.cfg), grid) {
		return nil, false
	}
	return a, true
}

// hostBounds bounds the host's index values and buffer sizes under a bound
// on the size symbols of the host function's guards.
type hostBounds struct {
	fn *ir.Operation // the host function, nil when not found
	// syms maps "argN.shape[D]" to the size symbol the guards bind it to.
	syms map[string]string
	// least is each symbol's lower bound from the guards ("s0 >= 1"; 0
	// when they have none: a size is never negative).
	least map[string]int64
	// bounds are the symbols' upper bounds, common where unset.
	bounds map[string]int64
	common int64
	// used are the symbols some bound relied on, in first-use order.
	used []string
}

// guardsAttr is where graph-symbolize-shapes keeps a function's guards
// (passes/symbolize.GuardsAttr), which the executor checks on every call.
const guardsAttr = "graph.guards"

func newHostBounds(nest *ir.Operation) *hostBounds {
	hb := &hostBounds{fn: nest.ParentOfType(funcs.OpFunc), syms: map[string]string{}, least: map[string]int64{}, bounds: map[string]int64{}}
	if hb.fn == nil {
		return hb
	}
	arr, _ := hb.fn.Attr(guardsAttr).(ir.ArrayAttr)
	for _, a := range arr {
		s, ok := a.(ir.StringAttr)
		if !ok {
			continue
		}
		if lhs, rhs, ok := strings.Cut(s.Value, " == "); ok && strings.HasPrefix(lhs, "arg") && isSymbolName(rhs) {
			hb.syms[lhs] = rhs
			continue
		}
		// A lower bound: "s0 >= c" or "s0 > c".
		for _, rel := range []struct {
			op   string
			plus int64
		}{{" >= ", 0}, {" > ", 1}} {
			lhs, rhs, ok := strings.Cut(s.Value, rel.op)
			c, err := strconv.ParseInt(rhs, 10, 64)
			if ok && err == nil && isSymbolName(lhs) && c < limit32 {
				hb.least[lhs] = max(hb.least[lhs], c+rel.plus)
			}
		}
	}
	return hb
}

// isSymbolName reports whether s is a bare size symbol ("s0"), not a
// number or an expression.
func isSymbolName(s string) bool {
	if s == "" || !(s[0] == '_' || unicode.IsLetter(rune(s[0]))) {
		return false
	}
	for _, c := range s {
		if c != '_' && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

// value bounds a host index value: a constant, or a dimension of a buffer
// (loop.dim).
func (hb *hostBounds) value(v *ir.Value) (span, bool) {
	if c, ok := staticInt(v); ok {
		return span{c, c}, true
	}
	if d := v.DefiningOp(); d != nil && d.Name() == loop.DimOp && d.NumOperands() == 1 {
		if i, ok := d.Attr(loop.IndexAttr).(ir.IntegerAttr); ok {
			return hb.dim(d.Operand(0), int(i.Value))
		}
	}
	return span{}, false
}

// dim bounds dimension d of host buffer m: static, an argument's size
// symbol, or the size a loop.alloc was given.
func (hb *hostBounds) dim(m *ir.Value, d int) (span, bool) {
	t, ok := m.Type().(*ir.MemRefType)
	if !ok || d < 0 || d >= len(t.Shape()) {
		return span{}, false
	}
	if n := t.Shape()[d]; n != ir.Dynamic {
		return span{n, n}, true
	}
	if m.IsBlockArgument() {
		blk := m.ParentBlock()
		if hb.fn == nil || blk == nil || blk.ParentOp() != hb.fn {
			return span{}, false
		}
		s, ok := hb.syms[fmt.Sprintf("arg%d.shape[%d]", m.Index(), d)]
		if !ok {
			return span{}, false
		}
		if !slices.Contains(hb.used, s) {
			hb.used = append(hb.used, s)
		}
		return span{hb.least[s], max(hb.least[s], hb.bound(s))}, true
	}
	if op := m.DefiningOp(); op != nil && op.Name() == loop.AllocOp {
		// The operands are the dynamic sizes, in order.
		j := 0
		for _, n := range t.Shape()[:d] {
			if n == ir.Dynamic {
				j++
			}
		}
		if j < op.NumOperands() {
			return hb.value(op.Operand(j))
		}
	}
	return span{}, false
}

// elements bounds the element count of host buffer m from above.
func (hb *hostBounds) elements(m *ir.Value) (int64, bool) {
	t, ok := m.Type().(*ir.MemRefType)
	if !ok {
		return 0, false
	}
	n := int64(1)
	for d := range t.Shape() {
		e, ok := hb.dim(m, d)
		if !ok || e.lo < 0 {
			return 0, false
		}
		if e.hi > 0 && n > limit32/e.hi {
			return limit32, true
		}
		n *= e.hi
	}
	return n, true
}

// bound returns symbol s's upper bound.
func (hb *hostBounds) bound(s string) int64 {
	if b, ok := hb.bounds[s]; ok {
		return b
	}
	return hb.common
}

// guard adds "s <= bound" to the host function's guards for every symbol
// a bound relied on (once: a second kernel with the same bound adds
// nothing; a tighter one adds its own).
func (hb *hostBounds) guard() {
	arr, _ := hb.fn.Attr(guardsAttr).(ir.ArrayAttr)
	out := slices.Clone(arr)
	for _, s := range hb.used {
		g := ir.StringAttr{Value: fmt.Sprintf("%s <= %d", s, hb.bound(s))}
		if !slices.ContainsFunc(out, func(a ir.Attribute) bool { return a == g }) {
			out = append(out, g)
		}
	}
	hb.fn.SetAttr(guardsAttr, out)
}

// analyze computes the ranges; false when some index value has no range
// within i32 or an op reads an index in a way i32 would change.
func (a *indexNarrowing) analyze(kernel *ir.Operation, block, grid int64) bool {
	ok := true
	root := func(v *ir.Value, s span) {
		if !s.fits() {
			ok = false
			return
		}
		a.rng[v], a.isRoot[v] = s, true
		a.roots = append(a.roots, v)
	}
	kernel.Walk(func(o *ir.Operation) bool {
		if o == kernel {
			return true
		}
		if o.Name() == loop.ForOp {
			lb, lok := a.rng[o.Operand(0)]
			ub, uok := a.rng[o.Operand(1)]
			st, sok := a.rng[o.Operand(2)]
			if !lok || !uok || !sok || st.lo < 1 {
				ok = false
				return false
			}
			iv := loop.Body(o).Argument(0)
			root(iv, span{lb.lo, max(lb.lo, ub.hi-1)})
			a.ub[iv] = o.Operand(1)
		}
		for _, r := range o.Regions() {
			for _, blk := range r.Blocks() {
				for _, arg := range blk.Arguments() {
					if arg.Type() == ir.Index && !a.isRoot[arg] {
						ok = false // an index carried by a loop: no range
					}
				}
			}
		}
		if o.Name() == arith.OpCmpI && o.Operand(0).Type() == ir.Index {
			// Every predicate, unsigned ones too, orders two values of
			// i32 range alike in i32 and in their sign extensions.
			_, xok := a.rng[o.Operand(0)]
			_, yok := a.rng[o.Operand(1)]
			ok = ok && xok && yok
			a.narrowOps[o] = true
		}
		for _, res := range o.Results() {
			if res.Type() != ir.Index {
				continue
			}
			s, isRoot, good := a.resultSpan(o, block, grid)
			switch {
			case !good || !s.fits():
				ok = false
			case isRoot:
				root(res, s)
			default:
				a.rng[res] = s
				a.narrow = append(a.narrow, res)
				a.narrowOps[o] = true
			}
		}
		return ok
	})
	return ok
}

// resultSpan returns the range of the index result of o and whether it is
// a root.
func (a *indexNarrowing) resultSpan(o *ir.Operation, block, grid int64) (span, bool, bool) {
	operand := func(i int) (span, bool) { return a.at(o.Operand(i), o) }
	switch o.Name() {
	case arith.OpConstant:
		c, ok := staticInt(o.Result(0))
		return span{c, c}, false, ok
	case gpu.ThreadIDOp, gpu.BlockIDOp, gpu.BlockDimOp, gpu.GridDimOp:
		n := map[string]int64{gpu.ThreadIDOp: block, gpu.BlockIDOp: grid, gpu.BlockDimOp: block, gpu.GridDimOp: grid}[o.Name()]
		if gpu.Dimension(o) != "x" {
			n = 1
		}
		if o.Name() == gpu.ThreadIDOp || o.Name() == gpu.BlockIDOp {
			return span{0, n - 1}, true, true
		}
		return span{n, n}, true, true
	case arith.OpIndexCast, arith.OpIndexCastUI:
		it, ok := o.Operand(0).Type().(*ir.IntegerType)
		if !ok || it.Width > 32 {
			return span{}, false, false
		}
		w := int64(it.Width)
		if o.Name() == arith.OpIndexCastUI || w == 1 {
			return span{0, 1<<w - 1}, true, true
		}
		return span{-1 << (w - 1), 1<<(w-1) - 1}, true, true
	case arith.OpSelect:
		x, xok := operand(1)
		y, yok := operand(2)
		return span{min(x.lo, y.lo), max(x.hi, y.hi)}, false, xok && yok
	}
	f := narrowableOps[o.Name()]
	if f == nil || o.NumOperands() != 2 {
		return span{}, false, false
	}
	x, xok := operand(0)
	y, yok := operand(1)
	if !xok || !yok {
		return span{}, false, false
	}
	s, ok := f(x, y)
	if ok && (o.Name() == arith.OpDivUI || o.Name() == arith.OpDivSI) {
		if q, qok := a.quotientBound(o.Operand(0), o.Operand(1)); qok {
			s.hi = min(s.hi, q)
		}
	}
	return s, false, ok
}

// Guarded ranges. A padded or dilated view reads its source at x - p (or
// (x - p) / s) only where the conditions of the loop.if around the read
// hold: x - p may be negative in the kernel as a whole (its range), but
// not where the division reads it, and a division of a negative index
// would differ between 32 and 64 bits. Inside the then-region of a
// loop.if whose condition is a conjunction of comparisons of index values
// with constants, those values are bounded, and so are the values the
// region reads that were computed from them outside it (re-evaluated
// through the narrowable ops, guardDepth deep).

// guardDepth bounds the ops re-evaluated under a guard's bounds, from a
// value the region reads back to the values its condition bounds.
const guardDepth = 6

// unbounded is the bound of a side a comparison leaves open.
const unbounded = int64(1) << 62

// at returns the range of v where user reads it: its range, narrowed by
// the conditions of the loop.if ops whose then-regions hold user.
func (a *indexNarrowing) at(v *ir.Value, user *ir.Operation) (span, bool) {
	s, ok := a.rng[v]
	if !ok {
		return s, false
	}
	bounds := a.guarded(user)
	if len(bounds) == 0 {
		return s, true
	}
	return a.eval(v, bounds, guardDepth), true
}

// eval returns v's range under bounds: its own bound, or the range of its
// defining op over its operands' ranges under bounds; never wider than
// its range, and its range when the bounds leave none (an unreachable
// region).
func (a *indexNarrowing) eval(v *ir.Value, bounds map[*ir.Value]span, depth int) span {
	s := a.rng[v]
	r, ok := bounds[v]
	if !ok && depth > 0 {
		d := v.DefiningOp()
		f := narrowableOps[opName(d)]
		if f == nil || d.NumOperands() != 2 || !a.has(d.Operand(0)) || !a.has(d.Operand(1)) {
			return s
		}
		if r, ok = f(a.eval(d.Operand(0), bounds, depth-1), a.eval(d.Operand(1), bounds, depth-1)); !ok {
			return s
		}
	}
	if !ok {
		return s
	}
	if n := (span{max(s.lo, r.lo), min(s.hi, r.hi)}); n.lo <= n.hi {
		return n
	}
	return s
}

// opName is op's name, "" for nil (a block argument's defining op).
func opName(op *ir.Operation) string {
	if op == nil {
		return ""
	}
	return op.Name()
}

// guarded returns the bounds the conditions of the loop.if ops whose
// then-regions hold op put on index values (nil when none).
func (a *indexNarrowing) guarded(op *ir.Operation) map[*ir.Value]span {
	var out map[*ir.Value]span
	for cur := op; cur != nil; cur = cur.ParentOp() {
		p := cur.ParentOp()
		if p == nil || p.Name() != loop.IfOp || cur.ParentRegion() != p.Region(0) {
			continue
		}
		g, ok := a.guards[p]
		if !ok {
			g = map[*ir.Value]span{}
			a.condBounds(p.Operand(0), g)
			if a.guards == nil {
				a.guards = map[*ir.Operation]map[*ir.Value]span{}
			}
			a.guards[p] = g
		}
		for v, b := range g {
			if out == nil {
				out = map[*ir.Value]span{}
			}
			if o, ok := out[v]; ok {
				b = span{max(o.lo, b.lo), min(o.hi, b.hi)}
			}
			out[v] = b
		}
	}
	return out
}

// condBounds adds to g the bounds that condition c being true puts on
// index values: c a comparison of an index value with a constant, or a
// conjunction (arith.andi of i1) of such conditions.
func (a *indexNarrowing) condBounds(c *ir.Value, g map[*ir.Value]span) {
	d := c.DefiningOp()
	switch opName(d) {
	case arith.OpAndI:
		if c.Type() == ir.I1 {
			a.condBounds(d.Operand(0), g)
			a.condBounds(d.Operand(1), g)
		}
		return
	case arith.OpCmpI:
	default:
		return
	}
	p, ok := d.Properties().Get("predicate").(ir.IntegerAttr)
	if !ok || d.Operand(0).Type() != ir.Index {
		return
	}
	pred, x, y := arith.CmpIPredicate(p.Value), d.Operand(0), d.Operand(1)
	k, ok := staticInt(y)
	if !ok {
		if k, ok = staticInt(x); !ok {
			return
		}
		pred, x = pred.Swapped(), y
	}
	var b span
	switch pred {
	case arith.CmpIEQ:
		b = span{k, k}
	case arith.CmpISGE:
		b = span{k, unbounded}
	case arith.CmpISGT:
		b = span{k + 1, unbounded}
	case arith.CmpISLE:
		b = span{-unbounded, k}
	case arith.CmpISLT:
		b = span{-unbounded, k - 1}
	case arith.CmpIULT: // a negative x is above any non-negative k unsigned
		if k < 1 {
			return
		}
		b = span{0, k - 1}
	case arith.CmpIULE:
		if k < 0 {
			return
		}
		b = span{0, k}
	default:
		return
	}
	if o, ok := g[x]; ok {
		b = span{max(o.lo, b.lo), min(o.hi, b.hi)}
	}
	g[x] = b
}

// quotientBound bounds x / y from above when x is a loop induction
// variable (non-negative) below an upper bound that is P·y: the quotient
// is at most (P·y - 1) / y = P - 1. Interval arithmetic alone only knows
// x / y <= x, which makes a flattened index over dynamic extents [s0, s1]
// look s1 times larger than it is once multiplied back by s1.
func (a *indexNarrowing) quotientBound(x, y *ir.Value) (int64, bool) {
	u, ok := a.ub[x]
	if xs := a.rng[x]; !ok || xs.lo < 0 {
		return 0, false
	}
	m := a.peel(u).DefiningOp()
	if m == nil || m.Name() != arith.OpMulI {
		return 0, false
	}
	p, q, yp := a.peel(m.Operand(0)), a.peel(m.Operand(1)), a.peel(y)
	if q != yp {
		p, q = q, p
	}
	ps, pok := a.rng[p]
	if q != yp || !pok || a.rng[yp].lo < 1 {
		return 0, false
	}
	return ps.hi - 1, true
}

// peel strips the identities the lowering leaves around an extent:
// x·1, 1·x, x/1, x+0, x-0 and max(x, 0) of a non-negative x (with 0 and 1
// known from the ranges), so that two computations of the same extent
// meet at the same value.
func (a *indexNarrowing) peel(v *ir.Value) *ir.Value {
	is := func(w *ir.Value, c int64) bool { s, ok := a.rng[w]; return ok && s.lo == c && s.hi == c }
	for {
		d := v.DefiningOp()
		if d == nil || d.NumOperands() != 2 {
			return v
		}
		x, y := d.Operand(0), d.Operand(1)
		switch {
		case d.Name() == arith.OpMulI && is(y, 1), d.Name() == arith.OpDivUI && is(y, 1),
			d.Name() == arith.OpDivSI && is(y, 1), d.Name() == arith.OpAddI && is(y, 0),
			d.Name() == arith.OpSubI && is(y, 0):
			v = x
		case d.Name() == arith.OpMulI && is(x, 1), d.Name() == arith.OpAddI && is(x, 0):
			v = y
		case d.Name() == arith.OpMaxSI && is(y, 0) && a.rng[x].lo >= 0 && a.has(x):
			v = x
		default:
			return v
		}
	}
}

// has reports whether v has a range.
func (a *indexNarrowing) has(v *ir.Value) bool { _, ok := a.rng[v]; return ok }

// rewrite retypes the analyzed kernel: roots get an i32 copy that the
// retyped ops read, retyped values become i32, and every other reader of
// a retyped value reads it widened back to index.
func (a *indexNarrowing) rewrite(ctx *ir.Context) {
	b := ir.NewBuilder(ctx)
	narrow32 := map[*ir.Value]*ir.Value{} // root → its i32 copy
	wideOf := map[*ir.Value]*ir.Value{}   // i32 copy → root
	for _, r := range a.roots {
		if d := r.DefiningOp(); d != nil {
			b.SetInsertionPointAfter(d)
		} else {
			b.SetInsertionPointToStart(r.ParentBlock())
		}
		c := arith.NewCast(b, arith.OpIndexCastUI, r.Loc(), r, ir.I32)
		narrow32[r], wideOf[c] = c, r
	}
	for _, r := range a.roots {
		for u := range r.Uses() {
			if a.narrowOps[u.Owner()] {
				u.Set(narrow32[r])
			}
		}
	}
	for _, v := range a.narrow {
		v.SetType(ir.I32)
		if d := v.DefiningOp(); d.Name() == arith.OpConstant {
			c, _ := d.Attr("value").(ir.IntegerAttr)
			d.SetProperty("value", ir.IntegerAttr{Value: c.Value, Type: ir.I32})
		}
	}
	w := widener{a: a, b: b, wideOf: wideOf}
	for _, v := range a.narrow {
		for u := range v.Uses() {
			if !a.narrowOps[u.Owner()] {
				b.SetInsertionPointBefore(u.Owner())
				u.Set(w.widen(v))
			}
		}
	}
}

// widener turns i32 values back into index at an insertion point.
type widener struct {
	a      *indexNarrowing
	b      *ir.Builder
	wideOf map[*ir.Value]*ir.Value
}

// widen returns v as an index: a sum x + c (c constant) as widen(x) + c,
// so that the offsets base, base+1, … of a vector access stay the same
// widened base plus constants. The base is rebuilt as a chain of its terms
// in order, also when there is no constant, so that lane 0's offset (r +
// (h + d)) is the same value as the base of the other lanes' ((r + h + d)
// + j) after CSE; a sum of terms that may be negative is kept as it is (a
// partial sum of the chain could leave the range the analysis proved).
func (w widener) widen(v *ir.Value) *ir.Value {
	loc := v.Loc()
	terms, c := w.flatten(v)
	if len(terms) == 0 {
		return arith.ConstantIndex(w.b, loc, c)
	}
	base, s := v, w.a.rng[v]
	if c == 0 && len(terms) > 2 && !slices.ContainsFunc(terms, func(t *ir.Value) bool { return !w.a.rng[t].nonNeg() }) {
		base = terms[0]
		for _, t := range terms[1:] {
			base = arith.Binary(w.b, arith.OpAddI, loc, base, t)
		}
	} else if bs := (span{s.lo - c, s.hi - c}); c != 0 && bs.fits() {
		base, s = terms[0], bs
		for _, t := range terms[1:] {
			base = arith.Binary(w.b, arith.OpAddI, loc, base, t)
		}
	} else {
		c = 0
	}
	wide := w.cast(base, s)
	if c != 0 {
		wide = arith.Binary(w.b, arith.OpAddI, loc, wide, arith.ConstantIndex(w.b, loc, c))
	}
	return wide
}

// cast widens one i32 value of range s: a root's copy is the root itself.
func (w widener) cast(v *ir.Value, s span) *ir.Value {
	if r, ok := w.wideOf[v]; ok {
		return r
	}
	name := arith.OpIndexCastUI
	if !s.nonNeg() {
		name = arith.OpIndexCast
	}
	return arith.NewCast(w.b, name, v.Loc(), v, ir.Index)
}

// flatten splits an i32 value into the terms of its addi tree (in order)
// and the sum of its constants.
func (w widener) flatten(v *ir.Value) ([]*ir.Value, int64) {
	if c, ok := staticInt(v); ok {
		return nil, c
	}
	if d := v.DefiningOp(); d != nil && d.Name() == arith.OpAddI {
		xt, xc := w.flatten(d.Operand(0))
		yt, yc := w.flatten(d.Operand(1))
		return append(xt, yt...), xc + yc
	}
	return []*ir.Value{v}, 0
}
