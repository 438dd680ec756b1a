package togpu

import (
	"errors"
	"fmt"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
)

// The backward flash-attention kernels (graph.attention_grad): two
// kernels that never hold a score matrix in memory, in the manner of
// FlashAttention-2's backward pass, on mma.sync with f32 accumulators.
// Both recompute the probabilities of a tile from the scores and the
// rows' log₂-sum-exp that the forward kernel saved (Flash.LSE):
// P = ex2(s·c − lse), s the f32 score and c = Scale·log₂e, so no softmax
// statistics are recomputed.
//
// The dQ kernel is the forward kernel's shape: a block of 4 warps takes 64
// query rows (16 a warp) and walks the key tiles (K and V double-buffered
// by cp.async). Per tile it computes S = Q·Kᵀ and dP = dO·Vᵀ (Q's and
// dO's fragments held in registers, or loaded every tile with Reload),
// dS = P·(dP − D)·scale in f32, D =
// Σ dO·O of the row, and accumulates dQ += dS·K with dS rounded to the
// element type in the registers that held S (the accumulator layout of
// two n8 tiles is the A layout of one k16 step, as in the forward's P·V).
// It first computes D for its rows from O and dO, while its first tiles
// are copied, and writes it out for the other kernel.
//
// The dK/dV kernel runs the same loop transposed: a block takes 64 keys
// (16 a warp) and walks the query tiles (Q and dO double-buffered). Per
// tile, with the keys as rows, Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ, Pᵀ and dSᵀ as
// above with each column's lse and D, and dV += Pᵀ·dO, dK += dSᵀ·Q. A
// causal block skips the query tiles before its first key.
//
// With FlashGrad.WGMMA (sm_90a, head dims 64 and 128; flash_grad_wgmma.go)
// a block is one warpgroup and every product is a gpu.wgmma: the block's
// two row tiles (Q and dO, or K and V) are the A operands of S and dP,
// read by descriptor, the streamed tiles (K and V, or Q and dO) are
// stored once in the 128-byte swizzle and serve as B both K-major (S =
// Q·Kᵀ, dP = dO·Vᵀ) and MN-major (dQ += dS·K, dV += Pᵀ·dO, dK += dSᵀ·Q),
// and P and dS are the A operands from registers, packed from the
// accumulators as in the forward's P·V.
//
// The kernels round as graph.attention_grad does (the products' operands
// in the element type, the scores in f32, P and dS rounded once), but sum
// in another order and take P from the saved lse rather than from a
// normalised softmax.

// FlashGrad is the shape of one attention's backward kernels: Flash's
// fields (its Tile and LSE are ignored).
type FlashGrad struct {
	Flash
	// QueryTile is the query tile of the dK/dV kernel, 16, 32 or 64; 0
	// picks the default (queryTile).
	QueryTile int64
	// Reload has the dQ kernel load its Q and dO fragments from workgroup
	// memory by ldmatrix in every key tile instead of holding them in
	// registers through the loop (D/2 registers a thread fewer; mma.sync
	// only).
	Reload bool
	// WGMMA computes every product of both kernels with gpu.wgmma
	// (Hopper's sm_90a target only; head dims 64 and 128, query tiles 32
	// and 64): see flash_grad_wgmma.go.
	WGMMA bool
	// Staged has both kernels store their results (dQ; dK and dV)
	// through workgroup memory, a warp's 16 rows 64 columns at a time, so
	// that a warp's stores cover whole 128-byte row segments (storeRows);
	// head dims that are multiples of 64 only (others store directly).
	Staged bool
	// SharedStats (WGMMA, query count a multiple of the query tile) has the dK/dV kernel stage each query tile's lse and D
	// in workgroup memory, loaded a tile ahead (one value a thread), rather
	// than each thread loading its columns' from global memory in the tile.
	SharedStats bool
}

// queryTile is the dK/dV kernel's query tile: QueryTile, else 32.
// Measured on the H200 at b16 h16 s1024 causal (bench/NOTES.md, session
// 7; backward ms for query tiles 16 / 32 / 64): d64 0.651 / 0.618 / 0.639
// (0.628 / 0.599 / 0.620 with Reload), d128 1.222 / 1.149 / 1.160 (1.298
// / 1.224 / 1.238 with Reload). At d64 the dK/dV kernel takes 126 / 168 /
// 236 registers (4 / 3 / 2 blocks an SM); at d128 about 248 at any tile
// (the dK and dV accumulators alone are 128).
func (f FlashGrad) queryTile() int64 {
	if f.QueryTile != 0 {
		return f.QueryTile
	}
	return 32
}

// DefaultFlashGrad is the backward kernels graph-attention-to-flash takes
// for f: 32-query tiles, and Reload up to head dim 64 (the dQ kernel's
// registers then fit 4 blocks an SM; at d128 it stays at 2 and the
// reloads only cost); with wgmma (an sm_90a device) at head dims 64 and
// 128 the wgmma kernels, over 32-query tiles at d64 and 64-query tiles
// at d128, their results stored through workgroup memory (Staged) and,
// where the query count is a multiple of the query tile, the lse and D
// staged in workgroup memory (SharedStats). Measured on the H200 at b16
// h16 s1024 causal (TestGPUFlashGrad, forward with its log-sum-exp plus
// backward, ms; session 17's call 2): d128 0.859 → Staged 0.679 →
// Staged+SharedStats 0.662 (SharedStats alone 0.839; 32-query tiles
// 0.717), d64 0.499 → 0.415 → 0.409 (SharedStats alone 0.488); session
// 9: d64 wgmma 0.599 against mma.sync's 0.740, d128 1.027 against 1.392.
// Dropped after measurement: the dK/dV kernel also computing dQ, added
// to an f32 accumulator by atomics or by the tensor memory accelerator's
// bulk reductions, with blocks of one or two warpgroups (session 17: d128
// 0.800 against 0.662); a dQ kernel over 32-key tiles (session 9:
// d64 0.626, d128 1.037); each tile's last product issued with the next
// tile's S and dP (d128 −0.7%, d64 +2%), the dQ kernel's causal row
// blocks heaviest first (±0%: session 17's call 2).
func DefaultFlashGrad(f Flash, wgmma bool) FlashGrad {
	if w := (FlashGrad{Flash: f, WGMMA: true, QueryTile: 32, Staged: true}); wgmma && w.Check() == nil {
		if f.D > wgPanel {
			w.QueryTile = 64
		}
		w.SharedStats = f.Lq%w.QueryTile == 0
		return w
	}
	return FlashGrad{Flash: f, Reload: f.D <= 64}
}

const (
	flashGradRows = 64 // default rows of a block: query rows (dQ) or keys (dK/dV), 16 a warp
	flashGradKeys = 64 // key tile of the dQ kernel
)

// dqFlash is the dQ kernel's view of f: blocks of flashGradRows rows
// over 64-key tiles.
func (f FlashGrad) dqFlash() Flash {
	g := f.Flash
	g.Tile, g.LSE = FlashTile{Rows: flashGradRows, Keys: flashGradKeys, WGMMA: f.WGMMA}, false
	return g
}

// dkvFlash is the dK/dV kernel's view of f, queries and keys swapped: its
// rows (Lq) are the keys and its key tiles (Lk) the query tiles.
func (f FlashGrad) dkvFlash() Flash {
	g := f.Flash
	g.Lq, g.Lk, g.LSE = f.Lk, f.Lq, false
	g.Tile = FlashTile{Rows: flashGradRows, Keys: f.queryTile(), WGMMA: f.WGMMA}
	return g
}

// Check reports why the kernels cannot compute f, or nil.
func (f FlashGrad) Check() error {
	if f.Dynamic {
		return errors.New("flash attention backward: a dynamic length (the backward kernels take static ones)")
	}
	plain := f.dqFlash()
	// (The views' wgmma tiles are no FlashTiles.)
	plain.Tile.WGMMA = false
	if err := plain.Check(); err != nil {
		return fmt.Errorf("flash attention backward: %w", err)
	}
	if qt := f.QueryTile; qt != 0 && qt != 16 && qt != 32 && qt != 64 {
		return fmt.Errorf("flash attention backward: query tile %d, want 16, 32 or 64", qt)
	}
	if f.WGMMA {
		if f.D != wgPanel && f.D != 2*wgPanel {
			return fmt.Errorf("flash attention backward: wgmma kernels take head dims %d and %d only, not %d", wgPanel, 2*wgPanel, f.D)
		}
		if f.Reload {
			return fmt.Errorf("flash attention backward: Reload is for the mma.sync kernels (wgmma reads Q and dO by descriptor)")
		}
		if qt := f.queryTile(); qt < 32 {
			return fmt.Errorf("flash attention backward: wgmma kernels take query tiles 32 and 64, not %d", qt)
		}
	}
	if f.SharedStats && (!f.WGMMA || f.Lq%f.queryTile() != 0) {
		return errors.New("flash attention backward: SharedStats takes the wgmma kernels, the query count a multiple of the query tile")
	}
	return nil
}

// gradShared is the workgroup elements of a backward kernel of view f:
// two stages of two Keys-row tiles, then two tiles of Rows rows (Q and
// dO, or K and V); rows of D + flashPad, or with wgmma of D in the
// 128-byte swizzle.
func gradShared(f Flash) int64 {
	ld := f.D + flashPad
	if f.Tile.WGMMA {
		ld = f.D
	}
	return 4*f.Tile.Keys*ld + 2*f.Tile.Rows*ld
}

// f32Buf is the type of an f32 buffer of n elements.
func f32Buf(n int64) ir.Type { return ir.MemRefOf([]int64{n}, ir.F32) }

// DQArgTypes are the dQ kernel's arguments: q, k, v, o, do, lse (f32),
// dq and D (f32, written), row-major 1-D views.
func (f FlashGrad) DQArgTypes() []ir.Type {
	q, kv, rows := f.memref(f.Batch*f.Lq*f.D), f.memref(f.Batch*f.Lk*f.D), f32Buf(f.Batch*f.Lq)
	return []ir.Type{q, kv, kv, q, q, rows, q, rows}
}

// DKVArgTypes are the dK/dV kernel's arguments: q, k, v, do, lse and D
// (f32), dk and dv (written), row-major 1-D views.
func (f FlashGrad) DKVArgTypes() []ir.Type {
	q, kv, rows := f.memref(f.Batch*f.Lq*f.D), f.memref(f.Batch*f.Lk*f.D), f32Buf(f.Batch*f.Lq)
	return []ir.Type{q, kv, kv, q, rows, rows, kv, kv}
}

// Kernels inserts the backward kernels at b's insertion point (inside a
// gpu.module), in the order Launch launches them: the dQ kernel (named
// name+"_dq") and the dK/dV kernel (name+"_dkv").
func (f FlashGrad) Kernels(b *ir.Builder, loc ir.Location, name string) ([]*ir.Operation, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	var stage int64
	if f.SharedStats {
		stage = 4 * f.queryTile() // (two stages of a tile's lse and D)
	}
	dkv := f.gradKernel(b, loc, name+"_dkv", f.dkvFlash(), f.DKVArgTypes(), stage, func(g *flashGen, args []*ir.Value) { g.emitDKV(args, f) })
	dq := f.gradKernel(b, loc, name+"_dq", f.dqFlash(), f.DQArgTypes(), 0, func(g *flashGen, args []*ir.Value) {
		g.emitDQ(args, f.Reload, f.Staged)
	})
	return []*ir.Operation{dq, dkv}, nil
}

// gradKernel builds one backward kernel of view v with emit, which gets
// the kernel's arguments, then with stage > 0 a second workgroup buffer,
// of stage f32 (SharedStats's stages).
func (f FlashGrad) gradKernel(b *ir.Builder, loc ir.Location, name string, v Flash, args []ir.Type, stage int64, emit func(*flashGen, []*ir.Value)) *ir.Operation {
	kernel, entry := gpu.NewKernel(b, loc, name, args)
	kernel.SetAttr(LaunchAttr, ir.Dict(
		ir.NamedAttr{Name: "block", Value: ir.Int(v.Threads(), ir.I64)},
		ir.NamedAttr{Name: "vector", Value: ir.Int(1, ir.I64)},
		ir.NamedAttr{Name: "rows_per_block", Value: ir.Int(v.Tile.Rows, ir.I64)},
		ir.NamedAttr{Name: "mapping", Value: ir.Str(MappingFlash)},
	))
	kb := ir.NewBuilder(b.Ctx)
	kb.SetInsertionPointToEnd(entry)
	width := ir.Type(ir.I32)
	if f.Batch*max(f.Lq, f.Lk)*f.D+(v.Tile.Rows+v.Tile.Keys)*f.D >= 1<<31 {
		width = ir.Index
	}
	g := &flashGen{Flash: v, b: kb, loc: loc, x: ix{kb, loc, width}, ld: f.D + flashPad}
	g.smem = gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(gradShared(v), f.Elem))
	as := slices.Clone(entry.Arguments()[:len(args)])
	if stage > 0 {
		as = append(as, gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(stage, ir.F32)))
	}
	emit(g, as)
	gpu.Return(kb, loc)
	return kernel
}

// Launch inserts the launches of kernels (Kernels's) at b: the dQ kernel
// (args of DQArgTypes) and then the dK/dV kernel (args of DKVArgTypes,
// which reads the D the first writes). ref names a kernel of the
// gpu.module.
func (f FlashGrad) Launch(b *ir.Builder, loc ir.Location, kernels []*ir.Operation, ref func(name string) ir.SymbolRefAttr, dqArgs, dkvArgs []*ir.Value) error {
	if len(dqArgs) != len(f.DQArgTypes()) || len(dkvArgs) != len(f.DKVArgTypes()) {
		return fmt.Errorf("flash attention backward: %d and %d launch arguments for %d and %d kernel parameters",
			len(dqArgs), len(dkvArgs), len(f.DQArgTypes()), len(f.DKVArgTypes()))
	}
	type launch struct {
		grid, block int64
		args        []*ir.Value
	}
	dkv := launch{f.dkvFlash().Grid(), f.dkvFlash().Threads(), dkvArgs}
	ls := []launch{{f.dqFlash().Grid(), f.dqFlash().Threads(), dqArgs}, dkv}
	if len(kernels) != len(ls) {
		return fmt.Errorf("flash attention backward: %d kernels, want %d", len(kernels), len(ls))
	}
	for i, l := range ls {
		shared, err := gpu.DynamicSharedSize(b, loc, kernels[i])
		if err != nil {
			return fmt.Errorf("flash attention backward: %w", err)
		}
		one := arith.ConstantIndex(b, loc, 1)
		grid := [3]*ir.Value{arith.ConstantIndex(b, loc, l.grid), one, one}
		block := [3]*ir.Value{arith.ConstantIndex(b, loc, l.block), one, one}
		gpu.LaunchFunc(b, loc, ref(symName(kernels[i])), grid, block, l.args, shared)
	}
	return nil
}

// gradStart stages the block's two row tiles (from buffers a and b, at
// workgroup offsets after the stages), issues the copies of the first key
// tile the block visits (first of the block's start; into its stage),
// runs early (if not nil) while they are in flight and waits for all of
// them; it returns the block's start and the row tiles' workgroup
// offsets. The wgmma kernels' tiles are in the 128-byte swizzle, fenced
// for the tensor cores.
func (g *flashGen) gradStart(a, b2 *ir.Value, first func(flashStart) *ir.Value, early func(flashStart)) (flashStart, int64, int64) {
	b, loc, x := g.b, g.loc, g.x
	R, K := g.Tile.Rows, g.Tile.Keys
	st := g.begin()
	row0 := x.add(x.add(st.rowBase, x.mulc(st.warp, 16)), st.gr)
	g.rows = [][2]*ir.Value{{row0, x.addc(row0, 8)}}
	chunks, ld := g.chunks, g.ld
	if g.Tile.WGMMA {
		chunks, ld = g.swizzledChunks, g.D
	}
	g.kvChunks = chunks(K)
	aAt, bAt := 4*K*ld, 4*K*ld+R*ld
	var valid *ir.Value
	if g.Lq%R != 0 {
		valid = x.c(g.Lq)
	}
	base := x.add(x.mulc(st.z, g.Lq*g.D), x.mulc(st.rowBase, g.D))
	rc := chunks(R)
	g.copyTile(b, rc, a, base, x.c(aAt), st.rowBase, valid)
	g.copyTile(b, rc, b2, base, x.c(bAt), st.rowBase, valid)
	ft := first(st)
	load := func(b *ir.Builder) []*ir.Value { g.loadStage(b, ft, ld); return nil }
	if g.Causal {
		// (A causal block may visit no tile: its rows start past the
		// other side's end.)
		loop.If(b, loc, x.lt(ft, g.tiles), nil, load, nil)
	} else {
		load(b)
	}
	gpu.CpAsyncCommit(b, loc)
	if early != nil {
		early(st)
	}
	gpu.CpAsyncWait(b, loc, 0)
	if g.Tile.WGMMA {
		gpu.FenceProxyAsync(b, loc)
	}
	gpu.Barrier(b, loc)
	return st, aAt, bAt
}

// gradTiles is keyTiles for the backward kernels: stages of rows of
// D + flashPad, or with wgmma of D in the 128-byte swizzle (fenced).
func (g *flashGen) gradTiles(from, to *ir.Value, it []*ir.Value, body func(b *ir.Builder, x ix, kt, at *ir.Value, it []*ir.Value) []*ir.Value) []*ir.Value {
	if g.Tile.WGMMA {
		return g.keyTiles(from, to, it, true, g.wgLoad, g.wgStage(1), body)
	}
	return g.keyTiles(from, to, it, false, g.load, g.stage(1), body)
}

// gradOffsets are a lane's ldmatrix offsets within a tile: the A pattern
// (rows of the warp's m16 tile; add warp·16·ld), the B pattern of a tile
// stored n-major (as K for S = Q·Kᵀ), and of one stored k-major, read
// transposed (as V for P·V).
func (g *flashGen) gradOffsets(st flashStart) (a, nMajor, kMajor *ir.Value) {
	x := g.x
	lo, hi, r8 := st.lo, st.hi, st.r8
	a = x.add(x.mulc(x.add(x.add(x.mulc(st.warp, 16), x.mulc(lo, 8)), r8), g.ld), x.mulc(hi, 8))
	nMajor = x.add(x.mulc(x.add(x.mulc(hi, 8), r8), g.ld), x.mulc(lo, 8))
	kMajor = x.add(x.mulc(x.add(x.mulc(lo, 8), r8), g.ld), x.mulc(hi, 8))
	return a, nMajor, kMajor
}

// fragment returns the loader of the warp's m16k16 A fragments of a tile
// at workgroup offset at (the A pattern added): k16 step ks's, by one
// ldmatrix.x4 when called (scoresWith's a).
func (g *flashGen) fragment(at *ir.Value) func(b *ir.Builder, mi int, ks int64) []*ir.Value {
	return func(b *ir.Builder, _ int, ks int64) []*ir.Value {
		return gpu.LdMatrix(b, g.loc, g.smem, indexAdd(b, g.loc, g.x.at(b).index(at), ks*16), 4, false)
	}
}

// held loads every A fragment of a with b now, to be held in registers.
func (g *flashGen) held(b *ir.Builder, a func(b *ir.Builder, mi int, ks int64) []*ir.Value) func(b *ir.Builder, mi int, ks int64) []*ir.Value {
	f := make([][]*ir.Value, g.D/16)
	for ks := range f {
		f[ks] = a(b, 0, int64(ks))
	}
	return func(_ *ir.Builder, _ int, ks int64) []*ir.Value { return f[ks] }
}

// rowValues loads buffer buf (f32, Batch·n entries) at the block's batch
// and index i of each of is (clamped to n−1: the rows and columns past the
// end are masked or never stored).
func (g *flashGen) rowValues(b *ir.Builder, buf *ir.Value, n int64, is []*ir.Value) []*ir.Value {
	x := g.x.at(b)
	base := x.mulc(g.batchOf(b), n)
	out := make([]*ir.Value, len(is))
	for j, i := range is {
		i = x.op(arith.OpMinUI, i, x.c(n-1))
		out[j] = loop.Load(b, g.loc, buf, x.index(x.add(base, i)))
	}
	return out
}

// colPairs loads buffer buf (f32, Batch·Lk entries: the transposed
// view's query rows) at the block's batch and the thread's columns of a
// query tile from first, first + 8j + t2 + c for n8 tile j and c < 2, as
// rowValues does but without its clamp (the caller's tiles end at Lk),
// each pair by adjacent loads, which the backends make one access.
func (g *flashGen) colPairs(b *ir.Builder, x ix, buf, first *ir.Value) []*ir.Value {
	base := x.add(x.add(x.mulc(g.batchOf(b), g.Lk), first), g.t2)
	out := make([]*ir.Value, 0, g.Tile.Keys/4)
	for j := range g.Tile.Keys / 8 {
		at := x.index(x.addc(base, 8*j))
		out = append(out, loop.Load(b, g.loc, buf, at), loop.Load(b, g.loc, buf, indexAdd(b, g.loc, at, 1)))
	}
	return out
}

// gradProbs replaces the tile's scores s (n8 tiles j, values r) by the
// probabilities ex2(s·c − lse); lse gives each value's row or column
// statistic by (j, r).
func (g *flashGen) gradProbs(b *ir.Builder, s [][]*ir.Value, lse func(j, r int) *ir.Value, c *ir.Value) {
	loc := g.loc
	for j := range s {
		for r := range 4 {
			nl := fop(b, loc, arith.OpSubF, g.f32At(b, 0), lse(j, r))
			s[j][r] = approxExp2(b, loc, mathOp(b, loc, mathd.OpFMA, s[j][r], c, nl))
		}
	}
}

// gradDS returns dS = P·(dP − D)·scale of the probabilities p and the
// dP values dp; dd gives each value's row or column D by (j, r).
func (g *flashGen) gradDS(b *ir.Builder, p, dp [][]*ir.Value, dd func(j, r int) *ir.Value, scale *ir.Value) [][]*ir.Value {
	loc := g.loc
	ds := make([][]*ir.Value, len(p))
	for j := range p {
		ds[j] = make([]*ir.Value, 4)
		for r := range 4 {
			d := fop(b, loc, arith.OpSubF, dp[j][r], dd(j, r))
			ds[j][r] = fop(b, loc, arith.OpMulF, fop(b, loc, arith.OpMulF, p[j][r], d), scale)
		}
	}
	return ds
}

// f32At is the f32 constant v at b.
func (g *flashGen) f32At(b *ir.Builder, v float64) *ir.Value {
	return arith.ConstantFloat(b, g.loc, v, ir.F32)
}

// storeRows writes accumulators acc (n8 tiles of D, 4 values each, as
// the product leaves them) rounded to the element type into out, rows
// g.rows[0] of the block's batch (those below g.Lq); with staged
// (FlashGrad.Staged) through workgroup memory as the forward stores O
// (stageRows), so that a warp's store covers whole 128-byte row segments
// (session 17's ncu: the dQ kernel's 64 stores of 4 bytes a thread were
// 16% of its stall samples, the dK/dV kernel's 128 26%). The slices sit
// at the start of workgroup memory: the caller synchronizes the block
// first (syncStores), as the last tile's products may still read it.
func (g *flashGen) storeRows(acc []*ir.Value, out *ir.Value, staged bool) {
	if !staged || g.D%64 != 0 {
		g.storeRowsDirect(acc, out)
		return
	}
	g.stageRows(nil, g.rows[0][0], out, func(i, _ int64) *ir.Value { return acc[i] })
}

// storeRowsDirect is storeRows for head dims that are not a multiple of
// 64: each lane stores its pairs of columns itself.
func (g *flashGen) storeRowsDirect(acc []*ir.Value, out *ir.Value) {
	b, loc, x := g.b, g.loc, g.x
	for h := range 2 {
		row := g.rows[0][h]
		emit := func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			rowOff := x.add(x.mulc(g.batchOf(b), g.Lq*g.D), x.mulc(row, g.D))
			for j := range g.D / 8 {
				for c := range int64(2) {
					v := arith.NewCast(b, arith.OpTruncF, loc, acc[4*j+2*int64(h)+c], g.Elem)
					loop.Store(b, loc, v, out, x.index(x.add(rowOff, x.addc(g.t2, 8*j+c))))
				}
			}
			return nil
		}
		if g.Lq%g.Tile.Rows == 0 {
			emit(b)
		} else {
			loop.If(b, loc, x.lt(row, x.c(g.Lq)), nil, emit, nil)
		}
	}
}

// syncStores readies workgroup memory for storeRows after a kernel's
// loops: its copies landed and every warp's products done.
func (g *flashGen) syncStores() {
	gpu.CpAsyncWait(g.b, g.loc, 0)
	gpu.Barrier(g.b, g.loc)
}

// zeros returns n f32 zeros.
func (g *flashGen) zeros(n int64) []*ir.Value {
	out := make([]*ir.Value, n)
	for i := range out {
		out[i] = g.f32(0)
	}
	return out
}

// emitDQ builds the dQ kernel on args (DQArgTypes), with reload its Q and
// dO fragments loaded in every key tile (FlashGrad.Reload), with staged
// dQ stored through workgroup memory (FlashGrad.Staged).
func (g *flashGen) emitDQ(args []*ir.Value, reload, staged bool) {
	b, loc, x := g.b, g.loc, g.x
	q, o, do, lseBuf, dqBuf, ddBuf := args[0], args[3], args[4], args[5], args[6], args[7]
	g.q, g.k, g.v = q, args[1], args[2]
	K := g.Tile.Keys
	var full *ir.Value
	// D of the lane's two rows, computed while the first tiles are
	// copied: dO·O over the row's D/4 columns of the lane (adjacent loads,
	// one vector access each run), summed over the quad; the quad's first
	// lane writes it out for the dK/dV kernel. Then the rows' lse.
	var dd [2]*ir.Value
	var lse []*ir.Value
	early := func(st flashStart) {
		rows := g.rows[0]
		span := g.D / 4
		for h := range 2 {
			row := x.op(arith.OpMinUI, rows[h], x.c(g.Lq-1))
			off := x.add(x.mulc(st.z, g.Lq*g.D), x.add(x.mulc(row, g.D), x.mulc(x.shr(g.t2, 1), span)))
			offI := x.index(off)
			// (Each buffer's loads adjacent: targets/llvm's vector runs.)
			ov, dv := make([]*ir.Value, span), make([]*ir.Value, span)
			for c := range span {
				ov[c] = loop.Load(b, loc, o, indexAdd(b, loc, offI, c))
			}
			for c := range span {
				dv[c] = loop.Load(b, loc, do, indexAdd(b, loc, offI, c))
			}
			terms := make([]*ir.Value, span)
			for c := range terms {
				terms[c] = fop(b, loc, arith.OpMulF, arith.NewCast(b, arith.OpExtF, loc, ov[c], ir.F32), arith.NewCast(b, arith.OpExtF, loc, dv[c], ir.F32))
			}
			dd[h] = g.quadReduce(b, arith.OpAddF, tree(b, loc, arith.OpAddF, terms))
			cond := x.both(arith.NewCmpI(b, loc, arith.CmpIEQ, g.t2, x.c(0)), x.lt(rows[h], x.c(g.Lq)))
			loop.If(b, loc, cond, nil, func(b *ir.Builder) []*ir.Value {
				x := x.at(b)
				loop.Store(b, loc, dd[h], ddBuf, x.index(x.add(x.mulc(st.z, g.Lq), rows[h])))
				return nil
			}, nil)
		}
		lse = g.rowValues(b, lseBuf, g.Lq, rows[:])
	}
	st, qAt, doAt := g.gradStart(q, do, func(st flashStart) *ir.Value {
		full = g.keyTileBounds(st.rowBase)
		return g.x.c(0)
	}, early)
	wg := g.Tile.WGMMA
	var nMajor, kMajor *ir.Value
	var qf, dof func(b *ir.Builder, mi int, ks int64) []*ir.Value
	if !wg {
		var aOff *ir.Value
		aOff, nMajor, kMajor = g.gradOffsets(st)
		qf, dof = g.fragment(x.addc(aOff, qAt)), g.fragment(x.addc(aOff, doAt))
		if !reload {
			qf, dof = g.held(b, qf), g.held(b, dof)
		}
	}
	sm := g.softmax()
	scale := g.f32(g.Scale)
	rows := g.rows[0]

	nO := g.D / 8
	tileLoop := func(from, to *ir.Value, it []*ir.Value, masked bool) []*ir.Value {
		return g.gradTiles(from, to, it, func(b *ir.Builder, x ix, kt, at *ir.Value, it []*ir.Value) []*ir.Value {
			var s, dp [][]*ir.Value
			var dpIn []*ir.Value
			if wg {
				s, dpIn = g.wgScorePair(b, x, qAt, doAt, at)
			} else {
				s = g.scoresWith(b, 1, qf, x.add(at, nMajor))[0]
				dp = g.scoresWith(b, 1, dof, x.addc(x.add(at, nMajor), K*g.ld))[0]
			}
			if masked {
				g.mask(b, s, x.mulc(kt, K), sm, rows)
			}
			g.gradProbs(b, s, func(_, r int) *ir.Value { return lse[r/2] }, sm.c)
			if wg {
				dp = fragmentTiles(gpu.WGMMAWait(b, loc, 0, dpIn))
			}
			ds := g.gradDS(b, s, dp, func(_, r int) *ir.Value { return dd[r/2] }, scale)
			if wg {
				return g.wgProduct(b, x, ds, at, it, 0)
			}
			acc := append([]*ir.Value(nil), it...)
			g.product(b, [][][]*ir.Value{ds}, [][]*ir.Value{acc}, [][]*ir.Value{nil}, x.add(at, kMajor), nil, sm)
			return acc
		})
	}
	it := tileLoop(x.c(0), full, g.zeros(4*nO), false)
	if g.Causal || g.Lk%K != 0 {
		it = tileLoop(full, g.tiles, it, true)
	}
	if staged {
		g.syncStores()
	}
	g.storeRows(it, dqBuf, staged)
}

// emitDKV builds the dK/dV kernel of f on args (DKVArgTypes, then with
// SharedStats the stats' stages) with g's view transposed (dkvFlash):
// rows are keys, key tiles are query tiles.
func (g *flashGen) emitDKV(args []*ir.Value, f FlashGrad) {
	x := g.x
	q, k, v, do, lseBuf, ddBuf, dkBuf, dvBuf := args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7]
	g.k, g.v = q, do // the streamed tiles: Q then dO in each stage
	Qt := g.Tile.Keys
	// The query tiles: a causal block starts at the tile of its first key
	// (the tiles before it are masked whole) and masks the tiles up to its
	// last key's; the query tail's tile is masked too. The loops run
	// [from, full) masked, [full, last) unmasked, [last, tiles) masked.
	g.tiles = x.c(ceilDivInt(g.Lk, Qt))
	from, full := x.c(0), x.c(0)
	var stats *stagedStats
	var early func(flashStart)
	if f.SharedStats {
		stats = &stagedStats{g: g, lse: lseBuf, dd: ddBuf, smem: args[len(args)-1]}
		early = func(flashStart) { stats.store(g.b, x, from, stats.load(g.b, x, from)) }
	}
	st, kAt, vAt := g.gradStart(k, v, func(st flashStart) *ir.Value {
		if g.Causal {
			from = x.op(arith.OpMinUI, x.div(st.rowBase, x.c(Qt)), g.tiles)
			full = x.op(arith.OpMinUI, x.div(x.addc(st.rowBase, g.Tile.Rows+Qt-2), x.c(Qt)), g.tiles)
		}
		return from
	}, early)
	last := g.tiles
	if g.Lk%Qt != 0 {
		last = x.op(arith.OpMaxUI, x.c(g.Lk/Qt), full)
	}
	wg := g.Tile.WGMMA
	var aOff, nMajor, kMajor *ir.Value
	if !wg {
		aOff, nMajor, kMajor = g.gradOffsets(st)
	}
	sm := g.softmax()
	scale := g.f32(g.Scale)
	rows := g.rows[0]
	nO := g.D / 8
	tileLoop := func(lo, hi *ir.Value, it []*ir.Value, masked bool) []*ir.Value {
		return g.gradTiles(lo, hi, it, func(b *ir.Builder, x ix, qt, at *ir.Value, it []*ir.Value) []*ir.Value {
			// The columns' statistics, loaded before the products (whose
			// latency then covers the loads').
			first := x.mulc(qt, Qt)
			var lse, dd []*ir.Value
			var nextStats *ir.Value // (SharedStats: the next tile's value)
			switch {
			case stats != nil:
				nextStats = stats.load(b, x, x.addc(qt, 1))
				lse, dd = stats.pairs(b, x, qt)
			case g.Lk%Qt == 0:
				// (No column past the end: pairs of adjacent loads.)
				lse, dd = g.colPairs(b, x, lseBuf, first), g.colPairs(b, x, ddBuf, first)
			default:
				cols := make([]*ir.Value, 0, Qt/4)
				for j := range Qt / 8 {
					for c := range int64(2) {
						cols = append(cols, x.add(first, x.addc(g.t2, 8*j+c)))
					}
				}
				lse, dd = g.rowValues(b, lseBuf, g.Lk, cols), g.rowValues(b, ddBuf, g.Lk, cols)
			}
			var s, dp [][]*ir.Value
			var dpIn []*ir.Value
			if wg {
				s, dpIn = g.wgScorePair(b, x, kAt, vAt, at)
			} else {
				s = g.scoresWith(b, 1, g.fragment(x.addc(aOff, kAt)), x.add(at, nMajor))[0]
				dp = g.scoresWith(b, 1, g.fragment(x.addc(aOff, vAt)), x.addc(x.add(at, nMajor), Qt*g.ld))[0]
			}
			if masked {
				g.maskT(b, s, first, sm, rows)
			}
			g.gradProbs(b, s, func(j, r int) *ir.Value { return lse[2*j+r%2] }, sm.c)
			var dvIn []*ir.Value
			if wg {
				// dV += Pᵀ·dO (dO is the stage's second tile) runs while
				// dS is computed: dP completes, dV stays in flight.
				dvIn = g.wgProduct(b, x, s, x.addc(at, Qt*g.D), it[4*nO:8*nO], 1)
				dp = fragmentTiles(gpu.WGMMAWait(b, g.loc, 1, dpIn))
			}
			ds := g.gradDS(b, s, dp, func(j, r int) *ir.Value { return dd[2*j+r%2] }, scale)
			if stats != nil {
				// (Its stage's readers were the tile before's.)
				stats.store(b, x, x.addc(qt, 1), nextStats)
			}
			if wg {
				dk := g.wgProduct(b, x, ds, at, it[:4*nO], 0)
				return append(dk, gpu.WGMMAWait(b, g.loc, 0, dvIn)...)
			}
			dk, dv := append([]*ir.Value(nil), it[:4*nO]...), append([]*ir.Value(nil), it[4*nO:]...)
			g.product(b, [][][]*ir.Value{s}, [][]*ir.Value{dv}, [][]*ir.Value{nil}, x.addc(x.add(at, kMajor), Qt*g.ld), nil, sm)
			g.product(b, [][][]*ir.Value{ds}, [][]*ir.Value{dk}, [][]*ir.Value{nil}, x.add(at, kMajor), nil, sm)
			return append(dk, dv...)
		})
	}
	it := g.zeros(8 * nO)
	if g.Causal {
		it = tileLoop(from, full, it, true)
	}
	it = tileLoop(full, last, it, false)
	if g.Lk%Qt != 0 {
		it = tileLoop(last, g.tiles, it, true)
	}
	if f.Staged {
		g.syncStores()
	}
	g.storeRows(it[:4*nO], dkBuf, f.Staged)
	g.storeRows(it[4*nO:], dvBuf, f.Staged)
}

// maskT replaces the masked scores of the transposed kernel's tile (rows
// are keys, columns queries from first) by sm.masked: queries past the
// end (g.Lk in the transposed view) and, when causal, queries before the
// row's key. Value r of n8 tile j is row rows[r/2], column first + 8j +
// t2 + r%2.
func (g *flashGen) maskT(b *ir.Builder, s [][]*ir.Value, first *ir.Value, sm softmax, rows [2]*ir.Value) {
	x := g.x.at(b)
	base := x.add(first, g.t2)
	for j := range s {
		for r := range 4 {
			col := x.addc(base, int64(8*j+r%2))
			var masked *ir.Value
			if g.Lk%g.Tile.Keys != 0 {
				masked = arith.NewCmpI(b, g.loc, arith.CmpIUGE, col, x.c(g.Lk))
			}
			if g.Causal {
				before := arith.NewCmpI(b, g.loc, arith.CmpIULT, col, rows[r/2])
				if masked == nil {
					masked = before
				} else {
					masked = arith.Binary(b, arith.OpOrI, g.loc, masked, before)
				}
			}
			if masked != nil {
				s[j][r] = arith.NewSelect(b, g.loc, masked, sm.masked, s[j][r])
			}
		}
	}
}

// stagedStats is the dK/dV kernel's query tiles' lse and D in workgroup
// memory (FlashGrad.SharedStats): two stages of 2·Qt f32, the tile's lse
// then its D, in smem. Thread t loads value t mod 2·Qt of a tile (one
// global load from each buffer, selected: no branch) and stores it into
// the tile's stage; a tile's stage is written during the tile before,
// so the tile's top barrier publishes it.
type stagedStats struct {
	g       *flashGen
	lse, dd *ir.Value // f32 global buffers (Batch·Lk)
	smem    *ir.Value // f32 workgroup buffer, 4·Qt
}

// load returns this thread's value of query tile qt (clamped to the
// last tile: the loop loads the next tile's in the last tile too).
func (s *stagedStats) load(b *ir.Builder, x ix, qt *ir.Value) *ir.Value {
	g, loc := s.g, s.g.loc
	Qt := g.Tile.Keys
	x = x.at(b)
	i := x.and(g.tid, 2*Qt-1)
	qt = x.op(arith.OpMinUI, qt, x.sub(g.tiles, x.c(1)))
	at := x.index(x.add(x.add(x.mulc(g.batchOf(b), g.Lk), x.mulc(qt, Qt)), x.and(i, Qt-1)))
	isD := arith.NewCmpI(b, loc, arith.CmpIUGE, i, x.c(Qt))
	return arith.NewSelect(b, loc, isD, loop.Load(b, loc, s.dd, at), loop.Load(b, loc, s.lse, at))
}

// store stores v (load's) into query tile qt's stage.
func (s *stagedStats) store(b *ir.Builder, x ix, qt, v *ir.Value) {
	g := s.g
	Qt := g.Tile.Keys
	x = x.at(b)
	at := x.add(x.mulc(x.and(qt, 1), 2*Qt), x.and(g.tid, 2*Qt-1))
	loop.Store(b, g.loc, v, s.smem, x.index(at))
}

// pairs returns the lse and D of the thread's columns of query tile qt,
// as colPairs orders them, from the tile's stage (adjacent pairs: one
// 8-byte access each).
func (s *stagedStats) pairs(b *ir.Builder, x ix, qt *ir.Value) (lse, dd []*ir.Value) {
	g, loc := s.g, s.g.loc
	Qt := g.Tile.Keys
	x = x.at(b)
	base := x.add(x.mulc(x.and(qt, 1), 2*Qt), g.t2)
	for j := range Qt / 8 {
		at := x.index(x.addc(base, 8*j))
		lse = append(lse, loop.Load(b, loc, s.smem, at), loop.Load(b, loc, s.smem, indexAdd(b, loc, at, 1)))
	}
	for j := range Qt / 8 {
		at := x.index(x.addc(base, Qt+8*j))
		dd = append(dd, loop.Load(b, loc, s.smem, at), loop.Load(b, loc, s.smem, indexAdd(b, loc, at, 1)))
	}
	return lse, dd
}
