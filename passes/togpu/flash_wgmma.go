package togpu

import (
	"math"
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
// tiles of Keys keys are stored in the 128-byte swizzle gpu.wgmma reads (a
// 64-element row is 128 bytes: 16-byte chunk c of row r at chunk c xor
// r%8), double-buffered by cp.async; each thread fences its copies for
// the tensor cores (gpu.fence_proxy_async) before the tile's barrier. Per
// tile a warpgroup computes S = Q·Kᵀ with one gpu.wgmma (A = Q from
// registers, loaded by ldmatrix from its own swizzled tile each key tile:
// see emitWGMMA; B = the K tile, K-major), runs the
// softmax on S's fragments and computes O += P·V with a second one (A =
// the probabilities packed from S's registers, B = the V tile, MN-major).
// Each gpu.wgmma waits for its result, so a warpgroup's phases follow
// one another; the warpgroups of a block and the blocks of an SM overlap.
// The head dim must be 64 (one 128-byte row).

// flashWGMMAD is the head dim the wgmma kernel supports.
const flashWGMMAD = 64

// wgStage is the element offset of stage i's K tile; its V tile follows.
func (g *flashGen) wgStage(i int64) int64 { return 2 * i * g.Tile.Keys * flashWGMMAD }

// swizzledChunks returns this thread's 16-byte chunks of a tile of rows
// rows (D = 64: 8 chunks a row) copied into the 128-byte swizzle: thread
// t copies chunk t%8 of rows t/8 + i·T/8, and since T/8 is a multiple of
// 8, its chunk lands at the same swizzled column in every row it copies.
func (g *flashGen) swizzledChunks(rows int64) []chunk {
	x, T := g.x, g.Threads()
	const per = flashWGMMAD / 8
	r0, c0 := x.shr(g.tid, 3), x.and(g.tid, per-1)
	dst := x.add(x.mulc(r0, flashWGMMAD), x.mulc(x.xor(c0, x.and(r0, 7)), 8))
	src := x.add(x.mulc(r0, g.D), x.mulc(c0, 8))
	total := rows * per
	var out []chunk
	for i := range ceilDivInt(total, T) {
		rc := i * T / per
		ch := chunk{row: r0, dst: dst, src: src, rowC: rc, dstC: rc * flashWGMMAD, srcC: rc * g.D}
		if (i+1)*T > total {
			ch.guard = x.lt(g.tid, x.c(total-i*T))
		}
		out = append(out, ch)
	}
	return out
}

// wgLoad issues the copies of key tile kt (an offset-typed value) into
// stage kt % 2.
func (g *flashGen) wgLoad(b *ir.Builder, kt *ir.Value) {
	x := g.x.at(b)
	first := x.mulc(kt, g.Tile.Keys)
	at := x.mulc(x.and(kt, 1), g.wgStage(1))
	src := x.add(g.kvBase, x.mulc(first, g.D))
	var valid *ir.Value
	if g.Lk%g.Tile.Keys != 0 {
		valid = x.c(g.Lk)
	}
	g.copyTile(b, g.kvChunks, g.k, src, at, first, valid)
	g.copyTile(b, g.kvChunks, g.v, src, x.addc(at, g.Tile.Keys*flashWGMMAD), first, valid)
}

// emitWGMMA builds the wgmma kernel's body.
func (g *flashGen) emitWGMMA() {
	b, loc, x := g.b, g.loc, g.x
	R, K := g.Tile.Rows, g.Tile.Keys
	tilesM := ceilDivInt(g.Lq, R)
	numK := ceilDivInt(g.Lk, K)
	g.tid = x.from(gpu.ThreadID(b, loc, "x"))
	bid := x.from(gpu.BlockID(b, loc, "x"))
	z, mt := x.div(bid, x.c(tilesM)), x.rem(bid, x.c(tilesM))
	rowBase := x.mulc(mt, R)
	g.kvBase = x.mulc(z, g.Lk*g.D)
	lane, warp := x.and(g.tid, 31), x.shr(g.tid, 5)
	gr := x.shr(lane, 2)
	g.t2 = x.mulc(x.and(lane, 3), 2)
	q8, r8 := x.shr(lane, 3), x.and(lane, 7)
	lo, hi := x.and(q8, 1), x.shr(q8, 1)
	row0 := x.add(rowBase, x.add(x.mulc(warp, 16), gr))
	g.rows = [][2]*ir.Value{{row0, x.addc(row0, 8)}}
	g.kvChunks = g.swizzledChunks(K)

	g.tiles = x.c(numK)
	full := x.c(g.Lk / K)
	if g.Causal {
		last := x.div(x.addc(rowBase, R+K-1), x.c(K))
		g.tiles = x.op("arith.minui", last, g.tiles)
		full = x.op("arith.minui", x.div(x.addc(rowBase, 1), x.c(K)), full)
	}

	// Q is staged after the stages, for the whole kernel.
	var qValid *ir.Value
	if g.Lq%R != 0 {
		qValid = x.c(g.Lq)
	}
	qBase := x.add(x.mulc(z, g.Lq*g.D), x.mulc(rowBase, g.D))
	qStage := g.wgStage(2)
	g.copyTile(b, g.swizzledChunks(R), g.q, qBase, x.c(qStage), rowBase, qValid)
	g.wgLoad(b, x.c(0))
	gpu.CpAsyncCommit(b, loc)
	gpu.CpAsyncWait(b, loc, 0)
	gpu.Barrier(b, loc)

	// The warp's Q fragments, one m16k16 A per k16 step: matrix q8 of
	// ldmatrix.x4 is rows 8·(q8%2)…, chunk 2·step + q8/2, swizzled with
	// the row's r8 (rows are 16-aligned). They are loaded again in every
	// key tile rather than kept in registers through the loop: ptxas
	// (12.4, and the CUDA 13 driver's JIT alike) reused the registers of
	// loop-invariant wgmma A operands inside a constant-trip loop (the
	// SASS overwrote them with the softmax's values), which gave wrong
	// results on the device from the second key tile on (bench/NOTES.md,
	// session 4).
	qRow := x.add(x.mulc(warp, 16), x.add(x.mulc(lo, 8), r8))
	qRowAt := x.addc(x.mulc(qRow, flashWGMMAD), qStage)
	var qAt []*ir.Value
	for ks := range int64(flashWGMMAD / 16) {
		chunkAt := x.mulc(x.xor(x.addc(hi, 2*ks), r8), 8)
		qAt = append(qAt, x.index(x.add(qRowAt, chunkAt)))
	}

	sm := softmax{ext: "arith.maxnumf", masked: g.f32(math.Inf(-1))}
	if g.Scale < 0 {
		sm.ext, sm.masked = "arith.minnumf", g.f32(math.Inf(1))
	}
	c := float64(float32(g.Scale * math.Log2E))
	sm.c, sm.negC, sm.tau = g.f32(c), g.f32(-c), g.f32(flashRescale)

	nO := int(g.D / 8)
	per := 4*nO + 2 + 2
	inits := make([]*ir.Value, 0, per)
	for range 4 * nO {
		inits = append(inits, g.f32(0))
	}
	inits = append(inits, sm.masked, sm.masked, g.f32(0), g.f32(0))
	sShape := gpu.WGMMAShape{N: K, KSteps: flashWGMMAD / 16}
	oShape := gpu.WGMMAShape{N: flashWGMMAD, KSteps: K / 16, TransB: true, Acc: true}
	tileLoop := func(from, to *ir.Value, it []*ir.Value, masked bool) []*ir.Value {
		one := arith.ConstantIndex(b, loc, 1)
		l := loop.For(b, loc, x.index(from), x.index(to), one, it, func(b *ir.Builder, iv *ir.Value, it []*ir.Value) []*ir.Value {
			x := x.at(b)
			kt := x.from(iv)
			// The tile has landed and is fenced for the tensor cores, and
			// every warpgroup is done with the other stage, which the next
			// tile's copies now refill.
			gpu.CpAsyncWait(b, loc, 0)
			gpu.FenceProxyAsync(b, loc)
			gpu.Barrier(b, loc)
			next := x.addc(kt, 1)
			loop.If(b, loc, x.lt(next, g.tiles), nil, func(b *ir.Builder) []*ir.Value {
				g.wgLoad(b, next)
				gpu.CpAsyncCommit(b, loc)
				return nil
			}, nil)
			at := x.mulc(x.and(kt, 1), g.wgStage(1))
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
			o := gpu.WGMMA(b, loc, g.Elem, oShape, p, g.smem, x.index(x.addc(at, K*flashWGMMAD)), step[:4*nO])
			return append(slices.Clone(o), step[4*nO:]...)
		})
		return l.Results()
	}
	it := tileLoop(x.c(0), full, inits, false)
	if g.Causal || g.Lk%K != 0 {
		it = tileLoop(full, g.tiles, it, true)
	}
	g.store(it, nO, g.rows[0])
}
