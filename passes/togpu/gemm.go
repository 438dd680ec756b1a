package togpu

import (
	"fmt"
	"math"
	"strings"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// MappingMMA is the tensor-core mapping of matmul nests.
const MappingMMA = "mma"

// MMATile is a tensor-core tiling: a block of Warps warps computes an M × N
// output tile, stepping over K by K with Stages shared-memory stages
// filled by cp.async. Each warp owns a 64 × WarpN tile of 4 × WarpN/8
// m16n8 accumulators (64 or 128 f32 registers a thread), so the warps
// form an M/64 × N/WarpN grid. Blocks walk the output tiles in groups of
// groupM tile rows, column by column, so that the blocks resident at one
// time share A's and B's tiles in L2.
//
// With WGMMA the block's warpgroups (4 warps each) compute 64 × N rows of
// the tile each with gpu.wgmma instead (gemm_wgmma.go; sm_90a only) and
// WarpN is unused; with Overlap too, each k tile's product stays in
// flight until the next one's is issued. With Specialized (and WGMMA) a
// warpgroup after them only copies: the consumers and the
// producer hand the stages over through mbarriers (gemm_ws.go); with
// Persistent too, the grid has at most Persistent blocks, each looping
// over output tiles, so that the producer copies the next tile while the
// consumers store the last. With TMA too, one thread of the producer
// copies each operand's k tile with gpu.tma_load (gemm_tma.go); with
// Cluster too, the blocks run in clusters of Cluster blocks computing
// vertically adjacent tiles, each copying its share of their common B
// tile to all of them (TMA multicast); persistent, a cluster's blocks
// walk pairs of tiles (block b takes tiles b, b + grid, …: with an even
// grid, the pairs stay together). With Staged too, the consumers store
// the output tile through workgroup memory, 16 bytes of a row a lane
// (gemm_epilogue.go).
type MMATile struct {
	M, N, K     int64
	Stages      int64
	WarpN       int64 // the warp tile's N: 32 or 64
	WGMMA       bool
	Overlap     bool
	Specialized bool
	Persistent  int64
	TMA         bool
	Cluster     int64
	Staged      bool
}

// MMATiles are the tilings convert-loop-to-gpu's mma-tile option names,
// the default first, with ptxas's registers a thread (offline, sm_90;
// native backend / llc, none spilling) and mm_bias_gelu's time on the
// H200 (bench/NOTES.md, H1; measured before the epilogue paired its
// accesses). The 64 × 32 warp tile reads 3 KiB of ldmatrix per 8
// mma.sync, so shared-memory bandwidth caps it near 300 TFLOP/s; the
// 64 × 64 warp tiles halve that traffic but, at 8 warps an SM, lose more
// to latency. Stages beyond 48 KiB live in dynamic shared memory. A
// 64 × 128 tile with BK = 64 would take 131 registers, over the 128 of 4
// blocks an SM.
var MMATiles = []MMATile{
	{M: 128, N: 128, K: 64, Stages: 3, WarpN: 32}, // 8 warps, 96 KiB, 98 / 138 registers: 2 blocks an SM, 0.92 ms
	{M: 128, N: 128, K: 32, Stages: 3, WarpN: 32}, // 8 warps, 48 KiB static, 94 / 122: 2 blocks an SM, 1.04 ms
	{M: 128, N: 64, K: 64, Stages: 2, WarpN: 32},  // 4 warps, 48 KiB static, 118 / 130: 4 blocks an SM, 0.96 ms
	{M: 128, N: 128, K: 64, Stages: 3, WarpN: 64}, // 4 warps of 64 × 64, 96 KiB, 224 / 215: 2 blocks an SM, 1.18 ms
	{M: 128, N: 256, K: 64, Stages: 3, WarpN: 64}, // 8 warps of 64 × 64, 144 KiB, 224 / 216: 1 block an SM, 1.24 ms
	// Hopper's warpgroup MMA (gemm_wgmma.go, sm_90a): a thread holds N/2
	// f32. Registers for sm_90a (native / llc), the 8192³ product's rate and
	// mm_bias_gelu's time on the H200, two runs where there are two
	// (bench/NOTES.md, session 7). Dropped after measuring: 128x256x64s3g
	// (593 TFLOP/s, 0.54 ms), 128x128x64s4go and s3go (463 and 458
	// TFLOP/s: a k tile of 64 × 128 products is too short for copies two
	// or one tiles ahead to hide the loads); in session 8, 128x256x64s4gor
	// and 256x128x64s4gor (a second barrier after each product's issue, the
	// copies three tiles ahead instead of two: 652 and 576 TFLOP/s against
	// go's 658 and 639 in the same process, so the copies' lead is not what
	// bounds the loop), and 192x256x64s4go (3 warpgroups of 64 × 256, the
	// first two copying: 24% fewer bytes L2 → shared a flop, but 622 TFLOP/s
	// against 128x256x64s4go's 645 in the same process — about equal a wave
	// of blocks, so L2 bandwidth is not the bound either — and mm_bias_gelu
	// 0.573 ms).
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Overlap: true}, // 2 warpgroups, 192 KiB, 160 / 158: 1 block an SM, 653 TFLOP/s, 0.493 ms
	// 2 consumer warpgroups and a producer (gemm_ws.go), 192 KiB; and
	// persistent on the 132 SMs of an H100 or H200. 168 registers at
	// entry. Session 9, in the same process as s4go: with one
	// empty-barrier arrival a consumer thread 582 and 602 TFLOP/s (s4go
	// 648); with one a consumer warp 627 and 606 (s4go 643).
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true},
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, Persistent: 132},
	// The same, their producer one thread issuing TMA copies (gemm_tma.go).
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true},
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true, Persistent: 132},
	// In clusters of two blocks that share B's tile, each copying half
	// of it to both (TMA multicast): a third fewer bytes L2 → shared a
	// flop than wst (session 12).
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true, Cluster: 2},
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true, Cluster: 2, Persistent: 132},
	// The TMA tilings with the epilogue staged in workgroup memory
	// (gemm_epilogue.go): 16 KiB more, 208 KiB. Session 13, same process
	// as cuBLASLt's 793 TFLOP/s (once no call serialized the wgmma): 8192³
	// 785 and 793 TFLOP/s (wst 748, wstc2p132 755), mm_bias_gelu 0.395
	// and 0.388 ms.
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true, Staged: true},
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true, Staged: true, Persistent: 132},
	// Dropped after measuring (session 12, same process as wst's 714 and
	// cuBLASLt's 812): 128x192x64s5wst and …wstp132 (TMA, 5 stages,
	// 20.9 waves of 132 blocks at 8192³ instead of 15.5), 650 and 647
	// TFLOP/s, mm_bias_gelu 0.547 and 0.540 ms.
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true},                // 164 / 160: 627 / 629 TFLOP/s, 0.502 / 0.505 ms
	{M: 256, N: 128, K: 64, Stages: 4, WGMMA: true},                // 4 warpgroups of 64 × 128, 96 / 94: 608 / 631 TFLOP/s, 0.494 / 0.480 ms
	{M: 256, N: 128, K: 64, Stages: 4, WGMMA: true, Overlap: true}, // 96 / 92: 614 TFLOP/s, 0.490 ms
	{M: 128, N: 128, K: 64, Stages: 3, WGMMA: true},                // 96 KiB, 96 / 94: 2 blocks an SM, 548 / 534 TFLOP/s, 0.539 / 0.534 ms
}

// The warp tile's M, and the limits every MMATile keeps.
const (
	warpTileM    = 64
	fragsM       = warpTileM / 16 // m16 tiles per warp
	groupM       = 8
	mmaElemBytes = 2 // bf16
)

// fragsN is the number of n8 tiles of a warp.
func (t MMATile) fragsN() int64 { return t.WarpN / 8 }

// mmaTile is cfg's tiling, MMATiles[0] when unset.
func (c Config) mmaTile() MMATile {
	if c.MMATile == (MMATile{}) {
		return MMATiles[0]
	}
	return c.MMATile
}

// String is the tile's name in the mma-tile option: MxNxK, s and the
// stages, then g for WGMMA (go with Overlap, ws with Specialized, wst
// with TMA too, then e with Staged, c and the cluster's blocks with Cluster, then p and
// the grid with Persistent), or w and the warp tile's N when it is not 32.
func (t MMATile) String() string {
	s := fmt.Sprintf("%dx%dx%ds%d", t.M, t.N, t.K, t.Stages)
	if t.Specialized {
		s += "ws"
		if t.TMA {
			s += "t"
		}
		if t.Staged {
			s += "e"
		}
		if t.Cluster > 1 {
			s += fmt.Sprintf("c%d", t.Cluster)
		}
		if t.Persistent > 0 {
			s += fmt.Sprintf("p%d", t.Persistent)
		}
		return s
	}
	if t.Overlap {
		return s + "go"
	}
	if t.WGMMA {
		return s + "g"
	}
	if t.WarpN != 32 {
		s += fmt.Sprintf("w%d", t.WarpN)
	}
	return s
}

// Warps is the number of warps of a block.
func (t MMATile) Warps() int64 {
	if t.Specialized {
		return 4*t.M/wgmmaTileM + 4
	}
	if t.WGMMA {
		return 4 * t.M / wgmmaTileM
	}
	return (t.M / warpTileM) * (t.N / t.WarpN)
}

// threads is the number of threads of a block.
func (t MMATile) threads() int64 { return 32 * t.Warps() }

// copyThreads is the number of a block's threads that issue the copies:
// the producer warpgroup's with Specialized, else all.
func (t MMATile) copyThreads() int64 {
	if t.Specialized {
		return gpu.WarpgroupSize
	}
	return t.threads()
}

// SharedBytes is the shared memory of a block: every stage of both tiles
// and, with Specialized, the stages' mbarriers, with Staged the staging
// buffer (dynamic shared memory above gpu.MaxStaticSharedBytes).
func (t MMATile) SharedBytes() int64 {
	n := t.Stages * (t.M + t.N) * t.K * mmaElemBytes
	if t.Specialized {
		n += 8 * wsBarriers(t.Stages)
	}
	if t.Staged { // (after the barriers, aligned as every buffer)
		n = (n+gpu.SharedAlign-1)/gpu.SharedAlign*gpu.SharedAlign + t.stagedBytes()
	}
	return n
}

// ConvTile is the tiling a convolution's kernel takes for t: t, but the
// specialized tilings' copies are of matmul operands only, so a
// convolution takes the same tile with one role a thread (Overlap). A
// TMA tiling's matmul takes it too where TMA cannot read the operands
// (rows not 16-byte multiples apart: mma.tmaFits), 256 wide when its N
// is not a power of two.
func (t MMATile) ConvTile() MMATile {
	if t.Specialized {
		t.Specialized, t.Persistent, t.Overlap, t.TMA, t.Cluster, t.Staged = false, 0, true, false, 0, false
		if t.N&(t.N-1) != 0 {
			// (cp.async copies need a power of two: the 256-wide tile,
			// in the 4 stages that fit.)
			t.N, t.Stages = 256, 4
		}
	}
	return t
}

// ForConv is the tiling a convolution with o output channels (the
// implicit GEMM's M) takes for t: ConvTile, but a wgmma tile narrowed to
// one warpgroup of 64 rows and convNarrowN output positions when o ≤ 64.
// The 128-row tile would leave half of its rows or more masked, and the
// kernel's epilogue is unrolled over a thread's N/2 accumulators: at 256
// positions it is most of the kernel's PTX, which the driver's JIT
// compiles at the first call (0.6–0.7 s for each of a small CNN's two
// convolutions, bench/NOTES.md session 12).
func (t MMATile) ForConv(o int64) MMATile {
	t = t.ConvTile()
	if t.WGMMA && o <= wgmmaTileM && t.M > wgmmaTileM {
		t.M, t.N, t.Stages = wgmmaTileM, convNarrowN, 4
	}
	return t
}

// convNarrowN is the N of ForConv's narrow tile: 32 accumulators a thread.
const convNarrowN = 64

// ParseMMATile returns the tile of MMATiles named s.
func ParseMMATile(s string) (MMATile, error) {
	for _, t := range MMATiles {
		if t.String() == s {
			return t, nil
		}
	}
	return MMATile{}, fmt.Errorf("%s: mma-tile=%q is not one of %s", PassName, s, strings.Join(mmaTileNames(), ", "))
}

// mmaTileNames returns the names of MMATiles.
func mmaTileNames() []string {
	names := make([]string, len(MMATiles))
	for i, t := range MMATiles {
		names[i] = t.String()
	}
	return names
}

// check reports a tiling the kernel generator cannot build: the block
// tile must be whole warp tiles of 64 × 32 or 64 × 64 (at most 32 warps),
// K 32 or 64 (one 128-byte swizzle line holds two or one rows along K),
// at least two stages in the shared memory of a block, and a block must
// fill a stage of either operand, in either layout, in whole passes of
// whole rows (copies).
func (t MMATile) check() error {
	if t.WGMMA {
		return t.checkWGMMA()
	}
	if t.TMA || t.Specialized {
		return fmt.Errorf("mma tile %s: only a wgmma tile may be specialized or copy with TMA", t)
	}
	pow2 := func(n int64) bool { return n > 0 && n&(n-1) == 0 }
	switch {
	case t.WarpN != 32 && t.WarpN != 64:
		return fmt.Errorf("mma tile %s: the warp tile's N must be 32 or 64", t)
	case !pow2(t.M) || !pow2(t.N) || t.M < warpTileM || t.N < t.WarpN || t.Warps() > 32:
		return fmt.Errorf("mma tile %s: M and N must be powers of two, multiples of %d and %d, at most 32 warps", t, warpTileM, t.WarpN)
	case t.K != 32 && t.K != 64:
		return fmt.Errorf("mma tile %s: K must be 32 or 64", t)
	case t.Stages < 2 || t.SharedBytes() > gpu.MaxSharedBytes:
		return fmt.Errorf("mma tile %s: needs at least 2 stages in %d bytes of shared memory, has %d", t, gpu.MaxSharedBytes, t.SharedBytes())
	}
	for _, outer := range []int64{t.M, t.N} {
		// Rows of K (K last) or of the outer extent (K first), in
		// 16-byte chunks: a pass covers threads/chunks rows.
		for _, l := range [][2]int64{{t.K, outer}, {outer, t.K}} {
			chunks, rows := l[0]/8, l[1]
			if t.threads() < chunks || t.threads()/chunks > rows {
				return fmt.Errorf("mma tile %s: %d threads cannot copy %d rows of %d chunks in whole passes", t, t.threads(), rows, chunks)
			}
		}
	}
	return nil
}

// mma is the mapping of a matmul nest: convert-graph-to-loop's
//
//	loop.parallel (%b…, %i, %j) {
//	  %acc = loop.for %k = 0 to K step 1 iter(%a = 0.0 : f32) {
//	    A[%b…, %i, %k] (or A[%b…, %k, %i]), B[%b…, %k, %j] (or B[%b…, %j, %k])
//	    of bf16, extf, mulf, addf %a, %p
//	  }
//	  epilogue(%b…, %i, %j, %acc) and stores
//	}
//
// becomes a tiled tensor-core kernel; the epilogue runs once per
// accumulator element (each guarded against the output's bounds unless
// the sizes are multiples of the tile), so the bias, activation, residual
// and cast stay fused. Leading (batch) dimensions are flattened into the
// block index: block z·tiles + t computes tile t of matrix z. Either
// operand may be stored with K last or K first: the backward pass of a
// linear layer reads xᵀ·dy (A stored [K, M]) and dy·wᵀ (B stored [N, K]).
type mma struct {
	kloop *ir.Operation
	a, b  operand // A (outer dimension M) and B (outer dimension N) on the host
	elem  ir.Type
	k     int64
	tile  MMATile
	batch []int64 // static extents of the leading dimensions
	m, n  int64   // static M and N, or ir.Dynamic
	width ir.Type // of the kernel's offset arithmetic: i32 when every offset fits
	// conv is set for a convolution's implicit GEMM (convPlan): B is then
	// gathered from the input, and the N index q is the output position.
	conv *convGeom
}

// operand is one factor of the product as the kernel reads it: a matrix
// (of each batch) with an outer dimension (A's M, B's N) and K, stored
// [outer, K] (kLast) or [K, outer].
type operand struct {
	mem   *ir.Value
	shape []int64
	// kLast: rows run along K (A [M, K], B [N, K]) and are read by plain
	// ldmatrix; otherwise the rows run along the outer dimension (A
	// [K, M], B [K, N]) and ldmatrix transposes them.
	kLast bool
	// shared: one matrix for every batch (its shape's batch dims are 1).
	shared bool
	tile   int64 // the block tile's extent in the outer dimension
	tileK  int64 // and along K
	// vec is the number of elements each copy into shared memory moves:
	// 8 (one 16-byte cp.async a chunk) when the rows start on 16 bytes,
	// else the largest of 4 and 2 that divides the row stride (8- or
	// 4-byte cp.async), else 1 (plain loads and stores: cp.async has no
	// 2-byte form).
	vec int64
	// panel, when nonzero, stores a stage in gpu.wgmma's 128-byte swizzle
	// in panels of 64 columns this many elements apart (an MN-major B of
	// the wgmma kernel wider than 64: see operand.at).
	panel int64
}

// copyVector returns the elements per copy of rows ld elements apart.
func copyVector(ld int64) int64 {
	for _, v := range []int64{8, 4, 2} {
		if ld%v == 0 {
			return v
		}
	}
	return 1
}

// ld is the stride between the stored rows of one matrix.
func (o *operand) ld(nb int) int64 { return o.shape[nb+1] }

// mmaPlan recognizes a matmul nest that tensor cores can run: bf16 or
// f16 operands, f32 accumulation from 0, a static K, for an operand
// stored [K, outer] a static outer extent, unit steps from 0, and batch
// dimensions of static extent that index A and B in order. Anything else
// keeps the SIMT mapping. Sizes need not be multiples of anything: rows
// that do not start on 16 bytes are copied in smaller pieces (vec).
func mmaPlan(nest *ir.Operation, tile MMATile) *mma {
	mm := matchMatmul(nest)
	if mm == nil || (mm.elem != ir.BF16 && mm.elem != ir.F16) {
		return nil
	}
	if tile.WGMMA && !wgmmaFits(mm) {
		tile = MMATiles[0]
	}
	// The K loop is the nest's only inner region: the kernel has no place
	// for another loop.
	nested := 0
	nest.Walk(func(o *ir.Operation) bool {
		if o != nest && o.NumRegions() > 0 {
			nested++
		}
		return true
	})
	if nested != 1 {
		return nil
	}
	nb := mm.batch()
	if mm.extents[nb] == 0 || mm.extents[nb+1] == 0 {
		return nil // an empty product: nothing for the tensor cores
	}
	p := &mma{kloop: mm.kloop, elem: mm.elem, k: mm.k, tile: tile, batch: mm.extents[:nb], m: mm.extents[nb], n: mm.extents[nb+1],
		a: operand{mem: mm.a.mem, kLast: mm.a.kLast, tile: tile.M, tileK: tile.K},
		b: operand{mem: mm.b.mem, kLast: mm.b.kLast, tile: tile.N, tileK: tile.K}}
	for _, o := range []*operand{&p.a, &p.b} {
		mt, _ := o.mem.Type().(*ir.MemRefType)
		if mt == nil {
			return nil
		}
		o.shape = mt.Shape()
		kDim := nb
		if o.kLast {
			kDim = nb + 1
		}
		if o.shape[kDim] != p.k {
			return nil
		}
		ld := o.ld(nb)
		if ld == ir.Dynamic {
			return nil
		}
		o.vec = copyVector(ld)
		if tile.WGMMA && !o.kLast && o.tile > gpu.WGMMASwizzleRow {
			o.panel = o.tileK * gpu.WGMMASwizzleRow
		}
	}
	if nb > 0 {
		// Batched operands are addressed by static strides.
		for d, e := range p.batch {
			if p.a.shape[d] != e || p.b.shape[d] != e {
				return nil
			}
		}
		if !allStatic(p.a.shape) || !allStatic(p.b.shape) || p.m == ir.Dynamic || p.n == ir.Dynamic {
			return nil
		}
	}
	p.width = ir.Index
	if p.fitsI32() {
		p.width = ir.I32
	}
	if tile.Specialized && dividesByVariables(nest) {
		p.tile = tile.ConvTile()
	}
	if p.tile.TMA && !p.tmaFits(nest) {
		// The same tile with cp.async copies: one role a thread, faster
		// than the specialized kernel without TMA (bench/NOTES.md,
		// sessions 9 and 11).
		p.tile = tile.ConvTile()
	}
	if p.tile.N != tile.N {
		// A fallback of another width: plan the operands for it.
		return mmaPlan(nest, p.tile)
	}
	if p.tile.Cluster > 1 && (p.m == ir.Dynamic || p.tilesM()%p.tile.Cluster != 0) {
		// A cluster's blocks take vertically adjacent tiles of one
		// matrix (setupTile's grouped order pairs them when every group
		// of tile rows is whole clusters): otherwise, no clusters.
		p.tile.Cluster = 0
	}
	return p
}

// dividesByVariables reports whether the nest divides integers by a value
// that is not a constant (the epilogue's index arithmetic over a dynamic
// size, such as a reshape's). ptxas 12.4 compiles each such 64-bit
// division to a subroutine call and crashes (a segmentation fault) on a
// kernel with gpu.setmaxnreg and tens of them (GPT-2's dynamic prefill:
// 262 in one epilogue), so the specialized tilings leave such nests to
// the same tile's one-role kernel (MMATile.ConvTile).
func dividesByVariables(nest *ir.Operation) bool {
	found := false
	nest.Walk(func(op *ir.Operation) bool {
		switch op.Name() {
		case arith.OpDivUI, arith.OpDivSI, arith.OpRemUI, arith.OpRemSI, arith.OpCeilDivUI, arith.OpCeilDivSI, arith.OpFloorDivSI:
			if _, ok := staticInt(op.Operand(1)); !ok {
				found = true
			}
		}
		return !found
	})
	return found
}

// allStatic reports whether a shape has no dynamic dimension.
func allStatic(shape []int64) bool {
	for _, n := range shape {
		if n == ir.Dynamic {
			return false
		}
	}
	return true
}

// fitsI32 reports whether every offset and block index the kernel
// computes, including those of the tiles' overhang past the matrices'
// edges, is below 2³¹, so that 32-bit arithmetic is exact.
func (p *mma) fitsI32() bool {
	if !allStatic(p.a.shape) || !allStatic(p.b.shape) || p.m == ir.Dynamic || p.n == ir.Dynamic {
		return false
	}
	elems := func(shape []int64) float64 {
		n := 1.0
		for _, d := range shape {
			n *= float64(d)
		}
		return n
	}
	// A tile's overhang is at most a tile of rows (or of k rows) past the
	// matrix's end, plus a tile's width.
	t := p.tile
	over := float64(2*(t.M+t.N)) * float64(p.k+p.m+p.n+t.K)
	blocks := elems(p.batch) * float64(p.tilesM()*p.tilesN())
	lim := float64(math.MaxInt32)
	return elems(p.a.shape)+over < lim && elems(p.b.shape)+over < lim && blocks < lim
}

func (p *mma) tilesM() int64 { return (p.m + p.tile.M - 1) / p.tile.M }
func (p *mma) tilesN() int64 { return (p.n + p.tile.N - 1) / p.tile.N }

// isZeroF32 reports whether v is the constant +0.0 : f32.
func isZeroF32(v *ir.Value) bool {
	if !isConstant(v) || v.Type() != ir.F32 {
		return false
	}
	a, ok := v.DefiningOp().Attr("value").(ir.FloatAttr)
	return ok && a.Bits == 0
}
