package togpu

import (
	"math/bits"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The wgmma flash kernel (FlashTile.WGMMA, sm_90a only): the same online
// softmax as the mma.sync kernel (softmaxStep, mask, store), with both
// products on Hopper's warpgroup MMA. A block is Rows/64 warpgroups of 4
// warps, each warpgroup 64 query rows (a warp 16, in the m16 accumulator
// layout the mma.sync kernel has, so the softmax code is shared). K and V
// tiles of Keys keys are stored in the 128-byte swizzle gpu.wgmma reads,
// in panels of 64 columns (a 64-element row is 128 bytes: 16-byte chunk c
// of row r at chunk c xor r%8; a head dim of 128 is two panels, the
// second after all rows of the first), double-buffered by cp.async; each
// thread fences its copies for the tensor cores (gpu.fence_proxy_async)
// before the tile's barrier. Per tile a warpgroup computes S = Q·Kᵀ with
// gpu.wgmma (A = Q, from registers loaded by ldmatrix from its own
// swizzled tile each key tile — see emitWGMMA — or with QShared read by
// descriptor, one gpu.wgmma a panel; B = the K tile, K-major), runs the
// softmax on S's fragments and computes O += P·V with a second one (A =
// the probabilities packed from S's registers, B = the V tile, MN-major).
// The unpipelined kernel (emitWGMMA) takes head dim 64; the pipelined one
// (emitWGMMAPipe) 64 and, with QShared, 128.

// wgPanel is the width in elements of a panel of a swizzled tile: one
// 128-byte row.
const wgPanel = gpu.WGMMASwizzleRow

// wgStage is the element offset of stage i's K tile; its V tile follows.
func (g *flashGen) wgStage(i int64) int64 { return 2 * i * g.Tile.Keys * g.D }

// swizzledChunks returns this thread's 16-byte chunks of a tile of rows
// rows copied into the 128-byte swizzle, D/64 panels of rows × 64
// elements: thread t copies chunk t%(D/8) of rows t/(D/8) + i·T/(D/8),
// and since T/(D/8) is a multiple of 8 (T ≥ 128, D ≤ 128), its chunk lands
// at the same swizzled column in every row it copies.
func (g *flashGen) swizzledChunks(rows int64) []chunk {
	return g.swizzledChunksOf(g.x, rows, g.tid, g.Threads())
}

// swizzledChunksOf is swizzledChunks for the T threads numbered tid
// (built by x). Where T/(D/8) is not a multiple of 8 (64 threads at head
// dim 128), the threads copy a panel at a time instead: thread t chunk
// t%8 of rows t/8 + i·T/8 of each panel.
func (g *flashGen) swizzledChunksOf(x ix, rows int64, tid *ir.Value, T int64) []chunk {
	return g.swizzledChunksIn(x, rows, rows, tid, T)
}

// swizzledChunksIn is swizzledChunksOf for the first rows rows of a tile
// whose panels are panelRows rows (PrefetchQ: a warpgroup's 64 of the Q
// tile's Rows).
func (g *flashGen) swizzledChunksIn(x ix, rows, panelRows int64, tid *ir.Value, T int64) []chunk {
	per := g.D / 8
	if T/per%8 != 0 {
		const cpr = wgPanel / 8 // (a panel row's chunks)
		r0, cp := x.shr(tid, 3), x.and(tid, cpr-1)
		dst := x.add(x.mulc(r0, wgPanel), x.mulc(x.xor(cp, x.and(r0, 7)), 8))
		src := x.add(x.mulc(r0, g.D), x.mulc(cp, 8))
		var out []chunk
		for p := range g.D / wgPanel {
			for i := range ceilDivInt(rows*cpr, T) {
				rc := i * T / cpr
				ch := chunk{row: r0, dst: dst, src: src, rowC: rc, dstC: p*panelRows*wgPanel + rc*wgPanel, srcC: rc*g.D + p*wgPanel}
				if (i+1)*T > rows*cpr {
					ch.guard = x.lt(tid, x.c(rows*cpr-i*T))
				}
				out = append(out, ch)
			}
		}
		return out
	}
	r0, c0 := x.shr(tid, int64(bits.TrailingZeros64(uint64(per)))), x.and(tid, per-1)
	cp := x.and(c0, wgPanel/8-1) // (the chunk in its panel)
	dst := x.add(x.mulc(x.shr(c0, 3), panelRows*wgPanel), x.add(x.mulc(r0, wgPanel), x.mulc(x.xor(cp, x.and(r0, 7)), 8)))
	src := x.add(x.mulc(r0, g.D), x.mulc(c0, 8))
	total := rows * per
	var out []chunk
	for i := range ceilDivInt(total, T) {
		rc := i * T / per
		ch := chunk{row: r0, dst: dst, src: src, rowC: rc, dstC: rc * wgPanel, srcC: rc * g.D}
		if (i+1)*T > total {
			ch.guard = x.lt(tid, x.c(total-i*T))
		}
		out = append(out, ch)
	}
	return out
}

// wgLoad issues the copies of key tile kt (an offset-typed value) into
// stage kt % 2.
func (g *flashGen) wgLoad(b *ir.Builder, kt *ir.Value) { g.loadStage(b, kt, g.D) }

// wgBegin is begin for a wgmma kernel: a warp's one m16 tile of rows,
// K and V copied into the 128-byte swizzle (setting g's rows, kvChunks
// and tiles too).
func (g *flashGen) wgBegin() flashStart {
	x := g.x
	w := g.begin()
	row0 := x.add(w.rowBase, x.add(x.mulc(w.warp, 16), w.gr))
	g.rows = [][2]*ir.Value{{row0, x.addc(row0, 8)}}
	g.kvChunks = g.swizzledChunks(g.Tile.Keys)
	w.full = g.keyTileBounds(w.rowBase)
	return w
}

// qFragments returns the ldmatrix.x4 offsets of the warp's Q fragments,
// one m16k16 A per k16 step, in the Q tile staged at qStage (head dim
// 64: one panel): matrix q8 of ldmatrix.x4 is rows 8·(q8%2)…, chunk
// 2·step + q8/2, swizzled with the row's r8 (rows are 16-aligned).
func (w flashStart) qFragments(x ix, qStage int64) []*ir.Value {
	qRow := x.add(x.mulc(w.warp, 16), x.add(x.mulc(w.lo, 8), w.r8))
	qRowAt := x.addc(x.mulc(qRow, wgPanel), qStage)
	var qAt []*ir.Value
	for ks := range int64(wgPanel / 16) {
		qAt = append(qAt, x.index(x.add(qRowAt, x.mulc(x.xor(x.addc(w.hi, 2*ks), w.r8), 8))))
	}
	return qAt
}

// emitWGMMA builds the wgmma kernel's body.
func (g *flashGen) emitWGMMA() {
	b, loc, x := g.b, g.loc, g.x
	R, K := g.Tile.Rows, g.Tile.Keys
	w := g.wgBegin()
	z, rowBase, full := w.z, w.rowBase, w.full

	// Q is staged after the stages, for the whole kernel.
	var qValid *ir.Value
	if g.rowTail() {
		qValid = g.lq(x)
	}
	qBase := x.add(g.batchBase(x, z, g.Lq), x.mulc(rowBase, g.D))
	qStage := g.wgStage(2)
	g.copyTile(b, g.swizzledChunks(R), g.q, qBase, x.c(qStage), rowBase, qValid)
	g.wgLoad(b, x.c(0))
	gpu.CpAsyncCommit(b, loc)
	gpu.CpAsyncWait(b, loc, 0)
	gpu.Barrier(b, loc)

	// The warp's Q fragments are loaded again in every
	// key tile rather than kept in registers through the loop: ptxas
	// (12.4, and the CUDA 13 driver's JIT alike) reused the registers of
	// loop-invariant wgmma A operands inside a constant-trip loop (the
	// SASS overwrote them with the softmax's values), which gave wrong
	// results on the device from the second key tile on (bench/NOTES.md,
	// session 4).
	qAt := w.qFragments(x, qStage)

	sm := g.softmax()

	nO := int(g.D / 8)
	per := 4*nO + 2 + 2
	inits := make([]*ir.Value, 0, per)
	for range 4 * nO {
		inits = append(inits, g.f32(0))
	}
	inits = append(inits, sm.masked, sm.masked, g.f32(0), g.f32(0))
	sShape := gpu.WGMMAShape{N: K, KSteps: wgPanel / 16}
	oShape := gpu.WGMMAShape{N: wgPanel, KSteps: K / 16, TransB: true, Acc: true}
	tileLoop := func(from, to *ir.Value, it []*ir.Value, masked bool) []*ir.Value {
		return g.keyTiles(from, to, it, true, g.wgLoad, g.wgStage(1), func(b *ir.Builder, x ix, kt, at *ir.Value, it []*ir.Value) []*ir.Value {
			var qf []*ir.Value
			for _, a := range qAt {
				qf = append(qf, gpu.LdMatrix(b, loc, g.smem, a, 4, false)...)
			}
			sv := gpu.WGMMA(b, loc, g.Elem, sShape, qf, g.smem, x.index(at), nil)
			s := make([][]*ir.Value, K/8)
			for j := range s {
				s[j] = slices.Clone(sv[4*j : 4*j+4])
			}
			if masked {
				g.mask(b, s, x.mulc(kt, K), sm, g.rows[0])
			}
			step, _ := g.softmaxStep(b, s, it[:4*nO], it[4*nO:4*nO+2], it[4*nO+2:], sm)
			// P: the probabilities of n8 tiles 2j and 2j+1 are the A
			// fragment of key step j.
			var p []*ir.Value
			for j := range K / 16 {
				p = append(p,
					g.pair(b, s[2*j][0], s[2*j][1]), g.pair(b, s[2*j][2], s[2*j][3]),
					g.pair(b, s[2*j+1][0], s[2*j+1][1]), g.pair(b, s[2*j+1][2], s[2*j+1][3]))
			}
			o := gpu.WGMMA(b, loc, g.Elem, oShape, p, g.smem, x.index(x.addc(at, K*wgPanel)), step[:4*nO])
			return append(slices.Clone(o), step[4*nO:]...)
		})
	}
	it := tileLoop(x.c(0), full, inits, false)
	if g.Causal || g.keyTail() {
		it = tileLoop(full, g.tiles, it, true)
	}
	g.store(it, nO, g.rows[0])
}

// pipeStages are the workgroup offsets of the pipelined kernel's K and V
// stages and its Q tile: K(kt) at stage kt % 2 and V(kt) at stage kt % 2
// (each stage a K then a V tile), or with PrefetchV or Specialized two K
// stages, then three V stages (V(kt) at kt % 3), then Q, or with OneK the
// K stage, two V stages (V(kt) at kt % 2), then Q.
func (g *flashGen) pipeStages(x ix) (kAt, vAt func(x ix, kt *ir.Value) *ir.Value, qAt int64) {
	tile := g.Tile.Keys * g.D
	if g.Tile.OneK {
		kAt = func(x ix, kt *ir.Value) *ir.Value { return x.c(0) }
		vAt = func(x ix, kt *ir.Value) *ir.Value { return x.addc(x.mulc(x.and(kt, 1), tile), tile) }
		return kAt, vAt, 3 * tile
	}
	if g.Tile.PrefetchV || g.Tile.Specialized {
		kAt = func(x ix, kt *ir.Value) *ir.Value { return x.mulc(x.and(g.slot(x, kt), 1), tile) }
		vAt = func(x ix, kt *ir.Value) *ir.Value {
			_, r := g.by3(x, g.slot(x, kt))
			return x.addc(x.mulc(r, tile), 2*tile)
		}
		return kAt, vAt, 5 * tile
	}
	kAt = func(x ix, kt *ir.Value) *ir.Value { return x.mulc(x.and(kt, 1), g.wgStage(1)) }
	vAt = func(x ix, kt *ir.Value) *ir.Value { return x.addc(x.mulc(x.and(kt, 1), g.wgStage(1)), tile) }
	return kAt, vAt, g.wgStage(2)
}

// by3 returns kt / 3 and kt % 3 for a key tile kt (or a slot): ⌊kt·43691
// / 2¹⁷⌋ (exact below 2¹⁷, and the product fits 32 bits below 49152
// tiles: a row block's, or with tileBase all of a block's row blocks')
// and kt − 3·that, as ptxas makes div.u32 and rem.u32 by 3 a float
// reciprocal.
func (g *flashGen) by3(x ix, kt *ir.Value) (q, r *ir.Value) {
	most := ceilDivInt(g.Lk, g.Tile.Keys)
	if g.tileBase != nil {
		most *= ceilDivInt(g.Batch*ceilDivInt(g.Lq, g.Tile.Rows), g.Tile.Persistent)
	}
	if g.Dynamic || most > 49152 {
		return x.div(kt, x.c(3)), x.rem(kt, x.c(3))
	}
	q = x.shr(x.mulc(kt, 43691), 17)
	return q, x.sub(kt, x.mulc(q, 3))
}

// wgLoadTile issues the copies of key tile kt of src (k or v) to
// workgroup offset at.
func (g *flashGen) wgLoadTile(b *ir.Builder, kt, src, at *ir.Value) {
	g.wgLoadTileOf(b, g.kvBase, kt, src, at)
}

// wgLoadTileOf is wgLoadTile for the batch whose K and V start at
// kvBase.
func (g *flashGen) wgLoadTileOf(b *ir.Builder, kvBase, kt, src, at *ir.Value) {
	x := g.x.at(b)
	first := x.mulc(kt, g.Tile.Keys)
	var valid *ir.Value
	if g.keyTail() {
		valid = g.lk(x)
	}
	g.copyKeys(b, src, x.add(kvBase, x.mulc(first, g.D)), at, first, valid)
}

// emitWGMMAPipe builds the pipelined wgmma kernel (FlashTile.Pipe): as
// emitWGMMA (Rows/64 warpgroups a block sharing the K and V tiles), but
// key tile kt's S = Q·Kᵀ and the previous tile's O += P·V are issued
// together, S is awaited alone (gpu.wgmma with pending 1, then
// gpu.wgmma_wait), and the softmax of tile kt runs while the tensor cores
// finish P·V; O is rescaled after that group completes. Key tile 0 is
// peeled (its S, softmax and P only), and the last P·V follows the loops.
// K and V tiles are copied separately: K(kt+1) at the top of tile kt (its
// stage held K(kt−1), whose product is done; with OneK, into the one K
// stage once S(kt) has completed), V(kt+1) at the end of tile kt, once
// P·V(kt−1), the last reader of its stage, has completed; a tile's copies
// are awaited with one group (the newest V) left in flight. With
// Specialized the block's last warpgroup copies K and V (wsSplit) and the
// consumers (which copy Q, awaited through an mbarrier of its own) wait
// at the stages' full mbarriers instead of the copies and the block
// barrier, and arrive at their empty ones once S (for K) and P·V (for V)
// have completed.
func (g *flashGen) emitWGMMAPipe() {
	b, loc, x := g.b, g.loc, g.x
	R, K := g.Tile.Rows, g.Tile.Keys
	w := g.wgBegin()
	z, rowBase, full := w.z, w.rowBase, w.full
	anyMask := g.Causal || g.keyTail()
	// wg is the thread's warpgroup: with several, shuffled from lane 0
	// (laneZero) so that ptxas knows it is the same in every lane
	// and keeps it, Q's descriptors built from it and the ping-pong
	// barriers' addresses in uniform registers (computed in each lane,
	// each of S's gpu.wgmma moved its A descriptor into them first).
	wg := x.shr(w.warp, 2)
	if R > 64 {
		wg = laneZero(x, wg)
	}
	if g.Tile.SumMMA {
		g.fillOnes(b)
	}

	var qValid *ir.Value
	if g.rowTail() {
		qValid = g.lq(x)
	}
	qBase := x.add(g.batchBase(x, z, g.Lq), x.mulc(rowBase, g.D))
	kAt, vStage, qStage := g.pipeStages(x)
	loadK := func(b *ir.Builder, kt *ir.Value) { g.wgLoadTile(b, kt, g.k, kAt(x.at(b), kt)) }
	loadV := func(b *ir.Builder, kt *ir.Value) { g.wgLoadTile(b, kt, g.v, vStage(x.at(b), kt)) }
	vAt := func(x ix, kt *ir.Value) *ir.Value { return x.index(vStage(x, kt)) }
	pv, ws, tma, oneK := g.Tile.PrefetchV, g.Tile.Specialized, g.Tile.TMA, g.Tile.OneK
	pf := g.prefetches()
	var qChunks []chunk
	if !ws {
		qChunks = g.swizzledChunks(R)
	}
	// nextItem issues, in the last key tile, the copies of the next row
	// block's (when the block has one) Q tile and first K tile, or its
	// first V tile, into their stages (those of key tile tiles, even),
	// and commits them as a group (an empty one without a next row
	// block).
	nextItem := func(b *ir.Builder, v bool) {
		loop.If(b, loc, g.hasNext, nil, func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			_, row, q, kv := g.itemStart(x, g.next)
			if v {
				g.wgLoadTileOf(b, kv, x.c(0), g.v, vStage(x, x.c(0)))
				return nil
			}
			var valid *ir.Value
			if g.rowTail() {
				valid = g.lq(x)
			}
			g.copyTile(b, qChunks, g.q, q, x.c(qStage), row, valid)
			g.wgLoadTileOf(b, kv, x.c(0), g.k, kAt(x, x.c(0)))
			return nil
		}, nil)
		gpu.CpAsyncCommit(b, loc)
	}
	var bars *ir.Value
	var tm *flashTMA
	// qTile is the workgroup offset of the row block's Q tile: with
	// PrefetchQ, of the tile of the row block's parity.
	qTile := x.c(qStage)
	if g.Tile.PrefetchQ {
		bars = g.wsBars
		qTile = g.prefetchQ(x, wg, qStage, qBase, rowBase, qValid)
	} else if ws && g.wsBars != nil {
		// A persistent consumer's row block (emitPersistentWS): the
		// producer runs on; Q's tile is free once every consumer is
		// done with the row block before (its S products and, with
		// Staged, its store), a phase of wsFree (the wait passes at
		// once for the first: parity 1 of a fresh barrier).
		bars = g.wsBars
		par := func(plus int64) *ir.Value { return x.i32(x.and(x.addc(g.wsOrd, plus), 1)) }
		gpu.MbarrierWait(b, loc, bars, x.index(x.c(wsFree)), par(1))
		g.copyTile(b, g.swizzledChunksOf(x, R, g.tid, g.consumers()), g.q, qBase, x.c(qStage), rowBase, qValid)
		gpu.CpAsyncCommit(b, loc)
		gpu.CpAsyncWait(b, loc, 0)
		gpu.FenceProxyAsync(b, loc)
		gpu.MbarrierArrive(b, loc, bars, x.index(x.c(wsQ)))
		gpu.MbarrierWait(b, loc, bars, x.index(x.c(wsQ)), par(0))
		defer gpu.MbarrierArrive(b, loc, bars, x.index(x.c(wsFree)))
	} else if ws {
		// The consumers copy Q, and wait for it only after the block's
		// barrier (which publishes the mbarriers' initialization), so
		// that the copies of Q and of the first K and V tiles overlap.
		loop.If(b, loc, x.lt(g.tid, x.c(g.consumers())), nil, func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			g.copyTile(b, g.swizzledChunksOf(x, R, g.tid, g.consumers()), g.q, qBase, x.c(qStage), rowBase, qValid)
			gpu.CpAsyncCommit(b, loc)
			return nil
		}, nil)
		if tma {
			g.tensorMaps()
		}
		bars = g.wsBarriers()
		gpu.Barrier(b, loc)
		// The producer's branch; the consumers' code follows in the
		// other, built by g's builder (restored at the end).
		b = g.wsSplit(bars, z)
		x = x.at(b)
		top, topX := g.b, g.x
		g.b, g.x = b, x
		defer func() { g.b, g.x = top, topX }()
		// Q has landed once every consumer's copies have: each fences
		// its own and arrives at Q's barrier.
		gpu.CpAsyncWait(b, loc, 0)
		gpu.FenceProxyAsync(b, loc)
		gpu.MbarrierArrive(b, loc, bars, x.index(x.c(wsQ)))
		gpu.MbarrierWait(b, loc, bars, x.index(x.c(wsQ)), arith.ConstantInt(b, loc, 0, ir.I32))
	} else {
		if tma {
			tm = g.setupTMA(z, kAt, vStage)
		}
		copies := func(b *ir.Builder) []*ir.Value {
			g.copyTile(b, qChunks, g.q, qBase, x.at(b).c(qStage), rowBase, qValid)
			if !tma {
				loadK(b, x.at(b).c(0))
				loadV(b, x.at(b).c(0))
			}
			return nil
		}
		if pf {
			// (A row block after the block's first was copied during
			// the last key tile of the one before.)
			loop.If(b, loc, g.first, nil, copies, nil)
		} else {
			copies(b)
		}
		gpu.CpAsyncCommit(b, loc)
		gpu.CpAsyncWait(b, loc, 0)
		gpu.FenceProxyAsync(b, loc)
		if tm != nil && tm.cluster() > 1 {
			// (Every block's barriers initialized before the cluster's
			// copies and arrivals signal them.)
			gpu.ClusterArrive(b, loc)
			gpu.ClusterWait(b, loc)
		} else {
			gpu.Barrier(b, loc)
		}
		switch {
		case tma && oneK:
			tm.issue(b, tmaLoad{tmaFullK, x.c(0)}, tmaLoad{tmaFullV, x.c(0)})
		case tma:
			tm.issue(b, tmaLoad{tmaFullK, x.c(0)}, tmaLoad{tmaFullK, x.c(1)}, tmaLoad{tmaFullV, x.c(0)})
		}
	}
	// wait waits, with Specialized, for the barrier of kind (full: the
	// tile is copied) of tile kt's stage; release arrives at it (empty:
	// its reader's product has completed).
	wait := func(b *ir.Builder, kind int64, kt *ir.Value) {
		x := x.at(b)
		gpu.MbarrierWait(b, loc, bars, g.wsIndex(x, kind, kt), g.wsParity(x, kind, kt, 0))
	}
	release := func(b *ir.Builder, kind int64, kt *ir.Value) {
		gpu.MbarrierArrive(b, loc, bars, g.wsIndex(x.at(b), kind, kt))
	}

	var qAt []*ir.Value
	if !g.Tile.QShared {
		qAt = w.qFragments(x, qStage)
	}
	// The warpgroup's 64 rows of the Q tile (with QShared, read by
	// descriptor: a panel of the tile is R rows of 64 elements).
	qRows := x.add(x.mulc(wg, 64*wgPanel), qTile)
	if R == 64 {
		// (One warpgroup: a constant, which ptxas then keeps in uniform
		// registers with the descriptors built from it.)
		qRows = x.c(qStage)
	}
	panels := g.D / wgPanel
	// scores issues S = Q·Kᵀ for the K tile at kAt, complete at its end or,
	// when inFlight, still in flight: one gpu.wgmma whose A is Q's
	// fragments (loaded again for each product: see emitWGMMA for why),
	// or with QShared one a panel of Q's tile and K's, each accumulating
	// into the one before, which stays in flight.
	scores := func(b *ir.Builder, kAt *ir.Value, inFlight bool) []*ir.Value {
		x := x.at(b)
		s := gpu.WGMMAShape{N: K, KSteps: wgPanel / 16}
		if inFlight {
			s.Pending = 1
		}
		if !g.Tile.QShared {
			var qf []*ir.Value
			for _, a := range qAt {
				qf = append(qf, gpu.LdMatrix(b, loc, g.smem, a, 4, false)...)
			}
			return gpu.WGMMA(b, loc, g.Elem, s, qf, g.smem, x.index(kAt), nil)
		}
		s.AShared = true
		var acc []*ir.Value
		for p := range panels {
			s.Acc = p > 0
			// (Every group of S so far may stay in flight, but the
			// last's when S completes here.)
			if s.Pending = p + 1; p == panels-1 && !inFlight {
				s.Pending = 0
			}
			a := []*ir.Value{g.smem, x.index(x.addc(qRows, p*R*wgPanel))}
			acc = gpu.WGMMA(b, loc, g.Elem, s, a, g.smem, x.index(x.addc(kAt, p*K*wgPanel)), acc)
		}
		return acc
	}

	sm := g.softmax()
	// alphas are the rows' rescaling factors ex2((m − mNew)·c).
	alphas := func(b *ir.Builder, m, mNew []*ir.Value) []*ir.Value {
		var a []*ir.Value
		for h := range m {
			a = append(a, approxExp2(b, loc, fop(b, loc, arith.OpMulF, fop(b, loc, arith.OpSubF, m[h], mNew[h]), sm.c)))
		}
		return a
	}

	nO := int(g.D / 8)
	oShape := gpu.WGMMAShape{N: g.D, KSteps: K / 16, TransB: true, Acc: true}
	if panels > 1 {
		oShape.Panel = K * wgPanel
	}
	// With SumMMA the rows' sums are P times the matrix of ones (filled
	// above), one n8 gpu.wgmma after each P·V: four more accumulators,
	// the sums of the thread's rows g and g+8 twice, carried after O's.
	sumMMA, nSum := g.Tile.SumMMA, 0
	if sumMMA {
		nSum = 4
	}
	rowSums := func(b *ir.Builder, x ix, p, acc []*ir.Value, pending int64) []*ir.Value {
		s := gpu.WGMMAShape{N: 8, KSteps: K / 16, Acc: true, Pending: pending}
		if K > wgPanel {
			s.Panel = wgPanel * 8
		}
		return gpu.WGMMA(b, loc, g.Elem, s, p, g.smem, x.index(x.c(g.shared()-flashOnes)), acc)
	}
	// packP packs the probabilities e (four of each n8 tile in turn, as
	// S's accumulators) into the A fragments of P·V: those of n8 tiles
	// 2j and 2j+1 are key step j's. With LatePack the kernel packs them
	// once P·V of the tile before has completed, into the registers that
	// product read (no moves at the loop's end).
	late := g.Tile.LatePack
	packP := func(b *ir.Builder, e []*ir.Value) []*ir.Value {
		var p []*ir.Value
		for j := range K / 16 {
			e0, e1 := e[8*j:8*j+4], e[8*j+4:8*j+8]
			p = append(p, g.pair(b, e0[0], e0[1]), g.pair(b, e0[2], e0[3]), g.pair(b, e1[0], e1[1]), g.pair(b, e1[2], e1[3]))
		}
		return p
	}
	// softmaxP runs the softmax on the scores sv of key tile kt (masked
	// when masked) with the extremes m and sums l, and returns the
	// probabilities as the A fragments of P·V, the new extremes, the sums
	// and each row's rescaling factor alpha = ex2((m − mNew)·c). As
	// softmaxStep (the same lazy extremes, rounding and exponentials) but
	// without branches: P·V of the previous tile is in flight meanwhile,
	// and ptxas waits for it before a branch; l (and, after the wait, O)
	// is multiplied by alpha whether or not the extreme moved (alpha is 1
	// then).
	softmaxP := func(b *ir.Builder, x ix, sv []*ir.Value, kt *ir.Value, m []*ir.Value, masked bool) (p, mNew, sums, alpha []*ir.Value, moved *ir.Value) {
		s := make([][]*ir.Value, K/8)
		for j := range s {
			s[j] = slices.Clone(sv[4*j : 4*j+4])
		}
		if masked {
			g.mask(b, s, x.mulc(kt, K), sm, g.rows[0])
		}
		var negMC [2]*ir.Value
		for h := range 2 {
			row := []*ir.Value{m[h]}
			for j := range s {
				row = append(row, s[j][2*h], s[j][2*h+1])
			}
			ext := g.quadReduce(b, sm.ext, tree(b, loc, sm.ext, row))
			growth := fop(b, loc, arith.OpMulF, fop(b, loc, arith.OpSubF, ext, m[h]), sm.c)
			mv := arith.NewCmpF(b, loc, arith.CmpFOGT, growth, sm.tau)
			mNew = append(mNew, arith.NewSelect(b, loc, mv, ext, m[h]))
			negMC[h] = fop(b, loc, arith.OpMulF, mNew[h], sm.negC)
			if moved == nil {
				moved = mv
			} else {
				moved = arith.Binary(b, arith.OpOrI, loc, moved, mv)
			}
		}
		if !g.Tile.Lazy {
			alpha = alphas(b, m, mNew)
		}
		var ps [2][]*ir.Value
		for j := range s {
			g.exps(b, s[j], j%2, negMC, sm)
			for r := range 4 {
				ps[r/2] = append(ps[r/2], s[j][r])
			}
		}
		if !sumMMA {
			for h := range 2 {
				sums = append(sums, tree(b, loc, arith.OpAddF, ps[h]))
			}
		}
		if late {
			return slices.Concat(s...), mNew, sums, alpha, moved
		}
		return packP(b, slices.Concat(s...)), mNew, sums, alpha, moved
	}
	// rescale waits for P·V (oIn, in flight), multiplies O's rows and
	// the sums l by alpha and adds the tile's sums to l: with Lazy only
	// in the threads where a row moved (alpha is 1 in the others; alpha
	// is nil then and computed here). The wait stays outside Lazy's
	// branch, which threads take or not each on their own:
	// wgmma.wait_group is .aligned, every thread of the warpgroup must
	// execute the same one (the device hung otherwise).
	rescale := func(b *ir.Builder, oIn, l, m, mNew, sums, alpha []*ir.Value, moved *ir.Value) (oNew, lNew []*ir.Value) {
		o := gpu.WGMMAWait(b, loc, 0, oIn)
		if sumMMA {
			// (The sums are O's last four values, rescaled with it; l
			// stays unused.)
			lNew, l = l, nil
		}
		mul := func(b *ir.Builder, alpha []*ir.Value) []*ir.Value {
			out := make([]*ir.Value, 0, len(o)+len(l))
			for i, v := range o {
				out = append(out, fop(b, loc, arith.OpMulF, v, alpha[(i%4)/2]))
			}
			for h, v := range l {
				out = append(out, fop(b, loc, arith.OpMulF, v, alpha[h]))
			}
			return out
		}
		var r []*ir.Value
		if g.Tile.Lazy {
			types := make([]ir.Type, len(o)+len(l))
			for i := range types {
				types[i] = ir.F32
			}
			r = loop.If(b, loc, moved, types, func(b *ir.Builder) []*ir.Value {
				return mul(b, alphas(b, m, mNew))
			}, func(*ir.Builder) []*ir.Value { return slices.Concat(o, l) }).Results()
		} else {
			r = mul(b, alpha)
		}
		for h, v := range r[len(o):] {
			lNew = append(lNew, fop(b, loc, arith.OpAddF, v, sums[h]))
		}
		return slices.Clone(r[:len(o)]), lNew
	}

	// nextK issues the copies of K(next) (with PrefetchV and V(next))
	// when next is a key tile: at the top of the tile before, or with
	// OneK once that tile's S, the K stage's last reader, has completed.
	nextK := func(b *ir.Builder, next *ir.Value) {
		loop.If(b, loc, x.at(b).lt(next, g.tiles), nil, func(b *ir.Builder) []*ir.Value {
			loadK(b, next)
			if pv {
				// (V(next)'s stage held V(next−3), whose P·V completed
				// in the tile before.)
				loadV(b, next)
			}
			gpu.CpAsyncCommit(b, loc)
			return nil
		}, nil)
	}

	// A consumer warpgroup whose rows all lie past the end (in a head's
	// last row block: s1024 leaves 192-row blocks' last a third full)
	// computes nothing; it still waits for each tile and frees its stages
	// as the others do, so that the barriers' phases stay in step. The
	// rest of the body is built in the other arm.
	if idle := g.idleWarpgroup(x, rowBase, wg); idle != nil {
		split := loop.If(b, loc, idle, nil, func(b *ir.Builder) []*ir.Value {
			g.passTiles(b, wait, release)
			return nil
		}, func(*ir.Builder) []*ir.Value { return nil })
		busy := elseArm(b.Ctx, split)
		top, topX := g.b, g.x
		b, x = busy, x.at(busy)
		g.b, g.x = b, x
		defer func() { g.b, g.x = top, topX }()
	}

	// Key tile 0.
	one := x.c(1)
	switch {
	case ws:
		wait(b, wsFullK, x.c(0))
	case tma:
		tm.wait(b, tmaFullK, x.c(0))
	case !oneK:
		nextK(b, one)
	}
	k0 := x.c(0)
	if g.tileBase != nil {
		k0 = kAt(x, k0) // (the row block's first slot)
	}
	s0 := scores(b, k0, false)
	switch {
	case ws:
		release(b, wsEmptyK, x.c(0))
	case tma:
		tm.release(b, tmaFullK, x.c(0))
		if oneK {
			tm.issue(b, tmaLoad{tmaFullK, one})
		}
	case oneK:
		nextK(b, one)
	}
	p0, m0, l0, _, _ := softmaxP(b, x, s0, x.c(0), []*ir.Value{sm.masked, sm.masked}, anyMask)
	if late {
		p0 = packP(b, p0)
	}
	if !pv && !ws && !tma {
		loop.If(b, loc, x.lt(one, g.tiles), nil, func(b *ir.Builder) []*ir.Value {
			loadV(b, x.at(b).c(1))
			gpu.CpAsyncCommit(b, loc)
			return nil
		}, nil)
	}
	if sumMMA {
		l0 = []*ir.Value{g.f32(0), g.f32(0)} // (unused: the sums are O's tail)
	}
	it := slices.Concat(p0, m0, l0)
	for range 4*nO + nSum {
		it = append(it, g.f32(0))
	}
	nP := len(p0)

	// tile is the body of key tile kt (an offset-typed value).
	tile := func(b *ir.Builder, kt *ir.Value, it []*ir.Value, masked bool) []*ir.Value {
		x := x.at(b)
		pPrev, m, l, o := it[:nP], it[nP:nP+2], it[nP+2:nP+4], it[nP+4:]
		// K(kt) and V(kt−1) have landed (V(kt) may not have; with
		// PrefetchV it has, copied with K(kt)).
		next := x.addc(kt, 1)
		switch {
		case ws:
			// (The producer announces V(kt−1) once K(kt) has
			// landed too; K's wait keeps the order explicit.)
			wait(b, wsFullK, kt)
			wait(b, wsFullV, x.addc(kt, -1))
		case tma:
			// (Both stages were freed in the tile before.)
			if oneK {
				tm.issue(b, tmaLoad{tmaFullV, kt})
			} else {
				tm.issue(b, tmaLoad{tmaFullK, next}, tmaLoad{tmaFullV, kt})
			}
			tm.wait(b, tmaFullK, kt)
			tm.wait(b, tmaFullV, x.addc(kt, -1))
		case pv:
			gpu.CpAsyncWait(b, loc, 0)
		default:
			gpu.CpAsyncWait(b, loc, 1)
		}
		if !ws && !tma {
			gpu.FenceProxyAsync(b, loc)
			gpu.Barrier(b, loc)
			if !oneK {
				nextK(b, next)
			}
		}
		at := kAt(x, kt)
		pO := oShape
		pO.Pending = 1
		if g.Tile.PingPong {
			// This warpgroup's turn: the other's products of the
			// tile before (warpgroup 0, which goes first; at once in
			// tile 1) or of this tile (1) are issued.
			// (With tileBase, the turns of the block's row blocks
			// before: tiles − 1 each.)
			turn := kt
			if g.tileBase != nil {
				turn = x.add(kt, x.sub(g.tileBase, g.wsOrd))
			}
			par := x.i32(x.and(x.add(turn, wg), 1))
			gpu.MbarrierWait(b, loc, bars, x.index(x.addc(wg, wsFirst(wsKinds))), par)
		}
		sIn := scores(b, at, true)
		sPending := int64(1)
		var oIn []*ir.Value
		if sumMMA {
			pO.Pending, sPending = 2, 2
			oIn = gpu.WGMMA(b, loc, g.Elem, pO, pPrev, g.smem, vAt(x, x.addc(kt, -1)), o[:4*nO])
			oIn = append(oIn, rowSums(b, x, pPrev, o[4*nO:], 2)...)
		} else {
			oIn = gpu.WGMMA(b, loc, g.Elem, pO, pPrev, g.smem, vAt(x, x.addc(kt, -1)), o)
		}
		if g.Tile.PingPong {
			// The other warpgroup's turn.
			gpu.MbarrierArrive(b, loc, bars, x.index(x.addc(x.xor(wg, x.c(1)), wsFirst(wsKinds))))
		}
		sv := gpu.WGMMAWait(b, loc, sPending, sIn)
		switch {
		case ws:
			release(b, wsEmptyK, kt)
		case tma:
			tm.release(b, tmaFullK, kt)
			if oneK {
				tm.issue(b, tmaLoad{tmaFullK, next})
			}
		case oneK:
			nextK(b, next)
		}
		if pf {
			// The last tile: S(kt), the last reader of Q (and with
			// OneK of the K stage), has completed; the next row block's
			// first K stage held K(kt−1).
			loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIUGE, next, g.tiles), nil, func(b *ir.Builder) []*ir.Value {
				nextItem(b, false)
				return nil
			}, nil)
		}
		p, mNew, sums, alpha, moved := softmaxP(b, x, sv, kt, m, masked)
		// P·V's wait, in both arms of the branch that copies V(kt+1)
		// (whose stage P·V reads) or, with PrefetchV, after a branch
		// that commits an empty cp.async group: ptxas schedules a wgmma
		// wait as early as its block allows, which would end the overlap
		// with the softmax above; a branch (on a condition the whole
		// warpgroup shares) keeps it below.
		if pv || tma && !ws {
			loop.If(b, loc, x.lt(next, g.tiles), nil, func(b *ir.Builder) []*ir.Value {
				gpu.CpAsyncCommit(b, loc)
				return nil
			}, nil)
			o, l := rescale(b, oIn, l, m, mNew, sums, alpha, moved)
			if tma {
				tm.release(b, tmaFullV, x.addc(kt, -1))
			}
			if late {
				p = packP(b, p)
			}
			return slices.Concat(p, mNew, l, o)
		}
		types := make([]ir.Type, len(o)+2)
		for i := range types {
			types[i] = ir.F32
		}
		ol := loop.If(b, loc, x.lt(next, g.tiles), types, func(b *ir.Builder) []*ir.Value {
			o, l := rescale(b, oIn, l, m, mNew, sums, alpha, moved)
			if ws {
				release(b, wsEmptyV, x.at(b).addc(kt, -1))
			} else {
				loadV(b, next)
				gpu.CpAsyncCommit(b, loc)
			}
			return append(o, l...)
		}, func(b *ir.Builder) []*ir.Value {
			o, l := rescale(b, oIn, l, m, mNew, sums, alpha, moved)
			if g.wsBars != nil {
				// (The next row block's tiles take V(kt−1)'s stage.)
				release(b, wsEmptyV, x.at(b).addc(kt, -1))
			}
			if pf {
				// (V(kt−1)'s stage, the next row block's first, is
				// free: its P·V has completed.)
				nextItem(b, true)
			}
			return append(o, l...)
		}).Results()
		if late {
			p = packP(b, p)
		}
		return slices.Concat(p, mNew, ol[len(o):], ol[:len(o)])
	}
	// tileLoop runs the key tiles from ≤ kt < to, with Unroll two a
	// trip (and an odd last one after the loop).
	tileLoop := func(from, to *ir.Value, it []*ir.Value, masked bool) []*ir.Value {
		end, step := to, int64(1)
		if g.Tile.Unroll {
			end, step = x.add(from, x.op(arith.OpAndI, x.sub(to, from), x.c(-2))), 2
		}
		l := loop.For(b, loc, x.index(from), x.index(end), arith.ConstantIndex(b, loc, step), it, func(b *ir.Builder, iv *ir.Value, it []*ir.Value) []*ir.Value {
			kt := x.at(b).from(iv)
			it = tile(b, kt, it, masked)
			if g.Tile.Unroll {
				it = tile(b, x.at(b).addc(kt, 1), it, masked)
			}
			return it
		})
		it = l.Results()
		if !g.Tile.Unroll {
			return it
		}
		types := make([]ir.Type, len(it))
		for i, v := range it {
			types[i] = v.Type()
		}
		return loop.If(b, loc, x.lt(end, to), types, func(b *ir.Builder) []*ir.Value {
			return tile(b, end, it, masked)
		}, func(*ir.Builder) []*ir.Value { return it }).Results()
	}
	fullFrom := x.op(arith.OpMaxUI, full, one)
	it = tileLoop(one, fullFrom, it, false)
	if anyMask {
		it = tileLoop(fullFrom, g.tiles, it, true)
	}
	// The last tile's P·V (with PrefetchV its V was awaited and fenced
	// at the top of the last tile, or before tile 0).
	switch {
	case ws:
		wait(b, wsFullV, x.addc(g.tiles, -1))
	case tma:
		tm.wait(b, tmaFullV, x.addc(g.tiles, -1))
		if tm.cluster() > 1 {
			// The block's last arrivals at the cluster's barriers are
			// in: the others may exit once this block also has.
			gpu.ClusterArrive(b, loc)
		}
	case !pv:
		// (With pf, the next row block's two groups stay in flight.)
		wait := int64(0)
		if pf {
			wait = 2
		}
		gpu.CpAsyncWait(b, loc, wait)
		gpu.FenceProxyAsync(b, loc)
		gpu.Barrier(b, loc)
	}
	if g.Tile.Staged {
		// (The last tile's V stage is free once its P·V, below, has
		// completed: the warps store O through it. Another warpgroup's
		// P·V may still read it, though: with several, each warp stores
		// through its own rows of Q's first panel, 16 × 64 at qStage +
		// 1024·warp as stagedStore's slices are, which only its
		// warpgroup's S read, all completed.)
		if R > 64 || ws {
			g.stageAt = qTile
		} else {
			g.stageAt = vStage(x, x.addc(g.tiles, -1))
		}
		defer func() { g.stageAt = nil }()
	}
	if sumMMA {
		last := oShape
		last.Pending = 1
		o := gpu.WGMMA(b, loc, g.Elem, last, it[:nP], g.smem, vAt(x, x.addc(g.tiles, -1)), it[nP+4:nP+4+4*nO])
		l := rowSums(b, x, it[:nP], it[nP+4+4*nO:], 0)
		o = gpu.WGMMAWait(b, loc, 0, o)
		if g.wsBars != nil {
			release(b, wsEmptyV, x.addc(g.tiles, -1))
		}
		g.store(slices.Concat(o, it[nP:nP+2], l), nO, g.rows[0])
	} else {
		o := gpu.WGMMA(b, loc, g.Elem, oShape, it[:nP], g.smem, vAt(x, x.addc(g.tiles, -1)), it[nP+4:])
		if g.wsBars != nil {
			release(b, wsEmptyV, x.addc(g.tiles, -1))
		}
		g.store(slices.Concat(o, it[nP:nP+4]), nO, g.rows[0])
	}
	if tm != nil && tm.cluster() > 1 {
		// (No block exits while another may still signal it.)
		gpu.ClusterWait(b, loc)
	}
}

// idleWarpgroup returns whether the thread's warpgroup (wg, the same in
// every lane) has no row below Lq in the row block at rowBase, or nil
// when no warpgroup can be idle: one warpgroup a block, every row block
// full, or ping-pong, whose turns need both warpgroups.
func (g *flashGen) idleWarpgroup(x ix, rowBase, wg *ir.Value) *ir.Value {
	if !g.Tile.Specialized || g.Tile.Rows == 64 || g.Tile.PingPong || !g.rowTail() {
		return nil
	}
	return arith.NewCmpI(x.b, g.loc, arith.CmpIUGE, x.index(x.add(rowBase, x.mulc(wg, 64))), x.index(g.lq(x)))
}

// passTiles is an idle consumer warpgroup's key loop (idleWarpgroup): for
// each key tile kt it waits for K(kt) and V(kt−1) as the others do and
// frees their stages when they do (V's last two only when a persistent
// block's next row block takes them), so that every phase of the empty
// barriers counts its arrivals.
func (g *flashGen) passTiles(b *ir.Builder, wait, release func(b *ir.Builder, kind int64, kt *ir.Value)) {
	x, loc := g.x.at(b), g.loc
	loop.For(b, loc, x.index(x.c(0)), x.index(g.tiles), arith.ConstantIndex(b, loc, 1), nil, func(b *ir.Builder, iv *ir.Value, _ []*ir.Value) []*ir.Value {
		x := x.at(b)
		kt := x.from(iv)
		wait(b, wsFullK, kt)
		release(b, wsEmptyK, kt)
		loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpINE, iv, x.index(x.c(0))), nil, func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			prev := x.addc(kt, -1)
			wait(b, wsFullV, prev)
			if g.wsBars != nil {
				release(b, wsEmptyV, prev)
				return nil
			}
			loop.If(b, loc, x.lt(x.addc(kt, 1), g.tiles), nil, func(b *ir.Builder) []*ir.Value {
				release(b, wsEmptyV, prev)
				return nil
			}, nil)
			return nil
		}, nil)
		return nil
	})
	wait(b, wsFullV, x.addc(g.tiles, -1))
	if g.wsBars != nil {
		release(b, wsEmptyV, x.addc(g.tiles, -1))
	}
}

// fillOnes stores the matrix of ones that SumMMA's row sums read
// (flashOnes elements after the tiles), every thread some, and fences
// its stores for the tensor cores (a barrier follows before the reads).
func (g *flashGen) fillOnes(b *ir.Builder) {
	loc := g.loc
	one := arith.ConstantFloat(b, loc, 1, g.Elem)
	at, T := g.shared()-flashOnes, g.Threads()
	for i := int64(0); i < flashOnes; i += T {
		store := func(b *ir.Builder) []*ir.Value {
			x := g.x.at(b)
			loop.Store(b, loc, one, g.smem, x.index(x.addc(g.tid, at+i)))
			return nil
		}
		if i+T <= flashOnes {
			store(b)
			continue
		}
		x := g.x.at(b)
		loop.If(b, loc, x.lt(g.tid, x.c(flashOnes-i)), nil, store, nil)
	}
	gpu.FenceProxyAsync(b, loc)
}

// The mbarriers of the specialized kernel (FlashTile.Specialized): for
// each kind one a stage (wsStages), full (the tile is copied; the
// threads of its producer stream arrive) or empty (the consumers' product
// that read it has completed; the consumers' threads arrive) for K and V;
// after them, with PingPong, one a consumer warpgroup: its turn (the other
// warpgroup's threads arrive); then wsQ, Q's (the consumers arrive once
// their copies of the Q tile have landed).
const (
	wsFullK int64 = iota
	wsEmptyK
	wsFullV
	wsEmptyV
	wsKinds
)

// wsQ is the index of Q's barrier; with Persistent, wsFree's follows
// (the consumers arrive once done with a row block's Q tile, whose next
// one they copy after waiting for it).
var (
	wsQ    = wsFirst(wsKinds) + 2
	wsFree = wsQ + 1
)

// prefetchQ starts a persistent consumer's row block with PrefetchQ
// (qBase, rowBase and valid those of emitWGMMAPipe; wg the thread's
// warpgroup) and returns the workgroup offset of its Q tile, the one of
// the row block's parity (wsOrd's) after qStage: the first row block
// copies its own; then the warpgroup waits at its Q mbarrier, where each
// of its threads arrives once its copies have landed and it is done with
// the row block before (which read and stored through the other tile),
// and copies the warpgroup's rows of the next row block's Q (when the
// block has one) into the other tile, a cp.async group that stays in
// flight through the row block. A warpgroup reads and stores through
// its own rows of the Q tile only, so neither waits for the other.
func (g *flashGen) prefetchQ(x ix, wg *ir.Value, qStage int64, qBase, rowBase, valid *ir.Value) *ir.Value {
	b, loc := g.b, g.loc
	R, D := g.Tile.Rows, g.D
	tile := func(x ix, ord *ir.Value) *ir.Value { return x.addc(x.mulc(x.and(ord, 1), R*D), qStage) }
	// own issues the warpgroup's copies of its 64 rows of the Q tile at
	// global offset q (first row first) into the tile at workgroup
	// offset at.
	own := func(b *ir.Builder, q, first, at *ir.Value) {
		x := x.at(b)
		cs := g.swizzledChunksIn(x, 64, R, x.and(g.tid, gpu.WarpgroupSize-1), gpu.WarpgroupSize)
		g.copyTile(b, cs, g.q, x.add(q, x.mulc(wg, 64*D)), x.add(at, x.mulc(wg, 64*wgPanel)), x.add(first, x.mulc(wg, 64)), valid)
	}
	loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIEQ, x.index(g.wsOrd), x.index(x.c(0))), nil, func(b *ir.Builder) []*ir.Value {
		own(b, qBase, rowBase, tile(x.at(b), g.wsOrd))
		gpu.CpAsyncCommit(b, loc)
		return nil
	}, nil)
	gpu.CpAsyncWait(b, loc, 0)
	gpu.FenceProxyAsync(b, loc)
	bar := x.index(x.addc(wg, wsQ))
	gpu.MbarrierArrive(b, loc, g.wsBars, bar)
	gpu.MbarrierWait(b, loc, g.wsBars, bar, x.i32(x.and(g.wsOrd, 1)))
	loop.If(b, loc, g.hasNext, nil, func(b *ir.Builder) []*ir.Value {
		x := x.at(b)
		_, row, q, _ := g.itemStart(x, g.next)
		own(b, q, row, tile(x, x.addc(g.wsOrd, 1)))
		return nil
	}, nil)
	gpu.CpAsyncCommit(b, loc)
	return tile(x, g.wsOrd)
}

// nextItem returns the row block a persistent block takes after item
// (of its round it; itemLoop's order) and whether it has one, of items:
// the next round's, it + grid, or when causal and item is the round's own
// (bid's, in an even round), the next round's turned one, it + grid +
// grid − 1 − 2·bid. A block's row blocks grow from round to round, so
// one past items is the last.
func nextItem(b *ir.Builder, loc ir.Location, it, item *ir.Value, causal bool, items *ir.Value) (next, has *ir.Value) {
	bin := func(op string, l, r *ir.Value) *ir.Value { return arith.Binary(b, op, loc, l, r) }
	grid := gpu.GridDim(b, loc, "x")
	next = bin(arith.OpAddI, it, grid)
	if causal {
		bid := gpu.BlockID(b, loc, "x")
		turned := bin(arith.OpSubI, bin(arith.OpAddI, next, grid), bin(arith.OpAddI, bin(arith.OpAddI, bid, bid), arith.ConstantIndex(b, loc, 1)))
		next = arith.NewSelect(b, loc, arith.NewCmpI(b, loc, arith.CmpIEQ, item, it), turned, next)
	}
	return next, arith.NewCmpI(b, loc, arith.CmpIULT, next, items)
}

// laneZero returns lane 0's v (of x's type) in every lane of the warp:
// a shuffle, whose result ptxas knows to be the same in every lane.
func laneZero(x ix, v *ir.Value) *ir.Value {
	c := func(n int64) *ir.Value { return arith.ConstantInt(x.b, x.loc, n, ir.I32) }
	s, _ := gpu.Shuffle(x.b, x.loc, "idx", x.i32(v), c(0), c(32))
	if x.t == ir.I32 {
		return s
	}
	return arith.NewCast(x.b, arith.OpIndexCastUI, x.loc, s, x.t)
}

// wsStages is the number of stages of kind's tiles: two K stages, three V
// stages.
func wsStages(kind int64) int64 {
	if kind == wsFullV || kind == wsEmptyV {
		return 3
	}
	return 2
}

// wsFirst is the index of kind's first barrier (of wsKinds: of the
// turns).
func wsFirst(kind int64) int64 {
	n := int64(0)
	for k := range kind {
		n += wsStages(k)
	}
	return n
}

// wsRound returns key tile kt's round and stage in kind's stages.
func (g *flashGen) wsRound(x ix, kind int64, kt *ir.Value) (round, stage *ir.Value) {
	kt = g.slot(x, kt)
	if wsStages(kind) == 3 {
		return g.by3(x, kt)
	}
	return x.shr(kt, 1), x.and(kt, 1)
}

// wsIndex is the index of kind's barrier of key tile kt's stage.
func (g *flashGen) wsIndex(x ix, kind int64, kt *ir.Value) *ir.Value {
	_, stage := g.wsRound(x, kind, kt)
	return x.index(x.addc(stage, wsFirst(kind)))
}

// wsParity is the i32 parity of the phase of kind's barrier that key
// tile kt's round of its stage completes, plus one for a producer's wait
// for an empty stage (a fresh barrier's phase before the first counts as
// complete).
func (g *flashGen) wsParity(x ix, kind int64, kt *ir.Value, plus int64) *ir.Value {
	round, _ := g.wsRound(x, kind, kt)
	return x.i32(x.and(x.addc(round, plus), 1))
}

// producerRegs is the registers the specialized kernel's producer lowers
// its count to: the gemm's wsProducerRegs, but 24 beside three consumer
// warpgroups (their 160 then hold a 128-key tile's S, O and P at d64
// without spilling; at 152 ptxas spilled 48 bytes a thread). Their one
// tiling copies by TMA, a single thread issuing each tile's boxes.
func (g *flashGen) producerRegs() int64 {
	if g.consumers() == 3*gpu.WarpgroupSize {
		return 24
	}
	return wsProducerRegs
}

// wsConsumerRegs is the registers a consumer thread of the specialized
// kernel raises its count to: what the SM's 64 Ki leave them beside the
// producer's producerRegs, a multiple of 8, at most the gemm's
// wsConsumerRegs (232 for two consumer warpgroups, 160 for three).
func (g *flashGen) wsConsumerRegs() int64 {
	n := (64*1024 - g.producers()*g.producerRegs()) / g.consumers()
	return min(n&^7, wsConsumerRegs)
}

// wsBarriers adds the specialized kernel's mbarriers to the kernel and
// has thread 0 initialize them (a barrier must follow before their use).
func (g *flashGen) wsBarriers() *ir.Value {
	b, loc, x := g.b, g.loc, g.x
	n := wsQ + 1
	switch {
	case g.Tile.PrefetchQ:
		n = wsQ + g.consumers()/gpu.WarpgroupSize // (one a warpgroup)
	case g.Tile.Persistent > 0:
		n = wsFree + 1
	}
	bars := gpu.AddWorkgroupBuffer(g.b.InsertionBlock().ParentOp(), gpu.WorkgroupMemRef(n, ir.I64))
	loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIEQ, g.tid, x.c(0)), nil, func(b *ir.Builder) []*ir.Value {
		x := x.at(b)
		stream := g.producers() / 2
		if g.Tile.TMA {
			stream = 1 // (the copying thread's arrival with the expected bytes)
		}
		counts := [wsKinds]int64{wsFullK: stream, wsEmptyK: g.consumers(), wsFullV: stream, wsEmptyV: g.consumers()}
		for kind, n := range counts {
			for s := range wsStages(int64(kind)) {
				gpu.MbarrierInit(b, loc, bars, x.index(x.c(wsFirst(int64(kind))+s)), arith.ConstantInt(b, loc, n, ir.I32))
			}
		}
		if g.Tile.PrefetchQ {
			for w := range g.consumers() / gpu.WarpgroupSize {
				gpu.MbarrierInit(b, loc, bars, x.index(x.c(wsQ+w)), arith.ConstantInt(b, loc, gpu.WarpgroupSize, ir.I32))
			}
		} else {
			gpu.MbarrierInit(b, loc, bars, x.index(x.c(wsQ)), arith.ConstantInt(b, loc, g.consumers(), ir.I32))
		}
		if n > wsFree && !g.Tile.PrefetchQ {
			gpu.MbarrierInit(b, loc, bars, x.index(x.c(wsFree)), arith.ConstantInt(b, loc, g.consumers(), ir.I32))
		}
		if g.Tile.PingPong {
			for w := range int64(2) {
				gpu.MbarrierInit(b, loc, bars, x.index(x.c(wsFirst(wsKinds)+w)), arith.ConstantInt(b, loc, gpu.WarpgroupSize, ir.I32))
			}
		}
		if g.Tile.TMA {
			gpu.FenceProxyAsync(b, loc) // (the barriers visible to the copies)
		}
		return nil
	}, nil)
	return bars
}

// wsSplit builds the specialized kernel's role split: the producer
// warpgroup (the block's last) lowers its registers and runs two copy
// streams, K's in its first two warps and V's in the other two. For each
// key tile kt a stream waits for its stage to be empty, copies the tile
// and then, keeping that copy in flight, waits for the one of tile kt−1
// to land, fences it for the tensor cores and arrives at its full
// barrier; the last tile is announced after the loop. (Waiting for the
// copy just issued, as one stream of K and V did before, made a tile's
// time a whole copy's round trip.) K(kt)'s stage is free once S(kt−2)
// has completed, V(kt)'s once P·V(kt−3) has (in tile kt−2), so K runs up
// to a tile ahead of the consumers and V two. With TMA one thread of the
// producer warpgroup copies instead: for each key tile, K's boxes then
// V's, each once its stage is empty, expecting the tile's bytes on its
// full barrier (whose one arrival that is); z is the block's batch. It
// returns the builder of the consumers' branch (before its terminator),
// whose warpgroups raise their registers. With Persistent (wsBars set,
// z nil) each copy loop runs for each of the block's row blocks in turn
// (itemLoop), its tiles in the slots after those before (tileBase).
func (g *flashGen) wsSplit(bars, z *ir.Value) *ir.Builder {
	b, loc, x := g.b, g.loc, g.x
	half := g.producers() / 2
	kAt, vAt, _ := g.pipeStages(x)
	loadK := func(b *ir.Builder, kt *ir.Value) { g.wgLoadTile(b, kt, g.k, kAt(x.at(b), kt)) }
	loadV := func(b *ir.Builder, kt *ir.Value) { g.wgLoadTile(b, kt, g.v, vAt(x.at(b), kt)) }
	// perItem builds copies for the block's row block (of batch z), or
	// with Persistent for each of its row blocks, setting kvBase, tiles
	// and tileBase for it.
	perItem := func(b *ir.Builder, copies func(b *ir.Builder, z *ir.Value)) {
		if g.wsBars == nil {
			copies(b, z)
			return
		}
		top := g.x
		g.itemLoop(b, []*ir.Value{x.at(b).c(0)}, func(b *ir.Builder, _, item *ir.Value, base []*ir.Value) []*ir.Value {
			x := x.at(b)
			g.x = x
			z, rowBase, _, kvBase := g.itemStart(x, x.from(item))
			g.kvBase, g.tileBase = kvBase, base[0]
			g.keyTileBounds(rowBase)
			copies(b, z)
			return []*ir.Value{x.add(base[0], g.tiles)}
		})
		g.x, g.tileBase = top, nil
	}
	// tmaCopies is TMA's producer: one thread copies each tile of K, then
	// of V, into its stage once free, expecting its bytes on the stage's
	// full barrier.
	tmaCopies := func(b *ir.Builder, z *ir.Value) {
		x := x.at(b)
		z32 := x.i32(z)
		bytes := arith.ConstantInt(b, loc, g.Tile.Keys*g.D*2, ir.I32) // (bf16 or f16)
		one := arith.ConstantIndex(b, loc, 1)
		loop.For(b, loc, x.index(x.c(0)), x.index(g.tiles), one, nil, func(b *ir.Builder, iv *ir.Value, _ []*ir.Value) []*ir.Value {
			x := x.at(b)
			kt := x.from(iv)
			for _, c := range []struct {
				full, empty int64
				src         *ir.Value
				at          func(x ix, kt *ir.Value) *ir.Value
			}{{wsFullK, wsEmptyK, g.k, kAt}, {wsFullV, wsEmptyV, g.v, vAt}} {
				gpu.MbarrierWait(b, loc, bars, g.wsIndex(x, c.empty, kt), g.wsParity(x, c.empty, kt, 1))
				full := g.wsIndex(x, c.full, kt)
				gpu.MbarrierExpectTx(b, loc, bars, full, bytes)
				g.tmaBoxes(b, c.src, z32, x.mulc(kt, g.Tile.Keys), c.at(x, kt), bars, full, 0)
			}
			return nil
		})
	}
	// stream builds the copy loop of one kind (full and empty its
	// barriers) for the producer threads numbered tid.
	stream := func(b *ir.Builder, full, empty int64, tid *ir.Value, load func(b *ir.Builder, kt *ir.Value)) {
		g.kvChunks = g.swizzledChunksOf(x.at(b), g.Tile.Keys, tid, half)
		perItem(b, func(b *ir.Builder, _ *ir.Value) {
			x := x.at(b)
			announce := func(b *ir.Builder, kt *ir.Value) {
				gpu.MbarrierArrive(b, loc, bars, g.wsIndex(x.at(b), full, kt))
			}
			one := arith.ConstantIndex(b, loc, 1)
			loop.For(b, loc, x.index(x.c(0)), x.index(g.tiles), one, nil, func(b *ir.Builder, iv *ir.Value, _ []*ir.Value) []*ir.Value {
				x := x.at(b)
				kt := x.from(iv)
				gpu.MbarrierWait(b, loc, bars, g.wsIndex(x, empty, kt), g.wsParity(x, empty, kt, 1))
				load(b, kt)
				gpu.CpAsyncCommit(b, loc)
				loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpINE, iv, x.index(x.c(0))), nil, func(b *ir.Builder) []*ir.Value {
					gpu.CpAsyncWait(b, loc, 1)
					gpu.FenceProxyAsync(b, loc)
					announce(b, x.at(b).addc(kt, -1))
					return nil
				}, nil)
				return nil
			})
			gpu.CpAsyncWait(b, loc, 0)
			gpu.FenceProxyAsync(b, loc)
			announce(b, x.addc(g.tiles, -1))
		})
	}
	producer := arith.NewCmpI(b, loc, arith.CmpIUGE, g.tid, x.c(g.consumers()))
	split := loop.If(b, loc, producer, nil, func(b *ir.Builder) []*ir.Value {
		gpu.SetMaxNReg(b, loc, g.producerRegs(), false)
		x := x.at(b)
		pt := x.addc(g.tid, -g.consumers())
		if g.Tile.TMA {
			loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIEQ, pt, x.c(0)), nil, func(b *ir.Builder) []*ir.Value {
				perItem(b, tmaCopies)
				return nil
			}, nil)
			return nil
		}
		loop.If(b, loc, x.lt(pt, x.c(half)), nil, func(b *ir.Builder) []*ir.Value {
			stream(b, wsFullK, wsEmptyK, pt, loadK)
			return nil
		}, func(b *ir.Builder) []*ir.Value {
			stream(b, wsFullV, wsEmptyV, x.at(b).addc(pt, -half), loadV)
			return nil
		})
		return nil
	}, func(b *ir.Builder) []*ir.Value {
		gpu.SetMaxNReg(b, loc, g.wsConsumerRegs(), true)
		return nil
	})
	return elseArm(b.Ctx, split)
}

// elseArm returns a builder at the end of loop.if op's else region (before
// its yield), for a body built after the op.
func elseArm(ctx *ir.Context, op *ir.Operation) *ir.Builder {
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(op.Region(1).Front().Last())
	return b
}

// emitPersistentWS builds the persistent specialized kernel
// (FlashTile.Persistent with Specialized): the mbarriers are initialized
// and the roles split once; the producer's copy streams then run through
// all the block's row blocks (wsSplit) and the consumers compute them in
// the same order (itemLoop; emitWGMMAPipe for each), key tile kt of a
// row block in slot tileBase + kt of the stages, so that the producer
// copies the next row block's first tiles while the consumers finish
// the one before. Q's tile is copied by the consumers for each row block
// once all of them are done with the one before (wsFree).
func (g *flashGen) emitPersistentWS() {
	b, loc, x := g.b, g.loc, g.x
	g.tid = x.from(gpu.ThreadID(b, loc, "x"))
	if g.Tile.TMA {
		g.tensorMaps()
	}
	bars := g.wsBarriers()
	gpu.Barrier(b, loc)
	g.wsBars = bars
	cb := g.wsSplit(bars, nil)
	var items *ir.Value
	if g.Tile.PrefetchQ {
		items = x.at(cb).index(x.at(cb).mul(g.rowBlocks(x.at(cb)), x.at(cb).c(g.Batch)))
	}
	g.itemLoop(cb, []*ir.Value{x.at(cb).c(0), x.at(cb).c(0)}, func(b *ir.Builder, it, item *ir.Value, c []*ir.Value) []*ir.Value {
		x := x.at(b)
		g.b, g.x = b, x
		g.item, g.tileBase, g.wsOrd = x.from(item), c[0], c[1]
		if g.Tile.PrefetchQ {
			g.next, g.hasNext = nextItem(b, loc, it, item, g.Causal, items)
			g.next = x.from(g.next)
		}
		g.emitWGMMAPipe()
		return []*ir.Value{x.add(c[0], g.tiles), x.addc(c[1], 1)}
	})
	g.b, g.x, g.item, g.tileBase, g.wsOrd, g.wsBars, g.next, g.hasNext = b, x, nil, nil, nil, nil, nil, nil
}
