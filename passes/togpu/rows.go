package togpu

import (
	"maps"
	"math"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

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
	// cols: the rows read columns (readsColumns) and the block takes
	// rows = WarpSize of them, a lane each, its warps sharing each row's
	// loops (threads warps): a warp's load reads 32 adjacent elements.
	cols bool
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
	if len(order) == 0 || matmulLike(nest, order) {
		return nil
	}
	points, cols := readsColumns(nest, order)
	if cols && points >= ColumnThreads {
		return nil // a thread a point: the pointwise mapping
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
	if w := columnWarps(order); cols && w > 0 && cfg.RowsPerBlock == 0 && points%gpu.WarpSize == 0 && points >= ColumnBlocks*gpu.WarpSize {
		r.cols, r.rows, r.threads, r.vec = true, gpu.WarpSize, w, 1
		return r
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
	// Config.Vector counts 4-byte lanes, as for pointwise nests: a row
	// nest that moves only 16-bit elements takes twice the elements a
	// step (16-byte accesses) where every row loop then still takes whole
	// vector steps, else the option's count. GPT-2's add and layer norm
	// over 768 bf16 columns: 96 threads of 8 ran 0.0188 ms on the H200
	// against 0.0217 at 192 threads of 4 (session 16, TestGPURowVariants).
	lbs, ubs, steps, _, _ := loop.ParallelBounds(nest)
	if r.vec > 1 && widestAccess(nest, staticPoints(lbs, ubs, steps)) == 2 {
		r.vec *= 2
		r.plan(cfg, order)
		if r.vectorSteps(order) {
			return r
		}
		r.vec = cfg.Vector
	}
	r.plan(cfg, order)
	return r
}

// plan sets the threads per row for r.rows rows a block and r.vec.
func (r *row) plan(cfg Config, order []*rowLoop) {
	r.threads = cfg.Block
	switch {
	case r.rows > 1:
		r.threads = gpu.WarpSize
	case longRow(order):
		r.threads = LongRowBlock
	default:
		r.threads = r.registerBlock(order)
		r.threads = r.vectorBlock(order)
	}
}

// vectorSteps reports whether every row loop takes steps of r.vec
// iterations at r.threads threads a row.
func (r *row) vectorSteps(order []*rowLoop) bool {
	for _, rl := range order {
		lb, ub, step := rowBounds(rl)
		if r.loopVector(rl, lb, ub, step) != r.vec {
			return false
		}
	}
	return true
}

// LongRow and LongRowBlock: a row loop of more than LongRow elements
// (static) does not fit in registers, and its later loops read the row
// again: a block of LongRowBlock threads a row keeps two rows an SM in
// flight (264 rows of GPT-2's logits, 26 MB) so that the second read
// hits L2, where blocks of 256 (8 an SM, 105 MB) read the row from
// memory twice.
const (
	LongRow      = 16384
	LongRowBlock = 1024
)

// longRow reports whether some row loop of order runs over more than
// LongRow elements, statically.
func longRow(order []*rowLoop) bool {
	for _, rl := range order {
		lb, ub, step := rowBounds(rl)
		l, ok1 := staticInt(lb)
		u, ok2 := staticInt(ub)
		s, ok3 := staticInt(step)
		if ok1 && ok2 && ok3 && s > 0 && (u-l+s-1)/s > LongRow {
			return true
		}
	}
	return false
}

// vectorBlock returns the threads per row for a block-per-row plan whose
// row loops do not split into vector steps at r.threads: the most threads,
// in whole warps and fewer than r.threads, at which every row loop takes
// vector steps held in registers (RegisterRow elements a thread at most),
// else r.threads. A layer norm over 768 columns at 256 threads ran three
// scalar loops a row, each reading the row again; at 192 threads of 4 it
// holds the row in registers, read once in 16-byte accesses.
func (r *row) vectorBlock(order []*rowLoop) int64 {
	if r.vec <= 1 || r.vectorized(order, r.threads) {
		return r.threads
	}
	for t := r.threads - gpu.WarpSize; t >= gpu.WarpSize; t -= gpu.WarpSize {
		if r.vectorized(order, t) {
			return t
		}
	}
	return r.threads
}

// vectorized reports whether every row loop takes vector steps held in
// registers with threads threads a row.
func (r *row) vectorized(order []*rowLoop, threads int64) bool {
	saved := r.threads
	defer func() { r.threads = saved }()
	r.threads = threads
	for _, rl := range order {
		lb, ub, step := rowBounds(rl)
		if v := r.loopVector(rl, lb, ub, step); v <= 1 || r.registerSteps(lb, ub, v) == 0 {
			return false
		}
	}
	return true
}

// rowBounds returns a row loop's bounds (a loop.for's, or a 1-D
// loop.parallel's).
func rowBounds(rl *rowLoop) (lb, ub, step *ir.Value) {
	if rl.op.Name() == loop.ForOp {
		return loop.ForBounds(rl.op)
	}
	lbs, ubs, steps, _, _ := loop.ParallelBounds(rl.op)
	return lbs[0], ubs[0], steps[0]
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
		lb, ub, step := rowBounds(rl)
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
// (readsColumns) for which the nest runs a thread a point (the pointwise
// mapping) rather than a lane of a warp per point: a grid of that many
// threads fills the device.
const ColumnThreads = 8192

// ColumnWarps is the warps of a block of the column mapping (the row
// mapping's cols: WarpSize points a block, each point's loops shared by a
// lane of every warp; see columnWarps). The second half of a split bias
// gradient (512 partial rows of 768 columns) takes 32 warps of 16 rows
// each: a warp per point had each lane load a sector of its own, rows
// apart.
const ColumnWarps = 32

// ColumnBlocks is the fewest blocks of the column mapping: a nest of
// fewer columns keeps a warp (or a block) a column, more of the device
// busy (ResNet-50's statistics of 64 and 256 channels).
const ColumnBlocks = 16

// columnWarps returns the warps of a column-mapped block, ColumnWarps, or
// 0 (no column mapping) when some loop is dynamic, shorter than
// ColumnWarps·8 iterations or longer than ColumnWarps·RegisterRow.
// Measured on the H200 (session 17 call 2): GPT-2's second halves (512
// partial rows of 768, 256 of 2304 and 3072) at 32 warps ran faster than
// a warp a column (0.0177 against 0.0184 ms for the [8192, 768] sum in
// f32; c_attn's 12 biases 0.096 → 0.070 ms), ResNet-50's statistics of
// 512–2048 channels at 8 warps (64–127 partial rows) slower (one kernel's
// 5 launches 0.035 → 0.063 ms), at 32 warps as before within noise.
// Longer loops keep few points running long on few blocks (ResNet-50's
// channels-last statistics: 4096 partial rows of 64 channels).
func columnWarps(order []*rowLoop) int64 {
	for _, rl := range order {
		lb, ub, step := rowBounds(rl)
		l, ok1 := staticInt(lb)
		u, ok2 := staticInt(ub)
		s, ok3 := staticInt(step)
		if !ok1 || !ok2 || !ok3 || s <= 0 {
			return 0
		}
		if n := (u - l + s - 1) / s; n < ColumnWarps*8 || n > ColumnWarps*RegisterRow {
			return 0
		}
	}
	return ColumnWarps
}

// readsColumns returns the static points of nest and whether its row
// loops read columns: every load that moves with a loop's induction
// variable moves by more than one element a step, while a step of the
// nest's innermost induction variable moves it by one (or not at all: a
// value of the row), and some load moves so.
// The first half of a split bias gradient ([P, Q, C] summed over Q) is
// such a nest, and so is its second half ([P, C] summed over P). A warp a
// point would have its lanes load rows apart, a sector a lane (0.045 ms
// for 25 MB on the H200, an eighth of its bandwidth): with ColumnThreads
// points or more a thread a point loads adjacent columns in adjacent
// lanes, with fewer a lane a point (the row mapping's cols). The steps are
// measured by evaluating the loads' indices (views lower to divisions and
// remainders of a linear index) at a point of the nest and one step away;
// an index that is not integer arithmetic of constants and induction
// variables keeps the row mapping.
func readsColumns(nest *ir.Operation, loops []*rowLoop) (int64, bool) {
	lbs, ubs, steps, _, _ := loop.ParallelBounds(nest)
	ivs := loop.Body(nest).Arguments()
	if len(ivs) == 0 || len(ivs) != len(lbs) {
		return 0, false
	}
	points := int64(1)
	base := map[*ir.Value]int64{}
	for i := range lbs {
		l, ok1 := staticInt(lbs[i])
		u, ok2 := staticInt(ubs[i])
		s, ok3 := staticInt(steps[i])
		if !ok1 || !ok2 || !ok3 || s != 1 || u-l < 2 {
			return 0, false
		}
		points *= u - l
		base[ivs[i]] = l + (u-l)/2 // away from the edges a pad or slice has
	}
	inner := ivs[len(ivs)-1]
	columns := false
	for _, rl := range loops {
		args := loop.Body(rl.op).Arguments()
		if len(args) == 0 {
			return points, false
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
			case oc == o0:
				// The same element for every column: a per-row value (a
				// layer norm's mean and variance in its parameters'
				// gradient), one broadcast load for a warp of columns.
			case oc-o0 == 1 && (oq-o0 > 1 || oq-o0 < -1):
				columns = true
			default:
				rows = true
			}
			return true
		})
		if rows {
			return points, false
		}
	}
	return points, columns
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
