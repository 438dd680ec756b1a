package togpu

import (
	"slices"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// The wgmma backward kernels (FlashGrad.WGMMA, sm_90a only): emitDQ and
// emitDKV with a block of one warpgroup (64 rows, a warp 16, in the m16
// accumulator layout the mma.sync kernels have, so that the
// probabilities, the masks and the stores are shared) and every product a
// gpu.wgmma. The block's two row tiles and each stage's two streamed
// tiles are stored in the 128-byte swizzle in panels of 64 columns, as
// the forward's (swizzledChunks); per tile the kernel issues S and dP
// together (A = the row tiles by descriptor, one gpu.wgmma a panel, B =
// the streamed tiles K-major), waits for both, computes P and dS in
// registers and issues its one or two accumulating products together (A
// = P or dS packed from the accumulators, B = a streamed tile MN-major,
// N = the head dim), awaited before the tile ends: the next tile's copies
// into the other stage follow the next barrier, so no product may be in
// flight then.

// wgScorePair returns S = A·Bᵀ, complete, and dP = A'·B'ᵀ, in flight
// (its groups the newest), for the warpgroup's 64 rows and the tile's
// Keys columns: S as n8 tiles of 4 values, A and A' the row tiles at
// workgroup offsets aAt and bAt, B and B' the stage's two tiles from
// offset at. Every group is issued before the wait for S.
func (g *flashGen) wgScorePair(b *ir.Builder, x ix, aAt, bAt int64, at *ir.Value) (s [][]*ir.Value, dp []*ir.Value) {
	R, K := g.Tile.Rows, g.Tile.Keys
	panels := g.D / wgPanel
	issued := int64(0)
	product := func(rowAt int64, tileAt *ir.Value) []*ir.Value {
		var acc []*ir.Value
		for p := range panels {
			// (Every group stays in flight.)
			issued++
			sh := gpu.WGMMAShape{N: K, KSteps: wgPanel / 16, AShared: true, Acc: p > 0, Pending: issued}
			a := []*ir.Value{g.smem, x.index(x.c(rowAt + p*R*wgPanel))}
			acc = gpu.WGMMA(b, g.loc, g.Elem, sh, a, g.smem, x.index(x.addc(tileAt, p*K*wgPanel)), acc)
		}
		return acc
	}
	sv := product(aAt, at)
	dp = product(bAt, x.addc(at, K*g.D))
	return fragmentTiles(gpu.WGMMAWait(b, g.loc, panels, sv)), dp
}

// fragmentTiles splits an accumulator fragment into its n8 tiles of 4
// values (copies: the callers replace values in place).
func fragmentTiles(acc []*ir.Value) [][]*ir.Value {
	out := make([][]*ir.Value, len(acc)/4)
	for j := range out {
		out[j] = slices.Clone(acc[4*j : 4*j+4])
	}
	return out
}

// wgProduct issues acc += A·B and returns the accumulators, with pending
// groups left in flight: A the 64×Keys values a (n8 tiles of 4, rounded
// to the element type and packed here, n8 tiles 2j and 2j+1 the A
// fragment of k-step j), B the Keys×D tile at workgroup offset at, read
// MN-major.
func (g *flashGen) wgProduct(b *ir.Builder, x ix, a [][]*ir.Value, at *ir.Value, acc []*ir.Value, pending int64) []*ir.Value {
	K := g.Tile.Keys
	sh := gpu.WGMMAShape{N: g.D, KSteps: K / 16, TransB: true, Acc: true, Pending: pending}
	if g.D > wgPanel {
		sh.Panel = K * wgPanel
	}
	return gpu.WGMMA(b, g.loc, g.Elem, sh, g.packA(b, a), g.smem, x.index(at), acc)
}

// packA packs the 64×Keys values a (n8 tiles of 4) into wgProduct's A
// fragments, rounded to the element type: n8 tiles 2j and 2j+1 are
// k-step j's.
func (g *flashGen) packA(b *ir.Builder, a [][]*ir.Value) []*ir.Value {
	var frag []*ir.Value
	for j := range g.Tile.Keys / 16 {
		p, q := a[2*j], a[2*j+1]
		frag = append(frag, g.pair(b, p[0], p[1]), g.pair(b, p[2], p[3]), g.pair(b, q[0], q[1]), g.pair(b, q[2], q[3]))
	}
	return frag
}
