package fusion_test

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

// splitRun parses src and returns it before and after
// graph-split-reductions.
func splitRun(t passtest.TB, src string) (before, after *ir.Operation) {
	t.Helper()
	return passtest.Run(t, src, "builtin.module()"), passtest.Run(t, src, "builtin.module(func.func(graph-split-reductions))")
}

// reductions lists the reductions of m as "name axes → result type".
func reductions(m *ir.Operation) []string {
	var out []string
	m.Walk(func(op *ir.Operation) bool {
		if strings.HasPrefix(op.Name(), "graph.reduce_") {
			out = append(out, fmt.Sprintf("%s %v -> %s", strings.TrimPrefix(op.Name(), "graph."), op.Attr("axes"), op.Result(0).Type()))
		}
		return true
	})
	return out
}

// TestSplitReductionsPlans checks where graph-split-reductions splits: at
// the input's own axis boundary when one keeps SplitRows rows (the loss
// of a language model: every token's row of classes first), on a [P, Q]
// view of the folded elements otherwise, column reductions (bias
// gradients, channels-last statistics) on a [P, Q, C] view, and not at
// all when the reduction keeps enough elements or folds few.
func TestSplitReductionsPlans(t *testing.T) {
	for _, c := range []struct {
		name, in, attrs, out string
		want                 []string
	}{
		{"loss", "tensor<8192x50304xf32>", "", "tensor<f32>", []string{
			"reduce_sum [1] -> tensor<8192xf32>", "reduce_sum [0] -> tensor<f32>"}},
		{"tokens", "tensor<8x1024x64xf32>", "", "tensor<f32>", []string{ // the row sums folded as one axis
			"reduce_sum [2] -> tensor<8x1024xf32>", "reduce_sum [0] -> tensor<f32>"}},
		{"flat", "tensor<1048576xf32>", "", "tensor<f32>", []string{
			"reduce_sum [1] -> tensor<1024xf32>", "reduce_sum [0] -> tensor<f32>"}},
		{"two rows", "tensor<2x65536xf32>", "<{axes = [1], keepdims = true}>", "tensor<2x1xf32>", []string{
			"reduce_sum [2] -> tensor<2x512xf32>", "reduce_sum [1] -> tensor<2xf32>"}},
		{"enough rows", "tensor<1024x4096xf32>", "<{axes = [1]}>", "tensor<1024xf32>", []string{
			"reduce_sum [1] -> tensor<1024xf32>"}},
		{"small", "tensor<64x64xf32>", "", "tensor<f32>", []string{
			"reduce_sum [0] -> tensor<f32>"}}, // over one axis of 4096: a block, not a thread
		{"cnn loss", "tensor<64x1000xf32>", "", "tensor<f32>", []string{
			"reduce_sum [0] -> tensor<f32>"}},
		{"small, kept", "tensor<4x8x8xf32>", "<{axes = [1, 2], keepdims = true}>", "tensor<4x1x1xf32>", []string{
			"reduce_sum [1] -> tensor<4xf32>"}},
		{"small, enough rows", "tensor<1024x7x7xf32>", "<{axes = [1, 2]}>", "tensor<1024xf32>", []string{
			"reduce_sum [1, 2] -> tensor<1024xf32>"}},
		{"small, leading", "tensor<8x4x8xf32>", "<{axes = [0, 2]}>", "tensor<4xf32>", []string{
			"reduce_sum [0, 2] -> tensor<4xf32>"}},
		{"columns", "tensor<65536x4xf32>", "<{axes = [0]}>", "tensor<4xf32>", []string{ // runs of 16
			"reduce_sum [1] -> tensor<4096x4xf32>", "reduce_sum [0] -> tensor<4xf32>"}},
		{"bias gradient", "tensor<8192x768xf32>", "<{axes = [0]}>", "tensor<768xf32>", []string{ // runs of 16
			"reduce_sum [1] -> tensor<512x768xf32>", "reduce_sum [0] -> tensor<768xf32>"}},
		{"bias gradient, kept", "tensor<8x1024x2304xf32>", "<{axes = [0, 1], keepdims = true}>", "tensor<1x1x2304xf32>", []string{
			"reduce_sum [1] -> tensor<256x2304xf32>", "reduce_sum [0] -> tensor<2304xf32>"}}, // runs of 32 rows, not 64
		{"columns, few rows", "tensor<512x768xf32>", "<{axes = [0]}>", "tensor<768xf32>", []string{
			"reduce_sum [0] -> tensor<768xf32>"}},
		{"columns, many", "tensor<64x262144xf32>", "<{axes = [0]}>", "tensor<262144xf32>", []string{
			"reduce_sum [0] -> tensor<262144xf32>"}},
		{"columns between", "tensor<1024x4x1024xf32>", "<{axes = [0, 2]}>", "tensor<4xf32>", []string{
			"reduce_sum [2] -> tensor<1024x4xf32>", "reduce_sum [0] -> tensor<4xf32>"}},
		{"batch norm", "tensor<64x64x112x112xf32>", "<{axes = [0, 2, 3], keepdims = true}>", "tensor<1x64x1x1xf32>", []string{
			"reduce_sum [2] -> tensor<64x64xf32>", "reduce_sum [0] -> tensor<64xf32>"}},
		{"batch norm, large images", "tensor<1x64x512x512xf32>", "<{axes = [0, 2, 3]}>", "tensor<64xf32>", []string{
			"reduce_sum [3] -> tensor<1x64x512xf32>", "reduce_sum [0, 2] -> tensor<64xf32>"}},
		{"batch norm, many channels", "tensor<64x2048x7x7xf32>", "<{axes = [0, 2, 3]}>", "tensor<2048xf32>", []string{
			"reduce_sum [2] -> tensor<64x2048xf32>", "reduce_sum [0] -> tensor<2048xf32>"}},
		{"batch norm, small images", "tensor<64x512x2x2xf32>", "<{axes = [0, 2, 3]}>", "tensor<512xf32>", []string{
			"reduce_sum [0, 2, 3] -> tensor<512xf32>"}},
		{"channels last", "tensor<64x56x56x64xf32>", "<{axes = [0, 1, 2]}>", "tensor<64xf32>", []string{
			"reduce_sum [1] -> tensor<4096x64xf32>", "reduce_sum [0] -> tensor<64xf32>"}},
		// 1024 partial rows would make 2^18 sums, but of runs of 196 rows:
		// runs of fewer than 64 (56).
		{"channels last, 256 channels", "tensor<64x56x56x256xf32>", "<{axes = [0, 1, 2]}>", "tensor<256xf32>", []string{
			"reduce_sum [1] -> tensor<3584x256xf32>", "reduce_sum [0] -> tensor<256xf32>"}},
		{"prime", "tensor<65537xf32>", "", "tensor<f32>", []string{
			"reduce_sum <nil> -> tensor<f32>"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf(`func.func @f(%%x: %s) -> %s {
  %%0 = "graph.reduce_sum"(%%x) %s : (%s) -> %s
  return %%0 : %s
}`, c.in, c.out, c.attrs, c.in, c.out, c.out)
			_, after := splitRun(t, src)
			got := reductions(after)
			if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
				t.Errorf("reductions after the pass:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

// oneAxis matches a reductions line folding one axis.
var oneAxis = regexp.MustCompile(`^reduce_[a-z]+ \[\d+\] -> `)

// TestSplitReductionsSemantics checks on random reductions that qualify
// (sum, mean, max, min over a trailing run of axes, f32 and bf16, with
// and without keepdims) that the split computes what the reduction does:
// max and min exactly; sums and means within the rounding of two
// summation orders, 2·n·u·Σ|x| (u the unit roundoff of f32), plus half
// an ulp of the result's type for bf16, which both round once.
func TestSplitReductionsSemantics(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		// A shape and the axes folded: over a trailing run (fewer than
		// SplitRows elements kept, 65536 or more folded) or with folded
		// axes before it (batch norm's statistics: 1024 or more folded a
		// channel).
		c := rapid.SampledFrom([]struct {
			shape []int64
			axes  []int
		}{
			{[]int64{65536}, []int{0}}, {[]int64{262144}, []int{0}}, {[]int64{65537}, []int{0}},
			{[]int64{256, 256}, []int{0, 1}}, {[]int64{48, 2048}, []int{0, 1}}, {[]int64{2, 65536}, []int{1}},
			{[]int64{3, 1024, 64}, []int{1, 2}}, {[]int64{8, 3, 4096}, []int{0, 1, 2}},
			{[]int64{16, 8, 64, 64}, []int{0, 2, 3}}, {[]int64{4, 3, 128, 128}, []int{0, 2, 3}},
			{[]int64{64, 2, 1024}, []int{0, 2}}, {[]int64{1, 4, 512, 128}, []int{0, 2, 3}},
			{[]int64{4, 1100, 16, 16}, []int{0, 2, 3}}, {[]int64{16, 8, 8, 8}, []int{0, 2, 3}},
			{[]int64{64, 1000}, []int{0, 1}}, {[]int64{4, 8, 8}, []int{1, 2}}, // folded as one axis
			{[]int64{2048, 40}, []int{0}}, {[]int64{64, 32, 3, 12}, []int{0, 1}}, // columns
			{[]int64{4096, 17}, []int{0}},
		}).Draw(rt, "case")
		shape, rank := c.shape, len(c.shape)
		n, kept := int64(1), int64(1)
		for i, d := range shape {
			n *= d
			if !slices.Contains(c.axes, i) {
				kept *= d
			}
		}
		kind := rapid.SampledFrom([]string{"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}).Draw(rt, "kind")
		elem := rapid.SampledFrom([]string{"f32", "bf16"}).Draw(rt, "elem")
		keep := rapid.Bool().Draw(rt, "keepdims")
		var axes, outDims []string
		for i, d := range shape {
			switch {
			case slices.Contains(c.axes, i):
				axes = append(axes, fmt.Sprint(i))
				if keep {
					outDims = append(outDims, "1")
				}
			default:
				outDims = append(outDims, fmt.Sprint(d))
			}
		}
		tensor := func(dims []string) string {
			if len(dims) == 0 {
				return "tensor<" + elem + ">"
			}
			return "tensor<" + strings.Join(dims, "x") + "x" + elem + ">"
		}
		inDims := make([]string, rank)
		for i, d := range shape {
			inDims[i] = fmt.Sprint(d)
		}
		in, out := tensor(inDims), tensor(outDims)
		src := fmt.Sprintf(`func.func @f(%%x: %s) -> %s {
  %%0 = "graph.%s"(%%x) <{axes = [%s], keepdims = %v}> : (%s) -> %s
  return %%0 : %s
}`, in, out, kind, strings.Join(axes, ", "), keep, in, out, out)
		before, after := splitRun(rt, src)
		// 65537 (a prime) has no [P, Q] view, and [16, 8, 8, 8] folds 1024
		// elements a channel but has only 8192: those stay whole.
		wantSplit := n/kept != 65537 && n >= 65536
		if got := len(reductions(after)); (got >= 2) != wantSplit {
			rt.Fatalf("%d reductions after the pass (split wanted: %v):\n%s", got, wantSplit, ir.Sprint(after, ir.PrintOptions{}))
		}
		// Not split, a trailing run of axes with few kept: over one axis.
		trailing := c.axes[0] == rank-len(c.axes) && slices.IsSorted(c.axes)
		if rs := reductions(after); !wantSplit && trailing && len(c.axes) >= 2 && kept < 1024 && !oneAxis.MatchString(rs[0]) {
			rt.Fatalf("not folded over one axis: %v", rs)
		}
		seed := rapid.Int64().Draw(rt, "seed")
		want, x := runF(rt, before, seed)
		got, _ := runF(rt, after, seed)
		if !slices.Equal(got.Shape(), want.Shape()) || got.ElemType() != want.ElemType() {
			rt.Fatalf("result %s, want %s", got, want)
		}
		// per and abs: the elements folded into each result and the sum
		// of their magnitudes.
		per := n / kept
		abs := make([]float64, kept)
		for f, v := range x.Float64s() {
			out, rest := int64(0), int64(f)
			for d := rank - 1; d >= 0; d-- {
				if !slices.Contains(c.axes, d) {
					out += rest % shape[d] * keptStride(shape, c.axes, d)
				}
				rest /= shape[d]
			}
			abs[out] += math.Abs(v)
		}
		gs, ws := got.Float64s(), want.Float64s()
		for i := range ws {
			tol := 0.0
			if kind == "reduce_sum" || kind == "reduce_mean" {
				tol = 2 * float64(per) * 0x1p-24 * abs[i]
				if kind == "reduce_mean" {
					tol /= float64(per)
				}
				if elem == "bf16" {
					tol += math.Abs(ws[i]) * 0x1p-8
				}
			}
			if math.Abs(gs[i]-ws[i]) > tol {
				rt.Fatalf("element %d: split %v, unsplit %v (tolerance %g)\n%s", i, gs[i], ws[i], tol, ir.Sprint(after, ir.PrintOptions{}))
			}
		}
	})
}

// runF runs @f of m in the interpreter on the random input of seed and
// returns its result and the input.
func runF(t passtest.TB, m *ir.Operation, seed int64) (*interp.Tensor, *interp.Tensor) {
	t.Helper()
	in := interp.New(m)
	ft, err := interp.FuncType(in.Func("f"))
	if err != nil {
		t.Fatal(err)
	}
	args, err := interp.RandomInputs(ft, seed)
	if err != nil {
		t.Fatal(err)
	}
	res, err := in.Call("f", args...)
	if err != nil {
		t.Fatalf("interpreter: %v", err)
	}
	return res[0].(*interp.Tensor), args[0].(*interp.Tensor)
}

// keptStride is the stride of kept dim d in a reduction's result, the kept
// dims of shape in order (folded: the folded dims).
func keptStride(shape []int64, folded []int, d int) int64 {
	s := int64(1)
	for e := d + 1; e < len(shape); e++ {
		if !slices.Contains(folded, e) {
			s *= shape[e]
		}
	}
	return s
}

// TestSplitArgmax checks graph-split-reductions on argmax: over a long
// last axis with few rows it becomes a reduce_max and a reduce_min of the
// positions (two row reductions), which compute what argmax does on
// inputs drawn from a few values (ties: the first largest wins), with
// NaNs (the first NaN wins), infinities and signed zeros, in f32, bf16
// and i32, with and without keepdims; an argmax over enough rows, a short
// axis or another axis than the last stays.
func TestSplitArgmax(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := rapid.SampledFrom([]struct {
			shape []int64
			axis  int64
			split bool
		}{
			{[]int64{1, 5000}, 1, true}, {[]int64{3, 2048}, -1, true}, {[]int64{1024}, 0, true},
			{[]int64{2, 3, 1500}, 2, true},
			{[]int64{1024, 1024}, 1, false}, {[]int64{4, 1023}, 1, false}, {[]int64{2048, 4}, 0, false},
		}).Draw(rt, "case")
		elem := rapid.SampledFrom([]ir.Type{ir.F32, ir.BF16, ir.I32}).Draw(rt, "elem")
		keep := rapid.Bool().Draw(rt, "keepdims")
		r := len(c.shape)
		axis := (c.axis + int64(r)) % int64(r)
		var outDims, inDims []string
		for i, d := range c.shape {
			inDims = append(inDims, fmt.Sprint(d))
			if int64(i) != axis {
				outDims = append(outDims, fmt.Sprint(d))
			} else if keep {
				outDims = append(outDims, "1")
			}
		}
		in := "tensor<" + strings.Join(inDims, "x") + "x" + elem.String() + ">"
		out := "tensor<i64>"
		if len(outDims) > 0 {
			out = "tensor<" + strings.Join(outDims, "x") + "xi64>"
		}
		src := fmt.Sprintf(`func.func @f(%%x: %s) -> %s {
  %%0 = "graph.argmax"(%%x) <{axis = %d : i64, keepdims = %v}> : (%s) -> %s
  return %%0 : %s
}`, in, out, c.axis, keep, in, out, out)
		before, after := splitRun(rt, src)
		text := ir.Sprint(after, ir.PrintOptions{})
		if split := !strings.Contains(text, "graph.argmax"); split != c.split {
			rt.Fatalf("argmax rewritten: %v, want %v:\n%s", split, c.split, text)
		}
		if c.split && !slices.Equal(reductions(after), []string{
			fmt.Sprintf("reduce_max [%d] -> %s", r-1, strings.Replace(in, fmt.Sprintf("x%dx", c.shape[r-1]), "x1x", 1)),
			fmt.Sprintf("reduce_min [%d] -> %s", r-1, strings.ReplaceAll(out, "i64", "i32"))}) && r > 1 {
			rt.Fatalf("reductions %v", reductions(after))
		}
		// Values from a few, with NaNs, infinities and signed zeros for
		// floats.
		pool := []float64{-2, -1, 0, 1, 3, 3}
		if ir.IsFloat(elem) {
			pool = append(pool, math.Copysign(0, -1), math.Inf(1), math.Inf(-1))
			if rapid.Bool().Draw(rt, "nans") {
				pool = append(pool, math.NaN())
			}
		}
		n := ir.NumElements(c.shape)
		if !c.split {
			return
		}
		vs := make([]float64, n)
		idx := rapid.SliceOfN(rapid.IntRange(0, len(pool)-1), int(n), int(n)).Draw(rt, "values")
		for i, j := range idx {
			vs[i] = pool[j]
		}
		if !c.split {
			return // nothing to compare
		}
		x, err := interp.FromFloat64s(elem, c.shape, vs)
		if !ir.IsFloat(elem) {
			is := make([]int64, n)
			for i, v := range vs {
				is[i] = int64(v)
			}
			x, err = interp.FromInt64s(elem, c.shape, is)
		}
		if err != nil {
			rt.Fatal(err)
		}
		run := func(m *ir.Operation) []int64 {
			res, err := interp.New(m).Call("f", x)
			if err != nil {
				rt.Fatalf("interpreter: %v", err)
			}
			return res[0].(*interp.Tensor).Int64s()
		}
		if got, want := run(after), run(before); !slices.Equal(got, want) {
			rt.Fatalf("argmax in rows %v, argmax %v", got, want)
		}
	})
}
