// Command mlirparity measures how many of the expected-diagnostic chunks of
// MLIR test files irc passes with --verify-diagnostics, counting only the
// chunks that mlir-opt passes too (the denominator: chunks whose
// expectations are facts both tools can be held to).
//
// Each input file is cut at its "// -----" lines; every chunk holding an
// expected-error comment is written to a file of its own (padded with blank
// lines so that line numbers stay those of the original file) and given to
// both tools with --verify-diagnostics, plus --allow-unregistered-dialect
// when the file's RUN line asks for it. Directories are searched for files
// named invalid*.mlir.
//
//	go build -o bin/irc ./tools/irc
//	go run ./tools/mlirparity -irc bin/irc -mlir-opt mlir-opt-19 DIR...
//	go run ./tools/mlirparity -irc bin/irc -v -min 90 DIR...   # list every failure; exit 1 below 90%
//
// The report gives, per file, the chunks with expectations, those mlir-opt
// passes and those irc passes of these, then the failing chunks with the
// first line irc printed about each.
//
// With -roundtrip it measures the round trip instead, on the files not
// named invalid*.mlir: each chunk mlir-opt accepts (with
// --allow-unregistered-dialect when the RUN line asks) passes when irc
// accepts it and mlir-opt prints irc's generic output exactly as it prints
// the chunk (--mlir-print-op-generic both times, no locations): irc
// changed no value and printed valid MLIR. Chunks with expected-error
// comments, and chunks using dialects irc lacks (as in the diagnostics
// mode), are not counted; the RUN lines' passes are ignored.
//
//	go run ./tools/mlirparity -roundtrip -irc bin/irc -mlir-opt mlir-opt-19 DIR...
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
)

// foreignDialects returns the names of theirs that ours lacks.
func foreignDialects(theirs []string, ours []*ir.Dialect) map[string]bool {
	foreign := map[string]bool{}
	for _, n := range theirs {
		foreign[n] = true
	}
	for _, d := range ours {
		delete(foreign, d.Name)
	}
	return foreign
}

func main() {
	cfg := config{}
	flag.StringVar(&cfg.mlirOpt, "mlir-opt", "mlir-opt", "the mlir-opt to compare with")
	flag.StringVar(&cfg.irc, "irc", "irc", "the irc binary to measure")
	flag.IntVar(&cfg.jobs, "j", 2, "chunks run at once")
	flag.BoolVar(&cfg.verbose, "v", false, "print all of irc's output for each failing chunk (diagnostics mode)")
	flag.BoolVar(&cfg.passing, "passing", false, "also list the chunks irc passes")
	flag.BoolVar(&cfg.roundTrip, "roundtrip", false, "measure the round trip of the chunks of the files not named invalid*.mlir")
	min := flag.Float64("min", 0, "exit 1 when irc passes fewer than this percentage of mlir-opt's chunks")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mlirparity [flags] file-or-dir...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	theirs, err := mlirOptDialects(cfg.mlirOpt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mlirparity:", err)
		os.Exit(2)
	}
	cfg.foreign = foreignDialects(theirs, dialects.All())
	match, measureFn := isDiagnosticsFile, measure
	if cfg.roundTrip {
		match, measureFn = isRoundTripFile, measureRoundTrip
	}
	files, err := inputFiles(flag.Args(), match)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mlirparity:", err)
		os.Exit(2)
	}
	rep, err := measureFn(cfg, files, runTool)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mlirparity:", err)
		os.Exit(2)
	}
	rep.write(os.Stdout, cfg)
	if rep.percent() < *min {
		fmt.Fprintf(os.Stderr, "mlirparity: irc passes %.1f%% of the chunks, less than -min %.1f%%\n", rep.percent(), *min)
		os.Exit(1)
	}
}

// write prints the per-file table, the failures and the total.
func (r *report) write(w io.Writer, cfg config) {
	what := "passes"
	if cfg.roundTrip {
		what = "accepts"
	}
	fmt.Fprintf(w, "%-40s %7s %8s %9s %5s\n", "file", "chunks", "foreign", "mlir-opt", "irc")
	for _, f := range r.files {
		fmt.Fprintf(w, "%-40s %7d %8d %9d %5d\n", r.short(f.name), f.chunks, f.outside, f.reference, f.passed)
	}
	fmt.Fprintf(w, "%-40s %7d %8d %9d %5d\n", "total", r.chunks(), r.outside(), r.reference(), r.passed())
	fmt.Fprintln(w)
	for _, f := range r.files {
		for _, c := range f.results {
			if !c.reference || c.foreign != "" {
				continue
			}
			if c.irc && cfg.passing {
				fmt.Fprintf(w, "PASS %s:%d\n", r.short(f.name), c.line)
			}
			if !c.irc {
				if cfg.verbose && !cfg.roundTrip {
					fmt.Fprintf(w, "FAIL %s:%d\n%s\n", r.short(f.name), c.line, indent(c.output))
				} else {
					fmt.Fprintf(w, "FAIL %s:%d: %s\n", r.short(f.name), c.line, firstLine(c.output))
				}
			}
		}
	}
	if cfg.roundTrip {
		fmt.Fprintf(w, "\n%d of the %d chunks mlir-opt %s round-trip through irc (%.1f%%); %d chunks measured, %d more that mlir-opt %s use dialects irc lacks\n",
			r.passed(), r.reference(), what, r.percent(), r.chunks(), r.outside(), what)
		return
	}
	fmt.Fprintf(w, "\nirc passes %d of the %d chunks mlir-opt %s (%.1f%%); %d chunks have expected-error comments, %d more that mlir-opt %s use dialects irc lacks\n",
		r.passed(), r.reference(), what, r.percent(), r.chunks(), r.outside(), what)
}
