package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// rowVariant is one way of running a row workload: convert-loop-to-gpu
// options, and optionally an edit of the PTX (cache hints the backends do
// not emit, measured before they are built in).
type rowVariant struct {
	opts string
	edit string // "" or a key of ptxEdits
}

// ptxEdits rewrite a row kernel's PTX: the first n global vector loads
// (the row's own values, issued first) and every global vector store.
var ptxEdits = map[string]func(ptx string, n int) string{
	"st.cs": func(p string, _ int) string { return strings.ReplaceAll(p, "st.global.v4.f32", "st.global.cs.v4.f32") },
	"ld.cs": func(p string, n int) string { return replaceFirst(p, "ld.global.v4.f32", "ld.global.cs.v4.f32", n) },
	"ld.cs+st.cs": func(p string, n int) string {
		return strings.ReplaceAll(replaceFirst(p, "ld.global.v4.f32", "ld.global.cs.v4.f32", n), "st.global.v4.f32", "st.global.cs.v4.f32")
	},
	"ld.L2::256B": func(p string, n int) string {
		return replaceFirst(p, "ld.global.v4.f32", "ld.global.L2::256B.v4.f32", n)
	},
}

func replaceFirst(s, old, new string, n int) string {
	re := regexp.MustCompile(regexp.QuoteMeta(old))
	i := 0
	return re.ReplaceAllStringFunc(s, func(m string) string {
		i++
		if i <= n {
			return new
		}
		return m
	})
}

// TestGPURowVariants (skipped without a GPU) runs the benchmark's layer
// norm (16384×4096 f32 with weight and bias) under each variant of the row
// mapping, checks each against a float64 layer norm on the host, and logs
// the time of each (exec's do_bench-like timing, three rounds), with the
// benchmark's softmax and row sums for the block sizes: the measurement
// behind the row defaults.
func TestGPURowVariants(t *testing.T) {
	rt, err := exec.Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	const rows, cols = 16384, 4096
	rng := rand.New(rand.NewPCG(1, 2))
	xs, ws, bs := make([]float64, rows*cols), make([]float64, cols), make([]float64, cols)
	for i := range xs {
		xs[i] = 0.5 + 2*rng.Float64() - 1
	}
	for i := range ws {
		ws[i], bs[i] = 2*rng.Float64()-1, 2*rng.Float64()-1
	}
	want := hostLayerNorm(xs, ws, bs, cols)
	args := func(shape ...[]int64) []interp.Value {
		out := make([]interp.Value, len(shape))
		for i, s := range shape {
			v := [][]float64{xs, ws, bs}[i]
			x, err := interp.FromFloat64s(ir.F32, s, v)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = interp.BufferFromTensor(x)
		}
		return out
	}
	lnArgs := args([]int64{rows, cols}, []int64{cols}, []int64{cols})

	var variants []rowVariant
	for _, blk := range []int{128, 256, 512, 1024} {
		for _, w := range []bool{false, true} {
			variants = append(variants, rowVariant{opts: fmt.Sprintf("block=%d row-welford=%v", blk, w)})
		}
	}
	for _, blk := range []int{256, 512, 1024} {
		variants = append(variants, rowVariant{opts: fmt.Sprintf("block=%d row-welford=true row-prefetch=true", blk)})
	}
	// A warp per row: 128 values a thread, looped (not in registers).
	variants = append(variants, rowVariant{opts: "block=256 rows-per-block=8"})
	for _, blk := range []int{256, 512} {
		for _, e := range []string{"st.cs", "ld.cs", "ld.cs+st.cs", "ld.L2::256B"} {
			variants = append(variants, rowVariant{opts: fmt.Sprintf("block=%d row-welford=true", blk), edit: e})
		}
	}
	progs := make([]*exec.Program, len(variants))
	for i, v := range variants {
		m := lowerGraph(t, layerNormProgram(rows, cols), "builtin.module(lower-to-loop,convert-loop-to-gpu{"+v.opts+"},canonicalize,cse)")
		p, err := exec.Compile(m, exec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if v.edit != "" {
			var blk int
			fmt.Sscanf(v.opts, "block=%d", &blk)
			ptx := map[string]string{}
			for name, text := range p.PTX() {
				ptx[name] = ptxEdits[v.edit](text, cols/4/blk)
			}
			if p, err = exec.NewProgram(p.Module(), ptx); err != nil {
				t.Fatal(err)
			}
		}
		got, err := p.Run(rt, "main", lnArgs)
		if err != nil {
			t.Errorf("%s %s: %v", v.opts, v.edit, err)
			continue
		}
		gt, err := got[0].(*interp.Buffer).Tensor()
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for j, g := range gt.Float64s() {
			worst = max(worst, math.Abs(g-want[j])/(1+math.Abs(want[j])))
		}
		if !(worst <= 1e-5) {
			t.Errorf("%s %s: scaled error %g against the float64 layer norm", v.opts, v.edit, worst)
		}
		t.Logf("layernorm %s %s: scaled error %.2g", v.opts, v.edit, worst)
		progs[i] = p
	}
	times := make([][]float64, len(variants))
	for range 3 {
		for i, p := range progs {
			if p == nil {
				continue
			}
			ms, err := p.RunTimed(rt, "main", lnArgs, 10, 100)
			if err != nil {
				t.Fatal(err)
			}
			times[i] = append(times[i], ms)
		}
	}
	for i, v := range variants {
		if progs[i] != nil {
			slices.Sort(times[i])
			t.Logf("TIME layernorm %dx%d %-45s %-12s %.4f ms (rounds %.4f–%.4f)", rows, cols, v.opts, v.edit, times[i][1], times[i][0], times[i][2])
		}
	}

	// Softmax 8192×8192 and row sums 16384×8192 (the x of the layer norm,
	// viewed), block sizes only: the row-welford option does not apply.
	for _, wl := range []struct {
		name, src string
		shape     []int64
	}{
		{"softmax", `func.func @main(%x: tensor<8192x8192xf32>) -> tensor<8192x8192xf32> {
  %0 = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<8192x8192xf32>) -> tensor<8192x8192xf32>
  return %0 : tensor<8192x8192xf32>
}`, []int64{8192, 8192}},
		{"rowsum", `func.func @main(%x: tensor<8192x8192xf32>) -> tensor<8192xf32> {
  %0 = "graph.reduce_sum"(%x) <{axes = [1], keepdims = false}> : (tensor<8192x8192xf32>) -> tensor<8192xf32>
  return %0 : tensor<8192xf32>
}`, []int64{8192, 8192}},
	} {
		a := args(wl.shape)
		for _, blk := range []int{256, 512, 1024} {
			m := lowerGraph(t, wl.src, fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{block=%d},canonicalize,cse)", blk))
			p, err := exec.Compile(m, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var ts []float64
			for range 3 {
				ms, err := p.RunTimed(rt, "main", a, 10, 100)
				if err != nil {
					t.Fatal(err)
				}
				ts = append(ts, ms)
			}
			slices.Sort(ts)
			t.Logf("TIME %s 8192x8192 block=%d %.4f ms (rounds %.4f–%.4f)", wl.name, blk, ts[1], ts[0], ts[2])
		}
	}
}

// hostLayerNorm is layer_norm over rows of cols in float64 (two-pass).
func hostLayerNorm(x, w, b []float64, cols int) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x); r += cols {
		row := x[r : r+cols]
		mean, v := 0.0, 0.0
		for _, e := range row {
			mean += e
		}
		mean /= float64(cols)
		for _, e := range row {
			v += (e - mean) * (e - mean)
		}
		rs := 1 / math.Sqrt(v/float64(cols)+1e-5)
		for j, e := range row {
			out[r+j] = (e-mean)*rs*w[j] + b[j]
		}
	}
	return out
}
