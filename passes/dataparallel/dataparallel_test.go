package dataparallel_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	_ "github.com/strata-ir/strata/autodiff" // graph-autodiff
	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/dataparallel"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// mlp is a two-layer perceptron's mean squared error on a batch of b rows:
// loss(w1, b1, w2, b2, x, y) with d inputs, h hidden units, o outputs.
func mlp(b, d, h, o int) string {
	return fmt.Sprintf(`func.func @loss(%%w1: tensor<%[2]dx%[3]dxf64>, %%b1: tensor<%[3]dxf64>, %%w2: tensor<%[3]dx%[4]dxf64>, %%b2: tensor<%[4]dxf64>, %%x: tensor<%[1]dx%[2]dxf64>, %%y: tensor<%[1]dx%[4]dxf64>) -> tensor<f64> {
  %%m1 = "graph.matmul"(%%x, %%w1) : (tensor<%[1]dx%[2]dxf64>, tensor<%[2]dx%[3]dxf64>) -> tensor<%[1]dx%[3]dxf64>
  %%a1 = "graph.add"(%%m1, %%b1) : (tensor<%[1]dx%[3]dxf64>, tensor<%[3]dxf64>) -> tensor<%[1]dx%[3]dxf64>
  %%t1 = "graph.tanh"(%%a1) : (tensor<%[1]dx%[3]dxf64>) -> tensor<%[1]dx%[3]dxf64>
  %%m2 = "graph.matmul"(%%t1, %%w2) : (tensor<%[1]dx%[3]dxf64>, tensor<%[3]dx%[4]dxf64>) -> tensor<%[1]dx%[4]dxf64>
  %%a2 = "graph.add"(%%m2, %%b2) : (tensor<%[1]dx%[4]dxf64>, tensor<%[4]dxf64>) -> tensor<%[1]dx%[4]dxf64>
  %%d = "graph.sub"(%%a2, %%y) : (tensor<%[1]dx%[4]dxf64>, tensor<%[1]dx%[4]dxf64>) -> tensor<%[1]dx%[4]dxf64>
  %%s = "graph.mul"(%%d, %%d) : (tensor<%[1]dx%[4]dxf64>, tensor<%[1]dx%[4]dxf64>) -> tensor<%[1]dx%[4]dxf64>
  %%l = "graph.reduce_mean"(%%s) : (tensor<%[1]dx%[4]dxf64>) -> tensor<f64>
  return %%l : tensor<f64>
}`, b, d, h, o)
}

// TestScheduleGolden checks the printed schedule of the MLP's joint
// function: three buckets, each issued right after its last gradient, the
// first ones overlapping the rest of the backward sweep.
func TestScheduleGolden(t *testing.T) {
	var buf bytes.Buffer
	dataparallel.SetScheduleOutput(&buf)
	defer dataparallel.SetScheduleOutput(nil)
	m := passtest.Run(t, mlp(8, 16, 32, 4), "builtin.module(graph-autodiff{joint=true wrt=0,1,2,3},graph-data-parallel{bucket-bytes=1100})")
	got := buf.String()
	path := filepath.Join("testdata", "mlp_schedule.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("schedule:\n%s\nwant:\n%s", got, want)
	}
	// The IR agrees with the schedule: one all_reduce per bucket, numbered,
	// each followed by backward compute (except possibly the last).
	n := 0
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() == graph.OpAllReduce {
			if b, ok := op.Attr(dataparallel.BucketAttr).(ir.IntegerAttr); !ok || b.Value != int64(n) {
				t.Errorf("all_reduce #%d has %s = %v", n, dataparallel.BucketAttr, op.Attr(dataparallel.BucketAttr))
			}
			n++
		}
		return true
	})
	if n != 3 || !strings.Contains(got, "in 3 buckets") {
		t.Errorf("%d all_reduce ops, want 3", n)
	}
}

// TestPassErrors checks the diagnostics of bad uses.
func TestPassErrors(t *testing.T) {
	for _, c := range []struct{ pipeline, want string }{
		{"builtin.module(graph-data-parallel)", "no joint or backward function in the module"},
		{"builtin.module(graph-autodiff{joint=true},graph-data-parallel{func=nope})", "no joint or backward function named @nope"},
		{"builtin.module(graph-autodiff{joint=true},graph-data-parallel{bucket-mb=0})", "bucket-mb must be at least 1"},
		{"builtin.module(graph-autodiff{joint=true},graph-data-parallel{group=\"a b\"})", "must name a process group"},
	} {
		ctx := dialects.NewContext()
		m, err := ir.Parse(ctx, mlp(2, 2, 2, 2), ir.ParseOptions{Filename: "mlp.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		pm, err := passes.Parse(c.pipeline)
		if err == nil {
			err = pm.Run(ctx, m)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.pipeline, err, c.want)
		}
	}
}

// TestDataParallelMatchesGlobalBatch is the property of data parallelism:
// N simulated ranks, each training on its part of the batch with the
// gradients averaged by graph-data-parallel's buckets, reach the weights
// that one rank training on the whole batch reaches, step after step.
func TestDataParallelMatchesGlobalBatch(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(rt, "ranks")
		local := rapid.IntRange(1, 3).Draw(rt, "local-batch")
		d := rapid.IntRange(1, 4).Draw(rt, "inputs")
		h := rapid.IntRange(1, 5).Draw(rt, "hidden")
		o := rapid.IntRange(1, 3).Draw(rt, "outputs")
		bucket := rapid.IntRange(8, 512).Draw(rt, "bucket-bytes")
		steps := rapid.IntRange(1, 3).Draw(rt, "steps")
		seed := rapid.Uint64().Draw(rt, "seed")
		rng := rand.New(rand.NewPCG(seed, 1))
		const joint = "builtin.module(graph-autodiff{joint=true wrt=0,1,2,3})"
		ddp := passtest.Run(rt, mlp(local, d, h, o), fmt.Sprintf("builtin.module(graph-autodiff{joint=true wrt=0,1,2,3},graph-data-parallel{bucket-bytes=%d})", bucket))
		single := passtest.Run(rt, mlp(local*n, d, h, o), joint)

		random := func(shape ...int64) []float64 {
			vs := make([]float64, ir.NumElements(shape))
			for i := range vs {
				vs[i] = rng.Float64()*2 - 1
			}
			return vs
		}
		tensor := func(vs []float64, shape ...int64) *interp.Tensor {
			x, err := interp.FromFloat64s(ir.F64, shape, vs)
			if err != nil {
				rt.Fatal(err)
			}
			return x
		}
		shapes := [][]int64{{int64(d), int64(h)}, {int64(h)}, {int64(h), int64(o)}, {int64(o)}}
		var w [][]float64
		for _, s := range shapes {
			w = append(w, random(s...))
		}
		wDDP, wOne := w, w
		one, err := interp.ScalarFloat(ir.F64, 1)
		if err != nil {
			rt.Fatal(err)
		}
		const lr = 0.1
		for range steps {
			x := random(int64(n*local), int64(d))
			y := random(int64(n*local), int64(o))
			weights := func(w [][]float64) []interp.Value {
				var vs []interp.Value
				for i, s := range shapes {
					vs = append(vs, tensor(w[i], s...))
				}
				return vs
			}
			// Rank r takes rows r·local … (r+1)·local-1 of the batch.
			in := make([][]interp.Value, n)
			for r := range n {
				xr := tensor(x[r*local*d:(r+1)*local*d], int64(local), int64(d))
				yr := tensor(y[r*local*o:(r+1)*local*o], int64(local), int64(o))
				in[r] = append(weights(wDDP), xr, yr, one)
			}
			res, err := interp.RunRanks(context.Background(), ddp, "loss_joint", n, in)
			if err != nil {
				rt.Fatal(err)
			}
			resOne, err := interp.New(single).Call("loss_joint", append(weights(wOne), tensor(x, int64(n*local), int64(d)), tensor(y, int64(n*local), int64(o)), one)...)
			if err != nil {
				rt.Fatal(err)
			}
			// Every rank holds the same averaged gradients.
			for r := 1; r < n; r++ {
				for i := range shapes {
					a, b := res[0][1+i].(*interp.Tensor).Float64s(), res[r][1+i].(*interp.Tensor).Float64s()
					for j := range a {
						if a[j] != b[j] {
							rt.Fatalf("rank %d's gradient %d differs from rank 0's: %v vs %v", r, i, b, a)
						}
					}
				}
			}
			wDDP, wOne = sgd(wDDP, res[0][1:], lr), sgd(wOne, resOne[1:], lr)
		}
		for i := range shapes {
			for j := range wDDP[i] {
				if a, b := wDDP[i][j], wOne[i][j]; math.Abs(a-b) > 1e-12*(1+math.Abs(b)) {
					rt.Fatalf("after %d steps on %d ranks, weight %d[%d] = %v; on one rank with the global batch %v", steps, n, i, j, a, b)
				}
			}
		}
	})
}

// sgd returns w - lr·g.
func sgd(w [][]float64, g []interp.Value, lr float64) [][]float64 {
	out := make([][]float64, len(w))
	for i := range w {
		gs := g[i].(*interp.Tensor).Float64s()
		out[i] = make([]float64, len(w[i]))
		for j := range w[i] {
			out[i][j] = w[i][j] - lr*gs[j]
		}
	}
	return out
}
