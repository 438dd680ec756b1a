package togpu_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

// layerNormProgram is graph.layer_norm with weight and bias over rows of
// cols (rows < 0: a dynamic row count), as the benchmark writes it.
func layerNormProgram(rows, cols int64) string {
	r := fmt.Sprint(rows)
	if rows < 0 {
		r = "?"
	}
	x := fmt.Sprintf("tensor<%sx%dxf32>", r, cols)
	v := fmt.Sprintf("tensor<%dxf32>", cols)
	return fmt.Sprintf(`func.func @main(%%x: %[1]s, %%w: %[2]s, %%b: %[2]s) -> %[1]s {
  %%0 = "graph.layer_norm"(%%x, %%w, %%b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (%[1]s, %[2]s, %[2]s) -> %[1]s
  return %%0 : %[1]s
}`, x, v)
}

// offsetRows draws values of the shape whose mean moves along the row (a
// ramp from 4 to 12 plus uniform noise of ±1): the threads of a row see
// different means, so a wrong merge of their statistics shows.
func offsetRows(t *testing.T, rng *rand.Rand, shape []int64) *interp.Tensor {
	t.Helper()
	cols, n := shape[len(shape)-1], int64(1)
	for _, d := range shape {
		n *= d
	}
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = 4 + 8*float64(int64(i)%cols)/float64(cols) + 2*rng.Float64() - 1
	}
	x, err := interp.FromFloat64s(ir.F32, shape, vs)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// lowerGraph lowers a graph program with the pipeline text, returning the
// gpu-level module.
func lowerGraph(t *testing.T, src, pipeline string) *ir.Operation {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "ln.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatalf("%s: %v", pipeline, err)
	}
	return m
}

// countKernelOps counts the ops of each name inside kernels.
func countKernelOps(m *ir.Operation) map[string]int {
	counts := map[string]int{}
	m.Walk(func(o *ir.Operation) bool {
		if o.ParentOfType(gpu.FuncOp) != nil {
			counts[o.Name()]++
		}
		return true
	})
	return counts
}

// TestRowWelford runs layer norms lowered with and without row-welford in
// the interpreter against the graph program: rows held in registers (the
// merged statistics), rows too long for registers and odd rows (the
// two-pass fallback), one row, and a dynamic row count (two-pass too:
// convert-graph-to-loop then writes the row's loads through broadcast
// selects that differ between the loops).
func TestRowWelford(t *testing.T) {
	cases := []struct {
		rows, cols, dynRows int64 // rows < 0: dynamic, run with dynRows
		opts                string
	}{
		{3, 256, 0, "block=32 rows-per-block=1"},   // 32 threads × 8: one warp, no barrier
		{2, 512, 0, "block=64 rows-per-block=1"},   // 2 warps: the shared-memory merge
		{1, 1024, 0, "block=128 rows-per-block=1"}, // one row, 4 warps
		{5, 128, 0, "block=128"},                   // a warp per row, 4 values a thread
		{2, 2048, 0, "block=32 rows-per-block=1"},  // 64 a thread: not in registers
		{3, 100, 0, "block=64 rows-per-block=1"},   // no vector split: two-pass
		{-1, 256, 1, "block=64 rows-per-block=1"},  // dynamic rows, one of them
		{-1, 256, 7, "block=64 rows-per-block=1"},  // dynamic rows
		{-1, 512, 9, "block=256 rows-per-block=0"}, // dynamic rows, a warp each
		{4, 4096, 0, "block=256 rows-per-block=1"}, // the benchmark's row
	}
	for _, tc := range cases {
		for _, variant := range []string{"row-welford=false", "row-welford=true"} {
			rows := tc.rows
			if rows < 0 {
				rows = tc.dynRows
			}
			name := fmt.Sprintf("%dx%d/dynamic=%v/%s", rows, tc.cols, tc.rows < 0, strings.ReplaceAll(strings.TrimSpace(tc.opts+" "+variant), " ", ","))
			t.Run(name, func(t *testing.T) {
				src := layerNormProgram(tc.rows, tc.cols)
				pipeline := fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{%s %s},canonicalize,cse)", tc.opts, variant)
				m := lowerGraph(t, src, pipeline)
				ctx := dialects.NewContext()
				ref, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "ref.mlir"})
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(uint64(rows), uint64(tc.cols)))
				x := offsetRows(t, rng, []int64{rows, tc.cols})
				w, b := offsetRows(t, rng, []int64{tc.cols}), offsetRows(t, rng, []int64{tc.cols})
				want, err := interp.New(ref).Call("main", x, w, b)
				if err != nil {
					t.Fatal(err)
				}
				args := []interp.Value{interp.BufferFromTensor(x), interp.BufferFromTensor(w), interp.BufferFromTensor(b)}
				got, err := interp.New(m).Call("main", args...)
				if err != nil {
					t.Fatalf("%v\n%s", err, m)
				}
				if err := passtest.Compare(got[0], want[0]); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestRowWelfordBarriers checks the point of row-welford: the benchmark's
// layer norm row (4096 floats, 8 a thread of 512 in registers) crosses the
// block once (one barrier, one shuffle butterfly of two values) instead of
// twice, and loads x, w and b once (8 values a thread each) either way.
func TestRowWelfordBarriers(t *testing.T) {
	for _, tc := range []struct {
		welford                  bool
		barriers, shuffles, load int
	}{
		{false, 2, 10, 3 * 8},
		{true, 1, 10, 3 * 8},
	} {
		m := lowerGraph(t, layerNormProgram(16384, 4096),
			fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{block=256 row-welford=%v row-shuffle-merge=false},canonicalize,cse)", tc.welford))
		c := countKernelOps(m)
		globalLoads := 0
		m.Walk(func(o *ir.Operation) bool {
			if o.Name() == "loop.load" && o.ParentOfType(gpu.FuncOp) != nil && o.Operand(0).Type().(*ir.MemRefType).MemorySpace == nil {
				globalLoads++
			}
			return true
		})
		if c[gpu.BarrierOp] != tc.barriers || c[gpu.ShuffleOp] != tc.shuffles || globalLoads != tc.load {
			t.Errorf("welford=%v: %d barriers, %d shuffles, %d global loads; want %d, %d, %d",
				tc.welford, c[gpu.BarrierOp], c[gpu.ShuffleOp], globalLoads, tc.barriers, tc.shuffles, tc.load)
		}
	}
}
