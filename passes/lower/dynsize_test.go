package lower_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
)

// TestDynamicSizeOfEqualSymbols: an elementwise op's dynamic size is the
// largest of its operands' only where their types name different symbols
// (one may be 1 at run time; an unnamed "?" is never equal to another);
// operands of one symbol give it directly,
// so a dynamic layer norm's allocation is sized by a single loop.dim.
func TestDynamicSizeOfEqualSymbols(t *testing.T) {
	const same = `func.func @main(%x: tensor<?x64xf32, #graph.dims<[s0, 64]>>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32, #graph.dims<[s0, 64]>> {
  %0 = "graph.layer_norm"(%x, %w, %b) <{axis = 1 : i64, epsilon = 1.0e-5 : f32}> : (tensor<?x64xf32, #graph.dims<[s0, 64]>>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32, #graph.dims<[s0, 64]>>
  return %0 : tensor<?x64xf32, #graph.dims<[s0, 64]>>
}`
	// Without #graph.dims nothing says the sizes are equal: either may be 1.
	const different = `func.func @main(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = "graph.add"(%x, %y) : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}`
	for _, tc := range []struct {
		name, src string
		maxui     bool
	}{{"same", same, false}, {"different", different, true}} {
		t.Run(tc.name, func(t *testing.T) {
			text := ir.Sprint(lowerSource(t, tc.src, "builtin.module(lower-to-loop)"), ir.PrintOptions{})
			if got := strings.Contains(text, "arith.maxui"); got != tc.maxui {
				t.Errorf("arith.maxui present: %v, want %v:\n%s", got, tc.maxui, text)
			}
		})
	}
}
