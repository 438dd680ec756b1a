package dialects_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/internal/fuzzwatch"
	"github.com/strata-ir/strata/ir"
)

// seedChunks returns the .mlir files under the repository's examples/ and
// test/ trees, each split at its "// -----" lines as --split-input-file
// splits them: the fuzz targets' seed corpus.
func seedChunks(f *testing.F) []string {
	f.Helper()
	var chunks []string
	for _, root := range []string{"../examples", "../test"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".mlir") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, chunk := range strings.Split(string(src), "\n// -----\n") {
				chunks = append(chunks, chunk)
			}
			return nil
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	if len(chunks) == 0 {
		f.Fatal("no seed files found")
	}
	return chunks
}

// located reports whether err carries at least one diagnostic and every
// diagnostic has a location.
func located(err error) bool {
	diags := ir.Diagnostics(err)
	if len(diags) == 0 {
		return false
	}
	for _, d := range diags {
		if d.Loc == nil {
			return false
		}
	}
	return true
}

// FuzzParseVerifyPrint parses arbitrary text with every dialect of the
// project loaded (so each op's custom syntax is exercised), verifies what
// parses, and prints it. It checks that nothing panics, that every error is
// a located diagnostic, and that a module that verifies round-trips: its
// custom and generic prints parse again, verify, and print identically.
func FuzzParseVerifyPrint(f *testing.F) {
	for _, chunk := range seedChunks(f) {
		f.Add(chunk)
	}
	// Syntax the repository's files use rarely, for the mutator to splice.
	f.Add(`func.func @f() attributes {a = dense<[]> : tensor<0xf32>, b = dense<> : tensor<0xi8>, c = dense<"0x0000803F"> : tensor<1xf32>,
  d = dense<(1.0, 2.0)> : tensor<complex<f32>>, e = array<i1: true, false>, f = array<f16: 1.0>, g = 0x7FC0 : bf16,
  h = sparse<[[0]], [1.0]> : tensor<4xf32>, i = dense_resource<blob> : tensor<4xf32>, j = @a::@b, k = affine_map<(d0) -> (d0)>,
  l = -9223372036854775808 : index, m = [unit, "s", 1 : i1], n = tensor<?x4xf32, #graph.dims<[s0, 4]>>, o = tensor<*xf32>,
  p = memref<?xf32, strided<[?], offset: ?>>, q = vector<[4]xf32>, r = complex<i32>, s = tuple<>, t = none, u = !t.x} {
  return
}`)
	ctx := dialects.NewContext()
	f.Fuzz(func(t *testing.T, src string) {
		defer fuzzwatch.Start(src)()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "fuzz.mlir"})
		if err != nil {
			if !located(err) {
				t.Fatalf("parse error without a located diagnostic: %v", err)
			}
			return
		}
		if err := ir.Verify(m); err != nil {
			if !located(err) {
				t.Fatalf("verifier error without a located diagnostic: %v", err)
			}
			// The generic form prints whatever the parser built.
			ir.Sprint(m, ir.PrintOptions{Generic: true})
			return
		}
		for _, opts := range []ir.PrintOptions{{}, {Generic: true}, {DebugInfo: true}} {
			first := ir.Sprint(m, opts)
			back, err := ir.Parse(ctx, first, ir.ParseOptions{Filename: "printed.mlir"})
			if err != nil {
				t.Fatalf("printed module (%+v) does not parse: %v\ninput:\n%s\nprinted:\n%s", opts, err, src, first)
			}
			if err := ir.Verify(back); err != nil {
				t.Fatalf("printed module (%+v) does not verify: %v\ninput:\n%s\nprinted:\n%s", opts, err, src, first)
			}
			if second := ir.Sprint(back, opts); second != first {
				t.Fatalf("print∘parse (%+v) is not idempotent\ninput:\n%s\nfirst print:\n%s\nsecond print:\n%s", opts, src, first, second)
			}
		}
	})
}
