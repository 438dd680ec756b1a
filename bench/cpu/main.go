// Command cpu benchmarks the cpu backend (targets/cpu, runtime/cpu)
// against the reference interpreter on the workloads of issue 26:
//
//	go run ./bench/cpu                 # every workload
//	go run ./bench/cpu -only matmul    # one of them
//	go run ./bench/cpu -reps 50 -interp=false
//
// For each workload it lowers the graph program with lower-to-loop,
// compiles it for this CPU (the compile cache makes later runs start at
// once), checks the results against the interpreter's (the GPU
// tolerances), runs it -reps times and prints the median and minimum
// time, the CPU time a call (all threads), the bandwidth or FLOP rate,
// and the interpreter's wall and CPU time for one call, with the speedup
// over it by wall time (against the minimum) and by CPU time. The
// memory-bound workloads are also given as a fraction of this machine's
// copy bandwidth (all cores copying 256 MiB).
//
// torch_cpu.py times the same workloads with PyTorch eager (and, with
// --compile, torch.compile's Inductor C++ backend) and NumPy's matmul,
// with the same figures, for a comparison in one run:
//
//	go run ./bench/cpu -interp=false && python3 bench/cpu/torch_cpu.py --threads 2
//
// rounds.py alternates this bench (built) with torch eager and
// torch.compile in one process, several rounds, and prints the
// same-round ratios:
//
//	go build -o cpubench ./bench/cpu && python3 bench/cpu/rounds.py --bench ./cpubench
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/cpu"
	"github.com/strata-ir/strata/runtime/interp"
	target "github.com/strata-ir/strata/targets/cpu"

	_ "github.com/strata-ir/strata/passes/decompose"
	_ "github.com/strata-ir/strata/passes/fusion"
	_ "github.com/strata-ir/strata/passes/lower"
)

// workload is one benchmark: a graph program with main and its traffic.
type workload struct {
	name, shape, src string
	// bytes moved (memory-bound) or flops (compute-bound) per call.
	bytes, flops float64
}

func t2(r, c int) string { return fmt.Sprintf("tensor<%dx%dxf32>", r, c) }

func workloads() []workload {
	const n = 16 << 20
	tv := fmt.Sprintf("tensor<%dxf32>", n)
	pointwise := fmt.Sprintf(`func.func @main(%%x: %[1]s, %%a: %[1]s, %%b: %[1]s) -> %[1]s {
  %%0 = "graph.mul"(%%x, %%a) : (%[1]s, %[1]s) -> %[1]s
  %%1 = "graph.add"(%%0, %%b) : (%[1]s, %[1]s) -> %[1]s
  %%2 = "graph.relu"(%%1) : (%[1]s) -> %[1]s
  %%3 = "graph.sigmoid"(%%x) : (%[1]s) -> %[1]s
  %%4 = "graph.mul"(%%2, %%3) : (%[1]s, %[1]s) -> %[1]s
  return %%4 : %[1]s
}`, tv)
	softmax := fmt.Sprintf(`func.func @main(%%x: %[1]s) -> %[1]s {
  %%0 = "graph.softmax"(%%x) <{axis = -1 : i64}> : (%[1]s) -> %[1]s
  return %%0 : %[1]s
}`, t2(2048, 4096))
	layerNorm := fmt.Sprintf(`func.func @main(%%x: %[1]s, %%w: tensor<1024xf32>, %%b: tensor<1024xf32>) -> %[1]s {
  %%0 = "graph.layer_norm"(%%x, %%w, %%b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (%[1]s, tensor<1024xf32>, tensor<1024xf32>) -> %[1]s
  return %%0 : %[1]s
}`, t2(4096, 1024))
	rowsum := fmt.Sprintf(`func.func @main(%%x: %[1]s) -> tensor<4096xf32> {
  %%0 = "graph.reduce_sum"(%%x) <{axes = [1], keepdims = false}> : (%[1]s) -> tensor<4096xf32>
  return %%0 : tensor<4096xf32>
}`, t2(4096, 4096))
	matmul := fmt.Sprintf(`func.func @main(%%a: %[1]s, %%b: %[1]s) -> %[1]s {
  %%0 = "graph.matmul"(%%a, %%b) : (%[1]s, %[1]s) -> %[1]s
  return %%0 : %[1]s
}`, t2(1024, 1024))
	// The MLP of cpu_anchor.py: gelu_tanh(x@w1)@w2, no biases.
	mlp := fmt.Sprintf(`func.func @main(%%x: %[1]s, %%w1: %[2]s, %%w2: %[3]s) -> %[1]s {
  %%0 = "graph.matmul"(%%x, %%w1) : (%[1]s, %[2]s) -> %[4]s
  %%1 = "graph.gelu"(%%0) <{approximate = "tanh"}> : (%[4]s) -> %[4]s
  %%2 = "graph.matmul"(%%1, %%w2) : (%[4]s, %[3]s) -> %[1]s
  return %%2 : %[1]s
}`, t2(256, 1024), t2(1024, 4096), t2(4096, 1024), t2(256, 4096))
	// Decoding-shaped products, memory-bound on the weight: a linear
	// layer with a bias at batch 1 (W as nn.Linear stores it here, [in,
	// out]) and x·Wᵀ for 4 rows (W as PyTorch stores it, [out, in]).
	gemv := fmt.Sprintf(`func.func @main(%%x: %[1]s, %%w: %[2]s, %%b: tensor<4096xf32>) -> %[1]s {
  %%0 = "graph.matmul"(%%x, %%w) : (%[1]s, %[2]s) -> %[1]s
  %%1 = "graph.add"(%%0, %%b) : (%[1]s, tensor<4096xf32>) -> %[1]s
  return %%1 : %[1]s
}`, t2(1, 4096), t2(4096, 4096))
	linearT := fmt.Sprintf(`func.func @main(%%x: %[1]s, %%w: %[2]s) -> %[1]s {
  %%t = "graph.transpose"(%%w) <{perm = [1, 0]}> : (%[2]s) -> %[2]s
  %%0 = "graph.matmul"(%%x, %%t) : (%[1]s, %[2]s) -> %[1]s
  return %%0 : %[1]s
}`, t2(4, 4096), t2(4096, 4096))
	return []workload{
		{name: "pointwise", shape: "16M", src: pointwise, bytes: 4 * 4 * n},
		{name: "softmax", shape: "2048×4096", src: softmax, bytes: 2 * 4 * 2048 * 4096},
		{name: "layer_norm", shape: "4096×1024", src: layerNorm, bytes: 2 * 4 * 4096 * 1024},
		{name: "rowsum", shape: "4096×4096", src: rowsum, bytes: 4 * 4096 * 4096},
		{name: "matmul", shape: "1024³", src: matmul, flops: 2 * 1024 * 1024 * 1024},
		{name: "mlp", shape: "256×1024→4096→1024", src: mlp, flops: 2 * 2 * 256 * 1024 * 4096},
		{name: "gemv", shape: "1×4096·4096²+b", src: gemv, bytes: 4 * 4096 * 4096},
		{name: "linear_t", shape: "4×4096·(4096²)ᵀ", src: linearT, bytes: 4 * 4096 * 4096},
	}
}

func main() {
	reps := flag.Int("reps", 20, "timed calls per workload (after one warm-up call)")
	only := flag.String("only", "", "run only the workloads named (comma-separated)")
	withInterp := flag.Bool("interp", true, "time one call of the reference interpreter too (seconds for the large workloads) and compare results")
	workers := flag.Int("workers", 0, "goroutines per kernel (0: GOMAXPROCS)")
	kc := flag.Int("kc", 0, "the matmul kernels' k block (0: the default; at least K: none)")
	flag.Parse()
	copyBW := copyBandwidth()
	fmt.Printf("cpu backend, GOMAXPROCS=%d, -mcpu=%s; copy bandwidth %.1f GB/s (all cores, 256 MiB)\n\n",
		runtime.GOMAXPROCS(0), target.HostCPU(), copyBW/1e9)
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tshape\tcompile\tmedian ms\tmin ms\tcpu ms\trate\tof copy BW\tinterp ms\tinterp cpu ms\tspeedup (min, cpu)\tvs interp\t")
	for _, w := range workloads() {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), w.name) {
			continue
		}
		r, err := measure(w, *reps, *withInterp, *workers, *kc)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench/cpu: %s: %v\n", w.name, err)
			os.Exit(1)
		}
		rate, ofCopy := "", ""
		if w.bytes > 0 {
			bw := w.bytes / r.median.Seconds()
			rate = fmt.Sprintf("%.1f GB/s", bw/1e9)
			ofCopy = fmt.Sprintf("%.0f%%", 100*bw/copyBW)
		} else {
			rate = fmt.Sprintf("%.1f GFLOP/s", w.flops/r.median.Seconds()/1e9)
		}
		interpMS, interpCPU, speedup := "-", "-", "-"
		if r.interp > 0 {
			interpMS, interpCPU = fmt.Sprintf("%.1f", ms(r.interp)), fmt.Sprintf("%.1f", ms(r.interpCPU))
			speedup = fmt.Sprintf("%.0f×, %.0f×", r.interp.Seconds()/r.min.Seconds(), r.interpCPU.Seconds()/r.cpu.Seconds())
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f s\t%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", w.name, w.shape, r.first.Seconds(),
			ms(r.median), ms(r.min), ms(r.cpu), rate, ofCopy, interpMS, interpCPU, speedup, r.check)
	}
	tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type result struct {
	first, median, min, interp time.Duration
	// interpCPU is the CPU time of the interpreter's one call.
	interpCPU time.Duration
	// cpu is the process's CPU time (user and system, every thread) per
	// call: on a machine shared with other jobs a steadier measure of the
	// work than the wall clock.
	cpu   time.Duration
	check string
}

func measure(w workload, reps int, withInterp bool, workers, kc int) (result, error) {
	var r result
	ctx := dialects.NewContext()
	graph, err := ir.ParseString(ctx, w.src)
	if err != nil {
		return r, err
	}
	in := interp.New(graph)
	ft, err := interp.FuncType(in.Func("main"))
	if err != nil {
		return r, err
	}
	args, err := interp.RandomInputs(ft, 1)
	if err != nil {
		return r, err
	}
	inputs := make([]*interp.Tensor, len(args))
	for i, a := range args {
		inputs[i] = a.(*interp.Tensor)
	}
	start := time.Now()
	lowered := graph.Clone(nil)
	pm, err := passes.Parse("builtin.module(lower-to-loop)")
	if err != nil {
		return r, err
	}
	if err := pm.Run(ctx, lowered); err != nil {
		return r, err
	}
	prog, err := cpu.Compile(lowered)
	if err != nil {
		return r, err
	}
	prog.Workers, prog.MatmulKC = workers, kc
	r.first = time.Since(start)
	got, err := prog.Run("main", inputs)
	if err != nil {
		return r, err
	}
	times := make([]time.Duration, reps)
	cpu0 := cpuTime()
	for i := range times {
		t0 := time.Now()
		out, err := prog.Run("main", inputs)
		if err != nil {
			return r, err
		}
		// As a PyTorch loop frees each call's result (its allocator hands
		// the memory to the next call), give the results back.
		prog.Release(out...)
		times[i] = time.Since(t0)
	}
	r.cpu = (cpuTime() - cpu0) / time.Duration(reps)
	slices.Sort(times)
	r.median, r.min = times[len(times)/2], times[0]
	r.check = "not checked"
	if withInterp {
		t0, c0 := time.Now(), cpuTime()
		want, err := in.Call("main", args...)
		if err != nil {
			return r, fmt.Errorf("interpreter: %w", err)
		}
		r.interp, r.interpCPU = time.Since(t0), cpuTime()-c0
		r.check = "matches"
		for i := range want {
			if err := passtest.Compare(got[i], want[i]); err != nil {
				// Long f32 sums (K = 4096) that cancel to near zero differ
				// beyond the elementwise tolerance by rounding alone; say
				// how far relative to the result's scale.
				r.check = fmt.Sprintf("max |Δ| = %.1e of max |y| (%v)", scaledError(got[i], want[i]), err)
			}
		}
	}
	return r, nil
}

// cpuTime returns the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// scaledError returns max |got − want| / max |want|.
func scaledError(got *interp.Tensor, want interp.Value) float64 {
	w, ok := want.(*interp.Tensor)
	if !ok {
		return math.NaN()
	}
	g, wf := got.Float64s(), w.Float64s()
	var d, m float64
	for i := range wf {
		d = max(d, math.Abs(g[i]-wf[i]))
		m = max(m, math.Abs(wf[i]))
	}
	return d / m
}

// copyBandwidth measures copying 256 MiB between two buffers with every
// core (bytes read plus bytes written, per second; best of 5).
func copyBandwidth() float64 {
	const n = 256 << 20
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	copy(dst, src)
	workers := runtime.GOMAXPROCS(0)
	best := time.Duration(1 << 62)
	for range 5 {
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			lo, hi := n*w/workers, n*(w+1)/workers
			wg.Add(1)
			go func() { defer wg.Done(); copy(dst[lo:hi], src[lo:hi]) }()
		}
		wg.Wait()
		best = min(best, time.Since(t0))
	}
	// Give the 512 MiB back, so that the workloads run with the heap
	// their own buffers make (its size sets how often the collector runs).
	debug.FreeOSMemory()
	return 2 * n / best.Seconds()
}
