package togpu

import (
	"maps"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

func (p *mma) block(Config) int64  { return mmaThreads }
func (p *mma) mapping() string     { return MappingMMA }
func (p *mma) rowsPerBlock() int64 { return 0 }
func (p *mma) vector() int64       { return 1 }

// grid is one block per output tile of each matrix of the batch.
func (p *mma) grid(b *ir.Builder, loc ir.Location, exts []*ir.Value, _ Config) *ir.Value {
	one := arith.ConstantIndex(b, loc, 1)
	nb := len(p.batch)
	tm := ceilDiv(b, loc, exts[nb], arith.ConstantIndex(b, loc, tileM), one)
	tn := ceilDiv(b, loc, exts[nb+1], arith.ConstantIndex(b, loc, tileN), one)
	tiles := arith.Binary(b, "arith.muli", loc, tm, tn)
	for _, e := range p.batch {
		tiles = arith.Binary(b, "arith.muli", loc, tiles, arith.ConstantIndex(b, loc, e))
	}
	return arith.Binary(b, "arith.maxui", loc, tiles, one)
}

// ix is offset arithmetic at one insertion point, in the kernel's offset
// type t (i32 where every offset fits, index otherwise).
type ix struct {
	b   *ir.Builder
	loc ir.Location
	t   ir.Type
}

func (x ix) at(b *ir.Builder) ix { return ix{b, x.loc, x.t} }
func (x ix) c(v int64) *ir.Value {
	if x.t == ir.Index {
		return arith.ConstantIndex(x.b, x.loc, v)
	}
	return arith.ConstantInt(x.b, x.loc, v, x.t)
}
func (x ix) op(name string, a, b *ir.Value) *ir.Value {
	return arith.Binary(x.b, name, x.loc, a, b)
}
func (x ix) add(a, b *ir.Value) *ir.Value { return x.op("arith.addi", a, b) }
func (x ix) sub(a, b *ir.Value) *ir.Value { return x.op("arith.subi", a, b) }
func (x ix) mul(a, b *ir.Value) *ir.Value { return x.op("arith.muli", a, b) }
func (x ix) div(a, b *ir.Value) *ir.Value { return x.op("arith.divui", a, b) }
func (x ix) rem(a, b *ir.Value) *ir.Value { return x.op("arith.remui", a, b) }
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
func (x ix) xorc(a *ir.Value, v int64) *ir.Value {
	if v == 0 {
		return a
	}
	return x.xor(a, x.c(v))
}
func (x ix) lt(a, b *ir.Value) *ir.Value   { return arith.NewCmpI(x.b, x.loc, arith.CmpIULT, a, b) }
func (x ix) both(a, b *ir.Value) *ir.Value { return x.op("arith.andi", a, b) }

// from converts an index to the offset type; index converts back.
func (x ix) from(v *ir.Value) *ir.Value {
	if x.t == ir.Index {
		return v
	}
	return arith.NewCast(x.b, "arith.index_castui", x.loc, v, x.t)
}
func (x ix) index(v *ir.Value) *ir.Value {
	if x.t == ir.Index {
		return v
	}
	return arith.NewCast(x.b, "arith.index_castui", x.loc, v, ir.Index)
}

// size is a matrix size: the constant when static, else the nest's bound.
func (x ix) size(static int64, bound *ir.Value) *ir.Value {
	if static != ir.Dynamic {
		return x.c(static)
	}
	return x.from(bound)
}

// both2 ands two optional predicates (nil is true).
func (x ix) both2(a, b *ir.Value) *ir.Value {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return x.both(a, b)
}

// tileLoad is one thread's share of filling a stage: per 16-byte chunk,
// the loop-invariant parts of its addresses.
type tileLoad struct {
	dst    int64     // offset from the thread's first chunk in the stage
	src    *ir.Value // global offset at k tile 0
	k      *ir.Value // the chunk's first k at k tile 0
	kStep  int64     // global offset per k tile
	inside *ir.Value // the chunk's rows (A, Bᵀ) or columns (B) are in range; nil when always
}

func (p *mma) emit(k *kernelGen, b *ir.Builder) error {
	loc := k.loc
	x := ix{b, loc, p.width}
	_, ubs, _, _, _ := loop.ParallelBounds(k.nest)
	ubs = mapped(k.m, ubs)
	nb := len(p.batch)
	mRows, nCols := x.size(p.m, ubs[nb]), x.size(p.n, ubs[nb+1])
	a, bm := k.m[p.lhs], k.m[p.rhs]
	sa := gpu.AddWorkgroupBuffer(k.kernel, gpu.WorkgroupMemRef(mmaStages*tileM*tileK, p.elem))
	sb := gpu.AddWorkgroupBuffer(k.kernel, gpu.WorkgroupMemRef(mmaStages*tileK*tileN, p.elem))
	kTotal := x.c(p.k)
	// Which checks the sizes make necessary.
	rowTail := p.m == ir.Dynamic || p.m%tileM != 0
	colTail := p.n == ir.Dynamic || p.n%tileN != 0
	kTail := p.k%tileK != 0

	tid, bid := x.from(gpu.ThreadID(b, loc, "x")), x.from(gpu.BlockID(b, loc, "x"))
	tilesM, tilesN := x.shr(x.addc(mRows, tileM-1), 7), x.shr(x.addc(nCols, tileN-1), 7)
	// The batch index z and the tile t of the matrix, then t in grouped
	// order: groups of groupM tile rows, walked column by column.
	t, z := bid, x.c(0)
	if nb > 0 {
		per := x.mul(tilesM, tilesN)
		z, t = x.div(bid, per), x.rem(bid, per)
	}
	width := x.mulc(tilesN, groupM)
	first := x.mulc(x.div(t, width), groupM)
	// (At least 1: an empty output still launches one block.)
	gsz := x.op("arith.maxui", x.op("arith.minui", x.sub(tilesM, first), x.c(groupM)), x.c(1))
	in := x.rem(t, width)
	rowBase := x.mulc(x.add(first, x.rem(in, gsz)), tileM)
	colBase := x.mulc(x.div(in, gsz), tileN)
	lane, warp := x.and(tid, 31), x.shr(tid, 5)
	wm, wn := x.shr(warp, 2), x.and(warp, warpsN-1)
	strideA, strideB := int64(1), int64(1)
	for _, d := range p.shapeA[nb:] {
		strideA *= d
	}
	for _, d := range p.shapeB[nb:] {
		strideB *= d
	}
	if nb == 0 {
		strideA, strideB = 0, 0 // (shapes may be dynamic; z is 0)
	}
	baseA, baseB := x.mulc(z, strideA), x.mulc(z, strideB)

	// Each thread copies two 16-byte chunks of each tile per stage. Tiles
	// whose rows run along k (A, and B stored [N, K]) have rows of 4
	// chunks, swizzled by chunk ^ ((row >> 1) & 3); B stored [K, N] has
	// k rows of 16 chunks, swizzled by chunk ^ (row & 7): ldmatrix's 8
	// rows then hit 8 different bank groups. The second chunk is 64 rows
	// (16 k rows) further, where the swizzle repeats.
	kRows := func(base, rowBase, rows *ir.Value, tail bool) (*ir.Value, []tileLoad) {
		r, c := x.shr(tid, 2), x.and(tid, 3)
		dst := x.add(x.mulc(r, tileK), x.mulc(x.xor(c, x.and(x.shr(r, 1), 3)), 8))
		grow := x.add(rowBase, r)
		src := x.add(base, x.add(x.mulc(grow, p.k), x.mulc(c, 8)))
		var ls []tileLoad
		for q := range int64(2) {
			l := tileLoad{dst: q * 64 * tileK, src: x.addc(src, q*64*p.k), k: x.mulc(c, 8), kStep: tileK}
			if tail {
				l.inside = x.lt(x.addc(grow, q*64), rows)
			}
			ls = append(ls, l)
		}
		return dst, ls
	}
	dstA, aLoads := kRows(baseA, rowBase, mRows, rowTail)
	var dstB *ir.Value
	var bLoads []tileLoad
	if p.transB {
		dstB, bLoads = kRows(baseB, colBase, nCols, colTail)
	} else {
		ldb := p.shapeB[nb+1]
		kr, cb := x.shr(tid, 4), x.and(tid, 15)
		dstB = x.add(x.mulc(kr, tileN), x.mulc(x.xor(cb, x.and(kr, 7)), 8))
		gcol := x.add(colBase, x.mulc(cb, 8))
		src := x.add(baseB, x.add(x.mulc(kr, ldb), gcol))
		var inside *ir.Value
		if colTail {
			inside = x.lt(gcol, nCols)
		}
		for q := range int64(2) {
			bLoads = append(bLoads, tileLoad{dst: q * 16 * tileN, src: x.addc(src, q*16*ldb), k: x.addc(kr, q*16), kStep: tileK * ldb, inside: inside})
		}
	}
	zero32, full32 := arith.ConstantInt(b, loc, 0, ir.I32), arith.ConstantInt(b, loc, 16, ir.I32)
	numK := (p.k + tileK - 1) / tileK
	// load issues the copies of k tile kt into stage s (kt ≥ numK issues
	// none) and commits the group.
	load := func(b *ir.Builder, kt *ir.Value, s int64Value) {
		x := x.at(b)
		issue := func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			kt := x.from(kt)
			k0 := x.mulc(kt, tileK)
			stage := s(x)
			for _, tile := range []struct {
				smem, gmem, dst *ir.Value
				loads           []tileLoad
				size            int64
			}{{sa, a, dstA, aLoads, tileM * tileK}, {sb, bm, dstB, bLoads, tileK * tileN}} {
				dst := x.add(x.mulc(stage, tile.size), tile.dst)
				for _, l := range tile.loads {
					src := x.add(l.src, x.mulc(kt, l.kStep))
					ok := l.inside
					if kTail {
						ok = x.both2(ok, x.lt(x.add(k0, l.k), kTotal))
					}
					bytes := full32
					if ok != nil {
						src = arith.NewSelect(b, loc, ok, src, x.c(0))
						bytes = arith.NewSelect(b, loc, ok, full32, zero32)
					}
					gpu.CpAsync(b, loc, tile.smem, x.index(x.addc(dst, l.dst)), tile.gmem, x.index(src), bytes, 16)
				}
			}
			return nil
		}
		if c, ok := staticInt(kt); ok {
			if c < numK {
				issue(b)
			}
		} else {
			loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIULT, kt, arith.ConstantIndex(b, loc, numK)), nil, issue, nil)
		}
		gpu.CpAsyncCommit(b, loc)
	}
	// ldmatrix offsets within a stage, for k16 step 0 and fragment 0; the
	// others differ by constants: a k16 step flips chunk bit 1 (offset
	// bit 4: XOR 16) in rows along k and adds 16 rows in B's k rows; the
	// next fragment is 16 rows further (8 chunks along n flip bit 4 for
	// B's k rows, where a pair of n8 tiles is 2 chunks).
	//   A: x4 reads rows lane & 15 at chunk lane >> 4.
	//   B [K, N]: x4.trans reads k rows (lane & 7) + 8·((lane >> 3) & 1) at
	//     chunk lane >> 4 of a pair of n8 tiles.
	//   B [N, K]: x4 reads n rows (lane & 7) + 8·(lane >> 4) at chunk
	//     (lane >> 3) & 1: matrices (n0-7, k0-7), (n0-7, k8-15), (n8-15, …).
	rowsAlongK := func(row, chunk *ir.Value) *ir.Value {
		return x.add(x.mulc(row, tileK), x.mulc(x.xor(chunk, x.and(x.shr(row, 1), 3)), 8))
	}
	offA := rowsAlongK(x.add(x.mulc(wm, warpTileM), x.and(lane, 15)), x.shr(lane, 4))
	var offB *ir.Value
	if p.transB {
		row := x.add(x.mulc(wn, warpTileN), x.add(x.and(lane, 7), x.mulc(x.shr(lane, 4), 8)))
		offB = rowsAlongK(row, x.and(x.shr(lane, 3), 1))
	} else {
		krow := x.add(x.and(lane, 7), x.mulc(x.and(x.shr(lane, 3), 1), 8))
		chunk := x.add(x.mulc(wn, warpTileN/8), x.shr(lane, 4))
		offB = x.add(x.mulc(krow, tileN), x.mulc(x.xor(chunk, x.and(krow, 7)), 8))
	}

	for s := range int64(mmaStages - 1) {
		load(b, arith.ConstantIndex(b, loc, s), constStage(s))
	}
	zf := arith.ConstantFloat(b, loc, 0, ir.F32)
	inits := make([]*ir.Value, fragsM*fragsN*4)
	for i := range inits {
		inits[i] = zf
	}
	one := arith.ConstantIndex(b, loc, 1)
	kl := loop.For(b, loc, arith.ConstantIndex(b, loc, 0), arith.ConstantIndex(b, loc, numK), one, inits, func(b *ir.Builder, kt *ir.Value, accs []*ir.Value) []*ir.Value {
		x := x.at(b)
		gpu.CpAsyncWait(b, loc, mmaStages-2)
		gpu.Barrier(b, loc)
		next := arith.Binary(b, "arith.addi", loc, kt, arith.ConstantIndex(b, loc, mmaStages-1))
		load(b, next, func(x ix) *ir.Value { return x.rem(x.from(next), x.c(mmaStages)) })
		s := x.rem(x.from(kt), x.c(mmaStages))
		stA, stB := x.add(x.mulc(s, tileM*tileK), offA), x.add(x.mulc(s, tileK*tileN), offB)
		out := append([]*ir.Value(nil), accs...)
		for ks := range int64(2) {
			var af [fragsM][]*ir.Value
			var bf [fragsN][]*ir.Value
			rowA := x.xorc(stA, 16*ks)
			for i := range int64(fragsM) {
				af[i] = gpu.LdMatrix(b, loc, sa, x.index(x.addc(rowA, i*16*tileK)), 4, false)
			}
			for jp := range int64(fragsN / 2) {
				var at *ir.Value
				if p.transB {
					at = x.addc(x.xorc(stB, 16*ks), jp*16*tileK)
				} else {
					at = x.addc(x.xorc(stB, 16*jp), ks*16*tileN)
				}
				r := gpu.LdMatrix(b, loc, sb, x.index(at), 4, !p.transB)
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
	p.epilogue(k, x, kl, z, rowBase, colBase, lane, wm, wn, mRows, nCols, rowTail, colTail)
	return nil
}

// int64Value computes a stage index in the offset type.
type int64Value func(x ix) *ir.Value

func constStage(s int64) int64Value { return func(x ix) *ir.Value { return x.c(s) } }

// epilogue runs the nest's body without the K loop once per accumulator
// element, at row g + 8·(r/2) and column 2t + r%2 of its m16n8 tile
// (g = lane/4, t = lane%4), guarded by the output's bounds where the
// sizes are not multiples of the tile.
func (p *mma) epilogue(k *kernelGen, x ix, kl *ir.Operation, z, rowBase, colBase, lane, wm, wn, mRows, nCols *ir.Value, rowTail, colTail bool) {
	b, loc := x.b, x.loc
	body := loop.Body(k.nest)
	nb := len(p.batch)
	m := maps.Clone(k.m)
	// The batch indices of z, row-major over the batch extents.
	inner := int64(1)
	for d := nb - 1; d >= 0; d-- {
		m[body.Argument(d)] = x.index(x.rem(x.div(z, x.c(inner)), x.c(p.batch[d])))
		inner *= p.batch[d]
	}
	g, t2 := x.shr(lane, 2), x.mulc(x.and(lane, 3), 2)
	rows0 := x.add(x.add(rowBase, x.mulc(wm, warpTileM)), g)
	cols0 := x.add(x.add(colBase, x.mulc(wn, warpTileN)), t2)
	for i := range fragsM {
		for j := range fragsN {
			for r := range 4 {
				row := x.addc(rows0, int64(i*16+8*(r/2)))
				col := x.addc(cols0, int64(j*8+r%2))
				acc := kl.Result((i*fragsN+j)*4 + r)
				emit := func(b *ir.Builder) []*ir.Value {
					x := x.at(b)
					m := maps.Clone(m)
					m[body.Argument(nb)], m[body.Argument(nb+1)] = x.index(row), x.index(col)
					m[p.kloop.Result(0)] = acc
					for op := body.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
						if op != p.kloop {
							b.Insert(op.Clone(m))
						}
					}
					return nil
				}
				var ok *ir.Value
				if rowTail {
					ok = x.lt(row, mRows)
				}
				if colTail {
					ok = x.both2(ok, x.lt(col, nCols))
				}
				if ok == nil {
					emit(b)
				} else {
					loop.If(b, loc, ok, nil, emit, nil)
				}
			}
		}
	}
}
