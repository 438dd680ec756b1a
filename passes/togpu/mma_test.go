package togpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
)

// mmaCases are bf16 products the tensor-core mapping takes, at sizes that
// exercise its variants: tails in M, N and K (predicated copies and a
// guarded epilogue), exact tiles (neither), B stored [N, K], batch
// dimensions, and a dynamic M (index rather than i32 offsets).
var mmaCases = []struct {
	name    string
	args    string // the function's arguments
	result  string
	body    string
	kernels int // mma kernels expected
}{
	{"odd-bias-gelu", "%x: tensor<100x40xbf16>, %w: tensor<40x72xbf16>, %b: tensor<72xbf16>", "tensor<100x72xbf16>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<100x40xbf16>, tensor<40x72xbf16>) -> tensor<100x72xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<100x72xbf16>, tensor<72xbf16>) -> tensor<100x72xbf16>
  %r = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<100x72xbf16>) -> tensor<100x72xbf16>`, 1},
	{"exact-tiles", "%x: tensor<128x64xbf16>, %w: tensor<64x128xbf16>", "tensor<128x128xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<128x128xbf16>`, 1},
	{"k-tail", "%x: tensor<33x24xbf16>, %w: tensor<24x136xbf16>", "tensor<33x136xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<33x24xbf16>, tensor<24x136xbf16>) -> tensor<33x136xbf16>`, 1},
	{"b-transposed", "%x: tensor<130x40xbf16>, %w: tensor<20x40xbf16>", "tensor<130x20xbf16>", `
  %t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<20x40xbf16>) -> tensor<40x20xbf16>
  %r = "graph.matmul"(%x, %t) : (tensor<130x40xbf16>, tensor<40x20xbf16>) -> tensor<130x20xbf16>`, 1},
	{"batched", "%x: tensor<2x3x20x16xbf16>, %w: tensor<2x3x16x24xbf16>", "tensor<2x3x20x24xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<2x3x20x16xbf16>, tensor<2x3x16x24xbf16>) -> tensor<2x3x20x24xbf16>`, 1},
	{"attention", "%q: tensor<2x2x24x16xbf16>, %k: tensor<2x2x24x16xbf16>, %v: tensor<2x2x24x16xbf16>", "tensor<2x2x24x16xbf16>", `
  %r = "graph.attention"(%q, %k, %v) : (tensor<2x2x24x16xbf16>, tensor<2x2x24x16xbf16>, tensor<2x2x24x16xbf16>) -> tensor<2x2x24x16xbf16>`, 2},
}

// TestMMASemantics runs each product before and after lower-to-gpu in the
// interpreter (which simulates cp.async, ldmatrix and mma.sync lane by
// lane) and checks that the mma mapping took its matmuls.
func TestMMASemantics(t *testing.T) {
	for _, tc := range mmaCases {
		t.Run(tc.name, func(t *testing.T) {
			p := &passtest.Program{Func: "main", Source: fmt.Sprintf("func.func @main(%s) -> %s {%s\n  return %%r : %s\n}\n", tc.args, tc.result, tc.body, tc.result)}
			if got := mmaKernels(t, p); got != tc.kernels {
				t.Errorf("%d mma kernels, want %d", got, tc.kernels)
			}
			if err := passtest.CheckSemantics(p, "builtin.module(lower-to-gpu)", 1); err != nil {
				t.Error(err)
			}
		})
	}
}

// mmaKernels lowers p to the gpu level and counts its mma kernels.
func mmaKernels(t *testing.T, p *passtest.Program) int {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := p.Parse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-gpu)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	return strings.Count(ir.Sprint(m, ir.PrintOptions{}), `mapping = "mma"`)
}
