package togpu

import (
	"github.com/strata-ir/strata/dialects/arith"
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
}

// narrowableOps are the integer ops retyped to i32, with their ranges.
var narrowableOps = map[string]func(x, y span) (span, bool){
	"arith.addi": func(x, y span) (span, bool) { return span{x.lo + y.lo, x.hi + y.hi}, true },
	"arith.subi": func(x, y span) (span, bool) { return span{x.lo - y.hi, x.hi - y.lo}, true },
	"arith.muli": func(x, y span) (span, bool) {
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
	"arith.divui": divSpan, "arith.divsi": divSpan,
	"arith.remui": remSpan, "arith.remsi": remSpan,
	"arith.maxsi": func(x, y span) (span, bool) { return span{max(x.lo, y.lo), max(x.hi, y.hi)}, true },
	"arith.minsi": func(x, y span) (span, bool) { return span{min(x.lo, y.lo), min(x.hi, y.hi)}, true },
	"arith.maxui": func(x, y span) (span, bool) {
		return span{max(x.lo, y.lo), max(x.hi, y.hi)}, x.nonNeg() && y.nonNeg()
	},
	"arith.minui": func(x, y span) (span, bool) {
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
func (k *kernelGen) narrowIndices(plan mapping) {
	for _, a := range k.entry.Arguments() {
		switch t := a.Type().(type) {
		case *ir.MemRefType:
			if n := ir.NumElements(t.Shape()); n < 0 || n >= limit32 {
				return
			}
		case *ir.IndexType:
			return // a dynamic size: no static bound
		}
	}
	lbs, ubs, steps, _, _ := loop.ParallelBounds(k.nest)
	exts := make([]int64, len(lbs))
	for d := range lbs {
		lb, ok1 := staticInt(lbs[d])
		ub, ok2 := staticInt(ubs[d])
		st, ok3 := staticInt(steps[d])
		if !ok1 || !ok2 || !ok3 || st < 1 {
			return
		}
		exts[d] = max(ub-lb+st-1, 0) / st
	}
	grid, ok := staticGrid(plan, exts, k.cfg)
	if !ok || grid >= limit32 {
		return
	}
	a := &indexNarrowing{rng: map[*ir.Value]span{}, isRoot: map[*ir.Value]bool{}, narrowOps: map[*ir.Operation]bool{}}
	if !a.analyze(k.kernel, plan.block(k.cfg), grid) {
		return
	}
	a.rewrite(k.ctx)
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
			root(loop.Body(o).Argument(0), span{lb.lo, max(lb.lo, ub.hi-1)})
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
		if o.Name() == "arith.cmpi" && o.Operand(0).Type() == ir.Index {
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
	operand := func(i int) (span, bool) { s, ok := a.rng[o.Operand(i)]; return s, ok }
	switch o.Name() {
	case "arith.constant":
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
	case "arith.index_cast", "arith.index_castui":
		it, ok := o.Operand(0).Type().(*ir.IntegerType)
		if !ok || it.Width > 32 {
			return span{}, false, false
		}
		w := int64(it.Width)
		if o.Name() == "arith.index_castui" || w == 1 {
			return span{0, 1<<w - 1}, true, true
		}
		return span{-1 << (w - 1), 1<<(w-1) - 1}, true, true
	case "arith.select":
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
	return s, false, ok
}

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
		c := arith.NewCast(b, "arith.index_castui", r.Loc(), r, ir.I32)
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
		if d := v.DefiningOp(); d.Name() == "arith.constant" {
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
// widened base plus constants.
func (w widener) widen(v *ir.Value) *ir.Value {
	loc := v.Loc()
	terms, c := w.flatten(v)
	if len(terms) == 0 {
		return arith.ConstantIndex(w.b, loc, c)
	}
	base, s := v, w.a.rng[v]
	if bs := (span{s.lo - c, s.hi - c}); c != 0 && bs.fits() {
		base, s = terms[0], bs
		for _, t := range terms[1:] {
			base = arith.Binary(w.b, "arith.addi", loc, base, t)
		}
	} else {
		c = 0
	}
	wide := w.cast(base, s)
	if c != 0 {
		wide = arith.Binary(w.b, "arith.addi", loc, wide, arith.ConstantIndex(w.b, loc, c))
	}
	return wide
}

// cast widens one i32 value of range s: a root's copy is the root itself.
func (w widener) cast(v *ir.Value, s span) *ir.Value {
	if r, ok := w.wideOf[v]; ok {
		return r
	}
	name := "arith.index_castui"
	if !s.nonNeg() {
		name = "arith.index_cast"
	}
	return arith.NewCast(w.b, name, v.Loc(), v, ir.Index)
}

// flatten splits an i32 value into the terms of its addi tree (in order)
// and the sum of its constants.
func (w widener) flatten(v *ir.Value) ([]*ir.Value, int64) {
	if c, ok := staticInt(v); ok {
		return nil, c
	}
	if d := v.DefiningOp(); d != nil && d.Name() == "arith.addi" {
		xt, xc := w.flatten(d.Operand(0))
		yt, yc := w.flatten(d.Operand(1))
		return append(xt, yt...), xc + yc
	}
	return []*ir.Value{v}, 0
}
