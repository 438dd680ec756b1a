package togpu

import (
	"maps"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

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
	if r.cols {
		// Lane l of warp w: point l of the block's rows, thread w of
		// the point's threads.
		rs := arith.ConstantIndex(b, loc, r.rows)
		th.lane = arith.Binary(b, arith.OpDivUI, loc, tid, rs)
		rowID = arith.Binary(b, arith.OpAddI, loc,
			arith.Binary(b, arith.OpMulI, loc, bid, rs),
			arith.Binary(b, arith.OpRemUI, loc, tid, rs))
	} else if r.rows > 1 {
		w := arith.ConstantIndex(b, loc, r.threads)
		th.lane = arith.Binary(b, arith.OpRemUI, loc, tid, w)
		rowID = arith.Binary(b, arith.OpAddI, loc,
			arith.Binary(b, arith.OpMulI, loc, bid, arith.ConstantIndex(b, loc, r.rows)),
			arith.Binary(b, arith.OpDivUI, loc, tid, w))
	}
	th.isFirst = arith.NewCmpI(b, loc, arith.CmpIEQ, th.lane, arith.ConstantIndex(b, loc, 0))
	// The condition is uniform across a block (one row) or a warp (whose
	// row kernels have no barriers), so barriers and shuffles inside are
	// reached by all the threads that must reach them; a column-mapped
	// block's rows are all in range (rowPlan: WarpSize divides the points).
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
	if v <= 1 || (u-l)/r.threads > RegisterRow || (u-l)%(v*r.threads) != 0 {
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
// thread takes per step: r.vec when the loop has static bounds, step 1, a
// trip count that r.vec divides, and a body without nested regions whose
// accesses are contiguous in the induction variable (as pointwisePlan
// requires of the innermost dimension); 1 otherwise. A loop short enough
// to unroll (registerSteps) also needs r.vec·threads to divide the trip
// count; a longer one runs as a loop.for whose last step leaves some
// threads idle, each step a whole vector, since r.vec divides the trip
// count. GPT-2's loss rows (50304 bf16 logits at 1024 threads) took
// scalar 2-byte loads under the stricter rule: 1.4 TB/s on the H200.
func (r *row) loopVector(rl *rowLoop, lb, ub, step *ir.Value) int64 {
	l, ok1 := staticInt(lb)
	u, ok2 := staticInt(ub)
	s, ok3 := staticInt(step)
	if r.vec <= 1 || r.cols || !ok1 || !ok2 || !ok3 || s != 1 || u <= l || (u-l)%r.vec != 0 {
		return 1
	}
	if (u-l)%(r.vec*r.threads) != 0 && (u-l)/r.threads <= RegisterRow {
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
	if r.cols {
		return r.reduceColumn(k, b, loc, vals, combine, th)
	}
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

// reduceColumn is reduceRow for a column-mapped block (r.cols): the
// row's threads are one lane of each warp, so each stores its partial at
// its thread index in workgroup memory, and after one barrier every
// thread combines its row's partials in warp order.
func (r *row) reduceColumn(k *kernelGen, b *ir.Builder, loc ir.Location, vals []*ir.Value, combine rowCombine, th rowThread) []*ir.Value {
	smem := make([]*ir.Value, len(vals))
	for i, v := range vals {
		smem[i] = gpu.AddWorkgroupBuffer(k.kernel, gpu.WorkgroupMemRef(r.rows*r.threads, v.Type()))
		loop.Store(b, loc, v, smem[i], th.tid)
	}
	gpu.Barrier(b, loc)
	point := arith.Binary(b, arith.OpRemUI, loc, th.tid, arith.ConstantIndex(b, loc, r.rows))
	load := func(w int64) []*ir.Value {
		at := arith.Binary(b, arith.OpAddI, loc, point, arith.ConstantIndex(b, loc, w*r.rows))
		out := make([]*ir.Value, len(smem))
		for i, m := range smem {
			out[i] = loop.Load(b, loc, m, at)
		}
		return out
	}
	acc := load(0)
	for w := int64(1); w < r.threads; w++ {
		acc = combine(b, acc, load(w), w, 1)
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
