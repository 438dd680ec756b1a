package togpu

import (
	"math"
	"math/bits"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// A convolution runs on tensor cores as an implicit GEMM, one GEMM per
// image n of the batch (NCHW, the layout the graph keeps):
//
//	y[n, o, q] = Σ_k W[o, k] · X_n[k, q]
//
// with o the output channel (the GEMM's M), q = oh·OW + ow the output
// position (N) and k = (c·KH + kh)·KW + kw (K). W is the weight buffer
// [O, C, KH, KW] itself, read as the matrix [O, C·KH·KW] (A stored with K
// last, shared by every image); X_n is the im2col matrix of image n,
// never stored: the kernel gathers each element of a B tile,
// x[n, c, oh·sh - pt + kh·dh, ow·sw - pl + kw·dw], into shared memory,
// zero where the window reaches into the padding or past K or OH·OW. The
// products, the pipeline of stages and the epilogue are the matmul's
// (mma): the nest body after the K loop (bias, batch-norm affine,
// residual add, activation, cast, stores) runs once per accumulator
// element at (n, o, q / OW, q % OW).

// convGeom is what the gather of a convolution's B tiles needs: the
// input's sizes, the window's and the nest's output width.
type convGeom struct {
	loop.Conv
	c, h, w int64 // input channels, height and width
	kh, kw  int64 // window
	ow      int64 // output width
	// direct: a 1×1 window of stride 1 without padding, whose X_n is
	// image n itself, [C, H·W]: B is copied as a matrix stored [K, N]
	// (cp.async where rows start on 16 bytes), not gathered.
	direct bool
	// fold: one GEMM for the whole batch, its N index (n, q) over N·OH·OW
	// (no batch dims), for outputs too small to fill the N tiles of a GEMM
	// per image (foldBatch).
	fold     bool
	imgs, oq int64 // with fold: the batch, and OH·OW
	// Filled per thread by setup: the chunk's smem offset, its passes'
	// first k and smem offsets, and each of its 8 output positions' first
	// input row and column (a far negative row where q ≥ OH·OW, so that
	// every tap of it is out of range).
	dst      *ir.Value
	passK    []*ir.Value
	passDst  []int64
	ih0, iw0 [8]*ir.Value
	img      [8]*ir.Value // each position's image's offset in x
}

// farRow is the first input row of an output position past the end: any
// tap row (at most farRow + (KH-1)·dh) stays negative, out of range.
const farRow = -(1 << 24)

// convNest matches what every convolution mapping requires of a nest
// convert-graph-to-loop marked (loop.ConvAttr): a 4-D conv2d nest over
// static extents from 0 by 1, without inits, whose body holds exactly one
// K loop summing in f32 from 0, with exactly two loads in it. It returns
// the convolution, the nest's extents, the K loop and its two loads; ok is
// false for any other nest.
func convNest(nest *ir.Operation) (geo loop.Conv, ext [4]int64, kl *ir.Operation, loads []*ir.Operation, ok bool) {
	geo, ext, kl, loads, ok = anyConvNest(nest)
	if geo.ChannelsLast {
		// A channels-last nest is cuDNN's (nhwcLibraryPlan) or SIMT.
		return geo, ext, nil, nil, false
	}
	return geo, ext, kl, loads, ok
}

// anyConvNest is convNest for either layout.
func anyConvNest(nest *ir.Operation) (geo loop.Conv, ext [4]int64, kl *ir.Operation, loads []*ir.Operation, ok bool) {
	geo, ok = loop.ConvOf(nest)
	if !ok || loop.NestKind(nest) != "conv2d" {
		return geo, ext, nil, nil, false
	}
	lbs, ubs, steps, inits, err := loop.ParallelBounds(nest)
	if err != nil || len(lbs) != 4 || len(inits) > 0 {
		return geo, ext, nil, nil, false
	}
	for d := range lbs {
		lb, ok1 := staticInt(lbs[d])
		st, ok2 := staticInt(steps[d])
		ub, ok3 := staticInt(ubs[d])
		if !ok1 || !ok2 || !ok3 || lb != 0 || st != 1 || ub < 1 {
			return geo, ext, nil, nil, false
		}
		ext[d] = ub
	}
	for _, o := range loop.Body(nest).Ops() {
		if o.Name() == loop.ForOp {
			if kl != nil {
				return geo, ext, nil, nil, false
			}
			kl = o
		}
	}
	if kl == nil || kl.NumResults() != 1 || !isZeroF32(loop.ForInits(kl)[0]) {
		return geo, ext, nil, nil, false
	}
	kl.Walk(func(o *ir.Operation) bool {
		if o.Name() == loop.LoadOp {
			loads = append(loads, o)
		}
		return true
	})
	if len(loads) != 2 {
		return geo, ext, nil, nil, false
	}
	return geo, ext, kl, loads, true
}

// convPlan recognizes a convolution nest convert-graph-to-loop marked for
// tensor cores (loop.ConvAttr): a 4-D nest (n, o, oh, ow) over static
// extents whose body holds one K loop (c, kh, kw nested) summing x·w in
// f32 from 0, with x [N, C, H, W] and w [O, C, KH, KW] of bf16 or f16
// read from buffers. Anything else keeps the SIMT mapping.
func convPlan(nest *ir.Operation, tile MMATile) *mma {
	geo, ext, kl, loads, ok := convNest(nest)
	if !ok {
		return nil
	}
	tile = tile.ForConv(ext[1])
	body := loop.Body(nest)
	var x, w *ir.Operation // the loads of each
	// x is indexed by the nest's n (or 0 for a batch of one), w by its o.
	reads := func(ld *ir.Operation, d int) bool { return indexes(ld.Operand(1), body.Argument(d), ext[d]) }
	switch {
	case reads(loads[0], 0) && reads(loads[1], 1) && !(reads(loads[0], 1) && reads(loads[1], 0)):
		x, w = loads[0], loads[1]
	case reads(loads[1], 0) && reads(loads[0], 1) && !(reads(loads[1], 1) && reads(loads[0], 0)):
		x, w = loads[1], loads[0]
	default:
		return nil // neither or both ways (n = o = 0): ambiguous
	}
	xt, ok1 := x.Operand(0).Type().(*ir.MemRefType)
	wt, ok2 := w.Operand(0).Type().(*ir.MemRefType)
	if !ok1 || !ok2 || definedIn(x.Operand(0), nest) || definedIn(w.Operand(0), nest) || x.NumOperands() != 5 || w.NumOperands() != 5 {
		return nil
	}
	// w is read at [o, c, kh, kw], the K loops' variables, and x at
	// channel c: the window's offsets are x's. A nest whose output is
	// permuted (an epilogue transposing a weight gradient fused into it)
	// reads its operands the other way round and is no such convolution.
	if !windowIndices(kl, w, x, wt.Shape()) {
		return nil
	}
	elem := xt.ElementType()
	xs, ws := xt.Shape(), wt.Shape()
	if (elem != ir.BF16 && elem != ir.F16) || wt.ElementType() != elem || !allStatic(xs) || !allStatic(ws) ||
		xs[0] != ext[0] || ws[0] != ext[1] || xs[1] != ws[1] {
		return nil
	}
	for i := range 2 {
		span := geo.Dilations[i] * (ws[2+i] - 1)
		if (xs[2+i]+geo.Padding[i]+geo.Padding[2+i]-span-1)/geo.Strides[i]+1 != ext[2+i] || span >= -farRow/2 {
			return nil
		}
	}
	g := &convGeom{Conv: geo, c: xs[1], h: xs[2], w: xs[3], kh: ws[2], kw: ws[3], ow: ext[3]}
	k := ws[1] * ws[2] * ws[3]
	p := &mma{kloop: kl, elem: elem, k: k, tile: tile, batch: ext[:1], m: ext[1], n: ext[2] * ext[3], conv: g,
		a: operand{mem: w.Operand(0), shape: []int64{1, ext[1], k}, kLast: true, shared: true, tile: tile.M, tileK: tile.K, vec: copyVector(k)},
		b: operand{mem: x.Operand(0), shape: xs, tile: tile.N, tileK: tile.K, vec: 1}}
	if foldBatch(ext[2]*ext[3], ext[0], tile.N) {
		g.fold, g.imgs, g.oq = true, ext[0], ext[2]*ext[3]
		p.batch, p.n, p.a.shape = nil, ext[0]*ext[2]*ext[3], p.a.shape[1:]
	}
	if tile.WGMMA && p.b.tile > gpu.WGMMASwizzleRow { // B is stored [K, N] (see mmaPlan)
		p.b.panel = p.b.tileK * gpu.WGMMASwizzleRow
	}
	if !g.fold && g.kh == 1 && g.kw == 1 && geo.Strides == [2]int64{1, 1} && geo.Padding == [4]int64{} {
		g.direct = true
		p.b.shape, p.b.vec = []int64{xs[0], xs[1], xs[2] * xs[3]}, copyVector(xs[2]*xs[3])
	}
	p.width = ir.Index
	if p.convFitsI32(xs, ws) {
		p.width = ir.I32
	}
	return p
}

// windowIndices reports whether w is loaded at [·, c, kh, kw] and x at
// [·, c, ·, ·], with c, kh and kw the induction variables of kl and of
// the loops nested in it, in order (a constant 0 for a window extent of
// one, which convert-graph-to-loop may index without a loop).
func windowIndices(kl, w, x *ir.Operation, ws []int64) bool {
	ivs := kLoopIVs(kl)
	for d := 1; d <= 3; d++ {
		var iv *ir.Value
		if d <= len(ivs) {
			iv = ivs[d-1]
		}
		if !indexes(w.Operand(1+d), iv, ws[d]) {
			return false
		}
	}
	return len(ivs) > 0 && indexes(x.Operand(2), ivs[0], ws[1])
}

// kLoopIVs returns the induction variables of the K loop kl and the
// loops nested in it (c, kh, kw), at most three.
func kLoopIVs(kl *ir.Operation) []*ir.Value {
	var ivs []*ir.Value
	for l := kl; l != nil && len(ivs) < 3; {
		blk := l.Region(0).Front()
		ivs = append(ivs, blk.Argument(0))
		var next *ir.Operation
		for _, o := range blk.Ops() {
			if o.Name() == loop.ForOp {
				next = o
			}
		}
		l = next
	}
	return ivs
}

// foldBatch reports whether a convolution's GEMMs run as one over the
// batch: when the output positions of an image, q of them, leave more
// than an eighth of their last N tile (of n) empty and those of the whole
// batch fewer (ResNet-50's 28×28, 14×14 and 7×7 outputs: 784, 196 and 49
// in tiles of 128).
func foldBatch(q, images, n int64) bool {
	waste := func(q int64) int64 { return (q+n-1)/n*n - q }
	return images > 1 && 8*waste(q) > q && waste(images*q)*q < waste(q)*images*q
}

// convFitsI32 reports whether every offset a convolution kernel computes
// is below 2³¹ in magnitude: x's and w's elements (a gathered offset is
// within x, or replaced by 0), the tiles' overhang, the far rows and the
// blocks.
func (p *mma) convFitsI32(xs, ws []int64) bool {
	t := p.tile
	over := float64(2*(t.M+t.N)) * float64(p.k+p.m+p.n+t.K)
	lim := float64(math.MaxInt32)
	far := float64(-farRow) * float64(p.conv.w+1)
	blocks := float64(ir.NumElements(p.batch)) * float64(p.tilesM()*p.tilesN())
	return float64(ir.NumElements(xs))+over+far < lim && float64(ir.NumElements(ws))+over < lim && blocks < lim
}

// setup computes this thread's share of gathering a B stage, the part
// that is the same at every k tile: its chunk (8 output positions from
// colBase + 8c) at k row r of each pass, and the first input row and
// column of each position. It returns the chunk's offset in a stage.
func (g *convGeom) setup(x ix, o *operand, threads int64, tid, z, colBase, nCols *ir.Value) *ir.Value {
	chunks := o.tile / 8
	shift := int64(bits.TrailingZeros64(uint64(chunks)))
	r, c := x.shr(tid, shift), x.and(tid, chunks-1)
	rows := threads / chunks
	g.dst = o.at(x, r, c)
	g.passK, g.passDst = nil, nil
	for q := range o.tileK / rows {
		g.passK = append(g.passK, x.addc(r, q*rows))
		g.passDst = append(g.passDst, q*rows*o.rowStride())
	}
	image := g.c * g.h * g.w
	base := x.mulc(z, image) // (z is 0 with fold)
	col := x.add(colBase, x.mulc(c, 8))
	for e := range int64(8) {
		if e > 0 && g.oneRow() {
			g.ih0[e], g.iw0[e], g.img[e] = g.ih0[0], x.addc(g.iw0[0], e*g.Strides[1]), g.img[0]
			continue
		}
		col := x.addc(col, e)
		q := col
		g.img[e] = base
		if g.fold {
			g.img[e] = x.mulc(x.div(col, x.c(g.oq)), image)
			q = x.rem(col, x.c(g.oq))
		}
		oh, ow := x.div(q, x.c(g.ow)), x.rem(q, x.c(g.ow))
		ih := x.sub(x.mulc(oh, g.Strides[0]), x.c(g.Padding[0]))
		g.ih0[e] = arith.NewSelect(x.b, x.loc, x.lt(col, nCols), ih, x.c(farRow))
		g.iw0[e] = x.sub(x.mulc(ow, g.Strides[1]), x.c(g.Padding[1]))
	}
	return g.dst
}

// oneRow reports whether the 8 output positions of a chunk (from a
// multiple of 8) always lie in one output row, so that they share their
// first input row and their columns are a stride apart (then OH·OW is a
// multiple of 8 too: a chunk is wholly past the end or not at all).
func (g *convGeom) oneRow() bool { return g.ow%8 == 0 }

// fetch loads this thread's elements of B's k tile from k0 (per pass, k
// splits into (c, kh, kw); each of the chunk's 8 positions loads its
// tap), 0 where the tap is out of the image, k is past K (kTail) or the
// tile does not exist (exists false; nil: it does).
func (g *convGeom) fetch(x ix, gmem, k0, kTotal *ir.Value, kTail bool, exists *ir.Value, elem ir.Type) []*ir.Value {
	b, loc := x.b, x.loc
	zero := arith.ConstantFloat(b, loc, 0, elem)
	hC, wC := x.c(g.h), x.c(g.w)
	var vs []*ir.Value
	for _, kr := range g.passK {
		k := x.add(k0, kr)
		window := g.kh * g.kw
		c, rest := x.div(k, x.c(window)), x.rem(k, x.c(window))
		kh, kw := x.div(rest, x.c(g.kw)), x.rem(rest, x.c(g.kw))
		dh, dw := x.mulc(kh, g.Dilations[0]), x.mulc(kw, g.Dilations[1])
		plane := x.mulc(c, g.h*g.w)
		kOK := exists
		if kTail {
			kOK = x.both2(kOK, x.lt(k, kTotal))
		}
		for e := range int64(8) {
			ih, iw := x.add(g.ih0[e], dh), x.add(g.iw0[e], dw)
			ok := x.both2(kOK, x.both(x.lt(ih, hC), x.lt(iw, wC)))
			from := arith.NewSelect(b, loc, ok, x.add(x.add(g.img[e], plane), x.add(x.mul(ih, wC), iw)), x.c(0))
			vs = append(vs, arith.NewSelect(b, loc, ok, loop.Load(b, loc, gmem, x.index(from)), zero))
		}
	}
	return vs
}

// store writes what fetch loaded into the B stage at dst (this thread's
// chunk in it).
func (g *convGeom) store(x ix, smem, dst *ir.Value, vs []*ir.Value) {
	for i := range g.passK {
		for e := range int64(8) {
			loop.Store(x.b, x.loc, vs[i*8+int(e)], smem, x.index(x.addc(dst, g.passDst[i]+e)))
		}
	}
}

// convCols binds the nest's output position for the epilogue's element
// at GEMM column col (q): (oh, ow) = (q / OW, q % OW), and for a pair
// (col even, OW even: both in one row) the second at ow + 1, written so
// that the first column's evenness shows (targets/llvm pairs the
// accesses).
func (g *convGeom) convCols(x ix, body *ir.Block, col *ir.Value, pair bool) []map[*ir.Value]*ir.Value {
	// With fold, the image first: n = col / (OH·OW), then q in it.
	var n *ir.Value
	if !pair {
		q := col
		if g.fold {
			n, q = x.index(x.div(col, x.c(g.oq))), x.rem(col, x.c(g.oq))
		}
		m := map[*ir.Value]*ir.Value{
			body.Argument(2): x.index(x.div(q, x.c(g.ow))),
			body.Argument(3): x.index(x.rem(q, x.c(g.ow))),
		}
		if n != nil {
			m[body.Argument(0)] = n
		}
		return []map[*ir.Value]*ir.Value{m}
	}
	b, loc := x.b, x.loc
	half := x.shr(col, 1) // (OW and so OH·OW are even)
	if g.fold {
		n, half = x.index(x.div(half, x.c(g.oq/2))), x.rem(half, x.c(g.oq/2))
	}
	oh := x.index(x.div(half, x.c(g.ow/2)))
	ow0 := arith.Binary(b, arith.OpMulI, loc, x.index(x.rem(half, x.c(g.ow/2))), arith.ConstantIndex(b, loc, 2))
	ow1 := arith.Binary(b, arith.OpAddI, loc, ow0, arith.ConstantIndex(b, loc, 1))
	ms := []map[*ir.Value]*ir.Value{
		{body.Argument(2): oh, body.Argument(3): ow0},
		{body.Argument(2): oh, body.Argument(3): ow1},
	}
	if n != nil {
		for _, m := range ms {
			m[body.Argument(0)] = n
		}
	}
	return ms
}
