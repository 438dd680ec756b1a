package togpu

import (
	"fmt"
)

// FlashTile is how a flash-attention kernel splits its work: blocks of
// Rows query rows (Rows/Warp warps, Warp rows each) and key tiles of Keys.
type FlashTile struct {
	Rows, Keys int64
	// Warp is the query rows of a warp, 16 (the zero value) or 32: two
	// m16 tiles share each K and V fragment a warp loads from workgroup
	// memory, which halves that traffic per score (at the cost of twice
	// the accumulator registers).
	Warp int64
	// SumMMA takes the row sums of the probabilities on the tensor cores,
	// as P times a matrix of ones (one mma.sync per 16 keys instead of an
	// f32 add per score; with WGMMA, which needs Pipe, an m64n8 gpu.wgmma
	// after each P·V, reading 8 rows of ones after the Q tile, whose four
	// accumulators O's rescaling covers); they then sum the probabilities
	// as rounded to the element type, which the product uses too.
	SumMMA bool
	// MinBlocks, when not 0, asks ptxas to fit the registers to that many
	// blocks an SM (launch bounds; it may spill to get there).
	MinBlocks int64
	// Fused rescales the accumulators (when a row's extreme moved) before
	// the exponentials rather than after, so that the exponentials, the
	// packing of P and P·V of every key step follow in one basic block:
	// ptxas may then overlap one step's ex2 (MUFU) with the previous
	// step's mma.sync.
	Fused bool
	// PolyExp is how many of the 8 probabilities a lane takes a key step
	// (per m16 tile) are computed on the FMA pipes by a polynomial (see
	// polyExp2) instead of ex2.approx on the MUFU, which issues only 16 a
	// clock an SM.
	PolyExp int64
	// WGMMA computes both products with gpu.wgmma, a warpgroup (4 warps,
	// 64 rows) at a time (flash_wgmma.go): Hopper's sm_90a target only,
	// head dim 64, or 128 with QShared. Rows is a multiple of 64; Warp,
	// SumMMA, Fused and PolyExp must be zero.
	WGMMA bool
	// Pipe (with WGMMA) overlaps each key tile's softmax with the
	// previous tile's P·V on the tensor cores, as FlashAttention-3 does
	// within a warpgroup (flash_wgmma.go, emitWGMMAPipe). With several
	// warpgroups (Rows > 64) it needs PrefetchV: without it a thread
	// copies the next V tile once its own warpgroup's P·V of the stage's
	// last V has completed, while another warpgroup's may still read it.
	Pipe bool
	// Lazy (with Pipe) rescales O and the sums only in the threads whose
	// rows' extremes moved this tile (a branch after P·V's wait) instead
	// of multiplying by alpha = 1 every tile.
	Lazy bool
	// PrefetchV (with Pipe and Lazy) gives V a third stage, so that a
	// tile's V is copied with its K at the top of the tile before: no
	// copy is then in flight at a tile's fence.proxy.async (ptxas makes
	// it a MEMBAR.ALL.CTA), and one cp.async group a tile suffices.
	PrefetchV bool
	// OneK (with Pipe, one warpgroup a block and no PrefetchV) keeps a
	// single K stage: K(kt+1) is copied into it in tile kt once S(kt),
	// its last reader, has completed (during the softmax), one tile of
	// shared memory less (at head dim 128, 64 KiB instead of 80 with
	// 64-key tiles: 3 blocks an SM instead of 2).
	OneK bool
	// QShared (with Pipe) reads Q for S = Q·Kᵀ from workgroup memory by
	// a matrix descriptor (gpu.wgmma's a_shared) instead of loading its
	// fragments by ldmatrix in every key tile: 16 registers and 4
	// ldmatrix a warp-tile fewer.
	QShared bool
	// Specialized (with Pipe and QShared; not PrefetchV or OneK) adds a
	// producer warpgroup to the block's Rows/64 consumer warpgroups: it
	// alone copies the K and V tiles (two warps each, into two K and three
	// V stages) and hands them over through mbarriers (full when copied,
	// empty when the consumers' product that read them has completed)
	// instead of a block barrier a tile; registers move from it to the
	// consumers (gpu.setmaxnreg). See flash_wgmma.go, emitWGMMAPipe and
	// wsSplit. Measured 30–50% slower than the one-warpgroup tilings
	// (session 11: a consumer warpgroup takes ~3000 cycles a 64-key tile;
	// not the copies, which the producer keeps a tile ahead).
	Specialized bool
	// PingPong (with Specialized and two consumer warpgroups) has the
	// consumers take turns issuing a tile's products, as
	// FlashAttention-3 schedules them: one warpgroup's S and P·V run on
	// the tensor cores while the other runs its softmax.
	PingPong bool
	// TMA (with Pipe and QShared, one warpgroup a block or Specialized;
	// not PrefetchV, nor a dynamic length) copies the K and V tiles
	// with the Tensor Memory Accelerator instead of cp.async: k and v
	// reach the kernel as tensor maps (three dimensions, batch × keys ×
	// head dim, so that a box never runs into the next batch's keys:
	// the hardware zero-fills the tail), and one thread issues a tile's
	// copies (a box of 64 columns a panel), which complete its stage's
	// full mbarrier; the warps free a stage at its empty mbarrier once
	// the product that read it has completed. No cp.async, no fence and
	// no block barrier a tile. See flash_tma.go. With Specialized, one
	// thread of the producer warpgroup copies K and V (wsSplit).
	TMA bool
	// Cluster (with TMA: 2) pairs the blocks of neighbouring row blocks
	// of one (batch, head) in a thread-block cluster that shares the K and
	// V tiles: each block copies half of every tile's keys and multicasts
	// it to both, which halves the tiles' traffic from L2 (each 64-row
	// block otherwise reads its head's whole K and V). A causal pair
	// visits the key tiles of its later block (the earlier one's last tile
	// is then fully masked). A head's row blocks must be even in number.
	// Measured slower than one block (session 13: the pair's blocks wait
	// for each other's releases; L2 was not what limited the forward).
	Cluster int64
	// Unroll (with Pipe) runs the key loop two tiles a trip: the
	// probabilities of one tile, which the next one's P·V reads, then
	// alternate between two sets of registers instead of moving into the
	// loop-carried ones at the end of every tile.
	Unroll bool
	// LatePack (with Pipe) packs a tile's probabilities into P·V's A
	// fragments once the previous tile's P·V, which read the ones
	// before, has completed: the new fragments take its registers, where
	// they otherwise need registers of their own and a move each into the
	// loop-carried ones at the end of the tile.
	LatePack bool
	// Persistent, when not 0, caps the grid at that many blocks, each
	// looping over row blocks (block b takes b, b + grid, …; a barrier
	// between two, whose tiles share the stages): a block's setup and its
	// stores' drain at exit then come once, not once a row block, and
	// where a row block has a static, even number of key tiles
	// (non-causal; not PrefetchV) the next row block's Q tile and first K
	// and V tiles are copied during the last key tile (prefetches),
	// whose latency the block otherwise waits for at each row block's
	// start. With Pipe and one warpgroup a block (not TMA), or with
	// Specialized: there the producer's copies run through the block's
	// row blocks, the stages' mbarriers' phases carried on from one to the
	// next (flashGen.emitPersistentWS).
	Persistent int64
	// Staged (with Pipe) stores O through workgroup memory (with one
	// warpgroup a block and no producer the last key tile's V stage,
	// free once its P·V has completed; else each warp's own rows of the
	// Q tile, free once its warpgroup's last S has), so that each warp's
	// store writes whole 128-byte row segments, 16 bytes a lane
	// (flashGen.stagedStore).
	Staged bool
	// PrefetchQ (with Specialized and Persistent) gives Q a
	// second tile: each consumer warpgroup copies its own 64 rows of the
	// block's next row block's Q into the other tile at the start of a
	// row block, so that the next one starts without Q's load latency
	// and without waiting for the other warpgroup to finish (one Q
	// mbarrier a warpgroup instead of the block's wsQ and wsFree).
	PrefetchQ bool
}

// String is RowsxKeys, followed by wN for Warp N (not 16), f for Fused,
// eN for PolyExp N, s for SumMMA, bN for MinBlocks N, g for WGMMA, p
// for Pipe, l for Lazy, v for PrefetchV, q for QShared, k for OneK, d
// for Specialized (a dedicated producer), a for PingPong (alternating
// consumers), t for TMA, cN for Cluster N, u for Unroll, m for
// LatePack, o for Staged, n for PrefetchQ (the next Q) and rN for
// Persistent N.
func (t FlashTile) String() string {
	s := fmt.Sprintf("%dx%d", t.Rows, t.Keys)
	if t.Warp != 0 && t.Warp != 16 {
		s += fmt.Sprintf("w%d", t.Warp)
	}
	if t.Fused {
		s += "f"
	}
	if t.PolyExp > 0 {
		s += fmt.Sprintf("e%d", t.PolyExp)
	}
	if t.SumMMA {
		s += "s"
	}
	if t.MinBlocks > 0 {
		s += fmt.Sprintf("b%d", t.MinBlocks)
	}
	if t.WGMMA {
		s += "g"
	}
	if t.Pipe {
		s += "p"
	}
	if t.Lazy {
		s += "l"
	}
	if t.PrefetchV {
		s += "v"
	}
	if t.QShared {
		s += "q"
	}
	if t.OneK {
		s += "k"
	}
	if t.Specialized {
		s += "d"
	}
	if t.PingPong {
		s += "a"
	}
	if t.TMA {
		s += "t"
	}
	if t.Cluster > 1 {
		s += fmt.Sprintf("c%d", t.Cluster)
	}
	if t.Unroll {
		s += "u"
	}
	if t.LatePack {
		s += "m"
	}
	if t.Staged {
		s += "o"
	}
	if t.PrefetchQ {
		s += "n"
	}
	if t.Persistent > 0 {
		s += fmt.Sprintf("r%d", t.Persistent)
	}
	return s
}

// nonPersistent is t without Persistent: any cap of the grid goes with
// a tiling of FlashTiles.
func (t FlashTile) nonPersistent() FlashTile {
	t.Persistent = 0
	return t
}

// warpRows is the query rows of a warp.
func (t FlashTile) warpRows() int64 {
	if t.Warp == 0 {
		return 16
	}
	return t.Warp
}

// sums is the number of row-sum registers a lane carries: its partial
// sums of its two rows, or SumMMA's m16n8 accumulator (each row's sum
// twice).
func (t FlashTile) sums() int {
	if t.SumMMA {
		return 4
	}
	return 2
}

// FlashTiles are the tilings Flash supports; the first three are the
// defaults (see Flash.tile). Measured on the H200 at b16 h16 s1024 d64
// (TestGPUFlash, bench/NOTES.md session 3, non-causal / causal ms):
// 128x64w32f 0.267 / 0.181, 64x64fsb4 0.271 / 0.173, 64x64f 0.273 /
// 0.185, 64x64 0.285 / 0.180, 64x64fe2 0.283 / 0.182 (kept: the
// polynomial exponentials lost, fe4 by 6%). Dropped after measurement:
// 128x64w32 (0.283), 128x64w32fe4 (0.282), 64x128fb3 (0.287), 64x64s
// and 64x64sb4 (0.282), 128x32w32 (0.305), 64x64w32 (0.287), 128x64 with
// 16 rows a warp (0.293), 64x128 (0.293), and a pipelined 64x64 of
// session 2 (the next tile's QKᵀ before this tile's softmax: 10%
// slower). The kernel is latency-bound at about 40% of the tensor pipe's
// mma.sync peak (ncu): its phases (QKᵀ on the tensor pipe, the row
// extremes, ex2 on the MUFU, P·V) depend on each other within a warp, and
// no one stall reason dominates.
var FlashTiles = []FlashTile{
	// The mma.sync kernel: the three defaults (tile), the plain one (no
	// Fused) and PolyExp's one.
	{Rows: 128, Keys: 64, Warp: 32, Fused: true},
	{Rows: 64, Keys: 64, Fused: true, SumMMA: true, MinBlocks: 4},
	{Rows: 64, Keys: 64, Fused: true},
	{Rows: 64, Keys: 64},
	{Rows: 64, Keys: 64, Fused: true, PolyExp: 2},
	// The wgmma kernels of sessions 13 to 15's defaults (see
	// FlashTileWGMMA, FlashTileWGMMA128Causal): 64x128gplq, 64x64gplvq,
	// 64x64gplqk, which store O from the registers (flashGen.store).
	{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true},
	{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, PrefetchV: true, QShared: true},
	{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true},
	// One tiling for each other construct of the wgmma kernel, each the
	// fastest measured with it (ms at b16 h16 s1024, non-causal /
	// causal; sessions 13 and 14, bench/NOTES.md): the unpipelined kernel
	// (64x64g 0.240 / 0.156), the pipeline without Lazy and with Q's
	// fragments by ldmatrix (64x64gp 0.226 / 0.150), several pipelined
	// warpgroups sharing K and V (128x64gplvq 0.216 / 0.153), the
	// producer warpgroup with cp.async (128x64gplqd 0.294 / 0.204), its
	// ping-pong (128x64gplqda 0.366 / 0.236) and with TMA (128x128gplqdt),
	// TMA in one warpgroup (64x128gplqt 0.189 / 0.135), with one K
	// stage in cluster pairs (64x64gplqktc2, d128 0.388 / 0.265), Unroll
	// (64x64gplqku, d128 0.313 / 0.216), LatePack (64x128gplqm 0.189 /
	// 0.134) and SumMMA on the tensor cores (64x128sgplq). They keep
	// their constructs checked on the device (TestGPUFlash,
	// TestGPUFlashLarge) and their SASS properties tested
	// (TestFlashWGMMASASS, TestFlashWGMMAMoves).
	{Rows: 64, Keys: 64, WGMMA: true},
	{Rows: 64, Keys: 64, WGMMA: true, Pipe: true},
	{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, PrefetchV: true, QShared: true},
	{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true},
	{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true},
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, TMA: true},
	{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, TMA: true},
	{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true, TMA: true, Cluster: 2},
	{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true, Unroll: true},
	{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, LatePack: true},
	{Rows: 64, Keys: 128, SumMMA: true, WGMMA: true, Pipe: true, Lazy: true, QShared: true},
	// The defaults (WGMMATile) but at non-causal head dim 128: the three
	// above with O stored through workgroup memory (Staged).
	{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Staged: true},
	{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, PrefetchV: true, QShared: true, Staged: true},
	{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true, Staged: true},
	// Persistent's one tiling (a grid of as many blocks as the H200's 132
	// SMs hold, 3 an SM), which keeps its construct checked on the device:
	// session 16's first call measured the persistent forms slower or
	// equal in every column (ms at b16 h16 s1024, non-causal / causal: d64
	// 64x128gplqr396 0.174, 64x64gplvqr528 0.114, 64x128gplqor396 0.166,
	// 64x64gplvqor528 0.107 against 64x128gplqo 0.159 and 64x64gplvqo
	// 0.104; d128 64x64gplqkr396 0.276 / 0.183, 64x64gplqkor396 0.259 /
	// 0.164 against 64x64gplqko 0.260 / 0.160), which dropped the others.
	{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true, Staged: true, Persistent: 396},
	// Session 16's candidates at head dim 128: cuDNN's layout (two
	// consumer warpgroups of 64 rows sharing 128-key tiles, which a
	// producer warpgroup copies; the consumers at 232 registers), with O
	// staged through the Q tile, alone, taking turns (PingPong) and with
	// TMA.
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, Staged: true},
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true, Staged: true},
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true, TMA: true, Staged: true},
	// And persistent, one block an SM (as cuDNN's): the producer copies
	// the next row block's first tiles while the consumers finish.
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, Staged: true, Persistent: 132},
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true, Staged: true, Persistent: 132},
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true, TMA: true, Staged: true, Persistent: 132},
	// Session 17's: the next row block's Q copied during the current one.
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true, TMA: true, Staged: true, PrefetchQ: true, Persistent: 132},
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true, Staged: true, PrefetchQ: true, Persistent: 132},
	// Session 19's d64 candidate, the non-causal d64 default since
	// session 23 (FlashTileWGMMA): 64x128gplqo with LatePack (no moves of
	// P into the loop-carried registers: 30 instructions fewer a warp's
	// 128-key tile, where the device at its power cap spends energy on
	// each).
	{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, LatePack: true, Staged: true},
	// And with the rows' sums on the tensor cores (SumMMA: one m64n8
	// product of P and ones a tile instead of 62 adds a warp).
	{Rows: 64, Keys: 128, SumMMA: true, WGMMA: true, Pipe: true, Lazy: true, QShared: true, LatePack: true, Staged: true},
	// Session 23's lead at d64: cuDNN's layout (whose 128-row blocks take
	// as little energy a launch as cuDNN's kernel; bench/NOTES.md) with
	// LatePack, 7% faster than without at d64 (TestGPUFlashRow, short
	// loop 0.1659 against 0.1789 ms, the row's loop 0.1663 against 0.1794)
	// and unthrottled in the row's loop, where the default 64x128gplqmo
	// read 0.1628; equal at d128.
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true, TMA: true, LatePack: true, Staged: true, PrefetchQ: true, Persistent: 132},
	// FlashAttention-3's d64 layout, the non-causal d64 default since
	// session 24 (FlashTileWGMMA): three consumer warpgroups of 64 rows
	// sharing 128-key tiles (a third of the 64-row kernel's L2 reads), the
	// producer at 24 registers so that the consumers' 160 hold a tile's S,
	// O and P without spilling.
	{Rows: 192, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, TMA: true, LatePack: true, Staged: true, PrefetchQ: true, Persistent: 132},
}

// FlashTileWGMMA and FlashTileWGMMACausal are the wgmma tilings
// graph-attention-to-flash takes with its wgmma option (sm_90a devices)
// for head dim 64, non-causal and causal: the pipelined kernel with Lazy
// rescaling and Q read by descriptor, with 128-key tiles (64x128gplq:
// 156 registers, 3 blocks an SM; the default was its form with O staged
// and, from session 23, LatePack: 64x128gplqmo; since session 24 three
// such warpgroups share a block's K and V tiles, below) for non-causal
// attentions, and with
// 64-key tiles and V a tile ahead in a third stage (64x64gplvq: 106
// registers, 4 blocks) for causal ones, whose diagonal is finer with
// 64-key tiles. Measured on the H200 at b16 h16 s1024 d64 (TestGPUFlash,
// bench/NOTES.md session 5, non-causal / causal ms): 64x128gplq 0.199 /
// 0.144 (the bench's attention with it 0.196 ms, 1.19× torch.compile),
// 64x64gplvq 0.205 / 0.138 (0.197 / 0.142 and 0.203 / 0.136 with the
// descriptors' lower word built by one add a k-step, against 0.199 /
// 0.143 and 0.204 / 0.137 in the same call), 64x64gplq 0.207 / 0.140,
// 128x64gplvq (two warpgroups a block sharing K and V; session 8) 0.219 /
// 0.155, and session 4's
// 64x64gp 0.226 / 0.150 (1.37× in the bench), 64x64g 0.240 / 0.156,
// 128x64g 0.260 / 0.179, 128x128g 0.312 / 0.208, against the mma.sync
// defaults' 0.270 / 0.182. Dropped after measurement: 64x64gpl 0.218 /
// 0.148, 64x64gplv 0.217 / 0.147, 64x128gpl (without q: 170 registers,
// 2 blocks) 0.207 / 0.149, 64x64b5gplq (launch bounds for 5 blocks: 96
// registers, P swapped through local memory) 0.268 / 0.187, 64x64b5g
// 0.269 / 0.182, 192x64g (3 warpgroups) 0.313, and RoundPairs (the
// scores rounded to bf16 two a conversion, widened back by shift and
// mask: 96 → 64 F2FP per 128 keys, +17 instructions) 0.199 / 0.144 with
// 64x128gplq, 0.206 / 0.140 with 64x64gplvq: the conversions are not
// what limits the kernel, and LateCopy (K(kt+1) and V(kt) copied in
// tile kt while S and P·V are in flight, P·V's gpu.wgmma pending 2 and S
// awaited after the copies: nothing but the products between the
// barrier and S, no copy after P·V's wait) 64x128gplqc 0.209 / 0.146,
// 64x64gplqc 0.213 / 0.143: 5–6% slower. What ptxas makes of
// 64x64g's loop (≈ 380 instructions a warp-tile): 64 of them move O
// into and out of the registers of the S product's accumulators (R24–R55
// for both), and each gpu.wgmma waits for its group, so a warpgroup's
// QKᵀ, softmax and P·V never overlap; the pipelined tilings overlap the
// softmax with P·V and keep S and O in separate blocks.
//
// Session 11 (bench/NOTES.md "Session 11: flash forward"; ms at b16 h16
// s1024, d64 and d128, non-causal / causal) kept these defaults against
// the warp-specialized tilings — 128x64gplqd 0.294 / 0.204 and 0.426 /
// 0.289, 128x128gplqd 0.256 / 0.180 and 0.443 / 0.320, 128x64gplqda
// 0.366 / 0.236 and 0.548 / 0.353 — and dropped: 128x128gplqda (0.289 /
// 0.194, 0.507 / 0.358), 192x64gplqd (three consumer warpgroups at 152
// registers: 0.283 / 0.213, 0.524 / 0.369), 64x32gplq (120 registers at
// d128, 4 blocks an SM: 0.243 / 0.159 at d64, in the bench 0.379 /
// 0.243 at d128 against 64x64gplqk's 0.347 / 0.227), 64x32gplqk, and
// PolyExp in the wgmma softmax (64x128e2gplq 0.210 / 0.150, 64x64e2gplvq
// 0.222 / 0.146: a quarter of the exponentials on the FMA pipes costs
// more than it saves — the MUFU is not the limit).
//
// All of those times were of kernels whose every wgmma ran serialized on
// the device: the store's div.rn.f32 was a subroutine call once the
// driver's linker compiled the kernel as relocatable code (docs/
// lowering.md, "No calls in a wgmma kernel"). Session 13, without it (ms,
// b16 h16 s1024, non-causal / causal): d64 64x128gplq 0.190 / 0.134,
// 64x64gplvq 0.204 / 0.136, 64x64gplq 0.207 / 0.140, 128x64gplvq 0.216 /
// 0.153, 128x128gplqd 0.244 / 0.171, 64x128gplqt (TMA) 0.189 / 0.135,
// 64x128gplqtc2 (TMA pairs) 0.201 / 0.145; the defaults stay.
//
// Session 14's candidates, measured after its deadline (bench/NOTES.md
// "Session 14: flash's forward candidates", same call as the defaults'
// 0.188 / 0.135 and d128 0.316 / 0.217): SumMMA, LatePack, Unroll, TMA
// and their combinations all within ±2% — 64x128gplqm 0.189 / 0.134,
// 64x128sgplqm 0.190 / 0.135, 64x128sgplqtm 0.192 / 0.137, 64x64sgplvqm
// 0.201 / 0.134, d128 64x64sgplqku 0.313 / 0.216, 64x64sgplqkm 0.313 /
// 0.215, 64x128gplqkt 0.315 / 0.229, 64x128gplqktm (cuDNN's shape at
// d128) 0.315 / 0.230. Session 15 dropped them from FlashTiles but for
// one tiling a construct, with the unmeasured 128x128gplqda(t),
// 128x128sgplqda, 128x128gplvq, 192x64gplvq and 64x128gplqk, and the
// slower 64x64gplq, 128x128gplqd, 64x128gplqtc2, 128x64g and 128x128g.
//
// Session 16 (first call, same call): O stored through workgroup memory
// (Staged) 64x128gplqo 0.159 against 64x128gplq 0.166, causal
// 64x64gplvqo 0.104 against 64x64gplvq 0.110: the defaults since.
//
// Session 18 (TestGPUFlashRow, same call; ms in TestGPUFlash's short loop
// / in the attention row's, 50 ms of back-to-back warm-up launches then
// 100 ms of flushed ones): 64x128gplqo 0.1593 / 0.1724 against the
// persistent 64x128gplqor396 0.1647 / 0.1720, with TMA copies
// 64x128gplqto 0.1654 / 0.1751, and cuDNN's layout at d64,
// 128x128gplqdatonr132 0.1769 / 0.1775; in the call before, the two
// consumer warpgroups without turns 128x128gplqdtonr132 0.1805 / 0.1813
// and three of them (FlashAttention-3's 192-row blocks at d64; with
// 128-key tiles ptxas spills and serializes the wgmma at their 152
// registers) 192x64gplqdtonr132 0.1936 / 0.1933, against 0.1584 /
// 0.1684: the defaults stay (bench/NOTES.md, session 18).
//
// Session 19 (TestGPUFlashEnergy, same call, the device at its 700 W cap;
// ms back to back / in the row's loop, mJ a launch): 64x128gplqo 0.1828 /
// 0.1811, 128.6 mJ; the default with TMA copies shared by cluster pairs,
// 64x128gplqtc2o, 0.1883 / 0.1861, 127.2 mJ; 128x128gplqdatonr132 0.1849
// / 0.1800, 126.6 mJ; PyTorch's (cuDNN's 128-row persistent kernel)
// 0.1734 / 0.1682, 116.2 mJ. Halving the L2 reads (ncu: 1.03 GB against
// 0.61 and 0.80) saved 1–2% of the energy; the defaults stay.
//
// Session 21, once graph.attention's scores stayed f32 (no conversion of
// each score to bf16 and back: the d64 loop 656 → 592 SASS lines): the
// default takes as much energy a launch as PyTorch's (116.8 against 116.9
// mJ back to back) and its row reads 1.00–1.02× torch.compile's. In
// TestGPUFlashRow (same call; ms in the short loop / 5+600 / the row's
// 300+600) 64x128gplqo 0.1564 / 0.1606 / 0.1659 against LatePack
// 64x128gplqmo 0.1539 / 0.1608 / 0.1694, TMA 64x128gplqto 0.1599 /
// 0.1654 / 0.1701, TMA with LatePack 0.1585 / 0.1631 / 0.1674 and
// 64x128gplqor396 0.1606 / 0.1608 / 0.1700: the defaults stay.
//
// Session 23 measured energy a launch at one SM clock (TestGPUFlashEnergy's
// paced phase, one launch a millisecond at 1980 MHz; bench/NOTES.md,
// session 23): 64x128gplqo took ~17 mJ more a launch than PyTorch's cuDNN
// kernel (of ~95 above idle), LatePack ~6 mJ less than 64x128gplqo, and
// the 128-row layout in our code (128x128gplqdatonr132) as little as
// cuDNN's, reading a quarter of the default's L2 sectors — but at d64 it
// is latency-bound (0.178 ms at an unthrottled 1973 MHz). Under the
// bench's power-capped timing loop the energy is the time: the attention
// row, A/B in one call five times, read 0.1640–0.1654 ms with LatePack
// against 0.1660–0.1686 without (1.7 % less, every pair), so the d64
// default became 64x128gplqmo (FlashTileWGMMADynamic since).
//
// Session 24: FlashAttention-3's d64 layout, three consumer warpgroups
// (192 rows) beside a producer copying 128-key tiles by TMA, persistent,
// takes less energy a launch than cuDNN's kernel (paced 209.7 mJ against
// 217.7; 64x128gplqmo 229.5) with the 64-row kernel's three warps an SM
// sub-partition. s1024 leaves a head's last 192-row block a third full;
// its idle warpgroups skip the key loop (idleWarpgroup). The attention
// row, A/B in one call four times: 0.1579–0.1607 ms (0.95–0.98×
// torch.compile) against 64x128gplqmo's 0.1639–0.1668 (1.00–1.02×), lower
// in every pair. Causal, 192-row blocks are slower (0.129 ms against
// 64x64gplvqo's 0.104): the diagonal wants finer blocks.
var (
	FlashTileWGMMA       = FlashTile{Rows: 192, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, TMA: true, LatePack: true, Staged: true, PrefetchQ: true, Persistent: 132}
	FlashTileWGMMACausal = FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, PrefetchV: true, QShared: true, Staged: true}
)

// FlashTileWGMMADynamic is the wgmma tiling of head dim 64 for non-causal
// attentions of dynamic lengths, and for static ones from session 23 to
// 24: 64x128gplqmo, one warpgroup of 64 rows a block copying its 128-key
// tiles by cp.async (FlashTileWGMMA's TMA needs the length in its tensor
// maps; its 192-row blocks without TMA were not measured).
var FlashTileWGMMADynamic = FlashTile{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, LatePack: true, Staged: true}

// FlashTileWGMMA128Causal is the wgmma tiling of head dim 128 for causal
// attentions of dynamic lengths (Flash.WGMMADefault; before session 18
// for every causal one, before session 17 for all of them):
// 64-key tiles (a K or V tile is 16 KiB), Q read by descriptor, one K
// stage (OneK: 64 KiB in all, 168 registers, 3 blocks an SM). Measured on
// the H200 at b16 h16 s1024 d128 (TestGPUFlash, bench/NOTES.md session 8,
// non-causal / causal ms): 64x64gplqk 0.365 / 0.238, 64x64gplq (two K
// stages, 80 KiB: 2 blocks) 0.401 / 0.263, 64x64gplvq 0.404 / 0.265,
// against the mma.sync kernel 64x64f's 0.525 / 0.342; with every wgmma
// serialized by ptxas (before the native backend kept S's chained
// products in place) 64x64gplq 0.405 / 0.260, 128x64gplvq (two
// warpgroups a block, 1 block an SM at 168 registers) 0.426 / 0.295,
// 64x128gplq (144 KiB, 1 block) 0.535 / 0.372. Session 13, with the
// wgmma no longer serialized (see FlashTileWGMMA): 64x64gplqk 0.317 /
// 0.218, 64x64gplqkt (TMA) 0.325 / 0.218, 128x128gplqd 0.324 / 0.238,
// 64x64gplvq 0.348 / 0.234, 128x64gplqd 0.350 / 0.250, 64x64gplq 0.360 /
// 0.238, 64x64gplqktc2 (TMA pairs) 0.388 / 0.265; session 14, 64x128gplqktm
// (128-key tiles, TMA, one K stage: cuDNN's shape) 0.315 / 0.230 against
// 0.316 / 0.217. Session 16 (first call, same call): with O stored
// through workgroup memory (Staged), 64x64gplqko 0.260 / 0.160 against
// 64x64gplqk 0.278 / 0.178: the default since. Session 16's second call
// (same call): 64x64gplqko 0.264 / 0.162 against the persistent
// specialized 128x128gplqdator132 0.246 / 0.168, 128x128gplqdato 0.251 /
// 0.171: the 64-row tiles stay the causal default (the diagonal is finer),
// the non-causal one is FlashTileWGMMA128.
var FlashTileWGMMA128Causal = FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true, Staged: true}

// FlashTileWGMMA128 is the wgmma tiling of head dim 128 for non-causal
// attentions since session 17: cuDNN's layout (a producer warpgroup
// copying 128-key K and V tiles by TMA for two consumer warpgroups of 64
// rows, which take turns at the tensor cores; 232 registers each), O
// staged through the Q tile, persistent with one block an SM (132: the
// H200's SMs), each consumer warpgroup copying its rows of the next row
// block's Q into a second Q tile (PrefetchQ; 224 KiB of shared memory).
// Session 16's second call (ms at b16 h16 s1024 d128, non-causal):
// 128x128gplqdator132 0.246 against FlashTileWGMMA128Causal's 0.264;
// session 17's first (same call): 0.247 against 0.263, 128x128gplqdato
// 0.253, 128x128gplqdaor132 0.257, and the bench's attention_d128 row
// 0.2675 ms against torch.compile's 0.2453 (1.09×; 1.22× with
// 64x64gplqko in session 16's final call); its second (same call, two
// rounds alike): with PrefetchQ 0.221 against 128x128gplqdator132's
// 0.240 and 64x64gplqko's 0.265 (causal 0.146, 0.164, 0.163), the row
// 0.2469 against 0.2446 (1.01×). Flash.WGMMADefault gives it to causal
// forwards too.
var FlashTileWGMMA128 = FlashTile{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true, TMA: true, Staged: true, PrefetchQ: true, Persistent: 132}

// WGMMATile is the wgmma tiling graph-attention-to-flash takes for an
// attention of head dim d, causal or not (for a head dim no wgmma tiling
// takes, FlashTileWGMMA, which Flash.Check then refuses): at head dim 128
// FlashTileWGMMA128 whether causal or not, with the log-sum-exp (the
// training rows' forward) or without (b16 h16 s1024 d128 causal, same
// call: session 17's second, 128x128gplqdatonr132 0.146 ms against
// 64x64gplqko's 0.163; session 18's first, with the log-sum-exp, 0.146
// against 0.162, checked on the device against 64x64f's with row and key
// tails and at 16x16x1000x1000, TestGPUFlashForms).
func WGMMATile(d int64, causal bool) FlashTile {
	switch {
	case d == 2*wgPanel:
		return FlashTileWGMMA128
	case causal:
		return FlashTileWGMMACausal
	}
	return FlashTileWGMMA
}

// WGMMADefault is the wgmma tiling graph-attention-to-flash takes for f:
// WGMMATile's, but where f's lengths are dynamic copying by cp.async
// instead of TMA (a tensor map holds the key count): FlashTileWGMMADynamic
// for FlashTileWGMMA and, when causal at head dim 128,
// FlashTileWGMMA128Causal (session 18's first call, b16 h16 s1024 d128
// causal, dynamic: 64x64gplqko 0.191 ms against 128x128gplqdaonr132's
// 0.197, with the log-sum-exp 0.195 against 0.201).
func (f Flash) WGMMADefault() FlashTile {
	t := WGMMATile(f.D, f.Causal)
	switch {
	case f.Dynamic && f.Causal && f.D == 2*wgPanel:
		t = FlashTileWGMMA128Causal
	case f.Dynamic && t == FlashTileWGMMA:
		t = FlashTileWGMMADynamic
	}
	if f.Dynamic {
		t.TMA = false
	}
	return t
}
