package togpu

import (
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
)

// flashGen builds one kernel body.
type flashGen struct {
	Flash
	b          *ir.Builder
	loc        ir.Location
	x          ix
	ld         int64     // workgroup row length (D + flashPad)
	q, k, v, o *ir.Value // global 1-D buffers
	lse        *ir.Value // with LSE, the rows' log-sum-exp (f32)
	smem       *ir.Value // workgroup memory: per stage a K then a V tile
	tid, t2    *ir.Value
	rows       [][2]*ir.Value // per m16 tile of the warp, this lane's two query rows (g and g+8)
	kvBase     *ir.Value      // the block's (batch, head) offset in k and v
	kvChunks   []chunk        // this thread's share of a K or V tile
	tiles      *ir.Value      // key tiles the block visits
	seq        *ir.Value      // with Dynamic, the length (offset type)
	// lastFirst numbers a (batch, head)'s row blocks from its last: the
	// causal forward's later rows visit more key tiles, and their blocks
	// then start first rather than trail the launch.
	lastFirst bool
	// item is, with Persistent, the row block the block computes now
	// (the key loop over its row blocks' index), else nil: the block's
	// index.
	item *ir.Value
	// With Persistent, next is the block's next row block, hasNext (i1)
	// whether it has one, and first (i1) whether item is its first.
	next, hasNext, first *ir.Value
	// stageAt is, with Staged, the workgroup offset of the free stage the
	// warps store O through (see stagedStore).
	stageAt *ir.Value
	// With Persistent and Specialized (emitPersistentWS), tileBase is the
	// key tiles of the block's row blocks before item (the stages and
	// their mbarriers' phases run on through the block's row blocks: key
	// tile kt takes slot tileBase + kt), wsOrd how many row blocks came
	// before, and wsBars the block's mbarriers, initialized once; all nil
	// otherwise.
	tileBase, wsOrd, wsBars *ir.Value
}

// slot is key tile kt's place in the sequence of the block's stages:
// kt, or with tileBase that many tiles later.
func (g *flashGen) slot(x ix, kt *ir.Value) *ir.Value {
	if g.tileBase == nil {
		return kt
	}
	return x.add(g.tileBase, kt)
}

// prefetches reports whether the kernel copies the next row block's Q
// and first K and V tiles during the current one's last key tile
// (Persistent, emitWGMMAPipe): with cp.async and a static, even number
// of key tiles a row block, so that the next one's stages are those its
// tile 0 uses (non-causal, no PrefetchV's three V stages).
func (g *flashGen) prefetches() bool {
	t := g.Tile
	return t.Persistent > 0 && t.Pipe && !t.PrefetchV && !t.TMA && !t.Specialized &&
		!g.Causal && !g.Dynamic && ceilDivInt(g.Lk, t.Keys)%2 == 0
}

// itemLoop builds, at b, a persistent block's loop over its row blocks
// (FlashTile.Persistent): one a round of grid row blocks (of Batch times
// a batch's), bid in even rounds and, when causal, grid − 1 − bid in odd
// ones — a causal row block's work grows with its row, and with a grid
// that is a multiple of a head's row blocks, bid, bid + grid, … would all
// be the same row of their heads. body builds the code of row block item
// (it is the loop's index, round·grid + bid) from the values carried
// from the block's row block before (init at the first) and returns
// their next ones; it returns the values after the last.
func (g *flashGen) itemLoop(b *ir.Builder, init []*ir.Value, body func(b *ir.Builder, it, item *ir.Value, carried []*ir.Value) []*ir.Value) []*ir.Value {
	loc, x := g.loc, g.x.at(b)
	items := x.index(x.mul(g.rowBlocks(x), x.c(g.Batch)))
	bid, grid := gpu.BlockID(b, loc, "x"), gpu.GridDim(b, loc, "x")
	end := arith.Binary(b, arith.OpAddI, loc, items, bid)
	types := make([]ir.Type, len(init))
	for i, v := range init {
		types[i] = v.Type()
	}
	odd0 := arith.ConstantInt(b, loc, 0, ir.I1)
	l := loop.For(b, loc, bid, end, grid, append([]*ir.Value{odd0}, init...), func(b *ir.Builder, it *ir.Value, carried []*ir.Value) []*ir.Value {
		odd, vals := carried[0], carried[1:]
		item := it
		if g.Causal {
			back := arith.Binary(b, arith.OpSubI, loc, arith.Binary(b, arith.OpAddI, loc, it, grid),
				arith.Binary(b, arith.OpAddI, loc, arith.Binary(b, arith.OpAddI, loc, bid, bid), arith.ConstantIndex(b, loc, 1)))
			item = arith.NewSelect(b, loc, odd, back, it)
		}
		var els loop.IfBody
		if len(vals) > 0 {
			els = func(*ir.Builder) []*ir.Value { return vals }
		}
		r := loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIULT, item, items), types, func(b *ir.Builder) []*ir.Value {
			return body(b, it, item, vals)
		}, els).Results()
		return append([]*ir.Value{arith.Binary(b, arith.OpXOrI, loc, odd, arith.ConstantInt(b, loc, 1, ir.I1))}, r...)
	})
	return l.Results()[1:]
}

// itemStart returns row block item's batch z, first row and the offsets
// of its Q tile and of its batch's K and V.
func (g *flashGen) itemStart(x ix, item *ir.Value) (z, rowBase, qBase, kvBase *ir.Value) {
	tilesM := g.rowBlocks(x)
	z, mt := x.div32(item, tilesM), x.rem32(item, tilesM)
	if g.lastFirst {
		mt = x.sub(x.addc(tilesM, -1), mt)
	}
	rowBase = x.mulc(mt, g.Tile.Rows)
	return z, rowBase, x.add(g.batchBase(x, z, g.Lq), x.mulc(rowBase, g.D)), g.batchBase(x, z, g.Lk)
}

// blockIndex is the (batch, row block) index the block computes: its
// index, or with Persistent the row block of the block's loop.
func (g *flashGen) blockIndex(b *ir.Builder) *ir.Value {
	if g.item != nil {
		return g.item
	}
	return g.x.at(b).from(gpu.BlockID(b, g.loc, "x"))
}

// stage is the offset of a stage's K tile; its V tile follows.
func (g *flashGen) stage(i int64) int64 { return 2 * i * g.Tile.Keys * g.ld }

// lq and lk are the query and key counts in x's offset type: constants,
// or with Dynamic the kernel's length argument.
func (g *flashGen) lq(x ix) *ir.Value {
	if g.Dynamic {
		return g.seq
	}
	return x.c(g.Lq)
}

func (g *flashGen) lk(x ix) *ir.Value {
	if g.Dynamic {
		return g.seq
	}
	return x.c(g.Lk)
}

// rowTail reports whether the last row block can overhang Lq, keyTail
// whether the last key tile can overhang Lk (always with Dynamic).
func (g *flashGen) rowTail() bool { return g.Dynamic || g.Lq%g.Tile.Rows != 0 }
func (g *flashGen) keyTail() bool { return g.Dynamic || g.Lk%g.Tile.Keys != 0 }

// batchBase is z·n·D, the offset of batch z in a buffer of n rows a
// batch (n is Lq or Lk, the length with Dynamic).
func (g *flashGen) batchBase(x ix, z *ir.Value, n int64) *ir.Value {
	if g.Dynamic {
		return x.mul(z, x.mulc(g.seq, g.D))
	}
	return x.mulc(z, n*g.D)
}

// rowBlocks is the number of row blocks of one batch.
func (g *flashGen) rowBlocks(x ix) *ir.Value {
	if g.Dynamic {
		return x.div(x.addc(g.seq, g.Tile.Rows-1), x.c(g.Tile.Rows))
	}
	return x.c(ceilDivInt(g.Lq, g.Tile.Rows))
}

// chunk is one 16-byte cp.async of a thread in a tile copy: tile row
// row+rowC, workgroup offset dst+dstC from the tile's start and global
// offset src+srcC from the tile's first row. The values are computed once
// per thread, the constants fold into the instructions' immediates;
// guard, when not nil, says whether the thread has the chunk at all
// (tiles whose chunk count the block size does not divide).
type chunk struct {
	row, dst, src    *ir.Value
	rowC, dstC, srcC int64
	guard            *ir.Value
}

// chunks returns this thread's chunks of a tile of rows rows.
func (g *flashGen) chunks(rows int64) []chunk {
	x, T := g.x, g.Threads()
	per := g.D / 8 // chunks per row
	total := rows * per
	var out []chunk
	if T%per == 0 {
		// Thread t copies chunk t%per of rows t/per + i·T/per.
		r0, c0 := x.div(g.tid, x.c(per)), x.rem(g.tid, x.c(per))
		dst, src := x.add(x.mulc(r0, g.ld), x.mulc(c0, 8)), x.add(x.mulc(r0, g.D), x.mulc(c0, 8))
		for i := range ceilDivInt(total, T) {
			ch := chunk{row: r0, dst: dst, src: src, rowC: i * T / per, dstC: i * T / per * g.ld, srcC: i * T / per * g.D}
			if (i+1)*T > total {
				ch.guard = x.lt(g.tid, x.c(total-i*T))
			}
			out = append(out, ch)
		}
		return out
	}
	for i := range ceilDivInt(total, T) {
		c := x.addc(g.tid, i*T)
		r, col := x.div(c, x.c(per)), x.rem(c, x.c(per))
		ch := chunk{row: r, dst: x.add(x.mulc(r, g.ld), x.mulc(col, 8)), src: x.add(x.mulc(r, g.D), x.mulc(col, 8))}
		if (i+1)*T > total {
			ch.guard = x.lt(c, x.c(total))
		}
		out = append(out, ch)
	}
	return out
}

// copyTile issues this thread's cp.async copies of a tile from global
// buffer src (tile row r at srcAt + r·D) to workgroup offset dstAt (row r
// at dstAt + r·ld). When valid is not nil, rows first + r at or past it
// are zero filled.
func (g *flashGen) copyTile(b *ir.Builder, cs []chunk, src, srcAt, dstAt, first, valid *ir.Value) {
	x := g.x.at(b)
	// The chunks' index bases, once per distinct thread offset: their
	// constants, added in index, become immediate offsets (see indexAdd).
	srcBase, dstBase := map[*ir.Value]*ir.Value{}, map[*ir.Value]*ir.Value{}
	for _, c := range cs {
		if srcBase[c.src] == nil {
			srcBase[c.src], dstBase[c.dst] = x.index(x.add(srcAt, c.src)), x.index(x.add(dstAt, c.dst))
		}
	}
	for _, c := range cs {
		issue := func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			s := indexAdd(b, g.loc, srcBase[c.src], c.srcC)
			n := arith.ConstantInt(b, g.loc, 16, ir.I32)
			if valid != nil {
				ok := x.lt(x.addc(x.add(first, c.row), c.rowC), valid)
				s = arith.NewSelect(b, g.loc, ok, s, arith.ConstantIndex(b, g.loc, 0))
				n = arith.NewSelect(b, g.loc, ok, n, arith.ConstantInt(b, g.loc, 0, ir.I32))
			}
			gpu.CpAsync(b, g.loc, g.smem, indexAdd(b, g.loc, dstBase[c.dst], c.dstC), src, s, n, 16)
			return nil
		}
		if c.guard == nil {
			issue(b)
		} else {
			loop.If(b, g.loc, c.guard, nil, issue, nil)
		}
	}
}

// load issues the copies of key tile kt (an offset-typed value) into
// stage kt % 2.
func (g *flashGen) load(b *ir.Builder, kt *ir.Value) { g.loadStage(b, kt, g.ld) }

// loadStage issues the copies of key tile kt's K and V into stage kt % 2,
// whose rows are row elements apart in workgroup memory (a stage is the K
// tile, then the V tile).
func (g *flashGen) loadStage(b *ir.Builder, kt *ir.Value, row int64) {
	x := g.x.at(b)
	first := x.mulc(kt, g.Tile.Keys)
	at := x.mulc(x.and(kt, 1), 2*g.Tile.Keys*row)
	src := x.add(g.kvBase, x.mulc(first, g.D))
	var valid *ir.Value
	if g.keyTail() {
		valid = g.lk(x)
	}
	g.copyKeys(b, g.k, src, at, first, valid)
	g.copyKeys(b, g.v, src, x.addc(at, g.Tile.Keys*row), first, valid)
}

// copyKeys is copyTile for a key tile (Tile.Keys rows from first, in
// kvChunks): where the keys end at valid, a tile wholly before it
// (every tile but the last) takes the copies without guards, after one
// uniform branch, instead of a compare and two selects a chunk, whose
// selected source offsets also cost each chunk its own address
// arithmetic (dynamic lengths: 687 against 531 SASS instructions a
// warp-tile at head dim 128, bench/NOTES.md session 18).
func (g *flashGen) copyKeys(b *ir.Builder, src, srcAt, dstAt, first, valid *ir.Value) {
	cs := g.kvChunks
	if valid == nil {
		g.copyTile(b, cs, src, srcAt, dstAt, first, nil)
		return
	}
	x := g.x.at(b)
	inside := x.lt(x.addc(first, g.Tile.Keys-1), valid)
	loop.If(b, g.loc, inside, nil, func(b *ir.Builder) []*ir.Value {
		g.copyTile(b, cs, src, srcAt, dstAt, first, nil)
		return nil
	}, func(b *ir.Builder) []*ir.Value {
		g.copyTile(b, cs, src, srcAt, dstAt, first, valid)
		return nil
	})
}

// softmax holds the constants of the folded softmax.
type softmax struct {
	c      *ir.Value // scale·log₂e
	negC   *ir.Value // −scale·log₂e
	masked *ir.Value // the value a masked score takes: −inf·sign(scale)
	tau    *ir.Value // flashRescale
	ext    string    // the row extreme: arith.maxnumf, or minnumf for a negative scale
}

// keyTiles is the loop over key tiles [from, to) of the kernels whose
// copies are double-buffered a whole tile ahead, on the carried values it.
// At the top of tile kt it waits for the tile's copies (fenced for the
// tensor cores' async proxy when fence: wgmma reads workgroup memory
// there), synchronizes the block, so that every warp is done with the
// other stage, and issues the next tile's copies into that stage with
// load; then body computes the tile from stage offset at (stage elements
// a stage).
func (g *flashGen) keyTiles(from, to *ir.Value, it []*ir.Value, fence bool, load func(b *ir.Builder, kt *ir.Value), stage int64,
	body func(b *ir.Builder, x ix, kt, at *ir.Value, it []*ir.Value) []*ir.Value) []*ir.Value {
	b, loc, x := g.b, g.loc, g.x
	one := arith.ConstantIndex(b, loc, 1)
	l := loop.For(b, loc, x.index(from), x.index(to), one, it, func(b *ir.Builder, iv *ir.Value, it []*ir.Value) []*ir.Value {
		x := x.at(b)
		kt := x.from(iv)
		gpu.CpAsyncWait(b, loc, 0)
		if fence {
			gpu.FenceProxyAsync(b, loc)
		}
		gpu.Barrier(b, loc)
		next := x.addc(kt, 1)
		loop.If(b, loc, x.lt(next, g.tiles), nil, func(b *ir.Builder) []*ir.Value {
			load(b, next)
			gpu.CpAsyncCommit(b, loc)
			return nil
		}, nil)
		return body(b, x, kt, x.mulc(x.and(kt, 1), stage), it)
	})
	return l.Results()
}

// softmax returns the constants of the kernel's online softmax.
func (g *flashGen) softmax() softmax {
	sm := softmax{ext: arith.OpMaxNumF, masked: g.f32(math.Inf(-1))}
	if g.Scale < 0 {
		sm.ext, sm.masked = arith.OpMinNumF, g.f32(math.Inf(1))
	}
	c := float64(float32(g.Scale * math.Log2E))
	sm.c, sm.negC, sm.tau = g.f32(c), g.f32(-c), g.f32(flashRescale)
	return sm
}

// flashStart is what every flash kernel's start computes: the batch z,
// the block's first query row, the thread's warp, its row in an m16
// tile (gr), its ldmatrix lane parts, and the number of key tiles that
// need no mask (keyTileBounds, once the kernel has set its rows).
type flashStart struct {
	z, rowBase, warp, gr, full *ir.Value
	lo, hi, r8                 *ir.Value // lane / 8 % 2, lane / 16, lane % 8
}

// begin computes the block's and the thread's positions, setting g's
// tid, kvBase and t2.
func (g *flashGen) begin() flashStart {
	b, loc, x := g.b, g.loc, g.x
	g.tid = x.from(gpu.ThreadID(b, loc, "x"))
	z, rowBase, _, kvBase := g.itemStart(x, g.blockIndex(b))
	g.kvBase = kvBase
	lane, warp := x.and(g.tid, 31), x.shr(g.tid, 5)
	gr := x.shr(lane, 2)
	g.t2 = x.mulc(x.and(lane, 3), 2)
	q8, r8 := x.shr(lane, 3), x.and(lane, 7) // ldmatrix: matrix and row of this lane
	lo, hi := x.and(q8, 1), x.shr(q8, 1)
	return flashStart{z: z, rowBase: rowBase, warp: warp, gr: gr, lo: lo, hi: hi, r8: r8}
}

// keyTileBounds sets g.tiles, the key tiles the block visits (causal
// blocks stop at their last row's), and returns how many of the first
// need no mask: below the key tail and, when causal, at or before the
// block's first row.
func (g *flashGen) keyTileBounds(rowBase *ir.Value) *ir.Value {
	x := g.x
	R, K := g.Tile.Rows, g.Tile.Keys
	var full *ir.Value
	if g.Dynamic {
		g.tiles, full = x.div(x.addc(g.seq, K-1), x.c(K)), x.div(g.seq, x.c(K))
	} else {
		g.tiles, full = x.c(ceilDivInt(g.Lk, K)), x.c(g.Lk/K)
	}
	if g.Causal {
		// (A cluster's blocks visit the key tiles of its last: they copy
		// them together.)
		hi := rowBase
		if g.Tile.Cluster > 1 {
			hi = x.op(arith.OpOrI, rowBase, x.c((g.Tile.Cluster-1)*R))
		}
		last := x.div(x.addc(hi, R+K-1), x.c(K))
		g.tiles = x.op(arith.OpMinUI, last, g.tiles)
		full = x.op(arith.OpMinUI, x.div(x.addc(rowBase, 1), x.c(K)), full)
	}
	return full
}

// emit builds the kernel body.
func (g *flashGen) emit() {
	b, loc, x := g.b, g.loc, g.x
	R, K := g.Tile.Rows, g.Tile.Keys
	st := g.begin()
	z, rowBase, warp, gr := st.z, st.rowBase, st.warp, st.gr
	lo, hi, r8 := st.lo, st.hi, st.r8
	WR := g.Tile.warpRows()
	mts := int(WR / 16) // m16 tiles a warp
	for mi := range mts {
		row0 := x.add(rowBase, x.add(x.mulc(warp, WR), x.addc(gr, int64(mi)*16)))
		g.rows = append(g.rows, [2]*ir.Value{row0, x.addc(row0, 8)})
	}
	g.kvChunks = g.chunks(K)
	full := g.keyTileBounds(rowBase)

	// Q is staged in stage 1 when it fits (R ≤ 2·K rows), which key tile
	// 1 overwrites only after the first loop iteration's barrier.
	var qValid *ir.Value
	if g.rowTail() {
		qValid = g.lq(x)
	}
	qBase := x.add(g.batchBase(x, z, g.Lq), x.mulc(rowBase, g.D))
	g.copyTile(b, g.chunks(R), g.q, qBase, x.c(g.qStage()), rowBase, qValid)
	g.load(b, x.c(0))
	gpu.CpAsyncCommit(b, loc)
	gpu.CpAsyncWait(b, loc, 0)
	gpu.Barrier(b, loc)

	// The warp's Q fragments, per m16 tile one m16k16 A per 16 of D:
	// matrix q8 of ldmatrix.x4 is rows 8·(q8%2)…, columns 8·(q8/2)….
	qRow := x.add(x.mulc(warp, WR), x.add(x.mulc(lo, 8), r8))
	qOff := x.addc(x.add(x.mulc(qRow, g.ld), x.mulc(hi, 8)), g.qStage())
	qAt := x.index(qOff)
	qf := make([][][]*ir.Value, mts)
	for mi := range qf {
		qf[mi] = make([][]*ir.Value, g.D/16)
		for ks := range qf[mi] {
			qf[mi][ks] = gpu.LdMatrix(b, loc, g.smem, indexAdd(b, loc, qAt, int64(mi)*16*g.ld+int64(ks)*16), 4, false)
		}
	}
	// K's B fragments (keys × D stored as K is): matrix q8 is keys
	// 8·(q8/2)…, columns 8·(q8%2)…; V's (keys × D, read transposed):
	// keys 8·(q8%2)…, columns 8·(q8/2)…, after the stage's K tile.
	kOff := x.add(x.mulc(x.add(x.mulc(hi, 8), r8), g.ld), x.mulc(lo, 8))
	vOff := x.addc(x.add(x.mulc(x.add(x.mulc(lo, 8), r8), g.ld), x.mulc(hi, 8)), K*g.ld)

	sm := g.softmax()

	// The carried values, per m16 tile: O's accumulators, m per row, l.
	nO := int(g.D / 8) // n8 tiles of O
	per := 4*nO + 2 + g.Tile.sums()
	inits := make([]*ir.Value, 0, mts*per)
	for range mts {
		for range 4 * nO {
			inits = append(inits, g.f32(0))
		}
		inits = append(inits, sm.masked, sm.masked)
		for range g.Tile.sums() {
			inits = append(inits, g.f32(0))
		}
	}
	// tileLoop runs key tiles [from, to) on the carried values it.
	tileLoop := func(from, to *ir.Value, it []*ir.Value, masked bool) []*ir.Value {
		return g.keyTiles(from, to, it, false, g.load, g.stage(1), func(b *ir.Builder, x ix, kt, at *ir.Value, it []*ir.Value) []*ir.Value {
			s := g.scores(b, qf, x.add(at, kOff))
			steps := make([][]*ir.Value, mts)
			os, ls := make([][]*ir.Value, mts), make([][]*ir.Value, mts)
			var negMC [][2]*ir.Value
			for mi := range mts {
				if masked {
					g.mask(b, s[mi], x.mulc(kt, K), sm, g.rows[mi])
				}
				seg := it[mi*per : (mi+1)*per]
				var nmc [2]*ir.Value
				steps[mi], nmc = g.softmaxStep(b, s[mi], seg[:4*nO], seg[4*nO:4*nO+2], seg[4*nO+2:], sm)
				os[mi], ls[mi] = steps[mi][:4*nO], steps[mi][4*nO+2:]
				negMC = append(negMC, nmc)
			}
			// (product updates steps' accumulators in place.)
			if !g.Tile.Fused {
				negMC = nil
			}
			g.product(b, s, os, ls, x.add(at, vOff), negMC, sm)
			return slices.Concat(steps...)
		})
	}
	it := tileLoop(x.c(0), full, inits, false)
	if g.Causal || g.keyTail() {
		it = tileLoop(full, g.tiles, it, true)
	}
	for mi := range mts {
		g.store(it[mi*per:(mi+1)*per], nO, g.rows[mi])
	}
}

// indexAdd is the index i + c. (Constants added in index rather than in
// i32 become the immediate offsets of the shared-memory instructions: an
// i32 sum is widened after the add, which hides the constant.)
func indexAdd(b *ir.Builder, loc ir.Location, i *ir.Value, c int64) *ir.Value {
	if c == 0 {
		return i
	}
	return arith.Binary(b, arith.OpAddI, loc, i, arith.ConstantIndex(b, loc, c))
}

func (g *flashGen) f32(v float64) *ir.Value { return arith.ConstantFloat(g.b, g.loc, v, ir.F32) }

// fop is a binary f32 op at b.
func fop(b *ir.Builder, loc ir.Location, name string, x, y *ir.Value) *ir.Value {
	return arith.Binary(b, name, loc, x, y)
}

// mathOp is the f32 math op name (math.exp2, math.fma) of xs.
func mathOp(b *ir.Builder, loc ir.Location, name string, xs ...*ir.Value) *ir.Value {
	return b.Op(name, loc, xs, []ir.Type{ir.F32},
		ir.NamedAttr{Name: arith.FastMathAttr, Value: arith.FastMathNone}).Result(0)
}

// approxExp2 is math.exp2 with fastmath<afn>: the backends may flush
// subnormal results to zero (ex2.approx.ftz), which a probability below
// 2^-126 never notices after its rounding to bf16.
func approxExp2(b *ir.Builder, loc ir.Location, x *ir.Value) *ir.Value {
	return b.Op(mathd.OpExp2, loc, []*ir.Value{x}, []ir.Type{ir.F32},
		ir.NamedAttr{Name: arith.FastMathAttr, Value: afn}).Result(0)
}

var afn, _ = arith.FastMath("afn")

// scores returns S = Q·Kᵀ for the warp's rows and the tile's keys:
// s[mi][j][r] is the m16n8 accumulator value r of m16 tile mi and key
// tile j. Each K fragment serves every m16 tile.
func (g *flashGen) scores(b *ir.Builder, qf [][][]*ir.Value, kAt *ir.Value) [][][]*ir.Value {
	return g.scoresWith(b, len(qf), func(_ *ir.Builder, mi int, ks int64) []*ir.Value { return qf[mi][ks] }, kAt)
}

// scoresWith is scores for m16 tiles whose A fragment of k16 step ks
// a returns when the step begins (from registers, or loaded then).
func (g *flashGen) scoresWith(b *ir.Builder, mts int, a func(b *ir.Builder, mi int, ks int64) []*ir.Value, kAt *ir.Value) [][][]*ir.Value {
	kAt = g.x.at(b).index(kAt)
	zero := arith.ConstantFloat(b, g.loc, 0, ir.F32)
	s := make([][][]*ir.Value, mts)
	for mi := range s {
		s[mi] = make([][]*ir.Value, g.Tile.Keys/8)
		for j := range s[mi] {
			s[mi][j] = []*ir.Value{zero, zero, zero, zero}
		}
	}
	for ks := range g.D / 16 {
		af := make([][]*ir.Value, mts)
		for mi := range af {
			af[mi] = a(b, mi, ks)
		}
		for np := range g.Tile.Keys / 16 {
			r := gpu.LdMatrix(b, g.loc, g.smem, indexAdd(b, g.loc, kAt, np*16*g.ld+ks*16), 4, false)
			for mi, sm := range s {
				// (Copies: mask and softmaxStep replace the values in place.)
				sm[2*np] = slices.Clone(gpu.MMASync(b, g.loc, g.Elem, af[mi], r[:2], sm[2*np]))
				sm[2*np+1] = slices.Clone(gpu.MMASync(b, g.loc, g.Elem, af[mi], r[2:], sm[2*np+1]))
			}
		}
	}
	return s
}

// pair rounds the f32 values x and y to the element type and packs them
// in an i32, x in the lower half (a fragment register).
func (g *flashGen) pair(b *ir.Builder, x, y *ir.Value) *ir.Value {
	half := func(v *ir.Value) *ir.Value {
		e := arith.NewCast(b, arith.OpTruncF, g.loc, v, g.Elem)
		u := arith.NewCast(b, arith.OpBitcast, g.loc, e, ir.I16)
		return arith.NewCast(b, arith.OpExtUI, g.loc, u, ir.I32)
	}
	hi := arith.Binary(b, arith.OpShLI, g.loc, half(y), arith.ConstantInt(b, g.loc, 16, ir.I32))
	return arith.Binary(b, arith.OpOrI, g.loc, half(x), hi)
}

// mask replaces masked scores of one m16 tile by sm.masked: keys past Lk
// and, when causal, keys after the row. Value r of n8 tile j is row
// rows[r/2], key first + 8j + t2 + r%2.
func (g *flashGen) mask(b *ir.Builder, s [][]*ir.Value, first *ir.Value, sm softmax, rows [2]*ir.Value) {
	x := g.x.at(b)
	// (A causal mask of one dynamic length masks the keys past it in
	// every row below it; the rows past it are not stored.)
	keyTail := g.keyTail() && !(g.Dynamic && g.Causal)
	base := x.add(first, g.t2)
	for j := range s {
		for r := range 4 {
			key := x.addc(base, int64(8*j+r%2))
			var masked *ir.Value
			if keyTail {
				masked = arith.NewCmpI(b, g.loc, arith.CmpIUGE, key, g.lk(x))
			}
			if g.Causal {
				after := arith.NewCmpI(b, g.loc, arith.CmpIUGT, key, rows[r/2])
				if masked == nil {
					masked = after
				} else {
					masked = arith.Binary(b, arith.OpOrI, g.loc, masked, after)
				}
			}
			s[j][r] = arith.NewSelect(b, g.loc, masked, sm.masked, s[j][r])
		}
	}
}

// quadReduce combines v over the 4 lanes that share a row (lane bits 0
// and 1) with op.
func (g *flashGen) quadReduce(b *ir.Builder, op string, v *ir.Value) *ir.Value {
	width := arith.ConstantInt(b, g.loc, 32, ir.I32)
	for _, off := range []int64{1, 2} {
		o, _ := gpu.Shuffle(b, g.loc, "xor", v, arith.ConstantInt(b, g.loc, off, ir.I32), width)
		v = fop(b, g.loc, op, v, o)
	}
	return v
}

// tree combines vs pairwise with op: as many operations as a fold, in a
// dependency chain of log₂ len(vs) instead of len(vs).
func tree(b *ir.Builder, loc ir.Location, op string, vs []*ir.Value) *ir.Value {
	for len(vs) > 1 {
		next := make([]*ir.Value, 0, (len(vs)+1)/2)
		for i := 0; i+1 < len(vs); i += 2 {
			next = append(next, fop(b, loc, op, vs[i], vs[i+1]))
		}
		if len(vs)%2 == 1 {
			next = append(next, vs[len(vs)-1])
		}
		vs = next
	}
	return vs[0]
}

// softmaxStep updates the running extremes m and the sums l with the
// tile's scores (one m16 tile's) and, but for Fused (whose product does it
// a key step at a time), replaces them by ex2(s·c − m·c). It returns the accumulators o and l
// rescaled with m (l with the tile's probabilities added but for SumMMA
// and Fused, whose product adds them) in the order of the loop's carried
// values, and −m·c of the lane's two rows. A row's m moves
// to the tile's extreme only when that raises its probabilities above
// 2^flashRescale (as FlashAttention-4 does): otherwise the stale m serves,
// the probabilities stay at most 2^flashRescale (f32 and bf16 hold them as
// precisely; the accumulators then overflow f32 only where Lk·max|v|
// passes 10³⁶ rather than 10³⁸), and when no row of the lane moves, the
// rescaling of its accumulators by ex2((m_old − m_new)·c) is skipped,
// which after the first tiles is the common case.
func (g *flashGen) softmaxStep(b *ir.Builder, s [][]*ir.Value, o, m, l []*ir.Value, sm softmax) ([]*ir.Value, [2]*ir.Value) {
	loc := g.loc
	var mUse, negMC, moved [2]*ir.Value
	for h := range 2 {
		// (Lanes of a row all hold m[h], so the reduction may include it.)
		row := []*ir.Value{m[h]}
		for j := range s {
			row = append(row, s[j][2*h], s[j][2*h+1])
		}
		mNew := g.quadReduce(b, sm.ext, tree(b, loc, sm.ext, row))
		// m_old = ∓inf only before the first tile, whose key 0 is never
		// masked: the growth is +inf and the row moves.
		growth := fop(b, loc, arith.OpMulF, fop(b, loc, arith.OpSubF, mNew, m[h]), sm.c)
		moved[h] = arith.NewCmpF(b, loc, arith.CmpFOGT, growth, sm.tau)
		mUse[h] = arith.NewSelect(b, loc, moved[h], mNew, m[h])
		negMC[h] = fop(b, loc, arith.OpMulF, mUse[h], sm.negC)
	}
	var ps [2][]*ir.Value
	if !g.Tile.Fused {
		for j := range s {
			g.exps(b, s[j], j%2, negMC, sm)
			for r := range 4 {
				ps[r/2] = append(ps[r/2], s[j][r])
			}
		}
	}
	// The rescaling; alpha is ex2(0) = 1 for a row that did not move
	// (and ex2(−inf) = 0 before the first tile).
	types := make([]ir.Type, len(o)+len(l))
	for i := range types {
		types[i] = ir.F32
	}
	kept := append(slices.Clone(o), l...)
	rescaled := loop.If(b, loc, arith.Binary(b, arith.OpOrI, loc, moved[0], moved[1]), types, func(b *ir.Builder) []*ir.Value {
		var alpha [2]*ir.Value
		for h := range 2 {
			alpha[h] = approxExp2(b, loc, fop(b, loc, arith.OpMulF, fop(b, loc, arith.OpSubF, m[h], mUse[h]), sm.c))
		}
		out := make([]*ir.Value, 0, len(kept))
		for i, v := range o {
			out = append(out, fop(b, loc, arith.OpMulF, v, alpha[(i%4)/2]))
		}
		for i, v := range l {
			out = append(out, fop(b, loc, arith.OpMulF, v, alpha[i*2/len(l)]))
		}
		return out
	}, func(*ir.Builder) []*ir.Value { return kept }).Results()
	out := slices.Clone(rescaled[:len(o)])
	out = append(out, mUse[:]...)
	for h, v := range rescaled[len(o):] {
		if !g.Tile.SumMMA && !g.Tile.Fused {
			v = fop(b, loc, arith.OpAddF, v, tree(b, loc, arith.OpAddF, ps[h]))
		}
		out = append(out, v)
	}
	return out, negMC
}

// exps replaces the 4 scores of n8 tile st of a key step (0 or 1) by
// ex2(s·c − m·c), with negMC = −m·c of the lane's two rows: the last
// PolyExp of the step's 8 by polyExp2, the others by ex2.approx.
func (g *flashGen) exps(b *ir.Builder, s []*ir.Value, st int, negMC [2]*ir.Value, sm softmax) {
	for r := range 4 {
		x := mathOp(b, g.loc, mathd.OpFMA, s[r], sm.c, negMC[r/2])
		if int64(4*st+r) >= 8-g.Tile.PolyExp {
			s[r] = g.polyExp2(b, x)
		} else {
			s[r] = approxExp2(b, g.loc, x)
		}
	}
}

// polyExp2 is 2^x for x ≤ flashRescale (the bound of the probabilities)
// on the FMA pipes, as FlashAttention-4 computes part of its
// exponentials: x is clamped below at −126, split as n + f with n =
// round(x) (adding and subtracting 1.5·2²³ rounds to an integer) and
// |f| ≤ 1/2, 2^f is a cubic (minimax relative error 7.5e-5 ≈ 2^-13.7 over
// [−1/2, 1/2] in f32 Horner form, against the 2^-9 of the bf16 rounding
// that follows) and n is added to its exponent field. Below −125 the
// result is a subnormal-sized garbage value < 2^-125 instead of 0 (a
// masked score: nothing next to the row's largest probability, which is
// at least 1); a NaN x gives such a value too rather than NaN.
func (g *flashGen) polyExp2(b *ir.Builder, x *ir.Value) *ir.Value {
	loc := g.loc
	c := func(v float64) *ir.Value { return arith.ConstantFloat(b, loc, v, ir.F32) }
	x = fop(b, loc, arith.OpMaxNumF, x, c(-126))
	const magic = 12582912 // 1.5·2²³: x + magic holds round(x) in its low bits
	t := fop(b, loc, arith.OpAddF, x, c(magic))
	f := fop(b, loc, arith.OpSubF, x, fop(b, loc, arith.OpSubF, t, c(magic)))
	p := c(polyExp2Coeffs[3])
	for k := 2; k >= 0; k-- {
		p = mathOp(b, loc, mathd.OpFMA, p, f, c(polyExp2Coeffs[k]))
	}
	// bits(p) + n·2²³: the low bits of bits(t) are n (two's complement),
	// the rest shifts out.
	i32 := func(v *ir.Value) *ir.Value { return arith.NewCast(b, arith.OpBitcast, loc, v, ir.I32) }
	n := arith.Binary(b, arith.OpMulI, loc, i32(t), arith.ConstantInt(b, loc, 1<<23, ir.I32))
	return arith.NewCast(b, arith.OpBitcast, loc, arith.Binary(b, arith.OpAddI, loc, n, i32(p)), ir.F32)
}

// polyExp2Coeffs are the f32 coefficients of the cubic (constant first)
// that polyExp2 takes for 2^f on [−1/2, 1/2] (a minimax fit of the
// relative error, made with Lawson's iteration).
var polyExp2Coeffs = [4]float64{0.9999280571937561, 0.6932609677314758, 0.2426111400127411, 0.0551716685295105}

// product adds P·V to the accumulators o[mi] of each m16 tile mi (in
// place): the probabilities of n8 tiles 2j and 2j+1 are the m16k16 A
// fragment of key step j; each V fragment serves every m16 tile. With
// SumMMA it adds P's row sums to l[mi] (in place) too. With negMC (Fused)
// p holds the scores: it takes each key step's exponentials
// right before its products, and adds P's row sums to l (but for SumMMA).
func (g *flashGen) product(b *ir.Builder, p [][][]*ir.Value, o, l [][]*ir.Value, vAt *ir.Value, negMC [][2]*ir.Value, sm softmax) {
	vAt = g.x.at(b).index(vAt)
	// 1.0 twice: every B fragment register of a matrix of ones.
	one := int64(0x3F80) // bf16
	if g.Elem == ir.F16 {
		one = 0x3C00
	}
	ones := []*ir.Value{arith.ConstantInt(b, g.loc, one<<16|one, ir.I32)}
	ones = append(ones, ones[0])
	ps := make([][2][]*ir.Value, len(p))
	for j := range g.Tile.Keys / 16 {
		a := make([][]*ir.Value, len(p))
		for mi, pm := range p {
			if negMC != nil {
				for st := range 2 {
					g.exps(b, pm[2*j+int64(st)], st, negMC[mi], sm)
					for r := range 4 {
						ps[mi][r/2] = append(ps[mi][r/2], pm[2*j+int64(st)][r])
					}
				}
			}
			a[mi] = []*ir.Value{
				g.pair(b, pm[2*j][0], pm[2*j][1]), g.pair(b, pm[2*j][2], pm[2*j][3]),
				g.pair(b, pm[2*j+1][0], pm[2*j+1][1]), g.pair(b, pm[2*j+1][2], pm[2*j+1][3]),
			}
			if g.Tile.SumMMA {
				copy(l[mi], gpu.MMASync(b, g.loc, g.Elem, a[mi], ones, l[mi]))
			}
		}
		for dp := range g.D / 16 {
			r := gpu.LdMatrix(b, g.loc, g.smem, indexAdd(b, g.loc, vAt, j*16*g.ld+dp*16), 4, true)
			for mi := range a {
				for h := range int64(2) {
					at := (2*dp + h) * 4
					copy(o[mi][at:at+4], gpu.MMASync(b, g.loc, g.Elem, a[mi], r[2*h:2*h+2], o[mi][at:at+4]))
				}
			}
		}
	}
	if negMC != nil && !g.Tile.SumMMA {
		for mi := range l {
			for h := range 2 {
				l[mi][h] = fop(b, g.loc, arith.OpAddF, l[mi][h], tree(b, g.loc, arith.OpAddF, ps[mi][h]))
			}
		}
	}
}

// store writes O / l of one m16 tile, rounded to the element type, for
// the lane's rows below Lq: accumulator value r of n8 tile j is row
// rows[r/2], column 8j + t2 + r%2. it holds the tile's part of the tile
// loop's results.
func (g *flashGen) store(it []*ir.Value, nO int, rows [2]*ir.Value) {
	b, loc, x := g.b, g.loc, g.x
	var inv [2]*ir.Value
	for h := range 2 {
		var l *ir.Value
		if g.Tile.SumMMA {
			l = it[4*nO+2+2*h] // (the accumulator's rows, complete)
		} else {
			l = g.quadReduce(b, arith.OpAddF, it[4*nO+2+h])
		}
		inv[h] = recip(b, loc, l)
		if g.lse != nil {
			g.storeLSE(b, rows[h], it[4*nO+h], l)
		}
	}
	if g.stageAt != nil {
		g.stageRows(g.stageAt, rows[0], g.o, func(i, h int64) *ir.Value { return fop(b, loc, arith.OpMulF, it[i], inv[h]) })
		return
	}
	for h := range 2 {
		emit := func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			// One index for the row's stores, the columns added in index
			// as constants: the two of a column pair are then one 32-bit
			// store (targets/llvm's vector runs: t2 is even) with an
			// immediate offset, not a 16-bit one with an address of its own.
			at := x.index(x.add(x.add(g.batchBase(x, g.batchOf(b), g.Lq), x.mulc(rows[h], g.D)), g.t2))
			for j := range nO {
				for c := range 2 {
					r := 2*h + c
					v := fop(b, loc, arith.OpMulF, it[4*j+r], inv[h])
					v = arith.NewCast(b, arith.OpTruncF, loc, v, g.Elem)
					loop.Store(b, loc, v, g.o, indexAdd(b, loc, at, int64(8*j+c)))
				}
			}
			return nil
		}
		if !g.rowTail() {
			emit(b)
		} else {
			loop.If(b, loc, x.lt(rows[h], g.lq(x)), nil, emit, nil)
		}
	}
}

// stageRows stores a warp's 16 rows (this lane's rows row0 and row0 + 8,
// its n8 tiles' pairs of columns: value(i, h) is accumulator value i of
// row half h before rounding) into out through the warp's 16 × 64 slice
// of workgroup memory at at (nil: the start), 64 columns at a time, as
// the gemm's staged epilogue does (gemm_epilogue.go): each lane writes its
// pairs of columns (32 bits), row r's 16-byte chunk c at chunk c xor r%8
// (32 distinct banks for the pairs' 8 rows and for the rows' chunks), and
// after gpu.warp_sync reads 16 bytes of a row, so that a warp's store
// covers four whole 128-byte row segments instead of 4 bytes of eight
// rows. The forward stores O so (value: the accumulator scaled by 1/l),
// the backward dQ, dK and dV (FlashGrad.Staged).
func (g *flashGen) stageRows(at, row0, out *ir.Value, value func(i, h int64) *ir.Value) {
	b, loc, x := g.b, g.loc, g.x
	const sliceRows, sliceCols = 16, 64
	lane := x.and(g.tid, 31)
	gq := x.shr(lane, 2)
	slice := x.mulc(x.shr(g.tid, 5), sliceRows*sliceCols)
	if at != nil {
		slice = x.add(at, slice)
	}
	warpRow := x.sub(row0, gq)
	cr, cc := x.shr(lane, 3), x.and(lane, 7)
	base := g.batchBase(x, g.batchOf(b), g.Lq)
	for pass := range g.D / sliceCols {
		for j := range int64(sliceCols / 8) {
			f := pass*sliceCols/8 + j
			for h := range int64(2) {
				at := x.index(x.add(x.add(x.add(slice, x.mulc(x.addc(gq, 8*h), sliceCols)), x.mulc(x.xorc(gq, j), 8)), g.t2))
				for c := range int64(2) {
					loop.Store(b, loc, arith.NewCast(b, arith.OpTruncF, loc, value(4*f+2*h+c, h), g.Elem), g.smem, indexAdd(b, loc, at, c))
				}
			}
		}
		gpu.WarpSync(b, loc)
		// The copy-out: 16 bytes (8 columns) of row cr + 4i a lane.
		for i := range int64(sliceRows / 4) {
			r := x.addc(cr, 4*i)
			at := x.index(x.add(x.add(slice, x.mulc(r, sliceCols)), x.mulc(x.xor(cc, x.and(r, 7)), 8)))
			vals := make([]*ir.Value, 8)
			for e := range vals {
				vals[e] = loop.Load(b, loc, g.smem, indexAdd(b, loc, at, int64(e)))
			}
			row := x.add(warpRow, r)
			emit := func(b *ir.Builder) []*ir.Value {
				x := x.at(b)
				to := x.index(x.add(x.add(base, x.mulc(row, g.D)), x.addc(x.mulc(cc, 8), pass*sliceCols)))
				for e, v := range vals {
					loop.Store(b, loc, v, out, indexAdd(b, loc, to, int64(e)))
				}
				return nil
			}
			if !g.rowTail() {
				emit(b)
			} else {
				loop.If(b, loc, x.lt(row, g.lq(x)), nil, emit, nil)
			}
		}
		gpu.WarpSync(b, loc)
	}
}

// recip is 1/l, correctly rounded, for l ≥ 1 (a row's sum): the
// approximate reciprocal r (rcp.approx: arith.divf with fastmath afn)
// corrected by one Newton step r − r·(l·r − 1) with fmas, as ptxas's own
// div.rn.f32 computes it for operands in the normal range. div.rn.f32
// itself adds a slow path that is a subroutine call, and ptxas serializes
// every wgmma of a kernel that calls one when the driver's linker
// compiles it (relocatable code: "(C7509) … serialized due to the
// presence of Extern calls"): every wgmma flash forward ran so on the H200
// until session 13.
func recip(b *ir.Builder, loc ir.Location, l *ir.Value) *ir.Value {
	one := arith.ConstantFloat(b, loc, 1, ir.F32)
	r := b.Op(arith.OpDivF, loc, []*ir.Value{one, l}, []ir.Type{ir.F32},
		ir.NamedAttr{Name: arith.FastMathAttr, Value: afn}).Result(0)
	t := mathOp(b, loc, mathd.OpFMA, l, r, arith.ConstantFloat(b, loc, -1, ir.F32))
	return mathOp(b, loc, mathd.OpFMA, arith.Unary(b, arith.OpNegF, loc, r), t, r)
}

// storeLSE writes row's log₂-sum-exp m·c + log₂ l (c = Scale·log₂e; m
// the row's running extreme, l its total sum) from the first lane of the
// row's quad, when the row is below Lq.
func (g *flashGen) storeLSE(b *ir.Builder, row, m, l *ir.Value) {
	x, loc := g.x.at(b), g.loc
	c := arith.ConstantFloat(b, loc, float64(float32(g.Scale*math.Log2E)), ir.F32)
	lse := fop(b, loc, arith.OpAddF, fop(b, loc, arith.OpMulF, m, c), mathOp(b, loc, mathd.OpLog2, l))
	cond := arith.NewCmpI(b, loc, arith.CmpIEQ, g.t2, x.c(0))
	if g.rowTail() {
		cond = x.both(cond, x.lt(row, g.lq(x)))
	}
	loop.If(b, loc, cond, nil, func(b *ir.Builder) []*ir.Value {
		x := x.at(b)
		loop.Store(b, loc, lse, g.lse, x.index(x.add(x.mul(g.batchOf(b), g.lq(x)), row)))
		return nil
	}, nil)
}

// batchOf is the block's (batch, head) index (recomputed after the loop
// rather than kept in a register through it).
func (g *flashGen) batchOf(b *ir.Builder) *ir.Value {
	x := g.x.at(b)
	return x.div32(g.blockIndex(b), g.rowBlocks(x))
}
