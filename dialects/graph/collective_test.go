package graph_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/graph"
)

// TestCollectiveVerifier checks the collectives' shape rules and
// attribute checks.
func TestCollectiveVerifier(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.all_reduce"(%a) <{reduce = "avg", group = "world"}> : (tensor<4x3xf32>) -> tensor<4x3xf32>`, ""},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.all_gather"(%a) <{axis = 1 : i64}> : (tensor<4x3xf32>) -> tensor<4x12xf32>`, ""},
		{`%a = src tensor<?x3xf32>
		  %0 = "graph.all_gather"(%a) : (tensor<?x3xf32>) -> tensor<?x3xf32>`, ""},
		{`%a = src tensor<8x3xi32>
		  %0 = "graph.reduce_scatter"(%a) <{reduce = "max"}> : (tensor<8x3xi32>) -> tensor<2x3xi32>`, ""},
		{`%a = src tensor<4xi1>
		  %0 = "graph.broadcast"(%a) <{root = 3 : i64}> : (tensor<4xi1>) -> tensor<4xi1>`, ""},
		{`%a = src tensor<4xi32>
		  %0 = "graph.all_reduce"(%a) <{reduce = "avg"}> : (tensor<4xi32>) -> tensor<4xi32>`,
			`reduce = "avg" needs a float tensor, got tensor<4xi32>`},
		{`%a = src tensor<4xf32>
		  %0 = "graph.all_reduce"(%a) <{reduce = "mean"}> : (tensor<4xf32>) -> tensor<4xf32>`,
			`attribute 'reduce' must be one of "sum", "max", "avg", got "mean"`},
		{`%a = src tensor<4xf32>
		  %0 = "graph.all_reduce"(%a) <{group = "two words"}> : (tensor<4xf32>) -> tensor<4xf32>`,
			`attribute 'group' must name a process group`},
		{`%a = src tensor<4xf32>
		  %0 = "graph.all_reduce"(%a) <{group = 3 : i64}> : (tensor<4xf32>) -> tensor<4xf32>`,
			`attribute 'group' must be a string`},
		{`%a = src tensor<4xf32>
		  %0 = "graph.broadcast"(%a) <{root = -1 : i64}> : (tensor<4xf32>) -> tensor<4xf32>`,
			`attribute 'root' must be a rank ≥ 0, got -1`},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.all_gather"(%a) : (tensor<4x3xf32>) -> tensor<6x3xf32>`,
			"along axis 0 the result's size 6 must be a multiple of the operand's 4"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.all_gather"(%a) : (tensor<4x3xf32>) -> tensor<8x2xf32>`,
			"result dim 1 is 2, but the operand's is 3"},
		{`%a = src tensor<4x3xf32>
		  %0 = "graph.all_gather"(%a) : (tensor<4x3xf32>) -> tensor<8x3xf16>`,
			"must have the operand's element type and rank"},
		{`%a = src tensor<6x3xf32>
		  %0 = "graph.reduce_scatter"(%a) : (tensor<6x3xf32>) -> tensor<4x3xf32>`,
			"along axis 0 the operand's size 6 must be a multiple of the result's 4"},
		{`%a = src tensor<f32>
		  %0 = "graph.all_gather"(%a) : (tensor<f32>) -> tensor<f32>`,
			"out of range"},
	} {
		err := verify(t, tc.src)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s:\n got %v\nwant %q", tc.src, err, tc.want)
		}
	}
	if !graph.IsCollective(graph.OpReduceScatter) || graph.IsCollective(graph.OpAdd) || graph.ClassOf(graph.OpAllReduce).String() != "collective" {
		t.Error("the collectives' class")
	}
}
