// Command perfdoc regenerates the GPU section of docs/performance.md and its
// plot from a benchmark results file:
//
//	go run ./bench/cmd/perfdoc bench/results/2026-11-30-h200.json
//
// The text between the section's markers is replaced (or appended, the first
// time); everything else in the document is kept.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata-ir/strata/bench"
)

func main() {
	doc := flag.String("doc", "docs/performance.md", "the document to update")
	png := flag.String("plot", "docs/performance-h200.png", "the plot to write (empty: none)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: perfdoc [-doc file] [-plot file.png] results.json")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *doc, *png); err != nil {
		fmt.Fprintln(os.Stderr, "perfdoc:", err)
		os.Exit(1)
	}
}

func run(resultsPath, docPath, pngPath string) error {
	r, err := bench.ReadResults(resultsPath)
	if err != nil {
		return err
	}
	link := ""
	if pngPath != "" {
		var buf bytes.Buffer
		if err := bench.Plot(r, &buf); err != nil {
			return err
		}
		if err := os.WriteFile(pngPath, buf.Bytes(), 0o644); err != nil {
			return err
		}
		// The document links the plot relative to itself.
		if link, err = filepath.Rel(filepath.Dir(docPath), pngPath); err != nil {
			return err
		}
	}
	old, err := os.ReadFile(docPath)
	if err != nil {
		return err
	}
	updated, err := bench.UpdateDoc(string(old), bench.Section(r, filepath.ToSlash(link)))
	if err != nil {
		return fmt.Errorf("%s: %w", docPath, err)
	}
	return os.WriteFile(docPath, []byte(updated), 0o644)
}
