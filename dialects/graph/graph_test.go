package graph_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

func newCtx() *ir.Context {
	ctx := ir.NewContext(graph.Dialect)
	ctx.AllowUnregistered = true // for "test.src" operand producers
	return ctx
}

// parse parses src, in which %a, %b, … are defined by lines "%a = src T".
func parse(t *testing.T, src string) *ir.Operation {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(src), "\n") {
		line = strings.TrimSpace(line)
		if name, typ, ok := strings.Cut(line, " = src "); ok {
			b.WriteString(name + ` = "test.src"() : () -> ` + typ + "\n")
			continue
		}
		b.WriteString(line + "\n")
	}
	m, err := ir.Parse(newCtx(), b.String(), ir.ParseOptions{Filename: "t.mlir"})
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, b.String())
	}
	return m
}

func verify(t *testing.T, src string) error {
	t.Helper()
	return ir.Verify(parse(t, src))
}

// lastOp returns the last op of the module body.
func lastOp(m *ir.Operation) *ir.Operation { return m.Region(0).Front().Last() }

func TestVerifyValid(t *testing.T) {
	for _, src := range []string{
		`%a = src tensor<4x3xf32>
		 %b = src tensor<3xf32>
		 %0 = "graph.add"(%a, %b) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>`,
		`%a = src tensor<?x1xf32>
		 %b = src tensor<5xf32>
		 %0 = "graph.mul"(%a, %b) : (tensor<?x1xf32>, tensor<5xf32>) -> tensor<?x5xf32>`,
		`%a = src tensor<?xf32>
		 %b = src tensor<1xf32>
		 %0 = "graph.sub"(%a, %b) : (tensor<?xf32>, tensor<1xf32>) -> tensor<?xf32>`,
		`%a = src tensor<?xf32>
		 %b = src tensor<7xf32>
		 %0 = "graph.max"(%a, %b) : (tensor<?xf32>, tensor<7xf32>) -> tensor<7xf32>`,
		`%a = src tensor<4xi32>
		 %0 = "graph.neg"(%a) : (tensor<4xi32>) -> tensor<4xi32>`,
		`%a = src tensor<4xbf16>
		 %0 = "graph.gelu"(%a) <{approximate = "tanh"}> : (tensor<4xbf16>) -> tensor<4xbf16>`,
		`%a = src tensor<4xf32>
		 %b = src tensor<f32>
		 %0 = "graph.cmp"(%a, %b) {predicate = "lt"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>`,
		`%c = src tensor<2x1xi1>
		 %a = src tensor<3xf32>
		 %b = src tensor<f32>
		 %0 = "graph.select"(%c, %a, %b) : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>`,
		`%a = src tensor<2x?xf32>
		 %0 = "graph.cast"(%a) : (tensor<2x?xf32>) -> tensor<2x?xi64>`,
		`%a = src tensor<4x3x2xf32>
		 %0 = "graph.reduce_sum"(%a) {axes = [0, -1], keepdims = true} : (tensor<4x3x2xf32>) -> tensor<1x3x1xf32>`,
		`%a = src tensor<4x3x2xf32>
		 %0 = "graph.reduce_mean"(%a) {axes = array<i64: 1>} : (tensor<4x3x2xf32>) -> tensor<4x2xf32>`,
		`%a = src tensor<4x3xf32>
		 %0 = "graph.reduce_max"(%a) : (tensor<4x3xf32>) -> tensor<f32>`,
		`%a = src tensor<4x3xf32>
		 %0 = "graph.argmax"(%a) {axis = 1 : i64} : (tensor<4x3xf32>) -> tensor<4xi64>`,
		`%a = src tensor<4x3xf32>
		 %0 = "graph.reshape"(%a) {shape = [2, -1]} : (tensor<4x3xf32>) -> tensor<2x6xf32>`,
		`%a = src tensor<4x3xf32>
		 %0 = "graph.reshape"(%a) : (tensor<4x3xf32>) -> tensor<12xf32>`,
		`%a = src tensor<?x3xf32>
		 %0 = "graph.reshape"(%a) {shape = [-1]} : (tensor<?x3xf32>) -> tensor<?xf32>`,
		`%a = src tensor<2x3x4xf32>
		 %0 = "graph.transpose"(%a) {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>`,
		`%a = src tensor<3x1xf32>
		 %0 = "graph.broadcast_to"(%a) {shape = [2, 3, 5]} : (tensor<3x1xf32>) -> tensor<2x3x5xf32>`,
		`%a = src tensor<2x3xf32>
		 %b = src tensor<2x?xf32>
		 %0 = "graph.concat"(%a, %b, %a) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x?xf32>, tensor<2x3xf32>) -> tensor<2x?xf32>`,
		`%a = src tensor<10x4xf32>
		 %0 = "graph.slice"(%a) {starts = [1, 0], limits = [10, 4], strides = [3, 2]} : (tensor<10x4xf32>) -> tensor<3x2xf32>`,
		`%a = src tensor<2x3xi32>
		 %0 = "graph.pad"(%a) {low = [1, 0], high = [0, 2], value = 7 : i32} : (tensor<2x3xi32>) -> tensor<3x5xi32>`,
		`%a = src tensor<10x4xf32>
		 %i = src tensor<2x3xi32>
		 %0 = "graph.gather"(%a, %i) {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>`,
		`%a = src tensor<8x1x4x3xf32>
		 %b = src tensor<5x3x2xf32>
		 %0 = "graph.matmul"(%a, %b) : (tensor<8x1x4x3xf32>, tensor<5x3x2xf32>) -> tensor<8x5x4x2xf32>`,
		`%a = src tensor<3xf32>
		 %b = src tensor<2x3x4xf32>
		 %0 = "graph.matmul"(%a, %b) : (tensor<3xf32>, tensor<2x3x4xf32>) -> tensor<2x4xf32>`,
		`%a = src tensor<2x3xf32>
		 %b = src tensor<3xf32>
		 %0 = "graph.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>`,
		`%a = src tensor<3xf32>
		 %0 = "graph.matmul"(%a, %a) : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>`,
		`%x = src tensor<1x4x9x9xf32>
		 %w = src tensor<6x2x3x3xf32>
		 %b = src tensor<6xf32>
		 %0 = "graph.conv2d"(%x, %w, %b) {strides = [2, 2], padding = [1, 1, 0, 0], groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>`,
		`%x = src tensor<1x9x9x4xf32>
		 %w = src tensor<6x3x3x2xf32>
		 %b = src tensor<6xf32>
		 %0 = "graph.conv2d"(%x, %w, %b) {strides = [2, 2], padding = [1, 1, 0, 0], groups = 2 : i64, layout = "NHWC"} : (tensor<1x9x9x4xf32>, tensor<6x3x3x2xf32>, tensor<6xf32>) -> tensor<1x4x4x6xf32>`,
		`%a = src tensor<2x8xf32>
		 %0 = "graph.softmax"(%a) : (tensor<2x8xf32>) -> tensor<2x8xf32>`,
		`%x = src tensor<2x3x8xf32>
		 %w = src tensor<3x8xf32>
		 %0 = "graph.layer_norm"(%x, %w, %w) {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>`,
		`%q = src tensor<2x4x16x8xf32>
		 %k = src tensor<2x4x12x8xf32>
		 %v = src tensor<1x12x5xf32>
		 %m = src tensor<16x12xi1>
		 %0 = "graph.attention"(%q, %k, %v, %m) {causal = true, scale = 0.5 : f32} : (tensor<2x4x16x8xf32>, tensor<2x4x12x8xf32>, tensor<1x12x5xf32>, tensor<16x12xi1>) -> tensor<2x4x16x5xf32>`,
		`%0 = "graph.constant"() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>`,
		`%0 = "graph.iota"() {axis = 1 : i64} : () -> tensor<2x3xf32>`,
		`%0 = "graph.iota"() {axis = 1 : i64} : () -> tensor<?x?xi64, #graph.dims<[s0, s0*2]>>`,
		`%0 = "graph.full"() {fill = 1 : i64} : () -> tensor<2x3xf32>`,
		`%a = src tensor<4xf32>
		 %0:2 = "graph.fusion"(%a) ({
		 ^bb0(%x: tensor<4xf32>):
		   %1 = "graph.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
		   "graph.yield"(%1, %x) : (tensor<4xf32>, tensor<4xf32>) -> ()
		 }) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)`,
		`%a = src tensor<4xf32>
		 %0 = "graph.exp"(%a) {graph.tag = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>`,
	} {
		if err := verify(t, src); err != nil {
			t.Errorf("%s\nunexpected error: %v", src, err)
		}
	}
}

func TestVerifyErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`%a = src tensor<4x3xf32>
		  %b = src tensor<5xf32>
		  %0 = "graph.add"(%a, %b) : (tensor<4x3xf32>, tensor<5xf32>) -> tensor<4x3xf32>`,
			"t.mlir:3:6: error: 'graph.add' op operands 0 and 1 are not broadcast-compatible: tensor<4x3xf32> vs tensor<5xf32> (dim 1: 3 vs 5)"},
		{`%a = src tensor<4xf32>
		  %b = src tensor<4xf16>
		  %0 = "graph.mul"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>`,
			"operands 0 and 1 have different element types: f32 vs f16"},
		{`%a = src tensor<4xf32>
		  %0 = "graph.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32>`,
			"result #0 has type tensor<5xf32>, but the operands and attributes give tensor<4xf32>"},
		{`%a = src tensor<4xf32>
		  %0 = "graph.add"(%a) : (tensor<4xf32>) -> tensor<4xf32>`,
			"'graph.add' op expects 2 operands, got 1"},
		{`%a = src tensor<4xi32>
		  %0 = "graph.exp"(%a) : (tensor<4xi32>) -> tensor<4xi32>`,
			"operand #0 (x) must be a ranked tensor of f64, f32, f16 or bf16, got tensor<4xi32>"},
		{`%a = src tensor<4xi8>
		  %0 = "graph.neg"(%a) : (tensor<4xi8>) -> tensor<4xi8>`,
			"must be a ranked tensor of f64, f32, f16, bf16, i64 or i32, got tensor<4xi8>"},
		{`%a = src tensor<*xf32>
		  %0 = "graph.relu"(%a) : (tensor<*xf32>) -> tensor<*xf32>`,
			"must be a ranked tensor"},
		{`%a = src tensor<4xf32>
		  %0 = "graph.gelu"(%a) {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>`,
			`attribute 'approximate' must be one of "none", "tanh", got "fast"`},
		{`%a = src tensor<4xf32>
		  %0 = "graph.exp"(%a) {axis = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>`,
			"unknown attribute 'axis' (the op takes no attributes)"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.reduce_sum"(%a) {axis = [1]} : (tensor<4x3xf32>) -> tensor<4xf32>`,
			"unknown attribute 'axis' (expected 'axes', 'keepdims')"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.reduce_sum"(%a) {axes = 1 : i64} : (tensor<4x3xf32>) -> tensor<4xf32>`,
			"attribute 'axes' must be a list of integers ([0, 1] or array<i64: 0, 1>), got 1 : i64"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.reduce_sum"(%a) {axes = [2]} : (tensor<4x3xf32>) -> tensor<4xf32>`,
			"axis 2 is out of range for rank 2 (expected -2 to 1)"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.reduce_sum"(%a) {axes = [1, -1]} : (tensor<4x3xf32>) -> tensor<4xf32>`,
			"axis -1 is repeated in [1 -1]"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.reduce_sum"(%a) {axes = [1], keepdims = 1 : i64} : (tensor<4x3xf32>) -> tensor<4xf32>`,
			"attribute 'keepdims' must be a boolean (true or false), got 1 : i64"},
		{`%a = src tensor<4x3xi32>
		  %0 = "graph.reduce_mean"(%a) : (tensor<4x3xi32>) -> tensor<i32>`,
			"must be a ranked tensor of f64, f32, f16 or bf16"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.argmax"(%a) : (tensor<4x3xf32>) -> tensor<4xi64>`,
			"requires attribute 'axis'"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.argmax"(%a) {axis = 1 : i64} : (tensor<4x3xf32>) -> tensor<4xi32>`,
			"but the operands and attributes give tensor<4xi64>"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.reshape"(%a) {shape = [5, 2]} : (tensor<4x3xf32>) -> tensor<5x2xf32>`,
			"cannot reshape tensor<4x3xf32> (12 elements) to [5, 2] (10 elements)"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.reshape"(%a) : (tensor<4x3xf32>) -> tensor<13xf32>`,
			"cannot reshape tensor<4x3xf32> (12 elements) to [13] (13 elements)"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.reshape"(%a) {shape = [-1, -1]} : (tensor<4x3xf32>) -> tensor<12xf32>`,
			"has more than one -1"},
		{`%a = src tensor<2x3xf32>
		  %0 = "graph.transpose"(%a) {perm = [0, 0]} : (tensor<2x3xf32>) -> tensor<2x2xf32>`,
			"perm [0 0] repeats 0"},
		{`%a = src tensor<2x3xf32>
		  %0 = "graph.transpose"(%a) {perm = [0, 2]} : (tensor<2x3xf32>) -> tensor<2x2xf32>`,
			"perm [0 2] entry 2 is out of range for rank 2"},
		{`%a = src tensor<2x3xf32>
		  %0 = "graph.transpose"(%a) {perm = [0]} : (tensor<2x3xf32>) -> tensor<2xf32>`,
			"perm [0] has 1 entries but the operand has rank 2"},
		{`%a = src tensor<2x3xf32>
		  %0 = "graph.transpose"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>`,
			"requires attribute 'perm'"},
		{`%a = src tensor<3xf32>
		  %0 = "graph.broadcast_to"(%a) {shape = [2, 4]} : (tensor<3xf32>) -> tensor<2x4xf32>`,
			"cannot broadcast tensor<3xf32> to [2 4] (operand dim 0: 3 vs 4)"},
		{`%a = src tensor<2x3xf32>
		  %b = src tensor<3x3xf32>
		  %0 = "graph.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>`,
			"operand #1 dim 0 is 3 but operand #0 dim 0 is 2 (only the concat axis 1 may differ)"},
		{`%a = src tensor<2x3xf32>
		  %b = src tensor<3xf32>
		  %0 = "graph.concat"(%a, %b) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>`,
			"operand #1 has rank 1 but operand #0 has rank 2"},
		{`%0 = "graph.concat"() {axis = 0 : i64} : () -> tensor<5x3xf32>`,
			"expects at least 1 operands, got 0"},
		{`%a = src tensor<10xf32>
		  %0 = "graph.slice"(%a) {starts = [2], limits = [11]} : (tensor<10xf32>) -> tensor<9xf32>`,
			"slice [2, 11) of dim 0 is out of bounds for size 10"},
		{`%a = src tensor<10xf32>
		  %0 = "graph.slice"(%a) {starts = [2], limits = [5], strides = [0]} : (tensor<10xf32>) -> tensor<3xf32>`,
			"stride 0 of dim 0 must be positive"},
		{`%a = src tensor<10xf32>
		  %0 = "graph.slice"(%a) {starts = [2, 0], limits = [5, 1]} : (tensor<10xf32>) -> tensor<3xf32>`,
			"'starts' has 2 entries but the operand tensor<10xf32> has rank 1"},
		{`%a = src tensor<2xi32>
		  %0 = "graph.pad"(%a) {low = [1], high = [1], value = 1.0 : f32} : (tensor<2xi32>) -> tensor<4xi32>`,
			"attribute 'value' is the float 1.000000e+00 : f32 but the element type is i32"},
		{`%a = src tensor<10x4xf32>
		  %i = src tensor<3xf32>
		  %0 = "graph.gather"(%a, %i) {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>`,
			"operand #1 (indices) must be a ranked tensor of i64 or i32"},
		{`%u = src tensor<3x4xbf16>
		  %i = src tensor<3xi64>
		  %0 = "graph.scatter_add"(%u, %i) {axis = 0 : i64, size = 10 : i64} : (tensor<3x4xbf16>, tensor<3xi64>) -> tensor<10x4xbf16>`,
			"operand #0 (updates) must be a ranked tensor of f64 or f32"},
		{`%u = src tensor<3x4xf32>
		  %i = src tensor<4xi64>
		  %0 = "graph.scatter_add"(%u, %i) {axis = 0 : i64, size = 10 : i64} : (tensor<3x4xf32>, tensor<4xi64>) -> tensor<10x4xf32>`,
			"updates dim 0 (3) differs from indices dim 0 (4)"},
		{`%u = src tensor<3x4xf32>
		  %i = src tensor<3xi64>
		  %0 = "graph.scatter_add"(%u, %i) {axis = 2 : i64, size = 10 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xf32>`,
			"axis 2 is out of range for rank 2"},
		{`%u = src tensor<3x4xf32>
		  %i = src tensor<3xi64>
		  %0 = "graph.scatter_add"(%u, %i) {axis = 0 : i64, size = -1 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xf32>`,
			"size must be >= 0, got -1"},
		{`%u = src tensor<3xf32>
		  %i = src tensor<3x1xi64>
		  %0 = "graph.scatter_add"(%u, %i) {axis = 0 : i64, size = 10 : i64} : (tensor<3xf32>, tensor<3x1xi64>) -> tensor<10xf32>`,
			"updates of rank 1 cannot hold indices of rank 2"},
		{`%u = src tensor<3x4xf32>
		  %i = src tensor<3xi64>
		  %0 = "graph.scatter_add"(%u, %i) {axis = 0 : i64, size = 10 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<9x4xf32>`,
			"tensor<10x4xf32>"},
		{`%a = src tensor<2x3xf32>
		  %b = src tensor<4x5xf32>
		  %0 = "graph.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>`,
			"'graph.matmul' op inner dimensions differ: lhs dim 1 is 3, rhs dim 0 is 4"},
		{`%a = src tensor<2x2x3xf32>
		  %b = src tensor<4x3x5xf32>
		  %0 = "graph.matmul"(%a, %b) : (tensor<2x2x3xf32>, tensor<4x3x5xf32>) -> tensor<2x2x5xf32>`,
			"batch dimensions are not broadcast-compatible: [2] vs [4]"},
		{`%a = src tensor<f32>
		  %0 = "graph.matmul"(%a, %a) : (tensor<f32>, tensor<f32>) -> tensor<f32>`,
			"operands must have rank >= 1"},
		{`%a = src tensor<2x3xf32>
		  %b = src tensor<3x5xf32>
		  %c = src tensor<4xf32>
		  %0 = "graph.matmul"(%a, %b, %c) : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<4xf32>) -> tensor<2x5xf32>`,
			"bias must have shape [N] (the result's last dim, N of an rhs of rank >= 2), got tensor<4xf32>"},
		{`%a = src tensor<2x3xf32>
		  %b = src tensor<3xf32>
		  %c = src tensor<1xf32>
		  %0 = "graph.matmul"(%a, %b, %c) : (tensor<2x3xf32>, tensor<3xf32>, tensor<1xf32>) -> tensor<2xf32>`,
			"bias must have shape [N]"},
		{`%a = src tensor<2x3xbf16>
		  %b = src tensor<3x5xbf16>
		  %c = src tensor<5xf32>
		  %0 = "graph.matmul"(%a, %b, %c) : (tensor<2x3xbf16>, tensor<3x5xbf16>, tensor<5xf32>) -> tensor<2x5xbf16>`,
			"operands 0 and 2 have different element types: bf16 vs f32"},
		{`%x = src tensor<1x4x9x9xf32>
		  %w = src tensor<6x3x3x3xf32>
		  %0 = "graph.conv2d"(%x, %w) {groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x7x7xf32>`,
			"weight dim 1 is 3 but the input has 4 channels in 2 groups (2 per group)"},
		{`%x = src tensor<1x4x2x2xf32>
		  %w = src tensor<6x4x3x3xf32>
		  %0 = "graph.conv2d"(%x, %w) : (tensor<1x4x2x2xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x1x1xf32>`,
			"does not fit the padded input"},
		{`%x = src tensor<1x4x9x9xf32>
		  %w = src tensor<6x4x3x3xf32>
		  %0 = "graph.conv2d"(%x, %w) {padding = [1, 1, 1]} : (tensor<1x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x9x9xf32>`,
			"'padding' must have 2 (h, w) or 4 (top, left, bottom, right) entries"},
		{`%x = src tensor<1x9x9x4xf32>
		  %w = src tensor<6x3x3x3xf32>
		  %0 = "graph.conv2d"(%x, %w) {groups = 2 : i64, layout = "NHWC"} : (tensor<1x9x9x4xf32>, tensor<6x3x3x3xf32>) -> tensor<1x7x7x6xf32>`,
			"weight dim 3 is 3 but the input has 4 channels in 2 groups (2 per group)"},
		{`%x = src tensor<1x9x9x4xf32>
		  %w = src tensor<6x3x3x4xf32>
		  %0 = "graph.conv2d"(%x, %w) {layout = "CHWN"} : (tensor<1x9x9x4xf32>, tensor<6x3x3x4xf32>) -> tensor<1x7x7x6xf32>`,
			`attribute 'layout' must be one of "NCHW", "NHWC", got "CHWN"`},
		{`%x = src tensor<9x9x4xf32>
		  %w = src tensor<6x3x3x4xf32>
		  %0 = "graph.conv2d"(%x, %w) {layout = "NHWC"} : (tensor<9x9x4xf32>, tensor<6x3x3x4xf32>) -> tensor<7x7x6xf32>`,
			"expects a rank-4 input (N, H, W, C) and a rank-4 weight (O, KH, KW, C/groups)"},
		{`%a = src tensor<2x8xf32>
		  %0 = "graph.softmax"(%a) {axis = 2 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>`,
			"axis 2 is out of range for rank 2"},
		{`%x = src tensor<2x8xf32>
		  %w = src tensor<4xf32>
		  %0 = "graph.layer_norm"(%x, %w, %w) : (tensor<2x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x8xf32>`,
			"operand #1 (weight) must have shape [8] (dims 1… of tensor<2x8xf32>), got tensor<4xf32>"},
		{`%x = src tensor<2x8xf32>
		  %w = src tensor<8xf32>
		  %0 = "graph.layer_norm"(%x, %w, %w) {epsilon = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>`,
			"attribute 'epsilon' must be a float (1.0e-05 : f32), got 1 : i64"},
		{`%q = src tensor<4x16x8xf32>
		  %k = src tensor<4x12x7xf32>
		  %0 = "graph.attention"(%q, %k, %k) : (tensor<4x16x8xf32>, tensor<4x12x7xf32>, tensor<4x12x7xf32>) -> tensor<4x16x7xf32>`,
			"q and k head dims differ: 8 vs 7"},
		{`%q = src tensor<4x16x8xf32>
		  %m = src tensor<3x12xi1>
		  %0 = "graph.attention"(%q, %q, %q, %m) : (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<3x12xi1>) -> tensor<4x16x8xf32>`,
			"mask tensor<3x12xi1> does not broadcast to the scores shape [4, 16, 16]"},
		{`%q = src tensor<4x16x8xf32>
		  %k = src tensor<1x16x8xf32>
		  %0:3 = "graph.attention_grad"(%q, %k, %k, %q, %q) : (tensor<4x16x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>)`,
			"q and k batch dim 0 differ: 4 vs 1 (broadcast batch dims are not supported)"},
		{`%q = src tensor<4x16x8xf32>
		  %o = src tensor<4x16x4xf32>
		  %0:3 = "graph.attention_grad"(%q, %q, %q, %o, %q) : (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x4xf32>, tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>)`,
			"o must have attention's result shape tensor<4x16x8xf32>, got tensor<4x16x4xf32>"},
		{`%q = src tensor<4x16x8xf32>
		  %d = src tensor<4x16x8xf16>
		  %0:3 = "graph.attention_grad"(%q, %q, %q, %q, %d) : (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf16>) -> (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>)`,
			"operands 0 and 4 have different element types: f32 vs f16"},
		{`%q = src tensor<4x16x8xf32>
		  %0 = "graph.attention_grad"(%q, %q, %q, %q, %q) : (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>`,
			"expects 3 results, got 1"},
		{`%0 = "graph.constant"() {value = dense<[1, 2]> : tensor<2xi8>} : () -> tensor<2xi8>`,
			"attribute 'value' must be a ranked tensor of"},
		{`%0 = "graph.constant"() : () -> tensor<2xi8>`,
			"requires attribute 'value'"},
		{`%0 = "graph.iota"() {axis = 2 : i64} : () -> tensor<2x3xf32>`,
			"axis 2 is out of range for rank 2"},
		{`%0 = "graph.iota"() {axis = 0 : i64} : () -> tensor<?x3xi64>`,
			"dim 0 is a ? that no #graph.dims symbol names"},
		{`%0 = "graph.full"() {fill = 1 : i64} : () -> tensor<?x3xf32>`,
			"result type tensor<?x3xf32> must have a static shape"},
		{`%a = src tensor<4xf32>
		  %0 = "graph.cast"(%a) : (tensor<4xf32>) -> tensor<5xi32>`,
			"result #0 has type tensor<5xi32>, but the operands and attributes give tensor<4xi32>"},
		{`%a = src tensor<4xf32>
		  %0 = "graph.fusion"(%a) ({
		  ^bb0(%x: tensor<4xf32>):
		    "graph.yield"() : () -> ()
		  }) : (tensor<4xf32>) -> tensor<4xf32>`,
			"yields 0 values but the parent fusion has 1 results"},
		{`%a = src tensor<4xf32>
		  %0 = "graph.fusion"(%a) ({
		  ^bb0(%x: tensor<4xf16>):
		    "graph.yield"(%x) : (tensor<4xf16>) -> ()
		  }) : (tensor<4xf32>) -> tensor<4xf32>`,
			"region argument #0 has type tensor<4xf16> but operand #0 has type tensor<4xf32>"},
		{`%a = src tensor<4xf32>
		  "graph.yield"(%a) : (tensor<4xf32>) -> ()`,
			"expects parent op 'graph.fusion'"},
	} {
		err := verify(t, tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s\ngot error  %v\nwant error containing %q", tc.src, err, tc.want)
		}
	}
}
