package lower_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

// collectiveProgram is a function for n ranks that runs every collective,
// with kernels between them.
func collectiveProgram(n int) string {
	return fmt.Sprintf(`func.func @main(%%x: tensor<%[1]dx3xf32>, %%b: tensor<3xf32>) -> (tensor<%[1]dx3xf32>, tensor<%[2]dx3xf32>, tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %%e = "graph.exp"(%%x) : (tensor<%[1]dx3xf32>) -> tensor<%[1]dx3xf32>
  %%s = "graph.all_reduce"(%%e) <{reduce = "avg"}> : (tensor<%[1]dx3xf32>) -> tensor<%[1]dx3xf32>
  %%t = "graph.tanh"(%%s) : (tensor<%[1]dx3xf32>) -> tensor<%[1]dx3xf32>
  %%g = "graph.all_gather"(%%t) <{axis = 0 : i64}> : (tensor<%[1]dx3xf32>) -> tensor<%[2]dx3xf32>
  %%r = "graph.reduce_scatter"(%%g) <{axis = 0 : i64, reduce = "max"}> : (tensor<%[2]dx3xf32>) -> tensor<%[1]dx3xf32>
  %%r1 = "graph.slice"(%%r) <{starts = [0, 0], limits = [1, 3], strides = [1, 1]}> : (tensor<%[1]dx3xf32>) -> tensor<1x3xf32>
  %%c = "graph.broadcast"(%%b) <{root = 1 : i64}> : (tensor<3xf32>) -> tensor<3xf32>
  %%d = "graph.reduce_to"(%%b) <{root = 0 : i64}> : (tensor<3xf32>) -> tensor<3xf32>
  return %%s, %%g, %%r1, %%c, %%d : tensor<%[1]dx3xf32>, tensor<%[2]dx3xf32>, tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>
}`, n, n*n)
}

// TestCollectivesLower takes a program of every collective through
// lower-to-gpu and runs the launch plan (kernels simulated, collectives as
// host steps) on simulated ranks against the graph program.
func TestCollectivesLower(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d ranks", n), func(t *testing.T) {
			src := collectiveProgram(n)
			p := &passtest.Program{Source: src, Func: "main"}
			m := passtest.Run(t, src, "builtin.module(lower-to-gpu)")
			steps := 0
			m.Walk(func(op *ir.Operation) bool {
				if op.Name() == loop.CollectiveOp {
					steps++
					if op.ParentOp().Name() != "func.func" {
						t.Errorf("loop.collective inside %s, want the host function", op.ParentOp().Name())
					}
				}
				return true
			})
			if steps != 5 {
				t.Errorf("%d loop.collective steps in the launch plan, want 5:\n%s", steps, m)
			}
			orig, err := p.Parse(dialects.NewContext())
			if err != nil {
				t.Fatal(err)
			}
			// The same seeds give the same data as tensors and as buffers.
			inputs := func(m *ir.Operation) [][]interp.Value {
				ft, err := interp.FuncType(interp.New(m).Func("main"))
				if err != nil {
					t.Fatal(err)
				}
				in := make([][]interp.Value, n)
				for r := range n {
					if in[r], err = interp.RandomInputs(ft, int64(r+1)); err != nil {
						t.Fatal(err)
					}
				}
				return in
			}
			want, err := interp.RunRanks(context.Background(), orig, "main", n, inputs(orig))
			if err != nil {
				t.Fatal(err)
			}
			got, err := interp.RunRanks(context.Background(), m, "main", n, inputs(m))
			if err != nil {
				t.Fatalf("running the launch plan: %v", err)
			}
			for r := range n {
				for i := range want[r] {
					if err := passtest.Compare(got[r][i], want[r][i]); err != nil {
						t.Errorf("rank %d, result %d: %v", r, i, err)
					}
				}
			}
		})
	}
	t.Run("dynamic axis", func(t *testing.T) {
		ctx := dialects.NewContext()
		m, err := ir.Parse(ctx, `func.func @main(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %g = "graph.all_gather"(%x) <{axis = 0 : i64}> : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return %g : tensor<?x3xf32>
}`, ir.ParseOptions{Filename: "d.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		pm, _ := passes.Parse("builtin.module(lower-to-gpu)")
		err = pm.Run(ctx, m)
		if err == nil || !strings.Contains(err.Error(), "d.mlir:2:8") || !strings.Contains(err.Error(), "dynamic size along its axis") {
			t.Errorf("lowering an all_gather along a dynamic axis: %v, want a located error", err)
		}
	})
}
