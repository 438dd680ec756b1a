package cpu

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// matmulBlock returns the register block of a matmul kernel for vector
// registers of vectorBytes: MR rows of C by NV vectors of columns. With
// AVX-512 (32 registers) 6 × 4: 24 accumulators, four vectors of B and a
// broadcast of A, 10 loads for 24 FMAs (BLIS's sgemm block on Zen 4, the
// transpose of its 64 × 6). On this development machine's Zen 5 (two
// 512-bit FMA pipes) one core ran the 1024³ matmul in 9.8–10.4 ms with it
// against 11.5–11.8 with the 24 × 1 block used before (each element of A
// a {1to16} memory operand of one FMA: 25 loads for 24 FMAs), and the
// MLP of bench/cpu in 23.5–24.6 ms against 25.2–26.7; 12 × 2 (BLIS's
// Skylake-X block), 4 × 4 and 5 × 5 came within a few percent of 6 × 4. llvm-mca's models
// do not tell these apart on Intel (its Sapphire Rapids model has one
// 512-bit FMA pipe). A small MR also wastes less on short matrices (rows
// past M are computed and dropped). With 16 registers (AVX2) 6 × 2: 12
// accumulators, two vectors of B and a broadcast.
func matmulBlock(vectorBytes int) (mr, nv int) {
	if vectorBytes >= 64 {
		return 6, 4
	}
	return 6, 2
}

// MatmulBlockEnv names the environment variable that overrides the
// matmul kernels' register block, as "MRxNV" (MR rows of C by NV vectors
// of columns: 12x2 is the block with separate broadcasts that CPUs with
// two 512-bit FMA pipes may prefer to 24x1). The block is part of the
// LLVM IR, so the compile cache keeps the libraries of each apart.
const MatmulBlockEnv = "STRATA_CPU_MATMUL_BLOCK"

// blockFromEnv returns the register block that $STRATA_CPU_MATMUL_BLOCK
// asks for, the default one for vectorBytes when it is unset, and an
// error when it is malformed or needs more than the target's vector
// registers (32 with AVX-512, 16 otherwise): MR·NV accumulators, NV
// vectors of B and, when NV > 1, a broadcast of A.
func blockFromEnv(vectorBytes int) (mr, nv int, err error) {
	mr, nv = matmulBlock(vectorBytes)
	s := os.Getenv(MatmulBlockEnv)
	if s == "" {
		return mr, nv, nil
	}
	regs := 16
	if vectorBytes >= 64 {
		regs = 32
	}
	r, v, ok := strings.Cut(s, "x")
	a, errA := strconv.Atoi(r)
	b, errB := strconv.Atoi(v)
	need := a*b + b
	if b > 1 {
		need++
	}
	if !ok || errA != nil || errB != nil || a < 1 || b < 1 || need > regs {
		return 0, 0, fmt.Errorf("cpu target: %s=%q: want MRxNV (such as 12x2) with MR·NV + NV (+1 when NV > 1) at most the %d vector registers", MatmulBlockEnv, s, regs)
	}
	return a, b, nil
}

// mmMatch is a matmul nest: loop.parallel (batch…, i, j) from 0 by 1,
// whose body holds one loop.for k from 0 by 1 to K carrying acc = acc +
// A[…] · B[…] in f32 or f64, and an epilogue of straight-line ops on its
// result that stores C[batch…, i, j]. A is indexed [batch…, i, k] or,
// transposed, [batch…, k, i]; B [batch…, k, j] or [batch…, j, k]; each
// with all the batch indices or none (at least one of them with).
type mmMatch struct {
	nest, forOp *ir.Operation
	a, b        *ir.Value // the buffers
	aIdx, bIdx  []*ir.Value
	i, j, kIV   *ir.Value
	// batch are the leading induction variables of the nest; fold is set
	// when B has no batch indices: the batches then fold into A's rows
	// (one matmul of batch·M rows, B packed once).
	batch          []*ir.Value
	fold           bool
	aTrans, bTrans bool
	// aFrom and bFrom are the operands' element types: elem's, or a
	// narrower float type the body widens (f16, bf16; f32 for f64).
	aFrom, bFrom ir.Type
	elem         types.Type
	// vl is the number of elements of a vector register; mr × nv vectors
	// the register block.
	vl, mr, nv int
	// dot is set for a product that stays on the generic path as dot
	// products (see MatmulDotRows); the other fields but the operands are
	// then unset.
	dot bool
}

// Cols returns NR, the columns of a matmul kernel's register block.
func (m *mmMatch) cols() int { return m.vl * m.nv }

func isConst(v *ir.Value, want int64) bool {
	def := v.DefiningOp()
	if def == nil || def.Name() != "arith.constant" {
		return false
	}
	a, ok := def.Attr("value").(ir.IntegerAttr)
	return ok && a.Value == want
}

// matchMatmul recognises a matmul nest, or returns nil.
func (t *translator) matchMatmul(nest *ir.Operation) *mmMatch {
	lbs, ubs, steps, _, err := loop.ParallelBounds(nest)
	if err != nil || len(lbs) < 2 {
		return nil
	}
	for d := range len(lbs) {
		if !isConst(lbs[d], 0) || !isConst(steps[d], 1) {
			return nil
		}
	}
	body := loop.Body(nest)
	var forOp *ir.Operation
	loops := 0
	body.ParentOp().Walk(func(op *ir.Operation) bool {
		switch op.Name() {
		case loop.ForOp, loop.ParallelOp, loop.IfOp:
			if op != nest {
				loops++
				forOp = op
			}
		}
		return true
	})
	if loops != 1 || forOp.Name() != loop.ForOp || forOp.Block() != body || forOp.NumResults() != 1 {
		return nil
	}
	lb, ub, step := loop.ForBounds(forOp)
	if !isConst(lb, 0) || !isConst(step, 1) {
		return nil
	}
	if def := ub.DefiningOp(); def != nil && def.Name() != "arith.constant" && def.IsAncestor(nest) {
		return nil // K must be known to the host
	}
	if init := loop.ForInits(forOp)[0]; inside(init, nest) && (init.DefiningOp() == nil || init.DefiningOp().Name() != "arith.constant") {
		return nil
	}
	var elem types.Type
	switch forOp.Result(0).Type() {
	case ir.F32:
		elem = types.Float
	case ir.F64:
		elem = types.Double
	default:
		return nil
	}
	fb := loop.Body(forOp)
	ops := fb.Ops()
	if len(ops) < 5 || len(ops) > 7 {
		return nil
	}
	kIV, acc := fb.Argument(0), fb.Argument(1)
	n := len(lbs)
	m := &mmMatch{nest: nest, forOp: forOp, batch: body.Arguments()[:n-2], i: body.Argument(n - 2), j: body.Argument(n - 1), kIV: kIV, elem: elem}
	var mul, add *ir.Operation
	for _, op := range ops[:len(ops)-1] {
		switch op.Name() {
		case loop.LoadOp, "arith.extf":
		case "arith.mulf":
			mul = op
		case "arith.addf":
			add = op
		default:
			return nil
		}
	}
	yield := ops[len(ops)-1]
	if mul == nil || add == nil || yield.Name() != loop.YieldOp || yield.Operand(0) != add.Result(0) {
		return nil
	}
	if !(add.Operand(0) == acc && add.Operand(1) == mul.Result(0) || add.Operand(1) == acc && add.Operand(0) == mul.Result(0)) {
		return nil
	}
	// Each factor is a load of the body, widened by an extf or not.
	var loads []*ir.Operation
	for _, v := range mul.Operands() {
		def := v.DefiningOp()
		if def != nil && def.Name() == "arith.extf" && def.Block() == fb {
			def = def.Operand(0).DefiningOp()
		}
		if def == nil || def.Name() != loop.LoadOp || def.Block() != fb {
			return nil
		}
		loads = append(loads, def)
	}
	if len(loads) != 2 || loads[0] == loads[1] || len(ops) != 5+countExt(mul) {
		return nil
	}
	// A dimension of extent 1 is indexed by the constant 0 rather than its
	// induction variable (a matrix-vector product's one row, a batch of
	// one): read as the variable, which is 0 there.
	oneRow := isConst(ubs[n-2], 1)
	aBatched, bBatched := false, false
	for _, ld := range loads {
		from := ld.Operand(0).Type().(*ir.MemRefType).ElementType()
		if inside(ld.Operand(0), nest) || !widens(from, forOp.Result(0).Type()) {
			return nil
		}
		idx := slices.Clone(ld.Operands()[1:])
		batched := len(idx) == len(m.batch)+2 && len(m.batch) > 0
		if !batched && len(idx) != 2 {
			return nil
		}
		for d, v := range idx[:len(idx)-2] {
			if v != m.batch[d] && !(isConst(v, 0) && isConst(ubs[d], 1)) {
				return nil
			}
			idx[d] = m.batch[d]
		}
		x, y := idx[len(idx)-2], idx[len(idx)-1]
		if oneRow && isConst(x, 0) {
			x = m.i
		}
		if oneRow && isConst(y, 0) {
			y = m.i
		}
		idx[len(idx)-2], idx[len(idx)-1] = x, y
		switch {
		case m.a == nil && (x == m.i && y == kIV || x == kIV && y == m.i):
			m.a, m.aIdx, m.aTrans, aBatched, m.aFrom = ld.Operand(0), idx, x == kIV, batched, from
		case m.b == nil && (x == kIV && y == m.j || x == m.j && y == kIV):
			m.b, m.bIdx, m.bTrans, bBatched, m.bFrom = ld.Operand(0), idx, x == m.j, batched, from
		default:
			return nil
		}
	}
	if m.a == nil || m.b == nil || len(m.batch) > 0 && !aBatched && !bBatched {
		return nil
	}
	m.fold = len(m.batch) > 0 && !bBatched
	rows, static := staticRows(m)
	if m.bTrans && static && rows <= MatmulDotRows {
		m.dot = true // the generic path, over every element of C
		return m
	}
	m.vl = t.vectorBytes / 4
	if elem == types.Double {
		m.vl = t.vectorBytes / 8
	}
	m.mr, m.nv = t.mr, t.nv
	if static && rows == 1 && !t.blockSet {
		m.mr, m.nv = 1, oneRowVectors(t.vectorBytes)
	}
	return m
}

// oneRowVectors is the register block's width, in vectors, for a product
// of one row (a matrix-vector product; B read in place, see direct): 1 ×
// 8 with AVX-512, 1 × 7 with AVX2's 16 registers. Each step of k then
// reads 8 consecutive cache lines of B's row, where the 6 × 4 block
// read 4 and computed 6 rows for one: bench/cpu's gemv (1×4096 ·
// 4096×4096 + bias) on this development machine's two cores took
// 2.6–3.0 CPU-ms a call against 3.9–4.1, median 2.3–2.5 ms against
// 3.6–3.8 (alternated three times; 1 × 4 and 1 × 12 in between).
func oneRowVectors(vectorBytes int) int {
	if vectorBytes >= 64 {
		return 8
	}
	return 7
}

// MatmulDotRows is the most rows (each batch's, or all of them when the
// batches fold into the rows) of a product with B transposed that stays
// on the generic path: a flat kernel (Kernel.Flat) whose points are the
// columns of C, each the dot products along k of its row of B (read once,
// then from the cache) with every row of A, where the blocked kernel's
// pack copies B. On this development machine's Zen 5, two cores, x·Wᵀ
// with W 4096×4096 (minimum of 10 calls, twice): 4 rows 3.5–4.3 ms, 8
// rows 5.1–5.4, 16 rows 8.3–8.6 against 15.3–19.3 blocked (B packed by
// squares), 32 rows 13.3–25.3 against 22.7–41.8; 64 rows of K = 1024
// 9.8–11.8 against 3.0–3.4 blocked.
const MatmulDotRows = 16

// staticRows returns the matmul's row count (each batch's, or all of them
// when the batches fold into the rows) when it is a constant.
func staticRows(m *mmMatch) (int64, bool) {
	_, ubs, _, _, err := loop.ParallelBounds(m.nest)
	if err != nil {
		return 0, false
	}
	dims := ubs[len(m.batch) : len(m.batch)+1]
	if m.fold {
		dims = ubs[:len(m.batch)+1]
	}
	rows := int64(1)
	for _, ub := range dims {
		def := ub.DefiningOp()
		if def == nil || def.Name() != "arith.constant" {
			return 0, false
		}
		a, ok := def.Attr("value").(ir.IntegerAttr)
		if !ok || a.Value < 0 {
			return 0, false
		}
		rows = satMul(rows, a.Value)
	}
	return rows, true
}

// countExt counts the extf ops among mul's operands.
func countExt(mul *ir.Operation) int {
	n := 0
	for _, v := range mul.Operands() {
		if def := v.DefiningOp(); def != nil && def.Name() == "arith.extf" {
			n++
		}
	}
	return n
}

// widens reports whether elements of type from reach an accumulator of
// type to: the same type, or an extf the packing does.
func widens(from, to ir.Type) bool {
	switch from {
	case to:
		return true
	case ir.F16, ir.BF16:
		return to == ir.F32
	case ir.F32:
		return to == ir.F64
	}
	return false
}

// widen converts a loaded element of type from to the kernel's type.
func (k *kt) widen(v value.Value, from ir.Type, to types.Type) value.Value {
	switch from {
	case ir.BF16:
		return k.cur.NewBitCast(k.cur.NewShl(k.cur.NewZExt(v, types.I32), constant.NewInt(types.I32, 16)), types.Float)
	case ir.F16:
		return k.cur.NewFPExt(v, types.Float)
	case ir.F32:
		if types.Equal(to, types.Double) {
			return k.cur.NewFPExt(v, types.Double)
		}
	}
	return v
}

// splat returns a vector of n copies of x.
func (k *kt) splat(x value.Value, n int) value.Value {
	vt := types.NewVector(uint64(n), x.Type())
	ins := k.cur.NewInsertElement(constant.NewUndef(vt), x, constant.NewInt(types.I32, 0))
	return k.cur.NewShuffleVector(ins, constant.NewUndef(vt), constant.NewZeroInitializer(types.NewVector(uint64(n), types.I32)))
}

// mmSizes are a matmul kernel's sizes as i64 values: nb separate
// batches (1 when they fold into the rows), M rows a batch, N columns, K,
// and the P panels, R row blocks and scratch elements a batch.
type mmSizes struct {
	nb, rows, n, kk, panels, blocks, perBatch value.Value
}

func (k *kt) matmulSizes(m *mmMatch) mmSizes {
	_, ubs, _, _, _ := loop.ParallelBounds(m.nest)
	_, ub, _ := loop.ForBounds(m.forOp)
	var s mmSizes
	s.kk = k.get(ub)
	if s.kk == nil { // a constant of the nest's body
		_ = k.constant(ub.DefiningOp())
		s.kk = k.get(ub)
	}
	var nb value.Value = i64(1)
	for d := range m.batch {
		nb = k.cur.NewMul(nb, k.get(ubs[d]))
	}
	s.rows, s.nb = k.get(ubs[len(m.batch)]), nb
	if m.fold {
		s.rows, s.nb = k.cur.NewMul(nb, s.rows), i64(1)
	}
	s.n = k.get(ubs[len(ubs)-1])
	nr, mr := int64(m.cols()), int64(m.mr)
	s.panels = k.cur.NewSDiv(k.cur.NewAdd(s.n, i64(nr-1)), i64(nr))
	s.blocks = k.cur.NewSDiv(k.cur.NewAdd(s.rows, i64(mr-1)), i64(mr))
	s.perBatch = k.cur.NewMul(k.cur.NewAdd(k.cur.NewMul(s.panels, i64(nr)), k.cur.NewMul(s.blocks, i64(mr))), s.kk)
	return s
}

// MatmulDirectBlocks is the most row blocks a batch for which the matmul
// kernels read B's full panels in place (see direct).
const MatmulDirectBlocks = 16

// direct reports whether the kernels read B's full panels in place rather
// than packed: when a batch has at most MatmulDirectBlocks row blocks (a
// matrix-vector product, a few rows of decoding, a short sequence), the
// pack's read of B, its write of the panels and the kernel's reads of
// them cost more than the kernel's strided reads of B, which the row
// blocks of a run share through the cache. On this development
// machine's Zen 5, one core, alternated three times: 24 × 4096 · 4096 ×
// 4096 took 8.4–12.0 ms in place against 13.6–19.9 packed, 48 rows
// 13.5–16.9 against 21.5–27.7, 96 rows 26.7–31.3 against 36.0–39.9;
// the 1024³ matmul (171 row blocks) the same either way and the MLP of
// bench/cpu (43) faster in place, but those stay packed: B's rows a
// multiple of 4 KiB apart share L1 sets, which Intel's L1 may take worse
// (unmeasured). B must be indexed [b…, k, j] (j innermost, so a panel's
// rows are NR consecutive elements) and hold the accumulator's type (no
// widening). The returned condition is the run-time part.
func (k *kt) direct(m *mmMatch, s mmSizes) value.Value {
	if m.bTrans || !sameFloat(m.bFrom, m.elem) {
		return nil
	}
	return k.cur.NewICmp(enum.IPredSLE, s.blocks, i64(MatmulDirectBlocks))
}

// sameFloat reports whether an element of type from needs no widening to
// the kernel's type to.
func sameFloat(from ir.Type, to types.Type) bool {
	return from == ir.F32 && types.Equal(to, types.Float) || from == ir.F64 && types.Equal(to, types.Double)
}

// setBatch binds the batch induction variables to the flattened batch
// bb (row-major).
func (k *kt) setBatch(m *mmMatch, bb value.Value) {
	_, ubs, _, _, _ := loop.ParallelBounds(m.nest)
	for d := len(m.batch) - 1; d >= 0; d-- {
		if d == 0 {
			k.vals[m.batch[d]] = bb
			break
		}
		k.vals[m.batch[d]] = k.cur.NewSRem(bb, k.get(ubs[d]))
		bb = k.cur.NewSDiv(bb, k.get(ubs[d]))
	}
}

// setRow binds i (and, when the batches fold into the rows, the batch
// induction variables) to the row.
func (k *kt) setRow(m *mmMatch, row value.Value) {
	if !m.fold {
		k.vals[m.i] = row
		return
	}
	_, ubs, _, _, _ := loop.ParallelBounds(m.nest)
	rows := k.get(ubs[len(m.batch)])
	k.setBatch(m, k.cur.NewSDiv(row, rows))
	k.vals[m.i] = k.cur.NewSRem(row, rows)
}

// MatmulPackK is how many steps of k one item of a matmul's pack kernel
// copies, of B and of A, so that every item moves about as many bytes
// (with items of whole panels and whole row blocks, the split of the
// pack among the cores ended unevenly when M and N differ).
const MatmulPackK = 16

// pack emits the pack kernel: items [lo, hi) of nb × ⌈K / MatmulPackK⌉,
// for each batch its blocks of MatmulPackK steps of k, each filling
// those steps of every panel of B and every row block of A. Panel p is K
// rows of NR consecutive columns of B (zero past N), contiguous at
// p·K·NR in the batch's part of scratch; row block b is MR rows of A
// (past M: the last row again), k-major at P·K·NR + b·K·MR, so that the
// micro-kernel reads its MR elements of a k together. A B indexed
// [b…, k, j] is copied a row of k at a time across its panels, reading
// each row front to back (panel by panel, one row's 64 bytes lie a page
// from the next row's once N ≥ 1024, which the hardware prefetcher does
// not follow); an operand whose elements are contiguous along k (A, or B
// transposed) a cache line of k at a time for each row or column, so that
// rows a page apart (one L1 set) are each read once.
func (k *kt) pack(m *mmMatch, scratch, lo, hi value.Value) error {
	s := k.matmulSizes(m)
	nr, mr := int64(m.cols()), int64(m.mr)
	items := k.cur.NewSDiv(k.cur.NewAdd(s.kk, i64(MatmulPackK-1)), i64(MatmulPackK))
	mLast := k.cur.NewSub(s.rows, i64(1))
	line := 64 / elemBytes(m.elem)
	zero := constant.NewFloat(m.elem.(*types.FloatType), 0)
	_, err := k.loop(lo, hi, i64(1), nil, vecAny, func(item value.Value, _ []value.Value) ([]value.Value, error) {
		bb := k.cur.NewSDiv(item, items)
		it := k.cur.NewSRem(item, items)
		if !m.fold {
			k.setBatch(m, bb)
		}
		base := k.cur.NewGetElementPtr(m.elem, scratch, k.cur.NewMul(bb, s.perBatch))
		k0 := k.cur.NewMul(it, i64(MatmulPackK))
		var k1 value.Value = k.cur.NewAdd(k0, i64(MatmulPackK))
		k1 = k.cur.NewSelect(k.cur.NewICmp(enum.IPredSLT, k1, s.kk), k1, s.kk)
		panelAt := func(p value.Value) value.Value {
			return k.cur.NewGetElementPtr(m.elem, base, k.cur.NewMul(k.cur.NewMul(p, s.kk), i64(nr)))
		}
		if m.bTrans {
			_, err := k.loop(i64(0), s.panels, i64(1), nil, vecAny, func(p value.Value, _ []value.Value) ([]value.Value, error) {
				j0 := k.cur.NewMul(p, i64(nr))
				ncols := k.cur.NewSub(s.n, j0)
				var join *llir.Block
				if transposable(m) {
					// A full panel and a whole item of k: vector
					// transposes; else element by element below.
					fast, slow := k.newBlock("transpose"), k.newBlock("elementwise")
					join = k.newBlock("packed")
					whole := k.cur.NewAnd(k.cur.NewICmp(enum.IPredSGE, ncols, i64(nr)),
						k.cur.NewICmp(enum.IPredEQ, k.cur.NewSub(k1, k0), i64(MatmulPackK)))
					k.cur.NewCondBr(whole, fast, slow)
					k.cur = fast
					if err := k.packTransposed(m, panelAt(p), j0, k0); err != nil {
						return nil, err
					}
					k.cur.NewBr(join)
					k.enter(slow)
				}
				err := k.packAlongK(m, m.b, m.bFrom, m.bIdx, panelAt(p), nr, k0, k1, line, func(c value.Value) value.Value {
					in := k.cur.NewICmp(enum.IPredSLT, c, ncols)
					k.vals[m.j] = k.cur.NewSelect(in, k.cur.NewAdd(j0, c), i64(0))
					return in
				}, zero)
				if err != nil || join == nil {
					return nil, err
				}
				k.cur.NewBr(join)
				k.enter(join)
				return nil, nil
			})
			if err != nil {
				return nil, err
			}
		} else {
			// copyRows copies rows [k0, k1) of panel p; tail pads the
			// columns past N with zeros.
			copyRows := func(p value.Value, tail bool) error {
				panel := panelAt(p)
				j0 := k.cur.NewMul(p, i64(nr))
				ncols := k.cur.NewSub(s.n, j0)
				_, err := k.loop(k0, k1, i64(1), nil, vecAny, func(kv value.Value, _ []value.Value) ([]value.Value, error) {
					k.vals[m.kIV], k.vals[m.j] = kv, j0
					src, elem, err := k.address(m.b, m.bIdx)
					if err != nil {
						return nil, err
					}
					row := k.cur.NewMul(kv, i64(nr))
					_, err = k.loop(i64(0), i64(nr), i64(1), nil, vecOn, func(c value.Value, _ []value.Value) ([]value.Value, error) {
						dst := k.cur.NewGetElementPtr(m.elem, panel, k.cur.NewAdd(row, c))
						dst.InBounds = true
						if !tail {
							at := k.cur.NewGetElementPtr(elem, src, c)
							at.InBounds = true
							k.cur.NewStore(k.widen(k.cur.NewLoad(elem, at), m.bFrom, m.elem), dst)
							return nil, nil
						}
						in := k.cur.NewICmp(enum.IPredSLT, c, ncols)
						at := k.cur.NewGetElementPtr(elem, src, k.cur.NewSelect(in, c, i64(0)))
						k.cur.NewStore(k.cur.NewSelect(in, k.widen(k.cur.NewLoad(elem, at), m.bFrom, m.elem), zero), dst)
						return nil, nil
					})
					return nil, err
				})
				return err
			}
			// The panels of NR columns, then the last, partial one.
			whole := k.cur.NewSDiv(s.n, i64(nr))
			// Read in place by the kernel (see direct): only the partial
			// panel is packed.
			var packed value.Value = whole
			if d := k.direct(m, s); d != nil {
				packed = k.cur.NewSelect(d, i64(0), whole)
			}
			if _, err := k.loop(i64(0), packed, i64(1), nil, vecAny, func(p value.Value, _ []value.Value) ([]value.Value, error) {
				return nil, copyRows(p, false)
			}); err != nil {
				return nil, err
			}
			part, after := k.newBlock("part"), k.newBlock("parted")
			k.cur.NewCondBr(k.cur.NewICmp(enum.IPredSLT, whole, s.panels), part, after)
			k.cur = part
			if err := copyRows(whole, true); err != nil {
				return nil, err
			}
			k.cur.NewBr(after)
			k.enter(after)
		}
		// Then the same steps of k of every row block of A.
		aStart := k.cur.NewMul(k.cur.NewMul(s.panels, s.kk), i64(nr))
		_, err := k.loop(i64(0), s.blocks, i64(1), nil, vecAny, func(b value.Value, _ []value.Value) ([]value.Value, error) {
			ablock := k.cur.NewGetElementPtr(m.elem, base, k.cur.NewAdd(aStart, k.cur.NewMul(k.cur.NewMul(b, s.kk), i64(mr))))
			rowOf := func(r value.Value) {
				row := k.cur.NewAdd(k.cur.NewMul(b, i64(mr)), r)
				k.setRow(m, k.cur.NewSelect(k.cur.NewICmp(enum.IPredSLT, row, mLast), row, mLast))
			}
			if !m.aTrans {
				return nil, k.packAlongK(m, m.a, m.aFrom, m.aIdx, ablock, mr, k0, k1, line, func(r value.Value) value.Value {
					rowOf(r)
					return nil
				}, zero)
			}
			// A[…, k, i]: the MR rows of a k are (mostly) consecutive.
			_, err := k.loop(k0, k1, i64(1), nil, vecAny, func(kv value.Value, _ []value.Value) ([]value.Value, error) {
				_, err := k.loop(i64(0), i64(mr), i64(1), nil, vecAny, func(r value.Value, _ []value.Value) ([]value.Value, error) {
					rowOf(r)
					k.vals[m.kIV] = kv
					src, elem, err := k.address(m.a, m.aIdx)
					if err != nil {
						return nil, err
					}
					dst := k.cur.NewGetElementPtr(m.elem, ablock, k.cur.NewAdd(k.cur.NewMul(kv, i64(mr)), r))
					dst.InBounds = true
					k.cur.NewStore(k.widen(k.cur.NewLoad(elem, src), m.aFrom, m.elem), dst)
					return nil, nil
				})
				return nil, err
			})
			return nil, err
		})
		return nil, err
	})
	return err
}

// transposable reports whether packTransposed can pack a transposed B:
// elements of the kernel's type (no widening) and items of k a multiple
// of the vector length, a power of two.
func transposable(m *mmMatch) bool {
	return sameFloat(m.bFrom, m.elem) && m.vl >= 2 && m.vl&(m.vl-1) == 0 && MatmulPackK%m.vl == 0
}

// packTransposed packs steps [k0, k0+MatmulPackK) of the full panel at
// columns [j0, j0+NR) of a transposed B (B[b…, j, k]: each column's k
// contiguous) into dst[k·NR + c]: for each vl × vl square, vl vector
// loads along k, a transpose in log2(vl) rounds of two-input shuffles
// (round r swaps bit r of the column with bit r of the step) and vl
// vector stores along the columns, where the element-by-element copy
// (packAlongK) stores every element on its own. On one core of this
// development machine's Zen 5 (minimum of 20 calls, alternated three
// times): 16×4096 · (4096×4096)ᵀ 22.4–26.2 ms → 16.3–17.0, 64×1024 ·
// (4096×1024)ᵀ 6.7–7.7 → 5.3–5.9, 256×1024 · (4096×1024)ᵀ 14.8–15.4 →
// 12.4–13.3.
func (k *kt) packTransposed(m *mmMatch, dst, j0, k0 value.Value) error {
	vl, nr := m.vl, int64(m.cols())
	vt := types.NewVector(uint64(vl), m.elem)
	for g := range m.nv {
		for kc := 0; kc < MatmulPackK; kc += vl {
			rows := make([]value.Value, vl)
			for l := range vl {
				k.vals[m.j] = k.cur.NewAdd(j0, i64(int64(g*vl+l)))
				k.vals[m.kIV] = k.cur.NewAdd(k0, i64(int64(kc)))
				src, _, err := k.address(m.b, m.bIdx)
				if err != nil {
					return err
				}
				ld := k.cur.NewLoad(vt, k.cur.NewBitCast(src, types.NewPointer(vt)))
				ld.Align = llir.Align(elemBytes(m.elem))
				rows[l] = ld
			}
			for bit := 1; bit < vl; bit <<= 1 {
				next := make([]value.Value, vl)
				for r0 := range vl {
					if r0&bit != 0 {
						continue
					}
					r1 := r0 | bit
					lo, hi := make([]constant.Constant, vl), make([]constant.Constant, vl)
					for c := range vl {
						if c&bit == 0 {
							lo[c] = constant.NewInt(types.I32, int64(c))
							hi[c] = constant.NewInt(types.I32, int64(c+bit))
						} else {
							lo[c] = constant.NewInt(types.I32, int64(vl+c-bit))
							hi[c] = constant.NewInt(types.I32, int64(vl+c))
						}
					}
					mt := types.NewVector(uint64(vl), types.I32)
					next[r0] = k.cur.NewShuffleVector(rows[r0], rows[r1], constant.NewVector(mt, lo...))
					next[r1] = k.cur.NewShuffleVector(rows[r0], rows[r1], constant.NewVector(mt, hi...))
				}
				rows = next
			}
			for x := range vl {
				at := k.cur.NewGetElementPtr(m.elem, dst, k.cur.NewAdd(k.cur.NewMul(k.cur.NewAdd(k0, i64(int64(kc+x))), i64(nr)), i64(int64(g*vl))))
				at.InBounds = true
				st := k.cur.NewStore(rows[x], k.cur.NewBitCast(at, types.NewPointer(vt)))
				st.Align = llir.Align(elemBytes(m.elem))
			}
		}
	}
	return nil
}

// packAlongK packs steps [k0, k1) of an operand whose elements are
// contiguous along k into width interleaved lanes of dst (dst[k·width +
// lane]): a cache line of k at a time, for each lane, sets the induction
// variables of the lane (bind; it returns a condition that the lane is
// inside the operand, or nil for always) and copies that lane's run of k
// (zeros outside). The loops stay scalar: vectorized across the lanes
// they become gathers, which cost Zen 4 about four times the scalar
// loads' time.
func (k *kt) packAlongK(m *mmMatch, mem *ir.Value, from ir.Type, idx []*ir.Value, dst value.Value, width int64, k0, k1 value.Value, line int64, bind func(lane value.Value) value.Value, zero value.Value) error {
	_, err := k.loop(k0, k1, i64(line), nil, vecAny, func(kc value.Value, _ []value.Value) ([]value.Value, error) {
		left := k.cur.NewSub(k1, kc)
		kn := k.cur.NewSelect(k.cur.NewICmp(enum.IPredSLT, left, i64(line)), left, i64(line))
		_, err := k.loop(i64(0), i64(width), i64(1), nil, vecOff, func(lane value.Value, _ []value.Value) ([]value.Value, error) {
			in := bind(lane)
			k.vals[m.kIV] = kc
			src, elem, err := k.address(mem, idx)
			if err != nil {
				return nil, err
			}
			first := k.cur.NewAdd(k.cur.NewMul(kc, i64(width)), lane)
			_, err = k.loop(i64(0), kn, i64(1), nil, vecOff, func(x value.Value, _ []value.Value) ([]value.Value, error) {
				at := k.cur.NewGetElementPtr(elem, src, x)
				at.InBounds = true
				to := k.cur.NewGetElementPtr(m.elem, dst, k.cur.NewAdd(first, k.cur.NewMul(x, i64(width))))
				to.InBounds = true
				v := k.widen(k.cur.NewLoad(elem, at), from, m.elem)
				if in != nil {
					v = k.cur.NewSelect(in, v, zero)
				}
				k.cur.NewStore(v, to)
				return nil, nil
			})
			return nil, err
		})
		return nil, err
	})
	return err
}

// MatmulKC is the largest k block that the matmul kernels get by default
// (the runtime passes it; see Kernel and DefaultKC): a worker runs KC
// steps of k for every row block of a run sharing one panel before the
// next KC steps, so that the panel's KC × NR block stays in L1 while the
// row blocks' A blocks stream from L2 (BLIS's kc). The partial sums
// between blocks wait in scratch.
const MatmulKC = 256

// DefaultKC returns the k block for a kernel of cols columns (NR) of
// elements of elemBytes: the most steps, up to MatmulKC and at least 64,
// whose KC × NR block of the packed panel takes at most 32 KiB, two
// thirds of a 48 KiB L1 (Zen 4 and 5, Intel since Ice Lake). With
// AVX-512's 6 × 4 block (NR = 64 f32) that is 128: KC = 256 made the
// block 64 KiB, where k blocks of 128 and 256 measured the same on this
// development machine's Zen 5 (one and two workers, alternated four
// times); 24 × 1 and AVX2's 6 × 2 (NR = 16) keep 256.
func DefaultKC(cols, elemBytes int) int {
	kc := MatmulKC
	if cols > 0 && elemBytes > 0 {
		kc = min(kc, 32<<10/(cols*elemBytes))
	}
	return max(kc, 64)
}

// matmul emits the main kernel: for each (batch, panel of NR columns,
// block of MR rows) in [lo, hi) of their batch- and panel-major order,
// MR × NR accumulators in vector registers over k (A's elements
// broadcast, the packed panel's vectors loaded), stored to a tile on the
// stack, then the epilogue for each element of the tile inside C. A
// worker's consecutive items that share a panel (a run: the row blocks
// of one group) go through k together, MatmulKC steps at a time, each
// item's partial sums kept in its slot of scratch between the blocks
// (kc steps: the kernel's k-block parameter, at least 1).
// Each element's sum runs over k in order, as the loop level says (fused
// multiply-adds: `contract`), whatever the blocking.
func (k *kt) matmul(m *mmMatch, scratch, group, kc, lo, hi value.Value) error {
	s := k.matmulSizes(m)
	mSize, n, kk := s.rows, s.n, s.kk
	nr, vl := int64(m.cols()), m.vl
	MR, NV := m.mr, m.nv
	vt := types.NewVector(uint64(vl), m.elem)
	tile := k.cur.NewAlloca(types.NewArray(uint64(int64(MR)*nr), m.elem))
	tile.Align = 64
	tileBase := k.cur.NewGetElementPtr(tile.ElemType, tile, i64(0), i64(0))
	init := k.get(loop.ForInits(m.forOp)[0])
	if init == nil {
		if err := k.constant(loop.ForInits(m.forOp)[0].DefiningOp()); err != nil {
			return err
		}
		init = k.get(loop.ForInits(m.forOp)[0])
	}
	initVec := k.splat(init, vl)
	fma := k.t.intrinsic("llvm.fmuladd."+vecSuffix(vl, m.elem), vt, vt, vt, vt)
	body := loop.Body(m.nest)
	rowBlocks, panels := s.blocks, s.panels
	aStart := k.cur.NewMul(k.cur.NewMul(panels, kk), i64(nr))
	perBatch := k.cur.NewMul(panels, rowBlocks)
	// The items' partial sums, MR·NR elements an item, after the packed
	// operands of every batch.
	partials := k.cur.NewGetElementPtr(m.elem, scratch, k.cur.NewMul(s.nb, s.perBatch))
	kLimit := k.cur.NewSelect(k.cur.NewICmp(enum.IPredSGT, kk, i64(1)), kk, i64(1)) // K = 0 still runs the epilogue
	minI := func(a, b value.Value) value.Value {
		return k.cur.NewSelect(k.cur.NewICmp(enum.IPredSLT, a, b), a, b)
	}
	// One loop over [lo, hi) of the (batch, panel, row block) triples,
	// in groups of row blocks, panel-major within a group: a worker's range
	// covers a few panels, each over the group's row blocks, so its packed
	// panel stays in cache across them, and the group's A blocks across
	// the panels. The first item of each run in [lo, hi) runs the run.
	// decode returns item's batch, panel and row block, with its run's
	// start and end: the items of its group that share its panel.
	type place struct{ bb, p, ib, inRun, size value.Value }
	decode := func(item value.Value) place {
		bb := k.cur.NewSDiv(item, perBatch)
		rest := k.cur.NewSRem(item, perBatch)
		// Group g of G row blocks (all full but the last): its P·size
		// items, panel-major.
		full := k.cur.NewMul(panels, group)
		g := k.cur.NewSDiv(rest, full)
		r2 := k.cur.NewSub(rest, k.cur.NewMul(g, full))
		start := k.cur.NewMul(g, group)
		size := minI(k.cur.NewSub(rowBlocks, start), group)
		inRun := k.cur.NewSRem(r2, size)
		return place{bb: bb, p: k.cur.NewSDiv(r2, size), ib: k.cur.NewAdd(start, inRun), inRun: inRun, size: size}
	}
	direct := k.direct(m, s)
	_, err := k.loop(lo, hi, i64(1), nil, vecAny, func(item value.Value, _ []value.Value) ([]value.Value, error) {
		at := decode(item)
		var first value.Value = k.cur.NewOr(k.cur.NewICmp(enum.IPredEQ, item, lo), k.cur.NewICmp(enum.IPredEQ, at.inRun, i64(0)))
		if direct != nil {
			// B read in place: the k blocks outermost over the whole
			// range, so that a block's rows of B (a page apart each) are
			// read for every panel of the range while their pages are
			// in the TLB, rather than all K rows for one panel at a time.
			first = k.cur.NewSelect(direct, k.cur.NewICmp(enum.IPredEQ, item, lo), first)
		}
		runBlk, next := k.newBlock("run"), k.newBlock("next")
		k.cur.NewCondBr(first, runBlk, next)
		k.cur = runBlk
		var runEnd value.Value = minI(hi, k.cur.NewAdd(item, k.cur.NewSub(at.size, at.inRun)))
		if direct != nil {
			runEnd = k.cur.NewSelect(direct, hi, runEnd)
		}
		_, err := k.loop(i64(0), kLimit, kc, nil, vecAny, func(kb value.Value, _ []value.Value) ([]value.Value, error) {
			kEnd := minI(k.cur.NewAdd(kb, kc), kk)
			last := k.cur.NewICmp(enum.IPredSGE, kEnd, kk)
			fromStart := k.cur.NewICmp(enum.IPredEQ, kb, i64(0))
			_, err := k.loop(item, runEnd, i64(1), nil, vecAny, func(it value.Value, _ []value.Value) ([]value.Value, error) {
				at := decode(it)
				bb, p, ib := at.bb, at.p, at.ib
				bscratch := k.cur.NewGetElementPtr(m.elem, scratch, k.cur.NewMul(bb, s.perBatch))
				var panel value.Value = k.cur.NewGetElementPtr(m.elem, bscratch, k.cur.NewMul(k.cur.NewMul(p, kk), i64(nr)))
				j0 := k.cur.NewMul(p, i64(nr))
				ncols2 := minI(k.cur.NewSub(n, j0), i64(nr))
				// The panel's rows of k lie nr apart in scratch, or (a
				// full panel read in place, see direct) ldb apart in B
				// from B[b…, 0, j0].
				var stride value.Value = i64(nr)
				if direct != nil {
					full := k.cur.NewAnd(direct, k.cur.NewICmp(enum.IPredEQ, ncols2, i64(nr)))
					if !m.fold {
						k.setBatch(m, bb)
					}
					k.vals[m.kIV], k.vals[m.j] = i64(0), j0
					b0, _, err := k.address(m.b, m.bIdx)
					if err != nil {
						return nil, err
					}
					sizes := k.dims[m.b]
					panel = k.cur.NewSelect(full, b0, panel)
					stride = k.cur.NewSelect(full, sizes[len(sizes)-1], stride)
				}
				i0 := k.cur.NewMul(ib, i64(int64(MR)))
				ablock := k.cur.NewGetElementPtr(m.elem, bscratch, k.cur.NewAdd(aStart, k.cur.NewMul(k.cur.NewMul(ib, kk), i64(int64(MR)))))
				partial := k.cur.NewGetElementPtr(m.elem, partials, k.cur.NewMul(it, i64(int64(MR)*nr)))
				accAt := func(x int) value.Value {
					at := k.cur.NewGetElementPtr(m.elem, partial, i64(int64(x*vl)))
					return k.cur.NewBitCast(at, types.NewPointer(vt))
				}
				// The accumulators start at the init value, or at the
				// partial sums of the k blocks before.
				fresh, resume, join := k.newBlock("fresh"), k.newBlock("resume"), k.newBlock("acc")
				k.cur.NewCondBr(fromStart, fresh, resume)
				k.cur = fresh
				k.cur.NewBr(join)
				k.enter(resume)
				loaded := make([]value.Value, MR*NV)
				for x := range loaded {
					ld := k.cur.NewLoad(vt, accAt(x))
					ld.Align = llir.Align(elemBytes(m.elem))
					loaded[x] = ld
				}
				k.cur.NewBr(join)
				k.enter(join)
				inits := make([]value.Value, MR*NV)
				for x := range inits {
					inits[x] = k.cur.NewPhi(llir.NewIncoming(initVec, fresh), llir.NewIncoming(loaded[x], resume))
				}
				accs, err := k.loop(kb, kEnd, i64(1), inits, vecAny, func(kv value.Value, acc []value.Value) ([]value.Value, error) {
					bs := make([]value.Value, NV)
					for v := range NV {
						at := k.cur.NewGetElementPtr(m.elem, panel, k.cur.NewAdd(k.cur.NewMul(kv, stride), i64(int64(v*vl))))
						ld := k.cur.NewLoad(vt, k.cur.NewBitCast(at, types.NewPointer(vt)))
						ld.Align = llir.Align(elemBytes(m.elem))
						bs[v] = ld
					}
					next := make([]value.Value, len(acc))
					arow := k.cur.NewGetElementPtr(m.elem, ablock, k.cur.NewMul(kv, i64(int64(MR))))
					for r := range MR {
						ap := k.cur.NewGetElementPtr(m.elem, arow, i64(int64(r)))
						a := k.splat(k.cur.NewLoad(m.elem, ap), vl)
						for v := range NV {
							x := r*NV + v
							next[x] = k.cur.NewCall(fma, a, bs[v], acc[x])
						}
					}
					return next, nil
				})
				if err != nil {
					return nil, err
				}
				save, epilogue, done := k.newBlock("save"), k.newBlock("epilogue"), k.newBlock("done")
				k.cur.NewCondBr(last, epilogue, save)
				k.enter(save)
				for x, acc := range accs {
					st := k.cur.NewStore(acc, accAt(x))
					st.Align = llir.Align(elemBytes(m.elem))
				}
				k.cur.NewBr(done)
				k.enter(epilogue)
				for r := range MR {
					for v := range NV {
						at := k.cur.NewGetElementPtr(m.elem, tileBase, i64(int64(r)*nr+int64(v*vl)))
						st := k.cur.NewStore(accs[r*NV+v], k.cur.NewBitCast(at, types.NewPointer(vt)))
						st.Align = llir.Align(elemBytes(m.elem))
					}
				}
				// The epilogue, row by row of the tile: over MR × NR
				// (constant trip counts, so that each row is a few vector
				// operations) when the tile lies inside C, else over its
				// part inside.
				rows := minI(k.cur.NewSub(mSize, i0), i64(int64(MR)))
				emit := func(nrows, ncols value.Value) error {
					_, err := k.loop(i64(0), nrows, i64(1), nil, vecAny, func(r value.Value, _ []value.Value) ([]value.Value, error) {
						i := k.cur.NewAdd(i0, r)
						_, err := k.loop(i64(0), ncols, i64(1), nil, vecOn, func(c value.Value, _ []value.Value) ([]value.Value, error) {
							at := k.cur.NewGetElementPtr(m.elem, tileBase, k.cur.NewAdd(k.cur.NewMul(r, i64(nr)), c))
							k.vals[m.forOp.Result(0)] = k.cur.NewLoad(m.elem, at)
							if !m.fold {
								k.setBatch(m, bb)
							}
							k.setRow(m, i)
							k.vals[m.j] = k.cur.NewAdd(j0, c)
							for _, op := range body.Ops() {
								if op == m.forOp {
									continue
								}
								if op.Name() == loop.ReduceOp {
									break
								}
								if err := k.op(op); err != nil {
									if _, ok := err.(*ir.Diagnostic); ok {
										return nil, err
									}
									return nil, ir.Errorf(op.Loc(), "'%s': %v", op.Name(), err)
								}
							}
							return nil, nil
						})
						return nil, err
					})
					if err == nil {
						k.cur.NewBr(done)
					}
					return err
				}
				whole, part := k.newBlock("whole"), k.newBlock("part")
				inside := k.cur.NewAnd(k.cur.NewICmp(enum.IPredEQ, rows, i64(int64(MR))), k.cur.NewICmp(enum.IPredEQ, ncols2, i64(nr)))
				k.cur.NewCondBr(inside, whole, part)
				k.cur = whole
				if err := emit(i64(int64(MR)), i64(nr)); err != nil {
					return nil, err
				}
				k.enter(part)
				if err := emit(rows, ncols2); err != nil {
					return nil, err
				}
				k.enter(done)
				return nil, nil
			})
			return nil, err
		})
		if err != nil {
			return nil, err
		}
		k.cur.NewBr(next)
		k.enter(next)
		return nil, nil
	})
	return err
}

func elemBytes(t types.Type) int64 {
	if types.Equal(t, types.Double) {
		return 8
	}
	return 4
}

func vecSuffix(n int, elem types.Type) string {
	s := "f32"
	if types.Equal(elem, types.Double) {
		s = "f64"
	}
	return "v" + itoa(n) + s
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
