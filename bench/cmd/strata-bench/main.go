// Command strata-bench runs Strata's side of the GPU benchmark suite and
// assembles the results with PyTorch's (see bench/run-device.sh):
//
//	strata-bench prepare --out DIR [--engine nvptx] [--size full] [--only a,b]
//	python3 torch_side.py DIR
//	strata-bench report [--results bench/results] DIR
//	strata-bench warmup
//	strata-bench load-ptx [--rounds N] FILE.ptx...
//
// prepare writes each workload's inputs as .npy files (fixed seed), compiles
// and runs it in every Strata mode, writes the default mode's results and
// DIR/prepare.json. report compares Strata's results with PyTorch's, writes
// <results>/<date>-h200.json and prints the table.
//
// warmup opens the GPU, JIT-compiles a tiny kernel and loads cuBLASLt in a
// process of its own: run first on a machine just started, it pays the
// machine's one-time cold start (the driver, its PTX compiler and the
// library read from disk) so that the measured first calls do not; each
// process still pays its own start-up. load-ptx times cuModuleLoadDataEx of PTX
// files in a bare process (after a tiny kernel has paid the process's JIT
// start-up), each load made unique so that the driver's cache cannot serve
// it: the driver's JIT time and the host clock's, per file and round.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/strata-ir/strata/bench"
	"github.com/strata-ir/strata/runtime/cublaslt"
	"github.com/strata-ir/strata/runtime/cuda"
)

// commit is set at build time: -ldflags "-X main.commit=$(git rev-parse --short HEAD)".
var commit string

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "strata-bench:", err)
		os.Exit(1)
	}
}

const usage = "usage: strata-bench prepare --out DIR [flags] | report [flags] DIR | list | warmup | load-ptx [--rounds N] FILE..."

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	switch args[0] {
	case "prepare":
		return prepare(args[1:], stdout, stderr)
	case "report":
		return report(args[1:], stdout, stderr)
	case "warmup":
		if len(args) != 1 {
			return fmt.Errorf("warmup takes no arguments")
		}
		return warmup(stdout)
	case "load-ptx":
		return loadPTX(args[1:], stdout, stderr)
	case "list":
		for _, w := range bench.Workloads {
			fmt.Fprintf(stdout, "%-16s %-34s %s\n", w.Name, w.Shape, w.Summary)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

func prepare(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("prepare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory for inputs, results and prepare.json (required)")
	engine := fs.String("engine", "nvptx", "Strata engine: "+strings.Join(bench.EngineNames(), ", "))
	size := fs.String("size", "full", "workload size: full or small")
	seed := fs.Uint64("seed", 20261130, "seed of the random inputs")
	only := fs.String("only", "", "comma-separated workloads to run (default: all)")
	defaultOnly := fs.String("default-only", "", "comma-separated workloads measured in the default mode only")
	warmup := fs.Float64("warmup-ms", 50, "warm-up time per measurement, ms")
	rep := fs.Float64("rep-ms", 300, "measuring time per measurement, ms")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 0 {
		return fmt.Errorf("prepare: --out DIR is required and takes no arguments")
	}
	sz := bench.Full
	switch *size {
	case "full":
	case "small":
		sz = bench.Small
	default:
		return fmt.Errorf("prepare: --size must be full or small, not %q", *size)
	}
	e, err := bench.NewEngine(*engine)
	if err != nil {
		return err
	}
	var names []string
	if *only != "" {
		names = strings.Split(*only, ",")
		for _, n := range names {
			if bench.Lookup(n) == nil {
				return fmt.Errorf("prepare: no workload %q", n)
			}
		}
	}
	var defaults []string
	if *defaultOnly != "" {
		defaults = strings.Split(*defaultOnly, ",")
	}
	_, err = bench.Prepare(bench.Options{
		Dir: *out, Engine: e, Size: sz, Seed: *seed, Only: names, DefaultOnly: defaults,
		WarmupMs: *warmup, RepMs: *rep, Commit: commit, Log: stdout,
	})
	return err
}

func report(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	results := fs.String("results", "bench/results", "directory for <date>-h200.json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("report: one directory expected")
	}
	r, err := bench.Report(fs.Arg(0))
	if err != nil {
		return err
	}
	path, err := bench.WriteResults(r, *results)
	if err != nil {
		return err
	}
	bench.Table(stdout, r)
	fmt.Fprintln(stdout, "wrote", path)
	return nil
}

// tinyPTX is a kernel that stores one value: the least a JIT compiles.
const tinyPTX = `.version 7.8
.target sm_90
.address_size 64

.visible .entry strata_warmup(.param .u64 p)
{
	.reg .b64 %rd<2>;
	ld.param.u64 %rd0, [p];
	cvta.to.global.u64 %rd1, %rd0;
	st.global.u32 [%rd1], 1;
	ret;
}
`

// unique makes ptx a text the driver's ComputeCache has not seen (a
// trailing comment: the compiled code is the same).
func unique(ptx, tag string) string {
	return ptx + fmt.Sprintf("\n// strata-bench %s %d\n", tag, time.Now().UnixNano())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// warmup opens the device and loads a tiny kernel, printing what each
// step cost.
func warmup(stdout io.Writer) error {
	t := time.Now()
	dev, err := cuda.Open(0)
	if err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	defer dev.Close()
	open := time.Since(t)
	m, err := dev.LoadModule(unique(tinyPTX, "warmup"))
	if err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	s := m.LoadStats()
	fmt.Fprintf(stdout, "warmup: device open %.1f ms, tiny module load %.1f ms (JIT %.1f ms)\n", ms(open), ms(s.Wall), ms(s.JIT))
	// cuBLASLt is hundreds of MB read from disk the first time a process
	// on the machine loads it (the matmul policy of the default mode does).
	t = time.Now()
	if err := cublaslt.Load(); err != nil {
		fmt.Fprintf(stdout, "warmup: no cuBLASLt (%v)\n", err)
	} else {
		fmt.Fprintf(stdout, "warmup: cuBLASLt loaded in %.1f ms\n", ms(time.Since(t)))
	}
	return m.Unload()
}

// loadPTX times the loads of PTX files in this process.
func loadPTX(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load-ptx", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rounds := fs.Int("rounds", 3, "loads of each file (in turn: file 1, 2, ..., then again)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 || *rounds < 1 {
		return fmt.Errorf("load-ptx: want PTX files and --rounds of at least 1")
	}
	texts := make([]string, fs.NArg())
	for i, f := range fs.Args() {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("load-ptx: %w", err)
		}
		texts[i] = string(b)
	}
	dev, err := cuda.Open(0)
	if err != nil {
		return fmt.Errorf("load-ptx: %w", err)
	}
	defer dev.Close()
	m, err := dev.LoadModule(unique(tinyPTX, "start-up"))
	if err != nil {
		return fmt.Errorf("load-ptx: %w", err)
	}
	first := m.LoadStats()
	if err := m.Unload(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "process JIT start-up (tiny module): wall %.1f ms, JIT %.1f ms\n", ms(first.Wall), ms(first.JIT))
	wall := make([][]float64, len(texts))
	jit := make([][]float64, len(texts))
	for r := range *rounds {
		for i, text := range texts {
			m, err := dev.LoadModule(unique(text, fmt.Sprint("round ", r)))
			if err != nil {
				return fmt.Errorf("load-ptx: %s: %w", fs.Arg(i), err)
			}
			s := m.LoadStats()
			wall[i] = append(wall[i], ms(s.Wall))
			jit[i] = append(jit[i], ms(s.JIT))
			if err := m.Unload(); err != nil {
				return err
			}
		}
	}
	for i, f := range fs.Args() {
		fmt.Fprintf(stdout, "%s: median wall %.1f ms, JIT %.1f ms; wall %v, JIT %v\n",
			f, bench.Median(wall[i]), bench.Median(jit[i]), rounded(wall[i]), rounded(jit[i]))
	}
	return nil
}

// rounded prints milliseconds to 0.1.
func rounded(xs []float64) []float64 {
	out := slices.Clone(xs)
	for i, x := range out {
		out[i] = float64(int64(x*10+0.5)) / 10
	}
	return out
}
