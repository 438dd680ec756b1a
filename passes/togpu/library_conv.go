package togpu

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The values of convert-loop-to-gpu's conv option.
const (
	// ConvMMA runs convolution nests as Strata's own implicit-GEMM
	// kernels with their epilogue fused (conv_mma.go), or SIMT.
	ConvMMA = "mma"
	// ConvCuDNN runs each convolution nest as a gpu.library_conv2d that
	// cuDNN computes, followed by the nest's epilogue (batch-norm affine,
	// residual add, activation) as one pointwise kernel reading the
	// convolution, as Inductor runs ATen's convolution and its own
	// pointwise kernel after it.
	ConvCuDNN = "cudnn"
)

// convOptions are the values of the conv option, the default first.
var convOptions = []string{ConvMMA, ConvCuDNN}

// libraryConv is a convolution nest (loop.ConvAttr) that one
// gpu.library_conv2d computes: x [N, C, H, W] and w [O, C, KH, KW] bf16 or
// f16 buffers of static shape, padding alike on both sides, and the sum
// rounded to the operands' type before anything else reads it.
type libraryConv struct {
	nest, kloop *ir.Operation
	round       *ir.Operation // the sum's rounding, the epilogue's first op
	x, w        *ir.Value
	elem        ir.Type
	shape       []int64 // of the output: [N, O, OH, OW], the nest's extents
	geo         gpu.ConvGeometry
	// gemm: a 1×1 window without stride or padding, a batch of products
	// y[n] [O, H·W] = w [O, C] · x[n] [C, H·W], which one
	// gpu.library_matmul (cuBLASLt) computes, w shared by the batch.
	gemm bool
	// permuted: the nest runs over the output's first two dimensions
	// swapped, (o, n, i, j) (permutedConvPlan); only a filter gradient
	// takes it.
	permuted bool
}

// nhwcLibraryPlan recognizes a channels-last convolution nest
// (loop.Conv.ChannelsLast, graph.conv2d's layout "NHWC"): a nest over
// (n, oh, ow, o) whose K loops (c, kh, kw) sum x [N, H, W, C] at [n, …,
// c] times w [O, KH, KW, C] at [o, kh, kw, c] in f32, of bf16 or f16
// buffers (one type) of static shape, the padding alike on both sides and
// the sum rounded first. cuDNN computes it in NHWC. It returns nil and why not
// for a nest the library cannot take (which stays a SIMT nest).
func nhwcLibraryPlan(nest *ir.Operation, geo loop.Conv) (*libraryConv, string) {
	_, ext, kl, loads, ok := anyConvNest(nest)
	if !ok {
		return nil, "the channels-last nest is not one sum of products of two buffers over static extents"
	}
	if geo.Padding[0] != geo.Padding[2] || geo.Padding[1] != geo.Padding[3] {
		return nil, fmt.Sprintf("padding (top, left, bottom, right) %v differs between the sides of a dimension (cuDNN pads both alike)", geo.Padding)
	}
	body := loop.Body(nest)
	ivs := kLoopIVs(kl)
	if len(ivs) != 3 {
		return nil, "the channels-last nest's window is not three K loops (c, kh, kw)"
	}
	for _, ld := range loads {
		if ld.NumOperands() != 5 || definedIn(ld.Operand(0), nest) {
			return nil, "an operand is not a 4-D buffer read from outside the nest"
		}
	}
	// x [N, H, W, C] read at [n, ·, ·, c] and w [O, KH, KW, C] at [o, kh,
	// kw, c]; either load may be x (a constant 0 indexes an extent of 1).
	c, kh, kw := ivs[0], ivs[1], ivs[2]
	var x, w *ir.Operation
	var elem ir.Type
	var xs, ws []int64
	for _, pair := range [][2]*ir.Operation{{loads[0], loads[1]}, {loads[1], loads[0]}} {
		xt, ok1 := pair[0].Operand(0).Type().(*ir.MemRefType)
		wt, ok2 := pair[1].Operand(0).Type().(*ir.MemRefType)
		if !ok1 || !ok2 {
			return nil, "an operand is not a memref"
		}
		e, a, b := xt.ElementType(), xt.Shape(), wt.Shape()
		if (e != ir.BF16 && e != ir.F16) || wt.ElementType() != e || !allStatic(a) || !allStatic(b) {
			return nil, "the operands are not bf16 or f16 buffers of one type and static shape"
		}
		xl, wl := pair[0], pair[1]
		if a[0] == ext[0] && b[0] == ext[3] && a[3] == b[3] &&
			indexes(xl.Operand(1), body.Argument(0), ext[0]) && indexes(xl.Operand(4), c, a[3]) &&
			indexes(wl.Operand(1), body.Argument(3), ext[3]) && indexes(wl.Operand(2), kh, b[1]) &&
			indexes(wl.Operand(3), kw, b[2]) && indexes(wl.Operand(4), c, b[3]) {
			x, w, elem, xs, ws = xl, wl, e, a, b
			break
		}
	}
	if x == nil {
		return nil, "the loads are not x[n, ·, ·, c] and w[o, kh, kw, c]"
	}
	for d := range 2 {
		if gpu.ConvOutSize(xs[1+d], ws[1+d], geo.Padding[d], geo.Strides[d], geo.Dilations[d]) != ext[1+d] {
			return nil, "the nest's extents are not the convolution's output"
		}
	}
	sum := kl.Result(0)
	if !sum.HasOneUse() || sum.Users()[0].Name() != arith.OpTruncF || sum.Users()[0].Result(0).Type() != elem {
		return nil, fmt.Sprintf("the f32 sum is not rounded to %s before the epilogue reads it (a bias added inside the convolution)", elem)
	}
	return &libraryConv{nest: nest, kloop: kl, round: sum.Users()[0], x: x.Operand(0), w: w.Operand(0), elem: elem, shape: ext[:],
		geo: gpu.ConvGeometry{Strides: geo.Strides, Padding: [2]int64{geo.Padding[0], geo.Padding[1]}, Dilations: geo.Dilations, ChannelsLast: true}}, ""
}

// permutedConvPlan recognizes a convolution nest whose output is stored
// with its first two dimensions swapped, as when graph-fuse fuses the
// transpose of a weight gradient (and its cast to the master weight's
// f32) into the convolution: the nest runs over (o, n, i, j) and reads
// x [N, C, H, W] at [iv1, c, window…] and w [O, C, KH, KW] at [iv0, c,
// kh, kw]. Its sum must be rounded first and its padding alike on both
// sides, as convLibraryPlan's. Otherwise nil.
func permutedConvPlan(nest *ir.Operation) *libraryConv {
	geo, ext, kl, loads, ok := convNest(nest)
	if !ok || geo.Padding[0] != geo.Padding[2] || geo.Padding[1] != geo.Padding[3] {
		return nil
	}
	body := loop.Body(nest)
	for _, pair := range [][2]*ir.Operation{{loads[0], loads[1]}, {loads[1], loads[0]}} {
		x, w := pair[0], pair[1]
		xt, ok1 := x.Operand(0).Type().(*ir.MemRefType)
		wt, ok2 := w.Operand(0).Type().(*ir.MemRefType)
		if !ok1 || !ok2 || x.NumOperands() != 5 || w.NumOperands() != 5 || definedIn(x.Operand(0), nest) || definedIn(w.Operand(0), nest) {
			return nil
		}
		elem := xt.ElementType()
		xs, ws := xt.Shape(), wt.Shape()
		if (elem != ir.BF16 && elem != ir.F16) || wt.ElementType() != elem || !allStatic(xs) || !allStatic(ws) ||
			xs[0] != ext[1] || ws[0] != ext[0] || xs[1] != ws[1] ||
			!indexes(x.Operand(1), body.Argument(1), ext[1]) || !indexes(w.Operand(1), body.Argument(0), ext[0]) ||
			!windowIndices(kl, w, x, ws) {
			continue
		}
		for d := range 2 {
			span := geo.Dilations[d] * (ws[2+d] - 1)
			if (xs[2+d]+geo.Padding[d]+geo.Padding[2+d]-span-1)/geo.Strides[d]+1 != ext[2+d] {
				return nil
			}
		}
		sum := kl.Result(0)
		if !sum.HasOneUse() || sum.Users()[0].Name() != arith.OpTruncF || sum.Users()[0].Result(0).Type() != elem {
			return nil
		}
		return &libraryConv{nest: nest, kloop: kl, round: sum.Users()[0], x: x.Operand(0), w: w.Operand(0), elem: elem,
			shape: []int64{ext[1], ext[0], ext[2], ext[3]}, permuted: true,
			geo: gpu.ConvGeometry{Strides: geo.Strides, Padding: [2]int64{geo.Padding[0], geo.Padding[1]}, Dilations: geo.Dilations}}
	}
	return nil
}

// convLibraryPlan recognizes a nest that gpu.library_conv2d computes
// faster than Strata's kernel. It returns nil and why not for a
// convolution nest the library cannot (or should not) take, and nil and
// "" for a nest that is no convolution nest.
func convLibraryPlan(nest *ir.Operation) (*libraryConv, string) {
	geo, ok := loop.ConvOf(nest)
	if !ok || loop.NestKind(nest) != "conv2d" {
		return nil, ""
	}
	if geo.ChannelsLast {
		return nhwcLibraryPlan(nest, geo)
	}
	// convPlan checks the nest's structure: one K loop summing x·w of
	// buffers in f32 from 0 over static extents.
	m := convPlan(nest, DefaultConfig.MMATile)
	if m == nil {
		return nil, "the nest is not one sum of products of two buffers over static extents"
	}
	if geo.Padding[0] != geo.Padding[2] || geo.Padding[1] != geo.Padding[3] {
		return nil, fmt.Sprintf("padding (top, left, bottom, right) %v differs between the sides of a dimension (cuDNN pads both alike)", geo.Padding)
	}
	sum := m.kloop.Result(0)
	if !sum.HasOneUse() || sum.Users()[0].Name() != arith.OpTruncF || sum.Users()[0].Result(0).Type() != m.elem {
		return nil, fmt.Sprintf("the f32 sum is not rounded to %s before the epilogue reads it (a bias added inside the convolution)", m.elem)
	}
	// An unstrided, unpadded 1×1 window is a batch of products W[O, C]·
	// x[n] [C, H·W]: cuBLASLt's. A strided one runs on cuDNN's graph API
	// engines (bench/NOTES.md, session 12: as fast as Strata's wgmma
	// kernel, whose JIT took ~0.9 s of resnet50_train's first call; the
	// legacy API's algorithms were 2.5–5× slower, session 8).
	ws := m.a.mem.Type().(*ir.MemRefType).Shape()
	gemm := ws[2] == 1 && ws[3] == 1 && geo.Strides == [2]int64{1, 1} && geo.Padding == [4]int64{}
	lbs, ubs, _, _, _ := loop.ParallelBounds(nest)
	shape := make([]int64, len(lbs))
	for d := range ubs {
		shape[d], _ = staticInt(ubs[d]) // convPlan checked they are static
	}
	return &libraryConv{nest: nest, kloop: m.kloop, round: sum.Users()[0], x: m.b.mem, w: m.a.mem, elem: m.elem, shape: shape, gemm: gemm,
		geo: gpu.ConvGeometry{Strides: geo.Strides, Padding: [2]int64{geo.Padding[0], geo.Padding[1]}, Dilations: geo.Dilations}}, ""
}

// lowerLibraryConvs replaces every library-computable convolution nest
// of fn by a gpu.library_conv2d (a gpu.library_matmul for an unstrided,
// unpadded 1×1 window) and the nest's epilogue reading its output. When the epilogue only stores the rounded sum into a buffer of
// the output's shape, the library writes that buffer and the nest
// disappears; otherwise the output is a new buffer, freed after the
// nest, and the nest becomes a pointwise one. A convolution nest the
// library cannot take stays on Strata's kernels, with the reason under
// STRATA_LOGS=perf_hints.
func lowerLibraryConvs(ctx *ir.Context, fn *ir.Operation) {
	for _, nest := range topLevelNests(fn) {
		p, why := convLibraryPlan(nest)
		if p == nil {
			if q := permutedConvPlan(nest); q != nil {
				p, why = q, "a permuted output that is no weight gradient"
			}
		}
		if f := filterGradientPlan(p); f != nil {
			f.lower(ctx)
		} else if p != nil && !p.permuted {
			p.lower(ctx)
		} else if why != "" {
			perfHint(nest, "convolution nest stays on Strata's kernels, not cuDNN: "+why)
		}
	}
}

func (p *libraryConv) lower(ctx *ir.Context) {
	loc := p.nest.Loc()
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(p.nest)
	if out := p.directStore(); out != nil {
		p.library(b, loc, out)
		p.nest.Erase()
		return
	}
	y := loop.Alloc(b, loc, ir.MemRefOf(p.shape, p.elem))
	p.library(b, loc, y)
	p.readBack(ctx, b, y, loop.Body(p.nest).Arguments())
}

// readBack makes the nest its epilogue, a pointwise nest reading the
// convolution from y at the nest's variables at (in y's order of
// dimensions) instead of computing the rounded sum, and frees y after it
// with b.
func (p *libraryConv) readBack(ctx *ir.Context, b *ir.Builder, y *ir.Value, at []*ir.Value) {
	loc := p.nest.Loc()
	in := ir.NewBuilder(ctx)
	in.SetInsertionPointBefore(p.kloop)
	p.round.Result(0).ReplaceAllUsesWith(loop.Load(in, loc, y, at...))
	p.round.Erase()
	p.kloop.Erase()
	p.nest.SetAttr(loop.ConvAttr, nil)
	p.nest.SetAttr(loop.NestKindAttr, ir.StringAttr{Value: "pointwise"})
	b.SetInsertionPointAfter(p.nest)
	loop.Dealloc(b, loc, y)
}

// library inserts the library op writing the convolution into y.
func (p *libraryConv) library(b *ir.Builder, loc ir.Location, y *ir.Value) {
	if !p.gemm {
		gpu.LibraryConv2D(b, loc, p.x, p.w, y, p.geo)
		return
	}
	xs, sh := p.x.Type().(*ir.MemRefType).Shape(), p.shape
	w := loop.View(b, loc, p.w, ir.MemRefOf([]int64{sh[1], xs[1]}, p.elem))
	x := loop.View(b, loc, p.x, ir.MemRefOf([]int64{xs[0], xs[1], xs[2] * xs[3]}, p.elem))
	yv := loop.View(b, loc, y, ir.MemRefOf([]int64{sh[0], sh[1], sh[2] * sh[3]}, p.elem))
	gpu.LibraryMatmul(b, loc, w, x, yv, nil, false, false)
}

// directStore returns the buffer the nest stores the rounded sum into at
// (n, o, i, j) when that is all the nest does besides pure arithmetic
// (constants, the K loop's window origin), or nil.
func (p *libraryConv) directStore() *ir.Value {
	st, out := storeOf(p.nest, p.round.Result(0), p.shape, p.elem)
	if st == nil {
		return nil
	}
	for _, o := range loop.Body(p.nest).Ops() {
		if o == p.kloop || o == p.round || o == st || o.HasTrait(ir.Terminator) || o.Name() == loop.ReduceOp {
			continue
		}
		// Constants and the index arithmetic of the window's origin,
		// which only the K loop reads: nothing else the store needs.
		if !o.HasTrait(ir.Pure) || o.NumRegions() > 0 {
			return nil
		}
	}
	return out
}

// A weight gradient reaches convert-loop-to-gpu as autodiff builds it
// (autodiff's conv2dGrad): a convolution of xt = transpose(x) [C, N, H,
// W] by gt = transpose(g) [O, N, OH, OW], each a copy nest of its own,
// with the forward's stride as dilation, its dilation as stride and its
// padding, into r [C, O, KH', KW'] whose first KH×KW positions are the
// gradient. As a forward convolution that is a GEMM whose reduction (N·OH·OW)
// dwarfs its outputs; cuDNN's filter gradient reads x and g themselves
// and splits that reduction.

// filterGradient is such a convolution nest, rewritten as a
// gpu.library_conv2d of direction backward_filter.
type filterGradient struct {
	conv  *libraryConv
	x, g  *transposed     // what wrote xt and gt
	moved []*ir.Operation // deallocations of x and g to move after the library op
	geo   gpu.ConvGeometry
	// perm swaps the batch and the channels: [1, 0, 2, 3] in NCHW, [3, 1,
	// 2, 0] channels last (its own inverse either way).
	perm []int
}

// The transposes that make a weight gradient's operands, by layout.
var (
	swapNCHW = []int{1, 0, 2, 3}
	swapNHWC = []int{3, 1, 2, 0}
)

// transposed is the nest that wrote a transposed operand buf [D1, D0, D2,
// D3] of the weight gradient's convolution with store. A copy of a
// buffer src [D0, D1, D2, D3] (src set) goes: the library reads src. A
// nest computing the value (a fused producer, perhaps of other values
// too) also stores it untransposed into a new buffer, which the library
// reads.
type transposed struct {
	buf, src *ir.Value
	nest     *ir.Operation
	store    *ir.Operation
}

// filterGradientPlan recognizes p as a weight gradient's convolution of
// transposed operands, or returns nil. Channels last (autodiff's
// conv2dGradNHWC) the operands are xt [C, H, W, N] and gt [O, OH, OW, N],
// transposes of x [N, H, W, C] and g [N, OH, OW, O], and r is [C, KH',
// KW', O].
func filterGradientPlan(p *libraryConv) *filterGradient {
	if p == nil || p.nest.Block() == nil {
		return nil
	}
	perm := swapNCHW
	if p.geo.ChannelsLast {
		perm = swapNHWC
	}
	x, g := transposedSource(p.x, p.nest, perm), transposedSource(p.w, p.nest, perm)
	if x == nil || g == nil || x.nest == g.nest {
		return nil
	}
	xt, gt, rs := p.x.Type().(*ir.MemRefType).Shape(), p.w.Type().(*ir.MemRefType).Shape(), p.shape
	geo := gpu.ConvGeometry{Strides: p.geo.Dilations, Padding: p.geo.Padding, Dilations: p.geo.Strides, Direction: gpu.ConvBackwardFilter,
		ChannelsLast: p.geo.ChannelsLast}
	if p.geo.ChannelsLast {
		// As NCHW below, the operands and result seen in NCHW order.
		xt, gt, rs = nchwOf(xt), nchwOf(gt), nchwOf(rs)
	}
	// xt [C, N, H, W], gt [O, N, OH, OW], r [C, O, KH', KW']: the forward
	// convolution of x [N, C, H, W] with a KH'×KW' window must have g's
	// extents.
	// Any convolution reads as the filter gradient of its operands
	// transposed; it is one (and the library's filter gradient the faster
	// way) when the window, g's extents, is at least as large as the
	// result, the forward's window. A data gradient's window is the
	// forward's, smaller than its result.
	if xt[1] != gt[1] || rs[0] != xt[0] || rs[1] != gt[0] || gt[2] < rs[2] || gt[3] < rs[3] {
		return nil
	}
	for d := range 2 {
		if gpu.ConvOutSize(xt[2+d], rs[2+d], geo.Padding[d], geo.Strides[d], geo.Dilations[d]) != gt[2+d] {
			return nil
		}
	}
	f := &filterGradient{conv: p, x: x, g: g, geo: geo, perm: perm}
	// A copied buffer must hold what the copy read until the nest:
	// nothing between writes it; its deallocations move after the
	// library op.
	// A copied buffer written again before the convolution is copied
	// untransposed instead.
	for _, c := range []*transposed{x, g} {
		if c.src == nil {
			continue
		}
		var moved []*ir.Operation
		for _, u := range c.src.Users() {
			top := topLevel(u, p.nest.Block())
			if top == nil || !c.nest.IsBeforeInBlock(top) || !top.IsBeforeInBlock(p.nest) {
				continue
			}
			switch {
			case u.Name() == loop.DeallocOp && u == top:
				moved = append(moved, u)
			case !readsOnly(u, c.src):
				c.src, moved = nil, nil
			}
			if c.src == nil {
				break
			}
		}
		f.moved = append(f.moved, moved...)
	}
	return f
}

// readsOnly reports whether op only reads buf: a load, a library op
// taking it as an operand it does not write, or a view of it that only
// such ops use.
func readsOnly(op *ir.Operation, buf *ir.Value) bool {
	switch op.Name() {
	case loop.LoadOp:
		return op.Operand(0) == buf
	case loop.ViewOp:
		return !slices.ContainsFunc(op.Result(0).Users(), func(u *ir.Operation) bool { return !readsOnly(u, op.Result(0)) })
	case gpu.LibraryMatmulOp:
		return op.Operand(2) != buf
	case gpu.LibraryConv2DOp:
		g, err := gpu.LibraryConvGeometry(op)
		return err == nil && op.Operand(g.Direction.Written()) != buf
	}
	return false
}

// topLevel returns the ancestor of op (or op) in block, or nil.
func topLevel(op *ir.Operation, block *ir.Block) *ir.Operation {
	for o := op; o != nil; o = o.ParentOp() {
		if o.Block() == block {
			return o
		}
	}
	return nil
}

// nchwOf returns a channels-last shape [A, H, W, B] in NCHW order [A, B,
// H, W].
func nchwOf(s []int64) []int64 { return []int64{s[0], s[3], s[1], s[2]} }

// transposedSource returns what wrote buf, a 4-D buffer that reader
// reads: the last top-level nest before reader storing into buf
// (loop-buffer-reuse gives a slot to several buffers in turn), over buf's
// static extents, storing once an iteration into buf at its induction
// variables and nothing else anywhere, where nothing writes buf between
// that nest and reader. A nest that only loads src at its induction
// variables permuted by perm (src[i1, i0, i2, i3] for [1, 0, 2, 3]) and
// stores it is a copy of src. Otherwise nil.
func transposedSource(buf *ir.Value, reader *ir.Operation, perm []int) *transposed {
	block := reader.Block()
	var nest *ir.Operation
	for _, u := range buf.Users() {
		top := topLevel(u, block)
		if top == nil {
			return nil
		}
		if u.Name() == loop.StoreOp && top.Name() == loop.ParallelOp && top.IsBeforeInBlock(reader) &&
			(nest == nil || nest.IsBeforeInBlock(top)) {
			nest = top
		}
	}
	if nest == nil {
		return nil
	}
	for _, u := range buf.Users() {
		top := topLevel(u, block)
		if top != nest && top != reader && nest.IsBeforeInBlock(top) && top.IsBeforeInBlock(reader) && !readsOnly(u, buf) {
			return nil // written between the writer and reader
		}
	}
	lbs, ubs, steps, inits, err := loop.ParallelBounds(nest)
	bt, _ := buf.Type().(*ir.MemRefType)
	if err != nil || len(lbs) != 4 || len(inits) > 0 || bt == nil {
		return nil
	}
	shape := bt.Shape()
	for d := range lbs {
		lb, ok1 := staticInt(lbs[d])
		st, ok2 := staticInt(steps[d])
		ub, ok3 := staticInt(ubs[d])
		if !ok1 || !ok2 || !ok3 || lb != 0 || st != 1 || ub != shape[d] {
			return nil
		}
	}
	body := loop.Body(nest)
	iv := body.Arguments()
	var st *ir.Operation // the store into buf
	others := 0          // other writes
	for _, o := range nestWrites(nest) {
		if o.Name() == loop.StoreOp && o.Operand(1) == buf {
			if st != nil {
				return nil
			}
			st = o
		} else {
			others++
		}
	}
	if st == nil || st.Block() != body || !slices.Equal(st.Operands()[2:], iv) {
		return nil
	}
	t := &transposed{buf: buf, nest: nest, store: st}
	ld := st.Operand(0).DefiningOp()
	if others > 0 || ld == nil || ld.Name() != loop.LoadOp || ld.Block() != body || ld.NumOperands() != 5 || definedIn(ld.Operand(0), nest) {
		return t
	}
	for _, o := range body.Ops() {
		if o != ld && o != st && o.Name() != arith.OpConstant && o.Name() != loop.ReduceOp && !o.HasTrait(ir.Terminator) {
			return t
		}
	}
	for d, p := range perm {
		if !indexes(ld.Operand(1+d), iv[p], shape[p]) {
			return t
		}
	}
	src := ld.Operand(0)
	if mt, _ := src.Type().(*ir.MemRefType); mt == nil || mt.ElementType() != bt.ElementType() ||
		!slices.Equal(mt.Shape(), permuteShape(shape, perm)) {
		return t
	}
	t.src = src
	return t
}

// permuteShape returns s permuted by perm: element d is s[perm[d]].
func permuteShape(s []int64, perm []int) []int64 {
	out := make([]int64, len(perm))
	for d, p := range perm {
		out[d] = s[p]
	}
	return out
}

// nestWrites returns the ops in nest that write memory.
func nestWrites(nest *ir.Operation) []*ir.Operation {
	var out []*ir.Operation
	nest.Walk(func(o *ir.Operation) bool {
		if o.Name() == loop.StoreOp || o.Name() == loop.CollectiveOp {
			out = append(out, o)
		}
		return true
	})
	return out
}

// lower computes the convolution with the library's filter gradient into
// a buffer dw [O, C, KH', KW'] that the nest, its K loop gone, reads
// transposed for its epilogue. A copy of x or g goes when nothing else
// reads what it wrote; a nest computing x or g also stores its value
// untransposed into a new buffer, which the library reads.
func (f *filterGradient) lower(ctx *ir.Context) {
	p := f.conv
	loc := p.nest.Loc()
	b := ir.NewBuilder(ctx)
	var fresh []*ir.Value // the untransposed buffers made here
	for _, t := range []*transposed{f.x, f.g} {
		if t.src != nil {
			continue
		}
		s := t.buf.Type().(*ir.MemRefType).Shape()
		b.SetInsertionPointBefore(t.nest)
		t.src = loop.Alloc(b, loc, ir.MemRefOf(permuteShape(s, f.perm), p.elem))
		fresh = append(fresh, t.src)
		b.SetInsertionPointAfter(t.store)
		iv := t.store.Operands()[2:]
		at := make([]*ir.Value, len(f.perm))
		for d, q := range f.perm {
			at[d] = iv[q]
		}
		loop.Store(b, t.store.Loc(), t.store.Operand(0), t.src, at...)
	}
	b.SetInsertionPointBefore(p.nest)
	// dw [O, C, KH', KW'] (channels last [O, KH', KW', C]) is r
	// transposed.
	dw := loop.Alloc(b, loc, ir.MemRefOf(permuteShape(p.shape, f.perm), p.elem))
	lib := gpu.LibraryConv2D(b, loc, f.x.src, dw, f.g.src, f.geo)
	for _, d := range f.moved {
		d.MoveAfter(lib)
	}
	for _, s := range fresh {
		loop.Dealloc(b, loc, s)
	}
	// The nest's epilogue (a store, a cast to the master weight's f32)
	// reads dw transposed.
	iv := loop.Body(p.nest).Arguments()
	at := make([]*ir.Value, len(f.perm)) // the nest runs over r [C, O, …]
	for d, q := range f.perm {
		at[d] = iv[q]
	}
	if p.permuted {
		at = iv // over dw [O, C, …] itself
	}
	p.readBack(ctx, b, dw, at)
	for _, c := range []*transposed{f.x, f.g} {
		removeUnread(c.buf, c.nest)
	}
}

// removeUnread removes what nest stores into buf (the nest itself when
// that is all it does: a copy) when nothing reads what it stored, and
// buf's allocation and deallocations once nothing else uses buf.
func removeUnread(buf *ir.Value, nest *ir.Operation) {
	block := nest.Block()
	// Readers after nest and before the next write of buf read it.
	var next *ir.Operation
	var stores []*ir.Operation
	for _, u := range buf.Users() {
		top := topLevel(u, block)
		switch {
		case top == nest && u.Name() == loop.StoreOp:
			stores = append(stores, u)
		case top == nest || top.IsBeforeInBlock(nest):
		case next == nil || top.IsBeforeInBlock(next):
			next = top
		}
	}
	if next != nil && next.Name() != loop.DeallocOp {
		reads := false
		next.Walk(func(o *ir.Operation) bool {
			reads = reads || (o.Name() != loop.StoreOp && slices.Contains(o.Operands(), buf))
			return !reads
		})
		if reads {
			return
		}
	}
	for _, st := range stores {
		st.Erase()
	}
	if onlyStores := !slices.ContainsFunc(loop.Body(nest).Ops(), func(o *ir.Operation) bool {
		return o.Name() == loop.StoreOp || o.Name() == loop.CollectiveOp || o.NumRegions() > 0 && o.Name() != loop.ReduceOp
	}); onlyStores {
		nest.Erase() // nothing left to do: a copy
	}
	alloc := buf.DefiningOp()
	if alloc == nil || alloc.Name() != loop.AllocOp {
		return
	}
	var deallocs []*ir.Operation
	for _, u := range buf.Users() {
		if u.Name() != loop.DeallocOp {
			return // another occupant of the slot
		}
		deallocs = append(deallocs, u)
	}
	for _, d := range deallocs {
		d.Erase()
	}
	alloc.Erase()
}
