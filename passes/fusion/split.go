package fusion

import (
	"fmt"
	"slices"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// Splitting reductions (graph-split-reductions).
//
// A kernel of a reduction runs its kept elements in parallel: a thread,
// a warp or a block each (the row mapping). A reduction that keeps few
// elements but folds many, the mean of a loss over every token and class
// ([8192, 50304] → a scalar: 412 million elements), then runs on one
// thread or one block, seconds on a GPU that would read its input in a
// fraction of a millisecond; so does batch norm's mean over N, H and W of
// [N, C, H, W] (C threads), and a bias gradient's sum over the tokens
// (a thread a column: planColumns). Such a reduction becomes two: the first
// folds the innermost part of its axes and keeps at least SplitRows
// elements (rows the kernel runs in parallel), or, with folded axes
// before the trailing run of folded axes, folds that run (N·C rows of
// H·W for batch norm); the second folds the rest.
// The rows are the input's own when an axis boundary gives enough of
// them (the loss: its 8192 rows of 50304 classes, then the 8192 row
// sums); otherwise the folded elements are viewed as [P, Q] rows
// (graph.reshape, an index remapping in the kernel). Half-precision
// sums and means run both halves in float32 and round once at the end,
// as the unsplit reduction accumulates in float32; max and min are exact
// in any order. A sum in two halves adds the same elements in another
// order, as the GPU's tree reductions already do.

// SplitRows is the fewest elements the first half of a split reduction
// keeps: a grid of that many rows fills the device.
const SplitRows = 1024

// SplitMinElements is the fewest elements a reduction folds before it is
// split (and, with folded axes before its trailing run, the fewest in its
// input): a block folds fewer in microseconds.
const SplitMinElements = 1 << 16

// splitMinRowElements is the fewest elements a row of a [P, Q] view
// folds: rows shorter than a warp would waste most of its lanes.
const splitMinRowElements = 32

// splitMinFolded is the fewest elements a reduction with folded axes
// before its trailing run folds per result before it is split: fewer
// make a short loop for the thread of each result.
const splitMinFolded = 1024

// splitMaxRowFactor bounds the rows of a [P, Q] view: at most this many
// times the rows needed.
const splitMaxRowFactor = 16

// SplitColumns is the fewest partial sums the first half of a split
// column reduction computes (planColumns), and the most elements a column
// reduction keeps before it is split: a thread a partial sum, that many
// keep enough loads in flight. Measured on the H200 at 1 << 16: GPT-2's
// c_attn bias gradient split into 73728 partial sums of 256 rows ran at
// 680 GB/s (0.167 ms), 65536 elements a block (togpu.NarrowLaunches).
const SplitColumns = 1 << 18

// splitMinColumnRows is the fewest rows a partial sum of a column split
// adds: a thread adds them (not a warp, as splitMinRowElements assumes of
// a row), and more partial rows fill the device better. GPT-2's
// [8192, 768] sums took 512 partial rows of 16 instead of 256 of 32: the
// first half alone 0.0139 against 0.0158 ms in f32, 0.0094 against 0.0103
// in bf16, with both halves 0.0185 against 0.0199 in f32 (session 17 call
// 1, TestGPUColumnSumSplits, the second half a warp a column).
const splitMinColumnRows = 16

// splitMaxColumnRows bounds the rows a partial sum of a column split
// adds (the runs are shorter): togpu's pointwise mapping runs 4 columns a
// thread only while a block of 256 such threads covers fewer than
// togpu.NarrowPerBlock elements, so runs of 64 rows or more cost the
// first half its vector loads. ResNet-50's batch norms at 56×56 (256
// columns of 200704 rows: 1024 partial rows of 196) ran a column a thread
// with 2-byte loads at 1.1–1.8 TB/s.
const splitMaxColumnRows = 64

func init() {
	passes.Register(&passes.PassInfo{
		Name:    "graph-split-reductions",
		Summary: "Split reductions (and argmaxes) that keep few elements but fold many into two, so that their kernels run in parallel",
		Description: fmt.Sprintf("A reduction (sum, mean, max, min) of a static input that folds its last axis becomes two "+
			"reductions when its kernel would run on too few threads or blocks. With folded axes before the trailing "+
			"run of folded axes (batch norm's statistics over N, H, W of [N, C, H, W]), which run a thread a result, "+
			"when it folds at least %d elements a result and its input has at least %d: the first folds the run "+
			"(viewed as one axis) and the second the earlier axes. Otherwise, when it keeps fewer than %d elements "+
			"and folds at least %d: the first folds the innermost axes and keeps at least %d elements, at an axis "+
			"boundary of the input where one gives enough, else on a [P, Q] reshape of the folded elements; the "+
			"second folds the rest. Halves that qualify are split again. Half-precision sums and means run both in "+
			"float32 and round once. A reduction not split that folds a trailing run of two or more axes and keeps "+
			"fewer than %d elements folds the run viewed as one axis (a reshape), which the row mapping runs a block "+
			"a result rather than a thread. A column reduction (it keeps the last axis and folds the leading ones: a bias "+
			"gradient summed over the tokens), which runs a thread a column, is split when it keeps fewer than %d "+
			"elements and folds at least %d a result: the rows viewed as [P, Q], the first sums Q rows into each of P "+
			"partial rows (at least %d partial sums, each adding fewer than %d rows and at least %d), the second the partials. "+
			"An argmax over a last axis of at least %d elements that keeps fewer than %d "+
			"(a thread a result, looping over the axis) becomes a reduce_max and a reduce_min of the positions where the "+
			"input equals the max (where it is NaN when the max is), two row reductions. "+
			"The result's type does not change; sums add the same elements in another order.",
			splitMinFolded, SplitMinElements, SplitRows, SplitMinElements, SplitRows, SplitRows,
			SplitColumns, splitMinFolded, SplitColumns, splitMaxColumnRows, splitMinColumnRows, splitMinFolded, SplitRows),
		Anchor: funcs.FuncOp,
		After: []passes.Order{
			{Pass: "graph-decompose", Reason: "the reductions of composites exist only once graph-decompose expanded them"},
		},
		New: func(passes.Options) (passes.Pass, error) { return splitPass{}, nil },
	})
}

type splitPass struct{}

func (splitPass) Name() string { return "graph-split-reductions" }

func (splitPass) Run(op *ir.Operation, st *passes.State) error {
	n, err := SplitReductions(st.Ctx, op)
	st.Stat("num-split", "Number of reductions split in two").Add(int64(n))
	if err == nil && n == 0 {
		st.MarkUnchanged()
	}
	return err
}

// splitKinds are the reductions SplitReductions splits.
var splitKinds = map[string]bool{graph.OpReduceSum: true, graph.OpReduceMean: true, graph.OpReduceMax: true, graph.OpReduceMin: true}

// SplitReductions splits the reductions of fn as graph-split-reductions
// describes and returns how many it rewrote: split (a half that still
// qualifies is split again, and counted) or folded over one axis
// (planFlat).
func SplitReductions(ctx *ir.Context, fn *ir.Operation) (int, error) {
	var work, argmaxes []*ir.Operation
	fn.Walk(func(op *ir.Operation) bool {
		if splitKinds[op.Name()] {
			work = append(work, op)
		}
		if op.Name() == graph.OpArgmax {
			argmaxes = append(argmaxes, op)
		}
		return true
	})
	b := ir.NewBuilder(ctx)
	n := 0
	for _, op := range argmaxes {
		if !planArgmax(op) {
			continue
		}
		max, min, err := rowArgmax(b, op)
		if err != nil {
			return n, err
		}
		n++
		work = append(work, max, min)
	}
	for len(work) > 0 {
		op := work[len(work)-1]
		work = work[:len(work)-1]
		p, ok := planSplit(op)
		if !ok {
			if shape, ok := planFlat(op); ok {
				if err := flatten(b, op, shape); err != nil {
					return n, err
				}
				n++
			}
			continue
		}
		first, second, err := p.rewrite(b, op)
		if err != nil {
			return n, err
		}
		n++
		if !p.last {
			work = append(work, first, second)
		}
	}
	return n, nil
}

// split is the plan of one split: the input viewed as shape (nil: as it
// is), the first half folding axes first of it, the second folding
// axes second of the first's result.
type split struct {
	shape         []int64
	first, second []int64
	// last: the halves are not split again (a column split's second
	// half folds P partial rows chosen to be few).
	last bool
}

// planSplit returns the split of reduction op, or false when it keeps
// enough elements, folds too few, has symbolic sizes or does not fold the
// input's last axis.
func planSplit(op *ir.Operation) (split, bool) {
	in, ok1 := op.Operand(0).Type().(*ir.TensorType)
	out, ok2 := op.Result(0).Type().(*ir.TensorType)
	if !ok1 || !ok2 || !in.Ranked() || !out.Ranked() || ir.NumElements(in.Shape()) < 0 {
		return split{}, false
	}
	shape := in.Shape()
	axes := reducedAxes(op)
	r := len(shape)
	kept, folded := int64(1), int64(1)
	for i, d := range shape {
		if slices.Contains(axes, int64(i)) {
			folded *= d
		} else {
			kept *= d
		}
	}
	if len(axes) == 0 || kept*folded < SplitMinElements {
		return split{}, false
	}
	// t: the start of the trailing run of folded axes.
	t := r
	for t > 0 && slices.Contains(axes, int64(t-1)) {
		t--
	}
	if t == r {
		return planColumns(axes, kept, folded) // the last axis is kept: columns
	}
	// earlier: the folded axes before the run; they keep their numbers.
	earlier := axes[:len(axes)-(r-t)]
	if ir.NumElements(shape[:t]) > kept {
		// Batch norm's statistics over N, H and W of [N, C, H, W]: no row
		// mapping takes them, a thread a result loops over all it folds.
		// The run first (its rows shape[:t], more than kept), then the
		// rest, whatever the number kept.
		if folded < splitMinFolded {
			return split{}, false
		}
		return flatFirst(shape, split{first: span(t, r), second: earlier}), true
	}
	if kept >= SplitRows || folded < SplitMinElements {
		return split{}, false // enough rows for the row mapping, or few elements
	}
	// The folded axes are the run shape[t:] (and earlier ones of size 1,
	// folded by the second half). An axis boundary j: the first half
	// folds shape[j:], keeping shape[:j]; the smallest j with enough rows
	// folds the longest rows.
	for j := t + 1; j < r; j++ {
		if ir.NumElements(shape[:j]) >= SplitRows {
			return flatFirst(shape, split{first: span(j, r), second: append(slices.Clone(earlier), span(t, j)...)}), true
		}
	}
	// Otherwise the folded elements as [p, q]: p the fewest rows that
	// make SplitRows with the kept elements, q a row.
	// The search stops at splitMaxRowFactor times the rows needed: a
	// count with no divisor near it is not split.
	need := (SplitRows + kept - 1) / kept
	for p := need; p <= need*splitMaxRowFactor && p*splitMinRowElements <= folded; p++ {
		if folded%p == 0 {
			view := append(slices.Clone(shape[:t]), p, folded/p)
			return split{shape: view, first: []int64{int64(t + 1)}, second: append(slices.Clone(earlier), int64(t))}, true
		}
	}
	return split{}, false
}

// planColumns returns the split of a column reduction: one that keeps the
// input's last axis and folds its leading axes, such as a bias gradient
// ([8192, 768] summed over GPT-2's tokens into [768]). Its kernel runs a
// thread a kept element, each looping over every row: 768 threads for
// 25 MB took 0.045 ms on the H200, GPT-2's c_attn bias gradient (2304
// columns of 8192 rows, behind the transposes that join q, k and v) 0.5
// ms, twelve of them a training step. When it keeps fewer than
// SplitColumns elements and folds at least splitMinFolded a result, the
// rows are viewed as [P, Q]: the first half sums each run of Q rows into
// one of P partial rows ([P, C], P·C threads, adjacent threads reading
// adjacent columns), the second the P partials. P is the fewest that
// make SplitColumns partial sums and runs of fewer than
// splitMaxColumnRows rows, but runs of at least splitMinColumnRows.
func planColumns(axes []int64, kept, folded int64) (split, bool) {
	for i, a := range axes {
		if a != int64(i) {
			return split{}, false // folded axes between kept ones
		}
	}
	if kept >= SplitColumns || folded < splitMinFolded {
		return split{}, false
	}
	need := max(2, min(max((SplitColumns+kept-1)/kept, folded/splitMaxColumnRows+1), folded/splitMinColumnRows))
	for p := need; p <= need*splitMaxRowFactor && folded/p >= splitMinColumnRows; p++ {
		if folded%p == 0 {
			return split{shape: []int64{p, folded / p, kept}, first: []int64{1}, second: []int64{0}, last: true}, true
		}
	}
	return split{}, false
}

// flatFirst views the trailing axes p.first folds as one (a reshape of
// shape), so that the first half is a row reduction over one axis: the
// row mapping takes one loop over a row, not a nest of them (a thread per
// row would loop over H and W of batch norm's [N·C, H, W] alone).
func flatFirst(shape []int64, p split) split {
	if len(p.first) < 2 {
		return p
	}
	j := int(p.first[0])
	p.shape = append(slices.Clone(shape[:j]), ir.NumElements(shape[j:]))
	p.first = []int64{int64(j)}
	return p
}

// planFlat returns the shape that views the trailing run of axes op
// folds as one axis, when op is not split, folds that run only, of two or
// more axes, and keeps fewer than SplitRows elements: the row mapping
// takes a reduction over one axis (a block a kept element), while a
// reduction over several runs a thread a kept element, looping over all
// it folds (ResNet-50's loss, a sum of [64, 1000] into a scalar: 1.7 ms on
// one thread on the H200).
func planFlat(op *ir.Operation) ([]int64, bool) {
	in, ok := op.Operand(0).Type().(*ir.TensorType)
	if !ok || !in.Ranked() || ir.NumElements(in.Shape()) < 0 {
		return nil, false
	}
	shape, axes := in.Shape(), reducedAxes(op)
	t := len(shape) - len(axes)
	if len(axes) < 2 || ir.NumElements(shape[:t]) >= SplitRows {
		return nil, false
	}
	for i, a := range axes {
		if a != int64(t+i) {
			return nil, false // not a trailing run
		}
	}
	return append(slices.Clone(shape[:t]), ir.NumElements(shape[t:])), true
}

// flatten replaces reduction op by the same reduction of its input
// reshaped to shape, over shape's last axis (planFlat).
func flatten(b *ir.Builder, op *ir.Operation, shape []int64) error {
	loc := op.Loc()
	b.SetInsertionPointBefore(op)
	x := graph.Reshape(b, loc, op.Operand(0), shape)
	y := graph.Reduce(b, op.Name(), loc, x, []int64{int64(len(shape) - 1)}, false)
	want := op.Result(0).Type().(*ir.TensorType)
	if yt, ok := y.Type().(*ir.TensorType); ok && !slices.Equal(yt.Shape(), want.Shape()) {
		y = graph.Reshape(b, loc, y, want.Shape()) // keepdims: the folded axes as 1s
	}
	if y.Type() != op.Result(0).Type() {
		return ir.Errorf(loc, "graph-split-reductions: the flattened %s is %s, not %s", op.Name(), y.Type(), op.Result(0).Type())
	}
	op.Result(0).ReplaceAllUsesWith(y)
	op.Erase()
	return nil
}

// span returns the axes lo, …, hi-1.
func span(lo, hi int) []int64 {
	out := make([]int64, 0, hi-lo)
	for a := lo; a < hi; a++ {
		out = append(out, int64(a))
	}
	return out
}

// rewrite replaces op by the two reductions of p (and the casts and
// reshapes around them) and returns them.
func (p split) rewrite(b *ir.Builder, op *ir.Operation) (first, second *ir.Operation, err error) {
	loc := op.Loc()
	b.SetInsertionPointBefore(op)
	x := op.Operand(0)
	elem := x.Type().(*ir.TensorType).ElementType()
	wide := op.Name() != graph.OpReduceMax && op.Name() != graph.OpReduceMin && (elem == ir.BF16 || elem == ir.F16)
	if wide {
		x = graph.Cast(b, loc, x, ir.F32)
	}
	if p.shape != nil {
		x = graph.Reshape(b, loc, x, p.shape)
	}
	name := op.Name()
	x = graph.Reduce(b, name, loc, x, p.first, false)
	y := graph.Reduce(b, name, loc, x, p.second, false)
	first, second = x.DefiningOp(), y.DefiningOp()
	if wide {
		y = graph.Cast(b, loc, y, elem)
	}
	want := op.Result(0).Type().(*ir.TensorType)
	if yt, ok := y.Type().(*ir.TensorType); ok && !slices.Equal(yt.Shape(), want.Shape()) {
		y = graph.Reshape(b, loc, y, want.Shape()) // keepdims: the folded axes as 1s
	}
	if y.Type() != op.Result(0).Type() {
		return nil, nil, ir.Errorf(loc, "graph-split-reductions: the split %s is %s, not %s", name, y.Type(), op.Result(0).Type())
	}
	op.Result(0).ReplaceAllUsesWith(y)
	op.Erase()
	return first, second, nil
}

// planArgmax reports whether argmax op runs a thread a result over a long
// axis: it keeps fewer than SplitRows elements of a static input and folds
// its last axis of at least splitMinFolded (a greedy decoder's token over
// GPT-2's 50304 logits: 2 ms on one thread of the H200, most of a
// decoding step).
func planArgmax(op *ir.Operation) bool {
	in, ok := op.Operand(0).Type().(*ir.TensorType)
	if !ok || !in.Ranked() || ir.NumElements(in.Shape()) < 0 || len(in.Shape()) == 0 {
		return false
	}
	shape := in.Shape()
	r := len(shape)
	axes := reducedAxes(op)
	if len(axes) != 1 || axes[0] != int64(r-1) {
		return false
	}
	return ir.NumElements(shape[:r-1]) < SplitRows && shape[r-1] >= splitMinFolded && shape[r-1] < 1<<31
}

// rowArgmax replaces argmax op over the last axis by two reductions the
// row mapping runs a block a result: the largest element m (reduce_max,
// which keeps a NaN), then the first position where x equals m (where x is
// NaN when m is: argmax keeps the first NaN), a reduce_min of the
// positions with the axis's length elsewhere. It returns the two.
func rowArgmax(b *ir.Builder, op *ir.Operation) (max, min *ir.Operation, err error) {
	loc := op.Loc()
	b.SetInsertionPointBefore(op)
	x := op.Operand(0)
	in := x.Type().(*ir.TensorType)
	shape := in.Shape()
	axis := int64(len(shape) - 1)
	m := graph.Reduce(b, graph.OpReduceMax, loc, x, []int64{axis}, true)
	max = m.DefiningOp()
	m = graph.BroadcastTo(b, loc, m, shape)
	hit := graph.Cmp(b, loc, "eq", x, m)
	if ir.IsFloat(in.ElementType()) {
		// Where m is NaN, x ≠ x' with x' = x there (0 elsewhere): x's
		// NaNs. Every op depends on m, so that graph-fuse keeps them in
		// the second reduction's kernel: an op of x alone (x ≠ x) would
		// join x's producer as an output of its own (a matmul's: an
		// epilogue kernel and a buffer more).
		nanM := graph.Cmp(b, loc, "ne", m, m)
		zero, err := graph.BuildTyped(b, graph.OpFull, loc, nil, ir.Dict(ir.NamedAttr{Name: "fill", Value: ir.FloatAttr{Bits: 0, Type: in.ElementType().(*ir.FloatType)}}), in)
		if err != nil {
			return nil, nil, err
		}
		nanX := graph.Cmp(b, loc, "ne", x, graph.Select(b, loc, nanM, x, zero))
		hit = graph.Select(b, loc, nanM, nanX, hit)
	}
	// Positions in i32, which the row mapping reduces (its shuffles move
	// 32 bits); an axis this pass takes is far shorter than 2³¹.
	idx := ir.TensorOf(shape, ir.I32)
	pos, err := graph.BuildTyped(b, graph.OpIota, loc, nil, ir.Dict(ir.NamedAttr{Name: "axis", Value: ir.IntegerAttr{Value: axis, Type: ir.I64}}), idx)
	if err != nil {
		return nil, nil, err
	}
	none, err := graph.BuildTyped(b, graph.OpFull, loc, nil, ir.Dict(ir.NamedAttr{Name: "fill", Value: ir.IntegerAttr{Value: shape[axis], Type: ir.I32}}), idx)
	if err != nil {
		return nil, nil, err
	}
	y := graph.Reduce(b, graph.OpReduceMin, loc, graph.Select(b, loc, hit, pos, none), []int64{axis}, graph.KeepDims(op))
	min = y.DefiningOp()
	y = graph.Cast(b, loc, y, ir.I64)
	if y.Type() != op.Result(0).Type() {
		return nil, nil, ir.Errorf(loc, "graph-split-reductions: the argmax in rows is %s, not %s", y.Type(), op.Result(0).Type())
	}
	op.Result(0).ReplaceAllUsesWith(y)
	op.Erase()
	return max, min, nil
}
