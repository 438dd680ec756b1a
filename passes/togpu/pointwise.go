package togpu

import (
	"maps"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// pointwise is the grid-stride mapping: thread t of the grid handles
// chunks t, t + gridSize, ... of vec consecutive points of the flattened
// iteration space.
type pointwise struct {
	vec   int64
	forms *laneForms // how the nest's values vary across lanes (vec > 1)
}

// pointwisePlan vectorizes when the body has no inner loops, the innermost
// dimension has step 1 and a static extent that vec divides (so a chunk
// never crosses a row and needs no tail), and every access is contiguous
// in the innermost index: its last index is independent of the innermost
// induction variable, or that variable plus an offset independent of it
// (a column block of a wider buffer: the q, k and v heads a copy cuts out
// of the fused qkv product), and no other index depends on it. The width
// is halved until it divides every such offset (as far as the offsets'
// arithmetic shows), so each vector access stays aligned.
func pointwisePlan(nest *ir.Operation, cfg Config) *pointwise {
	p := &pointwise{vec: 1}
	if cfg.Vector <= 1 {
		return p
	}
	lbs, ubs, steps, _, _ := loop.ParallelBounds(nest)
	n := len(lbs)
	lb, ok1 := staticInt(lbs[n-1])
	ub, ok2 := staticInt(ubs[n-1])
	step, ok3 := staticInt(steps[n-1])
	if !ok1 || !ok2 || !ok3 || step != 1 || ub <= lb || (ub-lb)%cfg.Vector != 0 {
		return p
	}
	iv := loop.Body(nest).Argument(n - 1)
	forms := newLaneForms(nest, iv, lb)
	ok := true
	align := int64(0) // what the lanes' width must divide (0: nothing)
	same := func(v *ir.Value) bool {
		f := forms.of(v)
		align = gcd(align, f.mult)
		return f.kind == laneSame
	}
	loops := false
	var most int64 // the most elements of a buffer the nest accesses (-1: one not static)
	nest.Walk(func(o *ir.Operation) bool {
		switch o.Name() {
		case loop.IfOp:
			// One branch runs every lane (cloneLanes): the condition
			// must be the same for all of them (NHWC padding tests h
			// and w, not the channel; a concatenation along the
			// columns tests the column's block of V or more).
			ok = same(o.Operand(0))
		case loop.ForOp:
			// One loop runs every lane's trips (cloneLanes): its bounds
			// must be the same for all of them.
			loops = true
			lb, ub, step := loop.ForBounds(o)
			for _, v := range []*ir.Value{lb, ub, step} {
				ok = ok && same(v)
			}
		case loop.ParallelOp:
			ok = o == nest
		case loop.LoadOp, loop.StoreOp:
			mem, idx := accessIndices(o)
			if mt, isMem := mem.Type().(*ir.MemRefType); isMem && most >= 0 {
				if n := ir.NumElements(mt.Shape()); n >= 0 {
					most = max(most, n)
				} else {
					most = -1
				}
			}
			// A load whose value is only stored (a copy: a transpose's,
			// a padded gather's) does not bound the width: each lane
			// loads its own element where the lanes cannot derive its
			// indices from lane 0's (laneShare), targets/llvm merges the
			// ones it proves adjacent and aligned, and the stores stay
			// one vector.
			if o.Name() == loop.LoadOp && onlyStored(o) {
				for _, v := range idx {
					forms.of(v) // what the lanes can derive of its indices (laneShare)
				}
				return true
			}
			// The lanes access V adjacent elements, the first at a
			// multiple of V: every index but the last is the same in
			// every lane, the last too or lane 0's plus the lane.
			for i, v := range idx {
				if same(v) {
					continue
				}
				if f := forms.of(v); i < len(idx)-1 || f.kind != laneStep {
					ok = false
					break
				}
			}
		}
		return ok
	})
	if !ok {
		return p
	}
	// The option counts 4-byte lanes (16 bytes a step by default): a nest
	// that moves only 16-bit elements takes twice the points a step (one
	// 16-byte access a buffer); one that also moves f32 keeps the width.
	// (1-byte elements have no vector accesses.)
	vec := cfg.Vector
	if w := widestAccess(nest, staticPoints(lbs, ubs, steps)); w == 2 && (ub-lb)%(vec*2) == 0 {
		vec *= 2
	}
	if forms.pow2 {
		for vec&(vec-1) != 0 {
			vec &= vec - 1 // the largest power of two below
		}
	}
	for vec > 1 && align%vec != 0 {
		vec /= 2
	}
	// Each point of a nest with a loop walks many elements (a column
	// block's rows): lanes take threads away, and a grid with
	// NarrowPerBlock or more elements of a buffer a block is too small for
	// its data (a bias gradient's partial sums on 384 blocks).
	if points := staticPoints(lbs, ubs, steps); loops && most > 0 && points > 0 {
		for vec > 1 && most*cfg.Block*vec >= NarrowPerBlock*points {
			vec /= 2
		}
	}
	// sinkStores keeps every value a latency-bound nest stores live until
	// the end of its step, each of them once a lane: the per-channel
	// values of ResNet-50's 16 batch norms of 256 channels (80 stores a
	// point) were 320 values in 64 threads of 255 registers with spills,
	// the kernel its backward pass waited for ptxas on. Fewer lanes keep
	// them within sunkValues, the same loads in flight on more threads.
	if points := staticPoints(lbs, ubs, steps); points > 0 && points <= latencyBoundPoints {
		stores := int64(0)
		for op := loop.Body(nest).First(); op != nil; op = op.Next() {
			if op.Name() == loop.StoreOp {
				stores++
			}
		}
		for vec > 1 && vec*stores > sunkValues {
			vec /= 2
		}
	}
	p.vec, p.forms = vec, forms
	return p
}

// onlyStored reports whether every use of load's value is a store of it
// or the yield of a loop.if (a padded copy's element or zero): a copy,
// whose lanes need not read adjacent elements.
func onlyStored(load *ir.Operation) bool {
	for _, u := range load.Result(0).Users() {
		switch {
		case u.Name() == loop.StoreOp && u.Operand(0) == load.Result(0):
		case u.Name() == loop.YieldOp && u.ParentOp() != nil && u.ParentOp().Name() == loop.IfOp:
		default:
			return false
		}
	}
	return true
}

// broadcastLoad is the least ratio of a nest's points to a buffer's
// elements at which widestAccess leaves the buffer's loads out.
const broadcastLoad = 16

// staticPoints returns the number of points of a parallel nest with
// static bounds, or -1.
func staticPoints(lbs, ubs, steps []*ir.Value) int64 {
	n := int64(1)
	for d := range lbs {
		lb, ok1 := staticInt(lbs[d])
		ub, ok2 := staticInt(ubs[d])
		step, ok3 := staticInt(steps[d])
		if !ok1 || !ok2 || !ok3 || step <= 0 {
			return -1
		}
		n *= max(0, (ub-lb+step-1)/step)
	}
	return n
}

// gcd is the greatest common divisor of a, b ≥ 0 (gcd(0, b) = b).
func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// widestAccess returns the largest element size in bytes among the loads
// and stores of nest (0 when one has an element of another kind, which
// keeps the option's width), leaving out the loads of buffers of at most
// 1/broadcastLoad of the nest's points when it has a static count: a
// batch norm's float32 scale and shift per channel, read at every point
// of a bf16 activation, are no reason to halve its 16-byte accesses.
func widestAccess(nest *ir.Operation, points int64) int64 {
	w := int64(0)
	nest.Walk(func(o *ir.Operation) bool {
		if o.Name() != loop.LoadOp && o.Name() != loop.StoreOp {
			return true
		}
		mem, _ := accessIndices(o)
		b := int64(0)
		if mt, ok := mem.Type().(*ir.MemRefType); ok {
			if n := ir.NumElements(mt.Shape()); o.Name() == loop.LoadOp && n >= 0 && points > 0 && n*broadcastLoad <= points {
				return true // a broadcast operand, read again from cache: not the traffic
			}
			switch et := mt.ElementType().(type) {
			case *ir.FloatType:
				b = int64(et.Width) / 8
			case *ir.IntegerType:
				b = int64(et.Width) / 8
			}
		}
		if b == 0 {
			w = -1
			return false
		}
		w = max(w, b)
		return true
	})
	return max(w, 0)
}

func (p *pointwise) block(cfg Config) int64 { return cfg.Block }
func (p *pointwise) mapping() string        { return MappingPointwise }
func (p *pointwise) rowsPerBlock() int64    { return 0 }
func (p *pointwise) vector() int64          { return p.vec }

func (p *pointwise) grid(b *ir.Builder, loc ir.Location, exts []*ir.Value, cfg Config) *ir.Value {
	one := arith.ConstantIndex(b, loc, 1)
	chunks := arith.Binary(b, arith.OpDivUI, loc, product(b, loc, exts), arith.ConstantIndex(b, loc, p.vec))
	g := ceilDiv(b, loc, chunks, arith.ConstantIndex(b, loc, cfg.Block), one)
	g = arith.Binary(b, arith.OpMinUI, loc, g, arith.ConstantIndex(b, loc, cfg.MaxBlocks))
	return arith.Binary(b, arith.OpMaxUI, loc, g, one)
}

func (p *pointwise) emit(k *kernelGen, b *ir.Builder) error {
	loc := k.loc
	lbs, ubs, steps, _, _ := loop.ParallelBounds(k.nest)
	lbs, ubs, steps = mapped(k.m, lbs), mapped(k.m, ubs), mapped(k.m, steps)
	exts := extents(b, loc, lbs, ubs, steps)
	vec := arith.ConstantIndex(b, loc, p.vec)
	chunks := arith.Binary(b, arith.OpDivUI, loc, product(b, loc, exts), vec)
	tid, bid := gpu.ThreadID(b, loc, "x"), gpu.BlockID(b, loc, "x")
	bdim, gdim := gpu.BlockDim(b, loc, "x"), gpu.GridDim(b, loc, "x")
	start := arith.Binary(b, arith.OpAddI, loc, arith.Binary(b, arith.OpMulI, loc, bid, bdim), tid)
	stride := arith.Binary(b, arith.OpMulI, loc, gdim, bdim)
	body := loop.Body(k.nest)
	n := len(lbs)
	grid := loop.For(b, loc, start, chunks, stride, nil, func(b *ir.Builder, c *ir.Value, _ []*ir.Value) []*ir.Value {
		lin := c
		if p.vec > 1 {
			lin = arith.Binary(b, arith.OpMulI, loc, c, vec)
		}
		ivs := delinearize(b, loc, lin, lbs, steps, exts)
		if p.vec == 1 {
			for d := range n {
				k.m[body.Argument(d)] = ivs[d]
			}
			cloneOps(b, body, k.m)
			return nil
		}
		// The V points are independent iterations of the parallel nest, so
		// their ops may interleave: cloning op-major puts the V accesses of
		// one buffer next to each other, at base+0 … base+V-1 with base a
		// multiple of V, which targets/llvm merges into one vector access.
		lanes := make([]map[*ir.Value]*ir.Value, p.vec)
		for j := range lanes {
			lanes[j] = maps.Clone(k.m)
			for d := range n {
				lanes[j][body.Argument(d)] = ivs[d]
			}
			if j > 0 {
				lanes[j][body.Argument(n-1)] = arith.Binary(b, arith.OpAddI, loc, ivs[n-1], arith.ConstantIndex(b, loc, int64(j)))
			}
		}
		cloneLanes(b, loc, body, lanes, &laneShare{forms: p.forms, vec: p.vec})
		return nil
	})
	if points := staticPoints(lbs, ubs, steps); points > 0 && points <= latencyBoundPoints {
		sinkStores(loop.Body(grid))
	}
	if !k.cfg.UnrollInner {
		rollInnerLoops(k.ctx, grid)
	}
	return nil
}

// latencyBoundPoints is the most points of a pointwise nest whose stores
// sinkStores moves to the end of each thread's step: at most a wave of
// threads, each step's time the latency of its chain of loads.
const latencyBoundPoints = 1 << 16

// sunkValues is the most values a thread of a latency-bound pointwise
// nest stores at the end of its step (its stores times its lanes) when
// pointwisePlan can choose fewer lanes: a quarter of the 255 registers a
// thread may hold.
const sunkValues = 64

// sinkStores moves the stores at the top level of a grid-stride loop's
// body to its end, in their order, when nothing in the body reads a
// buffer one of them writes and no nested op stores (loads and stores of
// one kernel then touch distinct buffers: the graph's values are
// immutable, and loop-buffer-reuse gives a kernel's result a slot only
// once its inputs' last use is over). ptxas keeps a load after a store
// to a buffer it cannot tell apart, so a kernel computing many small
// values (the scales and shifts of the 16 batch norms of one channel
// count, from their running statistics) waited for each value's loads
// in turn after the previous value's store: 10–18 µs for 256 points on
// the H200 (session 15, call 2). Its stores at the end, the loads of
// every value may be in flight at once.
func sinkStores(body *ir.Block) {
	written := map[*ir.Value]bool{}
	var stores []*ir.Operation
	for op := body.First(); op != nil; op = op.Next() {
		if op.Name() == loop.StoreOp {
			mem, _ := accessIndices(op)
			written[mem] = true
			stores = append(stores, op)
		}
	}
	if len(stores) < 2 {
		return
	}
	ok := true
	for op := body.First(); op != nil && ok; op = op.Next() {
		op.Walk(func(o *ir.Operation) bool {
			switch {
			case o.Name() == loop.LoadOp:
				mem, _ := accessIndices(o)
				ok = ok && !written[mem]
			case o.Name() == loop.StoreOp && o.ParentOp() != body.ParentOp():
				ok = false
			}
			return ok
		})
	}
	if !ok {
		return
	}
	term := body.Terminator()
	for _, s := range stores {
		s.MoveBefore(term)
	}
}

// cloneLanes clones block's ops (its terminator aside) once for each lane
// of a vectorized pointwise nest, op-major, each lane's values mapped
// through its own map. A loop.for (its bounds the same for every lane:
// pointwisePlan) becomes one loop whose trips run every lane's trip, each
// lane's values carried in iter args of its own, its body cloned the same
// way: the lanes' accesses stay next to each other inside loops too (a
// column block's partial sums, a thread V columns, load V adjacent
// elements a row). A loop.if (its condition the same for every lane)
// becomes one loop.if whose branches run every lane, yielding each lane's
// results in turn: a padded copy's V loads stay one vector access.
func cloneLanes(b *ir.Builder, loc ir.Location, block *ir.Block, lanes []map[*ir.Value]*ir.Value, sh *laneShare) {
	for op := block.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
		if op.Name() == loop.IfOp {
			cloneLanesIf(b, loc, op, lanes, sh)
			continue
		}
		if op.Name() != loop.ForOp {
			for j, m := range lanes {
				if j > 0 && sh.derive(b, loc, op, lanes[0], m, j) {
					continue
				}
				if j > 0 && laneInvariant(op) && slices.Equal(mapValues(m, op.Operands()), mapValues(lanes[0], op.Operands())) {
					// What the lanes compute from the same values, and the
					// loads they make at one index (a value of the row: a
					// layer norm's mean and variance in its weight
					// gradient's column sums, and the reciprocal square
					// root of the variance), lane 0 computes for all: the
					// lanes' clones of a load are adjacent, no store
					// between.
					for r, v := range op.Results() {
						m[v] = lanes[0][op.Result(r)]
					}
					continue
				}
				b.Insert(op.Clone(m))
			}
			continue
		}
		lb, ub, step := loop.ForBounds(op)
		inits := loop.ForInits(op)
		var all []*ir.Value
		for _, m := range lanes {
			for _, v := range inits {
				all = append(all, laneValue(m, v))
			}
		}
		body, n := loop.Body(op), len(inits)
		f := loop.For(b, loc, laneValue(lanes[0], lb), laneValue(lanes[0], ub), laneValue(lanes[0], step), all,
			func(b *ir.Builder, iv *ir.Value, args []*ir.Value) []*ir.Value {
				in := make([]map[*ir.Value]*ir.Value, len(lanes))
				for j, m := range lanes {
					in[j] = maps.Clone(m)
					in[j][body.Argument(0)] = iv
					for r := range n {
						in[j][body.Argument(1+r)] = args[j*n+r]
					}
				}
				cloneLanes(b, loc, body, in, sh)
				var yields []*ir.Value
				for _, m := range in {
					for _, v := range body.Terminator().Operands() {
						yields = append(yields, laneValue(m, v))
					}
				}
				return yields
			})
		for j, m := range lanes {
			for r := range n {
				m[op.Result(r)] = f.Result(j*n + r)
			}
		}
	}
}

// cloneLanesIf clones loop.if op for every lane as one loop.if on lane 0's
// condition (pointwisePlan: the lanes' conditions are equal), its results
// lane-major.
func cloneLanesIf(b *ir.Builder, loc ir.Location, op *ir.Operation, lanes []map[*ir.Value]*ir.Value, sh *laneShare) {
	var types []ir.Type
	for range lanes {
		for _, r := range op.Results() {
			types = append(types, r.Type())
		}
	}
	branch := func(r int) loop.IfBody {
		region := op.Region(r)
		if region.Empty() {
			return nil
		}
		return func(b *ir.Builder) []*ir.Value {
			blk := region.Front()
			in := make([]map[*ir.Value]*ir.Value, len(lanes))
			for j, m := range lanes {
				in[j] = maps.Clone(m)
			}
			cloneLanes(b, loc, blk, in, sh)
			var yields []*ir.Value
			for _, m := range in {
				for _, v := range blk.Terminator().Operands() {
					yields = append(yields, laneValue(m, v))
				}
			}
			return yields
		}
	}
	f := loop.If(b, loc, laneValue(lanes[0], op.Operand(0)), types, branch(0), branch(1))
	n := op.NumResults()
	for j, m := range lanes {
		for r := range n {
			m[op.Result(r)] = f.Result(j*n + r)
		}
	}
}

// laneInvariant reports whether cloneLanes may share op's lane-0 clone
// with the lanes whose operands are lane 0's: a pure op without regions,
// or a load.
func laneInvariant(op *ir.Operation) bool {
	return op.NumRegions() == 0 && (op.HasTrait(ir.Pure) || op.Name() == loop.LoadOp)
}

// laneValue is v as a lane's clone reads it: mapped by m, or v itself
// (defined outside the nest).
func laneValue(m map[*ir.Value]*ir.Value, v *ir.Value) *ir.Value {
	if c, ok := m[v]; ok {
		return c
	}
	return v
}

// rollInnerLoops rewrites the loop.for ops nested in grid (a pointwise
// kernel's grid-stride loop, itself left alone) with at least
// NoUnrollMinTrips static trips into loops running NoUnrollFactor trips an
// iteration, marked loop.no_unroll, and the remaining trips after them;
// shorter ones that load run straight (at most maxUnrolledOps ops).
// The driver's JIT would unroll them fully; four trips an iteration keep
// four trips' loads in flight before their arithmetic waits, in about
// NoUnrollFactor/trips of the code. Inner loops go first, so that an
// outer loop copies its inner loops already rewritten.
func rollInnerLoops(ctx *ir.Context, grid *ir.Operation) {
	var fors []*ir.Operation
	grid.Walk(func(o *ir.Operation) bool {
		if o != grid && o.Name() == loop.ForOp {
			fors = append(fors, o)
		}
		return true
	})
	for _, o := range slices.Backward(fors) {
		lb, ok1 := staticInt(o.Operand(0))
		ub, ok2 := staticInt(o.Operand(1))
		step, ok3 := staticInt(o.Operand(2))
		trips := (ub - lb + step - 1) / step
		switch {
		case !ok1 || !ok2 || !ok3 || step <= 0:
		case trips >= NoUnrollMinTrips:
			unrollBy(ctx, o, lb, trips, step, NoUnrollFactor)
		case trips > 1 && loadsIn(o) && trips*opsIn(o) <= maxUnrolledOps:
			// A short loop that loads (a 7×7 window's mean) runs
			// straight: the driver's JIT kept the loop, and each trip's
			// loads waited for the previous trip's sum (ResNet-50's last
			// batch norm, add, ReLU and average pool: 27 µs for 32768
			// threads, session 15).
			unrollBy(ctx, o, lb, trips, step, trips+1)
		}
	}
}

// NoUnrollFactor is the number of trips an iteration of a rolled inner
// loop runs (rollInnerLoops).
const NoUnrollFactor = 4

// unrollBy replaces the loop.for o (trips trips of step from lb) by a
// loop.no_unroll loop whose iteration runs f trips, then the trips left,
// straight: the same ops in the same order.
func unrollBy(ctx *ir.Context, o *ir.Operation, lb, trips, step, f int64) {
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(o)
	loc, body := o.Loc(), loop.Body(o)
	iters := o.Operands()[3:]
	groups := trips / f
	if groups > 0 {
		end := arith.ConstantIndex(b, loc, lb+groups*f*step)
		main := loop.For(b, loc, o.Operand(0), end, arith.ConstantIndex(b, loc, f*step), iters,
			func(b *ir.Builder, iv *ir.Value, args []*ir.Value) []*ir.Value {
				for j := range f {
					at := iv
					if j > 0 {
						at = arith.Binary(b, arith.OpAddI, loc, iv, arith.ConstantIndex(b, loc, j*step))
					}
					args = cloneTrip(b, body, at, args)
				}
				return args
			})
		main.SetAttr(loop.NoUnrollAttr, ir.UnitAttr{})
		iters = main.Results()
	}
	for j := groups * f; j < trips; j++ {
		iters = cloneTrip(b, body, arith.ConstantIndex(b, loc, lb+j*step), iters)
	}
	for i, r := range o.Results() {
		r.ReplaceAllUsesWith(iters[i])
	}
	o.Erase()
}

// cloneTrip inserts one trip of a loop.for body at b, with induction
// variable iv and iter values iters, and returns the values it yields.
func cloneTrip(b *ir.Builder, body *ir.Block, iv *ir.Value, iters []*ir.Value) []*ir.Value {
	m := map[*ir.Value]*ir.Value{body.Argument(0): iv}
	for i, v := range iters {
		m[body.Argument(i+1)] = v
	}
	yield := cloneOps(b, body, m)
	return mapped(m, yield.Operands())
}

// maxUnrolledOps bounds the ops a short inner loop that rollInnerLoops
// unrolls fully may take once unrolled (its trips times its ops).
const maxUnrolledOps = 4096

// loadsIn reports whether o holds a loop.load.
func loadsIn(o *ir.Operation) bool {
	found := false
	o.Walk(func(x *ir.Operation) bool {
		found = found || x.Name() == loop.LoadOp
		return !found
	})
	return found
}

// opsIn counts the ops nested in o.
func opsIn(o *ir.Operation) int64 {
	n := int64(0)
	o.Walk(func(*ir.Operation) bool {
		n++
		return true
	})
	return n
}
