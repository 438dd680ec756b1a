// Command strata-models runs the model rows of the benchmark suite
// (bench.ModelRows: the small CNN, GPT-2 and ResNet-50 built with package
// nn) and compares them with PyTorch:
//
//	strata-models run --out DIR [--only a,b] [--small] [--backend nvptx] [--iters 10] [--mode M] [--profile 3] [--cpuprofile]
//	python3 bench/models_torch.py DIR
//	strata-models report DIR RESULTS.json
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/strata-ir/strata/bench"
	"github.com/strata-ir/strata/frontend"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "strata-models:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: strata-models run|report …")
	}
	switch args[0] {
	case "run":
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		out := fs.String("out", "", "directory for the weights, inputs, outputs and timings")
		only := fs.String("only", "", "comma-separated rows (default: all)")
		small := fs.Bool("small", false, "the small sizes (for the interpreter)")
		backend := fs.String("backend", frontend.DefaultBackend(), "frontend backend")
		iters := fs.Int("iters", 10, "timed calls per row")
		profile := fs.Int("profile", 0, "then this many calls per row under a device profile (nvptx): each kernel's and library call's time, to the log and DIR/NAME.profile.txt")
		mode := fs.String("mode", string(frontend.ModeDefault), "the compile `mode` of every row (default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs); the decoding rows run --decode-mode")
		decodeMode := fs.String("decode-mode", string(frontend.ModeReduceOverhead), "the compile `mode` of gpt2_decode and gpt2_decode_b8 (default launches the step's kernels one by one: --profile then times each, not the whole CUDA graph)")
		cpuProfile := fs.Bool("cpuprofile", false, "write a Go CPU profile of each row's timed calls (the host's side) to DIR/NAME.cpu.pprof")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *out == "" {
			return fmt.Errorf("run: --out is required")
		}
		// The backend's set-up (the GPU's context, the vendor libraries'
		// loads, handles and start-up calls) while the rows build their
		// models, as PyTorch's side imports torch first.
		if err := frontend.StartBackend(*backend); err != nil {
			return err
		}
		var names []string
		if *only != "" {
			names = strings.Split(*only, ",")
			for _, n := range names {
				found := false
				for _, r := range bench.ModelRows {
					found = found || r.Name == n
				}
				if !found {
					return fmt.Errorf("run: unknown row %q", n)
				}
			}
		}
		size := bench.Full
		if *small {
			size = bench.Small
		}
		_, err := bench.RunModels(*out, names, size, *backend, bench.ModelsTiming{Iters: *iters, Profile: *profile, CPUProfile: *cpuProfile, Mode: frontend.Mode(*mode), DecodeMode: frontend.Mode(*decodeMode)}, os.Stderr)
		return err
	case "report":
		if len(args) != 3 {
			return fmt.Errorf("usage: strata-models report DIR RESULTS.json")
		}
		r, err := bench.ReportModels(args[1])
		if err != nil {
			return err
		}
		writeReport(os.Stdout, r)
		return bench.WriteModelResults(args[2], r)
	}
	return fmt.Errorf("unknown command %q (want run or report)", args[0])
}

// writeReport writes a line per row of r to out (Strata's time in the
// mode the rows ran in, PyTorch's, the check) and under it a line per
// compared output.
func writeReport(out io.Writer, r *bench.Results) {
	mode := string(frontend.ModeDefault)
	if len(r.Modes) > 0 {
		mode = r.Modes[0]
	}
	for _, w := range r.Workloads {
		var line string
		switch s := w.Strata[mode]; {
		case s == nil:
			line = fmt.Sprintf("%-16s strata: no %s result", w.Name, mode)
		case s.Error != "":
			line = fmt.Sprintf("%-16s strata error: %s", w.Name, s.Error)
		default:
			line = fmt.Sprintf("%-16s strata %8.3f ms", w.Name, s.Ms)
			if s.MaxMs > 0 {
				line += fmt.Sprintf(" [%.3f–%.3f]", s.MinMs, s.MaxMs)
			}
			line += fmt.Sprintf(" (first call %.2f s)", s.FirstCallS)
			if s.Compiles > 0 {
				line += fmt.Sprintf(" (total %.2f s, %d compiles)", s.TotalS, s.Compiles)
			}
		}
		for _, m := range []string{"eager", "default", "reduce-overhead"} {
			if t := w.Torch[m]; t != nil {
				if t.Error != "" {
					line += fmt.Sprintf(" | torch %s error: %.80s", m, t.Error)
				} else {
					line += fmt.Sprintf(" | torch %s %.3f ms", m, t.Ms)
					if t.MaxMs > 0 {
						line += fmt.Sprintf(" [%.3f–%.3f]", t.MinMs, t.MaxMs)
					}
					if t.Compiles > 0 {
						line += fmt.Sprintf(" (total %.2f s, %d compiles)", t.TotalS, t.Compiles)
					}
				}
			}
		}
		if c := w.Correctness; c != nil {
			line += fmt.Sprintf(" | max_scaled %.3g (tol %g) ok=%v", c.MaxScaled, c.Tol, c.OK)
		}
		if ref := w.Reference; ref != nil {
			line += fmt.Sprintf(" | vs f32: strata %.3g, torch %.3g", ref.Strata.MaxScaled, ref.Torch.MaxScaled)
			// The worst ratio where it decided an output (a scalar
			// loss's ratio, two draws of rounding noise, says little
			// when the loss passes within tol).
			worst, by, noise := 0.0, 0, 0
			for _, t := range w.Tensors {
				switch t.Pass {
				case "noise":
					noise++
				case "rmse":
					worst, by = max(worst, t.RMSERatio), by+1
				}
			}
			if by > 0 {
				line += fmt.Sprintf(", %d outputs ok by rmse ratio ≤ %.3g", by, worst)
			}
			if noise > 0 {
				line += fmt.Sprintf(" (%d outputs bf16 noise on both sides)", noise)
			}
		}
		if ratio, ok := w.Ratios["default"]; ok {
			line += fmt.Sprintf(" | ratio %.2f", ratio)
		}
		if w.RateUnit == "tokens/s" {
			line += fmt.Sprintf(" | %.0f tokens/s (torch %.0f)", w.Rate, w.TorchRate)
		}
		fmt.Fprintln(out, line)
		for _, t := range w.Tensors {
			fmt.Fprintln(out, "    "+t.String())
		}
	}
}
