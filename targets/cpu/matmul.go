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

// matmulBlock returns the register block of a matmul kernel for vector
// registers of vectorBytes: MR rows of C by NV vectors of columns. With
// AVX-512 (32 registers) 24 × 1: each broadcast element of A feeds one
// FMA, so LLVM folds it into the FMA's memory operand ({1to16}) and the
// FP pipes run FMAs only (with 6 × 2, the broadcasts share them: llvm-mca
// gives 18 cycles for 12 FMAs on Zen 4). With 16 registers (AVX2) 6 × 2:
// 12 accumulators, two vectors of B and a broadcast.
func matmulBlock(vectorBytes int) (mr, nv int) {
	if vectorBytes >= 64 {
		return 24, 1
	}
	return 6, 2
}

// mmMatch is a matmul nest: loop.parallel (i, j) from 0 by 1, whose body
// holds one loop.for k from 0 by 1 to K carrying acc = acc + A[i, k] ·
// B[k, j] in f32 or f64, and an epilogue of straight-line ops on its
// result that stores C[i, j].
type mmMatch struct {
	nest, forOp *ir.Operation
	a, b        *ir.Value // the buffers
	i, j, kIV   *ir.Value
	// batch is the leading induction variable of a 3-D nest (A[b, i, k]
	// with a 2-D B: the batch folds into A's rows), nil for a 2-D one.
	batch *ir.Value
	elem  types.Type
	// vl is the number of elements of a vector register; mr × nv vectors
	// the register block.
	vl, mr, nv int
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
	lbs, _, steps, _, err := loop.ParallelBounds(nest)
	if err != nil || len(lbs) != 2 && len(lbs) != 3 {
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
	if len(ops) != 5 {
		return nil
	}
	kIV, acc := fb.Argument(0), fb.Argument(1)
	var batch *ir.Value
	if len(lbs) == 3 {
		batch = body.Argument(0)
	}
	i, j := body.Argument(len(lbs)-2), body.Argument(len(lbs)-1)
	var loads []*ir.Operation
	var mul, add *ir.Operation
	for _, op := range ops[:4] {
		switch op.Name() {
		case loop.LoadOp:
			loads = append(loads, op)
		case "arith.mulf":
			mul = op
		case "arith.addf":
			add = op
		default:
			return nil
		}
	}
	yield := ops[4]
	if len(loads) != 2 || mul == nil || add == nil || yield.Name() != loop.YieldOp || yield.Operand(0) != add.Result(0) {
		return nil
	}
	if !(add.Operand(0) == acc && add.Operand(1) == mul.Result(0) || add.Operand(1) == acc && add.Operand(0) == mul.Result(0)) {
		return nil
	}
	l0, l1 := loads[0].Result(0), loads[1].Result(0)
	if !(mul.Operand(0) == l0 && mul.Operand(1) == l1 || mul.Operand(0) == l1 && mul.Operand(1) == l0) {
		return nil
	}
	m := &mmMatch{nest: nest, forOp: forOp, batch: batch, i: i, j: j, kIV: kIV, elem: elem}
	for _, ld := range loads {
		if inside(ld.Operand(0), nest) || ld.Operand(0).Type().(*ir.MemRefType).ElementType() != forOp.Result(0).Type() {
			return nil
		}
		idx := ld.Operands()[1:]
		switch {
		case batch == nil && len(idx) == 2 && idx[0] == i && idx[1] == kIV && m.a == nil,
			batch != nil && len(idx) == 3 && idx[0] == batch && idx[1] == i && idx[2] == kIV && m.a == nil:
			m.a = ld.Operand(0)
		case len(idx) == 2 && idx[0] == kIV && idx[1] == j && m.b == nil:
			m.b = ld.Operand(0)
		default:
			return nil
		}
	}
	if m.a == nil || m.b == nil {
		return nil
	}
	m.vl = t.vectorBytes / 4
	if elem == types.Double {
		m.vl = t.vectorBytes / 8
	}
	m.mr, m.nv = matmulBlock(t.vectorBytes)
	return m
}

// splat returns a vector of n copies of x.
func (k *kt) splat(x value.Value, n int) value.Value {
	vt := types.NewVector(uint64(n), x.Type())
	ins := k.cur.NewInsertElement(constant.NewUndef(vt), x, constant.NewInt(types.I32, 0))
	return k.cur.NewShuffleVector(ins, constant.NewUndef(vt), constant.NewZeroInitializer(types.NewVector(uint64(n), types.I32)))
}

// matmulSizes returns M (rows of all batches), N and K as i64 values of
// the kernel.
func (k *kt) matmulSizes(m *mmMatch) (mm, nn, kk value.Value) {
	_, ubs, _, _, _ := loop.ParallelBounds(m.nest)
	_, ub, _ := loop.ForBounds(m.forOp)
	kk = k.get(ub)
	if kk == nil { // a constant of the nest's body
		_ = k.constant(ub.DefiningOp())
		kk = k.get(ub)
	}
	if m.batch != nil {
		return k.cur.NewMul(k.get(ubs[0]), k.get(ubs[1])), k.get(ubs[2]), kk
	}
	return k.get(ubs[0]), k.get(ubs[1]), kk
}

// setRow binds the nest's row induction variables (batch and i) to the
// flattened row.
func (k *kt) setRow(m *mmMatch, row value.Value) {
	if m.batch == nil {
		k.vals[m.i] = row
		return
	}
	_, ubs, _, _, _ := loop.ParallelBounds(m.nest)
	rows := k.get(ubs[1])
	k.vals[m.batch] = k.cur.NewSDiv(row, rows)
	k.vals[m.i] = k.cur.NewSRem(row, rows)
}

// aIndices are the indices of A's load.
func (m *mmMatch) aIndices() []*ir.Value {
	if m.batch != nil {
		return []*ir.Value{m.batch, m.i, m.kIV}
	}
	return []*ir.Value{m.i, m.kIV}
}

// pack emits the pack kernel: items [lo, hi) of the P panels of B, then
// the R row blocks of A. Panel p is K rows of NR consecutive columns
// (zero past N), contiguous in scratch at p·K·NR: each row a straight
// copy. Row block b is MR rows of A (past M: the last row again),
// k-major at P·K·NR + b·K·MR, so that the micro-kernel reads its MR
// elements of a k together; it is copied a cache line of k at a time
// for each row, so that rows a page apart (one L1 set) are each read
// once.
func (k *kt) pack(m *mmMatch, scratch, lo, hi value.Value) error {
	mSize, n, kk := k.matmulSizes(m)
	nr, mr := int64(m.cols()), int64(m.mr)
	panels := k.cur.NewSDiv(k.cur.NewAdd(n, i64(nr-1)), i64(nr))
	aStart := k.cur.NewMul(k.cur.NewMul(panels, kk), i64(nr))
	mLast := k.cur.NewSub(mSize, i64(1))
	line := 64 / elemBytes(m.elem)
	zero := constant.NewFloat(m.elem.(*types.FloatType), 0)
	_, err := k.loop(lo, hi, i64(1), nil, false, func(item value.Value, _ []value.Value) ([]value.Value, error) {
		isB := k.cur.NewICmp(enum.IPredSLT, item, panels)
		packB, packA, done := k.newBlock("packb"), k.newBlock("packa"), k.newBlock("packed")
		k.cur.NewCondBr(isB, packB, packA)
		k.cur = packB
		p := item
		base := k.cur.NewMul(k.cur.NewMul(p, kk), i64(nr))
		j0 := k.cur.NewMul(p, i64(nr))
		ncols := k.cur.NewSub(n, j0)
		full := k.cur.NewICmp(enum.IPredSGE, ncols, i64(nr))
		whole, part := k.newBlock("whole"), k.newBlock("part")
		k.cur.NewCondBr(full, whole, part)
		// copyRows copies each row k of the panel; tail pads with zeros.
		copyRows := func(tail bool) error {
			_, err := k.loop(i64(0), kk, i64(1), nil, false, func(kv value.Value, _ []value.Value) ([]value.Value, error) {
				k.vals[m.kIV], k.vals[m.j] = kv, j0
				src, elem, err := k.address(m.b, []*ir.Value{m.kIV, m.j})
				if err != nil {
					return nil, err
				}
				row := k.cur.NewAdd(base, k.cur.NewMul(kv, i64(nr)))
				_, err = k.loop(i64(0), i64(nr), i64(1), nil, true, func(c value.Value, _ []value.Value) ([]value.Value, error) {
					dst := k.cur.NewGetElementPtr(m.elem, scratch, k.cur.NewAdd(row, c))
					dst.InBounds = true
					if !tail {
						at := k.cur.NewGetElementPtr(elem, src, c)
						at.InBounds = true
						k.cur.NewStore(k.cur.NewLoad(elem, at), dst)
						return nil, nil
					}
					in := k.cur.NewICmp(enum.IPredSLT, c, ncols)
					at := k.cur.NewGetElementPtr(elem, src, k.cur.NewSelect(in, c, i64(0)))
					k.cur.NewStore(k.cur.NewSelect(in, k.cur.NewLoad(elem, at), zero), dst)
					return nil, nil
				})
				return nil, err
			})
			if err == nil {
				k.cur.NewBr(done)
			}
			return err
		}
		k.cur = whole
		if err := copyRows(false); err != nil {
			return nil, err
		}
		k.moveToEnd(part)
		k.cur = part
		if err := copyRows(true); err != nil {
			return nil, err
		}
		k.moveToEnd(packA)
		k.cur = packA
		b := k.cur.NewSub(item, panels)
		ablock := k.cur.NewAdd(aStart, k.cur.NewMul(k.cur.NewMul(b, kk), i64(mr)))
		_, err := k.loop(i64(0), kk, i64(line), nil, false, func(kc value.Value, _ []value.Value) ([]value.Value, error) {
			left := k.cur.NewSub(kk, kc)
			kn := k.cur.NewSelect(k.cur.NewICmp(enum.IPredSLT, left, i64(line)), left, i64(line))
			_, err := k.loop(i64(0), i64(mr), i64(1), nil, false, func(r value.Value, _ []value.Value) ([]value.Value, error) {
				row := k.cur.NewAdd(k.cur.NewMul(b, i64(mr)), r)
				clamped := k.cur.NewSelect(k.cur.NewICmp(enum.IPredSLT, row, mLast), row, mLast)
				k.setRow(m, clamped)
				k.vals[m.kIV] = kc
				src, elem, err := k.address(m.a, m.aIndices())
				if err != nil {
					return nil, err
				}
				first := k.cur.NewAdd(ablock, k.cur.NewAdd(k.cur.NewMul(kc, i64(mr)), r))
				_, err = k.loop(i64(0), kn, i64(1), nil, false, func(x value.Value, _ []value.Value) ([]value.Value, error) {
					at := k.cur.NewGetElementPtr(elem, src, x)
					at.InBounds = true
					dst := k.cur.NewGetElementPtr(m.elem, scratch, k.cur.NewAdd(first, k.cur.NewMul(x, i64(mr))))
					dst.InBounds = true
					k.cur.NewStore(k.cur.NewLoad(elem, at), dst)
					return nil, nil
				})
				return nil, err
			})
			return nil, err
		})
		if err != nil {
			return nil, err
		}
		k.cur.NewBr(done)
		k.moveToEnd(done)
		k.cur = done
		return nil, nil
	})
	return err
}

// matmul emits the main kernel: for each (panel of NR columns, block of
// MR rows) in [lo, hi) of their panel-major order, MR × NR accumulators in vector registers
// over k (A's elements broadcast, the packed panel's vectors loaded),
// stored to a tile on the stack, then the epilogue for each element of
// the tile inside C. Each element's sum runs over k in order, as the loop
// level says (fused multiply-adds: `contract`).
func (k *kt) matmul(m *mmMatch, scratch, lo, hi value.Value) error {
	mSize, n, kk := k.matmulSizes(m)
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
	rowBlocks := k.cur.NewSDiv(k.cur.NewAdd(mSize, i64(int64(MR-1))), i64(int64(MR)))
	panels := k.cur.NewSDiv(k.cur.NewAdd(n, i64(nr-1)), i64(nr))
	aStart := k.cur.NewMul(k.cur.NewMul(panels, kk), i64(nr))
	// One loop over [lo, hi) of the (panel, row block) pairs, panel-major:
	// a worker's range covers a few panels, each over a run of row
	// blocks, so its packed panel stays in cache across the run.
	_, err := k.loop(lo, hi, i64(1), nil, false, func(item value.Value, _ []value.Value) ([]value.Value, error) {
		p := k.cur.NewSDiv(item, rowBlocks)
		ib := k.cur.NewSRem(item, rowBlocks)
		panel := k.cur.NewGetElementPtr(m.elem, scratch, k.cur.NewMul(k.cur.NewMul(p, kk), i64(nr)))
		j0 := k.cur.NewMul(p, i64(nr))
		ncols := k.cur.NewSub(n, j0)
		ncols2 := k.cur.NewSelect(k.cur.NewICmp(enum.IPredSLT, ncols, i64(nr)), ncols, i64(nr))
		{
			i0 := k.cur.NewMul(ib, i64(int64(MR)))
			ablock := k.cur.NewGetElementPtr(m.elem, scratch, k.cur.NewAdd(aStart, k.cur.NewMul(k.cur.NewMul(ib, kk), i64(int64(MR)))))
			inits := make([]value.Value, MR*NV)
			for x := range inits {
				inits[x] = initVec
			}
			accs, err := k.loop(i64(0), kk, i64(1), inits, false, func(kv value.Value, acc []value.Value) ([]value.Value, error) {
				bs := make([]value.Value, NV)
				for v := range NV {
					at := k.cur.NewGetElementPtr(m.elem, panel, k.cur.NewAdd(k.cur.NewMul(kv, i64(nr)), i64(int64(v*vl))))
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
			for r := range MR {
				for v := range NV {
					at := k.cur.NewGetElementPtr(m.elem, tileBase, i64(int64(r)*nr+int64(v*vl)))
					st := k.cur.NewStore(accs[r*NV+v], k.cur.NewBitCast(at, types.NewPointer(vt)))
					st.Align = llir.Align(elemBytes(m.elem))
				}
			}
			// The epilogue, row by row of the tile.
			nrows := k.cur.NewSub(mSize, i0)
			nrows2 := k.cur.NewSelect(k.cur.NewICmp(enum.IPredSLT, nrows, i64(int64(MR))), nrows, i64(int64(MR)))
			_, err = k.loop(i64(0), nrows2, i64(1), nil, false, func(r value.Value, _ []value.Value) ([]value.Value, error) {
				i := k.cur.NewAdd(i0, r)
				_, err := k.loop(i64(0), ncols2, i64(1), nil, true, func(c value.Value, _ []value.Value) ([]value.Value, error) {
					at := k.cur.NewGetElementPtr(m.elem, tileBase, k.cur.NewAdd(k.cur.NewMul(r, i64(nr)), c))
					k.vals[m.forOp.Result(0)] = k.cur.NewLoad(m.elem, at)
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
			return nil, err
		}
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
