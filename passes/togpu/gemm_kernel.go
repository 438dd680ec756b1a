package togpu

import (
	"maps"
	"math/bits"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

func (p *mma) block(Config) int64  { return p.tile.threads() }
func (p *mma) mapping() string     { return MappingMMA }
func (p *mma) rowsPerBlock() int64 { return 0 }
func (p *mma) vector() int64       { return 1 }

// grid is one block per output tile of each matrix of the batch.
func (p *mma) grid(b *ir.Builder, loc ir.Location, exts []*ir.Value, _ Config) *ir.Value {
	if p.conv != nil { // static: tilesM × tilesN for each image, or for all (fold)
		return arith.ConstantIndex(b, loc, max(1, ir.NumElements(p.batch)*p.tilesM()*p.tilesN()))
	}
	one := arith.ConstantIndex(b, loc, 1)
	nb := len(p.batch)
	tm := ceilDiv(b, loc, exts[nb], arith.ConstantIndex(b, loc, p.tile.M), one)
	tn := ceilDiv(b, loc, exts[nb+1], arith.ConstantIndex(b, loc, p.tile.N), one)
	tiles := arith.Binary(b, arith.OpMulI, loc, tm, tn)
	for _, e := range p.batch {
		tiles = arith.Binary(b, arith.OpMulI, loc, tiles, arith.ConstantIndex(b, loc, e))
	}
	grid := arith.Binary(b, arith.OpMaxUI, loc, tiles, one)
	if p.tile.Persistent > 0 {
		grid = arith.Binary(b, arith.OpMinUI, loc, grid, arith.ConstantIndex(b, loc, p.tile.Persistent))
	}
	if p.tile.Cluster > 1 { // whole clusters (the tiles and the cap are, unless no tiles)
		grid = arith.Binary(b, arith.OpMaxUI, loc, grid, arith.ConstantIndex(b, loc, p.tile.Cluster))
	}
	return grid
}

// tileLoad is one thread's share of filling a stage: per 16-byte chunk,
// the loop-invariant parts of its addresses.
type tileLoad struct {
	dst    int64     // offset from the thread's first chunk in the stage (xor'ed with xor)
	xor    int64     // the swizzle's change from the first chunk's row (passes of fewer than 8 rows)
	src    *ir.Value // global offset at k tile 0
	k      *ir.Value // the chunk's first k at k tile 0
	kStep  int64     // global offset per k tile
	inside *ir.Value // the chunk's outer rows are in range (K last); nil when always
	// col is the chunk's first outer column when K is first and the tile
	// can overhang the matrix (each piece of the chunk is checked
	// against outer); nil otherwise.
	col, outer *ir.Value
}

// piece is one copy of vec elements of a chunk: its offset in the chunk,
// and whether it is in range (nil when always), given whether the k tile
// can overhang K and k0, the tile's first k.
func (l tileLoad) piece(x ix, o *operand, p int64, kTail bool, k0, kTotal *ir.Value) *ir.Value {
	ok := l.inside
	off := p * o.vec
	if l.col != nil {
		ok = x.both2(ok, x.lt(x.addc(l.col, off), l.outer))
	}
	if kTail {
		k := x.add(k0, l.k)
		if o.kLast {
			k = x.addc(k, off)
		}
		ok = x.both2(ok, x.lt(k, kTotal))
	}
	return ok
}

// A stage of an operand's tile in shared memory is stored as the operand
// is in global memory, so that each 16-byte cp.async chunk is contiguous
// at both ends: tile rows of tileK elements (4 or 8 chunks) along K when
// K is last, else tileK rows of tile elements (8 or 16 chunks) along the
// outer dimension. Chunks are swizzled so that ldmatrix's 8 rows hit 8
// different 16-byte bank groups: chunk ^ ((row >> 1) & 3) in rows of 4
// chunks (two rows share a 128-byte line), chunk ^ (row & 7) in longer
// rows. Both swizzles depend on the row's low 3 bits only and permute
// the low chunk bits only, so the ldmatrix offsets of the other fragments and k16
// steps are constants away from the first's (fragAt).

// rowLen is the length of a stage's rows.
func (o *operand) rowLen() int64 {
	if o.kLast {
		return o.tileK
	}
	return o.tile
}

// rowStride is the distance between a stage's rows: rowLen, or in panels
// the 64 elements of a panel's row.
func (o *operand) rowStride() int64 {
	if o.panel > 0 {
		return gpu.WGMMASwizzleRow
	}
	return o.rowLen()
}

// at is the offset in a stage of chunk c of row r. In panels (the
// 128-byte swizzle of gpu.wgmma), chunk c of row r is chunk (c%8) xor
// (r%8) of row r of panel c/8; a row of 8 chunks is that with one panel.
func (o *operand) at(x ix, r, c *ir.Value) *ir.Value {
	sw := x.and(r, 7)
	if o.rowLen() == 32 {
		sw = x.and(x.shr(r, 1), 3)
	}
	if o.panel > 0 {
		return x.add(x.add(x.mulc(x.shr(c, 3), o.panel), x.mulc(r, gpu.WGMMASwizzleRow)), x.mulc(x.xor(x.and(c, 7), sw), 8))
	}
	return x.add(x.mulc(r, o.rowLen()), x.mulc(x.xor(c, sw), 8))
}

// copies returns one thread's share of filling a stage of o's tile: the
// offset of its first chunk in the stage and its chunks. The block's
// threads cover the tile in passes of threads/chunks rows (e.g. 256
// threads, a 128 × 32 tile: 64 rows of 4 chunks each pass when K is last,
// 16 k rows of 16 chunks otherwise; MMATile.check keeps the passes whole). base is the
// offset of batch z's matrix, outerBase the tile's first row (A) or
// column (B), outer the matrix's extent there; tail says the tile can
// overhang it.
func (o *operand) copies(x ix, nb int, threads int64, tid, z, outerBase, outer *ir.Value, tail bool) (*ir.Value, []tileLoad) {
	base := x.c(0) // (shapes may be dynamic when there is no batch)
	if nb > 0 && !o.shared {
		stride := int64(1)
		for _, d := range o.shape[nb:] {
			stride *= d
		}
		base = x.mulc(z, stride)
	}
	chunks := o.rowLen() / 8
	shift := int64(bits.TrailingZeros64(uint64(chunks)))
	r, c := x.shr(tid, shift), x.and(tid, chunks-1)
	rows := threads / chunks // per pass
	dst, ld := o.at(x, r, c), o.ld(nb)
	var ls []tileLoad
	if o.kLast {
		grow := x.add(outerBase, r)
		src := x.add(base, x.add(x.mulc(grow, ld), x.mulc(c, 8)))
		for q := range o.tile / rows {
			l := tileLoad{dst: q * rows * o.tileK, src: x.addc(src, q*rows*ld), k: x.mulc(c, 8), kStep: o.tileK}
			if rows < 8 && o.rowLen() != 32 {
				l.xor = 8 * (q * rows % 8) // (as below)
			}
			if tail {
				l.inside = x.lt(x.addc(grow, q*rows), outer)
			}
			ls = append(ls, l)
		}
		return dst, ls
	}
	gcol := x.add(outerBase, x.mulc(c, 8))
	src := x.add(base, x.add(x.mulc(r, ld), gcol))
	for q := range o.tileK / rows {
		l := tileLoad{dst: q * rows * o.rowStride(), src: x.addc(src, q*rows*ld), k: x.addc(r, q*rows), kStep: o.tileK * ld}
		if rows < 8 && o.rowLen() != 32 {
			// Row r + q·rows (r < rows, a power of two) swizzles with
			// r%8 xor (q·rows)%8: the chunk moves by that xor.
			l.xor = 8 * (q * rows % 8)
		}
		if tail {
			l.col, l.outer = gcol, outer
		}
		ls = append(ls, l)
	}
	return dst, ls
}

// fragBase is this lane's ldmatrix.x4 offset in a stage for the warp's
// first fragment (its 16 outer rows or columns from warpOuter) at k16
// step 0. Lanes 8q…8q+7 give the rows of matrix q; bit outerBit of
// the lane (3 or 4) picks its second 8 outer rows or columns, the other
// of bits 3 and 4 its second 8 k. A's four matrices are the m16k16
// fragment's (m0-7, k0-7), (m8-15, k0-7), (m0-7, k8-15), (m8-15, k8-15)
// (outerBit 3); B's are the k16n8 fragments of two n8 tiles, (n0-7, k0-7),
// (n0-7, k8-15), (n8-15, k0-7), (n8-15, k8-15) (outerBit 4). With K
// last, the 8 rows are outer rows at one k chunk; otherwise they are k
// rows at one outer chunk, read transposed.
func (o *operand) fragBase(x ix, lane, warpOuter *ir.Value, outerBit int64) *ir.Value {
	bit := func(s int64) *ir.Value {
		if s == 4 {
			return x.shr(lane, 4) // (lanes are below 32)
		}
		return x.and(x.shr(lane, s), 1)
	}
	r, outerHalf, kHalf := x.and(lane, 7), bit(outerBit), bit(7-outerBit)
	if o.kLast {
		return o.at(x, x.add(warpOuter, x.add(r, x.mulc(outerHalf, 8))), kHalf)
	}
	return o.at(x, x.add(r, x.mulc(kHalf, 8)), x.add(x.shr(warpOuter, 3), outerHalf))
}

// fragAt is the ldmatrix offset of fragment f (16 outer rows or columns
// further) at k16 step ks, from st, the offset of fragment 0 at step 0.
// With K last a k16 step is 2 chunks along the row (chunk bit 1: the
// swizzle keeps it, XOR 16) and a fragment 16 rows down (same swizzle);
// otherwise a k16 step is 16 k rows down and a fragment 2 chunks along
// (XOR 16·f: the warp's first chunk is a multiple of 2·fragments).
func (o *operand) fragAt(x ix, st *ir.Value, f, ks int64) *ir.Value {
	if o.kLast {
		return x.addc(x.xorc(st, 16*ks), f*16*o.tileK)
	}
	return x.addc(x.xorc(st, 16*f), ks*16*o.tile)
}

// gemmBlock is what both tensor-core GEMM kernels (mma.sync here, wgmma
// in gemm_wgmma.go) compute before their main loop: the block's batch
// index and output tile, the shared-memory stages and the copies that
// fill them.
type gemmBlock struct {
	x                   ix
	tid, lane, warp     *ir.Value
	z, rowBase, colBase *ir.Value
	mRows, nCols        *ir.Value
	rowTail, colTail    bool
	sa, sb              *ir.Value // the stages of A's and B's tiles
	numK                int64     // k tiles
	tiles               *ir.Value // output tiles of every matrix of the batch (specialized kernels)
	load                func(b *ir.Builder, kt *ir.Value, s int64Value, guard loadGuard)
}

// loadGuard is how gemmBlock.load treats a k tile past the last.
type loadGuard int

const (
	loadExisting loadGuard = iota // the k tile exists: no check
	loadBranch                    // past the last, copy nothing (a branch unless kt is constant)
	loadZeros                     // past the last, fill the stage with zeros (no branch)
)

// setup emits a GEMM kernel's prologue (see gemmBlock): the stages
// (stages·M·K and stages·K·N elements of A and B), the block's tile in
// grouped order and each thread's share of the copies. load(b, kt, s,
// guard) issues the copies of k tile kt into stage s and commits the
// group; guard says what a kt past the last k tile does.
func (p *mma) setup(k *kernelGen, b *ir.Builder) gemmBlock {
	loc := k.loc
	// Above 256 threads a block cannot launch with ptxas's default
	// register cap (255 a thread, of 65536): the block's size bounds the
	// registers a thread may take (512 threads: 128), which ptxas must
	// know (targets/llvm's MaxThreadsAttr).
	if p.tile.threads() > 256 {
		k.kernel.SetAttr("nvvm.maxntid", ir.Int(p.tile.threads(), ir.I64))
	}
	tl := p.tile
	sa := gpu.AddWorkgroupBuffer(k.kernel, gpu.WorkgroupMemRef(tl.Stages*tl.M*tl.K, p.elem))
	sb := gpu.AddWorkgroupBuffer(k.kernel, gpu.WorkgroupMemRef(tl.Stages*tl.K*tl.N, p.elem))
	x := ix{b, loc, p.width}
	return p.setupTile(k, b, sa, sb, x.from(gpu.BlockID(b, loc, "x")))
}

// setupTile is setup's part after the stages sa and sb, for output tile
// bid (of every matrix of the batch, in the offset type): a persistent
// kernel calls it for each of its tiles.
func (p *mma) setupTile(k *kernelGen, b *ir.Builder, sa, sb, bid *ir.Value) gemmBlock {
	loc := k.loc
	x := ix{b, loc, p.width}
	_, ubs, _, _, _ := loop.ParallelBounds(k.nest)
	ubs = mapped(k.m, ubs)
	nb := len(p.batch)
	mRows, nCols := x.size(p.m, ubs[nb]), x.size(p.n, ubs[nb+1])
	a, bm := k.m[p.a.mem], k.m[p.b.mem]
	tl := p.tile
	tileM, tileN, tileK := tl.M, tl.N, tl.K
	kTotal := x.c(p.k)
	// Which checks the sizes make necessary.
	rowTail := p.m == ir.Dynamic || p.m%tileM != 0
	colTail := p.n == ir.Dynamic || p.n%tileN != 0
	kTail := p.k%tileK != 0

	tid := x.from(gpu.ThreadID(b, loc, "x"))
	log2 := func(n int64) int64 { return int64(bits.TrailingZeros64(uint64(n))) }
	tilesM, tilesN := x.shr(x.addc(mRows, tileM-1), log2(tileM)), x.addc(nCols, tileN-1)
	if tileN&(tileN-1) == 0 {
		tilesN = x.shr(tilesN, log2(tileN))
	} else { // (192: TMA tiles only)
		tilesN = x.div(tilesN, x.c(tileN))
	}
	var tiles *ir.Value // (the specialized kernel's loop over tiles needs their count)
	if tl.Specialized {
		tiles = x.mul(tilesM, tilesN)
		for _, e := range p.batch {
			tiles = x.mulc(tiles, e)
		}
	}
	// The batch index z and the tile t of the matrix, then t in grouped
	// order: groups of groupM tile rows, walked column by column.
	t, z := bid, x.c(0)
	if nb > 0 {
		per := x.mul(tilesM, tilesN)
		z, t = x.div(bid, per), x.rem(bid, per)
	}
	// The grouped order is computed in 32 bits whatever the offsets'
	// width (tile counts fit): a 64-bit division by a variable (gsz, or
	// width for a dynamic N) is a subroutine call, and the driver's ptxas
	// serializes every wgmma of a kernel that calls (TestWGMMAGemmPTX).
	x32 := ix{b, loc, ir.I32}
	narrow, widen := func(v *ir.Value) *ir.Value { return v }, func(v *ir.Value) *ir.Value { return v }
	if x.t != ir.I32 {
		narrow = func(v *ir.Value) *ir.Value { return arith.NewCast(b, arith.OpIndexCastUI, loc, v, ir.I32) }
		widen = func(v *ir.Value) *ir.Value { return arith.NewCast(b, arith.OpIndexCastUI, loc, v, x.t) }
	}
	// (tilesN is 0 for a dynamic N of 0; the block then stores nothing.)
	width := x32.mulc(x32.op(arith.OpMaxUI, narrow(tilesN), x32.c(1)), groupM)
	t32 := narrow(t)
	first := x32.mulc(x32.div(t32, width), groupM)
	// (At least 1: an empty output still launches one block.)
	gsz := x32.op(arith.OpMaxUI, x32.op(arith.OpMinUI, x32.sub(narrow(tilesM), first), x32.c(groupM)), x32.c(1))
	in := x32.rem(t32, width)
	rowBase := x.mulc(widen(x32.add(first, x32.rem(in, gsz))), tileM)
	colBase := x.mulc(widen(x32.div(in, gsz)), tileN)
	lane, warp := x.and(tid, 31), x.shr(tid, 5)

	// The copying threads' own ids (the producer warpgroup's last).
	ctid := tid
	if tl.copyThreads() != tl.threads() {
		ctid = x.sub(tid, x.c(tl.threads()-tl.copyThreads()))
	}
	var dstA, dstB *ir.Value
	var aLoads, bLoads []tileLoad
	switch {
	case tl.TMA: // (the producer copies with gpu.tma_load: gemm_tma.go)
	case p.conv != nil && !p.conv.direct:
		dstA, aLoads = p.a.copies(x, nb, tl.copyThreads(), ctid, z, rowBase, mRows, rowTail)
		dstB = p.conv.setup(x, &p.b, tl.copyThreads(), ctid, z, colBase, nCols)
	default:
		dstA, aLoads = p.a.copies(x, nb, tl.copyThreads(), ctid, z, rowBase, mRows, rowTail)
		dstB, bLoads = p.b.copies(x, nb, tl.copyThreads(), ctid, z, colBase, nCols, colTail)
	}
	zero32 := arith.ConstantInt(b, loc, 0, ir.I32)
	zeroElem := arith.ConstantFloat(b, loc, 0, p.elem)
	numK := (p.k + tileK - 1) / tileK
	// load issues the copies of k tile kt into stage s (kt ≥ numK issues
	// none) and commits the group. A chunk whose rows do not start on 16
	// bytes is copied in pieces of o.vec elements; out-of-range pieces
	// are zero-filled, so that the products over them add nothing.
	load := func(b *ir.Builder, kt *ir.Value, s int64Value, guard loadGuard) {
		x := x.at(b)
		issue := func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			kt := x.from(kt)
			k0 := x.mulc(kt, tileK)
			var exists *ir.Value
			if guard == loadZeros {
				exists = x.lt(kt, x.c(numK))
			}
			stage := s(x)
			for _, tile := range []struct {
				o               *operand
				smem, gmem, dst *ir.Value
				loads           []tileLoad
				size            int64
			}{{&p.a, sa, a, dstA, aLoads, tileM * tileK}, {&p.b, sb, bm, dstB, bLoads, tileK * tileN}} {
				o := tile.o
				dst := x.add(x.mulc(stage, tile.size), tile.dst)
				if o == &p.b && p.conv != nil && !p.conv.direct {
					p.conv.store(x, tile.smem, dst, p.conv.fetch(x, tile.gmem, k0, kTotal, kTail, exists, p.elem))
					continue
				}
				full := arith.ConstantInt(b, loc, 2*o.vec, ir.I32)
				for _, l := range tile.loads {
					dst := x.xorc(dst, l.xor)
					src := x.add(l.src, x.mulc(kt, l.kStep))
					for q := range 8 / o.vec {
						off := q * o.vec
						ok := x.both2(l.piece(x, o, q, kTail, k0, kTotal), exists)
						from, at := x.addc(src, off), x.index(x.addc(dst, l.dst+off))
						if ok != nil {
							from = arith.NewSelect(b, loc, ok, from, x.c(0))
						}
						if o.vec == 1 {
							v := loop.Load(b, loc, tile.gmem, x.index(from))
							if ok != nil {
								v = arith.NewSelect(b, loc, ok, v, zeroElem)
							}
							loop.Store(b, loc, v, tile.smem, at)
							continue
						}
						bytes := full
						if ok != nil {
							bytes = arith.NewSelect(b, loc, ok, full, zero32)
						}
						gpu.CpAsync(b, loc, tile.smem, at, tile.gmem, x.index(from), bytes, 2*o.vec)
					}
				}
			}
			return nil
		}
		if c, ok := staticInt(kt); ok {
			if c < numK {
				issue(b)
			}
		} else if guard != loadBranch {
			issue(b)
		} else {
			loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIULT, kt, arith.ConstantIndex(b, loc, numK)), nil, issue, nil)
		}
		gpu.CpAsyncCommit(b, loc)
	}
	return gemmBlock{x: x, tid: tid, lane: lane, warp: warp, z: z, rowBase: rowBase, colBase: colBase, mRows: mRows, nCols: nCols,
		rowTail: rowTail, colTail: colTail, sa: sa, sb: sb, numK: numK, tiles: tiles, load: load}
}

func (p *mma) emit(k *kernelGen, b *ir.Builder) error {
	if p.tile.WGMMA {
		return p.emitWGMMA(k, b)
	}
	loc := k.loc
	g := p.setup(k, b)
	x, lane, warp, sa, sb, load := g.x, g.lane, g.warp, g.sa, g.sb, g.load
	tl := p.tile
	tileM, tileN, tileK, stages := tl.M, tl.N, tl.K, tl.Stages
	log2 := func(n int64) int64 { return int64(bits.TrailingZeros64(uint64(n))) }
	warpsN := tileN / tl.WarpN
	wm, wn := x.shr(warp, log2(warpsN)), x.and(warp, warpsN-1)
	numK := g.numK
	offA := p.a.fragBase(x, lane, x.mulc(wm, warpTileM), 3)
	offB := p.b.fragBase(x, lane, x.mulc(wn, tl.WarpN), 4)

	for s := range stages - 1 {
		load(b, arith.ConstantIndex(b, loc, s), constStage(s), loadBranch)
	}
	zf := arith.ConstantFloat(b, loc, 0, ir.F32)
	fragsN := tl.fragsN()
	inits := make([]*ir.Value, fragsM*fragsN*4)
	for i := range inits {
		inits[i] = zf
	}
	one := arith.ConstantIndex(b, loc, 1)
	kl := loop.For(b, loc, arith.ConstantIndex(b, loc, 0), arith.ConstantIndex(b, loc, numK), one, inits, func(b *ir.Builder, kt *ir.Value, accs []*ir.Value) []*ir.Value {
		x := x.at(b)
		gpu.CpAsyncWait(b, loc, stages-2)
		gpu.Barrier(b, loc)
		next := arith.Binary(b, arith.OpAddI, loc, kt, arith.ConstantIndex(b, loc, stages-1))
		load(b, next, func(x ix) *ir.Value { return x.rem(x.from(next), x.c(stages)) }, loadBranch)
		s := x.rem(x.from(kt), x.c(stages))
		stA, stB := x.add(x.mulc(s, tileM*tileK), offA), x.add(x.mulc(s, tileK*tileN), offB)
		out := append([]*ir.Value(nil), accs...)
		// The fragments of k16 step ks, loaded with ldmatrix.
		type frags struct{ a, b [][]*ir.Value }
		loadFrags := func(ks int64) frags {
			var f frags
			for i := range int64(fragsM) {
				f.a = append(f.a, gpu.LdMatrix(b, loc, sa, x.index(p.a.fragAt(x, stA, i, ks)), 4, !p.a.kLast))
			}
			for jp := range fragsN / 2 {
				r := gpu.LdMatrix(b, loc, sb, x.index(p.b.fragAt(x, stB, jp, ks)), 4, !p.b.kLast)
				f.b = append(f.b, r[:2], r[2:])
			}
			return f
		}
		// Register double-buffering: step ks+1's loads are issued before
		// step ks's products, so the shared-memory latency hides behind
		// the tensor cores.
		steps := tileK / 16
		cur := loadFrags(0)
		for ks := range steps {
			var next frags
			if ks+1 < steps {
				next = loadFrags(ks + 1)
			}
			for i := range int64(fragsM) {
				for j := range fragsN {
					at := (i*fragsN + j) * 4
					copy(out[at:at+4], gpu.MMASync(b, loc, p.elem, cur.a[i], cur.b[j], out[at:at+4]))
				}
			}
			cur = next
		}
		return out
	})
	gpu.CpAsyncWait(b, loc, 0)
	p.epilogue(k, x, kl.Results(), g, x.mulc(wm, warpTileM), x.mulc(wn, tl.WarpN), fragsM, fragsN)
	return nil
}

// int64Value computes a stage index in the offset type.
type int64Value func(x ix) *ir.Value

func constStage(s int64) int64Value { return func(x ix) *ir.Value { return x.c(s) } }

// epilogue runs the nest's body without the K loop once per accumulator
// element of the warp's fm × fn m16n8 tiles from (warpRow, warpCol) in
// the block's tile, the accumulators of tile (i, j) being results
// 4·(i·fn + j) on: at row g + 8·(r/2) and column 2t + r%2 of its m16n8
// tile (g = lane/4, t = lane%4), guarded by the output's bounds where the
// sizes are not multiples of the tile. The two elements of a row (r%2 =
// 0, 1) share a guard when N is even (their first column is even), and
// their bodies are then cloned op by op, each op for both in turn, so
// that their loads and stores of a buffer are adjacent at columns c and
// c + 1 and targets/llvm makes each pair one 4-byte access.
func (p *mma) epilogue(k *kernelGen, x ix, results []*ir.Value, blk gemmBlock, warpRow, warpCol *ir.Value, fm, fn int64) {
	b, loc := x.b, x.loc
	z, rowBase, colBase, lane, mRows, nCols, rowTail, colTail := blk.z, blk.rowBase, blk.colBase, blk.lane, blk.mRows, blk.nCols, blk.rowTail, blk.colTail
	body := loop.Body(k.nest)
	m := p.batchIndices(k, x, z)
	g, t2 := x.shr(lane, 2), x.mulc(x.and(lane, 3), 2)
	rows0 := x.add(x.add(rowBase, warpRow), g)
	cols0 := x.add(x.add(colBase, warpCol), t2)
	fragsN := fn
	paired := !colTail || (p.n != ir.Dynamic && p.n%2 == 0)
	if p.conv != nil {
		paired = p.conv.ow%2 == 0 // a pair in one output row
	}
	// emit clones the body for the elements at row and the given columns
	// (bound to the nest's arguments by cols) with the given accumulators,
	// op-major.
	emit := func(b *ir.Builder, row *ir.Value, cols []map[*ir.Value]*ir.Value, accs []*ir.Value) {
		ms := make([]map[*ir.Value]*ir.Value, len(cols))
		for e := range ms {
			ms[e] = maps.Clone(m)
			maps.Copy(ms[e], cols[e])
			ms[e][p.rowArg(body)] = row
			ms[e][p.kloop.Result(0)] = accs[e]
		}
		for op := body.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
			if op != p.kloop {
				for e := range ms {
					b.Insert(op.Clone(ms[e]))
				}
			}
		}
	}
	for i := range fm {
		for j := range fragsN {
			for h := range int64(2) {
				row := x.addc(rows0, i*16+8*h)
				col := x.addc(cols0, j*8)
				at := int((i*fragsN+j)*4 + 2*h)
				accs := []*ir.Value{results[at], results[at+1]}
				var ok *ir.Value
				if rowTail {
					ok = x.lt(row, mRows)
				}
				guarded := func(ok *ir.Value, body func(b *ir.Builder)) {
					if ok == nil {
						body(b)
						return
					}
					loop.If(b, loc, ok, nil, func(b *ir.Builder) []*ir.Value { body(b); return nil }, nil)
				}
				if paired {
					if colTail {
						ok = x.both2(ok, x.lt(col, nCols))
					}
					guarded(ok, func(b *ir.Builder) {
						x := x.at(b)
						emit(b, x.index(row), p.cols(x, body, col, true), accs)
					})
					continue
				}
				for e := range int64(2) {
					c := x.addc(col, e)
					guarded(x.both2(ok, x.lt(c, nCols)), func(b *ir.Builder) {
						x := x.at(b)
						emit(b, x.index(row), p.cols(x, body, c, false), accs[e:e+1])
					})
				}
			}
		}
	}
}

// rowArg is the nest's argument the GEMM's row (M) index binds: the one
// after the batch dims of a matmul, a convolution's output channel.
func (p *mma) rowArg(body *ir.Block) *ir.Value {
	if p.conv != nil {
		return body.Argument(1)
	}
	return body.Argument(len(p.batch))
}

// cols binds the nest's column arguments for the epilogue's element at
// column col, or for the pair at col and col + 1 (col even): the N index
// itself for a matmul, 2·(col/2) and its successor written so that their
// alignment shows; the output position for a convolution (convCols).
func (p *mma) cols(x ix, body *ir.Block, col *ir.Value, pair bool) []map[*ir.Value]*ir.Value {
	if p.conv != nil {
		return p.conv.convCols(x, body, col, pair)
	}
	arg := body.Argument(len(p.batch) + 1)
	if !pair {
		return []map[*ir.Value]*ir.Value{{arg: x.index(col)}}
	}
	b, loc := x.b, x.loc
	c0 := arith.Binary(b, arith.OpMulI, loc, x.index(x.shr(col, 1)), arith.ConstantIndex(b, loc, 2))
	c1 := arith.Binary(b, arith.OpAddI, loc, c0, arith.ConstantIndex(b, loc, 1))
	return []map[*ir.Value]*ir.Value{{arg: c0}, {arg: c1}}
}
