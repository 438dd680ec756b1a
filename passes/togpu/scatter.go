package togpu

import (
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/lower"
)

// MappingScatter is the mapping of a scatter_add's f32 nest: a thread per
// (a, i, b) adds updates[a, i, b] to out[a, index[i], b] with
// gpu.atomic_add, after a pointwise kernel of its own stored the zeros.
const MappingScatter = "scatter"

// A scatter is a scatter_add's nest (lower.ScatterNest) of f32 in the form
// convert-graph-to-loop makes: a loop.parallel over the result's dims but
// the axis holding a loop.for that stores zeros along the axis and a nest
// of loop.for over the indices whose innermost body loads out[a, j, b],
// adds an update and stores the sum back.
type scatter struct {
	nest  *ir.Operation
	zero  *ir.Operation   // the loop.for storing the zeros; nil once split off (splitScatterZeros)
	fors  []*ir.Operation // the loops over the indices, outermost first (none for a scalar index)
	out   *ir.Value       // the result buffer
	axis  int             // the result dim the index addresses
	load  *ir.Operation   // out[a, j, b]'s load, add and store
	add   *ir.Operation
	store *ir.Operation
}

// matchScatter returns the scatter form of nest, or nil when it is not
// one: the nest then runs as it is, a thread per column (pointwise).
func matchScatter(nest *ir.Operation) *scatter {
	if loop.NestKind(nest) != lower.ScatterNest {
		return nil
	}
	s := &scatter{nest: nest}
	body := loop.Body(nest)
	var stores []*ir.Operation
	nest.Walk(func(o *ir.Operation) bool {
		if o.Name() == loop.StoreOp {
			stores = append(stores, o)
		}
		return true
	})
	for _, st := range stores {
		v := st.Operand(0)
		switch {
		case isConstant(v) && st.Block().ParentOp().Name() == loop.ForOp && st.Block().ParentOp().Block() == body:
			s.zero = st.Block().ParentOp()
		case v.DefiningOp() != nil && v.DefiningOp().Name() == arith.OpAddF:
			s.store, s.add = st, v.DefiningOp()
		default:
			return nil
		}
	}
	if s.store == nil || len(stores) != 1+btoi(s.zero != nil) {
		return nil
	}
	s.out = s.store.Operand(1)
	if mt, ok := s.out.Type().(*ir.MemRefType); !ok || mt.ElementType() != ir.F32 {
		return nil
	}
	for _, o := range s.add.Operands() {
		if d := o.DefiningOp(); d != nil && d.Name() == loop.LoadOp && d.Operand(0) == s.out && slices.Equal(d.Operands()[1:], s.store.Operands()[2:]) {
			s.load = d
		}
	}
	if s.load == nil || !s.add.Result(0).HasOneUse() || !s.load.Result(0).HasOneUse() || s.load.Block() != s.store.Block() {
		return nil
	}
	// The loops from the body down to the store: each without iter
	// values, with bounds the host can read (for the grid).
	for blk := s.store.Block(); blk != body; {
		f := blk.ParentOp()
		if f == nil || f.Name() != loop.ForOp || f.NumResults() != 0 {
			return nil
		}
		lb, ub, step := loop.ForBounds(f)
		for _, v := range []*ir.Value{lb, ub, step} {
			if !isConstant(v) && definedIn(v, nest) {
				return nil
			}
		}
		s.fors = append([]*ir.Operation{f}, s.fors...)
		blk = f.Block()
	}
	// The store's indices: the parallel dims in order, one index (data)
	// at the axis.
	idx := s.store.Operands()[2:]
	n := body.NumArguments()
	if len(idx) != n+1 {
		return nil
	}
	s.axis = -1
	for d, v := range idx {
		if v.IsBlockArgument() && v.ParentBlock() == body {
			if want := d - btoi(s.axis >= 0); v.Index() != want {
				return nil
			}
			continue
		}
		if s.axis >= 0 {
			return nil
		}
		s.axis = d
	}
	if s.axis < 0 {
		return nil
	}
	return s
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// splitScatterZeros gives the zeros of each f32 scatter nest of fn a
// pointwise nest of their own, before it: the atomic adds of the scatter
// kernel (scatterPlan) may land on any element, so every element must be
// zero before the kernel starts.
func splitScatterZeros(ctx *ir.Context, fn *ir.Operation) {
	for _, nest := range topLevelNests(fn) {
		s := matchScatter(nest)
		if s == nil || s.zero == nil {
			continue
		}
		mt := s.out.Type().(*ir.MemRefType)
		b := ir.NewBuilder(ctx)
		b.SetInsertionPointBefore(nest)
		loc := nest.Loc()
		rank := len(mt.Shape())
		lbs, ubs, steps := make([]*ir.Value, rank), make([]*ir.Value, rank), make([]*ir.Value, rank)
		zero, one := arith.ConstantIndex(b, loc, 0), arith.ConstantIndex(b, loc, 1)
		for d, n := range mt.Shape() {
			lbs[d], steps[d] = zero, one
			if n == ir.Dynamic {
				ubs[d] = loop.Dim(b, loc, s.out, d)
			} else {
				ubs[d] = arith.ConstantIndex(b, loc, n)
			}
		}
		par := loop.Parallel(b, loc, lbs, ubs, steps, nil, func(b *ir.Builder, ivs []*ir.Value) []*ir.Value {
			loop.Store(b, loc, arith.ConstantFloat(b, loc, 0, ir.F32), s.out, ivs...)
			return nil
		})
		par.SetAttr(loop.NestKindAttr, ir.Str("pointwise"))
		s.zero.Erase()
	}
}

// scatterPlan is the atomic mapping of a scatter nest whose zeros were
// split off, or nil.
func scatterPlan(nest *ir.Operation) *scatterMap {
	s := matchScatter(nest)
	if s == nil || s.zero != nil {
		return nil
	}
	return &scatterMap{s: s}
}

// scatterMap runs a scatter nest as a grid-stride loop over the points
// (a, i, b), b innermost so that a warp's updates and atomic adds are
// contiguous; each adds its update to out[a, index[i], b] atomically, or
// nothing when the index is out of range (as the guarded stores of
// gathers do).
type scatterMap struct{ s *scatter }

func (p *scatterMap) block(cfg Config) int64 { return cfg.Block }
func (p *scatterMap) mapping() string        { return MappingScatter }
func (p *scatterMap) rowsPerBlock() int64    { return 0 }
func (p *scatterMap) vector() int64          { return 1 }

// forExtents returns the trip counts of the loops over the indices, their
// bounds given by value.
func (p *scatterMap) forExtents(b *ir.Builder, loc ir.Location, value func(*ir.Value) *ir.Value) (lbs, steps, exts []*ir.Value) {
	for _, f := range p.s.fors {
		lb, ub, step := loop.ForBounds(f)
		lb, ub, step = value(lb), value(ub), value(step)
		lbs, steps = append(lbs, lb), append(steps, step)
		exts = append(exts, extents(b, loc, []*ir.Value{lb}, []*ir.Value{ub}, []*ir.Value{step})[0])
	}
	return lbs, steps, exts
}

// hostValue is v at the host, before the nest: a constant is cloned.
func hostValue(b *ir.Builder) func(*ir.Value) *ir.Value {
	return func(v *ir.Value) *ir.Value {
		if isConstant(v) {
			return b.Insert(v.DefiningOp().Clone(nil)).Result(0)
		}
		return v
	}
}

func (p *scatterMap) grid(b *ir.Builder, loc ir.Location, exts []*ir.Value, cfg Config) *ir.Value {
	_, _, fe := p.forExtents(b, loc, hostValue(b))
	one := arith.ConstantIndex(b, loc, 1)
	g := ceilDiv(b, loc, product(b, loc, append(slices.Clone(exts), fe...)), arith.ConstantIndex(b, loc, cfg.Block), one)
	g = arith.Binary(b, arith.OpMinUI, loc, g, arith.ConstantIndex(b, loc, cfg.MaxBlocks))
	return arith.Binary(b, arith.OpMaxUI, loc, g, one)
}

func (p *scatterMap) emit(k *kernelGen, b *ir.Builder) error {
	s, loc := p.s, k.loc
	lbs, ubs, steps, _, _ := loop.ParallelBounds(k.nest)
	lbs, ubs, steps = mapped(k.m, lbs), mapped(k.m, ubs), mapped(k.m, steps)
	pexts := extents(b, loc, lbs, ubs, steps)
	inKernel := func(v *ir.Value) *ir.Value {
		if w, ok := k.m[v]; ok {
			return w
		}
		if isConstant(v) {
			w := b.Insert(v.DefiningOp().Clone(nil)).Result(0)
			k.m[v] = w
			return w
		}
		return v
	}
	flbs, fsteps, fexts := p.forExtents(b, loc, inKernel)
	// The points in the order (a…, i…, b…).
	a := s.axis
	all := func(par, fr []*ir.Value) []*ir.Value { return slices.Concat(par[:a], fr, par[a:]) }
	total := product(b, loc, all(pexts, fexts))
	tid, bid := gpu.ThreadID(b, loc, "x"), gpu.BlockID(b, loc, "x")
	bdim, gdim := gpu.BlockDim(b, loc, "x"), gpu.GridDim(b, loc, "x")
	start := arith.Binary(b, arith.OpAddI, loc, arith.Binary(b, arith.OpMulI, loc, bid, bdim), tid)
	stride := arith.Binary(b, arith.OpMulI, loc, gdim, bdim)
	body := loop.Body(k.nest)
	sizes := k.sizes[k.m[s.out]]
	loop.For(b, loc, start, total, stride, nil, func(b *ir.Builder, c *ir.Value, _ []*ir.Value) []*ir.Value {
		ivs := delinearize(b, loc, c, all(lbs, flbs), all(steps, fsteps), all(pexts, fexts))
		nf := len(s.fors)
		for d := range body.NumArguments() {
			if d < a {
				k.m[body.Argument(d)] = ivs[d]
			} else {
				k.m[body.Argument(d)] = ivs[d+nf]
			}
		}
		for i, f := range s.fors {
			k.m[loop.Body(f).Argument(0)] = ivs[a+i]
		}
		// The ops of each level but the loops, the zeros and the
		// load-add-store, in order.
		skip := map[*ir.Operation]bool{s.load: true, s.add: true, s.store: true}
		for _, f := range s.fors {
			skip[f] = true
		}
		for blk := body; ; {
			for o := blk.First(); o != nil; o = o.Next() {
				if !skip[o] && !o.HasTrait(ir.Terminator) {
					b.Insert(o.Clone(k.m))
				}
			}
			if blk == s.store.Block() {
				break
			}
			blk = loop.Body(s.fors[slices.IndexFunc(s.fors, func(f *ir.Operation) bool { return f.Block() == blk })])
		}
		var u *ir.Value
		for _, o := range s.add.Operands() {
			if o != s.load.Result(0) {
				u = mapped(k.m, []*ir.Value{o})[0]
			}
		}
		idx := mapped(k.m, s.store.Operands()[2:])
		j := idx[a]
		// 0 <= j < size in one unsigned comparison.
		in := arith.NewCmpI(b, loc, arith.CmpIULT, j, sizes[a])
		loop.If(b, loc, in, nil, func(b *ir.Builder) []*ir.Value {
			gpu.AtomicAdd(b, loc, k.m[s.out], linearize(b, loc, idx, sizes), u)
			return nil
		}, nil)
		return nil
	})
	return nil
}
