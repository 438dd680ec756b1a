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
