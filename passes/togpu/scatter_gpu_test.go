package togpu_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestGPUScatterAdd runs GPT-2's token-embedding gradient on the device
// (skipped without one): graph.scatter_add of [8192, 768] f32 rows into
// 50304 rows at token ids (a few hundred ids repeated often, one id in
// 64 out of range: just past either end, or ±2⁴⁰), as a zero kernel and
// the atomic scatter kernel. The updates are small integers, so every
// sum is exact whatever order the atomics take: the result must equal
// the sums in index order, out-of-range ids adding nothing. Under
// compute-sanitizer no access is outside a buffer.
func TestGPUScatterAdd(t *testing.T) {
	rt := openRuntime(t)
	const n, rows, d = 8192, 50304, 768
	src := fmt.Sprintf(`func.func @main(%%u: tensor<%dx%dxf32>, %%i: tensor<%dxi64>) -> tensor<%dx%dxf32> {
  %%s = "graph.scatter_add"(%%u, %%i) <{axis = 0 : i64, size = %d : i64}> : (tensor<%dx%dxf32>, tensor<%dxi64>) -> tensor<%dx%dxf32>
  return %%s : tensor<%dx%dxf32>
}`, n, d, n, rows, d, rows, n, d, n, rows, d, rows, d)
	_, p := gpuProgram(t, src, "builtin.module(lower-to-gpu)")
	rng := rand.New(rand.NewPCG(21, 15))
	idx := make([]int64, n)
	for j := range idx {
		switch r := rng.IntN(64); {
		case r == 0:
			idx[j] = []int64{rows, -rows - 1, 1 << 40, -1 << 40}[rng.IntN(4)]
		case r < 32:
			idx[j] = rng.Int64N(300) - 150 // negative ids count from the end
		default:
			idx[j] = rng.Int64N(rows)
		}
	}
	vs := make([]float64, n*d)
	for j := range vs {
		vs[j] = float64(rng.IntN(17) - 8)
	}
	u, err := interp.FromFloat64s(ir.F32, []int64{n, d}, vs)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := interp.FromInt64s(ir.I64, []int64{n}, idx)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, rows*d)
	skipped := 0
	for j, r := range idx {
		if r < -rows || r >= rows {
			skipped++
			continue
		}
		if r < 0 {
			r += rows
		}
		for e := range int64(d) {
			want[r*d+e] += vs[int64(j)*d+e]
		}
	}
	for run := range 2 { // the second run finds the first's sums in a reused buffer
		got, err := p.Run(rt, "main", []interp.Value{u, ids})
		if err != nil {
			t.Fatal(err)
		}
		gt, err := got[0].(*interp.Buffer).Tensor()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range gt.Float64s() {
			if v != want[k] {
				t.Fatalf("run %d: element (%d, %d): %g, want %g", run, k/d, k%d, v, want[k])
			}
		}
	}
	t.Logf("%d of %d ids out of range", skipped, n)
}
