package togpu

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The wgmma GEMM kernel (MMATile.WGMMA; Hopper's sm_90a target only). The
// block, its tile in grouped order, the stages and the cp.async copies
// are the mma.sync kernel's (gemmBlock), with the stages stored in the
// 128-byte swizzle gpu.wgmma reads: A K-major (rows of 64 k, chunk c of
// row r at c xor r%8), B K-major the same way when it is stored [N, K],
// else MN-major in panels of 64 columns (operand.panel). Each warpgroup
// of 4 warps owns 64 rows of the block's tile and all its N columns: one
// gpu.wgmma a k tile (A and B from shared memory, N/2 f32 accumulators a
// thread). A k tile's product is issued asynchronously, the copies of
// the tile Stages−1 ahead are issued while the tensor cores run, and
// the product is awaited before the next tile's barrier, so the stage
// those copies overwrite (read by the tile before) is free. The epilogue
// is the mma.sync kernel's: a warp's accumulators are 16 rows in the
// m16n8 fragment layout, N/8 tiles wide.

// wgmmaTileM is the rows of the tile a warpgroup computes.
const wgmmaTileM = 64

// wgmmaFits reports whether the wgmma kernel takes a matmul nest: A must
// be stored with K last (gpu.wgmma reads a workgroup A K-major only).
func wgmmaFits(mm *matmulNest) bool { return mm.a.kLast }

// checkWGMMA is MMATile.check for WGMMA tiles: K 64 (one swizzle row),
// M a power of two of 1 to 4 warpgroups, N 64, 128, 192 (TMA only) or
// 256 (one gpu.wgmma, whole panels), at least two stages in a block's shared memory, and
// copies of either operand, in either layout, in whole passes of rows
// that are a multiple of 8 (the swizzle's period).
func (t MMATile) checkWGMMA() error {
	pow2 := func(n int64) bool { return n > 0 && n&(n-1) == 0 }
	switch {
	case t.K != gpu.WGMMASwizzleRow:
		return fmt.Errorf("mma tile %s: a wgmma tile's K must be %d", t, gpu.WGMMASwizzleRow)
	case !pow2(t.M) || t.M < wgmmaTileM || t.M > 4*wgmmaTileM:
		return fmt.Errorf("mma tile %s: a wgmma tile's M must be 64, 128 or 256 (1 to 4 warpgroups)", t)
	case t.N%gpu.WGMMASwizzleRow != 0 || t.N < gpu.WGMMASwizzleRow || t.N > 256:
		return fmt.Errorf("mma tile %s: a wgmma tile's N must be 64, 128, 192 or 256", t)
	case !pow2(t.N) && !t.TMA:
		// (The cp.async copies fill rows in whole passes of a power of
		// two; TMA copies whole panels.)
		return fmt.Errorf("mma tile %s: a wgmma tile whose N is not a power of two must copy with TMA", t)
	case t.Overlap && t.Stages < 3:
		return fmt.Errorf("mma tile %s: a product in flight across tiles needs at least 3 stages", t)
	case t.Stages < 2 || t.SharedBytes() > gpu.MaxSharedBytes:
		return fmt.Errorf("mma tile %s: needs at least 2 stages in %d bytes of shared memory, has %d", t, gpu.MaxSharedBytes, t.SharedBytes())
	}
	if t.Persistent < 0 || (t.Persistent > 0 && !t.Specialized) {
		return fmt.Errorf("mma tile %s: only a specialized tile may be persistent, on a positive number of blocks", t)
	}
	if t.TMA && !t.Specialized {
		return fmt.Errorf("mma tile %s: only a specialized tile copies with TMA", t)
	}
	if t.Staged && !t.Specialized {
		return fmt.Errorf("mma tile %s: only a specialized tile stages its epilogue", t)
	}
	if t.Cluster != 0 && (!t.TMA || t.Persistent%2 != 0 || t.Cluster != 2 || groupM%t.Cluster != 0 || (t.N/gpu.WGMMASwizzleRow)%t.Cluster != 0) {
		return fmt.Errorf("mma tile %s: clusters are of 2 blocks of a TMA tile (persistent on whole clusters), with whole panels of B each", t)
	}
	if t.Specialized && (t.Stages < 3 || t.Overlap) {
		return fmt.Errorf("mma tile %s: a specialized tile needs at least 3 stages and no Overlap (its products are always in flight)", t)
	}
	for _, outer := range []int64{t.M, t.N} {
		if t.TMA {
			break // (no cp.async copies)
		}
		for _, l := range [][2]int64{{t.K, outer}, {outer, t.K}} {
			chunks, rows := l[0]/8, l[1]
			if per := t.copyThreads() / chunks; per == 0 || (per%8 != 0 && 8%per != 0) || per > rows {
				return fmt.Errorf("mma tile %s: %d threads cannot copy %d rows of %d chunks in whole passes of 8k rows or 8/2^i rows",
					t, t.copyThreads(), rows, chunks)
			}
		}
	}
	return nil
}

// emitWGMMA builds the wgmma kernel's body (see above).
func (p *mma) emitWGMMA(k *kernelGen, b *ir.Builder) error {
	loc := k.loc
	g := p.setup(k, b)
	x := g.x
	tl := p.tile
	stages := tl.Stages
	// The warpgroup's 64 rows of A in a stage.
	aWG := x.mulc(x.shr(g.warp, 2), wgmmaTileM*tl.K)
	shape := gpu.WGMMAShape{N: tl.N, KSteps: tl.K / 16, TransB: !p.b.kLast, Panel: p.b.panel, Acc: true, Pending: 1, AShared: true}
	stageOf := func(x ix, kt *ir.Value) *ir.Value {
		if stages&(stages-1) == 0 {
			return x.and(kt, stages-1)
		}
		return x.rem(kt, x.c(stages))
	}
	if tl.Specialized {
		return p.emitWS(k, b, g, aWG, shape, stageOf)
	}
	if tl.Overlap {
		return p.emitWGMMAOverlap(k, b, g, aWG, shape, stageOf)
	}
	for s := range stages - 1 {
		g.load(b, arith.ConstantIndex(b, loc, s), constStage(s), loadBranch)
	}
	zf := arith.ConstantFloat(b, loc, 0, ir.F32)
	accs := make([]*ir.Value, tl.N/2)
	for i := range accs {
		accs[i] = zf
	}
	// kTiles runs k tiles from to to, issuing the copies of the tile
	// stages−1 ahead when copy (every such tile exists), else an empty
	// group, so that each iteration's wait counts the same groups.
	kTiles := func(from, to int64, accs []*ir.Value, copy bool) *ir.Operation {
		return loop.For(b, loc, arith.ConstantIndex(b, loc, from), arith.ConstantIndex(b, loc, to), arith.ConstantIndex(b, loc, 1), accs,
			func(b *ir.Builder, kt *ir.Value, accs []*ir.Value) []*ir.Value {
				x := x.at(b)
				gpu.CpAsyncWait(b, loc, stages-2)
				gpu.FenceProxyAsync(b, loc)
				gpu.Barrier(b, loc)
				s := stageOf(x, x.from(kt))
				aAt := x.index(x.add(x.mulc(s, tl.M*tl.K), aWG))
				bAt := x.index(x.mulc(s, tl.K*tl.N))
				d := gpu.WGMMA(b, loc, p.elem, shape, []*ir.Value{g.sa, aAt}, g.sb, bAt, accs)
				if copy {
					next := arith.Binary(b, arith.OpAddI, loc, kt, arith.ConstantIndex(b, loc, stages-1))
					g.load(b, next, func(x ix) *ir.Value { return stageOf(x, x.from(next)) }, loadExisting)
				} else {
					gpu.CpAsyncCommit(b, loc)
				}
				return gpu.WGMMAWait(b, loc, 0, d)
			})
	}
	steady := max(g.numK-(stages-1), 0)
	if steady > 0 {
		accs = kTiles(0, steady, accs, true).Results()
	}
	kl := kTiles(steady, g.numK, accs, false)
	gpu.CpAsyncWait(b, loc, 0)
	p.epilogue(k, x, kl.Results(), g, x.mulc(g.warp, 16), x.c(0), 1, tl.N/8)
	k.moduleTarget = gpu.WGMMATarget // the gpu.module's, set when placed
	return nil
}

// emitWGMMAOverlap is emitWGMMA's main loop with Overlap: the product of
// k tile kt is issued right after the tile's barrier and left in flight
// (its accumulators carried to the next iteration and chained into the
// next product, which the tensor cores run after it), so that they work
// through the barrier and the copies. gpu.wgmma with pending 1 waits for
// the product before, so when a thread reaches tile kt's barrier the
// product of tile kt−2 is complete in every thread: the copies of tile
// kt+stages−2 go to its stage, two tiles ahead of the product rather
// than stages−1.
func (p *mma) emitWGMMAOverlap(k *kernelGen, b *ir.Builder, g gemmBlock, aWG *ir.Value, shape gpu.WGMMAShape, stageOf func(ix, *ir.Value) *ir.Value) error {
	loc, x, tl := k.loc, g.x, p.tile
	ahead := tl.Stages - 2
	for s := range ahead {
		g.load(b, arith.ConstantIndex(b, loc, s), constStage(s), loadBranch)
	}
	zf := arith.ConstantFloat(b, loc, 0, ir.F32)
	accs := make([]*ir.Value, tl.N/2)
	for i := range accs {
		accs[i] = zf
	}
	// One loop over every k tile, without a branch: the copies of the
	// tiles past the last fill their stages with zeros (no product reads
	// them), since a second loop for the last tiles would copy the
	// accumulators in flight from one loop's registers to the other's.
	accs = loop.For(b, loc, arith.ConstantIndex(b, loc, 0), arith.ConstantIndex(b, loc, g.numK), arith.ConstantIndex(b, loc, 1), accs,
		func(b *ir.Builder, kt *ir.Value, accs []*ir.Value) []*ir.Value {
			x := x.at(b)
			gpu.CpAsyncWait(b, loc, ahead-1)
			gpu.FenceProxyAsync(b, loc)
			gpu.Barrier(b, loc)
			s := stageOf(x, x.from(kt))
			aAt := x.index(x.add(x.mulc(s, tl.M*tl.K), aWG))
			bAt := x.index(x.mulc(s, tl.K*tl.N))
			d := gpu.WGMMA(b, loc, p.elem, shape, []*ir.Value{g.sa, aAt}, g.sb, bAt, accs)
			next := arith.Binary(b, arith.OpAddI, loc, kt, arith.ConstantIndex(b, loc, ahead))
			g.load(b, next, func(x ix) *ir.Value { return stageOf(x, x.from(next)) }, loadZeros)
			return d
		}).Results()
	done := gpu.WGMMAWait(b, loc, 0, accs)
	gpu.CpAsyncWait(b, loc, 0)
	p.epilogue(k, x, done, g, x.mulc(g.warp, 16), x.c(0), 1, tl.N/8)
	k.moduleTarget = gpu.WGMMATarget // the gpu.module's, set when placed
	return nil
}
