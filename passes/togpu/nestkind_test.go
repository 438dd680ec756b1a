package togpu

import (
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
)

// TestMatmulReadsTheNestKind checks that convert-graph-to-loop marks each
// nest with what it is (loop.nest), and that the matmul matcher trusts the
// mark: a matmul nest marked otherwise is not a matmul, an unmarked one is
// recognized by its shape.
func TestMatmulReadsTheNestKind(t *testing.T) {
	p := &passtest.Program{Func: "main", Source: `func.func @main(%x: tensor<8x16xbf16>, %w: tensor<16x4xbf16>) -> tensor<8x4xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
  %r = "graph.relu"(%0) : (tensor<8x4xbf16>) -> tensor<8x4xbf16>
  return %r : tensor<8x4xbf16>
}
`}
	ctx := dialects.NewContext()
	m, err := p.Parse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-loop)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	var nests []*ir.Operation
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() == loop.OpParallel && loop.NestKind(op) != "" {
			nests = append(nests, op)
		}
		return true
	})
	if len(nests) != 1 || loop.NestKind(nests[0]) != "matmul" {
		t.Fatalf("want one nest marked matmul, got %d:\n%s", len(nests), m)
	}
	nest := nests[0]
	if matchMatmul(nest) == nil {
		t.Fatalf("the marked matmul nest is not matched:\n%s", nest)
	}
	nest.SetAttr(loop.NestKindAttr, ir.Str("pointwise"))
	if matchMatmul(nest) != nil {
		t.Error("a nest marked pointwise is matched as a matmul")
	}
	nest.SetAttributes(nest.Attributes().With(loop.NestKindAttr, nil))
	if loop.NestKind(nest) != "" || matchMatmul(nest) == nil {
		t.Error("an unmarked matmul nest is not recognized by its shape")
	}
}
