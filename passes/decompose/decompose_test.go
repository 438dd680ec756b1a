package decompose_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/decompose"
)

func run(t *testing.T, src string) (*ir.Operation, error) {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "in.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("func.func(graph-decompose)")
	if err != nil {
		t.Fatal(err)
	}
	return m, pm.Run(ctx, m)
}

// Every composite of the dialect is expanded; the semantics of each
// expansion are property-tested in passes/passtest.
func TestCompositesExpand(t *testing.T) {
	m, err := run(t, `
func.func @f(%x: tensor<?x4xf32>, %w: tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %0 = "graph.softmax"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = "graph.log_softmax"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = "graph.layer_norm"(%x, %w, %w) : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %3 = "graph.rms_norm"(%x, %w) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %4 = "graph.attention"(%x, %x, %x) : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0, %1, %2, %3, %4 : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}`)
	if err != nil {
		t.Fatal(err)
	}
	text := m.String()
	for _, name := range decompose.Composites() {
		if strings.Contains(text, name) {
			t.Errorf("%s survived:\n%s", name, text)
		}
	}
	if len(decompose.Composites()) != 5 {
		t.Errorf("Composites() = %v, want the five composites", decompose.Composites())
	}
}

// A causal mask over dynamic lengths, or a default scale over a dynamic
// head size, has no constant to build: a located error, not a panic.
func TestDynamicSizesAreDiagnosed(t *testing.T) {
	for _, tc := range []struct{ typ, attrs, want string }{
		{"tensor<?x4xf32>", "<{causal = true}>", "causal mask needs static sequence lengths"},
		{"tensor<4x?xf32>", "", "default scale 1/√D needs a static D"},
	} {
		_, err := run(t, `
func.func @f(%x: `+tc.typ+`) -> `+tc.typ+` {
  %0 = "graph.attention"(%x, %x, %x) `+tc.attrs+` : (`+tc.typ+`, `+tc.typ+`, `+tc.typ+`) -> `+tc.typ+`
  return %0 : `+tc.typ+`
}`)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "in.mlir:3:") {
			t.Errorf("%s %s: got %v, want a located error containing %q", tc.typ, tc.attrs, err, tc.want)
		}
	}
}
