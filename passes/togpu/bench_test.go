package togpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	_ "github.com/strata-ir/strata/passes/togpu"
)

// BenchmarkLowerToGPU runs the whole lower-to-gpu pipeline (lower-to-loop,
// convert-loop-to-gpu, canonicalize, cse) on the 1000-op graph function of
// passes/lower's BenchmarkLowerToLoop: 250 rounds of exp, row max,
// subtract, tanh.
func BenchmarkLowerToGPU(b *testing.B) {
	var body strings.Builder
	prev := "%x"
	for i := range 250 {
		fmt.Fprintf(&body, "  %%e%d = \"graph.exp\"(%s) : (tensor<64x128xf32>) -> tensor<64x128xf32>\n", i, prev)
		fmt.Fprintf(&body, "  %%m%d = \"graph.reduce_max\"(%%e%d) <{axes = [1], keepdims = true}> : (tensor<64x128xf32>) -> tensor<64x1xf32>\n", i, i)
		fmt.Fprintf(&body, "  %%s%d = \"graph.sub\"(%%e%d, %%m%d) : (tensor<64x128xf32>, tensor<64x1xf32>) -> tensor<64x128xf32>\n", i, i, i)
		fmt.Fprintf(&body, "  %%t%d = \"graph.tanh\"(%%s%d) : (tensor<64x128xf32>) -> tensor<64x128xf32>\n", i, i)
		prev = fmt.Sprintf("%%t%d", i)
	}
	src := fmt.Sprintf("func.func @f(%%x: tensor<64x128xf32>) -> tensor<64x128xf32> {\n%s  return %s : tensor<64x128xf32>\n}\n", body.String(), prev)
	ctx := dialects.NewContext()
	pm, err := passes.Parse("lower-to-gpu")
	if err != nil {
		b.Fatal(err)
	}
	pm.Instr.VerifyEach = false // the lowering, not the verifier, is measured
	for b.Loop() {
		b.StopTimer()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := pm.Run(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}
