package togpu

import (
	"maps"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// MappingMMA is the tensor-core mapping of matmul nests.
const MappingMMA = "mma"

// The tensor-core tiling: a block of mmaWarps warps computes a
// tileM × tileN output tile, stepping over K by tileK with mmaStages
// shared-memory stages filled by cp.async; warps form a 2 × 4 grid, each
// owning a 64 × 32 tile of 4 × 4 m16n8 accumulators.
const (
	tileM, tileN, tileK = 128, 128, 32
	mmaStages           = 3
	mmaThreads          = 256
	warpsN              = 4
	warpTileM           = 64
	warpTileN           = 32
	fragsM              = warpTileM / 16 // m16 tiles per warp
	fragsN              = warpTileN / 8  // n8 tiles per warp
)

// mma is the mapping of a matmul nest: convert-graph-to-loop's
//
//	loop.parallel (%i, %j) {
//	  %acc = loop.for %k = 0 to K step 1 iter(%a = 0.0 : f32) {
//	    A[%i, %k], B[%k, %j] of bf16, extf, mulf, addf %a, %p
//	  }
//	  epilogue(%i, %j, %acc) and stores
//	}
//
// becomes a tiled tensor-core kernel; the epilogue runs once per
// accumulator element (each guarded against the output's bounds), so the
// bias, activation, residual and cast stay fused.
type mma struct {
	kloop    *ir.Operation
	lhs, rhs *ir.Value // A [M, K] and B [K, Ncols] on the host
	elem     ir.Type
	k, ncols int64
}

// mmaPlan recognizes a matmul nest that tensor cores can run: bf16
// operands, f32 accumulation from 0, a static K and row length of B that
// are multiples of 8 (16-byte rows for cp.async), unit steps from 0.
// Anything else keeps the SIMT mapping.
func mmaPlan(nest *ir.Operation) *mma {
	lbs, ubs, steps, inits, err := loop.ParallelBounds(nest)
	if err != nil || len(lbs) != 2 || len(inits) > 0 {
		return nil
	}
	for d := range lbs {
		lb, ok1 := staticInt(lbs[d])
		st, ok2 := staticInt(steps[d])
		if !ok1 || !ok2 || lb != 0 || st != 1 {
			return nil
		}
	}
	_ = ubs
	body := loop.Body(nest)
	var kloop *ir.Operation
	nested := 0
	nest.Walk(func(o *ir.Operation) bool {
		if o != nest && o.NumRegions() > 0 {
			nested++
			if o.Name() == loop.ForOp && o.ParentOp() == nest {
				kloop = o
			}
		}
		return true
	})
	if kloop == nil || nested != 1 || kloop.NumResults() != 1 {
		return nil
	}
	lb, ub, step := loop.ForBounds(kloop)
	l, ok1 := staticInt(lb)
	kk, ok2 := staticInt(ub)
	s, ok3 := staticInt(step)
	init := loop.ForInits(kloop)[0]
	if !ok1 || !ok2 || !ok3 || l != 0 || s != 1 || kk <= 0 || kk%8 != 0 || !isZeroF32(init) {
		return nil
	}
	kb := kloop.Region(0).Front()
	kv, acc := kb.Argument(0), kb.Argument(1)
	y := kb.Terminator()
	if y == nil || y.NumOperands() != 1 {
		return nil
	}
	add := y.Operand(0).DefiningOp()
	if add == nil || add.Name() != "arith.addf" || add.Result(0).Type() != ir.F32 {
		return nil
	}
	prod := add.Operand(1)
	if add.Operand(1) == acc {
		prod = add.Operand(0)
	} else if add.Operand(0) != acc {
		return nil
	}
	mul := prod.DefiningOp()
	if mul == nil || mul.Name() != "arith.mulf" {
		return nil
	}
	// The two factors: extf of loads A[i, k] and B[k, j].
	p := &mma{kloop: kloop}
	iv, jv := body.Argument(0), body.Argument(1)
	for _, f := range mul.Operands() {
		ext := f.DefiningOp()
		if ext == nil || ext.Name() != "arith.extf" {
			return nil
		}
		ld := ext.Operand(0).DefiningOp()
		if ld == nil || ld.Name() != loop.LoadOp || ld.NumOperands() != 3 || definedIn(ld.Operand(0), nest) {
			return nil
		}
		mem, idx := ld.Operand(0), ld.Operands()[1:]
		switch {
		case idx[0] == iv && idx[1] == kv:
			p.lhs = mem
		case idx[0] == kv && idx[1] == jv:
			p.rhs = mem
		default:
			return nil
		}
		if p.elem == nil {
			p.elem = ext.Operand(0).Type()
		} else if p.elem != ext.Operand(0).Type() {
			return nil
		}
	}
	if p.lhs == nil || p.rhs == nil || p.elem != ir.BF16 || len(kb.Ops()) != 7 {
		return nil
	}
	at, _ := p.lhs.Type().(*ir.MemRefType)
	bt, _ := p.rhs.Type().(*ir.MemRefType)
	if at == nil || bt == nil || at.Shape()[1] != kk || bt.Shape()[0] != kk || bt.Shape()[1] == ir.Dynamic || bt.Shape()[1]%8 != 0 {
		return nil
	}
	p.k, p.ncols = kk, bt.Shape()[1]
	return p
}

// isZeroF32 reports whether v is the constant +0.0 : f32.
func isZeroF32(v *ir.Value) bool {
	if !isConstant(v) || v.Type() != ir.F32 {
		return false
	}
	a, ok := v.DefiningOp().Attr("value").(ir.FloatAttr)
	return ok && a.Bits == 0
}

func (p *mma) block(Config) int64  { return mmaThreads }
func (p *mma) mapping() string     { return MappingMMA }
func (p *mma) rowsPerBlock() int64 { return 0 }
func (p *mma) vector() int64       { return 1 }

// grid is one block per output tile.
func (p *mma) grid(b *ir.Builder, loc ir.Location, exts []*ir.Value, _ Config) *ir.Value {
	one := arith.ConstantIndex(b, loc, 1)
	tm := ceilDiv(b, loc, exts[0], arith.ConstantIndex(b, loc, tileM), one)
	tn := ceilDiv(b, loc, exts[1], arith.ConstantIndex(b, loc, tileN), one)
	return arith.Binary(b, "arith.maxui", loc, arith.Binary(b, "arith.muli", loc, tm, tn), one)
}

// ix is index arithmetic at one insertion point.
type ix struct {
	b   *ir.Builder
	loc ir.Location
}

func (x ix) c(v int64) *ir.Value { return arith.ConstantIndex(x.b, x.loc, v) }
func (x ix) op(name string, a, b *ir.Value) *ir.Value {
	return arith.Binary(x.b, name, x.loc, a, b)
}
func (x ix) add(a, b *ir.Value) *ir.Value     { return x.op("arith.addi", a, b) }
func (x ix) mul(a, b *ir.Value) *ir.Value     { return x.op("arith.muli", a, b) }
func (x ix) addc(a *ir.Value, v int64) *ir.Value {
	if v == 0 {
		return a
	}
	return x.add(a, x.c(v))
}
func (x ix) mulc(a *ir.Value, v int64) *ir.Value { return x.mul(a, x.c(v)) }
func (x ix) shr(a *ir.Value, v int64) *ir.Value  { return x.op("arith.shrui", a, x.c(v)) }
func (x ix) and(a *ir.Value, v int64) *ir.Value  { return x.op("arith.andi", a, x.c(v)) }
func (x ix) xor(a, b *ir.Value) *ir.Value        { return x.op("arith.xori", a, b) }
func (x ix) lt(a, b *ir.Value) *ir.Value         { return arith.NewCmpI(x.b, x.loc, arith.CmpIULT, a, b) }
func (x ix) both(a, b *ir.Value) *ir.Value       { return x.op("arith.andi", a, b) }

// tileLoad is one thread's share of filling a stage: per 16-byte chunk,
// the loop-invariant parts of its addresses.
type tileLoad struct {
	dst      *ir.Value // offset in the stage
	src      *ir.Value // global offset at k tile 0
	k        *ir.Value // the chunk's first k at k tile 0
	rowValid *ir.Value // the chunk's row (A) or columns (B) are in range
}

func (p *mma) emit(k *kernelGen, b *ir.Builder) error {
	loc := k.loc
	x := ix{b, loc}
	_, ubs, _, _, _ := loop.ParallelBounds(k.nest)
	ubs = mapped(k.m, ubs)
	mRows, nCols := ubs[0], ubs[1]
	a, bm := k.m[p.lhs], k.m[p.rhs]
	sa := gpu.AddWorkgroupBuffer(k.kernel, gpu.WorkgroupMemRef(mmaStages*tileM*tileK, p.elem))
	sb := gpu.AddWorkgroupBuffer(k.kernel, gpu.WorkgroupMemRef(mmaStages*tileK*tileN, p.elem))
	kTotal, ldb := x.c(p.k), x.c(p.ncols)

	tid, bid := gpu.ThreadID(b, loc, "x"), gpu.BlockID(b, loc, "x")
	tilesN := x.shr(x.addc(nCols, tileN-1), 7)
	bmi, bni := x.op("arith.divui", bid, tilesN), x.op("arith.remui", bid, tilesN)
	rowBase, colBase := x.mulc(bmi, tileM), x.mulc(bni, tileN)
	lane, warp := x.and(tid, 31), x.shr(tid, 5)
	wm, wn := x.shr(warp, 2), x.and(warp, warpsN-1)

	// Each thread copies two 16-byte chunks of each tile per stage. A's
	// rows are 4 chunks, swizzled by chunk ^ ((row >> 1) & 3); B's rows
	// 16 chunks, swizzled by chunk ^ (row & 7): ldmatrix's 8 rows then hit
	// 8 different bank groups.
	var aLoads, bLoads []tileLoad
	for q := range int64(2) {
		idx := x.addc(tid, q*mmaThreads)
		r, c := x.shr(idx, 2), x.and(idx, 3)
		grow := x.add(rowBase, r)
		aLoads = append(aLoads, tileLoad{
			dst:      x.add(x.mulc(r, tileK), x.mulc(x.xor(c, x.and(x.shr(r, 1), 3)), 8)),
			src:      x.add(x.mul(grow, kTotal), x.mulc(c, 8)),
			k:        x.mulc(c, 8),
			rowValid: x.lt(grow, mRows),
		})
		kr, cb := x.shr(idx, 4), x.and(idx, 15)
		gcol := x.add(colBase, x.mulc(cb, 8))
		bLoads = append(bLoads, tileLoad{
			dst:      x.add(x.mulc(kr, tileN), x.mulc(x.xor(cb, x.and(kr, 7)), 8)),
			src:      x.add(x.mul(kr, ldb), gcol),
			k:        kr,
			rowValid: x.lt(gcol, ldb),
		})
	}
	zero32, full32 := arith.ConstantInt(b, loc, 0, ir.I32), arith.ConstantInt(b, loc, 16, ir.I32)
	zeroIdx := x.c(0)
	// load issues the copies of k tile kt into stage s.
	load := func(b *ir.Builder, kt, s *ir.Value) {
		x := ix{b, loc}
		k0 := x.mulc(kt, tileK)
		for _, l := range aLoads {
			ok := x.both(l.rowValid, x.lt(x.add(k0, l.k), kTotal))
			src := arith.NewSelect(b, loc, ok, x.add(l.src, k0), zeroIdx)
			gpu.CpAsync(b, loc, sa, x.add(x.mulc(s, tileM*tileK), l.dst), a, src, arith.NewSelect(b, loc, ok, full32, zero32), 16)
		}
		for _, l := range bLoads {
			kk := x.add(k0, l.k)
			ok := x.both(l.rowValid, x.lt(kk, kTotal))
			src := arith.NewSelect(b, loc, ok, x.add(l.src, x.mul(k0, ldb)), zeroIdx)
			gpu.CpAsync(b, loc, sb, x.add(x.mulc(s, tileK*tileN), l.dst), bm, src, arith.NewSelect(b, loc, ok, full32, zero32), 16)
		}
		gpu.CpAsyncCommit(b, loc)
	}
	// ldmatrix offsets within a stage, per k16 step: A's x4 reads rows
	// lane & 15 at chunk lane >> 4; B's x4.trans reads k rows
	// (lane & 7) + 8·((lane >> 3) & 1) at chunk lane >> 4 of a pair of n8 tiles.
	var aOff [2][fragsM]*ir.Value
	var bOff [2][fragsN / 2]*ir.Value
	for ks := range int64(2) {
		for i := range int64(fragsM) {
			row := x.add(x.addc(x.mulc(wm, warpTileM), i*16), x.and(lane, 15))
			chunk := x.addc(x.shr(lane, 4), ks*2)
			aOff[ks][i] = x.add(x.mulc(row, tileK), x.mulc(x.xor(chunk, x.and(x.shr(row, 1), 3)), 8))
		}
		for jp := range int64(fragsN / 2) {
			krow := x.addc(x.add(x.and(lane, 7), x.mulc(x.and(x.shr(lane, 3), 1), 8)), ks*16)
			chunk := x.add(x.addc(x.mulc(wn, warpTileN/8), jp*2), x.shr(lane, 4))
			bOff[ks][jp] = x.add(x.mulc(krow, tileN), x.mulc(x.xor(chunk, x.and(krow, 7)), 8))
		}
	}

	for s := range int64(mmaStages - 1) {
		load(b, x.c(s), x.c(s))
	}
	zf := arith.ConstantFloat(b, loc, 0, ir.F32)
	inits := make([]*ir.Value, fragsM*fragsN*4)
	for i := range inits {
		inits[i] = zf
	}
	numK := x.c((p.k + tileK - 1) / tileK)
	kl := loop.For(b, loc, x.c(0), numK, x.c(1), inits, func(b *ir.Builder, kt *ir.Value, accs []*ir.Value) []*ir.Value {
		x := ix{b, loc}
		gpu.CpAsyncWait(b, loc, mmaStages-2)
		gpu.Barrier(b, loc)
		next := x.addc(kt, mmaStages-1)
		load(b, next, x.op("arith.remui", next, x.c(mmaStages)))
		s := x.op("arith.remui", kt, x.c(mmaStages))
		baseA, baseB := x.mulc(s, tileM*tileK), x.mulc(s, tileK*tileN)
		out := append([]*ir.Value(nil), accs...)
		for ks := range 2 {
			var af [fragsM][]*ir.Value
			var bf [fragsN][]*ir.Value
			for i := range fragsM {
				af[i] = gpu.LdMatrix(b, loc, sa, x.add(baseA, aOff[ks][i]), 4, false)
			}
			for jp := range fragsN / 2 {
				r := gpu.LdMatrix(b, loc, sb, x.add(baseB, bOff[ks][jp]), 4, true)
				bf[2*jp], bf[2*jp+1] = r[:2], r[2:]
			}
			for i := range fragsM {
				for j := range fragsN {
					at := (i*fragsN + j) * 4
					copy(out[at:at+4], gpu.MMASync(b, loc, p.elem, af[i], bf[j], out[at:at+4]))
				}
			}
		}
		return out
	})
	gpu.CpAsyncWait(b, loc, 0)

	// The epilogue: the nest's body without the K loop, once per
	// accumulator element, at row g + 8·(r/2) and column 2t + r%2 of its
	// m16n8 tile (g = lane/4, t = lane%4).
	body := loop.Body(k.nest)
	g, t2 := x.shr(lane, 2), x.mulc(x.and(lane, 3), 2)
	rows0 := x.add(x.add(rowBase, x.mulc(wm, warpTileM)), g)
	cols0 := x.add(x.add(colBase, x.mulc(wn, warpTileN)), t2)
	for i := range fragsM {
		for j := range fragsN {
			for r := range 4 {
				row := x.addc(rows0, int64(i*16+8*(r/2)))
				col := x.addc(cols0, int64(j*8+r%2))
				acc := kl.Result((i*fragsN+j)*4 + r)
				loop.If(b, loc, x.both(x.lt(row, mRows), x.lt(col, nCols)), nil, func(b *ir.Builder) []*ir.Value {
					m := maps.Clone(k.m)
					m[body.Argument(0)], m[body.Argument(1)] = row, col
					m[p.kloop.Result(0)] = acc
					for op := body.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
						if op != p.kloop {
							b.Insert(op.Clone(m))
						}
					}
					return nil
				}, nil)
			}
		}
	}
	return nil
}
