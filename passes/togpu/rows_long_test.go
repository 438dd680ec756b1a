package togpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
)

// TestLongRowsTakeLongRowBlock lowers GPT-2's loss rows in small (a
// logsumexp and a picked sum over rows just longer than LongRow, one row
// kernel since the row limit covers them): the row kernel runs
// LongRowBlock threads a row, and matches the interpreter.
func TestLongRowsTakeLongRowBlock(t *testing.T) {
	const n = togpu.LongRow + 40
	src := strings.ReplaceAll(`func.func @main(%x: tensor<2xNxbf16>, %h: tensor<2xNxf32>) -> tensor<2xf32> {
  %0 = "graph.cast"(%x) : (tensor<2xNxbf16>) -> tensor<2xNxf32>
  %1 = "graph.logsumexp"(%0) <{axis = 1 : i64}> : (tensor<2xNxf32>) -> tensor<2xf32>
  %2 = "graph.mul"(%0, %h) : (tensor<2xNxf32>, tensor<2xNxf32>) -> tensor<2xNxf32>
  %3 = "graph.reduce_sum"(%2) <{axes = [1], keepdims = false}> : (tensor<2xNxf32>) -> tensor<2xf32>
  %4 = "graph.sub"(%1, %3) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %4 : tensor<2xf32>
}`, "N", fmt.Sprint(n))
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "rows.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-gpu)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	rows := 0
	m.Walk(func(op *ir.Operation) bool {
		d, ok := op.Attr(togpu.LaunchAttr).(ir.DictAttr)
		if !ok || d.Get("mapping").(ir.StringAttr).Value != togpu.MappingRow {
			return true
		}
		rows++
		if b := d.Get("block").(ir.IntegerAttr).Value; b != togpu.LongRowBlock {
			t.Errorf("a row kernel over rows of %d runs %d threads, want %d", n, b, togpu.LongRowBlock)
		}
		return true
	})
	if rows != 1 {
		t.Errorf("%d row kernels, want 1 (max, Σexp and the picked sum in one)\n%s", rows, m)
	}
	checkAgainstGraphTol(t, "long rows", src, m, 1e-5)
}
