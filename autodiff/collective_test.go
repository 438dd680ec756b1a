package autodiff

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// collectiveCases are the collectives' VJP cases: they run over simulated
// ranks, so they live here rather than in the one-rank cases table
// (TestEveryRuleIsTested counts both).
var collectiveCases = []struct{ name, op, attrs, xs, ys string }{
	{"all_reduce sum", "all_reduce", `reduce = "sum"`, "2x3", "2x3"},
	{"all_reduce avg", "all_reduce", `reduce = "avg"`, "2x3", "2x3"},
	{"all_reduce max", "all_reduce", `reduce = "max"`, "2x3", "2x3"},
	{"all_gather", "all_gather", `axis = 1 : i64`, "2x3", "2x9"},
	{"reduce_scatter sum", "reduce_scatter", `axis = 0 : i64, reduce = "sum"`, "3x2", "1x2"},
	{"reduce_scatter avg", "reduce_scatter", `axis = 1 : i64, reduce = "avg"`, "2x3", "2x1"},
	{"reduce_scatter max", "reduce_scatter", `axis = 1 : i64, reduce = "max"`, "2x3", "2x1"},
	{"broadcast", "broadcast", `root = 2 : i64`, "2x3", "2x3"},
	{"reduce_to", "reduce_to", `root = 1 : i64`, "2x3", "2x3"},
}

// TestCollectiveVJPs checks the gradient of each collective, over simulated
// ranks, against central differences of the loss summed over the ranks:
// f(x, c) = Σ sin(op(x))·c on each rank, with a different c per rank so
// that the cotangents differ across ranks (which tells the sum-over-ranks
// convention from others).
func TestCollectiveVJPs(t *testing.T) {
	const n = 3
	for _, c := range collectiveCases {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf(`func.func @f(%%x: tensor<%[1]sxf64>, %%c: tensor<%[2]sxf64>) -> tensor<f64> {
  %%y = "graph.%[3]s"(%%x) <{%[4]s}> : (tensor<%[1]sxf64>) -> tensor<%[2]sxf64>
  %%s = "graph.sin"(%%y) : (tensor<%[2]sxf64>) -> tensor<%[2]sxf64>
  %%p = "graph.mul"(%%s, %%c) : (tensor<%[2]sxf64>, tensor<%[2]sxf64>) -> tensor<%[2]sxf64>
  %%l = "graph.reduce_sum"(%%p) : (tensor<%[2]sxf64>) -> tensor<f64>
  return %%l : tensor<f64>
}`, c.xs, c.ys, c.op, c.attrs)
			ctx := dialects.NewContext()
			m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "vjp.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			fn := interp.New(m).Func("f")
			if _, err := Grad(ctx, fn, []int{0}); err != nil {
				t.Fatal(err)
			}
			if err := ir.Verify(m); err != nil {
				t.Fatalf("%v\n%s", err, m)
			}
			rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
			ft, _ := interp.FuncType(fn)
			inputs := make([][]interp.Value, n)
			for r := range n {
				for _, ty := range ft.Inputs {
					tt := ty.(*ir.TensorType)
					vs := make([]float64, ir.NumElements(tt.Shape()))
					for i := range vs {
						vs[i] = rng.Float64()*4 - 2
					}
					v, _ := interp.FromFloat64s(ir.F64, tt.Shape(), vs)
					inputs[r] = append(inputs[r], v)
				}
			}
			one, _ := interp.ScalarFloat(ir.F64, 1)
			gradIn := make([][]interp.Value, n)
			for r := range n {
				gradIn[r] = append(append([]interp.Value{}, inputs[r]...), one)
			}
			grads, err := interp.RunRanks(context.Background(), m, "f_grad", n, gradIn)
			if err != nil {
				t.Fatalf("%v\n%s", err, m)
			}
			total := func(in [][]interp.Value) float64 {
				out, err := interp.RunRanks(context.Background(), m, "f", n, in)
				if err != nil {
					t.Fatal(err)
				}
				s := 0.0
				for r := range n {
					s += out[r][0].(*interp.Tensor).Float64s()[0]
				}
				return s
			}
			const h = 1e-6
			for r := range n {
				x := inputs[r][0].(*interp.Tensor)
				got := grads[r][0].(*interp.Tensor).Float64s()
				for i := range x.Len() {
					at := func(d float64) float64 {
						vs := x.Float64s()
						vs[i] += d
						xp, _ := interp.FromFloat64s(ir.F64, x.Shape(), vs)
						in := make([][]interp.Value, n)
						copy(in, inputs)
						in[r] = []interp.Value{xp, inputs[r][1]}
						return total(in)
					}
					want := (at(h) - at(-h)) / (2 * h)
					if math.Abs(got[i]-want) > 1e-6*(1+math.Abs(want)) {
						t.Errorf("rank %d, x[%d]: gradient %g, central difference %g", r, i, got[i], want)
					}
				}
			}
		})
	}
}
