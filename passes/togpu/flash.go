package togpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/sym"
)

// Flash-attention kernel (issue 12): softmax(q·kᵀ·scale)·v for one graph
// attention in one kernel, without the score matrix in memory. A block
// of Rows/Warp warps takes Rows query rows of one (batch, head); each warp
// owns Warp of them (one or two m16 tiles). The block walks the keys in
// tiles of Keys, K and V tiles double-buffered in workgroup memory by
// cp.async: one barrier per tile, after which the next tile's copies are
// issued, so they overlap this tile's arithmetic. Per tile each warp
// computes its Warp × Keys scores with mma.sync into f32 registers, masks
// them (causal, and the keys past the end; only in the tiles that need
// it), rounds them to bf16 (the graph's product does; one
// cvt.rn.bf16x2.f32 a score) and runs the online softmax: the running row
// maximum m and the row sum l, both f32, and the output accumulator
// rescaled by exp(m_old − m_new) when m moves (lazily, see softmaxStep).
// The scale is folded into the exponent: exp((s − m)·scale) = ex2(s·c −
// m·c) with c = scale·log₂e, one fma and one ex2 per score, m the extreme
// of the unscaled scores (the maximum for a positive scale, the minimum
// for a negative one). The probabilities, rounded to the element type
// once (one cvt.rn.bf16x2.f32 a pair), are the A fragments of O += P·V
// straight from the score registers (the m16n8 accumulator layout of two
// n8 tiles is the m16k16 A layout), so they never leave registers. At the
// end O / l is rounded to the element type and stored.
//
// The result differs from the decomposed graph only in rounding: the
// graph rounds the normalised probability exp(s − m)/l once, the kernel
// the unnormalised exp(s − m_running) once and divides by l after the
// product, the sums run in another order, and the exponent s·c − m·c is
// rounded once rather than twice.
const (
	flashPad  = 8   // elements after each workgroup row: ldmatrix's 8 rows hit different banks
	flashMaxD = 128 // the largest head dim (its O and Q fragments take 96 registers a thread)
	// flashRescale is how far (log₂) a row's probabilities may grow before
	// its running extreme moves and its accumulators are rescaled.
	flashRescale = 8
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
	// f32 add per score); they then sum the probabilities as rounded to
	// the element type, which the product uses too.
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
}

// String is RowsxKeys, followed by wN for Warp N (not 16), f for Fused,
// eN for PolyExp N, s for SumMMA, bN for MinBlocks N, g for WGMMA, p
// for Pipe, l for Lazy, v for PrefetchV, q for QShared, k for OneK, d
// for Specialized (a dedicated producer) and a for PingPong (alternating
// consumers).
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
	return s
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
	{Rows: 128, Keys: 64, Warp: 32, Fused: true},
	{Rows: 64, Keys: 64, Fused: true, SumMMA: true, MinBlocks: 4},
	{Rows: 64, Keys: 64, Fused: true},
	{Rows: 64, Keys: 64},
	{Rows: 64, Keys: 64, Fused: true, PolyExp: 2},
	FlashTileWGMMA,
	FlashTileWGMMACausal,
	{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true},
	{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, PrefetchV: true, QShared: true},
	FlashTileWGMMA128,
	{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true},
	{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true},
	{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true},
	{Rows: 64, Keys: 64, WGMMA: true, Pipe: true},
	{Rows: 64, Keys: 64, WGMMA: true},
	{Rows: 128, Keys: 64, WGMMA: true},
	{Rows: 128, Keys: 128, WGMMA: true},
}

// FlashTileWGMMA and FlashTileWGMMACausal are the wgmma tilings
// graph-attention-to-flash takes with its wgmma option (sm_90a devices)
// for head dim 64, non-causal and causal: the pipelined kernel with Lazy
// rescaling and Q read by descriptor, with 128-key tiles (64x128gplq:
// 156 registers, 3 blocks an SM) for non-causal attentions, and with
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
var (
	FlashTileWGMMA       = FlashTile{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true}
	FlashTileWGMMACausal = FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, PrefetchV: true, QShared: true}
)

// FlashTileWGMMA128 is the wgmma tiling of head dim 128, causal or not:
// 64-key tiles (a K or V tile is 16 KiB), Q read by descriptor, one K
// stage (OneK: 64 KiB in all, 168 registers, 3 blocks an SM). Measured on
// the H200 at b16 h16 s1024 d128 (TestGPUFlash, bench/NOTES.md session 8,
// non-causal / causal ms): 64x64gplqk 0.365 / 0.238, 64x64gplq (two K
// stages, 80 KiB: 2 blocks) 0.401 / 0.263, 64x64gplvq 0.404 / 0.265,
// against the mma.sync kernel 64x64f's 0.525 / 0.342; with every wgmma
// serialized by ptxas (before the native backend kept S's chained
// products in place) 64x64gplq 0.405 / 0.260, 128x64gplvq (two
// warpgroups a block, 1 block an SM at 168 registers) 0.426 / 0.295,
// 64x128gplq (144 KiB, 1 block) 0.535 / 0.372.
var FlashTileWGMMA128 = FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true}

// WGMMATile is the wgmma tiling graph-attention-to-flash takes for an
// attention of head dim d, causal or not (for a head dim no wgmma tiling
// takes, FlashTileWGMMA, which Flash.Check then refuses).
func WGMMATile(d int64, causal bool) FlashTile {
	switch {
	case d == 2*wgPanel:
		return FlashTileWGMMA128
	case causal:
		return FlashTileWGMMACausal
	}
	return FlashTileWGMMA
}

// MappingFlash is the strata.launch mapping of flash-attention kernels
// (fixed parameters: autotuning leaves them alone).
const MappingFlash = "flash"

// Flash is the shape of one flash-attention kernel: Batch independent
// attentions (the batch and head dims flattened) of Lq query rows against
// Lk keys, head dim D for q, k and v, in element type Elem.
type Flash struct {
	Batch, Lq, Lk, D int64
	// Causal masks key j for query i when j > i (top-left aligned).
	Causal bool
	// Dynamic: the queries and the keys are one length known at run time
	// (a graph compiled for every sequence length), which Lq and Lk then
	// hold as ir.Dynamic. The kernel takes the length as its last
	// argument (Launch reads it off q's buffer) and masks the row and key
	// tails whatever it is.
	Dynamic bool
	// Scale multiplies the scores (1/√D by default in graph.attention).
	Scale float64
	// Elem is bf16 or f16.
	Elem ir.Type
	// Tile is one of FlashTiles; the zero value picks the measured best
	// for the shape (see tile).
	Tile FlashTile
	// LSE adds an f32 output [Batch·Lq]: each row's log₂-sum-exp of its
	// scaled scores, m·c + log₂ l with c = Scale·log₂e (the row's
	// probabilities are then ex2(s·c − lse)), which the backward kernels
	// (FlashGrad) read instead of recomputing the softmax's statistics.
	LSE bool
}

// tile is f's tiling.
func (f Flash) tile() FlashTile {
	if f.Tile != (FlashTile{}) {
		return f.Tile
	}
	switch {
	case f.D > 64:
		// (Two m16 tiles a warp, or launch bounds for 4 blocks, would
		// spill: 64x64f takes 168 registers at d128.)
		return FlashTiles[2]
	case f.Causal:
		return FlashTiles[1] // the finer diagonal of 64-row blocks
	}
	return FlashTiles[0]
}

// Tiling is the tiling f's kernel uses: Tile, or the default for f's
// shape when Tile is the zero value.
func (f Flash) Tiling() FlashTile { return f.tile() }

// Threads is the block size of f's launch.
func (f Flash) Threads() int64 { return f.consumers() + f.producers() }

// consumers is the threads of the block that compute (all of them but
// with Specialized).
func (f Flash) consumers() int64 { t := f.tile(); return 32 * t.Rows / t.warpRows() }

// producers is the threads of Specialized's producer warpgroup, or 0.
func (f Flash) producers() int64 {
	if f.tile().Specialized {
		return gpu.WarpgroupSize
	}
	return 0
}

// shared is the number of workgroup elements: two stages of a K and a V
// tile, and the Q tile (staged in the second stage before the loop when
// it fits there, else after the stages). Beyond
// gpu.MaxStaticSharedBytes the kernel's workgroup memory is dynamic.
func (f Flash) shared() int64 {
	t := f.tile()
	if t.WGMMA {
		kv := 4 * t.Keys * f.D
		switch {
		case t.PrefetchV || t.Specialized:
			kv += t.Keys * f.D // (a third V stage)
		case t.OneK:
			kv -= t.Keys * f.D
		}
		return kv + t.Rows*f.D // (Q after the stages)
	}
	n := 4 * t.Keys * (f.D + flashPad)
	if t.Rows > 2*t.Keys {
		n += t.Rows * (f.D + flashPad)
	}
	return n
}

// qStage is the workgroup offset the Q tile is staged at.
func (f Flash) qStage() int64 {
	t := f.tile()
	if t.Rows <= 2*t.Keys {
		return 2 * t.Keys * (f.D + flashPad)
	}
	return 4 * t.Keys * (f.D + flashPad)
}

// Check reports why the kernel cannot compute f, or nil.
func (f Flash) Check() error {
	t := f.tile()
	switch {
	case f.Elem != ir.BF16 && f.Elem != ir.F16:
		return fmt.Errorf("flash attention: element type %s, want bf16 or f16", f.Elem)
	case t.Specialized && (!t.Pipe || !t.QShared || t.PrefetchV || t.OneK):
		return fmt.Errorf("flash attention: tile %s: Specialized needs the pipelined kernel with QShared, without PrefetchV and OneK", t)
	case t.PingPong && (!t.Specialized || t.Rows != 2*64):
		return fmt.Errorf("flash attention: tile %s: PingPong needs Specialized and two consumer warpgroups (128 rows)", t)
	case t.Pipe && t.Rows > 64 && !t.PrefetchV && !t.Specialized:
		return fmt.Errorf("flash attention: tile %s pipelines several warpgroups without PrefetchV (a V stage would be copied while read)", t)
	case t.OneK && (!t.Pipe || t.Rows > 64 || t.PrefetchV):
		return fmt.Errorf("flash attention: tile %s: OneK needs the pipelined kernel with one warpgroup a block and without PrefetchV", t)
	case !slices.Contains(FlashTiles, t):
		return fmt.Errorf("flash attention: tile %s is not one of FlashTiles", t)
	case f.D <= 0 || f.D%16 != 0 || f.D > flashMaxD:
		return fmt.Errorf("flash attention: head dim %d, want a multiple of 16 up to %d", f.D, flashMaxD)
	case t.WGMMA && f.D != wgPanel && !(t.QShared && f.D == 2*wgPanel):
		if t.QShared {
			return fmt.Errorf("flash attention: tile %s (wgmma) takes head dims %d and %d only, not %d", t, wgPanel, 2*wgPanel, f.D)
		}
		return fmt.Errorf("flash attention: tile %s (wgmma) takes head dim %d only, not %d", t, wgPanel, f.D)
	case f.Dynamic && (f.Lq != ir.Dynamic || f.Lk != ir.Dynamic):
		return fmt.Errorf("flash attention: a dynamic length with %d queries and %d keys, want both dynamic", f.Lq, f.Lk)
	case f.Batch <= 0 || !f.Dynamic && (f.Lq <= 0 || f.Lk <= 0):
		return fmt.Errorf("flash attention: empty shape (batch %d, %d queries, %d keys)", f.Batch, f.Lq, f.Lk)
	case f.Scale == 0 || math.IsInf(f.Scale, 0) || math.IsNaN(f.Scale) || float32(f.Scale) == 0:
		// The scale is folded into the exponent's fma, which needs the
		// masked scores' ±inf times it to be −inf.
		return fmt.Errorf("flash attention: scale %g, want a finite nonzero f32", f.Scale)
	}
	return nil
}

// Grid is the number of blocks of the launch (of Threads threads); 0
// with Dynamic (Launch computes it at run time).
func (f Flash) Grid() int64 {
	if f.Dynamic {
		return 0
	}
	return f.Batch * ceilDivInt(f.Lq, f.tile().Rows)
}

func ceilDivInt(a, b int64) int64 { return (a + b - 1) / b }

// memref is the 1-D global buffer type of n elements (of a dynamic size
// with Dynamic).
func (f Flash) memref(n int64) ir.Type {
	if f.Dynamic {
		n = ir.Dynamic
	}
	return ir.MemRefOf([]int64{n}, f.Elem)
}

// ArgTypes are the kernel's arguments: q [Batch·Lq·D], k and v [Batch·Lk·D]
// and the output [Batch·Lq·D], row-major 1-D views, then with LSE the
// rows' log-sum-exp [Batch·Lq] in f32, and with Dynamic the length
// (index).
func (f Flash) ArgTypes() []ir.Type {
	q, kv := f.memref(f.Batch*f.Lq*f.D), f.memref(f.Batch*f.Lk*f.D)
	ts := []ir.Type{q, kv, kv, q}
	if f.LSE {
		n := f.Batch * f.Lq
		if f.Dynamic {
			n = ir.Dynamic
		}
		ts = append(ts, ir.MemRefOf([]int64{n}, ir.F32))
	}
	if f.Dynamic {
		ts = append(ts, ir.Index)
	}
	return ts
}

// Kernel inserts the kernel gpu.func name at b's insertion point (inside
// a gpu.module) and returns it.
func (f Flash) Kernel(b *ir.Builder, loc ir.Location, name string) (*ir.Operation, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	f.Tile = f.tile()
	kernel, entry := gpu.NewKernel(b, loc, name, f.ArgTypes())
	kernel.SetAttr(LaunchAttr, ir.Dict(
		ir.NamedAttr{Name: "block", Value: ir.Int(f.Threads(), ir.I64)},
		ir.NamedAttr{Name: "vector", Value: ir.Int(1, ir.I64)},
		ir.NamedAttr{Name: "rows_per_block", Value: ir.Int(f.Tile.Rows, ir.I64)},
		ir.NamedAttr{Name: "mapping", Value: ir.Str(MappingFlash)},
	))
	if f.Tile.Specialized {
		// (gpu.setmaxnreg's counts are within what the block's size
		// leaves a thread. ptxas honours them only with the registers at
		// entry capped, which the launch bounds' one block an SM does:
		// with the block size alone it ignored them wherever the kernel
		// needed fewer than the cap, as at head dim 64 — warning C7508.)
		kernel.SetAttr("nvvm.maxntid", ir.Int(f.Threads(), ir.I64))
		kernel.SetAttr("nvvm.minctasm", ir.Int(1, ir.I64))
	}
	if f.Tile.MinBlocks > 0 {
		// targets/llvm's MaxThreadsAttr and MinBlocksAttr.
		kernel.SetAttr("nvvm.maxntid", ir.Int(f.Threads(), ir.I64))
		kernel.SetAttr("nvvm.minctasm", ir.Int(f.Tile.MinBlocks, ir.I64))
	}
	kb := ir.NewBuilder(b.Ctx)
	kb.SetInsertionPointToEnd(entry)
	// Offsets in i32 when every one fits (fewer registers and integer
	// instructions than 64-bit index arithmetic).
	// (A dynamic length has no bound: index.)
	width := ir.Type(ir.I32)
	if f.Dynamic || f.Batch*max(f.Lq, f.Lk)*f.D+(f.Tile.Rows+f.Tile.Keys)*f.D >= 1<<31 {
		width = ir.Index
	}
	g := &flashGen{Flash: f, b: kb, loc: loc, x: ix{kb, loc, width}, ld: f.D + flashPad, lastFirst: f.Causal}
	args := entry.Arguments()
	g.q, g.k, g.v, g.o = args[0], args[1], args[2], args[3]
	if f.LSE {
		g.lse = args[4]
	}
	if f.Dynamic {
		g.seq = g.x.from(args[len(args)-1])
	}
	g.smem = gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(f.shared(), f.Elem))
	switch {
	case f.Tile.Pipe:
		g.emitWGMMAPipe()
	case f.Tile.WGMMA:
		g.emitWGMMA()
	default:
		g.emit()
	}
	gpu.Return(kb, loc)
	return kernel, nil
}

// Launch inserts the launch of kernel (which Kernel made; ref names it)
// on the 1-D buffers q, k, v and out (of ArgTypes) at b, and with LSE the
// log-sum-exp buffer lse[0].
func (f Flash) Launch(b *ir.Builder, loc ir.Location, kernel *ir.Operation, ref ir.SymbolRefAttr, q, k, v, out *ir.Value, lse ...*ir.Value) (*ir.Operation, error) {
	args := append([]*ir.Value{q, k, v, out}, lse...)
	if f.Dynamic {
		args = append(args, nil) // (the length, below)
	}
	if len(args) != len(f.ArgTypes()) {
		return nil, fmt.Errorf("flash attention: %d launch arguments for %d kernel parameters", len(args), len(f.ArgTypes()))
	}
	shared, err := gpu.DynamicSharedSize(b, loc, kernel)
	if err != nil {
		return nil, fmt.Errorf("flash attention: %w", err)
	}
	one := arith.ConstantIndex(b, loc, 1)
	grid := [3]*ir.Value{nil, one, one}
	if f.Dynamic {
		// The length is q's size over Batch·D; the blocks Batch times
		// its row tiles.
		c := func(n int64) *ir.Value { return arith.ConstantIndex(b, loc, n) }
		n := arith.Binary(b, arith.OpDivUI, loc, loop.Dim(b, loc, q, 0), c(f.Batch*f.D))
		rows := arith.Binary(b, arith.OpDivUI, loc, arith.Binary(b, arith.OpAddI, loc, n, c(f.tile().Rows-1)), c(f.tile().Rows))
		grid[0] = arith.Binary(b, arith.OpMulI, loc, rows, c(f.Batch))
		args[len(args)-1] = n
	} else {
		grid[0] = arith.ConstantIndex(b, loc, f.Grid())
	}
	block := [3]*ir.Value{arith.ConstantIndex(b, loc, f.Threads()), one, one}
	return gpu.LaunchFunc(b, loc, ref, grid, block, args, shared), nil
}

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
	g.copyTile(b, g.kvChunks, g.k, src, at, first, valid)
	g.copyTile(b, g.kvChunks, g.v, src, x.addc(at, g.Tile.Keys*row), first, valid)
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
	tilesM := g.rowBlocks(x)
	g.tid = x.from(gpu.ThreadID(b, loc, "x"))
	bid := x.from(gpu.BlockID(b, loc, "x"))
	z, mt := x.div(bid, tilesM), x.rem(bid, tilesM)
	if g.lastFirst {
		mt = x.sub(x.addc(tilesM, -1), mt)
	}
	rowBase := x.mulc(mt, g.Tile.Rows)
	g.kvBase = g.batchBase(x, z, g.Lk)
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
		last := x.div(x.addc(rowBase, R+K-1), x.c(K))
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
				// (Copies: round, mask and softmaxStep replace the values in place.)
				sm[2*np] = slices.Clone(gpu.MMASync(b, g.loc, g.Elem, af[mi], r[:2], sm[2*np]))
				sm[2*np+1] = slices.Clone(gpu.MMASync(b, g.loc, g.Elem, af[mi], r[2:], sm[2*np+1]))
			}
		}
	}
	return s
}

// round rounds each score to the element type (the graph's q·kᵀ is in
// it), as f32: truncf then extf, which the native backend selects for
// bf16 as one cvt.rn.bf16x2.f32 with a zero lower half. The wgmma kernels
// round f16 scores two at a time (packed as pair does, then unpacked:
// one cvt.rn.f16x2.f32 and two cvt.f32.f16): rounded one by one
// (cvt.rn.f16.f32, cvt.f32.f16), ptxas serializes every wgmma of the
// kernel (info C7514; bench/NOTES.md, session 8).
func (g *flashGen) round(b *ir.Builder, s [][]*ir.Value) {
	for j := range s {
		if g.Tile.WGMMA && g.Elem == ir.F16 {
			for r := 0; r+1 < len(s[j]); r += 2 {
				p := g.pair(b, s[j][r], s[j][r+1])
				s[j][r], s[j][r+1] = g.unpack(b, p, 0), g.unpack(b, p, 16)
			}
			continue
		}
		for r := range s[j] {
			s[j][r] = arith.NewCast(b, arith.OpExtF, g.loc, arith.NewCast(b, arith.OpTruncF, g.loc, s[j][r], g.Elem), ir.F32)
		}
	}
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

// unpack widens the 16-bit half of p (a pair's) at bit shift to f32.
func (g *flashGen) unpack(b *ir.Builder, p *ir.Value, shift int64) *ir.Value {
	if shift > 0 {
		p = arith.Binary(b, arith.OpShRUI, g.loc, p, arith.ConstantInt(b, g.loc, shift, ir.I32))
	}
	u := arith.NewCast(b, arith.OpTruncI, g.loc, p, ir.I16)
	return arith.NewCast(b, arith.OpExtF, g.loc, arith.NewCast(b, arith.OpBitcast, g.loc, u, g.Elem), ir.F32)
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
// tile's scores (one m16 tile's), rounds the scores to the element type
// and, but for Fused (whose product does it a key step at a time),
// replaces them by ex2(s·c − m·c). It returns the accumulators o and l
// rescaled with m (l with the tile's probabilities added but for SumMMA
// and Fused, whose product adds them) in the order of the loop's carried
// values, and −m·c of the lane's two rows. A row's m moves
// to the tile's extreme only when that raises its probabilities above
// 2^flashRescale (as FlashAttention-4 does): otherwise the stale m serves,
// the probabilities stay at most 2^flashRescale (f32 and bf16 hold them as
// precisely; the accumulators then overflow f32 only where Lk·max|v|
// passes 10³⁶ rather than 10³⁸), and when no row of the lane moves, the
// rescaling of its accumulators by ex2((m_old − m_new)·c) is skipped,
// which after the first tiles is the common case. The extreme is taken
// before the rounding, which is monotonic: the rounded extreme's
// probability is then within half an ulp of 1 instead of exactly 1, as
// harmless, and the reduction does not wait for the rounding.
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
	g.round(b, s)
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

// exps replaces the 4 (rounded) scores of n8 tile st of a key step (0 or
// 1) by ex2(s·c − m·c), with negMC = −m·c of the lane's two rows: the
// last PolyExp of the step's 8 by polyExp2, the others by ex2.approx.
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
// p holds the rounded scores: it takes each key step's exponentials
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
		inv[h] = fop(b, loc, arith.OpDivF, g.f32(1), l)
		if g.lse != nil {
			g.storeLSE(b, rows[h], it[4*nO+h], l)
		}
	}
	for h := range 2 {
		emit := func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			rowOff := x.add(g.batchBase(x, g.batchOf(b), g.Lq), x.mulc(rows[h], g.D))
			for j := range nO {
				for c := range 2 {
					r := 2*h + c
					v := fop(b, loc, arith.OpMulF, it[4*j+r], inv[h])
					v = arith.NewCast(b, arith.OpTruncF, loc, v, g.Elem)
					loop.Store(b, loc, v, g.o, x.index(x.add(rowOff, x.addc(g.t2, int64(8*j+c)))))
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
	return x.div(x.from(gpu.BlockID(b, g.loc, "x")), g.rowBlocks(x))
}

// The graph-attention-to-flash pass and its other half in
// convert-loop-to-gpu. graph-decompose expands graph.attention into two
// products and a softmax before lowering, so the pass runs first, on the
// graph: each attention the kernel computes becomes a func.call of a
// private declaration tagged FlashAttr, which convert-graph-to-loop
// lowers like any call (buffers in, a buffer out) and convert-loop-to-gpu
// replaces by the kernel's launch (lowerFlashCalls). Without the pass
// nothing changes: it is off by default (see the pass's description for
// why), enabled by naming it before lower-to-gpu.
const (
	// FlashPassName is the pass's pipeline name.
	FlashPassName = "graph-attention-to-flash"
	// FlashAttr is the dictionary {causal, scale} (and lse, wgmma when
	// set) on the declarations standing for flash kernels.
	FlashAttr = "strata.flash"
	// FlashGradAttr is the dictionary {causal, scale} on the declarations
	// standing for the backward kernels (FlashGrad) of an attention.
	FlashGradAttr = "strata.flash_grad"
)

func init() {
	passes.Register(&passes.PassInfo{
		Name:    FlashPassName,
		Summary: "Run bf16 and f16 graph.attention as one flash-attention kernel (before lower-to-gpu)",
		Description: "Each `graph.attention` without a mask operand, on static bf16 or f16 q, k, v with the same " +
			"batch dims (no broadcasting), a head dim that is a multiple of 16 up to 128 for q, k and v, and " +
			"a finite nonzero scale — or on q, k, v whose sequence length alone is dynamic, one symbolic size " +
			"(`#graph.dims`) for all three (a graph compiled for every length; the kernel takes the length " +
			"at run time and masks its tails) —, becomes a `func.call` of a private declaration tagged " +
			"`strata.flash = {causal, scale}`. convert-loop-to-gpu replaces each such call by the launch of " +
			"one kernel: blocks of 4 warps, 128 query rows (32 a warp) for non-causal attentions up to head " +
			"dim 64, else 64 (16 a warp; causal up to 64 with launch bounds for 4 blocks an SM and the row " +
			"sums on the tensor cores), K and V tiles of 64 keys double-buffered by " +
			"cp.async (one barrier per tile; workgroup memory beyond 48 KB is dynamic), scores and P·V on " +
			"mma.sync with f32 accumulators, online softmax in f32 with the scale folded into one fma before " +
			"each ex2 (the score matrix never reaches memory; only the causal diagonal and key-tail tiles are " +
			"masked). The results match graph.attention within the rounding of their element type, not bit for bit: the kernel " +
			"rounds the probabilities before rather than after the division by the row sum, so about half " +
			"the outputs differ from the decomposition's by an ulp (normwise-relative 8e-3 at 2x4x64x32). " +
			"That is why lower-to-gpu does not run it by default (its GPU results match the interpreter's " +
			"to 2e-4 on the end-to-end programs); the bench opts in. Other attentions are left to " +
			"graph-decompose. Use as `builtin.module(graph-attention-to-flash,lower-to-gpu)`. With `wgmma=true` " +
			"(the bench's GPU engine on sm_90 devices) attentions of head dim 64 and 128 take Hopper's warpgroup-MMA kernel " +
			"instead (WGMMATile; docs/lowering.md), compiled for sm_90a. Each " +
			"`graph.attention_grad` of the same shapes becomes two backward kernels (FlashGrad: dQ, which also " +
			"writes D = rowsum(dO∘O), then dK and dV over 32-query tiles; mma.sync, 64-row blocks; with `wgmma=true` " +
			"at head dims 64 and 128 every product on gpu.wgmma, one warpgroup a block) that read the " +
			"rows' log-sum-exp the forward kernel of its o writes (its declaration then has it as a second " +
			"result); a gradient whose o comes from elsewhere gets a forward kernel of its own for it.",
		Anchor: builtin.OpModule,
		Options: []passes.OptionDef{{Name: "wgmma", Type: passes.Bool, Default: false,
			Doc: "Hopper (sm_90a) kernels: attentions of head dim 64 and 128 take the wgmma tilings (WGMMATile), " +
				"and their gradients the wgmma backward kernels (FlashGrad.WGMMA), whose gpu.module then asks for " +
				"the sm_90a target (gpu.PTXTargetAttr)"}},
		Before: []passes.Order{
			{Pass: "graph-decompose", Reason: "graph-decompose expands graph.attention, leaving nothing to match"},
			{Pass: "convert-graph-to-loop", Reason: "it matches graph.attention, which convert-graph-to-loop replaces with loops"},
		},
		New: func(o passes.Options) (passes.Pass, error) { return flashPass{wgmma: o.Bool("wgmma")}, nil },
	})
}

type flashPass struct{ wgmma bool }

func (flashPass) Name() string { return FlashPassName }

// Run outlines every attention the kernel takes.
func (p flashPass) Run(module *ir.Operation, st *passes.State) error {
	n := OutlineAttention(st.Ctx, module, p.wgmma)
	st.Stat("flash-kernels", "attentions run as flash kernels").Add(int64(n))
	if n == 0 {
		st.MarkUnchanged()
	}
	return nil
}

// OutlineAttention replaces each graph.attention of module's functions that
// flashOf accepts by a call of a new declaration tagged FlashAttr, and
// each graph.attention_grad that flashGradOf accepts by a call of one
// tagged FlashGradAttr, and returns how many it replaced. A gradient
// whose o is the result of an outlined attention of the same q, k, v,
// scale and causality takes that kernel's log-sum-exp (the forward's
// declaration then has it as a second result); another gets a forward
// kernel of its own for it. With wgmma the attentions that the wgmma
// tiling (WGMMATile) computes, and the gradients that the wgmma backward
// kernels compute (DefaultFlashGrad), are marked for them.
func OutlineAttention(ctx *ir.Context, module *ir.Operation, wgmma bool) int {
	body := module.Region(0).Front()
	if body == nil {
		return 0
	}
	b := ir.NewBuilder(ctx)
	n := 0
	for _, fn := range body.Ops() {
		if fn.Name() != funcs.FuncOp || funcs.IsExternal(fn) {
			continue
		}
		var atts, grads []*ir.Operation
		fn.Walk(func(o *ir.Operation) bool {
			switch o.Name() {
			case graph.OpAttention:
				if _, ok := flashOf(o); ok {
					atts = append(atts, o)
				}
			case graph.OpAttentionGrad:
				if _, ok := flashGradOf(o); ok {
					grads = append(grads, o)
				}
			}
			return true
		})
		fwdOf, wantLSE := map[*ir.Operation]*ir.Operation{}, map[*ir.Operation]bool{}
		for _, g := range grads {
			if a := g.Operand(3).DefiningOp(); a != nil && slices.Contains(atts, a) && pairs(a, g) {
				fwdOf[g], wantLSE[a] = a, true
			}
		}
		lse := map[*ir.Operation]*ir.Value{}
		for _, a := range atts {
			f, _ := flashOf(a)
			call := outlineFlash(b, module, fn, a, f, wgmma, wantLSE[a])
			a.Result(0).ReplaceAllUsesWith(call.Result(0))
			if wantLSE[a] {
				lse[a] = call.Result(1)
			}
			a.Erase()
			n++
		}
		for _, g := range grads {
			f, _ := flashGradOf(g)
			l := lse[fwdOf[g]]
			if l == nil {
				// (The forward kernel's o is left unused.)
				l = outlineFlash(b, module, fn, g, f.Flash, wgmma, true).Result(1)
			}
			b.SetInsertionPointBefore(fn)
			name := uniqueSymbol(module, symName(fn)+"_flash_grad")
			ins := append(valueTypes(g.Operands()), l.Type())
			decl := funcs.NewExternalFunc(b, name, ir.FunctionOf(ins, valueTypes(g.Results())), g.Loc())
			spec := []ir.NamedAttr{
				{Name: "causal", Value: ir.Bool(f.Causal)},
				{Name: "scale", Value: ir.Float(f.Scale, ir.F64)},
			}
			if DefaultFlashGrad(f.Flash, wgmma).WGMMA {
				spec = append(spec, ir.NamedAttr{Name: "wgmma", Value: ir.Bool(true)})
			}
			decl.SetAttr(FlashGradAttr, ir.Dict(spec...))
			b.SetInsertionPointBefore(g)
			call := funcs.Call(b, g.Loc(), name, valueTypes(g.Results()), append(g.Operands(), l)...)
			for i, r := range g.Results() {
				r.ReplaceAllUsesWith(call.Result(i))
			}
			g.Erase()
			n++
		}
	}
	return n
}

// outlineFlash inserts, before op, a call of a new declaration (before fn)
// tagged FlashAttr that computes f on op's first three operands: its
// result, of the type of op's first result, and with lse the rows'
// log-sum-exp (f32, op's batch dims and Lq) as a second result.
func outlineFlash(b *ir.Builder, module, fn, op *ir.Operation, f Flash, wgmma, lse bool) *ir.Operation {
	b.SetInsertionPointBefore(fn)
	name := uniqueSymbol(module, symName(fn)+"_flash")
	ins := valueTypes(op.Operands()[:3])
	outs := []ir.Type{op.Operand(0).Type()}
	if lse {
		q := op.Operand(0).Type().(*ir.TensorType).Shape()
		outs = append(outs, ir.TensorOf(slices.Clone(q[:len(q)-1]), ir.F32))
	}
	decl := funcs.NewExternalFunc(b, name, ir.FunctionOf(ins, outs), op.Loc())
	spec := []ir.NamedAttr{
		{Name: "causal", Value: ir.Bool(f.Causal)},
		{Name: "scale", Value: ir.Float(f.Scale, ir.F64)},
	}
	if lse {
		spec = append(spec, ir.NamedAttr{Name: "lse", Value: ir.Bool(true)})
	}
	if g := f; wgmma {
		if g.Tile = WGMMATile(g.D, g.Causal); g.Check() == nil {
			spec = append(spec, ir.NamedAttr{Name: "wgmma", Value: ir.Bool(true)})
		}
	}
	decl.SetAttr(FlashAttr, ir.Dict(spec...))
	b.SetInsertionPointBefore(op)
	return funcs.Call(b, op.Loc(), name, outs, op.Operands()[:3]...)
}

// valueTypes returns the types of vs.
func valueTypes(vs []*ir.Value) []ir.Type {
	ts := make([]ir.Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type()
	}
	return ts
}

// pairs reports whether attention a computes the o of attention_grad g:
// the same q, k and v, scale and causality.
func pairs(a, g *ir.Operation) bool {
	fa, _ := flashOf(a)
	fg, _ := flashGradOf(g)
	return g.Operand(3) == a.Result(0) && slices.Equal(a.Operands(), g.Operands()[:3]) &&
		fa.Causal == fg.Causal && fa.Scale == fg.Scale
}

// flashGradOf returns the backward kernels computing the
// graph.attention_grad op, if any: the shapes flashOf takes, o and do of
// q's shape.
func flashGradOf(op *ir.Operation) (FlashGrad, bool) {
	if op.NumOperands() != 5 || op.NumResults() != 3 {
		return FlashGrad{}, false
	}
	q := op.Operand(0).Type()
	if op.Operand(3).Type() != q || op.Operand(4).Type() != q {
		return FlashGrad{}, false
	}
	f, ok := flashShape(op, op.Operands()[:3], op.Operand(0))
	fg := FlashGrad{Flash: f}
	return fg, ok && fg.Check() == nil
}

// flashOf returns the kernel computing the graph.attention op, if any.
func flashOf(op *ir.Operation) (Flash, bool) {
	if op.NumOperands() != 3 || op.NumResults() != 1 {
		return Flash{}, false // (a mask operand)
	}
	f, ok := flashShape(op, op.Operands(), op.Result(0))
	return f, ok && f.Check() == nil
}

// flashShape reads the attention shape of op (attention or
// attention_grad) from q, k, v (ops) and the result r: tensors of one
// element type, rank ≥ 2, the same batch dims, k and v of one shape, r of
// q's; and its scale and causality. Every size is static but the
// sequence length, which may be dynamic when it is one symbolic size
// (graph.DimsOf) for the queries and the keys (Flash.Dynamic).
func flashShape(op *ir.Operation, ops []*ir.Value, r *ir.Value) (Flash, bool) {
	var shapes [4][]int64
	var lens [4]sym.Expr // the sequence lengths' symbolic sizes
	var elem ir.Type
	for i, v := range append(slices.Clone(ops), r) {
		t, ok := v.Type().(*ir.TensorType)
		if !ok || !t.Ranked() || len(t.Shape()) < 2 || (elem != nil && t.ElementType() != elem) {
			return Flash{}, false
		}
		s := t.Shape()
		for d, n := range s {
			if n == ir.Dynamic && d != len(s)-2 {
				return Flash{}, false
			}
		}
		lens[i] = graph.DimsOf(t)[len(s)-2]
		elem, shapes[i] = t.ElementType(), s
	}
	q, k, v, res := shapes[0], shapes[1], shapes[2], shapes[3]
	nb := len(q) - 2
	if len(k) != len(q) || !slices.Equal(k, v) || !slices.Equal(q, res) || !slices.Equal(q[:nb], k[:nb]) || q[nb+1] != k[nb+1] {
		return Flash{}, false
	}
	dynamic := q[nb] == ir.Dynamic || k[nb] == ir.Dynamic
	if dynamic && (graph.IsUnknown(lens[0]) || !lens[0].Equal(lens[1]) || !lens[0].Equal(lens[2]) || !lens[0].Equal(lens[3])) {
		return Flash{}, false
	}
	batch := int64(1)
	for _, d := range q[:nb] {
		batch *= d
	}
	f := Flash{Batch: batch, Lq: q[nb], Lk: k[nb], D: q[nb+1], Elem: elem, Scale: 1 / math.Sqrt(float64(q[nb+1])), Dynamic: dynamic}
	if s, ok := op.Attr("scale").(ir.FloatAttr); ok {
		f.Scale = s.Value()
	}
	if c, ok := op.Attr("causal").(ir.IntegerAttr); ok {
		f.Causal = c.Value != 0
	}
	return f, true
}

// lowerFlashCalls replaces, in every function of module, each call of a
// declaration tagged FlashAttr (on buffers, after convert-graph-to-loop)
// by an output buffer and the flash kernel's launch, then erases the
// declarations.
func lowerFlashCalls(ctx *ir.Context, module *ir.Operation) error {
	body := module.Region(0).Front()
	if body == nil {
		return nil
	}
	var decls []*ir.Operation
	for _, fn := range body.Ops() {
		if fn.Name() == funcs.FuncOp && (fn.Attr(FlashAttr) != nil || fn.Attr(FlashGradAttr) != nil) {
			decls = append(decls, fn)
		}
	}
	if len(decls) == 0 {
		return nil
	}
	b := ir.NewBuilder(ctx)
	for _, fn := range body.Ops() {
		if fn.Name() != funcs.FuncOp || funcs.IsExternal(fn) {
			continue
		}
		var calls []*ir.Operation
		fn.Walk(func(o *ir.Operation) bool {
			if o.Name() == funcs.CallOp {
				if ref, ok := o.Attr(funcs.CalleeAttr).(ir.SymbolRefAttr); ok && slices.ContainsFunc(decls, func(d *ir.Operation) bool { return symName(d) == ref.Root }) {
					calls = append(calls, o)
				}
			}
			return true
		})
		if len(calls) == 0 {
			continue
		}
		gpu.MarkContainer(module)
		b.SetInsertionPointAfter(fn)
		gmod := gpu.NewModule(b, fn.Loc(), uniqueSymbol(module, symName(fn)+"_flash_kernels"))
		for i, call := range calls {
			lower := lowerFlashCall
			if ir.LookupSymbol(module, call.Attr(funcs.CalleeAttr).(ir.SymbolRefAttr)).Attr(FlashGradAttr) != nil {
				lower = lowerFlashGradCall
			}
			if err := lower(b, module, gmod, call, fmt.Sprintf("flash_%d", i)); err != nil {
				return err
			}
		}
	}
	for _, d := range decls {
		d.Erase()
	}
	return nil
}

// lowerFlashCall replaces call by the launch of a new kernel name in gmod.
func lowerFlashCall(b *ir.Builder, module, gmod, call *ir.Operation, name string) error {
	loc := call.Loc()
	f, spec, err := flashCallShape(module, call, FlashAttr)
	if err != nil {
		return err
	}
	if w, ok := spec.Get("wgmma").(ir.IntegerAttr); ok && w.Value != 0 {
		f.Tile = WGMMATile(f.D, f.Causal)
		gmod.SetAttr(gpu.PTXTargetAttr, ir.Str(gpu.WGMMATarget))
	}
	if l, ok := spec.Get("lse").(ir.IntegerAttr); ok && l.Value != 0 {
		f.LSE = true
	}
	gb := ir.NewBuilder(b.Ctx)
	gb.SetInsertionPointBefore(gmod.Region(0).Front().Last())
	kernel, err := f.Kernel(gb, loc, name)
	if err != nil {
		return ir.Errorf(loc, "%s: %v", PassName, err)
	}
	b.SetInsertionPointBefore(call)
	var outs []*ir.Value
	for _, r := range call.Results() {
		// (A dynamic size is q's: the output has q's shape, the
		// log-sum-exp its leading dims.)
		t := r.Type().(*ir.MemRefType)
		var sizes []*ir.Value
		for d, n := range t.Shape() {
			if n == ir.Dynamic {
				sizes = append(sizes, loop.Dim(b, loc, call.Operand(0), d))
			}
		}
		outs = append(outs, loop.Alloc(b, loc, t, sizes...))
	}
	ts := f.ArgTypes()
	args := flatViews(b, loc, append(slices.Clone(call.Operands()), outs...), ts)
	if _, err := f.Launch(b, loc, kernel, gpu.KernelRef(symName(gmod), name), args[0], args[1], args[2], args[3], args[4:]...); err != nil {
		return ir.Errorf(loc, "%s: %v", PassName, err)
	}
	for i, r := range call.Results() {
		r.ReplaceAllUsesWith(outs[i])
	}
	call.Erase()
	return nil
}

// lowerFlashGradCall replaces call (q, k, v, o, do, lse → dq, dk, dv) by
// the launches of the backward kernels, named name+"_dq" and
// name+"_dkv", in gmod, with D in a buffer of its own.
func lowerFlashGradCall(b *ir.Builder, module, gmod, call *ir.Operation, name string) error {
	loc := call.Loc()
	f, spec, err := flashCallShape(module, call, FlashGradAttr)
	if err != nil {
		return err
	}
	w, _ := spec.Get("wgmma").(ir.IntegerAttr)
	fg := DefaultFlashGrad(f, w.Value != 0)
	if fg.WGMMA {
		gmod.SetAttr(gpu.PTXTargetAttr, ir.Str(gpu.WGMMATarget))
	}
	gb := ir.NewBuilder(b.Ctx)
	gb.SetInsertionPointBefore(gmod.Region(0).Front().Last())
	dqK, dkvK, err := fg.Kernels(gb, loc, name)
	if err != nil {
		return ir.Errorf(loc, "%s: %v", PassName, err)
	}
	b.SetInsertionPointBefore(call)
	var outs []*ir.Value
	for _, r := range call.Results() {
		outs = append(outs, loop.Alloc(b, loc, r.Type().(*ir.MemRefType)))
	}
	dqT, dkvT := fg.DQArgTypes(), fg.DKVArgTypes()
	dd := loop.Alloc(b, loc, dqT[7].(*ir.MemRefType))
	ops := call.Operands() // q, k, v, o, do, lse
	dqArgs := flatViews(b, loc, []*ir.Value{ops[0], ops[1], ops[2], ops[3], ops[4], ops[5], outs[0], dd}, dqT)
	dkvArgs := flatViews(b, loc, []*ir.Value{ops[0], ops[1], ops[2], ops[4], ops[5], dd, outs[1], outs[2]}, dkvT)
	ref := func(k string) ir.SymbolRefAttr { return gpu.KernelRef(symName(gmod), k) }
	if err := fg.Launch(b, loc, dqK, dkvK, ref, dqArgs, dkvArgs); err != nil {
		return ir.Errorf(loc, "%s: %v", PassName, err)
	}
	for i, r := range call.Results() {
		r.ReplaceAllUsesWith(outs[i])
	}
	call.Erase()
	return nil
}

// flatViews returns 1-D views of vs as types ts (vs already of that type
// are kept).
func flatViews(b *ir.Builder, loc ir.Location, vs []*ir.Value, ts []ir.Type) []*ir.Value {
	out := make([]*ir.Value, len(vs))
	for i, v := range vs {
		if v.Type() == ts[i] {
			out[i] = v
			continue
		}
		out[i] = loop.View(b, loc, v, ts[i].(*ir.MemRefType))
	}
	return out
}

// flashCallShape reads the attention shape of a call (on buffers) of a
// declaration tagged attr: q, k and the first result give the sizes, the
// declaration's dictionary the scale and causality (it is returned).
func flashCallShape(module, call *ir.Operation, attr string) (Flash, ir.DictAttr, error) {
	loc := call.Loc()
	callee := ir.LookupSymbol(module, call.Attr(funcs.CalleeAttr).(ir.SymbolRefAttr))
	spec, _ := callee.Attr(attr).(ir.DictAttr)
	var shapes [2][]int64
	var elem ir.Type
	for i, v := range call.Operands()[:2] {
		t, ok := v.Type().(*ir.MemRefType)
		if !ok {
			return Flash{}, spec, ir.Errorf(loc, "%s: flash call operand %d is %s, want a static memref", PassName, i, v.Type())
		}
		elem, shapes[i] = t.ElementType(), t.Shape()
	}
	q, k := shapes[0], shapes[1]
	nb := len(q) - 2
	batch := int64(1)
	for _, d := range q[:nb] {
		batch *= d
	}
	// (graph-attention-to-flash outlined a dynamic length only as one
	// symbolic size of q and k.)
	f := Flash{Batch: batch, Lq: q[nb], Lk: k[nb], D: q[nb+1], Elem: elem, Dynamic: q[nb] == ir.Dynamic || k[nb] == ir.Dynamic}
	if slices.Contains(q[:nb], ir.Dynamic) || q[nb+1] == ir.Dynamic || f.Dynamic && q[nb] != k[nb] {
		return Flash{}, spec, ir.Errorf(loc, "%s: flash call on %s and %s: only the sequence length may be dynamic", PassName, call.Operand(0).Type(), call.Operand(1).Type())
	}
	if c, ok := spec.Get("causal").(ir.IntegerAttr); ok {
		f.Causal = c.Value != 0
	}
	if s, ok := spec.Get("scale").(ir.FloatAttr); ok {
		f.Scale = s.Value()
	}
	return f, spec, nil
}
