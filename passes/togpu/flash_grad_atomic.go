package togpu

import (
	"math/bits"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The backward pass with dQ accumulated atomically (FlashGrad.AtomicDQ,
// FlashAttention-2's single pass over the keys): the dK/dV kernel, which
// already has dS for its keys and a query tile, also computes that tile's
// share of dQ, dS·K, and adds it to an f32 accumulator of dq's shape by
// gpu.atomic_add (pairs of adjacent values: red.global.v2.f32.add).
// Every score and dP is then computed once (5 products
// instead of the two-kernel scheme's 7) at the price of the atomic
// traffic (a query tile's 64×D f32 a block of keys). The wgmma kernel
// stores dS (rounded, as its dK product takes it) in workgroup memory as
// the A operand of dQ = dS·K (queries × keys, K-major in the 128-byte
// swizzle: the accumulators hold dSᵀ with a warp's rows the keys), B the
// block's K tile read MN-major. Two small kernels go around it: the first
// computes D = Σ dO·O of every query row and clears the accumulator, the
// last rounds the accumulator into dq. Each thread of those takes 8
// consecutive elements of a row (16-byte accesses), the D/8 threads of a
// row in consecutive lanes.

// gradVec is the elements a thread of the D and dq kernels takes.
const gradVec = 8

// gradElemThreads is the block size of the D and dq kernels.
const gradElemThreads = 256

// elemGrid is the block count of the D and dq kernels: a thread per
// gradVec elements of the Batch·Lq rows of D.
func (f FlashGrad) elemGrid() int64 {
	return ceilDivInt(f.Batch*f.Lq*f.D/gradVec, gradElemThreads)
}

// elemKernel builds one of the elementwise kernels around the atomic dK/dV
// kernel on the arguments of DQArgTypes: emit gets the thread's first
// element (a multiple of gradVec, below Batch·Lq·D: the threads past the
// end take the last one) and ok, false for those threads (nil when there
// are none), which must store nothing.
func (f FlashGrad) elemKernel(b *ir.Builder, loc ir.Location, name string, emit func(b *ir.Builder, x ix, at, ok *ir.Value, args []*ir.Value)) *ir.Operation {
	kernel, entry := gpu.NewKernel(b, loc, name, f.DQArgTypes())
	kernel.SetAttr(LaunchAttr, ir.Dict(
		ir.NamedAttr{Name: "block", Value: ir.Int(gradElemThreads, ir.I64)},
		ir.NamedAttr{Name: "vector", Value: ir.Int(gradVec, ir.I64)},
		ir.NamedAttr{Name: "mapping", Value: ir.Str(MappingFlash)},
	))
	kb := ir.NewBuilder(b.Ctx)
	kb.SetInsertionPointToEnd(entry)
	n := f.Batch * f.Lq * f.D
	width := ir.Type(ir.I32)
	if n >= 1<<31 {
		width = ir.Index
	}
	x := ix{kb, loc, width}
	tid := x.add(x.mulc(x.from(gpu.BlockID(kb, loc, "x")), gradElemThreads), x.from(gpu.ThreadID(kb, loc, "x")))
	at := x.mulc(tid, gradVec)
	var ok *ir.Value
	if n%(gradElemThreads*gradVec) != 0 {
		ok = x.lt(at, x.c(n))
		// (A multiple of gradVec still: n is, D being.)
		at = x.op(arith.OpMinUI, at, x.c(n-gradVec))
	}
	emit(kb, x, at, ok, entry.Arguments())
	gpu.Return(kb, loc)
	return kernel
}

// guarded runs emit at b, under loop.if ok unless ok is nil.
func guarded(b *ir.Builder, loc ir.Location, ok *ir.Value, emit func(b *ir.Builder)) {
	if ok == nil {
		emit(b)
		return
	}
	loop.If(b, loc, ok, nil, func(b *ir.Builder) []*ir.Value { emit(b); return nil }, nil)
}

// elemLoads loads buf[at … at+gradVec) (adjacent loads: one vector access).
func elemLoads(b *ir.Builder, loc ir.Location, x ix, buf, at *ir.Value) []*ir.Value {
	i := x.index(at)
	out := make([]*ir.Value, gradVec)
	for c := range out {
		out[c] = loop.Load(b, loc, buf, indexAdd(b, loc, i, int64(c)))
	}
	return out
}

// elemStores stores vs at buf[at …] (adjacent stores: one vector access).
func elemStores(b *ir.Builder, loc ir.Location, x ix, buf, at *ir.Value, vs []*ir.Value) {
	i := x.index(at)
	for c, v := range vs {
		loop.Store(b, loc, v, buf, indexAdd(b, loc, i, int64(c)))
	}
}

// gradDKernel builds the kernel computing D and clearing the accumulator.
func (f FlashGrad) gradDKernel(b *ir.Builder, loc ir.Location, name string) *ir.Operation {
	return f.elemKernel(b, loc, name, func(b *ir.Builder, x ix, at, ok *ir.Value, args []*ir.Value) {
		o, do, ddBuf, acc := args[3], args[4], args[7], args[8]
		ov, dv := elemLoads(b, loc, x, o, at), elemLoads(b, loc, x, do, at)
		terms := make([]*ir.Value, gradVec)
		for c := range terms {
			oc := arith.NewCast(b, arith.OpExtF, loc, ov[c], ir.F32)
			dc := arith.NewCast(b, arith.OpExtF, loc, dv[c], ir.F32)
			terms[c] = fop(b, loc, arith.OpMulF, oc, dc)
		}
		s := tree(b, loc, arith.OpAddF, terms)
		// The row's D/8 threads are consecutive lanes (D/8 divides 32).
		width := arith.ConstantInt(b, loc, 32, ir.I32)
		for off := int64(1); off < f.D/gradVec; off *= 2 {
			o, _ := gpu.Shuffle(b, loc, "xor", s, arith.ConstantInt(b, loc, off, ir.I32), width)
			s = fop(b, loc, arith.OpAddF, s, o)
		}
		zero := arith.ConstantFloat(b, loc, 0, ir.F32)
		zs := make([]*ir.Value, gradVec)
		for c := range zs {
			zs[c] = zero
		}
		guarded(b, loc, ok, func(b *ir.Builder) {
			x := x.at(b)
			elemStores(b, loc, x, acc, at, zs)
			first := arith.NewCmpI(b, loc, arith.CmpIEQ, x.and(at, f.D-1), x.c(0))
			loop.If(b, loc, first, nil, func(b *ir.Builder) []*ir.Value {
				x := x.at(b)
				loop.Store(b, loc, s, ddBuf, x.index(x.shr(at, int64(bits.TrailingZeros64(uint64(f.D))))))
				return nil
			}, nil)
		})
	})
}

// gradDQKernel builds the kernel rounding the accumulator into dq.
func (f FlashGrad) gradDQKernel(b *ir.Builder, loc ir.Location, name string) *ir.Operation {
	return f.elemKernel(b, loc, name, func(b *ir.Builder, x ix, at, ok *ir.Value, args []*ir.Value) {
		dq, acc := args[6], args[8]
		guarded(b, loc, ok, func(b *ir.Builder) {
			x := x.at(b)
			vs := elemLoads(b, loc, x, acc, at)
			for c := range vs {
				vs[c] = arith.NewCast(b, arith.OpTruncF, loc, vs[c], f.Elem)
			}
			elemStores(b, loc, x, dq, at, vs)
		})
	})
}

// dsAt is the workgroup offset of the atomic dK/dV kernel's dS tile
// (after the stages and the K and V tiles; a multiple of 512 elements).
func (g *flashGen) dsAt() int64 {
	return 4*g.Tile.Keys*g.D + 2*g.Tile.Rows*g.D
}

// dsStores returns, for each of a thread's 4 values r of an n8 tile of
// dSᵀ (rows the keys, columns the queries), the workgroup offset of its
// element in the dS tile for n8 tile 0 (n8 tile j adds 512·j): dS(m, k)
// (m the query, k the key of the block) at dsAt + 4096·(k/64) + 64·m +
// 8·((k%64/8) xor (m%8)) + k%8 (a panel of 64 keys a warpgroup), with m
// = 8j + t2 + r%2 and k = 16·warp + gr + 8·(r/2) (wg the warpgroup of
// gradWarpgroup, nil for one).
func (g *flashGen) dsStores(st flashStart, wg *ir.Value) [4]*ir.Value {
	x := g.x
	warp, at := st.warp, x.c(g.dsAt())
	if wg != nil {
		// (The warpgroup's keys' panel: at 64·64·w, as its rows.)
		warp, at = x.and(st.warp, 3), x.add(at, wgRows(x, wg))
	}
	var out [4]*ir.Value
	for r := range int64(4) {
		m := x.addc(g.t2, r%2) // (m%8 = t2 + r%2)
		k8 := x.addc(x.mulc(warp, 2), r/2)
		out[r] = x.add(x.add(x.add(x.mulc(m, 64), x.mulc(x.xor(k8, m), 8)), st.gr), at)
	}
	return out
}

// wgDQ computes the query tile's share of dQ, dS·K: it stores ds (dSᵀ as
// n8 tiles of 4 values, rows the block's keys, columns the tile's
// queries) rounded to the element type at the offsets of dsStores, makes
// them visible to the tensor cores and the block, and computes dS·K with
// A the dS tile and B the block's K tile (workgroup offset kAt,
// MN-major) — which also completes every earlier product in flight.
// inFlight are accumulators still in flight (the caller's dK and dV),
// returned complete, then the warpgroup's dQ values (accumulator layout):
// with one warpgroup the 64×D of the tile, with two (128 keys, head dim
// 128: dQCols) warpgroup wg's 64 columns 64·wg… of dS·K over all 128
// keys, one gpu.wgmma a panel of 64 keys of dS and K.
func (g *flashGen) wgDQ(b *ir.Builder, x ix, wg *ir.Value, ds [][]*ir.Value, offs [4]*ir.Value, kAt int64, inFlight []*ir.Value) (done, dq []*ir.Value) {
	loc := g.loc
	for r, off := range offs {
		base := x.index(off)
		for j := range ds {
			v := arith.NewCast(b, arith.OpTruncF, loc, ds[j][r], g.Elem)
			loop.Store(b, loc, v, g.smem, indexAdd(b, loc, base, int64(512*j)))
		}
	}
	gpu.FenceProxyAsync(b, loc)
	gpu.Barrier(b, loc)
	R := g.Tile.Rows
	if wg != nil {
		// K's column panel w is at kAt + w·R·64; the keys' panel p of dS
		// at dsAt + 64·64·p, of K 64·64·p elements (64 rows) further.
		col := x.addc(x.mulc(wg, R*wgPanel), kAt)
		for p := range R / wgPanel {
			sh := gpu.WGMMAShape{N: g.dqCols(), KSteps: wgPanel / 16, AShared: true, TransB: true, Acc: p > 0, Pending: 2}
			if p == R/wgPanel-1 {
				sh.Pending = 0
			}
			a := []*ir.Value{g.smem, x.index(x.c(g.dsAt() + p*wgPanel*wgPanel))}
			dq = gpu.WGMMA(b, loc, g.Elem, sh, a, g.smem, x.index(x.addc(col, p*wgPanel*wgPanel)), dq)
		}
		return gpu.WGMMAWait(b, loc, 0, inFlight), dq
	}
	sh := gpu.WGMMAShape{N: g.D, KSteps: R / 16, AShared: true, TransB: true}
	if g.D > wgPanel {
		sh.Panel = R * wgPanel
	}
	dq = gpu.WGMMA(b, loc, g.Elem, sh, []*ir.Value{g.smem, x.index(x.c(g.dsAt()))}, g.smem, x.index(x.c(kAt)), nil)
	return gpu.WGMMAWait(b, loc, 0, inFlight), dq
}

// dqCols is the dQ columns a warpgroup of the atomic dK/dV kernel
// computes: the head dim, or with two warpgroups half of it each.
func (g *flashGen) dqCols() int64 {
	return g.D * 64 / g.Tile.Rows
}

// addDQ adds a query tile's dQ values (wgDQ's) to the accumulator acc:
// value i is query row first + 16·(warp%4) + gr + 8·((i%4)/2), column
// c + 8·(i/4) + t2 + i%2 (c the warpgroup's first column: dqCols·wg, wg
// nil for one warpgroup), and rows past the query count g.Lk (the
// transposed view's) are skipped.
func (g *flashGen) addDQ(b *ir.Builder, x ix, st flashStart, wg *ir.Value, dq []*ir.Value, first, acc *ir.Value) {
	loc := g.loc
	warp, col := st.warp, g.t2
	if wg != nil {
		warp, col = x.and(st.warp, 3), x.add(col, x.mulc(wg, g.dqCols()))
	}
	for h := range int64(2) {
		q := x.add(first, x.addc(x.add(x.mulc(warp, 16), st.gr), 8*h))
		add := func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			base := x.index(x.add(x.mulc(x.add(x.mulc(st.z, g.Lk), q), g.D), col))
			for j := range int64(len(dq) / 4) {
				// (The pair of adjacent columns in one red.global.v2.)
				gpu.AtomicAdd(b, loc, acc, indexAdd(b, loc, base, 8*j), dq[4*j+2*h], dq[4*j+2*h+1])
			}
			return nil
		}
		if g.Lk%g.Tile.Keys == 0 {
			add(b)
		} else {
			loop.If(b, loc, x.lt(q, x.c(g.Lk)), nil, add, nil)
		}
	}
}

// bulkRows is the rows of the bulk dQ's staging tile: a query tile's.
const bulkRows = flashGradRows

// bulkLD is the row length in f32 of the bulk dQ's staging tile: D and 8
// of padding, so that a row starts 8 banks on from the one before and a
// warp's stores of two values in each of 8 rows take two wavefronts.
func (f FlashGrad) bulkLD() int64 { return f.D + 8 }

// stageDQ stores a query tile's dQ values (wgDQ's, laid out as addDQ
// says) into the staging tile stage (BulkDQ): value i at row 16·(warp%4)
// + gr + 8·((i%4)/2), column c + 8·(i/4) + t2 + i%2, two adjacent values
// a store.
func (g *flashGen) stageDQ(b *ir.Builder, x ix, st flashStart, wg *ir.Value, dq []*ir.Value, stage *ir.Value) {
	loc, ld := g.loc, g.D+8
	warp, col := st.warp, g.t2
	if wg != nil {
		warp, col = x.and(st.warp, 3), x.add(col, x.mulc(wg, g.dqCols()))
	}
	for h := range int64(2) {
		row := x.addc(x.add(x.mulc(warp, 16), st.gr), 8*h)
		base := x.index(x.add(x.mulc(row, ld), col))
		for j := range int64(len(dq) / 4) {
			for c := range int64(2) {
				loop.Store(b, loc, dq[4*j+2*h+c], stage, indexAdd(b, loc, base, 8*j+c))
			}
		}
	}
}

// bulkDQ adds the staging tile's rows (a query tile's dQ, stored and
// fenced before a barrier) to the accumulator acc: thread t < Keys adds
// row t, query first + t, by one gpu.bulk_reduce_add of D values; no
// thread with first = g.Lk (no tile staged yet), nor for rows past the
// query count g.Lk (the transposed view's).
func (g *flashGen) bulkDQ(b *ir.Builder, x ix, st flashStart, first, acc, stage *ir.Value) {
	loc := g.loc
	q := x.add(first, g.tid)
	ok := x.both(x.lt(g.tid, x.c(g.Tile.Keys)), x.lt(q, x.c(g.Lk)))
	loop.If(b, loc, ok, nil, func(b *ir.Builder) []*ir.Value {
		x := x.at(b)
		dst := x.index(x.mulc(x.add(x.mulc(st.z, g.Lk), q), g.D))
		gpu.BulkReduceAdd(b, loc, acc, dst, stage, x.index(x.mulc(g.tid, g.D+8)), 4*g.D)
		return nil
	}, nil)
}
