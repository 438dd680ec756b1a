// Package passtest is the property-test kit for passes over the graph
// dialect: rapid generators of random well-typed graph programs and checks
// that a pass pipeline keeps the reference interpreter's results
// (PreservesSemantics), reaches a fixpoint in one run (Idempotent), leaves IR
// the verifier accepts (VerifierAccepts), and that printing then parsing a
// program gives it back (RoundTrips).
//
// A typical test of a pass registered as "my-pass":
//
//	func TestMyPass(t *testing.T) {
//		gen := passtest.GraphProgram(passtest.Config{})
//		passtest.PreservesSemantics(t, "func.func(my-pass)", gen)
//		passtest.Idempotent(t, "func.func(my-pass)", gen)
//	}
//
// Each check also has a form on one program (CheckSemantics, CheckIdempotent,
// ...) that returns an error, for programs from elsewhere.
package passtest

import (
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// Config bounds the programs GraphProgram draws. Zero fields take the
// defaults given with each.
type Config struct {
	// Floats are the float element types a program may use; each program
	// draws one of them. Default f64, f32, f16, bf16.
	Floats []ir.Type
	// Ints are the integer element types a program may use besides i1;
	// each program draws one. Default i32, i64.
	Ints []ir.Type
	// MaxArgs bounds the function's arguments (at least one). Default 3.
	MaxArgs int
	// MaxOps bounds the ops drawn (helper ops such as a transpose feeding a
	// matmul come on top). Default 10.
	MaxOps int
	// MaxRank bounds the rank of the arguments. Default 3.
	MaxRank int
	// MaxDim bounds each static size of the arguments; sizes 0 and 1 are
	// drawn as well. Default 3.
	MaxDim int
	// Families restricts the op families drawn from (see Families); all of
	// them by default. A family listed twice is drawn twice as often.
	Families []string
}

func (c Config) withDefaults() Config {
	if len(c.Floats) == 0 {
		c.Floats = []ir.Type{ir.F64, ir.F32, ir.F16, ir.BF16}
	}
	if len(c.Ints) == 0 {
		c.Ints = []ir.Type{ir.I32, ir.I64}
	}
	if c.MaxArgs <= 0 {
		c.MaxArgs = 3
	}
	if c.MaxOps <= 0 {
		c.MaxOps = 10
	}
	if c.MaxRank <= 0 {
		c.MaxRank = 3
	}
	if c.MaxDim <= 0 {
		c.MaxDim = 3
	}
	if len(c.Families) == 0 {
		c.Families = Families()
	}
	return c
}

// Program is a generated module holding one function.
type Program struct {
	// Source is the module in the generic form.
	Source string
	// Func is the name of the function (without @).
	Func string
}

// String returns the program's source, so that failures show it.
func (p *Program) String() string { return p.Source }

// Parse reads the program into ctx, which must hold the graph, func and
// builtin dialects (dialects.NewContext does).
func (p *Program) Parse(ctx *ir.Context) (*ir.Operation, error) {
	return ir.Parse(ctx, p.Source, ir.ParseOptions{Filename: "passtest.mlir"})
}

// family draws one op (and any helpers it needs) from the values built so
// far; a nil result with a nil error means no operand fits.
type family func(g *genState) (*ir.Value, error)

// families are the op families, by name: every op of the graph dialect but
// conv2d and the structural fusion/yield is drawn by one of them.
var families = map[string]family{
	"constant":  genConstant,
	"unary":     genUnary,
	"binary":    genBinary,
	"compare":   genCompare,
	"select":    genSelect,
	"cast":      genCast,
	"reduce":    genReduce,
	"shape":     genShape,
	"matmul":    genMatmul,
	"composite": genComposite,
}

// Families returns the names of the op families Config.Families accepts.
func Families() []string {
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// GraphProgram returns a generator of random well-typed programs: a module
// with one function @f whose arguments are tensors of random ranks and
// sizes (0 and 1 included) with broadcast-compatible shapes, and whose body
// is a random DAG of graph ops, each built with graph.Build so that it
// verifies. The function returns one to three of the values computed.
// It panics when cfg names an unknown op family: a bug in the test.
func GraphProgram(cfg Config) *rapid.Generator[*Program] {
	cfg = cfg.withDefaults()
	for _, f := range cfg.Families {
		if families[f] == nil {
			panic(fmt.Sprintf("passtest: unknown op family %q (have %v)", f, Families()))
		}
	}
	return rapid.Custom(func(t *rapid.T) *Program {
		p, err := generate(t, cfg)
		if err != nil {
			t.Fatalf("passtest: generated an invalid program: %v", err)
		}
		return p
	})
}

// genState is the state of one program being drawn.
type genState struct {
	t     *rapid.T
	b     *ir.Builder
	loc   ir.Location
	float ir.Type // the program's float element type
	int   ir.Type // the program's integer element type
	pool  []*ir.Value
}

func generate(t *rapid.T, cfg Config) (*Program, error) {
	ctx := dialects.NewContext()
	g := &genState{
		t:     t,
		b:     ir.NewBuilder(ctx),
		loc:   ir.UnknownLoc{},
		float: rapid.SampledFrom(cfg.Floats).Draw(t, "float"),
		int:   rapid.SampledFrom(cfg.Ints).Draw(t, "int"),
	}
	module := builtin.NewModule(g.loc)
	g.b.SetInsertionPointToEnd(builtin.ModuleBody(module))

	// Arguments take trailing dims of one base shape, some set to 1, so
	// that most pairs broadcast.
	base := rapid.SliceOfN(rapid.SampledFrom(sizes(cfg.MaxDim)), 0, cfg.MaxRank).Draw(t, "base")
	var inputs []ir.Type
	for i := range rapid.IntRange(1, cfg.MaxArgs).Draw(t, "nargs") {
		shape := slices.Clone(base[len(base)-rapid.IntRange(0, len(base)).Draw(t, "rank"):])
		for d := range shape {
			if rapid.IntRange(0, 4).Draw(t, "ones") == 0 {
				shape[d] = 1
			}
		}
		elem := g.float
		switch rapid.IntRange(0, 7).Draw(t, fmt.Sprint("elem", i)) {
		case 0, 1:
			elem = g.int
		case 2:
			elem = ir.I1
		}
		inputs = append(inputs, ir.TensorOf(shape, elem))
	}
	fn, entry := funcs.NewFunc(g.b, "f", ir.FunctionOf(inputs, nil), g.loc)
	g.pool = slices.Clone(entry.Arguments())
	g.b.SetInsertionPointToEnd(entry)

	for range rapid.IntRange(1, cfg.MaxOps).Draw(t, "nops") {
		name := rapid.SampledFrom(cfg.Families).Draw(t, "family")
		v, err := families[name](g)
		if err != nil {
			return nil, fmt.Errorf("family %s: %w", name, err)
		}
		if v != nil {
			g.pool = append(g.pool, v)
		}
	}

	// The last value and up to two other values nothing uses are
	// returned, so that most of the program is live; the rest is dead code
	// for the cleanups to find.
	results := []*ir.Value{g.pool[len(g.pool)-1]}
	var sinks []*ir.Value
	for _, v := range g.pool[:len(g.pool)-1] {
		if !v.HasUses() {
			sinks = append(sinks, v)
		}
	}
	for i := range rapid.IntRange(0, min(2, len(sinks))).Draw(t, "nsinks") {
		results = append(results, rapid.SampledFrom(sinks).Draw(t, fmt.Sprint("sink", i)))
	}
	var resultTypes []ir.Type
	for _, r := range results {
		resultTypes = append(resultTypes, r.Type())
	}
	funcs.Return(g.b, g.loc, results...)
	fn.SetProperty(funcs.FunctionTypeAttr, ir.TypeAttr{Type: ir.FunctionOf(inputs, resultTypes)})
	if err := ir.Verify(module); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, ir.Sprint(module, ir.PrintOptions{Generic: true}))
	}
	return &Program{Source: ir.Sprint(module, ir.PrintOptions{Generic: true}), Func: "f"}, nil
}

// sizes lists the static sizes drawn for dims: 0 and 1 to max, the
// nonzero ones twice so that empty tensors are not the rule.
func sizes(max int) []int64 {
	out := []int64{0}
	for s := 1; s <= max; s++ {
		out = append(out, int64(s), int64(s))
	}
	return out
}

// Element classes of operands.
func isFloat(t ir.Type) bool   { return ir.IsFloat(t) }
func isNumeric(t ir.Type) bool { return t != ir.I1 }
func isAny(ir.Type) bool       { return true }
func isBool(t ir.Type) bool    { return t == ir.I1 }

func shapeOf(v *ir.Value) []int64 { return v.Type().(*ir.TensorType).Shape() }
func elemOf(v *ir.Value) ir.Type  { return ir.ElementTypeOf(v.Type()) }

// pick draws a value of the pool whose element type satisfies ok and whose
// rank is at least minRank; false when there is none.
func (g *genState) pick(label string, minRank int, ok func(ir.Type) bool) (*ir.Value, bool) {
	var fit []*ir.Value
	for _, v := range g.pool {
		if ok(elemOf(v)) && len(shapeOf(v)) >= minRank {
			fit = append(fit, v)
		}
	}
	if len(fit) == 0 {
		return nil, false
	}
	return rapid.SampledFrom(fit).Draw(g.t, label), true
}

// build creates graph op name. A shape rule's rejection is not an error of
// the generator: the op is simply not drawn (nil, nil).
func (g *genState) build(name string, operands []*ir.Value, attrs ...ir.NamedAttr) *ir.Value {
	v, err := graph.Build(g.b, name, g.loc, operands, ir.Dict(attrs...))
	if err != nil {
		return nil
	}
	return v
}

func attr(name string, v ir.Attribute) ir.NamedAttr { return ir.NamedAttr{Name: name, Value: v} }

func i64(v int64) ir.IntegerAttr { return ir.IntegerAttr{Value: v, Type: ir.I64} }

// scalarAttr is v as an attribute of element type elem (a fill or pad value).
func scalarAttr(elem ir.Type, v float64) ir.Attribute {
	if ft, ok := elem.(*ir.FloatType); ok {
		return ir.Float(v, ft)
	}
	return ir.IntegerAttr{Value: int64(v), Type: elem}
}

// constantValues are the element values constants draw from: small, exact
// in every float type, with zero and negatives.
var constantValues = []float64{0, 1, -1, 0.5, 2, -3, 7}

func genConstant(g *genState) (*ir.Value, error) {
	elem := rapid.SampledFrom([]ir.Type{g.float, g.int, ir.I1}).Draw(g.t, "celem")
	shape := rapid.SliceOfN(rapid.SampledFrom(sizes(3)), 0, 2).Draw(g.t, "cshape")
	typ := ir.TensorOf(shape, elem)
	values := constantValues
	if elem == ir.I1 {
		values = []float64{0, 1}
	}
	value := func() float64 { return rapid.SampledFrom(values).Draw(g.t, "cvalue") }
	switch kind := rapid.SampledFrom([]string{"constant", "splat", "iota", "full"}).Draw(g.t, "ckind"); kind {
	case "iota", "full":
		if elem == ir.I1 && kind == "iota" || len(shape) == 0 && kind == "iota" {
			return nil, nil
		}
		a := attr("fill", scalarAttr(elem, value()))
		if kind == "iota" {
			a = attr("axis", i64(int64(rapid.IntRange(0, len(shape)-1).Draw(g.t, "axis"))))
		}
		return graph.BuildTyped(g.b, kind, g.loc, nil, ir.Dict(a), typ)
	default:
		n := int(ir.NumElements(shape))
		if kind == "splat" {
			n = 1
		}
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = value()
		}
		var d ir.DenseAttr
		if isFloat(elem) {
			d = ir.DenseFloats(typ, vs)
		} else {
			is := make([]int64, n)
			for i, v := range vs {
				is[i] = int64(v)
			}
			d = ir.DenseInts(typ, is)
		}
		if kind == "splat" {
			d.Splat = true
		}
		return graph.Build(g.b, "constant", g.loc, nil, ir.Dict(attr("value", d)))
	}
}

var (
	floatUnary = []string{"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "erf", "sin", "cos", "reciprocal"}
	intUnary   = []string{"neg", "abs", "relu"}
	binaryOps  = []string{"add", "sub", "mul", "div", "pow", "max", "min"}
)

func genUnary(g *genState) (*ir.Value, error) {
	x, ok := g.pick("x", 0, isNumeric)
	if !ok {
		return nil, nil
	}
	names := intUnary
	if isFloat(elemOf(x)) {
		names = floatUnary
	}
	name := rapid.SampledFrom(names).Draw(g.t, "unary")
	var attrs []ir.NamedAttr
	if name == "gelu" {
		attrs = append(attrs, attr("approximate", ir.Str(rapid.SampledFrom([]string{"none", "tanh"}).Draw(g.t, "approximate"))))
	}
	return g.build(name, []*ir.Value{x}, attrs...), nil
}

// pickPartner draws a value with x's element type (x itself included).
func (g *genState) pickPartner(x *ir.Value) *ir.Value {
	y, _ := g.pick("y", 0, func(t ir.Type) bool { return t == elemOf(x) })
	return y
}

func genBinary(g *genState) (*ir.Value, error) {
	x, ok := g.pick("x", 0, isNumeric)
	if !ok {
		return nil, nil
	}
	return g.build(rapid.SampledFrom(binaryOps).Draw(g.t, "binary"), []*ir.Value{x, g.pickPartner(x)}), nil
}

func genCompare(g *genState) (*ir.Value, error) {
	x, _ := g.pick("x", 0, isAny)
	pred := rapid.SampledFrom(graph.CmpPredicates).Draw(g.t, "predicate")
	return g.build("cmp", []*ir.Value{x, g.pickPartner(x)}, attr("predicate", ir.Str(pred))), nil
}

func genSelect(g *genState) (*ir.Value, error) {
	cond, ok := g.pick("cond", 0, isBool)
	if !ok {
		return nil, nil
	}
	x, _ := g.pick("x", 0, isAny)
	return g.build("select", []*ir.Value{cond, x, g.pickPartner(x)}), nil
}

func genCast(g *genState) (*ir.Value, error) {
	x, _ := g.pick("x", 0, isAny)
	to := rapid.SampledFrom([]ir.Type{g.float, g.int, ir.I1}).Draw(g.t, "to")
	return graph.BuildTyped(g.b, "cast", g.loc, []*ir.Value{x}, nil, ir.TensorOf(shapeOf(x), to))
}

func genReduce(g *genState) (*ir.Value, error) {
	x, ok := g.pick("x", 0, isNumeric)
	if !ok {
		return nil, nil
	}
	rank := len(shapeOf(x))
	kinds := []string{"reduce_sum", "reduce_max", "reduce_min", "argmax"}
	if isFloat(elemOf(x)) {
		kinds = append(kinds, "reduce_mean")
	}
	keep := attr("keepdims", ir.Bool(rapid.Bool().Draw(g.t, "keepdims")))
	kind := rapid.SampledFrom(kinds).Draw(g.t, "reduce")
	if kind == "argmax" {
		if rank == 0 {
			return nil, nil
		}
		axis := rapid.IntRange(0, rank-1).Draw(g.t, "axis")
		if shapeOf(x)[axis] == 0 { // argmax of nothing is undefined
			return nil, nil
		}
		return g.build(kind, []*ir.Value{x}, attr("axis", i64(int64(axis))), keep), nil
	}
	var axes []int64
	for d := range rank {
		if rapid.Bool().Draw(g.t, "reduced") {
			axes = append(axes, int64(d))
		}
	}
	attrs := []ir.NamedAttr{keep}
	if len(axes) > 0 || rapid.Bool().Draw(g.t, "explicit") {
		attrs = append(attrs, attr("axes", graph.Ints(axes...)))
	}
	return g.build(kind, []*ir.Value{x}, attrs...), nil
}

// shapeOps draw one shape op each on x.
var shapeOps = map[string]func(g *genState, x *ir.Value) *ir.Value{
	"reshape": func(g *genState, x *ir.Value) *ir.Value {
		shape := shapeOf(x)
		to := []int64{ir.NumElements(shape)} // flatten
		if rapid.Bool().Draw(g.t, "unsqueeze") {
			at := rapid.IntRange(0, len(shape)).Draw(g.t, "at")
			to = slices.Insert(slices.Clone(shape), at, 1)
		}
		return g.build("reshape", []*ir.Value{x}, attr("shape", graph.Ints(to...)))
	},
	"transpose": func(g *genState, x *ir.Value) *ir.Value {
		perm := rapid.Permutation(iotaInts(len(shapeOf(x)))).Draw(g.t, "perm")
		return g.build("transpose", []*ir.Value{x}, attr("perm", graph.Ints(perm...)))
	},
	"broadcast_to": func(g *genState, x *ir.Value) *ir.Value {
		shape := slices.Clone(shapeOf(x))
		for d := range shape {
			if shape[d] == 1 && rapid.Bool().Draw(g.t, "stretch") {
				shape[d] = 2
			}
		}
		if rapid.Bool().Draw(g.t, "lead") {
			shape = append([]int64{2}, shape...)
		}
		return g.build("broadcast_to", []*ir.Value{x}, attr("shape", graph.Ints(shape...)))
	},
	"concat": func(g *genState, x *ir.Value) *ir.Value {
		if len(shapeOf(x)) == 0 {
			return nil
		}
		axis := rapid.IntRange(0, len(shapeOf(x))-1).Draw(g.t, "axis")
		return g.build("concat", []*ir.Value{x, g.pickPartner(x)}, attr("axis", i64(int64(axis))))
	},
	"slice": func(g *genState, x *ir.Value) *ir.Value {
		shape := shapeOf(x)
		starts, limits, strides := make([]int64, len(shape)), make([]int64, len(shape)), make([]int64, len(shape))
		for d, n := range shape {
			starts[d] = int64(rapid.IntRange(0, int(n)).Draw(g.t, "start"))
			limits[d] = int64(rapid.IntRange(int(starts[d]), int(n)).Draw(g.t, "limit"))
			strides[d] = int64(rapid.IntRange(1, 2).Draw(g.t, "stride"))
		}
		return g.build("slice", []*ir.Value{x}, attr("starts", graph.Ints(starts...)),
			attr("limits", graph.Ints(limits...)), attr("strides", graph.Ints(strides...)))
	},
	"pad": func(g *genState, x *ir.Value) *ir.Value {
		rank := len(shapeOf(x))
		low := rapid.SliceOfN(rapid.Int64Range(0, 2), rank, rank).Draw(g.t, "low")
		high := rapid.SliceOfN(rapid.Int64Range(0, 2), rank, rank).Draw(g.t, "high")
		attrs := []ir.NamedAttr{attr("low", graph.Ints(low...)), attr("high", graph.Ints(high...))}
		if elemOf(x) != ir.I1 && rapid.Bool().Draw(g.t, "padvalue") {
			attrs = append(attrs, attr("value", scalarAttr(elemOf(x), rapid.SampledFrom(constantValues).Draw(g.t, "value"))))
		}
		return g.build("pad", []*ir.Value{x}, attrs...)
	},
	"gather": func(g *genState, x *ir.Value) *ir.Value {
		shape := shapeOf(x)
		if len(shape) == 0 {
			return nil
		}
		axis := rapid.IntRange(0, len(shape)-1).Draw(g.t, "axis")
		n := shape[axis]
		if n == 0 {
			return nil
		}
		idx := rapid.SliceOfN(rapid.Int64Range(-n, n-1), 0, 3).Draw(g.t, "indices")
		indices, err := graph.Build(g.b, "constant", g.loc, nil,
			ir.Dict(attr("value", ir.DenseInts(ir.TensorOf([]int64{int64(len(idx))}, ir.I64), idx))))
		if err != nil {
			return nil
		}
		return g.build("gather", []*ir.Value{x, indices}, attr("axis", i64(int64(axis))))
	},
	"scatter_add": func(g *genState, x *ir.Value) *ir.Value {
		// It sums f32 or f64: drawn among those values rather than x.
		x, ok := g.pick("updates", 1, func(t ir.Type) bool { return t == ir.F32 || t == ir.F64 })
		if !ok {
			return nil
		}
		shape := shapeOf(x)
		// x's dim at axis is the indices' (one index per slice of x);
		// size is the result's, so indices repeat or miss positions.
		axis := rapid.IntRange(0, len(shape)-1).Draw(g.t, "axis")
		size := rapid.Int64Range(1, 4).Draw(g.t, "size")
		n := int(shape[axis])
		idx := rapid.SliceOfN(rapid.Int64Range(-size, size-1), n, n).Draw(g.t, "indices")
		indices, err := graph.Build(g.b, "constant", g.loc, nil,
			ir.Dict(attr("value", ir.DenseInts(ir.TensorOf([]int64{int64(n)}, ir.I64), idx))))
		if err != nil {
			return nil
		}
		return g.build("scatter_add", []*ir.Value{x, indices}, attr("axis", i64(int64(axis))), attr("size", i64(size)))
	},
}

func iotaInts(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

func genShape(g *genState) (*ir.Value, error) {
	x, _ := g.pick("x", 0, isAny)
	names := make([]string, 0, len(shapeOps))
	for n := range shapeOps {
		names = append(names, n)
	}
	slices.Sort(names)
	return shapeOps[rapid.SampledFrom(names).Draw(g.t, "shapeop")](g, x), nil
}

// transposeLast swaps x's last two dims (rank >= 2).
func (g *genState) transposeLast(x *ir.Value) *ir.Value {
	perm := iotaInts(len(shapeOf(x)))
	perm[len(perm)-1], perm[len(perm)-2] = perm[len(perm)-2], perm[len(perm)-1]
	return g.build("transpose", []*ir.Value{x}, attr("perm", graph.Ints(perm...)))
}

func genMatmul(g *genState) (*ir.Value, error) {
	x, ok := g.pick("x", 1, isNumeric)
	if !ok {
		return nil, nil
	}
	if v := g.build("matmul", []*ir.Value{x, g.pickPartner(x)}); v != nil {
		return v, nil
	}
	// x·xᵀ always fits.
	y := x
	if len(shapeOf(x)) >= 2 {
		y = g.transposeLast(x)
	}
	return g.build("matmul", []*ir.Value{x, y}), nil
}

func genComposite(g *genState) (*ir.Value, error) {
	x, ok := g.pick("x", 1, isFloat)
	if !ok {
		return nil, nil
	}
	shape := shapeOf(x)
	rank := len(shape)
	axis := rapid.IntRange(-rank, rank-1).Draw(g.t, "axis")
	axisAttr := attr("axis", i64(int64(axis)))
	eps := attr("epsilon", ir.Float(rapid.SampledFrom([]float64{1e-5, 1e-6, 0.1}).Draw(g.t, "epsilon"), ir.F32))
	// params returns a value of shape x.shape[axis:] made from x: its
	// mean over the leading dims.
	params := func(kind string) *ir.Value {
		first := axis
		if first < 0 {
			first += rank
		}
		if first == 0 {
			return x
		}
		return g.build(kind, []*ir.Value{x}, attr("axes", graph.Ints(iotaInts(first)...)), attr("keepdims", ir.Bool(false)))
	}
	switch kind := rapid.SampledFrom([]string{"softmax", "log_softmax", "logsumexp", "layer_norm", "rms_norm", "attention"}).Draw(g.t, "composite"); kind {
	case "softmax", "log_softmax":
		return g.build(kind, []*ir.Value{x}, axisAttr), nil
	case "logsumexp":
		return g.build(kind, []*ir.Value{x}, axisAttr, attr("keepdims", ir.Bool(rapid.Bool().Draw(g.t, "keepdims")))), nil
	case "layer_norm":
		return g.build(kind, []*ir.Value{x, params("reduce_mean"), params("reduce_max")}, axisAttr, eps), nil
	case "rms_norm":
		return g.build(kind, []*ir.Value{x, params("reduce_mean")}, axisAttr, eps), nil
	default:
		if rank < 2 {
			return nil, nil
		}
		var attrs []ir.NamedAttr
		if rapid.Bool().Draw(g.t, "causal") {
			attrs = append(attrs, attr("causal", ir.Bool(true)))
		}
		if rapid.Bool().Draw(g.t, "scaled") {
			attrs = append(attrs, attr("scale", ir.Float(rapid.SampledFrom([]float64{0.5, 1, 0.125}).Draw(g.t, "scale"), ir.F32)))
		}
		operands := []*ir.Value{x, x, x}
		if rapid.Bool().Draw(g.t, "masked") {
			// An i1 mask over the scores' shape: where q·kᵀ > 0.
			scores := g.build("matmul", []*ir.Value{x, g.transposeLast(x)})
			zero := g.build("constant", nil, attr("value", ir.DenseFloats(ir.TensorOf(nil, elemOf(x)), []float64{0})))
			operands = append(operands, g.build("cmp", []*ir.Value{scores, zero}, attr("predicate", ir.Str("gt"))))
		}
		return g.build(kind, operands, attrs...), nil
	}
}
