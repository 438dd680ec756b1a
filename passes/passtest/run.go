package passtest

import (
	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// TB is what Run needs of a test: *testing.T, *testing.B and *rapid.T
// all have it.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Run parses src in a fresh context, runs pipeline on it and verifies the
// result, failing t on any error; it returns the module.
func Run(t TB, src, pipeline string) *ir.Operation {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "test.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatalf("%s: %v\n%s", pipeline, err, src)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatal(err)
	}
	return m
}
