package graph

import (
	"fmt"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// Frequently used operand and result docs.
var (
	resultDoc = []ir.ArgDoc{{Name: "result", Doc: "the result tensor"}}
	pure      = ir.Pure
)

// unaryOps are the elementwise unary ops: one row each, with the element
// types they accept and their exact formula.
var unaryOps = []struct {
	name, summary, formula string
	class                  elemClass
}{
	{"neg", "negation", "-x", numericElem},
	{"abs", "absolute value", "|x|", numericElem},
	{"exp", "exponential", "e^x", floatElem},
	{"log", "natural logarithm", "ln x (NaN for x < 0, -inf at 0)", floatElem},
	{"sqrt", "square root", "√x (NaN for x < 0)", floatElem},
	{"rsqrt", "reciprocal square root", "1/√x", floatElem},
	{"tanh", "hyperbolic tangent", "tanh x", floatElem},
	{"sigmoid", "logistic sigmoid", "1/(1+e^-x)", floatElem},
	{"relu", "rectified linear unit", "max(x, 0) (NaN stays NaN)", numericElem},
	{"gelu", "Gaussian error linear unit",
		"x·Φ(x) = 0.5·x·(1+erf(x/√2)); with approximate = \"tanh\", PyTorch's 0.5·x·(1+tanh(u)), u = √(2/π)·(x+0.044715·x³), computed as the equal x/(1+e^(−2u))", floatElem},
	{"erf", "error function", "erf x", floatElem},
	{"sin", "sine", "sin x (radians)", floatElem},
	{"cos", "cosine", "cos x (radians)", floatElem},
	{"reciprocal", "reciprocal", "1/x", floatElem},
}

// binaryOps are the elementwise binary ops with NumPy broadcasting.
var binaryOps = []struct {
	name, summary, formula string
	traits                 ir.Trait
}{
	{"add", "addition", "a + b", ir.Commutative},
	{"sub", "subtraction", "a - b", 0},
	{"mul", "multiplication", "a · b", ir.Commutative},
	{"div", "division", "a / b; integers truncate toward zero, and x / 0 is 0", 0},
	{"pow", "power", "a^b; for integers, a negative exponent gives 1/a^|b| truncated toward zero (0 unless |a| = 1)", 0},
	{"max", "maximum", "max(a, b); NaN if either is NaN", ir.Commutative},
	{"min", "minimum", "min(a, b); NaN if either is NaN", ir.Commutative},
}

// Precision and overflow rules shared by the descriptions.
const (
	precisionNote = " Arithmetic is done in the element type: f32 in float32, f64 in float64; " +
		"f16 and bf16 compute in float32 and round to nearest even. Integers wrap on overflow."
	compositeNote = " f16 and bf16 inputs compute as PyTorch does: widened to f32, every step in f32, " +
		"the result rounded to the element type once (graph-decompose casts to f32 and back)."
	broadcastNote = " Operands broadcast as in NumPy: shapes are right-aligned and a size of 1 " +
		"stretches to match; a `?` size broadcasts with anything."
)

// opTable returns every op of the dialect, one row each.
func opTable() []*opSpec {
	var ops []*opSpec
	ops = append(ops,
		&opSpec{
			name:    "constant",
			summary: "a constant tensor",
			description: "Produces the tensor held by `value`, a dense elements attribute whose type is " +
				"the result type.",
			results: resultDoc,
			traits:  pure | ir.ConstantLike,
			attrs:   []attrSpec{{name: "value", kind: kindDense, required: true, doc: "the elements, as `dense<...> : tensor<...>`"}},
			rule:    ruleConstant,
			class:   ClassConstant,
			fold:    foldConstant,
			example: `%0 = "graph.constant"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> tensor<2xf32>`,
		},
		&opSpec{
			name:    "iota",
			summary: "a tensor counting along one axis",
			description: "Element at index (i₀, …, iₙ) is i_axis, converted to the element type. The " +
				"result type gives the shape; a dynamic size must be named by a symbol of its `#graph.dims` " +
				"(an unnamed ? is refused) that sizes one of the function's arguments, which gives it at run " +
				"time (graph-decompose builds the causal mask of a sequence length compiled symbolic so).",
			results: resultDoc,
			traits:  pure,
			attrs:   []attrSpec{{name: "axis", kind: kindInt, required: true, doc: "the axis to count along (negative counts from the end)"}},
			rule:    ruleIota,
			class:   ClassConstant,
			example: `%0 = "graph.iota"() <{axis = 1 : i64}> : () -> tensor<2x3xi64>`,
		},
		&opSpec{
			name:        "full",
			summary:     "a tensor filled with one value",
			description: "Every element is `fill`, converted to the element type. The result type, which must be static, gives the shape.",
			results:     resultDoc,
			traits:      pure,
			attrs:       []attrSpec{{name: "fill", kind: kindScalar, required: true, doc: "the value (a float needs a float tensor; i1 takes 0 or 1)"}},
			rule:        ruleFull,
			class:       ClassConstant,
			example:     `%0 = "graph.full"() <{fill = 0.0 : f32}> : () -> tensor<2x3xf32>`,
		},
	)
	for _, u := range unaryOps {
		s := &opSpec{
			name:    u.name,
			summary: "elementwise " + u.summary,
			description: fmt.Sprintf("Computes %s for each element x. Accepts %s; the result has the operand's type.",
				u.formula, classNames[u.class]) + precisionNote,
			operands: []operand{{"x", u.class, "the input"}},
			results:  resultDoc,
			traits:   pure, // SameOperandsAndResultType holds, but the shape rule reports it better
			rule:     ruleSame,
			class:    ClassPointwise,
			fold:     foldElementwise,
			example:  fmt.Sprintf(`%%1 = "graph.%s"(%%0) : (tensor<4xf32>) -> tensor<4xf32>`, u.name),
		}
		if u.name == "gelu" {
			s.attrs = []attrSpec{{name: "approximate", kind: kindEnum, enum: []string{"none", "tanh"}, def: "none", doc: `"none" (exact, the default) or "tanh"`}}
			s.example = `%1 = "graph.gelu"(%0) <{approximate = "tanh"}> : (tensor<4xf32>) -> tensor<4xf32>`
		}
		if u.name == "neg" {
			s.traits |= ir.Involution
			s.canon = []*ir.Pattern{negNeg}
		}
		ops = append(ops, s)
	}
	for _, bin := range binaryOps {
		s := &opSpec{
			name:    bin.name,
			summary: "elementwise " + bin.summary,
			description: fmt.Sprintf("Computes %s elementwise. Both operands have one element type (%s); "+
				"the result has that element type and the broadcast shape.", bin.formula, classNames[numericElem]) +
				broadcastNote + precisionNote,
			operands: []operand{{"lhs", numericElem, "a"}, {"rhs", numericElem, "b"}},
			results:  resultDoc,
			traits:   pure | bin.traits,
			rule:     ruleBinary,
			class:    ClassPointwise,
			fold:     foldElementwise,
			canon:    binaryPatterns[bin.name],
			example:  fmt.Sprintf(`%%2 = "graph.%s"(%%0, %%1) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>`, bin.name),
		}
		ops = append(ops, s)
	}
	ops = append(ops,
		&opSpec{
			name:    "cmp",
			summary: "elementwise comparison",
			description: "Compares a and b elementwise with `predicate` and gives an i1 tensor of the " +
				"broadcast shape. Comparisons with NaN are false, except `ne`, which is true." + broadcastNote,
			operands: []operand{{"lhs", anyElem, "a"}, {"rhs", anyElem, "b"}},
			results:  []ir.ArgDoc{{Name: "result", Doc: "an i1 tensor"}},
			traits:   pure,
			attrs: []attrSpec{{name: "predicate", kind: kindEnum, required: true, enum: CmpPredicates,
				doc: `one of "eq", "ne", "lt", "le", "gt", "ge"`}},
			rule:    ruleCmp,
			class:   ClassPointwise,
			fold:    foldElementwise,
			example: `%2 = "graph.cmp"(%0, %1) <{predicate = "lt"}> : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>`,
		},
		&opSpec{
			name:    "select",
			summary: "elementwise choice",
			description: "Gives a where cond is true and b elsewhere. a and b share an element type; " +
				"all three operands broadcast together." + broadcastNote,
			operands: []operand{{"cond", boolElem, "the i1 condition"}, {"a", anyElem, "taken where cond is true"}, {"b", anyElem, "taken where cond is false"}},
			results:  resultDoc,
			traits:   pure,
			rule:     ruleSelect,
			class:    ClassPointwise,
			fold:     foldElementwise,
			canon:    []*ir.Pattern{selectConstCond, selectSame},
			example:  `%3 = "graph.select"(%0, %1, %2) : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>`,
		},
		&opSpec{
			name:    "cast",
			summary: "elementwise conversion of the element type",
			description: "Converts each element to the result's element type (the result has the " +
				"operand's shape). Float to integer truncates toward zero, saturating at the integer's " +
				"range, with NaN giving 0; integer to float rounds to nearest even; to i1 gives x ≠ 0; " +
				"i1 converts as 0 or 1; float to float rounds to nearest even.",
			operands: []operand{{"x", anyElem, "the input"}},
			results:  []ir.ArgDoc{{Name: "result", Doc: "the converted tensor; its element type is the target"}},
			traits:   pure,
			rule:     ruleCast,
			class:    ClassPointwise,
			fold:     foldElementwise,
			canon:    []*ir.Pattern{castSame, castCast},
			example:  `%1 = "graph.cast"(%0) : (tensor<4xf32>) -> tensor<4xi32>`,
		},
	)
	for _, r := range []struct{ name, what string }{
		{"reduce_sum", "the sum"}, {"reduce_max", "the maximum (NaN if any is NaN; -inf, or the least integer, when empty)"},
		{"reduce_min", "the minimum (NaN if any is NaN; +inf, or the greatest integer, when empty)"},
		{"reduce_mean", "the arithmetic mean (NaN when empty)"},
	} {
		class := numericElem
		if r.name == "reduce_mean" {
			class = floatElem
		}
		ops = append(ops, &opSpec{
			name:    r.name,
			summary: strings.TrimPrefix(r.name, "reduce_") + " over axes",
			description: fmt.Sprintf("Reduces x over `axes` (every axis when absent) to %s. With `keepdims`, "+
				"reduced dims stay as size 1; otherwise they are removed. Sums accumulate in the element type "+
				"(f16 and bf16 in float32).", r.what),
			operands: []operand{{"x", class, "the input"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    reduceAttrs,
			rule:     ruleReduce,
			class:    ClassReduction,
			example:  fmt.Sprintf(`%%1 = "graph.%s"(%%0) <{axes = [1], keepdims = false}> : (tensor<4x3xf32>) -> tensor<4xf32>`, r.name),
		})
	}
	ops = append(ops,
		&opSpec{
			name:    "argmax",
			summary: "index of the maximum along an axis",
			description: "Gives, as i64, the index of the largest element along `axis`; the first such " +
				"index on ties, and the first NaN if there is one. With `keepdims` the axis stays as size 1.",
			operands: []operand{{"x", numericElem, "the input (non-empty along axis)"}},
			results:  []ir.ArgDoc{{Name: "result", Doc: "an i64 tensor of indices"}},
			traits:   pure,
			attrs: []attrSpec{
				{name: "axis", kind: kindInt, required: true, doc: "the axis (negative counts from the end)"},
				{name: "keepdims", kind: kindBool, def: false, doc: "keep the axis as size 1 (default false)"},
			},
			rule:    ruleArgmax,
			class:   ClassReduction,
			example: `%1 = "graph.argmax"(%0) <{axis = 1 : i64, keepdims = false}> : (tensor<4x3xf32>) -> tensor<4xi64>`,
		},
		&opSpec{
			name:    "reshape",
			summary: "the same elements in another shape",
			description: "Reinterprets x's elements, in row-major order, with a new shape: `shape` when given " +
				"(one entry may be -1, meaning whatever size the element count leaves), else the result " +
				"type. Element counts must agree.",
			operands: []operand{{"x", anyElem, "the input"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{{name: "shape", kind: kindInts, doc: "the new shape"}},
			rule:     ruleReshape,
			class:    ClassView,
			fold:     foldSplatShape,
			canon:    []*ir.Pattern{reshapeSame, reshapeReshape},
			example:  `%1 = "graph.reshape"(%0) <{shape = [3, 2]}> : (tensor<2x3xf32>) -> tensor<3x2xf32>`,
		},
		&opSpec{
			name:    "transpose",
			summary: "permutes the dims",
			description: "Result dim i is x's dim perm[i]: result[i₀, …, iₙ] = x[j] where j[perm[k]] = i_k " +
				"(numpy.transpose).",
			operands: []operand{{"x", anyElem, "the input"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{{name: "perm", kind: kindInts, required: true, doc: "a permutation of 0…rank-1"}},
			rule:     ruleTranspose,
			class:    ClassView,
			fold:     foldSplatShape,
			canon:    []*ir.Pattern{transposeIdentity, transposeTranspose, transposeMatmul, transposeUnitDims},
			example:  `%1 = "graph.transpose"(%0) <{perm = [1, 0]}> : (tensor<2x3xf32>) -> tensor<3x2xf32>`,
		},
		&opSpec{
			name:    "broadcast_to",
			summary: "broadcasts to a shape",
			description: "Stretches x to `shape` as NumPy does (numpy.broadcast_to): x's dims align with the " +
				"trailing entries of shape, and each must equal the entry or be 1.",
			operands: []operand{{"x", anyElem, "the input"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{{name: "shape", kind: kindInts, required: true, doc: "the target shape (rank >= x's rank)"}},
			rule:     ruleBroadcastTo,
			class:    ClassView,
			fold:     foldSplatShape,
			canon:    []*ir.Pattern{broadcastSame, broadcastBroadcast},
			example:  `%1 = "graph.broadcast_to"(%0) <{shape = [4, 3]}> : (tensor<3xf32>) -> tensor<4x3xf32>`,
		},
		&opSpec{
			name:    "concat",
			summary: "joins tensors along an axis",
			description: "Joins one or more tensors of equal rank and element type along `axis`; every " +
				"other dim must agree (numpy.concatenate).",
			operands: []operand{{"inputs", anyElem, "the tensors to join"}},
			variadic: true,
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{{name: "axis", kind: kindInt, required: true, doc: "the axis to join along"}},
			rule:     ruleConcat,
			class:    ClassPointwise,
			example:  `%2 = "graph.concat"(%0, %1) <{axis = 0 : i64}> : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>`,
		},
		&opSpec{
			name:    "slice",
			summary: "a strided window",
			description: "Takes, along each dim d, the indices starts[d], starts[d]+strides[d], … below " +
				"limits[d] (x[s₀:l₀:t₀, …] in NumPy, without negative indices). Result dim d has size " +
				"ceil((limits[d]-starts[d])/strides[d]).",
			operands: []operand{{"x", anyElem, "the input"}},
			results:  resultDoc,
			traits:   pure,
			attrs: []attrSpec{
				{name: "starts", kind: kindInts, required: true, doc: "first index per dim"},
				{name: "limits", kind: kindInts, required: true, doc: "exclusive end per dim"},
				{name: "strides", kind: kindInts, doc: "step per dim, >= 1 (default all 1)"},
			},
			rule:    ruleSlice,
			class:   ClassView,
			example: `%1 = "graph.slice"(%0) <{limits = [2, 3], starts = [0, 1], strides = [1, 1]}> : (tensor<4x3xf32>) -> tensor<2x2xf32>`,
		},
		&opSpec{
			name:    "pad",
			summary: "pads with a constant",
			description: "Adds low[d] elements before and high[d] elements after dim d, all equal to " +
				"`value` (0 when absent) (numpy.pad with mode \"constant\").",
			operands: []operand{{"x", anyElem, "the input"}},
			results:  resultDoc,
			traits:   pure,
			attrs: []attrSpec{
				{name: "low", kind: kindInts, required: true, doc: "padding before each dim, >= 0"},
				{name: "high", kind: kindInts, required: true, doc: "padding after each dim, >= 0"},
				{name: "value", kind: kindScalar, doc: "the padding value (default 0)"},
			},
			rule:    rulePad,
			class:   ClassPointwise,
			example: `%1 = "graph.pad"(%0) <{high = [0, 2], low = [1, 0], value = 0.0 : f32}> : (tensor<2x3xf32>) -> tensor<3x5xf32>`,
		},
		&opSpec{
			name:    "gather",
			summary: "picks slices by index along an axis",
			description: "numpy.take(x, indices, axis): result[a…, i…, b…] = x[a…, indices[i…], b…], so the " +
				"result shape is x.shape[:axis] + indices.shape + x.shape[axis+1:]. Negative indices count " +
				"from the end; an index out of range is an error at run time.",
			operands: []operand{{"x", anyElem, "the input"}, {"indices", intElem, "the indices (i64 or i32)"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{{name: "axis", kind: kindInt, required: true, doc: "the axis indexed"}},
			rule:     ruleGather,
			class:    ClassPointwise,
			example:  `%2 = "graph.gather"(%0, %1) <{axis = 0 : i64}> : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>`,
		},
		&opSpec{
			name:    "scatter_add",
			summary: "sums slices into positions by index along an axis (the adjoint of gather)",
			description: "The adjoint of graph.gather: result[a…, j, b…] is the sum of updates[a…, i…, b…] over " +
				"the positions i… of indices whose index is j, 0 where none is (index_add into zeros), so " +
				"the result shape is updates.shape[:axis] + [size] + updates.shape[axis+rank(indices):]. " +
				"Negative indices count from the end; an index out of range is an error at run time. The " +
				"sums run in the element type, f32 or f64 (a bf16 or f16 gradient is cast to f32 first): " +
				"the interpreter adds in the order of the indices, a GPU kernel adds with atomics in no " +
				"particular order, so a sum of several values may round differently from run to run.",
			operands: []operand{{"updates", wideFloatElem, "the values, f32 or f64"}, {"indices", intElem, "the indices (i64 or i32)"}},
			results:  []ir.ArgDoc{{Name: "result", Doc: "updates.shape[:axis] + [size] + updates.shape[axis+rank(indices):]"}},
			traits:   pure,
			attrs: []attrSpec{
				{name: "axis", kind: kindInt, required: true, doc: "the result's axis the indices address"},
				{name: "size", kind: kindInt, required: true, doc: "the result's size along axis, >= 0"},
			},
			rule:    ruleScatterAdd,
			class:   ClassScatter,
			example: `%2 = "graph.scatter_add"(%0, %1) <{axis = 0 : i64, size = 10 : i64}> : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xf32>`,
		},
		&opSpec{
			name:    "matmul",
			summary: "matrix product (numpy.matmul)",
			description: "numpy.matmul: the product over the last dim of lhs and the second-to-last of rhs, " +
				"with batch dims broadcast. A 1-D lhs is a row vector and a 1-D rhs a column vector; the " +
				"added dim is removed from the result. f16 and bf16 accumulate in float32 and round once; " +
				"f32 accumulates in float32. With a bias [N] (of the operands' type; rhs of rank >= 2) " +
				"each sum is added to bias[n] in the accumulator before the one rounding: PyTorch's " +
				"linear (addmm), whose bias a matmul library adds in its float32 epilogue.",
			operands: []operand{{"lhs", numericElem, "[..., M, K] or [K]"}, {"rhs", numericElem, "[..., K, N] or [K]"}, {"bias", numericElem, "[N], added before rounding"}},
			optional: 1,
			results:  []ir.ArgDoc{{Name: "result", Doc: "[..., M, N]"}},
			traits:   pure,
			rule:     ruleMatmul,
			class:    ClassTemplate,
			canon:    []*ir.Pattern{matmulFoldBatch},
			example:  `%2 = "graph.matmul"(%0, %1) : (tensor<8x4x3xf32>, tensor<3x5xf32>) -> tensor<8x4x5xf32>`,
		},
		&opSpec{
			name:    "conv2d",
			summary: "2-D convolution, NCHW or NHWC",
			description: "PyTorch's conv2d (cross-correlation) on an input [N, C, H, W] with a weight " +
				"[O, C/groups, KH, KW] and an optional bias [O]. Output size per spatial dim is " +
				"(in + pad_lo + pad_hi - dilation·(k-1) - 1) / stride + 1. Accumulates in float32 for " +
				"f16 and bf16. With layout \"NHWC\" (channels last, as graph-channels-last makes it) the " +
				"input is [N, H, W, C], the weight [O, KH, KW, C/groups] and the result [N, OH, OW, O]: " +
				"the same sums, the tensors stored with their channels last.",
			operands: []operand{{"input", numericElem, "[N, C, H, W]"}, {"weight", numericElem, "[O, C/groups, KH, KW]"}, {"bias", numericElem, "[O]"}},
			optional: 1,
			results:  []ir.ArgDoc{{Name: "result", Doc: "[N, O, OH, OW]"}},
			traits:   pure,
			attrs: []attrSpec{
				{name: "strides", kind: kindInts, doc: "(h, w), default [1, 1]"},
				{name: "padding", kind: kindInts, doc: "(h, w) on both sides, or (top, left, bottom, right); default zeros"},
				{name: "dilations", kind: kindInts, doc: "(h, w), default [1, 1]"},
				{name: "groups", kind: kindInt, def: int64(1), doc: "channel groups, default 1"},
				{name: "layout", kind: kindEnum, enum: []string{LayoutNCHW, LayoutNHWC}, def: LayoutNCHW, doc: `"NCHW" (the default) or "NHWC": the order of the operands' and the result's dimensions`},
			},
			rule:    ruleConv2D,
			class:   ClassTemplate,
			example: `%2 = "graph.conv2d"(%0, %1) <{padding = [1, 1], strides = [1, 1]}> : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>`,
		},
		&opSpec{
			name:    "softmax",
			summary: "softmax along an axis (composite)",
			description: "exp(x - max(x)) / sum(exp(x - max(x))) along `axis` (default -1); the max " +
				"subtraction keeps it finite. graph-decompose expands it into primitives." + compositeNote,
			operands: []operand{{"x", floatElem, "the input"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{{name: "axis", kind: kindInt, def: int64(-1), doc: "the axis (default -1)"}},
			rule:     ruleSoftmax,
			class:    ClassComposite,
			example:  `%1 = "graph.softmax"(%0) <{axis = -1 : i64}> : (tensor<2x8xf32>) -> tensor<2x8xf32>`,
		},
		&opSpec{
			name:        "log_softmax",
			summary:     "log of softmax along an axis (composite)",
			description: "x - max(x) - log(sum(exp(x - max(x)))) along `axis` (default -1)." + compositeNote,
			operands:    []operand{{"x", floatElem, "the input"}},
			results:     resultDoc,
			traits:      pure,
			attrs:       []attrSpec{{name: "axis", kind: kindInt, def: int64(-1), doc: "the axis (default -1)"}},
			rule:        ruleSoftmax,
			class:       ClassComposite,
			example:     `%1 = "graph.log_softmax"(%0) <{axis = -1 : i64}> : (tensor<2x8xf32>) -> tensor<2x8xf32>`,
		},
		&opSpec{
			name:    "logsumexp",
			summary: "log of the sum of exponentials along an axis (composite)",
			description: "m + log(sum(exp(x - m))) along `axis` (default -1), m the maximum along the axis " +
				"taken as 0 where it is infinite (so a row of -inf gives -inf, a row holding +inf gives +inf); " +
				"with `keepdims` the axis stays as size 1. Its gradient, exp(x - result), needs only x and " +
				"the result: nothing of the size of x is saved for it." + compositeNote,
			operands: []operand{{"x", floatElem, "the input"}},
			results:  resultDoc,
			traits:   pure,
			attrs: []attrSpec{
				{name: "axis", kind: kindInt, def: int64(-1), doc: "the axis (default -1)"},
				{name: "keepdims", kind: kindBool, def: false, doc: "keep the axis as size 1 (default false)"},
			},
			rule:    ruleLogSumExp,
			class:   ClassComposite,
			example: `%1 = "graph.logsumexp"(%0) <{axis = -1 : i64, keepdims = false}> : (tensor<2x8xf32>) -> tensor<2xf32>`,
		},
		&opSpec{
			name:    "layer_norm",
			summary: "layer normalization (composite)",
			description: "Normalizes x over dims axis…rank-1: (x - mean) / sqrt(var + epsilon) · w + b, " +
				"with the biased variance mean((x - mean)²) (PyTorch's layer_norm). w and b have the " +
				"shape of the normalized dims." + compositeNote,
			operands: []operand{{"x", floatElem, "the input"}, {"weight", floatElem, "scale, shape x.shape[axis:]"}, {"bias", floatElem, "shift, shape x.shape[axis:]"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    normAttrs,
			rule:     ruleNorm,
			class:    ClassComposite,
			example:  `%3 = "graph.layer_norm"(%0, %1, %2) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>`,
		},
		&opSpec{
			name:    "rms_norm",
			summary: "root-mean-square normalization (composite)",
			description: "x / sqrt(mean(x²) + epsilon) · w, the mean taken over dims axis…rank-1; w has " +
				"the shape of those dims." + compositeNote,
			operands: []operand{{"x", floatElem, "the input"}, {"weight", floatElem, "scale, shape x.shape[axis:]"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    normAttrs,
			rule:     ruleNorm,
			class:    ClassComposite,
			example:  `%2 = "graph.rms_norm"(%0, %1) <{axis = -1 : i64, epsilon = 1.0e-06 : f32}> : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>`,
		},
		&opSpec{
			name:    "attention",
			summary: "scaled dot-product attention (composite)",
			description: "softmax(q·kᵀ·scale + mask) · v over the last two dims, batch dims broadcast. " +
				"scale defaults to 1/√D (D = q's last dim). An i1 mask keeps scores where true " +
				"(others become -inf); a float mask is added. With `causal`, scores with key index " +
				"j > query index i are masked (PyTorch's is_causal, aligned at the top left). The " +
				"scores q·kᵀ are computed, scaled, masked and normalized in the compute type (f32 for " +
				"f16 and bf16: the products of the elements summed in f32, never rounded to the element " +
				"type), the probabilities rounded to the element type once, and their product with v " +
				"accumulates in f32 and rounds to the element type once: PyTorch's " +
				"scaled_dot_product_attention, whose kernels keep the scores in f32.",
			operands: []operand{
				{"q", floatElem, "[..., Lq, D]"}, {"k", floatElem, "[..., Lk, D]"}, {"v", floatElem, "[..., Lk, Dv]"},
				{"mask", anyElem, "i1 or q's type, broadcastable to [..., Lq, Lk]"},
			},
			optional: 1,
			results:  []ir.ArgDoc{{Name: "result", Doc: "[..., Lq, Dv]"}},
			traits:   pure,
			attrs: []attrSpec{
				{name: "scale", kind: kindFloat, doc: "score scale (default 1/√D)"},
				{name: "causal", kind: kindBool, def: false, doc: "apply a causal mask (default false)"},
			},
			rule:    ruleAttention,
			class:   ClassComposite,
			example: `%3 = "graph.attention"(%0, %1, %2) <{causal = true}> : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>`,
		},
		&opSpec{
			name:    "attention_grad",
			summary: "gradients of scaled dot-product attention (composite)",
			description: "The gradients (dq, dk, dv) of `graph.attention`(q, k, v) with the same `scale` and " +
				"`causal` and no mask, for the result's gradient do, given the forward result o " +
				"(graph-autodiff's VJP of an unmasked attention over equal batch dims emits it). With " +
				"P = softmax(q·kᵀ·scale) as graph.attention computes it and D = Σ_j do·o along the " +
				"last dim (both in the compute type): dv = Pᵀ·do with P rounded to the element type once, " +
				"dS = P·(do·vᵀ − D)·scale in the compute type (do·vᵀ a product of the widened " +
				"operands), rounded to the element type once, then dq = dS·k and dk = dSᵀ·q. D is " +
				"taken from o as given (a fused backward kernel reads it instead of recomputing " +
				"P·v), so o must be the forward's result for the gradients to be attention's. " +
				"graph-attention-to-flash runs it as fused kernels; graph-decompose expands it into " +
				"primitives." + compositeNote,
			operands: []operand{
				{"q", floatElem, "[..., Lq, D]"}, {"k", floatElem, "[..., Lk, D]"}, {"v", floatElem, "[..., Lk, Dv]"},
				{"o", floatElem, "the forward result, [..., Lq, Dv]"}, {"do", floatElem, "the result's gradient, [..., Lq, Dv]"},
			},
			results: []ir.ArgDoc{{Name: "dq", Doc: "q's type"}, {Name: "dk", Doc: "k's type"}, {Name: "dv", Doc: "v's type"}},
			traits:  pure,
			attrs: []attrSpec{
				{name: "scale", kind: kindFloat, doc: "score scale (default 1/√D)"},
				{name: "causal", kind: kindBool, def: false, doc: "the forward's causal mask (default false)"},
			},
			rule:    ruleAttentionGrad,
			class:   ClassComposite,
			example: `%5:3 = "graph.attention_grad"(%0, %1, %2, %3, %4) <{causal = true}> : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>)`,
		},
		&opSpec{
			name:    "fusion",
			summary: "a group of ops that becomes one kernel",
			description: "Made by graph-fuse. The single-block region receives the operands as block " +
				"arguments (it is isolated from above) and ends in graph.yield, whose operands are the " +
				"results. Running it means running its body.",
			operands: []operand{{"inputs", anyElem, "values the body reads"}},
			optional: 1,
			variadic: true,
			results:  []ir.ArgDoc{{Name: "results", Doc: "the yielded values"}},
			traits:   ir.IsolatedFromAbove | ir.SingleBlock | ir.RecursiveEffects,
			attrs: []attrSpec{{name: "kind", kind: kindEnum, enum: FusionKinds,
				doc: "what kernel the group becomes (set by graph-fuse): " + strings.Join(FusionKinds, ", ")}},
			rule:   ruleRegion,
			class:  ClassStructure,
			verify: verifyFusion,
			example: `%2 = "graph.fusion"(%0, %1) ({
^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
  %s = "graph.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = "graph.relu"(%s) : (tensor<4xf32>) -> tensor<4xf32>
  "graph.yield"(%r) : (tensor<4xf32>) -> ()
}) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>`,
		},
		&opSpec{
			name:        "yield",
			summary:     "ends a graph.fusion body",
			description: "Gives the values of the enclosing graph.fusion's results.",
			operands:    []operand{{"values", anyElem, "one per result of the fusion"}},
			optional:    1,
			variadic:    true,
			traits:      pure | ir.Terminator | ir.ReturnLike,
			rule:        ruleYield,
			class:       ClassStructure,
			verify:      verifyYield,
			example:     `"graph.yield"(%0) : (tensor<4xf32>) -> ()`,
		},
	)
	ops = append(ops, collectiveOps()...)
	return ops
}

// FusionKinds are the values of graph.fusion's kind attribute: a pointwise
// loop nest, a reduction (with its prologue and epilogue), a persistent row
// reduction (whole rows reduced and reused in one kernel), a matmul or conv2d
// template with its epilogue, a scatter_add alone, an undecomposed composite,
// or a copy that materializes a view.
var FusionKinds = []string{"pointwise", "reduction", "persistent_row", "matmul", "conv2d", "scatter", "composite", "copy"}

// CmpPredicates are the values of graph.cmp's predicate attribute.
var CmpPredicates = []string{"eq", "ne", "lt", "le", "gt", "ge"}

var reduceAttrs = []attrSpec{
	{name: "axes", kind: kindInts, doc: "the axes to reduce, distinct (negative count from the end; default all)"},
	{name: "keepdims", kind: kindBool, def: false, doc: "keep reduced dims as size 1 (default false)"},
}

var normAttrs = []attrSpec{
	{name: "axis", kind: kindInt, def: int64(-1), doc: "first normalized dim (default -1)"},
	{name: "epsilon", kind: kindFloat, def: 1e-5, doc: "added to the variance (default 1e-05)"},
}
