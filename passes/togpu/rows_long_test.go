package togpu_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestLongRowsTakeLongRowBlock lowers GPT-2's loss rows in small (a
// logsumexp and a picked sum over rows longer than LongRow, one row kernel
// since the row limit covers them): the row kernel runs LongRowBlock
// threads a row, and matches the interpreter. Its row loops take vector
// steps (4 elements a thread, the default option) where 4 divides the row
// and a thread's share is too long to unroll, the last step leaving
// threads idle (GPT-2's 50304 columns); a row whose length 4 does not
// divide, or a share short enough to unroll that the block's steps do not
// divide, is read an element at a time; a share of at most RegisterRow
// that the block's vector steps divide is unrolled (no loop).
func TestLongRowsTakeLongRowBlock(t *testing.T) {
	cases := []struct {
		n, step int64 // row length, the row loops' step (vector × threads; 0: unrolled, no loop)
	}{
		{togpu.LongRow + 40, togpu.LongRowBlock},  // 16 a thread: unrolled only without a tail
		{50304, 4 * togpu.LongRowBlock},           // GPT-2's padded vocabulary
		{3*togpu.LongRow + 2, togpu.LongRowBlock}, // 4 does not divide it
		{5 * 4 * togpu.LongRowBlock, 0},           // 20 a thread without a tail: unrolled
	}
	for _, tc := range cases {
		n := tc.n
		src := strings.ReplaceAll(`func.func @main(%x: tensor<2xNxbf16>, %h: tensor<2xNxf32>) -> tensor<2xf32> {
  %0 = "graph.cast"(%x) : (tensor<2xNxbf16>) -> tensor<2xNxf32>
  %1 = "graph.logsumexp"(%0) <{axis = 1 : i64}> : (tensor<2xNxf32>) -> tensor<2xf32>
  %2 = "graph.mul"(%0, %h) : (tensor<2xNxf32>, tensor<2xNxf32>) -> tensor<2xNxf32>
  %3 = "graph.reduce_sum"(%2) <{axes = [1], keepdims = false}> : (tensor<2xNxf32>) -> tensor<2xf32>
  %4 = "graph.sub"(%1, %3) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %4 : tensor<2xf32>
}`, "N", fmt.Sprint(n))
		m := passtest.Run(t, src, "builtin.module(lower-to-gpu)")
		rows := rowKernels(m)
		for _, op := range rows {
			if b := op.Attr(togpu.LaunchAttr).(ir.DictAttr).Get("block").(ir.IntegerAttr).Value; b != togpu.LongRowBlock {
				t.Errorf("n=%d: a row kernel runs %d threads, want %d", n, b, togpu.LongRowBlock)
			}
			if steps := forSteps(op); len(steps) == 0 && tc.step != 0 {
				t.Errorf("n=%d: no row loop in the row kernel\n%s", n, op)
			} else {
				for _, s := range steps {
					if s != tc.step {
						t.Errorf("n=%d: a row loop steps by %d, want %d", n, s, tc.step)
					}
				}
			}
		}
		if len(rows) != 1 {
			t.Errorf("n=%d: %d row kernels, want 1 (max, Σexp and the picked sum in one)\n%s", n, len(rows), m)
		}
		checkAgainstF64(t, fmt.Sprintf("long rows of %d", n), src, m, 2e-5)
	}
}

// rowKernels are the operations of the lowered module m whose launch
// mapping is togpu.MappingRow, in walk order.
func rowKernels(m *ir.Operation) []*ir.Operation {
	var rows []*ir.Operation
	m.Walk(func(op *ir.Operation) bool {
		if d, ok := op.Attr(togpu.LaunchAttr).(ir.DictAttr); ok && d.Get("mapping").(ir.StringAttr).Value == togpu.MappingRow {
			rows = append(rows, op)
		}
		return true
	})
	return rows
}

// checkAgainstF64 runs the lowered m on random inputs and compares its
// results with the interpreter's on src with every f32 made f64 (the inputs
// widened exactly): within rel of its magnitude. The interpreter's own f32
// sums over rows of 50304 run in order and stray 1.4e-4 from the exact
// value on this test's draw, more than the lowered kernel's tree of
// partial sums does.
func checkAgainstF64(t *testing.T, name, src string, m *ir.Operation, rel float64) {
	t.Helper()
	parse := func(src string) (*ir.Operation, *ir.FunctionType) {
		g, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{Filename: "graph.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		ft, err := interp.FuncType(ir.NewSymTable(g).Lookup("main"))
		if err != nil {
			t.Fatal(err)
		}
		return g, ft
	}
	_, ft := parse(src)
	g64, ft64 := parse(strings.ReplaceAll(src, "f32", "f64"))
	args, err := interp.RandomInputs(ft, 11)
	if err != nil {
		t.Fatal(err)
	}
	args64, bufs := make([]interp.Value, len(args)), make([]interp.Value, len(args))
	for i, a := range args {
		x := a.(*interp.Tensor)
		elt := ft64.Inputs[i].(*ir.TensorType).ElementType()
		if args64[i], err = interp.FromFloat64s(elt, x.Shape(), x.Float64s()); err != nil {
			t.Fatal(err)
		}
		bufs[i] = interp.BufferFromTensor(x)
	}
	want, err := interp.New(g64).Call("main", args64...)
	if err != nil {
		t.Fatal(err)
	}
	for r, got := range run(t, m, bufs) {
		w := want[r].(*interp.Tensor).Float64s()
		for i, v := range got.Float64s() {
			if math.Abs(v-w[i]) > rel*math.Abs(w[i]) {
				t.Fatalf("%s: result %d, element %d: %.8g, want %.8g", name, r, i, v, w[i])
			}
		}
	}
}

// forSteps returns the constant steps of the loop.for ops in a kernel
// (-1 for a step that is not a constant).
func forSteps(kernel *ir.Operation) []int64 {
	var out []int64
	kernel.Walk(func(o *ir.Operation) bool {
		if o.Name() != loop.ForOp || !gpu.IsKernel(kernel) {
			return true
		}
		_, _, step := loop.ForBounds(o)
		s := int64(-1)
		if d := step.DefiningOp(); d != nil && d.Name() == arith.OpConstant {
			if a, ok := d.Attr("value").(ir.IntegerAttr); ok {
				s = a.Value
			}
		}
		out = append(out, s)
		return true
	})
	return out
}
