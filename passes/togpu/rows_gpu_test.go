package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// rowVariant is one way of running a row workload: convert-loop-to-gpu
// options.
type rowVariant struct {
	opts string
}

// rowWorkload is a benchmark row program with its variants; check, when
// set, judges a variant's output (else outputs must match the first
// variant's within rounding).
type rowWorkload struct {
	name, src string
	args      []interp.Value
	variants  []rowVariant
	check     func(got []float64) error
	// bf16 compares variants at bf16's rounding.
	bf16 bool
}

// TestGPURowVariants (skipped without a GPU) checks the layer norm's row
// kernels under the row options (row-welford, row-evict-last, row-reread,
// row-shuffle-merge; 256 and 512 threads) against a float64 layer norm on
// the host (1024×4096). With STRATA_ROW_SWEEP set (about 30 s of device
// time) it is the measurement behind the row defaults: the benchmark's
// layer norm (16384×4096 f32 with weight and bias), softmax (8192²) and
// row sums (8192²) under those options, each checked (the layer norm
// against the host, the others against their first variant within
// rounding) and timed with exec's do_bench-like timing, the median of
// three rounds of 100 launches. A value of STRATA_ROW_SWEEP other than 1
// is a comma-separated list of workload name prefixes to sweep
// ("layernorm 16384,softmax"; "gpt2" for GPT-2's residual add and layer
// norm in bf16 under a block and a warp a row).
func TestGPURowVariants(t *testing.T) {
	rt := openRuntime(t)
	sweep := os.Getenv("STRATA_ROW_SWEEP") != ""
	rows, cols := int64(1024), int64(4096)
	if sweep {
		rows = 16384
	}
	rng := rand.New(rand.NewPCG(1, 2))
	xs, ws, bs := make([]float64, rows*cols), make([]float64, cols), make([]float64, cols)
	for i := range xs {
		xs[i] = 0.5 + 2*rng.Float64() - 1
	}
	for i := range ws {
		ws[i], bs[i] = 2*rng.Float64()-1, 2*rng.Float64()-1
	}
	buf := func(vs []float64, shape ...int64) interp.Value {
		x, err := interp.FromFloat64s(ir.F32, shape, vs)
		if err != nil {
			t.Fatal(err)
		}
		return interp.BufferFromTensor(x)
	}
	want := hostLayerNorm(xs, ws, bs, int(cols))
	sq := func(op, out string) string {
		return fmt.Sprintf("func.func @main(%%x: tensor<8192x8192xf32>) -> %[2]s {\n  %%0 = %[1]s : (tensor<8192x8192xf32>) -> %[2]s\n  return %%0 : %[2]s\n}", op, out)
	}
	// The session-3 default first (block 256, the row held in registers,
	// plain loads), then the evict-last loads (row-evict-last), the write
	// loop reading the row again (row-reread) and the butterfly across
	// warps (row-shuffle-merge) at 512 threads (bench/NOTES.md, session 4,
	// H2).
	lnVariants := []rowVariant{{opts: "block=256 row-evict-last=false"}, {opts: "block=256 row-evict-last=true"},
		{opts: "block=256 row-welford=false row-evict-last=true"}, {opts: "block=512 row-shuffle-merge=true row-evict-last=true"},
		{opts: "block=512 row-reread=true row-shuffle-merge=true row-evict-last=true"}, {opts: "block=512 row-reread=true row-shuffle-merge=true row-evict-last=false"}}
	workloads := []rowWorkload{
		{name: fmt.Sprintf("layernorm %dx%d", rows, cols), src: layerNormProgram(rows, cols), args: []interp.Value{buf(xs, rows, cols), buf(ws, cols), buf(bs, cols)},
			variants: lnVariants,
			check: func(got []float64) error {
				worst := 0.0
				for j, g := range got {
					worst = max(worst, math.Abs(g-want[j])/(1+math.Abs(want[j])))
				}
				if !(worst <= 1e-5) {
					return fmt.Errorf("scaled error %g against the float64 layer norm", worst)
				}
				return nil
			}},
	}
	if sweep {
		workloads = append(workloads,
			rowWorkload{name: "softmax 8192x8192", src: sq(`"graph.softmax"(%x) <{axis = -1 : i64}>`, "tensor<8192x8192xf32>"), args: []interp.Value{buf(xs, 8192, 8192)},
				variants: []rowVariant{{opts: "block=512 row-evict-last=false"}, {opts: "block=512 row-evict-last=true"}, {opts: "block=512 row-shuffle-merge=true row-evict-last=true"},
					{opts: "block=512 row-reread=true row-shuffle-merge=true row-evict-last=true"}}},
			rowWorkload{name: "rowsum 8192x8192", src: sq(`"graph.reduce_sum"(%x) <{axes = [1], keepdims = false}>`, "tensor<8192xf32>"), args: []interp.Value{buf(xs, 8192, 8192)},
				variants: []rowVariant{{opts: "block=512 row-evict-last=false"}, {opts: "block=512 row-evict-last=true"}, {opts: "block=512 row-shuffle-merge=true row-evict-last=true"}}},
			// The same layer norm with w = 1 and b = 0 as constants, which
			// fold away: how much of its time the reads of w and b take.
			rowWorkload{name: fmt.Sprintf("layernorm, no w and b, %dx%d", rows, cols), src: layerNormNoAffine(rows, cols),
				args: []interp.Value{buf(xs, rows, cols)}, variants: []rowVariant{{opts: "block=256"}, {opts: "block=128"}, {opts: "block=512"}}})
		// GPT-2's residual add and layer norm (batch 8, sequence 1024,
		// bf16, the sum and the normalized rows both written): a block a
		// row (768 > ShortRow) against a warp a row, and the row options.
		gx, gy, gw, gb := make([]float64, 8192*768), make([]float64, 8192*768), make([]float64, 768), make([]float64, 768)
		for i := range gx {
			gx[i], gy[i] = 2*rng.Float64()-1, 2*rng.Float64()-1
		}
		for i := range gw {
			gw[i], gb[i] = 1+0.1*(2*rng.Float64()-1), 0.1*(2*rng.Float64()-1)
		}
		bf := func(vs []float64, shape ...int64) interp.Value {
			x, err := interp.FromFloat64s(ir.BF16, shape, vs)
			if err != nil {
				t.Fatal(err)
			}
			return interp.BufferFromTensor(x)
		}
		workloads = append(workloads, rowWorkload{name: "gpt2 add+layernorm 8192x768 bf16", src: addLayerNormBF16(8192, 768),
			args: []interp.Value{bf(gx, 8192, 768), bf(gy, 8192, 768), bf(gw, 768), bf(gb, 768)},
			// (The default takes 16-byte steps, 96 threads of 8 columns;
			// vector=2 the 8-byte steps of session 15, 192 threads of 4.)
			variants: []rowVariant{{opts: "block=256"}, {opts: "block=256 vector=2"}, {opts: "block=256 rows-per-block=8"}, {opts: "block=128 rows-per-block=4"},
				{opts: "block=256 rows-per-block=2"}, {opts: "block=256 rows-per-block=2 vector=2"}, {opts: "block=256 row-evict-last=false"},
				{opts: "block=256 row-welford=false"}, {opts: "block=256 row-shuffle-merge=false"}, {opts: "block=256 vector=1"}},
			check: nil, bf16: true})
	} else {
		workloads[0].variants = []rowVariant{workloads[0].variants[0], workloads[0].variants[1], workloads[0].variants[2], workloads[0].variants[4]}
	}
	if only := os.Getenv("STRATA_ROW_SWEEP"); sweep && only != "1" {
		workloads = slices.DeleteFunc(workloads, func(wl rowWorkload) bool {
			return !slices.ContainsFunc(strings.Split(only, ","), func(p string) bool { return p != "" && strings.HasPrefix(wl.name, p) })
		})
	}
	for _, wl := range workloads {
		progs := make([]*exec.Program, len(wl.variants))
		var first []float64
		for i, v := range wl.variants {
			m := lowerGraph(t, wl.src, "builtin.module(lower-to-loop,convert-loop-to-gpu{"+v.opts+"},canonicalize,cse)")
			p, err := exec.Compile(m, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Run(rt, "main", wl.args)
			if err != nil {
				t.Errorf("%s %s: %v", wl.name, v.opts, err)
				continue
			}
			gt, err := got[len(got)-1].(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			g := gt.Float64s()
			switch {
			case wl.check != nil:
				err = wl.check(g)
			case first == nil:
				first = g
			default:
				// Other block sizes sum in another order (a bf16 result
				// may then round to the neighbouring value).
				tol := 1e-5
				if wl.bf16 {
					tol = 1e-2
				}
				for j := range g {
					if !(math.Abs(g[j]-first[j]) <= tol*(1+math.Abs(first[j]))) {
						err = fmt.Errorf("element %d: %g, but %g with %s", j, g[j], first[j], wl.variants[0].opts)
						break
					}
				}
			}
			if err != nil {
				t.Errorf("%s %s: %v", wl.name, v.opts, err)
				continue
			}
			progs[i] = p
		}
		if !sweep {
			continue
		}
		times := make([][]float64, len(progs))
		for range 3 {
			for i, p := range progs {
				if p == nil {
					continue
				}
				ms, err := p.RunTimed(rt, "main", wl.args, 10, 100)
				if err != nil {
					t.Fatal(err)
				}
				times[i] = append(times[i], ms)
			}
		}
		for i, v := range wl.variants {
			if progs[i] != nil {
				slices.Sort(times[i])
				t.Logf("TIME %s %-28s %.4f ms (rounds %.4f–%.4f)", wl.name, v.opts, times[i][1], times[i][0], times[i][2])
			}
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

// layerNormNoAffine is layerNormProgram with w = 1 and b = 0 as constants.
func layerNormNoAffine(rows, cols int64) string {
	x := fmt.Sprintf("tensor<%dx%dxf32>", rows, cols)
	v := fmt.Sprintf("tensor<%dxf32>", cols)
	return fmt.Sprintf(`func.func @main(%%x: %[1]s) -> %[1]s {
  %%w = "graph.constant"() <{value = dense<1.0> : %[2]s}> : () -> %[2]s
  %%b = "graph.constant"() <{value = dense<0.0> : %[2]s}> : () -> %[2]s
  %%0 = "graph.layer_norm"(%%x, %%w, %%b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (%[1]s, %[2]s, %[2]s) -> %[1]s
  return %%0 : %[1]s
}`, x, v)
}

// addLayerNormBF16 is GPT-2's residual add and layer norm on rows of
// cols in bf16: it returns the sum and the normalized sum.
func addLayerNormBF16(rows, cols int64) string {
	x := fmt.Sprintf("tensor<%dx%dxbf16>", rows, cols)
	v := fmt.Sprintf("tensor<%dxbf16>", cols)
	return fmt.Sprintf(`func.func @main(%%x: %[1]s, %%y: %[1]s, %%w: %[2]s, %%b: %[2]s) -> (%[1]s, %[1]s) {
  %%0 = "graph.add"(%%x, %%y) : (%[1]s, %[1]s) -> %[1]s
  %%1 = "graph.layer_norm"(%%0, %%w, %%b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (%[1]s, %[2]s, %[2]s) -> %[1]s
  return %%0, %%1 : %[1]s, %[1]s
}`, x, v)
}
