// Package stablehlo defines the subset of the StableHLO dialect that JAX
// emits for MLPs, convolutions and transformers, in MLIR's generic form
// (`"stablehlo.add"(%a, %b) : (...) -> ...`), as
// `jax.jit(f).lower(...).compiler_ir("stablehlo")` prints it with
// print_generic_op_form. The ops have no interpreter rules of their own:
// their semantics come from the convert-stablehlo-to-graph pass
// (importers/stablehlo), which rewrites them into graph ops.
//
// Dimension numbers and enums are StableHLO's own attributes
// (#stablehlo.dot<...>, #stablehlo.conv<...>, #stablehlo.gather<...>,
// #stablehlo<comparison_direction GT>); this package parses them
// (DotDims, ConvDims, GatherDims, Direction) for the verifier and the
// conversion.
package stablehlo

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/ir"
)

// Name is the dialect's name.
const Name = "stablehlo"

// opSpec is one row of the op table.
type opSpec struct {
	name    string
	summary string
	arity   int // -1: variadic
	regions int
	attrs   []string // required inherent attributes
	opt     []string // optional inherent attributes
	check   func(op *ir.Operation) error
	example string
}

// examples of the ops that are not elementwise.
var examples = map[string]string{
	"constant": `%0 = "stablehlo.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<2xf32>`,
	"iota":     `%0 = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<2x3xi32>`,
	"compare": `%2 = "stablehlo.compare"(%0, %1) <{comparison_direction = #stablehlo<comparison_direction GT>}> : ` +
		`(tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>`,
	"select": `%3 = "stablehlo.select"(%0, %1, %2) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>`,
	"clamp":  `%3 = "stablehlo.clamp"(%lo, %x, %hi) : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>`,
	"broadcast_in_dim": `%1 = "stablehlo.broadcast_in_dim"(%0) <{broadcast_dimensions = array<i64: 1>}> : ` +
		`(tensor<5xf32>) -> tensor<3x5xf32>`,
	"reshape":   `%1 = "stablehlo.reshape"(%0) : (tensor<2x3xf32>) -> tensor<6xf32>`,
	"transpose": `%1 = "stablehlo.transpose"(%0) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>`,
	"slice": `%1 = "stablehlo.slice"(%0) <{limit_indices = array<i64: 4>, start_indices = array<i64: 1>, ` +
		`strides = array<i64: 2>}> : (tensor<5xf32>) -> tensor<2xf32>`,
	"concatenate": `%2 = "stablehlo.concatenate"(%0, %1) <{dimension = 0 : i64}> : (tensor<2xf32>, tensor<3xf32>) -> tensor<5xf32>`,
	"dot_general": `%2 = "stablehlo.dot_general"(%0, %1) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], ` +
		`rhs_contracting_dimensions = [0]>}> : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>`,
	"convolution": `%2 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = ` +
		`#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = ` +
		`dense<1> : tensor<2x2xi64>, window_strides = array<i64: 1, 1>}> : (tensor<1x5x5x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x5x5x3xf32>`,
	"reduce": `%2 = "stablehlo.reduce"(%0, %1) <{dimensions = array<i64: 1>}> ({
^bb0(%a: tensor<f32>, %b: tensor<f32>):
  %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  "stablehlo.return"(%s) : (tensor<f32>) -> ()
}) : (tensor<3x5xf32>, tensor<f32>) -> tensor<3xf32>`,
	"reduce_window": `%2 = "stablehlo.reduce_window"(%0, %1) <{window_dimensions = array<i64: 1, 1, 2, 2>, ` +
		`window_strides = array<i64: 1, 1, 2, 2>}> ({
^bb0(%a: tensor<f32>, %b: tensor<f32>):
  %m = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  "stablehlo.return"(%m) : (tensor<f32>) -> ()
}) : (tensor<1x3x4x4xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>`,
	"gather": `%2 = "stablehlo.gather"(%emb, %ids) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], ` +
		`collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, slice_sizes = array<i64: 1, 4>}> : ` +
		`(tensor<5x4xf32>, tensor<2x3x1xi32>) -> tensor<2x3x4xf32>`,
	"pad": `%2 = "stablehlo.pad"(%0, %1) <{edge_padding_high = array<i64: 1>, edge_padding_low = array<i64: 2>, ` +
		`interior_padding = array<i64: 0>}> : (tensor<3xf32>, tensor<f32>) -> tensor<6xf32>`,
	"custom_call": `%1 = "stablehlo.custom_call"(%0) <{call_target_name = "foo"}> : (tensor<2xf32>) -> tensor<2xf32>`,
	"return":      `"stablehlo.return"(%s) : (tensor<f32>) -> ()`,
}

var elementwise1 = []struct{ name, what string }{
	{"negate", "negation"}, {"abs", "absolute value"}, {"exponential", "e^x"}, {"exponential_minus_one", "e^x - 1"},
	{"log", "natural logarithm"}, {"log_plus_one", "log(1 + x)"}, {"sqrt", "square root"}, {"rsqrt", "1/√x"},
	{"tanh", "hyperbolic tangent"}, {"logistic", "1/(1 + e^-x)"}, {"sine", "sine"}, {"cosine", "cosine"},
	{"not", "logical not (i1)"}, {"convert", "element type conversion"},
}

var elementwise2 = []struct{ name, what string }{
	{"add", "addition"}, {"subtract", "subtraction"}, {"multiply", "multiplication"}, {"divide", "division"},
	{"maximum", "maximum"}, {"minimum", "minimum"}, {"power", "power"}, {"and", "logical and (i1)"},
	{"or", "logical or (i1)"}, {"xor", "logical xor (i1)"},
}

func table() []opSpec {
	var ops []opSpec
	for _, u := range elementwise1 {
		ops = append(ops, opSpec{name: u.name, summary: "elementwise " + u.what, arity: 1})
	}
	for _, b := range elementwise2 {
		ops = append(ops, opSpec{name: b.name, summary: "elementwise " + b.what + " of operands of one shape", arity: 2})
	}
	ops = append(ops,
		opSpec{name: "constant", summary: "a constant tensor", arity: 0, attrs: []string{"value"}},
		opSpec{name: "iota", summary: "a tensor counting along iota_dimension", arity: 0, attrs: []string{"iota_dimension"}},
		opSpec{name: "compare", summary: "elementwise comparison (comparison_direction EQ, NE, LT, LE, GT, GE)", arity: 2,
			attrs: []string{"comparison_direction"}, opt: []string{"compare_type"}, check: checkCompare},
		opSpec{name: "select", summary: "elementwise choice by an i1 predicate", arity: 3},
		opSpec{name: "clamp", summary: "clamp(min, x, max)", arity: 3},
		opSpec{name: "broadcast_in_dim", summary: "broadcast, operand dim i going to result dim broadcast_dimensions[i]", arity: 1,
			attrs: []string{"broadcast_dimensions"}},
		opSpec{name: "reshape", summary: "reshape to the result type", arity: 1},
		opSpec{name: "transpose", summary: "permute dims", arity: 1, attrs: []string{"permutation"}},
		opSpec{name: "slice", summary: "static strided slice", arity: 1, attrs: []string{"start_indices", "limit_indices", "strides"}},
		opSpec{name: "concatenate", summary: "join along dimension", arity: -1, attrs: []string{"dimension"}},
		opSpec{name: "dot_general", summary: "contraction with batching and contracting dims", arity: 2,
			attrs: []string{"dot_dimension_numbers"}, opt: []string{"precision_config", "algorithm"}, check: checkDot},
		opSpec{name: "convolution", summary: "N-d convolution with dimension numbers", arity: 2,
			attrs: []string{"dimension_numbers", "feature_group_count", "batch_group_count"},
			opt:   []string{"window_strides", "padding", "lhs_dilation", "rhs_dilation", "window_reversal", "precision_config"}, check: checkConv},
		opSpec{name: "reduce", summary: "reduce over dimensions with a body region", arity: -1, regions: 1, attrs: []string{"dimensions"}},
		opSpec{name: "reduce_window", summary: "windowed reduction with a body region (pooling)", arity: -1, regions: 1,
			attrs: []string{"window_dimensions"}, opt: []string{"window_strides", "base_dilations", "window_dilations", "padding"}},
		opSpec{name: "gather", summary: "gather slices at indices", arity: 2, attrs: []string{"dimension_numbers", "slice_sizes"},
			opt: []string{"indices_are_sorted"}, check: checkGather},
		opSpec{name: "pad", summary: "pad with a scalar (edge and interior padding)", arity: 2,
			attrs: []string{"edge_padding_low", "edge_padding_high", "interior_padding"}},
		opSpec{name: "custom_call", summary: "a call to an external target (not supported: refused by the conversion)", arity: -1,
			attrs: []string{"call_target_name"}},
		opSpec{name: "return", summary: "terminates a reduction body", arity: -1},
	)
	return ops
}

func (s opSpec) def() *ir.OpDef {
	d := &ir.OpDef{
		Name:    Name + "." + s.name,
		Summary: s.summary,
		Description: "StableHLO's `" + s.name + "`. Strata runs it by converting it to graph ops with " +
			"convert-stablehlo-to-graph (docs/importers.md).",
		Inherent: slices.Concat(s.attrs, s.opt),
		Example:  s.example,
		Traits:   ir.Pure,
	}
	if s.name == "return" {
		d.Traits = ir.Terminator | ir.ReturnLike
	}
	if s.name == "custom_call" {
		d.Traits = 0
	}
	spec := s
	d.Verify = func(op *ir.Operation) error { return spec.verify(op) }
	return d
}

func (s opSpec) verify(op *ir.Operation) error {
	if s.arity >= 0 && op.NumOperands() != s.arity {
		return fmt.Errorf("expects %d operands, got %d", s.arity, op.NumOperands())
	}
	if op.NumRegions() != s.regions {
		return fmt.Errorf("expects %d regions, got %d", s.regions, op.NumRegions())
	}
	for _, a := range s.attrs {
		if Attr(op, a) == nil {
			return fmt.Errorf("requires attribute '%s'", a)
		}
	}
	if s.name != "return" {
		for i, t := range slices.Concat(op.OperandTypes(), op.ResultTypes()) {
			if tt, ok := t.(*ir.TensorType); !ok || !tt.Ranked() {
				return fmt.Errorf("operands and results must be ranked tensors, #%d is %s", i, t)
			}
		}
	}
	if s.check != nil {
		return s.check(op)
	}
	return nil
}

// Attr returns the inherent (or discardable) attribute name of op.
func Attr(op *ir.Operation, name string) ir.Attribute {
	if a := op.Properties().Get(name); a != nil {
		return a
	}
	return op.Attributes().Get(name)
}

func checkCompare(op *ir.Operation) error {
	_, err := Direction(op)
	return err
}

func checkDot(op *ir.Operation) error {
	_, err := DotDims(op)
	return err
}

func checkConv(op *ir.Operation) error {
	_, err := ConvDims(op)
	return err
}

func checkGather(op *ir.Operation) error {
	_, err := GatherDims(op)
	return err
}

// Dialect is the stablehlo dialect.
var Dialect = func() *ir.Dialect {
	d := &ir.Dialect{Name: Name, Summary: "the subset of StableHLO that JAX emits for MLPs, convolutions and transformers",
		Description: "Generic-form StableHLO as JAX prints it; convert-stablehlo-to-graph gives it graph semantics."}
	for _, s := range table() {
		if s.example = examples[s.name]; s.example == "" && s.arity == 1 {
			s.example = fmt.Sprintf(`%%1 = "stablehlo.%s"(%%0) : (tensor<4xf32>) -> tensor<4xf32>`, s.name)
		} else if s.example == "" {
			s.example = fmt.Sprintf(`%%2 = "stablehlo.%s"(%%0, %%1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>`, s.name)
		}
		d.Ops = append(d.Ops, s.def())
	}
	return d
}()
