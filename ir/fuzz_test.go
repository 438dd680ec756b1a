package ir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-ir/strata/internal/fuzzwatch"
	"github.com/strata-ir/strata/ir"
)

// FuzzParse checks that the parser never panics, and that on input it
// accepts, print∘parse is idempotent: the generic print parses again and
// prints identically.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/compat/*.mlir", "testdata/golden/*.mlir"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(string(src))
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		defer fuzzwatch.Start(src)()
		ctx := newUnregisteredContext()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "fuzz.mlir"})
		if err != nil {
			if len(ir.Diagnostics(err)) == 0 {
				t.Fatalf("error without a diagnostic: %v", err)
			}
			return
		}
		for _, opts := range []ir.PrintOptions{{Generic: true}, {Generic: true, DebugInfo: true}} {
			first := ir.Sprint(m, opts)
			back, err := ir.Parse(ctx, first, ir.ParseOptions{Filename: "printed.mlir"})
			if err != nil {
				t.Fatalf("printed module does not parse: %v\n%s", err, first)
			}
			if second := ir.Sprint(back, opts); second != first {
				t.Fatalf("print∘parse not idempotent\n%s\nfirst print:\n%s", lineDiff(first, second), first)
			}
		}
	})
}
