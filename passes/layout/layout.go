// Package layout provides the graph-channels-last pass, which stores the
// activations of a function's convolution stacks channels last (NHWC), as
// cuDNN's fastest convolutions and a batch norm's column reductions want
// them, with the transposes only where the stacks meet the rest of the
// graph. Importing the package registers the pass.
//
// The pass assigns a layout rather than pushing transposes around: it
// grows a region from the convolutions it converts, through the ops whose
// meaning does not depend on the order of dimensions once their
// attributes are permuted (elementwise ops on rank-4 and scalar operands,
// pad, slice, reductions), gives every rank-4 value of the region the
// NHWC type, and puts one graph.transpose at each entry into and each exit
// from the region. A function whose region would need more large
// transposes than its convolutions justify is left as it is.
package layout

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// PassName is the pass's registered name.
const PassName = "graph-channels-last"

func init() {
	passes.Register(&passes.PassInfo{
		Name:    PassName,
		Summary: "Store convolution stacks channels last (NHWC)",
		Description: "Converts graph.conv2d ops (by default those of bf16 or f16 with one group, no bias, static shapes " +
			"and the same padding on both sides of a dimension: what cuDNN's channels-last kernels take) to layout " +
			"\"NHWC\", and with them every rank-4 value connected to them through elementwise ops, pad, slice " +
			"and reductions, whose attributes are permuted to match; a graph.transpose stores a value entering " +
			"that region channels last and one reads a value leaving it back. Unstrided, unpadded 1×1 " +
			"convolutions become products [N·H·W, C]·[C, O] (graph.matmul between reshapes). A function is " +
			"converted only when the large tensors (two or more dimensions above 1) transposed at the " +
			"region's boundary number at most 1 + a quarter of its convolutions: the forward graph of a training " +
			"step, which returns every saved activation, stays NCHW when converted alone (a training step on " +
			"the GPU backend converts the function it differentiates instead, and the backward follows). A strided convolution of " +
			"fewer than 8 channels (a stem) becomes an unstrided one on its input's pixel blocks stacked as channels (space-to-depth). " +
			"The results are the same (the convolutions sum in the same order, but space-to-depth's, which sums the same products " +
			"in another); graph-decompose should run first.",
		Anchor: passes.AnyOp,
		Options: []passes.OptionDef{
			{Name: "all-convs", Type: passes.Bool, Default: false,
				Doc: "convert every static rank-4 convolution, of any element type, groups and padding"},
			{Name: "always", Type: passes.Bool, Default: false,
				Doc: "convert a function whatever its boundary costs"},
			{Name: "matmul-1x1", Type: passes.Bool, Default: true,
				Doc: "compute unstrided, unpadded 1×1 convolutions of one group as products [N·H·W, C]·[C, O]"},
			{Name: "pad-channels", Type: passes.Int, Default: int64(4),
				Doc: "pad a one-group convolution's input channels with zeros (input and weight) to this many when it has fewer, as a 3-channel stem (0: never)"},
			{Name: "space-to-depth", Type: passes.Bool, Default: true,
				Doc: "compute a strided one-group convolution of fewer than 8 input channels (a stem) as an unstrided, unpadded one on its input's stride×stride pixel blocks stacked as channels (padded to a multiple of 8 unless pad-channels is 0)"},
		},
		New: func(o passes.Options) (passes.Pass, error) {
			if o.Int("pad-channels") < 0 {
				return nil, fmt.Errorf("%s: pad-channels must be at least 0", PassName)
			}
			return &pass{allConvs: o.Bool("all-convs"), always: o.Bool("always"), matmul: o.Bool("matmul-1x1"), padTo: o.Int("pad-channels"),
				spaceToDepth: o.Bool("space-to-depth")}, nil
		},
	})
}

type pass struct {
	allConvs, always, matmul, spaceToDepth bool
	padTo                                  int64
}

func (*pass) Name() string { return PassName }

// Run converts each function nested in op.
func (p *pass) Run(op *ir.Operation, st *passes.State) error {
	var blocks []*ir.Block
	op.Walk(func(o *ir.Operation) bool {
		if o.Name() == "func.func" && o.NumRegions() == 1 && o.Region(0).Front() != nil {
			blocks = append(blocks, o.Region(0).Front())
		}
		return true
	})
	convs := st.Stat("convs", "convolutions made channels last")
	mms := st.Stat("matmuls", "1×1 convolutions made products")
	changed := false
	for _, blk := range blocks {
		r := p.plan(blk)
		if r == nil {
			continue
		}
		c, m := r.rewrite(st.Ctx, p)
		convs.Add(int64(c))
		mms.Add(int64(m))
		changed = true
	}
	if !changed {
		st.MarkUnchanged()
	}
	return nil
}

// nhwc is the permutation that stores an NCHW tensor channels last, nchw
// its inverse.
var nhwc, nchw = graph.NHWCOfNCHW, graph.NCHWOfNHWC

// region is one function's set of values to store channels last and the
// ops that compute on them.
type region struct {
	blk    *ir.Block
	values map[*ir.Value]bool
	ops    map[*ir.Operation]bool
	convs  []*ir.Operation
}

// plan finds blk's region, or nil when it has no convolution to convert
// or its boundary costs too much.
func (p *pass) plan(blk *ir.Block) *region {
	r := &region{blk: blk, values: map[*ir.Value]bool{}, ops: map[*ir.Operation]bool{}}
	var work []*ir.Value
	add := func(v *ir.Value) {
		if !r.values[v] {
			r.values[v] = true
			work = append(work, v)
		}
	}
	// join adds op to the region with its rank-4 operands and results,
	// when its meaning survives the permutation.
	join := func(op *ir.Operation) {
		if r.ops[op] || !joinable(op) {
			return
		}
		r.ops[op] = true
		for _, v := range op.Operands() {
			if rank(v) == 4 {
				add(v)
			}
		}
		for _, v := range op.Results() {
			if rank(v) == 4 {
				add(v)
			}
		}
	}
	for _, op := range blk.Ops() {
		if p.convertible(op) {
			r.ops[op] = true
			r.convs = append(r.convs, op)
			add(op.Operand(0))
			add(op.Result(0))
		}
	}
	if len(r.convs) == 0 {
		return nil
	}
	for len(work) > 0 {
		v := work[len(work)-1]
		work = work[:len(work)-1]
		if d := v.DefiningOp(); d != nil && d.Block() == blk {
			join(d)
		}
		for _, u := range v.Users() {
			if u.Block() == blk {
				join(u)
			}
		}
	}
	if !p.always && r.largeBoundaries() > 1+len(r.convs)/4 {
		return nil
	}
	return r
}

// convertible reports whether the pass converts the convolution op.
func (p *pass) convertible(op *ir.Operation) bool {
	if op.Name() != graph.OpConv2D || op.NumResults() != 1 {
		return false
	}
	prm, err := graph.Conv2DParamsOf(op)
	if err != nil || prm.ChannelsLast {
		return false
	}
	for _, v := range []*ir.Value{op.Operand(0), op.Operand(1), op.Result(0)} {
		s, ok := staticShape(v)
		if !ok || len(s) != 4 {
			return false
		}
	}
	if p.allConvs {
		return true
	}
	// A bias is added to the f32 sum before the one rounding, which
	// cuDNN's convolution does not do: a biased convolution stays NCHW,
	// on Strata's implicit GEMM (channels last it would be a SIMT nest).
	e := ir.ElementTypeOf(op.Result(0).Type())
	return (e == ir.BF16 || e == ir.F16) && prm.Groups == 1 && op.NumOperands() == 2 &&
		prm.Padding[0] == prm.Padding[2] && prm.Padding[1] == prm.Padding[3]
}

// reductions are the reductions whose axes the pass permutes.
var reductions = []string{graph.OpReduceSum, graph.OpReduceMean, graph.OpReduceMax, graph.OpReduceMin}

// joinable reports whether op computes the same on operands stored
// channels last, its attributes permuted: an elementwise op whose
// operands are all rank 4 or scalars, a pad or slice of rank 4, or a
// reduction of a rank-4 operand that keeps its dims or whose kept dims
// keep their order.
func joinable(op *ir.Operation) bool {
	if op.NumResults() != 1 || op.NumRegions() > 0 {
		return false
	}
	name := op.Name()
	switch {
	case name == graph.OpPad || name == graph.OpSlice:
		return rank(op.Operand(0)) == 4 && rank(op.Result(0)) == 4
	case slices.Contains(reductions, name):
		if rank(op.Operand(0)) != 4 {
			return false
		}
		axes, ok := reduceAxes(op)
		if !ok {
			return false
		}
		if keep, _ := op.Attr("keepdims").(ir.IntegerAttr); keep.Value != 0 {
			return true
		}
		// The kept dims, in NCHW order, must be in the same order stored
		// channels last: then the result is the same tensor.
		last := -1
		for _, d := range nhwc {
			if !slices.Contains(axes, d) {
				if int(d) < last {
					return false
				}
				last = int(d)
			}
		}
		return true
	case name == graph.OpConcat || name == graph.OpGather:
		return false
	case graph.ClassOf(name) == graph.ClassPointwise:
		for _, v := range append(op.Operands(), op.Result(0)) {
			if r := rank(v); r != 4 && r != 0 {
				return false
			}
		}
		return rank(op.Result(0)) == 4
	}
	return false
}

// reduceAxes returns a reduction's axes, normalized to 0…3 (all four
// when absent).
func reduceAxes(op *ir.Operation) ([]int64, bool) {
	a := op.Attr("axes")
	if a == nil {
		return []int64{0, 1, 2, 3}, true
	}
	axes, ok := graph.IntList(a)
	if !ok {
		return nil, false
	}
	out := make([]int64, len(axes))
	for i, x := range axes {
		if x < 0 {
			x += 4
		}
		if x < 0 || x > 3 {
			return nil, false
		}
		out[i] = x
	}
	return out, true
}

// largeBoundaries counts the large values the region transposes: those
// entering it (read by its ops, computed outside) and those leaving it
// (read outside), convolution weights aside.
func (r *region) largeBoundaries() int {
	n := 0
	for v := range r.values {
		if !large(v) {
			continue
		}
		if d := v.DefiningOp(); d == nil || !r.ops[d] {
			n++
			continue
		}
		if slices.ContainsFunc(v.Users(), func(u *ir.Operation) bool { return !r.ops[u] }) {
			n++
		}
	}
	return n
}

// rewrite converts the region and returns the number of convolutions
// made channels last and of those made products.
func (r *region) rewrite(ctx *ir.Context, p *pass) (convs, mms int) {
	b := ir.NewBuilder(ctx)
	// Exits first, while every value has its NCHW type: the uses outside
	// the region read a transpose back.
	for _, op := range r.blk.Ops() {
		for _, v := range op.Results() {
			if r.values[v] && r.ops[op] {
				r.exit(b, v)
			}
		}
	}
	// Entries: block arguments and values computed outside.
	entries := map[*ir.Value]*ir.Value{}
	entry := func(v *ir.Value) *ir.Value {
		if t, ok := entries[v]; ok {
			return t
		}
		if d := v.DefiningOp(); d != nil {
			b.SetInsertionPointAfter(d)
		} else {
			b.SetInsertionPointToStart(r.blk)
		}
		var t *ir.Value
		if s, ok := unitMove(v, nhwc); ok {
			t = graph.Reshape(b, v.Loc(), v, s)
		} else {
			t = graph.Transpose(b, v.Loc(), v, nhwc)
		}
		entries[v] = t
		return t
	}
	// A weight of the region is stored [O, KH, KW, C] already.
	weightNHWC := map[*ir.Operation]bool{}
	for _, op := range r.convs {
		weightNHWC[op] = r.values[op.Operand(1)]
	}
	for _, op := range r.blk.Ops() {
		if !r.ops[op] {
			continue
		}
		for i, v := range op.Operands() {
			if r.values[v] && (v.DefiningOp() == nil || !r.ops[v.DefiningOp()]) {
				op.SetOperand(i, entry(v))
			}
		}
	}
	for _, op := range r.blk.Ops() {
		if !r.ops[op] {
			continue
		}
		switch name := op.Name(); {
		case name == graph.OpConv2D:
			if p.matmul && r.asMatmul(b, op) {
				mms++
				continue
			}
			if w := op.Operand(1); !weightNHWC[op] {
				b.SetInsertionPointBefore(op)
				// A 1×1 window's [O, C, 1, 1] holds the elements of
				// [O, 1, 1, C] in their order: a reshape, no copy.
				if ws, ok := staticShape(w); ok && len(ws) == 4 && ws[2] == 1 && ws[3] == 1 {
					op.SetOperand(1, graph.Reshape(b, op.Loc(), w, []int64{ws[0], 1, 1, ws[1]}))
				} else {
					op.SetOperand(1, graph.Transpose(b, op.Loc(), w, nhwc))
				}
			}
			if !p.spaceToDepth || !spaceToDepth(b, op, p.padTo > 0) {
				padChannels(b, op, p.padTo)
			}
			op.SetProperty("layout", ir.StringAttr{Value: graph.LayoutNHWC})
			convs++
		case name == graph.OpPad:
			permuteInts(op, "low", "high")
		case name == graph.OpSlice:
			permuteInts(op, "starts", "limits", "strides")
		case slices.Contains(reductions, name):
			axes, _ := reduceAxes(op)
			for i, a := range axes {
				axes[i] = nchw[a] // the position of NCHW dim a stored channels last
			}
			slices.Sort(axes)
			op.SetProperty("axes", graph.Ints(axes...))
		}
		for _, v := range op.Results() {
			if r.values[v] {
				v.SetType(permuted(v.Type()))
			}
		}
	}
	return convs, mms
}

// exit makes the uses of v outside the region read transpose(v) back to
// NCHW, built after v's definition.
func (r *region) exit(b *ir.Builder, v *ir.Value) {
	var outside []*ir.OpOperand
	for u := range v.Uses() {
		if !r.ops[u.Owner()] {
			outside = append(outside, u)
		}
	}
	if len(outside) == 0 {
		return
	}
	b.SetInsertionPointAfter(v.DefiningOp())
	// Built on v's NCHW type: a transpose by nhwc, whose type the
	// rewrite then makes right by giving v the permuted type. The perm
	// that reads the stored tensor back is nchw.
	// When only unit dims move, the elements keep their order: a
	// reshape (a view) to v's NCHW shape reads it back.
	op, attr := graph.OpTranspose, ir.NamedAttr{Name: "perm", Value: graph.Ints(nchw...)}
	if _, ok := unitMove(v, nhwc); ok {
		op, attr = graph.OpReshape, ir.NamedAttr{Name: "shape", Value: graph.Ints(v.Type().(*ir.TensorType).Shape()...)}
	}
	back := b.Op(op, v.Loc(), []*ir.Value{v}, []ir.Type{v.Type()}, attr)
	for _, u := range outside {
		u.Set(back.Result(0))
	}
}

// asMatmul rewrites a channels-last 1×1 convolution of one group without
// stride, padding or bias before it as [N·H·W, C]·[C, O] and reports
// whether it did. The operand is already channels last; the result takes
// the convolution's place.
func (r *region) asMatmul(b *ir.Builder, op *ir.Operation) bool {
	prm, _ := graph.Conv2DParamsOf(op)
	// x, computed before op, is channels last by now: [N, H, W, C]. The
	// weight [O, C, 1, 1] (or [O, 1, 1, C], the same elements) is [O, C].
	x, w := op.Operand(0), op.Operand(1)
	xs, okx := staticShape(x)
	ws, okw := staticShape(w)
	// (convertible admits static rank-4 operands only; checked again
	// here so that a caller that does not cannot index a nil shape.)
	if !okx || !okw || len(xs) != 4 || len(ws) != 4 || ws[2] != 1 || ws[3] != 1 || prm.Groups != 1 || prm.Strides != [2]int64{1, 1} || prm.Padding != [4]int64{} || op.NumOperands() != 2 {
		return false
	}
	n, h, wd, c, o := xs[0], xs[1], xs[2], xs[3], ws[0]
	loc := op.Loc()
	b.SetInsertionPointBefore(op)
	xm := graph.Reshape(b, loc, x, []int64{n * h * wd, c})
	wm := graph.Transpose(b, loc, graph.Reshape(b, loc, w, []int64{o, c}), []int64{1, 0})
	y := graph.Matmul(b, loc, xm, wm)
	out := graph.Reshape(b, loc, y, []int64{n, h, wd, o})
	// The result keeps its NCHW type for the loop in rewrite to permute:
	// out stands for it, already channels last.
	res := op.Result(0)
	res.ReplaceAllUsesWith(out)
	delete(r.values, res)
	op.Erase()
	return true
}

// padChannels pads the input channels of op, a one-group convolution
// whose operands are channels last by now, with zeros to padTo when it
// has fewer: cuDNN's channels-last kernels read the channels of a pixel
// as vectors, and a 3-channel stem's 6-byte pixels fit none. The zeros
// add nothing to the sums (nor change their order: the interpreter's
// sum over the padded channels only adds +0 terms after the others).
func padChannels(b *ir.Builder, op *ir.Operation, padTo int64) {
	prm, _ := graph.Conv2DParamsOf(op)
	xs, okx := staticShape(op.Operand(0))
	ws, okw := staticShape(op.Operand(1))
	if !okx || !okw || len(xs) != 4 || len(ws) != 4 || prm.Groups != 1 || xs[3] >= padTo {
		return
	}
	b.SetInsertionPointBefore(op)
	ft, ok := ir.ElementTypeOf(op.Operand(0).Type()).(*ir.FloatType)
	if !ok {
		return // integer convolutions are not the library's
	}
	for i, s := range [][]int64{xs, ws} {
		op.SetOperand(i, padLast(b, op.Loc(), op.Operand(i), s, padTo-xs[3], ir.FloatAttr{Type: ft}))
	}
}

// spaceToDepth rewrites op, a channels-last convolution of one group
// with strides (sh, sw) not both 1, a window larger than them, no
// dilation or bias and fewer than 8 input channels (a stem: cuDNN runs
// ResNet's 7×7/2 convolution on 4 channels at a tenth of its rate on 64),
// as the unstrided, unpadded convolution of the same output
//
//	y[n, i, j, o] = Σ z[n, i+a, j+b, (c, p, q)] · w'[o, a, b, (c, p, q)]
//
// over the input's sh×sw pixel blocks stacked as channels,
// z[n, i, j, (c, p, q)] = x[n, sh·i+p, sw·j+q, c] with whole blocks of
// zeros around, by the window cut the same way after δ zeros before it,
// w'[o, a, b, (c, p, q)] = w[o, sh·a+p-δ, sw·b+q-δ', c] (zero outside),
// where δ = (padding rounded up to whole blocks) - padding. The products
// are the same; their sum runs in another order, over the window's
// zeros too. The blocks' channels are padded with zeros to a multiple of
// 8 when padChannels is set. The input's chain (its entry transpose, the
// blocks, the padding) fuses into one copy, as the pad comes last; a
// block's pixels are innermost, (c, p, q), so that the copy reads a
// row's sw neighbours together (vector 2 from the NCHW image) and the
// padded channels are whole groups of them. It
// reports whether it rewrote op (not when the input has rows past the
// ones the convolution reads).
func spaceToDepth(b *ir.Builder, op *ir.Operation, padChannels bool) bool {
	prm, err := graph.Conv2DParamsOf(op)
	xs, okx := staticShape(op.Operand(0))
	ws, okw := staticShape(op.Operand(1))
	ft, okf := ir.ElementTypeOf(op.Operand(0).Type()).(*ir.FloatType)
	if err != nil || !okx || !okw || !okf || len(xs) != 4 || len(ws) != 4 || op.NumOperands() != 2 || prm.Groups != 1 ||
		prm.Dilations != [2]int64{1, 1} || prm.Strides == [2]int64{1, 1} || xs[3] >= 8 ||
		// A window no larger than its stride reads each pixel once at
		// most: the rewrite would only add zeros.
		(ws[1] <= prm.Strides[0] && ws[2] <= prm.Strides[1]) {
		return false
	}
	// Per spatial dim d: the input's extent rounded up to whole blocks
	// (rows of zeros), the blocks of zeros before and after it, the
	// window's shift δ and its extent in blocks.
	var in, low, high, shift, window [2]int64
	for d := range 2 {
		s, k, lo := prm.Strides[d], ws[1+d], prm.Padding[d]
		out := (xs[1+d]+lo+prm.Padding[2+d]-k)/s + 1
		in[d] = (xs[1+d] + s - 1) / s * s
		low[d] = (lo + s - 1) / s
		shift[d] = low[d]*s - lo
		window[d] = (shift[d] + k + s - 1) / s
		if high[d] = out + window[d] - 1 - low[d] - in[d]/s; high[d] < 0 {
			return false
		}
	}
	sh, sw := prm.Strides[0], prm.Strides[1]
	n, c, o := xs[0], xs[3], ws[0]
	stacked := sh * sw * c
	padded := stacked
	if padChannels {
		padded = (stacked + 7) / 8 * 8
	}
	loc := op.Loc()
	b.SetInsertionPointBefore(op)
	zero := ir.FloatAttr{Type: ft}
	// z: x [N, H, W, C] (with rows of zeros to whole blocks) → [N, H/sh,
	// sh, W/sw, sw, C] → [N, H/sh, W/sw, C, sh, sw], stacked, padded.
	x := pad(b, loc, op.Operand(0), xs, make([]int64, 4), []int64{0, in[0] - xs[1], in[1] - xs[2], 0}, zero)
	x = graph.Reshape(b, loc, x, []int64{n, in[0] / sh, sh, in[1] / sw, sw, c})
	x = graph.Transpose(b, loc, x, []int64{0, 1, 3, 5, 2, 4})
	x = graph.Reshape(b, loc, x, []int64{n, in[0] / sh, in[1] / sw, stacked})
	op.SetOperand(0, pad(b, loc, x, []int64{n, in[0] / sh, in[1] / sw, stacked},
		[]int64{0, low[0], low[1], 0}, []int64{0, high[0], high[1], padded - stacked}, zero))
	// w': w [O, KH, KW, C] shifted by δ in [O, Ah·sh, Aw·sw, C] of zeros,
	// cut as x.
	w := pad(b, loc, op.Operand(1), ws, []int64{0, shift[0], shift[1], 0},
		[]int64{0, window[0]*sh - ws[1] - shift[0], window[1]*sw - ws[2] - shift[1], 0}, zero)
	w = graph.Reshape(b, loc, w, []int64{o, window[0], sh, window[1], sw, c})
	w = graph.Transpose(b, loc, w, []int64{0, 1, 3, 5, 2, 4})
	w = graph.Reshape(b, loc, w, []int64{o, window[0], window[1], stacked})
	op.SetOperand(1, pad(b, loc, w, []int64{o, window[0], window[1], stacked}, make([]int64, 4), []int64{0, 0, 0, padded - stacked}, zero))
	op.SetProperty("strides", graph.Ints(1, 1))
	op.SetProperty("padding", graph.Ints(0, 0))
	return true
}

// pad pads v, of static shape s, with low and high elements value on
// each dim's sides; v itself when there is nothing to add.
func pad(b *ir.Builder, loc ir.Location, v *ir.Value, s, low, high []int64, value ir.Attribute) *ir.Value {
	out := slices.Clone(s)
	none := true
	for i := range s {
		out[i] += low[i] + high[i]
		none = none && low[i] == 0 && high[i] == 0
	}
	if none {
		return v
	}
	return b.Op(graph.OpPad, loc, []*ir.Value{v}, []ir.Type{ir.TensorOf(out, ir.ElementTypeOf(v.Type()))},
		ir.NamedAttr{Name: "low", Value: graph.Ints(low...)}, ir.NamedAttr{Name: "high", Value: graph.Ints(high...)},
		ir.NamedAttr{Name: "value", Value: value}).Result(0)
}

// padLast pads v, of static shape s, in its last dim with n elements
// value after it.
func padLast(b *ir.Builder, loc ir.Location, v *ir.Value, s []int64, n int64, value ir.Attribute) *ir.Value {
	high := make([]int64, len(s))
	high[len(s)-1] = n
	return pad(b, loc, v, s, make([]int64, len(s)), high, value)
}

// permuteInts permutes op's per-dim list attributes names (those present)
// to the channels-last order.
func permuteInts(op *ir.Operation, names ...string) {
	for _, name := range names {
		a := op.Attr(name)
		if a == nil {
			continue
		}
		vs, ok := graph.IntList(a)
		if !ok || len(vs) != 4 {
			continue
		}
		op.SetProperty(name, graph.Ints(vs[nhwc[0]], vs[nhwc[1]], vs[nhwc[2]], vs[nhwc[3]]))
	}
}

// unitMove reports whether perm moves only dims of extent 1 of v (a
// static rank-4 tensor) relative to the others, as storing a batch norm's
// [1, C, 1, 1] channels last does: the elements keep their order, and a
// reshape to the returned shape (v's permuted) is the transpose.
func unitMove(v *ir.Value, perm []int64) ([]int64, bool) {
	s, ok := staticShape(v)
	if !ok || len(s) != len(perm) {
		return nil, false
	}
	out := make([]int64, len(perm))
	last := -1
	for i, p := range perm {
		out[i] = s[p]
		if s[p] != 1 {
			if int(p) < last {
				return nil, false
			}
			last = int(p)
		}
	}
	return out, true
}

// permuted returns a rank-4 tensor type stored channels last.
func permuted(t ir.Type) ir.Type {
	tt := t.(*ir.TensorType)
	s := tt.Shape()
	return ir.TensorOf([]int64{s[nhwc[0]], s[nhwc[1]], s[nhwc[2]], s[nhwc[3]]}, tt.ElementType())
}

// rank is v's rank, or -1 for an unranked or non-tensor value.
func rank(v *ir.Value) int {
	tt, ok := v.Type().(*ir.TensorType)
	if !ok || !tt.Ranked() {
		return -1
	}
	return len(tt.Shape())
}

// staticShape returns v's shape when it is a ranked tensor of static
// shape.
func staticShape(v *ir.Value) ([]int64, bool) {
	tt, ok := v.Type().(*ir.TensorType)
	if !ok || !tt.Ranked() || slices.Contains(tt.Shape(), ir.Dynamic) {
		return nil, false
	}
	return tt.Shape(), true
}

// large reports whether v has two or more dims above 1 (or any not
// static): a batch norm's [1, C, 1, 1] scale is not large.
func large(v *ir.Value) bool {
	tt, ok := v.Type().(*ir.TensorType)
	if !ok || !tt.Ranked() {
		return true
	}
	n := 0
	for _, d := range tt.Shape() {
		if d != 1 {
			n++
		}
	}
	return n >= 2
}
