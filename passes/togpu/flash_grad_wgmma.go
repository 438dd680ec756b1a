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

// wgScorePair returns S = A·Bᵀ and dP = A'·B'ᵀ for the warpgroup's 64
// rows and the tile's Keys columns, as n8 tiles of 4 values: A and A' the
// row tiles at workgroup offsets aAt and bAt, B and B' the stage's two
// tiles from offset at. All of their gpu.wgmma groups are issued before
// the first wait.
func (g *flashGen) wgScorePair(b *ir.Builder, x ix, aAt, bAt int64, at *ir.Value) (s, dp [][]*ir.Value) {
	R, K := g.Tile.Rows, g.Tile.Keys
	panels := g.D / wgPanel
	total, issued := 2*panels, int64(0)
	product := func(rowAt int64, tileAt *ir.Value) []*ir.Value {
		var acc []*ir.Value
		for p := range panels {
			issued++
			// (Every group so far stays in flight but at the last.)
			sh := gpu.WGMMAShape{N: K, KSteps: wgPanel / 16, AShared: true, Acc: p > 0, Pending: issued}
			if issued == total {
				sh.Pending = 0
			}
			a := []*ir.Value{g.smem, x.index(x.c(rowAt + p*R*wgPanel))}
			acc = gpu.WGMMA(b, g.loc, g.Elem, sh, a, g.smem, x.index(x.addc(tileAt, p*K*wgPanel)), acc)
		}
		return acc
	}
	sv := product(aAt, at)
	dv := product(bAt, x.addc(at, K*g.D))
	sv = gpu.WGMMAWait(b, g.loc, 0, sv)
	return fragmentTiles(sv), fragmentTiles(dv)
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

// wgTerm is one accumulating product of wgAccumulate: acc += A·B, A the
// 64×Keys values a (n8 tiles of 4, rounded to the element type here), B
// the Keys×D tile at workgroup offset at, read MN-major.
type wgTerm struct {
	a   [][]*ir.Value
	at  *ir.Value
	acc []*ir.Value
}

// wgAccumulate issues the products of terms together and returns their
// accumulators, complete.
func (g *flashGen) wgAccumulate(b *ir.Builder, x ix, terms []wgTerm) [][]*ir.Value {
	K := g.Tile.Keys
	out := make([][]*ir.Value, len(terms))
	for i, t := range terms {
		sh := gpu.WGMMAShape{N: g.D, KSteps: K / 16, TransB: true, Acc: true, Pending: int64(i + 1)}
		if g.D > wgPanel {
			sh.Panel = K * wgPanel
		}
		if i == len(terms)-1 {
			sh.Pending = 0
		}
		// The A fragment of k-step j: n8 tiles 2j and 2j+1.
		var a []*ir.Value
		for j := range K / 16 {
			p, q := t.a[2*j], t.a[2*j+1]
			a = append(a, g.pair(b, p[0], p[1]), g.pair(b, p[2], p[3]), g.pair(b, q[0], q[1]), g.pair(b, q[2], q[3]))
		}
		out[i] = gpu.WGMMA(b, g.loc, g.Elem, sh, a, g.smem, x.index(t.at), t.acc)
	}
	for i := range out[:len(out)-1] {
		out[i] = gpu.WGMMAWait(b, g.loc, 0, out[i])
	}
	return out
}
