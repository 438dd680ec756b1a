package exec

import (
	"testing"

	_ "github.com/strata-ir/strata/autodiff" // graph-autodiff
	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	_ "github.com/strata-ir/strata/passes/dataparallel" // graph-data-parallel
	_ "github.com/strata-ir/strata/passes/togpu"        // lower-to-gpu
)

// TestCollectiveJoins lowers a data-parallel training step and checks
// where the plan's stream waits for each bucket's all_reduce: not before
// the backward kernels that follow it (they overlap), and before anything
// reads or frees its buffers, directly or through a loop.view.
func TestCollectiveJoins(t *testing.T) {
	src := `func.func @loss(%w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x4xf32>, %x: tensor<8x16xf32>, %y: tensor<8x4xf32>) -> tensor<f32> {
  %m1 = "graph.matmul"(%x, %w1) : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a1 = "graph.add"(%m1, %b1) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %t1 = "graph.tanh"(%a1) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %m2 = "graph.matmul"(%t1, %w2) : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  %d = "graph.sub"(%m2, %y) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %s = "graph.mul"(%d, %d) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %l = "graph.reduce_mean"(%s) : (tensor<8x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}`
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "mlp.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(graph-autodiff{joint=true wrt=0,1,2},graph-data-parallel{bucket-bytes=600},lower-to-gpu)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	var host *ir.Operation
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() == "func.func" && ir.SymbolName(op) == "loss_joint" {
			host = op
		}
		return true
	})
	if host == nil {
		t.Fatal("no @loss_joint after graph-autodiff{joint=true}")
	}
	ops := host.Region(0).Front().Ops()
	joins := collectiveJoins(host.Region(0).Front())
	at := map[*ir.Operation]int{}
	for j, cs := range joins {
		for _, c := range cs {
			at[c] = j
		}
	}
	// base is the buffer a value views (through any loop.view).
	base := func(v *ir.Value) *ir.Value {
		for d := v.DefiningOp(); d != nil && d.Name() == loop.ViewOp; d = v.DefiningOp() {
			v = d.Operand(0)
		}
		return v
	}
	collectives, overlapped := 0, 0
	for i, op := range ops {
		if op.Name() != loop.CollectiveOp {
			continue
		}
		collectives++
		j, ok := at[op]
		if !ok || j <= i {
			t.Fatalf("collective at op %d joins at %d", i, j)
		}
		src, dst := base(op.Operand(0)), base(op.Operand(1))
		for _, between := range ops[i+1 : j] {
			if between.Name() == loop.ViewOp {
				continue // a view reads no data
			}
			for _, v := range between.Operands() {
				if b := base(v); b == src || b == dst {
					t.Errorf("op %s reads the buffers of the collective at %d before the join at %d", between.Name(), i, j)
				}
			}
			if between.Name() == gpu.LaunchFuncOp {
				overlapped++
			}
		}
	}
	if collectives < 2 || overlapped == 0 {
		t.Errorf("%d collectives, %d kernel launches overlapping them; want several buckets and some overlap", collectives, overlapped)
	}
	t.Logf("%d buckets, %d kernel launches run while one is in flight", collectives, overlapped)
}
