package togpu

import (
	"maps"
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// mapping is how one nest runs on the GPU.
type mapping interface {
	// emit builds the kernel body at b (the kernel's entry block, after
	// its constants), mapping the nest's values through k.m.
	emit(k *kernelGen, b *ir.Builder) error
	// grid returns the number of blocks, computed on the host from the
	// nest's extents.
	grid(b *ir.Builder, loc ir.Location, exts []*ir.Value, cfg Config) *ir.Value
	block(cfg Config) int64
	mapping() string
	rowsPerBlock() int64
	vector() int64
}

// analyze picks the mapping of a nest: row when its body is a sequence of
// row-level ops and inner loops over the row that threads can share,
// pointwise otherwise (always correct: each thread runs the whole body for
// its points). Sibling loops over the same range are merged first
// (mergeRowLoops).
func analyze(ctx *ir.Context, nest *ir.Operation, cfg Config) (mapping, error) {
	if m := mmaPlan(nest, cfg.mmaTile()); m != nil && cfg.TensorCores {
		return m, nil
	}
	if m := convPlan(nest, cfg.mmaTile()); m != nil && cfg.TensorCores {
		return m, nil
	}
	mergeRowLoops(ctx, loop.Body(nest))
	if r := rowPlan(nest, cfg); r != nil {
		return r, nil
	}
	return pointwisePlan(nest, cfg), nil
}

// dependsOn reports whether v is computed (inside nest) from any of ivs.
func dependsOn(v *ir.Value, ivs map[*ir.Value]bool, nest *ir.Operation, memo map[*ir.Value]bool) bool {
	if d, ok := memo[v]; ok {
		return d
	}
	memo[v] = false
	res := ivs[v]
	if !res && v.DefiningOp() != nil && definedIn(v, nest) {
		for _, o := range v.DefiningOp().Operands() {
			if dependsOn(o, ivs, nest, memo) {
				res = true
				break
			}
		}
	}
	memo[v] = res
	return res
}

// accessIndices returns the memref and the indices of a load or store.
func accessIndices(o *ir.Operation) (*ir.Value, []*ir.Value) {
	if o.Name() == loop.StoreOp {
		return o.Operand(1), o.Operands()[2:]
	}
	return o.Operand(0), o.Operands()[1:]
}

// staticInt returns the value of an index constant.
func staticInt(v *ir.Value) (int64, bool) {
	if !isConstant(v) {
		return 0, false
	}
	a, ok := v.DefiningOp().Attr("value").(ir.IntegerAttr)
	return a.Value, ok
}

// pointwise is the grid-stride mapping: thread t of the grid handles
// chunks t, t + gridSize, ... of vec consecutive points of the flattened
// iteration space.
type pointwise struct {
	vec int64
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
	inner := map[*ir.Value]bool{iv: true}
	memo := map[*ir.Value]bool{}
	ok := true
	align := int64(0) // the gcd of the offsets added to the innermost variable (0: none)
	loops := false
	var most int64 // the most elements of a buffer the nest accesses (-1: one not static)
	nest.Walk(func(o *ir.Operation) bool {
		switch o.Name() {
		case loop.IfOp:
			ok = false
		case loop.ForOp:
			// One loop runs every lane's trips (cloneLanes): its bounds
			// must be the same for all of them.
			loops = true
			lb, ub, step := loop.ForBounds(o)
			for _, v := range []*ir.Value{lb, ub, step} {
				ok = ok && !dependsOn(v, inner, nest, memo)
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
			for i, v := range idx {
				if !dependsOn(v, inner, nest, memo) {
					continue
				}
				off, plus := innerOffset(v, iv, inner, nest, memo)
				if i < len(idx)-1 || !plus {
					ok = false
					break
				}
				align = gcd(align, off)
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
	if w := widestAccess(nest); w == 2 && (ub-lb)%(vec*2) == 0 {
		vec *= 2
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
	p.vec = vec
	return p
}

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

// innerOffset reports whether index v is iv plus terms independent of it
// (a tree of arith.addi with iv as one leaf), and returns a number the sum
// of those terms is known to be a multiple of (0 when they are 0).
func innerOffset(v, iv *ir.Value, inner map[*ir.Value]bool, nest *ir.Operation, memo map[*ir.Value]bool) (int64, bool) {
	if v == iv {
		return 0, true
	}
	d := v.DefiningOp()
	if d == nil || d.Name() != arith.OpAddI || !definedIn(v, nest) {
		return 0, false
	}
	x, y := d.Operand(0), d.Operand(1)
	if dependsOn(x, inner, nest, memo) {
		x, y = y, x
	}
	if dependsOn(x, inner, nest, memo) {
		return 0, false // iv twice, or both sides depend on it
	}
	off, ok := innerOffset(y, iv, inner, nest, memo)
	return gcd(off, loop.KnownMultiple(x)), ok
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
// keeps the option's width).
func widestAccess(nest *ir.Operation) int64 {
	w := int64(0)
	nest.Walk(func(o *ir.Operation) bool {
		if o.Name() != loop.LoadOp && o.Name() != loop.StoreOp {
			return true
		}
		mem, _ := accessIndices(o)
		b := int64(0)
		if mt, ok := mem.Type().(*ir.MemRefType); ok {
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
		cloneLanes(b, loc, body, lanes)
		return nil
	})
	if !k.cfg.UnrollInner {
		rollInnerLoops(k.ctx, grid)
	}
	return nil
}

// cloneLanes clones block's ops (its terminator aside) once for each lane
// of a vectorized pointwise nest, op-major, each lane's values mapped
// through its own map. A loop.for (its bounds the same for every lane:
// pointwisePlan) becomes one loop whose trips run every lane's trip, each
// lane's values carried in iter args of its own, its body cloned the same
// way: the lanes' accesses stay next to each other inside loops too (a
// column block's partial sums, a thread V columns, load V adjacent
// elements a row).
func cloneLanes(b *ir.Builder, loc ir.Location, block *ir.Block, lanes []map[*ir.Value]*ir.Value) {
	for op := block.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
		if op.Name() != loop.ForOp {
			for _, m := range lanes {
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
				cloneLanes(b, loc, body, in)
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
// iteration, marked loop.no_unroll, and the remaining trips after them.
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
		if ok1 && ok2 && ok3 && step > 0 && (ub-lb+step-1)/step >= NoUnrollMinTrips {
			unrollBy(ctx, o, lb, (ub-lb+step-1)/step, step, NoUnrollFactor)
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

// reduction is one value a row loop reduces: combining ops (one, or the
// compare-and-select form of a NaN-propagating maximum or minimum) applied
// to the accumulator acc and a value val, with an identity.
type reduction struct {
	op       *ir.Operation   // the combining op (in the nest), or the last of ops
	ops      []*ir.Operation // all the combining ops, in order
	acc, val *ir.Value       // the accumulator and the value
	identity ir.Attribute
}

// combine inserts the combining ops on x and y at b.
func (r reduction) combine(b *ir.Builder, x, y *ir.Value) *ir.Value {
	m := map[*ir.Value]*ir.Value{r.acc: x, r.val: y}
	for _, op := range r.ops {
		b.Insert(op.Clone(m))
	}
	return m[r.op.Result(0)]
}

// selectMinMax recognizes the NaN-propagating maximum (minimum) that
// convert-graph-to-loop writes as
//
//	%c = arith.cmpf ogt (olt), %x, %acc
//	%n = arith.cmpf uno, %x, %x
//	%o = arith.ori %c, %n
//	%r = arith.select %o, %x, %acc
//
// with the identity -inf (+inf).
func selectMinMax(sel *ir.Operation, acc *ir.Value) (reduction, bool) {
	if sel.Name() != arith.OpSelect || sel.Operand(2) != acc {
		return reduction{}, false
	}
	x := sel.Operand(1)
	or := sel.Operand(0).DefiningOp()
	if or == nil || or.Name() != arith.OpOrI {
		return reduction{}, false
	}
	c, n := or.Operand(0).DefiningOp(), or.Operand(1).DefiningOp()
	if c == nil || n == nil || c.Name() != arith.OpCmpF || n.Name() != arith.OpCmpF ||
		c.Operand(0) != x || c.Operand(1) != acc || n.Operand(0) != x || n.Operand(1) != x {
		return reduction{}, false
	}
	pred := func(op *ir.Operation) int64 { a, _ := op.Attr("predicate").(ir.IntegerAttr); return a.Value }
	if pred(n) != int64(arith.CmpFUNO) {
		return reduction{}, false
	}
	var id float64
	switch pred(c) {
	case int64(arith.CmpFOGT):
		id = math.Inf(-1)
	case int64(arith.CmpFOLT):
		id = math.Inf(1)
	default:
		return reduction{}, false
	}
	a := floatIdentity(id, true)(acc.Type())
	if a == nil {
		return reduction{}, false
	}
	for _, v := range []*ir.Value{c.Result(0), n.Result(0), or.Result(0)} {
		if !v.HasOneUse() {
			return reduction{}, false
		}
	}
	return reduction{op: sel, ops: []*ir.Operation{c, n, or, sel}, acc: acc, val: x, identity: a}, true
}

// identities gives the identity of each combining op for an element type,
// or nil for types the row mapping does not shuffle. Sums and products are
// shuffled in f32 and i32 only (f16 and bf16 sums accumulate in f32 after
// convert-graph-to-loop; combining narrow partials in another order would
// round differently); maxima and minima also in f16 and bf16, since they
// are exact in any order.
var identities = map[string]func(t ir.Type) ir.Attribute{
	arith.OpAddF:     floatIdentity(math.Copysign(0, -1), false),
	arith.OpMulF:     floatIdentity(1, false),
	arith.OpMaximumF: floatIdentity(math.Inf(-1), true),
	arith.OpMaxNumF:  floatIdentity(math.Inf(-1), true),
	arith.OpMinimumF: floatIdentity(math.Inf(1), true),
	arith.OpMinNumF:  floatIdentity(math.Inf(1), true),
	arith.OpAddI:     intIdentity(func(int) int64 { return 0 }),
	arith.OpOrI:      intIdentity(func(int) int64 { return 0 }),
	arith.OpXOrI:     intIdentity(func(int) int64 { return 0 }),
	arith.OpMaxUI:    intIdentity(func(int) int64 { return 0 }),
	arith.OpMulI:     intIdentity(func(int) int64 { return 1 }),
	arith.OpAndI:     intIdentity(func(int) int64 { return -1 }),
	arith.OpMinUI:    intIdentity(func(int) int64 { return -1 }),
	arith.OpMaxSI:    intIdentity(func(w int) int64 { return -1 << (w - 1) }),
	arith.OpMinSI:    intIdentity(func(w int) int64 { return 1<<(w-1) - 1 }),
}

// floatIdentity returns v as an attribute of an accumulator type the row
// mapping shuffles: f32, and f16 or bf16 when narrow (reduceRow moves those
// widened to f32, which gpu.shuffle takes, and truncates back exactly).
func floatIdentity(v float64, narrow bool) func(ir.Type) ir.Attribute {
	return func(t ir.Type) ir.Attribute {
		ft, ok := t.(*ir.FloatType)
		if !ok || (t != ir.F32 && !(narrow && isNarrowFloat(t))) {
			return nil
		}
		return ir.FloatAttr{Bits: ir.FloatToBits(v, ft), Type: ft}
	}
}

// isNarrowFloat reports whether t is f16 or bf16.
func isNarrowFloat(t ir.Type) bool { return t == ir.F16 || t == ir.BF16 }

func intIdentity(v func(width int) int64) func(ir.Type) ir.Attribute {
	return func(t ir.Type) ir.Attribute {
		if t != ir.I32 {
			return nil
		}
		return ir.IntegerAttr{Value: ir.TruncInt(v(32), t), Type: t}
	}
}

// recognize returns the reduction whose combining op is op, with acc one
// of its operands, when op is a known combiner of a shuffle-able type.
func recognize(op *ir.Operation, acc *ir.Value) (reduction, bool) {
	id := identities[op.Name()]
	if id == nil || op.NumOperands() != 2 || op.NumResults() != 1 {
		return reduction{}, false
	}
	x, y := op.Operand(0), op.Operand(1)
	if y == acc {
		x, y = y, x
	}
	if x != acc || y == acc {
		return reduction{}, false
	}
	a := id(acc.Type())
	if a == nil {
		return reduction{}, false
	}
	return reduction{op: op, ops: []*ir.Operation{op}, acc: acc, val: y, identity: a}, true
}

// rowLoop is an inner loop of a row nest that the row's threads share.
type rowLoop struct {
	op   *ir.Operation
	reds []reduction
}

// row maps each point of the nest (a row) to a block, or to a warp when
// rows > 1 rows share a block.
type row struct {
	rows    int64 // rows per block
	threads int64 // threads per row
	vec     int64 // consecutive iterations a thread takes per step of a row loop, where they can
	loops   map[*ir.Operation]*rowLoop
	// barrierAfter holds the row-level ops that store what later ops of
	// the row may load: the block synchronizes after them.
	barrierAfter map[*ir.Operation]bool
	// meanVar holds the mean/variance pairs merged into one reduction
	// (Config.RowWelford), by both loops.
	meanVar map[*ir.Operation]meanVariance
	// reread and shuffleMerge are Config.RowReread and
	// Config.RowShuffleMerge.
	reread, shuffleMerge bool
}

// writesRows reports whether a row loop stores (a softmax's or layer
// norm's write loop), as against a row reduction that stores one value
// a row.
func (r *row) writesRows() bool {
	for op := range r.loops {
		if len(buffers(op, loop.StoreOp)) > 0 {
			return true
		}
	}
	return false
}

// rowPlan returns the row mapping of a nest whose body is a sequence of
// row-level ops (pure ops, loads, stores) and distributable loops:
// loop.for whose iter values are all recognized reductions, or 1-D inner
// loop.parallel with recognized combiners. It returns nil when the body
// has no such loop, has other ops, or looks like a matmul (two loads in
// the loops each missing a different one of the nest's induction
// variables: threads on neighbouring outputs share the operands, which a
// thread per output exploits better than a block per output).
func rowPlan(nest *ir.Operation, cfg Config) *row {
	body := loop.Body(nest)
	r := &row{vec: cfg.Vector, loops: map[*ir.Operation]*rowLoop{}, barrierAfter: map[*ir.Operation]bool{},
		reread: cfg.RowReread, shuffleMerge: cfg.RowShuffleMerge}
	var order []*rowLoop
	short := true
	for op := body.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
		switch op.Name() {
		case loop.ForOp:
			rl := forLoop(op)
			if rl == nil {
				return nil
			}
			lb, ub, step := loop.ForBounds(op)
			short = short && staticShort(lb, ub, step)
			r.loops[op], order = rl, append(order, rl)
		case loop.ParallelOp:
			rl := parallelLoop(op)
			if rl == nil {
				return nil
			}
			lbs, ubs, steps, _, _ := loop.ParallelBounds(op)
			short = short && staticShort(lbs[0], ubs[0], steps[0])
			r.loops[op], order = rl, append(order, rl)
		case loop.IfOp:
			return nil
		}
	}
	if len(order) == 0 || matmulLike(nest, order) || columnReads(nest, order) {
		return nil
	}
	if cfg.RowWelford {
		r.meanVar = map[*ir.Operation]meanVariance{}
		for _, mv := range meanVariancePairs(body, order) {
			r.meanVar[mv.sum.op], r.meanVar[mv.sq.op] = mv, mv
		}
	}
	// An op that stores into a buffer needs a barrier before any later
	// load of that buffer in the row: the threads of the row do not all
	// store what they later load. (Distinct buffer values are assumed not
	// to alias, as convert-graph-to-loop makes them.)
	needBarrier := false
	for op := body.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
		stored := buffers(op, loop.StoreOp)
		for later := op.Next(); later != nil && len(stored) > 0; later = later.Next() {
			if overlaps(stored, buffers(later, loop.LoadOp)) {
				r.barrierAfter[op], needBarrier = true, true
				break
			}
		}
	}
	r.rows = cfg.RowsPerBlock
	if r.rows == 0 {
		r.rows = 1
		if short {
			r.rows = cfg.Block / gpu.WarpSize
		}
	}
	if needBarrier {
		// Block barriers need every thread of the block on the same row.
		r.rows = 1
	}
	r.threads = cfg.Block
	if r.rows > 1 {
		r.threads = gpu.WarpSize
	} else {
		r.threads = r.registerBlock(order)
	}
	return r
}

// RegisterRowPreferred is the most elements of a register-held row (see
// RegisterRow) a thread takes when a larger block can hold the row with
// fewer: the block grows, up to RegisterRowBlock threads. Measured on the
// H200 (bench/NOTES.md): softmax over 8192 columns at 512 threads of 16
// ran 0.1332 ms against 0.1343 at 256 of 32, and the driver's JIT
// compiles it in 20 instead of 29 ms (half the unrolled code); 1024
// threads of 8 took 0.215 ms (session 3, the warps' partials combined in
// order); the layer norm over 4096 columns at 512 threads of 8 ran 0.1290
// ms against 0.1298 at 256 of 16 (session 4, with row-shuffle-merge and
// row-evict-last).
const (
	RegisterRowPreferred = 8
	RegisterRowBlock     = 512
)

// registerBlock returns the threads per row for a block-per-row plan:
// r.threads, or more when every row loop is static and held in registers
// with more than RegisterRowPreferred elements a thread: then as many
// threads as take RegisterRowPreferred each, at most RegisterRowBlock, in
// whole vector steps.
func (r *row) registerBlock(order []*rowLoop) int64 {
	n := int64(0)
	for _, rl := range order {
		var lb, ub, step *ir.Value
		if rl.op.Name() == loop.ForOp {
			lb, ub, step = loop.ForBounds(rl.op)
		} else {
			lbs, ubs, steps, _, _ := loop.ParallelBounds(rl.op)
			lb, ub, step = lbs[0], ubs[0], steps[0]
		}
		l, ok1 := staticInt(lb)
		u, ok2 := staticInt(ub)
		s, ok3 := staticInt(step)
		if !ok1 || !ok2 || !ok3 || s != 1 {
			return r.threads
		}
		n = max(n, u-l)
	}
	per := n / r.threads
	if per <= RegisterRowPreferred || per > RegisterRow {
		return r.threads
	}
	t := min(n/RegisterRowPreferred, RegisterRowBlock)
	if t <= r.threads || t%gpu.WarpSize != 0 || n%(t*max(r.vec, 1)) != 0 {
		return r.threads
	}
	return t
}

// staticShort reports whether a loop's trip count is static and at most
// ShortRow.
func staticShort(lb, ub, step *ir.Value) bool {
	l, ok1 := staticInt(lb)
	u, ok2 := staticInt(ub)
	s, ok3 := staticInt(step)
	return ok1 && ok2 && ok3 && s > 0 && (u-l+s-1)/s <= ShortRow
}

// buffers returns the memrefs that op, or the ops inside it, load or
// store (name is loop.LoadOp or loop.StoreOp).
func buffers(op *ir.Operation, name string) map[*ir.Value]bool {
	out := map[*ir.Value]bool{}
	op.Walk(func(o *ir.Operation) bool {
		if o.Name() == name {
			mem, _ := accessIndices(o)
			out[mem] = true
		}
		return true
	})
	return out
}

func overlaps(a, b map[*ir.Value]bool) bool {
	for v := range a {
		if b[v] {
			return true
		}
	}
	return false
}

// forLoop recognizes a loop.for whose iter values are reductions: each is
// yielded as combine(acc, x) where acc, the iter argument, has no other use.
// In the thread's partial loop the combining ops are cloned with the rest
// of the body, so they combine the partial and the value in place.
func forLoop(op *ir.Operation) *rowLoop {
	body := loop.Body(op)
	y := body.Terminator()
	rl := &rowLoop{op: op}
	for i := range y.NumOperands() {
		acc := body.Argument(1 + i)
		c := y.Operand(i).DefiningOp()
		if c == nil || c.Block() != body {
			return nil
		}
		red, ok := recognize(c, acc)
		if !ok {
			red, ok = selectMinMax(c, acc)
		}
		// Every use of acc must be in the combining ops.
		uses := 0
		for _, op := range red.ops {
			for _, v := range op.Operands() {
				if v == acc {
					uses++
				}
			}
		}
		if !ok || uses != len(acc.Users()) {
			return nil
		}
		rl.reds = append(rl.reds, red)
	}
	return rl
}

// parallelLoop recognizes a 1-D loop.parallel whose combiners are each one
// known op on ^bb0(%lhs, %rhs).
func parallelLoop(op *ir.Operation) *rowLoop {
	n, _, err := loop.Segments(op)
	if err != nil || n != 1 {
		return nil
	}
	red := loop.Body(op).Terminator()
	rl := &rowLoop{op: op}
	for i := range red.NumRegions() {
		blk := red.Region(i).Front()
		c := blk.First()
		if c == nil || c.Next() != blk.Terminator() || blk.Terminator().Operand(0) != c.Result(0) {
			return nil
		}
		r, ok := recognize(c, blk.Argument(0))
		if !ok || r.val != blk.Argument(1) {
			return nil
		}
		rl.reds = append(rl.reds, r)
	}
	return rl
}

// matmulLike reports whether two loads in the row loops each miss a
// different induction variable of the nest. A variable over one point
// (static extent 1) is missed by no load: convert-graph-to-loop indexes
// such a dimension by the constant 0 (a decoding step's query of one
// token), so its loads look as if they missed it.
func matmulLike(nest *ir.Operation, loops []*rowLoop) bool {
	ivs := loop.Body(nest).Arguments()
	lbs, ubs, _, _, _ := loop.ParallelBounds(nest)
	unit := func(d int) bool {
		if d >= len(lbs) || d >= len(ubs) {
			return false
		}
		l, ok1 := staticInt(lbs[d])
		u, ok2 := staticInt(ubs[d])
		return ok1 && ok2 && u-l == 1
	}
	var missing []uint64
	for _, rl := range loops {
		rl.op.Walk(func(o *ir.Operation) bool {
			if o.Name() != loop.LoadOp {
				return true
			}
			_, idx := accessIndices(o)
			var set uint64
			for d, iv := range ivs {
				if unit(d) {
					continue
				}
				memo, one := map[*ir.Value]bool{}, map[*ir.Value]bool{iv: true}
				uses := false
				for _, v := range idx {
					uses = uses || dependsOn(v, one, nest, memo)
				}
				if !uses && d < 64 {
					set |= 1 << d
				}
			}
			if set != 0 {
				missing = append(missing, set)
			}
			return true
		})
	}
	for i := range missing {
		for j := range i {
			if missing[i] != missing[j] {
				return true
			}
		}
	}
	return false
}

// ColumnThreads is the fewest points of a nest that reads columns
// (columnReads) for which the nest runs a thread a point (the pointwise
// mapping) rather than a warp or block a point: a grid of that many
// threads fills the device.
const ColumnThreads = 8192

// columnReads reports whether the row loops of nest read columns: every
// load that moves with a loop's induction variable moves by more than one
// element a step, while a step of the nest's innermost induction variable
// moves it by one, and the nest has at least ColumnThreads static points.
// The first half of a split bias gradient ([P, Q, C] summed over Q) is
// such a nest. The row mapping would give each point a warp whose lanes
// load rows apart, a sector a lane (0.045 ms for 25 MB on the H200, an
// eighth of its bandwidth); a thread a point loads adjacent columns in
// adjacent lanes. The steps are measured by evaluating the loads' indices
// (views lower to divisions and remainders of a linear index) at a point
// of the nest and one step away; an index that is not integer arithmetic
// of constants and induction variables keeps the row mapping.
func columnReads(nest *ir.Operation, loops []*rowLoop) bool {
	lbs, ubs, steps, _, _ := loop.ParallelBounds(nest)
	ivs := loop.Body(nest).Arguments()
	if len(ivs) == 0 || len(ivs) != len(lbs) {
		return false
	}
	points := int64(1)
	base := map[*ir.Value]int64{}
	for i := range lbs {
		l, ok1 := staticInt(lbs[i])
		u, ok2 := staticInt(ubs[i])
		s, ok3 := staticInt(steps[i])
		if !ok1 || !ok2 || !ok3 || s != 1 || u-l < 2 {
			return false
		}
		points *= u - l
		base[ivs[i]] = l + (u-l)/2 // away from the edges a pad or slice has
	}
	if points < ColumnThreads {
		return false
	}
	inner := ivs[len(ivs)-1]
	columns := false
	for _, rl := range loops {
		args := loop.Body(rl.op).Arguments()
		if len(args) == 0 {
			return false
		}
		iv := args[0]
		rows := false
		rl.op.Walk(func(o *ir.Operation) bool {
			if o.Name() != loop.LoadOp || rows {
				return true
			}
			at := func(v *ir.Value, d int64) (int64, bool) {
				env := maps.Clone(base)
				env[iv] = 1
				env[v] += d
				return flatOffset(o, env)
			}
			o0, ok0 := at(iv, 0)
			oq, ok1 := at(iv, 1)
			oc, ok2 := at(inner, 1)
			switch {
			case !ok0 || !ok1 || !ok2:
				rows = true
			case oq == o0: // does not move with the loop
			case oc-o0 == 1 && (oq-o0 > 1 || oq-o0 < -1):
				columns = true
			default:
				rows = true
			}
			return true
		})
		if rows {
			return false
		}
	}
	return columns
}

// flatOffset returns the row-major element offset that load o reads with
// the induction variables at env, or false when its buffer's shape is not
// static or an index is not integer arithmetic of constants and env.
func flatOffset(o *ir.Operation, env map[*ir.Value]int64) (int64, bool) {
	mem, idx := accessIndices(o)
	mt, ok := mem.Type().(*ir.MemRefType)
	if !ok || len(mt.Shape()) != len(idx) {
		return 0, false
	}
	memo := map[*ir.Value]int64{}
	off := int64(0)
	for d, v := range idx {
		n := mt.Shape()[d]
		x, ok := evalIndex(v, env, memo, 0)
		if !ok || n < 0 {
			return 0, false
		}
		off = off*n + x
	}
	return off, true
}

// evalIndex evaluates the integer value v with the block arguments in env,
// through constants, casts, integer arith ops, comparisons and selects.
func evalIndex(v *ir.Value, env, memo map[*ir.Value]int64, depth int) (int64, bool) {
	if x, ok := env[v]; ok {
		return x, true
	}
	if x, ok := memo[v]; ok {
		return x, true
	}
	op := v.DefiningOp()
	if op == nil || depth > 256 {
		return 0, false
	}
	arg := func(i int) (int64, bool) { return evalIndex(op.Operand(i), env, memo, depth+1) }
	var x int64
	ok := false
	switch name := op.Name(); {
	case name == arith.OpConstant:
		x, ok = staticInt(v)
	case name == arith.OpIndexCast || name == arith.OpIndexCastUI:
		x, ok = arg(0)
	case name == arith.OpSelect:
		var c int64
		if c, ok = arg(0); ok {
			x, ok = arg(2 - int(c&1))
		}
	case name == arith.OpCmpI:
		p, _ := op.Attr("predicate").(ir.IntegerAttr)
		a, ok1 := arg(0)
		b, ok2 := arg(1)
		if ok = ok1 && ok2; ok && arith.CmpI(arith.CmpIPredicate(p.Value), op.Operand(0).Type(), a, b) {
			x = 1
		}
	case arith.IsIntBinary(name) && op.NumOperands() == 2:
		a, ok1 := arg(0)
		b, ok2 := arg(1)
		if ok1 && ok2 {
			x, ok = arith.EvalInt(name, v.Type(), a, b)
		}
	}
	if ok {
		memo[v] = x
	}
	return x, ok
}

func (r *row) block(Config) int64  { return r.rows * r.threads }
func (r *row) mapping() string     { return MappingRow }
func (r *row) rowsPerBlock() int64 { return r.rows }
func (r *row) vector() int64       { return 1 }

func (r *row) grid(b *ir.Builder, loc ir.Location, exts []*ir.Value, _ Config) *ir.Value {
	one := arith.ConstantIndex(b, loc, 1)
	g := ceilDiv(b, loc, product(b, loc, exts), arith.ConstantIndex(b, loc, r.rows), one)
	return arith.Binary(b, arith.OpMaxUI, loc, g, one)
}

// rowThread is the position of a thread in its row.
type rowThread struct {
	lane    *ir.Value // index of the thread within its row's threads
	tid     *ir.Value // index of the thread within the block
	isFirst *ir.Value // lane == 0
	// regs is what the row's unrolled loops share; rcp the reciprocals of
	// the row's divisors, by divisor.
	regs *rowRegs
	rcp  map[*ir.Value]*ir.Value
	// m2 holds the result of the variance loops whose mean loop computed
	// it (emitMeanVariance), by loop.
	m2 map[*ir.Operation]*ir.Value
}

func (r *row) emit(k *kernelGen, b *ir.Builder) error {
	loc := k.loc
	lbs, ubs, steps, _, _ := loop.ParallelBounds(k.nest)
	lbs, ubs, steps = mapped(k.m, lbs), mapped(k.m, ubs), mapped(k.m, steps)
	exts := extents(b, loc, lbs, ubs, steps)
	rows := product(b, loc, exts)
	tid, bid := gpu.ThreadID(b, loc, "x"), gpu.BlockID(b, loc, "x")
	th := rowThread{lane: tid, tid: tid, regs: newRowRegs(), rcp: map[*ir.Value]*ir.Value{}, m2: map[*ir.Operation]*ir.Value{}}
	rowID := bid
	if r.rows > 1 {
		w := arith.ConstantIndex(b, loc, r.threads)
		th.lane = arith.Binary(b, arith.OpRemUI, loc, tid, w)
		rowID = arith.Binary(b, arith.OpAddI, loc,
			arith.Binary(b, arith.OpMulI, loc, bid, arith.ConstantIndex(b, loc, r.rows)),
			arith.Binary(b, arith.OpDivUI, loc, tid, w))
	}
	th.isFirst = arith.NewCmpI(b, loc, arith.CmpIEQ, th.lane, arith.ConstantIndex(b, loc, 0))
	// The condition is uniform across a block (one row) or a warp (whose
	// row kernels have no barriers), so barriers and shuffles inside are
	// reached by all the threads that must reach them.
	inRange := arith.NewCmpI(b, loc, arith.CmpIULT, rowID, rows)
	var err error
	loop.If(b, loc, inRange, nil, func(b *ir.Builder) []*ir.Value {
		ivs := delinearize(b, loc, rowID, lbs, steps, exts)
		body := loop.Body(k.nest)
		for d, iv := range ivs {
			k.m[body.Argument(d)] = iv
		}
		for op := body.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
			switch {
			case th.m2[op] != nil:
				red := r.loops[op].reds[0]
				k.m[op.Result(0)] = red.combine(b, mapped(k.m, rowInits(op))[0], th.m2[op])
			case r.loops[op] != nil:
				if mv, ok := r.meanVar[op]; ok && mv.sum.op == op {
					if m2 := r.emitMeanVariance(k, b, th, mv); m2 != nil {
						th.m2[mv.sq.op] = m2
						continue
					}
				}
				if r.reread && len(buffers(op, loop.StoreOp)) > 0 {
					// The write loop loads the row again (Config.RowReread).
					th.regs.forgetLoads()
				}
				if err = r.emitLoop(k, b, th, r.loops[op]); err != nil {
					return nil
				}
			case op.Name() == loop.StoreOp:
				// Every thread of the row computed the value; one writes it.
				th.regs.forget(mapped(k.m, op.Operands()[1:2])[0])
				loop.If(b, op.Loc(), th.isFirst, nil, func(b *ir.Builder) []*ir.Value {
					b.Insert(op.Clone(k.m))
					return nil
				}, nil)
				if r.barrierAfter[op] {
					gpu.Barrier(b, op.Loc())
				}
			default:
				b.Insert(op.Clone(k.m))
			}
		}
		return nil
	}, nil)
	return err
}

// emitLoop distributes a row loop over the row's threads: thread lane runs
// iterations lb + lane*step, lb + (lane+threads)*step, ..., accumulating
// partial results from the identities; the partials are then reduced
// across the row and combined with the loop's inits. A loop whose share
// per thread is at most RegisterRow elements is unrolled instead (see
// registerSteps), so that later loops over the same row reuse its loads.
func (r *row) emitLoop(k *kernelGen, b *ir.Builder, th rowThread, rl *rowLoop) error {
	loc := rl.op.Loc()
	var lb, ub, step *ir.Value
	var inits []*ir.Value
	if rl.op.Name() == loop.ForOp {
		lb, ub, step = loop.ForBounds(rl.op)
		inits = loop.ForInits(rl.op)
	} else {
		lbs, ubs, steps, in, _ := loop.ParallelBounds(rl.op)
		lb, ub, step, inits = lbs[0], ubs[0], steps[0], in
	}
	bounds := mapped(k.m, []*ir.Value{lb, ub, step})
	lb, ub, step = bounds[0], bounds[1], bounds[2]
	v := r.loopVector(rl, lb, ub, step)
	rcp := r.reciprocals(b, k, th, rl)
	// Loads before the loop of what it stores are stale after it.
	for mem := range buffers(rl.op, loop.StoreOp) {
		th.regs.forget(mapped(k.m, []*ir.Value{mem})[0])
	}
	nred := len(rl.reds)
	ids := make([]*ir.Value, nred*int(v))
	for i, red := range rl.reds {
		id := arith.Constant(b, loc, red.identity)
		for j := range v {
			ids[i*int(v)+int(j)] = id
		}
	}
	body := loop.Body(rl.op)
	// lanes maps the body of iteration iv+j (j < v) onto the accumulators
	// accs, and clone clones it into b for each of them, op-major (so that
	// the v accesses of a buffer are adjacent: one vector access in
	// targets/llvm), returning the next accumulators.
	lanes := func(at func(j int64) *ir.Value, accs []*ir.Value) []map[*ir.Value]*ir.Value {
		ms := make([]map[*ir.Value]*ir.Value, v)
		for j := range ms {
			m := maps.Clone(k.m)
			m[body.Argument(0)] = at(int64(j))
			if rl.op.Name() == loop.ForOp {
				for i := range nred {
					m[body.Argument(1+i)] = accs[i*int(v)+j]
				}
			}
			ms[j] = m
		}
		return ms
	}
	clone := func(b *ir.Builder, ms []map[*ir.Value]*ir.Value, accs []*ir.Value, regs *rowRegs) []*ir.Value {
		var term *ir.Operation
		for op := body.First(); op != nil; op = op.Next() {
			if op.HasTrait(ir.Terminator) {
				term = op
				break
			}
			for _, m := range ms {
				r.cloneOp(b, op, m, rcp, regs)
			}
		}
		out := make([]*ir.Value, len(accs))
		for j, m := range ms {
			vals := mapped(m, term.Operands())
			for i, red := range rl.reds {
				at := i*int(v) + j
				if rl.op.Name() == loop.ForOp {
					out[at] = vals[i]
				} else {
					out[at] = red.combine(b, accs[at], vals[i])
				}
			}
		}
		return out
	}
	var accs []*ir.Value
	if steps := r.registerSteps(lb, ub, v); steps > 0 {
		// Unrolled: iteration lb + lane*v + s*v*threads + j of step s is
		// one SSA value per (lb, v, s, j), shared by every loop of the row
		// over the same range, so their loads of a buffer at it are one.
		lbv, _ := staticInt(lb)
		accs = ids
		for s := range steps {
			at := func(j int64) *ir.Value { return th.regs.position(b, loc, th.lane, lbv, v, r.threads, s, j) }
			accs = clone(b, lanes(at, accs), accs, th.regs)
		}
	} else {
		// Thread lane takes the v consecutive iterations lb + (lane*v + j)*step
		// each step; each of the v gets its own accumulators.
		start := arith.Binary(b, arith.OpAddI, loc, lb, arith.Binary(b, arith.OpMulI, loc, th.lane, arith.ConstantIndex(b, loc, v)))
		stride := arith.ConstantIndex(b, loc, v*r.threads)
		if v == 1 {
			start = arith.Binary(b, arith.OpAddI, loc, lb, arith.Binary(b, arith.OpMulI, loc, th.lane, step))
			stride = arith.Binary(b, arith.OpMulI, loc, step, arith.ConstantIndex(b, loc, r.threads))
		}
		f := loop.For(b, loc, start, ub, stride, ids, func(b *ir.Builder, iv *ir.Value, iters []*ir.Value) []*ir.Value {
			at := func(j int64) *ir.Value {
				if j == 0 {
					return iv
				}
				return arith.Binary(b, arith.OpAddI, loc, iv, arith.ConstantIndex(b, loc, j))
			}
			return clone(b, lanes(at, iters), iters, nil)
		})
		accs = f.Results()
	}
	partial := make([]*ir.Value, nred)
	for i, red := range rl.reds {
		partial[i] = accs[i*int(v)]
		for j := 1; j < int(v); j++ {
			partial[i] = red.combine(b, partial[i], accs[i*int(v)+j])
		}
	}
	if r.barrierAfter[rl.op] {
		gpu.Barrier(b, loc)
	}
	for i, red := range rl.reds {
		total := r.reduceRow(k, b, loc, partial[i:i+1], single(red), th)[0]
		k.m[rl.op.Result(i)] = red.combine(b, mapped(k.m, inits)[i], total)
	}
	return nil
}

// RegisterRow is the most elements of a row loop one thread handles in an
// unrolled loop (see registerSteps): 32 f32 registers per thread and
// buffer, which leaves room for 3 blocks of 256 threads per SM.
const RegisterRow = 32

// registerSteps returns the number of steps of v iterations a thread takes
// in a row loop that vector access allows (v > 1: static bounds, step 1,
// no tail) when they come to at most RegisterRow iterations, and 0 when the
// loop runs as a loop.for. Unrolled, the loop's loads are plain values: a
// later loop over the same row at the same positions reuses them instead
// of reading the row again (one read of each row from DRAM, not one per
// pass).
func (r *row) registerSteps(lb, ub *ir.Value, v int64) int64 {
	l, _ := staticInt(lb)
	u, _ := staticInt(ub)
	if v <= 1 || (u-l)/r.threads > RegisterRow {
		return 0
	}
	return (u - l) / (v * r.threads)
}

// rowRegs holds what the unrolled loops of one row share: the positions of
// the thread's iterations and the values loaded at them.
type rowRegs struct {
	laneV map[int64]*ir.Value // lane*v, by v
	pos   map[posKey]*ir.Value
	loads map[loadKey]*ir.Value
}

type posKey struct{ lb, v, s, j int64 }

// loadKey is a load's buffer and indices (kernel values); loads of more
// than maxLoadRank indices are not shared.
type loadKey struct {
	mem *ir.Value
	idx [maxLoadRank]*ir.Value
}

const maxLoadRank = 4

func newRowRegs() *rowRegs {
	return &rowRegs{laneV: map[int64]*ir.Value{}, pos: map[posKey]*ir.Value{}, loads: map[loadKey]*ir.Value{}}
}

// position returns iteration lb + lane*v + s*v*threads + j, built once.
func (g *rowRegs) position(b *ir.Builder, loc ir.Location, lane *ir.Value, lb, v, threads, s, j int64) *ir.Value {
	key := posKey{lb, v, s, j}
	if p, ok := g.pos[key]; ok {
		return p
	}
	lv, ok := g.laneV[v]
	if !ok {
		lv = arith.Binary(b, arith.OpMulI, loc, lane, arith.ConstantIndex(b, loc, v))
		g.laneV[v] = lv
	}
	p := lv
	if off := lb + s*v*threads + j; off != 0 {
		p = arith.Binary(b, arith.OpAddI, loc, lv, arith.ConstantIndex(b, loc, off))
	}
	g.pos[key] = p
	return p
}

// cloneOp clones op of a row loop's body at b through m. A divf whose
// divisor the loop does not compute becomes a multiplication by its
// reciprocal (rcp). With regs (an unrolled loop), a load of a buffer at
// indices already loaded in the row reuses that value, and a store
// forgets the loads of its buffer.
func (r *row) cloneOp(b *ir.Builder, op *ir.Operation, m map[*ir.Value]*ir.Value, rcp map[*ir.Operation]*ir.Value, regs *rowRegs) {
	if inv, ok := rcp[op]; ok {
		m[op.Result(0)] = arith.Binary(b, arith.OpMulF, op.Loc(), mapped(m, op.Operands()[:1])[0], inv)
		return
	}
	if regs == nil {
		b.Insert(op.Clone(m))
		return
	}
	switch op.Name() {
	case loop.LoadOp:
		mem, idx := accessIndices(op)
		if len(idx) > maxLoadRank {
			break
		}
		key := loadKey{mem: mapped(m, []*ir.Value{mem})[0]}
		copy(key.idx[:], mapped(m, idx))
		if v, ok := regs.loads[key]; ok {
			m[op.Result(0)] = v
			return
		}
		c := op.Clone(m)
		b.Insert(c)
		regs.loads[key] = c.Result(0)
		return
	case loop.StoreOp:
		regs.forget(mapped(m, op.Operands()[1:2])[0])
	}
	b.Insert(op.Clone(m))
}

// forgetLoads drops every load the row holds.
func (g *rowRegs) forgetLoads() {
	clear(g.loads)
}

// forget drops the loads of buffer mem.
func (g *rowRegs) forget(mem *ir.Value) {
	if g == nil {
		return
	}
	for k := range g.loads {
		if k.mem == mem {
			delete(g.loads, k)
		}
	}
}

// reciprocals computes at b, once per divisor, 1/d for every f32 divf in
// a row loop's body whose divisor d the loop does not compute (softmax's
// division by the row's sum), and returns them by divf. The loop then
// multiplies by the reciprocal: one division per row instead of one per
// element. x·rn(1/d) differs from rn(x/d) by at most about 1.5 ulp
// (2⁻²³·1.5 relative), far inside the f32 tolerance of the checks (1e-4);
// a divisor below 2⁻¹²⁶ (1/d overflows) does not occur in a normalizing
// sum, and d = 0 or ±inf give the same inf, 0 or NaN either way.
func (r *row) reciprocals(b *ir.Builder, k *kernelGen, th rowThread, rl *rowLoop) map[*ir.Operation]*ir.Value {
	var out map[*ir.Operation]*ir.Value
	body := loop.Body(rl.op)
	for op := body.First(); op != nil; op = op.Next() {
		if op.Name() != arith.OpDivF || op.Result(0).Type() != ir.F32 || definedIn(op.Operand(1), rl.op) {
			continue
		}
		d := mapped(k.m, op.Operands()[1:])[0]
		inv, ok := th.rcp[d]
		if !ok {
			inv = arith.Binary(b, arith.OpDivF, op.Loc(), arith.ConstantFloat(b, op.Loc(), 1, ir.F32), d)
			th.rcp[d] = inv
		}
		if out == nil {
			out = map[*ir.Operation]*ir.Value{}
		}
		out[op] = inv
	}
	return out
}

// loopVector returns how many consecutive iterations of a row loop a
// thread takes per step: r.vec when the loop has static bounds, step 1 and
// a trip count that r.vec·threads divides (no tail), and a body without
// nested regions whose accesses are contiguous in the induction variable
// (as pointwisePlan requires of the innermost dimension); 1 otherwise.
func (r *row) loopVector(rl *rowLoop, lb, ub, step *ir.Value) int64 {
	l, ok1 := staticInt(lb)
	u, ok2 := staticInt(ub)
	s, ok3 := staticInt(step)
	if r.vec <= 1 || !ok1 || !ok2 || !ok3 || s != 1 || u <= l || (u-l)%(r.vec*r.threads) != 0 {
		return 1
	}
	body := loop.Body(rl.op)
	iv := map[*ir.Value]bool{body.Argument(0): true}
	memo := map[*ir.Value]bool{}
	for op := body.First(); op != nil; op = op.Next() {
		if op.NumRegions() > 0 {
			return 1
		}
		if op.Name() != loop.LoadOp && op.Name() != loop.StoreOp {
			continue
		}
		_, idx := accessIndices(op)
		for i, x := range idx {
			if dependsOn(x, iv, rl.op, memo) && !(i == len(idx)-1 && iv[x]) {
				return 1
			}
		}
	}
	return r.vec
}

// rowCombine combines two partial results of a row reduction, each a
// tuple of values: x stands for nx threads' partials and y for ny.
type rowCombine func(b *ir.Builder, x, y []*ir.Value, nx, ny int64) []*ir.Value

// single is the rowCombine of one reduction (counts do not matter).
func single(red reduction) rowCombine {
	return func(b *ir.Builder, x, y []*ir.Value, _, _ int64) []*ir.Value {
		return []*ir.Value{red.combine(b, x[0], y[0])}
	}
}

// reduceRow combines the tuple vals over the row's threads and returns the
// result, the same in every thread: a butterfly of xor shuffles within
// each warp, then, for rows wider than a warp, the warps' results through
// workgroup memory (one buffer per value, one barrier), which every
// thread combines in warp order, unrolled (the loads are independent), or
// with shuffleMerge in a second butterfly across the warps' partials.
func (r *row) reduceRow(k *kernelGen, b *ir.Builder, loc ir.Location, vals []*ir.Value, combine rowCombine, th rowThread) []*ir.Value {
	width := min(r.threads, gpu.WarpSize)
	for off := width / 2; off >= 1; off /= 2 {
		other := make([]*ir.Value, len(vals))
		for i, v := range vals {
			other[i] = shuffleXor(b, loc, v, off)
		}
		n := width / (2 * off)
		vals = combine(b, vals, other, n, n)
	}
	if r.threads <= gpu.WarpSize {
		return vals
	}
	warps := r.threads / gpu.WarpSize
	smem := make([]*ir.Value, len(vals))
	for i, v := range vals {
		smem[i] = gpu.AddWorkgroupBuffer(k.kernel, gpu.WorkgroupMemRef(warps, v.Type()))
	}
	ws := arith.ConstantIndex(b, loc, gpu.WarpSize)
	warp := arith.Binary(b, arith.OpDivUI, loc, th.tid, ws)
	first := arith.NewCmpI(b, loc, arith.CmpIEQ, arith.Binary(b, arith.OpRemUI, loc, th.tid, ws), arith.ConstantIndex(b, loc, 0))
	loop.If(b, loc, first, nil, func(b *ir.Builder) []*ir.Value {
		for i, v := range vals {
			loop.Store(b, loc, v, smem[i], warp)
		}
		return nil
	}, nil)
	gpu.Barrier(b, loc)
	load := func(w *ir.Value) []*ir.Value {
		out := make([]*ir.Value, len(smem))
		for i, m := range smem {
			out[i] = loop.Load(b, loc, m, w)
		}
		return out
	}
	if r.shuffleMerge && warps&(warps-1) == 0 {
		// Lane l of every warp takes warp l mod warps's partial; the
		// butterfly over offsets below warps pairs lanes of equal l mod
		// warps groups, so every lane ends with the whole row's result,
		// the same in every thread (each combine is symmetric in its two
		// operands, as the warp's own butterfly above).
		acc := load(arith.Binary(b, arith.OpRemUI, loc, th.tid, arith.ConstantIndex(b, loc, warps)))
		for off := int64(1); off < warps; off *= 2 {
			other := make([]*ir.Value, len(acc))
			for i, v := range acc {
				other[i] = shuffleXor(b, loc, v, off)
			}
			acc = combine(b, acc, other, off*gpu.WarpSize, off*gpu.WarpSize)
		}
		return acc
	}
	acc := load(arith.ConstantIndex(b, loc, 0))
	for w := int64(1); w < warps; w++ {
		acc = combine(b, acc, load(arith.ConstantIndex(b, loc, w)), w*gpu.WarpSize, gpu.WarpSize)
	}
	return acc
}

// shuffleXor returns v of the lane whose index is this lane's xor off
// (16-bit floats travel as f32).
func shuffleXor(b *ir.Builder, loc ir.Location, v *ir.Value, off int64) *ir.Value {
	x := v
	if isNarrowFloat(v.Type()) {
		x = arith.NewCast(b, arith.OpExtF, loc, v, ir.F32)
	}
	o, _ := gpu.Shuffle(b, loc, "xor", x, arith.ConstantInt(b, loc, off, ir.I32), arith.ConstantInt(b, loc, gpu.WarpSize, ir.I32))
	if x != v {
		o = arith.NewCast(b, arith.OpTruncF, loc, o, v.Type())
	}
	return o
}
