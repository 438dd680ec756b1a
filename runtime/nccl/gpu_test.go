package nccl_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	_ "github.com/strata-ir/strata/autodiff" // graph-autodiff
	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	_ "github.com/strata-ir/strata/passes/dataparallel" // graph-data-parallel
	_ "github.com/strata-ir/strata/passes/togpu"        // lower-to-gpu
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/nccl"
)

// openComm opens GPU 0 and a communicator of one rank on it (bootstrapped
// through an id file, as a job's ranks would be), or skips saying why.
func openComm(t *testing.T) (*exec.Runtime, *nccl.Comm) {
	t.Helper()
	rt, err := exec.Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := nccl.Load(); err != nil {
		if errors.Is(err, nccl.ErrNotFound) {
			t.Skipf("no NCCL: %v", err)
		}
		t.Fatal(err)
	}
	path, version, err := nccl.Info()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NCCL %d from %s", version, path)
	t.Setenv(nccl.EnvRank, "0")
	t.Setenv(nccl.EnvWorldSize, "1")
	t.Setenv(nccl.EnvIDFile, filepath.Join(t.TempDir(), "nccl-id"))
	c, err := nccl.FromEnv(rt.Device())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return rt, c
}

// mlp is a two-layer perceptron's mean squared error (f32), batch b, d
// inputs, h hidden units, o outputs.
func mlp(b, d, h, o int) string {
	return fmt.Sprintf(`func.func @loss(%%w1: tensor<%[2]dx%[3]dxf32>, %%b1: tensor<%[3]dxf32>, %%w2: tensor<%[3]dx%[4]dxf32>, %%x: tensor<%[1]dx%[2]dxf32>, %%y: tensor<%[1]dx%[4]dxf32>) -> tensor<f32> {
  %%m1 = "graph.matmul"(%%x, %%w1) : (tensor<%[1]dx%[2]dxf32>, tensor<%[2]dx%[3]dxf32>) -> tensor<%[1]dx%[3]dxf32>
  %%a1 = "graph.add"(%%m1, %%b1) : (tensor<%[1]dx%[3]dxf32>, tensor<%[3]dxf32>) -> tensor<%[1]dx%[3]dxf32>
  %%t1 = "graph.tanh"(%%a1) : (tensor<%[1]dx%[3]dxf32>) -> tensor<%[1]dx%[3]dxf32>
  %%m2 = "graph.matmul"(%%t1, %%w2) : (tensor<%[1]dx%[3]dxf32>, tensor<%[3]dx%[4]dxf32>) -> tensor<%[1]dx%[4]dxf32>
  %%d = "graph.sub"(%%m2, %%y) : (tensor<%[1]dx%[4]dxf32>, tensor<%[1]dx%[4]dxf32>) -> tensor<%[1]dx%[4]dxf32>
  %%s = "graph.mul"(%%d, %%d) : (tensor<%[1]dx%[4]dxf32>, tensor<%[1]dx%[4]dxf32>) -> tensor<%[1]dx%[4]dxf32>
  %%l = "graph.reduce_mean"(%%s) : (tensor<%[1]dx%[4]dxf32>) -> tensor<f32>
  return %%l : tensor<f32>
}`, b, d, h, o)
}

func compile(t *testing.T, src, pipeline string) *exec.Program {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "mlp.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	p, err := exec.Compile(m, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGPUOneRank runs every collective through a communicator of one rank
// inside a compiled plan, and checks each gives its operand back.
func TestGPUOneRank(t *testing.T) {
	rt, c := openComm(t)
	const n = 1 << 20
	src := fmt.Sprintf(`func.func @main(%%x: tensor<%[1]dxf32>) -> (tensor<%[1]dxf32>, tensor<%[1]dxf32>, tensor<%[1]dxf32>, tensor<%[1]dxf32>, tensor<%[1]dxf32>, tensor<%[1]dxf32>) {
  %%e = "graph.exp"(%%x) : (tensor<%[1]dxf32>) -> tensor<%[1]dxf32>
  %%a = "graph.all_reduce"(%%e) <{reduce = "sum"}> : (tensor<%[1]dxf32>) -> tensor<%[1]dxf32>
  %%v = "graph.all_reduce"(%%e) <{reduce = "avg"}> : (tensor<%[1]dxf32>) -> tensor<%[1]dxf32>
  %%g = "graph.all_gather"(%%e) : (tensor<%[1]dxf32>) -> tensor<%[1]dxf32>
  %%s = "graph.reduce_scatter"(%%e) <{reduce = "max"}> : (tensor<%[1]dxf32>) -> tensor<%[1]dxf32>
  %%b = "graph.broadcast"(%%e) : (tensor<%[1]dxf32>) -> tensor<%[1]dxf32>
  %%r = "graph.reduce_to"(%%e) : (tensor<%[1]dxf32>) -> tensor<%[1]dxf32>
  return %%a, %%v, %%g, %%s, %%b, %%r : tensor<%[1]dxf32>, tensor<%[1]dxf32>, tensor<%[1]dxf32>, tensor<%[1]dxf32>, tensor<%[1]dxf32>, tensor<%[1]dxf32>
}`, n)
	p := compile(t, src, "builtin.module(lower-to-gpu)")
	rng := rand.New(rand.NewPCG(1, 2))
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = rng.Float64()*2 - 1
	}
	x, _ := interp.FromFloat64s(ir.F32, []int64{n}, vs)
	// Without a communicator the runtime is a world of one rank (each
	// collective a device copy); then through NCCL's.
	for _, comm := range []bool{false, true} {
		if comm {
			rt.SetCommunicator(c)
		}
		got, err := p.Run(rt, "main", []interp.Value{x})
		if err != nil {
			t.Fatalf("communicator %v: %v", comm, err)
		}
		for i, g := range got {
			b, err := g.(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			for j, v := range b.Float64s() {
				if w := math.Exp(float64(float32(vs[j]))); math.Abs(v-w) > 1e-6*w {
					t.Fatalf("communicator %v: result %d[%d] = %v, want exp(x) = %v: a collective of one rank gives its operand back", comm, i, j, v, w)
				}
			}
		}
	}
}

// TestGPUDataParallelOverhead times one training step of an MLP compiled
// without collectives and with graph-data-parallel's bucketed all_reduce
// on a communicator of one rank: the cost of the data-parallel path where
// there is nothing to exchange (the target is < 2%).
func TestGPUDataParallelOverhead(t *testing.T) {
	rt, c := openComm(t)
	rt.SetCommunicator(c)
	const b, d, h, o = 512, 1024, 4096, 1024
	src := mlp(b, d, h, o)
	plain := compile(t, src, "builtin.module(graph-autodiff{joint=true wrt=0,1,2},lower-to-gpu)")
	ddp := compile(t, src, "builtin.module(graph-autodiff{joint=true wrt=0,1,2},graph-data-parallel,lower-to-gpu)")
	rng := rand.New(rand.NewPCG(3, 4))
	rnd := func(shape ...int64) interp.Value {
		vs := make([]float64, ir.NumElements(shape))
		for i := range vs {
			vs[i] = (rng.Float64()*2 - 1) * 0.05
		}
		v, _ := interp.FromFloat64s(ir.F32, shape, vs)
		return v
	}
	one, _ := interp.ScalarFloat(ir.F32, 1)
	args := []interp.Value{rnd(d, h), rnd(h), rnd(h, o), rnd(b, d), rnd(b, o), one}
	gotP, err := plain.Run(rt, "loss_joint", args)
	if err != nil {
		t.Fatal(err)
	}
	gotD, err := ddp.Run(rt, "loss_joint", args)
	if err != nil {
		t.Fatal(err)
	}
	for i := range gotP {
		pt, _ := gotP[i].(*interp.Buffer).Tensor()
		dt, _ := gotD[i].(*interp.Buffer).Tensor()
		if !slices.Equal(pt.Float64s(), dt.Float64s()) {
			t.Errorf("result %d: the data-parallel step on one rank differs from the plain step", i)
		}
	}
	const reps = 5
	measure := func(p *exec.Program, graphs bool) (float64, float64) {
		bd, err := p.Prepare(rt, "loss_joint", args)
		if err != nil {
			t.Fatal(err)
		}
		defer bd.Free()
		if graphs {
			if _, err := bd.Capture(); err != nil {
				t.Fatalf("capture: %v", err)
			}
		}
		ev, err := bd.Time(3, 30)
		if err != nil {
			t.Fatal(err)
		}
		wall, err := bd.WallTime(50)
		if err != nil {
			t.Fatal(err)
		}
		return ev, wall
	}
	for _, graphs := range []bool{false, true} {
		var evP, evD, wP, wD []float64
		for range reps { // interleaved, medians
			e, w := measure(plain, graphs)
			evP, wP = append(evP, e), append(wP, w)
			e, w = measure(ddp, graphs)
			evD, wD = append(evD, e), append(wD, w)
		}
		med := func(v []float64) float64 { s := slices.Clone(v); slices.Sort(s); return s[len(s)/2] }
		mode := "launch by launch"
		if graphs {
			mode = "CUDA graph"
		}
		t.Logf("MLP step %dx%d→%d→%d f32, %s: events %.4f ms plain, %.4f ms with 1-rank NCCL all_reduce (%+.2f%%); wall %.4f ms vs %.4f ms (%+.2f%%)",
			b, d, h, o, mode, med(evP), med(evD), 100*(med(evD)/med(evP)-1), med(wP), med(wD), 100*(med(wD)/med(wP)-1))
	}
}
