package togpu_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

// statsProgram is batch norm's statistics over rows of cols bf16 values
// shifted by a per-row k: Σd, Σd² and the max of d, three reductions of
// one row kernel.
func statsProgram(rows, cols int64) string {
	x, f := fmt.Sprintf("tensor<%dx%dxbf16>", rows, cols), fmt.Sprintf("tensor<%dx%dxf32>", rows, cols)
	k, r := fmt.Sprintf("tensor<%dx1xf32>", rows), fmt.Sprintf("tensor<%dxf32>", rows)
	return fmt.Sprintf(`func.func @main(%%x: %[1]s, %%k: %[3]s) -> (%[4]s, %[4]s, %[4]s) {
  %%c = "graph.cast"(%%x) : (%[1]s) -> %[2]s
  %%d = "graph.sub"(%%c, %%k) : (%[2]s, %[3]s) -> %[2]s
  %%s1 = "graph.reduce_sum"(%%d) <{axes = [1], keepdims = false}> : (%[2]s) -> %[4]s
  %%q = "graph.mul"(%%d, %%d) : (%[2]s, %[2]s) -> %[2]s
  %%s2 = "graph.reduce_sum"(%%q) <{axes = [1], keepdims = false}> : (%[2]s) -> %[4]s
  %%m = "graph.reduce_max"(%%d) <{axes = [1], keepdims = false}> : (%[2]s) -> %[4]s
  return %%s1, %%s2, %%m : %[4]s, %[4]s, %[4]s
}`, x, f, k, r)
}

// TestRowLoopsMerged lowers the statistics over rows whose length is not
// a multiple of a vector step of the block (ResNet-50's 49, 196 and 784:
// a loop.for a sum, a scalar load an iteration) and checks that the row
// kernel loads x once an iteration of one loop carrying the three
// reductions, and computes what the graph does.
func TestRowLoopsMerged(t *testing.T) {
	for _, tc := range []struct {
		rows, cols int64
		opts       string
	}{
		{6, 49, ""},  // a warp a row
		{3, 784, ""}, // a block a row
		{4, 100, "block=64 rows-per-block=1"},
		{5, 33, "block=32 rows-per-block=1"},
	} {
		t.Run(fmt.Sprintf("%dx%d/%s", tc.rows, tc.cols, tc.opts), func(t *testing.T) {
			src := statsProgram(tc.rows, tc.cols)
			m := lowerGraph(t, src, fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{%s},canonicalize,cse)", tc.opts))
			loops, loads := 0, 0
			m.Walk(func(op *ir.Operation) bool {
				if op.Name() == gpu.FuncOp {
					op.Walk(func(o *ir.Operation) bool {
						switch o.Name() {
						case loop.ForOp:
							loops++
						case loop.LoadOp:
							if mt, ok := o.Operand(0).Type().(*ir.MemRefType); ok && mt.ElementType() == ir.BF16 {
								loads++
							}
						}
						return true
					})
					return false
				}
				return true
			})
			if loops != 1 || loads != 1 {
				t.Errorf("%d row loops and %d loads of x in the kernel, want 1 and 1:\n%s", loops, loads, ir.Sprint(m, ir.PrintOptions{}))
			}
			ctx := dialects.NewContext()
			ref, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "ref.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(tc.rows), uint64(tc.cols)))
			xs := offsetRows(t, rng, []int64{tc.rows, tc.cols})
			x, err := interp.FromFloat64s(ir.BF16, []int64{tc.rows, tc.cols}, xs.Float64s())
			if err != nil {
				t.Fatal(err)
			}
			k := offsetRows(t, rng, []int64{tc.rows, 1})
			want, err := interp.New(ref).Call("main", x, k)
			if err != nil {
				t.Fatal(err)
			}
			got, err := interp.New(m).Call("main", interp.BufferFromTensor(x), interp.BufferFromTensor(k))
			if err != nil {
				t.Fatalf("%v\n%s", err, m)
			}
			for i := range want {
				if err := passtest.Compare(got[i], want[i]); err != nil {
					t.Errorf("result %d: %v", i, err)
				}
			}
		})
	}
}

// pickProgram is the row part of a cross-entropy's forward pass over rows
// of cols logits: each row's maximum and its logit at the row's label,
// picked by a one-hot mask (labels == classes) summed over the row.
func pickProgram(rows, cols int64, elt string) string {
	x, f := fmt.Sprintf("tensor<%dx%dx%s>", rows, cols, elt), fmt.Sprintf("tensor<%dx%dxf32>", rows, cols)
	l, c, b := fmt.Sprintf("tensor<%dx1xi64>", rows), fmt.Sprintf("tensor<%dxi64>", cols), fmt.Sprintf("tensor<%dx%dxi1>", rows, cols)
	r := fmt.Sprintf("tensor<%dxf32>", rows)
	return fmt.Sprintf(`func.func @main(%%x: %[1]s, %%l: %[3]s, %%c: %[4]s) -> (%[6]s, %[6]s) {
  %%w = "graph.cast"(%%x) : (%[1]s) -> %[2]s
  %%m = "graph.reduce_max"(%%w) <{axes = [1], keepdims = false}> : (%[2]s) -> %[6]s
  %%h = "graph.cmp"(%%l, %%c) {predicate = "eq"} : (%[3]s, %[4]s) -> %[5]s
  %%hf = "graph.cast"(%%h) : (%[5]s) -> %[2]s
  %%p = "graph.mul"(%%w, %%hf) : (%[2]s, %[2]s) -> %[2]s
  %%s = "graph.reduce_sum"(%%p) <{axes = [1], keepdims = false}> : (%[2]s) -> %[6]s
  return %%m, %%s : %[6]s, %[6]s
}`, x, f, l, c, b, r)
}

// TestRowLoopsMergedAcrossLoads checks that a row's maximum and its
// one-hot pick (the label loaded between the two loops) become one loop
// reading the row once, and compute what the graph does.
func TestRowLoopsMergedAcrossLoads(t *testing.T) {
	for _, tc := range []struct {
		rows, cols int64
		elt, opts  string
	}{
		{3, 300, "bf16", ""},                          // a warp a row
		{2, 1000, "bf16", ""},                         // a block a row
		{4, 1000, "f32", "block=64 rows-per-block=1"}, // a block a row
		{5, 96, "f32", "block=32 rows-per-block=1"},   // a warp a row, registers
	} {
		t.Run(fmt.Sprintf("%dx%d%s/%s", tc.rows, tc.cols, tc.elt, tc.opts), func(t *testing.T) {
			src := pickProgram(tc.rows, tc.cols, tc.elt)
			m := lowerGraph(t, src, fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{%s},canonicalize,cse)", tc.opts))
			var kernels, loops, loads int
			m.Walk(func(op *ir.Operation) bool {
				if op.Name() == gpu.FuncOp {
					kernels++
					op.Walk(func(o *ir.Operation) bool {
						switch o.Name() {
						case loop.ForOp:
							loops++
						case loop.LoadOp:
							if o.Operand(0) == op.Region(0).Front().Argument(0) {
								loads++
							}
						}
						return true
					})
					return false
				}
				return true
			})
			if kernels != 1 || loops > 1 || loads != 1 && loops == 1 {
				t.Errorf("%d kernels, %d row loops and %d loads of x, want 1 kernel, at most 1 loop and 1 load in it:\n%s",
					kernels, loops, loads, ir.Sprint(m, ir.PrintOptions{}))
			}
			ctx := dialects.NewContext()
			ref, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "ref.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(tc.rows), uint64(tc.cols)))
			xs := offsetRows(t, rng, []int64{tc.rows, tc.cols})
			elt := ir.Type(ir.F32)
			if tc.elt == "bf16" {
				elt = ir.BF16
			}
			x, err := interp.FromFloat64s(elt, []int64{tc.rows, tc.cols}, xs.Float64s())
			if err != nil {
				t.Fatal(err)
			}
			labels := make([]int64, tc.rows)
			for i := range labels {
				labels[i] = rng.Int64N(tc.cols + 2) // one may pick nothing
			}
			classes := make([]int64, tc.cols)
			for i := range classes {
				classes[i] = int64(i)
			}
			l, err := interp.FromData(ir.I64, []int64{tc.rows, 1}, labels)
			if err != nil {
				t.Fatal(err)
			}
			c, err := interp.FromData(ir.I64, []int64{tc.cols}, classes)
			if err != nil {
				t.Fatal(err)
			}
			want, err := interp.New(ref).Call("main", x, l, c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := interp.New(m).Call("main", interp.BufferFromTensor(x), interp.BufferFromTensor(l), interp.BufferFromTensor(c))
			if err != nil {
				t.Fatalf("%v\n%s", err, m)
			}
			for i := range want {
				if err := passtest.Compare(got[i], want[i]); err != nil {
					t.Errorf("result %d: %v", i, err)
				}
			}
		})
	}
}
