package layout

import (
	"testing"

	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// TestConvRewritesCheckShapes checks that the rewrites of a convolution
// leave one whose operands are not of static rank 4 alone, rather than
// index its missing shape: convertible keeps such convolutions out of the
// regions today, and the rewrites do not depend on it.
func TestConvRewritesCheckShapes(t *testing.T) {
	src := `"builtin.module"() ({
  "func.func"() <{function_type = (tensor<?x3x9x9xbf16>, tensor<4x3x1x1xbf16>) -> tensor<?x4x9x9xbf16>, sym_name = "f"}> ({
  ^bb0(%x: tensor<?x3x9x9xbf16>, %w: tensor<4x3x1x1xbf16>):
    %0 = "graph.conv2d"(%x, %w) : (tensor<?x3x9x9xbf16>, tensor<4x3x1x1xbf16>) -> tensor<?x4x9x9xbf16>
    "func.return"(%0) : (tensor<?x4x9x9xbf16>) -> ()
  }) : () -> ()
}) : () -> ()
`
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, graph.Dialect)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "t.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	var conv *ir.Operation
	m.Walk(func(o *ir.Operation) bool {
		if o.Name() == graph.OpConv2D {
			conv = o
		}
		return true
	})
	if (&pass{allConvs: true}).convertible(conv) {
		t.Fatal("convertible takes a convolution of dynamic batch")
	}
	b := ir.NewBuilder(ctx)
	if (&region{}).asMatmul(b, conv) {
		t.Error("asMatmul rewrote a convolution of dynamic batch")
	}
	padChannels(b, conv, 8)
	if got := conv.Operand(0).Type().String(); got != "tensor<?x3x9x9xbf16>" {
		t.Errorf("padChannels changed the input to %s", got)
	}
}
