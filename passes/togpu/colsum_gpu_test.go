package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// colSumProgram is a column sum of x [n, c] (elt f32 or bf16, summed in
// f32) into [c] f32: split by graph-split-reductions (p = 0), or written
// split as it splits, [p, n/p, c] summed over the n/p rows of each part,
// then over the p partial rows (transposed: the partials transposed to
// [c, p] first, so that the second half reads each column's partials
// contiguously; first: only the first half, the [p, c] partials).
func colSumProgram(n, c, p int64, elt string, transposed, first bool) string {
	x := fmt.Sprintf("tensor<%dx%dx%s>", n, c, elt)
	xf := fmt.Sprintf("tensor<%dx%dxf32>", n, c)
	out := fmt.Sprintf("tensor<%dxf32>", c)
	if first {
		out = fmt.Sprintf("tensor<%dx%dxf32>", p, c)
	}
	s := fmt.Sprintf("func.func @main(%%x: %s) -> %s {\n", x, out)
	if elt == "f32" {
		s += fmt.Sprintf("  %%xf = \"graph.add\"(%%x, %%x) : (%[1]s, %[1]s) -> %[1]s\n", xf)
	} else {
		s += fmt.Sprintf("  %%xf = \"graph.cast\"(%%x) : (%s) -> %s\n", x, xf)
	}
	if p == 0 {
		s += fmt.Sprintf("  %%r = \"graph.reduce_sum\"(%%xf) <{axes = [0], keepdims = false}> : (%s) -> %s\n", xf, out)
		return s + fmt.Sprintf("  return %%r : %s\n}", out)
	}
	v := fmt.Sprintf("tensor<%dx%dx%dxf32>", p, n/p, c)
	part := fmt.Sprintf("tensor<%dx%dxf32>", p, c)
	s += fmt.Sprintf("  %%v = \"graph.reshape\"(%%xf) <{shape = [%d, %d, %d]}> : (%s) -> %s\n", p, n/p, c, xf, v)
	s += fmt.Sprintf("  %%p = \"graph.reduce_sum\"(%%v) <{axes = [1], keepdims = false}> : (%s) -> %s\n", v, part)
	if first {
		return s + fmt.Sprintf("  return %%p : %s\n}", out)
	}
	if transposed {
		tp := fmt.Sprintf("tensor<%dx%dxf32>", c, p)
		s += fmt.Sprintf("  %%t = \"graph.transpose\"(%%p) <{perm = array<i64: 1, 0>}> : (%s) -> %s\n", part, tp)
		s += fmt.Sprintf("  %%r = \"graph.reduce_sum\"(%%t) <{axes = [1], keepdims = false}> : (%s) -> %s\n", tp, out)
	} else {
		s += fmt.Sprintf("  %%r = \"graph.reduce_sum\"(%%p) <{axes = [0], keepdims = false}> : (%s) -> %s\n", part, out)
	}
	return s + fmt.Sprintf("  return %%r : %s\n}", out)
}

// TestGPUColumnSumSplits (skipped without a GPU) runs GPT-2's column sums
// (a bias or layer-norm parameter gradient: [8192, 768] summed over the
// tokens, f32 as the residual stream's gradient, bf16 as a product's) as
// graph-split-reductions splits them and split by hand into other
// numbers of partial rows (and their first halves alone, the partial
// rows summed on the host), each checked against a float64 sum on the
// host, the second halves under the column mapping and a warp a column.
// With STRATA_ROW_SWEEP=colsum each form is timed as TestGPURowVariants
// times its variants.
func TestGPUColumnSumSplits(t *testing.T) {
	rt := openRuntime(t)
	sweep := os.Getenv("STRATA_ROW_SWEEP") == "colsum"
	const n, c = 8192, 768
	rng := rand.New(rand.NewPCG(5, 6))
	xs := make([]float64, n*c)
	for i := range xs {
		xs[i] = 2*rng.Float64() - 1
	}
	type form struct {
		p                 int64
		transposed, first bool
		opts              string // convert-loop-to-gpu's options ("": the defaults)
	}
	forms := []form{{p: 0}, {p: 1024, transposed: true}, {p: 256, transposed: true}, {p: 512, first: true}, {p: 512, opts: "rows-per-block=8"}}
	if sweep {
		// The second halves under the column mapping (the default) and a
		// warp a column (rows-per-block=8, as before it), and the first
		// halves alone.
		for _, p := range []int64{256, 512, 1024} {
			forms = append(forms, form{p: p}, form{p: p, opts: "rows-per-block=8"})
		}
		for _, p := range []int64{256, 1024, 2048} {
			forms = append(forms, form{p: p, first: true})
		}
	}
	for _, elt := range []string{"f32", "bf16"} {
		et := ir.Type(ir.F32)
		if elt == "bf16" {
			et = ir.BF16
		}
		x, err := interp.FromFloat64s(et, []int64{n, c}, xs)
		if err != nil {
			t.Fatal(err)
		}
		vals := x.Float64s() // rounded to elt
		want, scale := make([]float64, c), make([]float64, c)
		for i, v := range vals {
			if elt == "f32" {
				v *= 2
			}
			want[i%c] += v
			scale[i%c] += math.Abs(v)
		}
		for _, f := range forms {
			name := fmt.Sprintf("%s p=%d transposed=%v first=%v %s", elt, f.p, f.transposed, f.first, f.opts)
			pipeline := "builtin.module(lower-to-gpu)"
			if f.opts != "" {
				pipeline = "builtin.module(lower-to-loop," + togpu.BeforeConversion + "," + togpu.PassName + "{" + f.opts + "}," + togpu.AfterConversion + ")"
			}
			m := lowerGraph(t, colSumProgram(n, c, f.p, elt, f.transposed, f.first), pipeline)
			prog, err := exec.Compile(m, exec.Options{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			args := []interp.Value{interp.BufferFromTensor(x)}
			got, err := prog.Run(rt, "main", args)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			gt, err := got[0].(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			sums := gt.Float64s()
			if f.first { // the partial rows, summed here
				sums = make([]float64, c)
				for i, v := range gt.Float64s() {
					sums[i%c] += v
				}
			}
			for j, g := range sums {
				if !(math.Abs(g-want[j]) <= 1e-6*scale[j]) {
					t.Fatalf("%s: column %d: %g, want %g", name, j, g, want[j])
				}
			}
			if !sweep {
				continue
			}
			var times []float64
			for range 3 {
				ms, err := prog.RunTimed(rt, "main", args, 10, 100)
				if err != nil {
					t.Fatal(err)
				}
				times = append(times, ms)
			}
			slices.Sort(times)
			t.Logf("TIME colsum 8192x768 %-28s %.4f ms (rounds %.4f–%.4f)", name, times[1], times[0], times[2])
		}
	}
}
