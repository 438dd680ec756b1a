// Command strata-bench runs Strata's side of the GPU benchmark suite and
// assembles the results with PyTorch's (see bench/run-device.sh):
//
//	strata-bench prepare --out DIR [--engine nvptx] [--size full] [--only a,b]
//	python3 torch_side.py DIR
//	strata-bench report [--results bench/results] DIR
//
// prepare writes each workload's inputs as .npy files (fixed seed), compiles
// and runs it in every Strata mode, writes the default mode's results and
// DIR/prepare.json. report compares Strata's results with PyTorch's, writes
// <results>/<date>-h200.json and prints the table.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/strata-ir/strata/bench"
)

// commit is set at build time: -ldflags "-X main.commit=$(git rev-parse --short HEAD)".
var commit string

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "strata-bench:", err)
		os.Exit(1)
	}
}

const usage = "usage: strata-bench prepare --out DIR [flags] | report [flags] DIR | list"

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	switch args[0] {
	case "prepare":
		return prepare(args[1:], stdout, stderr)
	case "report":
		return report(args[1:], stdout, stderr)
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
