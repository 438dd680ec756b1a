package togpu_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
)

// TestColumnMapping lowers column reductions of fewer than ColumnThreads
// columns (the second half of a split bias gradient: [P, C] summed over
// the P partial rows), a sum of squares and a maximum of each column: with
// C a multiple of 32, at least ColumnBlocks blocks of 32 columns and 256
// to 1024 rows the row kernel takes 32 columns a block, a lane each, its
// 32 warps sharing each column's rows (rows_per_block 32, a block of
// 1024); otherwise a warp (or a block, for long columns) a column as
// before. Each lowering of at most 2^18 elements matches the interpreter
// (an f64 reference).
func TestColumnMapping(t *testing.T) {
	cases := []struct {
		p, c        int64
		rows, block int64 // the row kernel's launch
	}{
		{256, 768, 32, 32 * togpu.ColumnWarps}, // GPT-2's second halves
		{64, 512, 8, 256},                      // fewer than 8 rows a warp: a warp a column
		{256, 256, 8, 256},                     // fewer than 16 blocks of 32
		{256, 40, 8, 256},                      // 32 does not divide the columns
		{1031, 512, 1, 256},                    // more rows than 32 warps of RegisterRow (a prime: not split): a block a column
	}
	for _, tc := range cases {
		src := fmt.Sprintf(`func.func @main(%%x: tensor<%[1]dx%[2]dxf32>) -> (tensor<%[2]dxf32>, tensor<%[2]dxf32>) {
  %%0 = "graph.mul"(%%x, %%x) : (tensor<%[1]dx%[2]dxf32>, tensor<%[1]dx%[2]dxf32>) -> tensor<%[1]dx%[2]dxf32>
  %%1 = "graph.reduce_sum"(%%0) <{axes = [0], keepdims = false}> : (tensor<%[1]dx%[2]dxf32>) -> tensor<%[2]dxf32>
  %%2 = "graph.reduce_max"(%%x) <{axes = [0], keepdims = false}> : (tensor<%[1]dx%[2]dxf32>) -> tensor<%[2]dxf32>
  return %%1, %%2 : tensor<%[2]dxf32>, tensor<%[2]dxf32>
}`, tc.p, tc.c)
		m := passtest.Run(t, src, "builtin.module(lower-to-gpu)")
		rows := rowKernels(m)
		for _, op := range rows {
			d := op.Attr(togpu.LaunchAttr).(ir.DictAttr)
			r, b := d.Get("rows_per_block").(ir.IntegerAttr).Value, d.Get("block").(ir.IntegerAttr).Value
			if r != tc.rows || b != tc.block {
				t.Errorf("[%d, %d]: a row kernel of %d rows a block and %d threads, want %d and %d", tc.p, tc.c, r, b, tc.rows, tc.block)
			}
		}
		if len(rows) == 0 {
			t.Errorf("[%d, %d]: no row kernel\n%s", tc.p, tc.c, m)
		}
		if tc.p*tc.c <= 1<<18 { // (the interpreter is slow on larger ones)
			checkAgainstF64(t, fmt.Sprintf("columns [%d, %d]", tc.p, tc.c), src, m, 1e-5)
		}
	}
}
