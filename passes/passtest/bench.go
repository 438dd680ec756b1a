package passtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// RowChain returns a graph function of 4×rounds ops on tensor<64x128xf32>:
// rounds of exp, row max, subtract and tanh, each round a persistent-row
// kernel after fusion. The compile-speed benchmarks lower it.
func RowChain(rounds int) string {
	var body strings.Builder
	prev := "%x"
	for i := range rounds {
		fmt.Fprintf(&body, "  %%e%d = \"graph.exp\"(%s) : (tensor<64x128xf32>) -> tensor<64x128xf32>\n", i, prev)
		fmt.Fprintf(&body, "  %%m%d = \"graph.reduce_max\"(%%e%d) <{axes = [1], keepdims = true}> : (tensor<64x128xf32>) -> tensor<64x1xf32>\n", i, i)
		fmt.Fprintf(&body, "  %%s%d = \"graph.sub\"(%%e%d, %%m%d) : (tensor<64x128xf32>, tensor<64x1xf32>) -> tensor<64x128xf32>\n", i, i, i)
		fmt.Fprintf(&body, "  %%t%d = \"graph.tanh\"(%%s%d) : (tensor<64x128xf32>) -> tensor<64x128xf32>\n", i, i)
		prev = fmt.Sprintf("%%t%d", i)
	}
	return fmt.Sprintf("func.func @f(%%x: tensor<64x128xf32>) -> tensor<64x128xf32> {\n%s  return %s : tensor<64x128xf32>\n}\n", body.String(), prev)
}

// BenchmarkPipeline times pipeline on a fresh parse of src in every
// iteration; parsing is not timed, nor is verification between passes (the
// pipeline's work, not the verifier's, is measured).
func BenchmarkPipeline(b *testing.B, pipeline, src string) {
	ctx := dialects.NewContext()
	pm, err := passes.Parse(pipeline)
	if err != nil {
		b.Fatal(err)
	}
	pm.Instr.VerifyEach = false
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
