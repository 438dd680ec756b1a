// Command gendocs writes the dialect and pass references under docs/ from
// the op and pass registries, so the references are never written twice.
//
//	go run ./tools/gendocs            # rewrite docs/dialects/*.md and docs/passes.md
//	go run ./tools/gendocs -check     # exit 1 if any of them is stale
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	_ "github.com/strata-ir/strata/autodiff" // registers graph-autodiff
	"github.com/strata-ir/strata/dialects"
	_ "github.com/strata-ir/strata/importers/stablehlo" // registers convert-stablehlo-to-graph
	_ "github.com/strata-ir/strata/passes/dataparallel" // registers graph-data-parallel
	_ "github.com/strata-ir/strata/passes/decompose"    // registers graph-decompose
	_ "github.com/strata-ir/strata/passes/fusion"       // registers graph-fuse
	_ "github.com/strata-ir/strata/passes/layout"       // registers graph-channels-last
	_ "github.com/strata-ir/strata/passes/lower"        // registers convert-graph-to-loop, loop-buffer-reuse, lower-to-loop
	_ "github.com/strata-ir/strata/passes/symbolize"    // registers graph-symbolize-shapes
	_ "github.com/strata-ir/strata/passes/togpu"        // registers convert-loop-to-gpu, lower-to-gpu
)

func main() {
	dir := flag.String("docs", "docs", "the docs directory to write into")
	check := flag.Bool("check", false, "report stale files instead of writing them")
	flag.Parse()
	stale, err := generate(*dir, !*check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	if *check && len(stale) > 0 {
		for _, f := range stale {
			fmt.Fprintf(os.Stderr, "gendocs: %s is out of date; run `make docs`\n", f)
		}
		os.Exit(1)
	}
}

// files returns every generated file's path (relative to the docs dir) and content.
func files() map[string]string {
	out := map[string]string{"passes.md": renderPasses()}
	for _, d := range dialects.All() {
		out[filepath.Join("dialects", d.Name+".md")] = renderDialect(d)
	}
	return out
}

// generate compares each generated file with the one under dir and, when
// write is set, rewrites the stale ones. It returns the stale paths.
func generate(dir string, write bool) ([]string, error) {
	var stale []string
	for rel, content := range files() {
		path := filepath.Join(dir, rel)
		old, err := os.ReadFile(path)
		if err == nil && bytes.Equal(old, []byte(content)) {
			continue
		}
		stale = append(stale, path)
		if !write {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	return stale, nil
}
