package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// nodeCtx is one node being converted.
type nodeCtx struct {
	im  *importer
	n   *Node
	in  []*val // nil for an absent optional input
	loc ir.Location
	e   *graph.Emitter
}

// converter converts one op_type; it returns one val per output it
// produces (trailing optional outputs may be left out).
type converter func(c *nodeCtx) ([]*val, error)

// converters maps each supported op_type to its conversion.
var converters map[string]converter

// SupportedOps returns the supported op_types of the default domain,
// sorted.
func SupportedOps() []string {
	out := make([]string, 0, len(converters))
	for k := range converters {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (im *importer) node(idx int, n *Node) error {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return errors.New("unsupported operator domain")
	}
	conv, ok := converters[n.OpType]
	if !ok {
		return errors.New("unsupported operator")
	}
	name := n.Name
	if name == "" {
		name = fmt.Sprintf("%s_%d", n.OpType, idx)
	}
	c := &nodeCtx{im: im, n: n, loc: ir.NameLoc{Name: name}}
	c.e = &graph.Emitter{B: im.b, Loc: c.loc}
	for _, in := range n.Inputs {
		if in == "" {
			c.in = append(c.in, nil)
			continue
		}
		x, ok := im.values[in]
		if !ok {
			return fmt.Errorf("input %q is not defined before the node", in)
		}
		c.in = append(c.in, x)
	}
	outs, err := conv(c)
	if err == nil && c.e.Err != nil {
		err = c.e.Err
	}
	if err != nil {
		return err
	}
	for i, name := range n.Outputs {
		if name == "" {
			continue
		}
		if i >= len(outs) || outs[i] == nil {
			if im.used(name) {
				return fmt.Errorf("output %d (%q) is not supported", i, name)
			}
			continue
		}
		im.values[name] = outs[i]
	}
	return nil
}

// used reports whether a value name is read by a node or is a graph output.
func (im *importer) used(name string) bool {
	for _, n := range im.model.Graph.Nodes {
		if slices.Contains(n.Inputs, name) {
			return true
		}
	}
	for _, o := range im.model.Graph.Outputs {
		if o.Name == name {
			return true
		}
	}
	return false
}

// --- attribute and input access ---

func (c *nodeCtx) attr(name string) *Attribute {
	for _, a := range c.n.Attrs {
		if a.Name == name {
			return a
		}
	}
	return nil
}

func (c *nodeCtx) int(name string, def int64) int64 {
	if a := c.attr(name); a != nil {
		return a.I
	}
	return def
}

func (c *nodeCtx) float(name string, def float64) float64 {
	if a := c.attr(name); a != nil {
		return float64(a.F)
	}
	return def
}

func (c *nodeCtx) ints(name string) ([]int64, bool) {
	if a := c.attr(name); a != nil {
		return a.Ints, true
	}
	return nil, false
}

func (c *nodeCtx) str(name, def string) string {
	if a := c.attr(name); a != nil {
		return string(a.S)
	}
	return def
}

// input returns input i, or an error when it is absent.
func (c *nodeCtx) input(i int) (*val, error) {
	if i >= len(c.in) || c.in[i] == nil {
		return nil, fmt.Errorf("missing input %d", i)
	}
	return c.in[i], nil
}

func (c *nodeCtx) opt(i int) *val {
	if i >= len(c.in) {
		return nil
	}
	return c.in[i]
}

// value materializes x.
func (c *nodeCtx) value(x *val) *ir.Value {
	if c.e.Err != nil {
		return nil
	}
	v, err := c.im.value(x, c.loc)
	if err != nil {
		c.e.Err = err
		return nil
	}
	return v
}

// konstInts returns input i's elements as concrete integers.
func (c *nodeCtx) konstInts(i int, what string) ([]int64, error) {
	x, err := c.input(i)
	if err != nil {
		return nil, err
	}
	if x.k == nil {
		return nil, fmt.Errorf("%s (input %d) must be a constant or a shape computation, not a tensor computed at run time", what, i)
	}
	vs, ok := x.k.concrete()
	if !ok {
		return nil, errSymbolic("%s (input %d) depends on symbolic sizes %v", what, i, x.k.i)
	}
	return vs, nil
}

// axesOf reads axes from the attribute (older opsets) or input i.
func (c *nodeCtx) axesOf(i int) ([]int64, bool, error) {
	if v, ok := c.ints("axes"); ok {
		return v, true, nil
	}
	if c.opt(i) != nil {
		vs, err := c.konstInts(i, "axes")
		return vs, true, err
	}
	return nil, false, nil
}

func normAxis(a int64, rank int) (int, error) {
	if a < -int64(rank) || a >= int64(rank) {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", a, rank)
	}
	if a < 0 {
		a += int64(rank)
	}
	return int(a), nil
}

func (c *nodeCtx) wrap(v *ir.Value) []*val {
	if v == nil {
		return nil
	}
	return []*val{c.im.wrap(v)}
}

func one(x *val) ([]*val, error) { return []*val{x}, nil }

func init() {
	converters = map[string]converter{
		"Identity": convIdentity, "Dropout": convIdentity,
		"Constant": convConstant, "Shape": convShape, "Size": convSize,
		"Add": binop("add"), "Sub": binop("sub"), "Mul": binop("mul"), "Div": binop("div"),
		"Pow": convPow, "Max": variadic("max"), "Min": variadic("min"), "Sum": variadic("add"), "Mean": convMean,
		"Relu": unary("relu"), "Tanh": unary("tanh"), "Sigmoid": unary("sigmoid"), "Exp": unary("exp"),
		"Log": unary("log"), "Sqrt": unary("sqrt"), "Neg": unary("neg"), "Abs": unary("abs"), "Erf": unary("erf"),
		"Reciprocal": unary("reciprocal"), "Sin": unary("sin"), "Cos": unary("cos"),
		"Gelu": convGelu, "LeakyRelu": convLeakyRelu, "Clip": convClip, "HardSigmoid": convHardSigmoid,
		"HardSwish": convHardSwish, "Softplus": convSoftplus,
		"PRelu": convPRelu, "Elu": convElu, "Selu": convElu, "Celu": convCelu, "Mish": convMish,
		"Softsign": convSoftsign, "ThresholdedRelu": convThresholdedRelu,
		"ArgMax": convArgMax, "ArgMin": convArgMax, "Resize": convResize,
		"DepthToSpace": convDepthToSpace, "SpaceToDepth": convDepthToSpace,
		"Floor": rounding(math.Floor), "Ceil": rounding(math.Ceil), "Round": rounding(math.RoundToEven),
		"InstanceNormalization": convInstanceNorm, "GroupNormalization": convGroupNorm, "LRN": convLRN,
		"Equal": compare("eq"), "Less": compare("lt"), "LessOrEqual": compare("le"),
		"Greater": compare("gt"), "GreaterOrEqual": compare("ge"),
		"Not": convNot, "And": logical("and"), "Or": logical("or"), "Xor": logical("xor"),
		"Where": convWhere, "Cast": convCast, "CastLike": convCastLike,
		"MatMul": convMatMul, "Einsum": convEinsum, "Gemm": convGemm, "Conv": convConv, "ConvTranspose": convConvTranspose,
		"BatchNormalization": convBatchNorm, "LayerNormalization": convLayerNorm,
		"Softmax": softmax("softmax"), "LogSoftmax": softmax("log_softmax"),
		"MaxPool": pool("max"), "AveragePool": pool("avg"),
		"GlobalAveragePool": globalPool("mean"), "GlobalMaxPool": globalPool("max"),
		"ReduceMean": reduce("mean"), "ReduceSum": reduce("sum"), "ReduceMax": reduce("max"), "ReduceMin": reduce("min"),
		"Reshape": convReshape, "Flatten": convFlatten, "Unsqueeze": convUnsqueeze, "Squeeze": convSqueeze,
		"Transpose": convTranspose, "Concat": convConcat, "Gather": convGather, "Slice": convSlice,
		"Split": convSplit, "Expand": convExpand, "ConstantOfShape": convConstantOfShape, "Range": convRange,
		"Pad": convPad, "Tile": convTile, "Trilu": convTrilu,
	}
}

// --- simple ops ---

func convIdentity(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	if c.n.OpType == "Dropout" && len(c.n.Outputs) > 1 && c.n.Outputs[1] != "" && c.im.used(c.n.Outputs[1]) {
		return nil, errors.New("the mask output of Dropout is not supported")
	}
	if c.n.OpType == "Dropout" && c.opt(2) != nil {
		// training_mode (opset 12): only evaluation-mode dropout, the
		// identity, is imported; random masks would be another model.
		vs, err := c.konstInts(2, "training_mode")
		if err != nil {
			return nil, fmt.Errorf("Dropout: %w (only a constant false, evaluation mode, is supported)", err)
		}
		if slices.Contains(vs, 1) {
			return nil, errors.New("Dropout with training_mode = true (random masks) is not supported: export the model in evaluation mode")
		}
	}
	return one(x)
}

func convConstant(c *nodeCtx) ([]*val, error) {
	if a := c.attr("value"); a != nil && a.T != nil {
		return one2(c.im.initializer(a.T))
	}
	if a := c.attr("value_float"); a != nil {
		return one(kval(&konst{elem: ir.F32, shape: []int64{}, f: []float64{float64(a.F)}}))
	}
	if a := c.attr("value_floats"); a != nil {
		f := make([]float64, len(a.Floats))
		for i, v := range a.Floats {
			f[i] = float64(v)
		}
		return one(kval(&konst{elem: ir.F32, shape: []int64{int64(len(f))}, f: f}))
	}
	if a := c.attr("value_int"); a != nil {
		return one(kval(newIntKonst(ir.I64, []int64{}, []int64{a.I})))
	}
	if a := c.attr("value_ints"); a != nil {
		return one(kval(newIntKonst(ir.I64, []int64{int64(len(a.Ints))}, a.Ints)))
	}
	return nil, errors.New("Constant without a supported value attribute (value, value_float(s), value_int(s))")
}

func one2(x *val, err error) ([]*val, error) {
	if err != nil {
		return nil, err
	}
	return one(x)
}

func convShape(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	r := int64(x.rank())
	start, end := c.int("start", 0), c.int("end", r)
	if start < 0 {
		start += r
	}
	if end < 0 {
		end += r
	}
	start, end = min(max(start, 0), r), min(max(end, 0), r)
	end = max(end, start)
	k := &konst{elem: ir.I64, shape: []int64{end - start}, i: slices.Clone(x.dims[start:end])}
	return one(kval(k))
}

func convSize(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	return one(kval(&konst{elem: ir.I64, shape: []int64{}, i: []sym.Expr{sym.Product(x.dims...)}}))
}

func unary(name string) converter {
	return func(c *nodeCtx) ([]*val, error) {
		x, err := c.input(0)
		if err != nil {
			return nil, err
		}
		if x.k != nil && x.k.isFloat() {
			if f := graph.UnaryFloatFunc(name, "none", x.elem); f != nil {
				out := &konst{elem: x.elem, shape: x.k.shape, f: make([]float64, len(x.k.f))}
				for i, v := range x.k.f {
					out.f[i] = ir.RoundToType(f(v), x.elem.(*ir.FloatType))
				}
				return one(kval(out))
			}
		}
		if x.k != nil && !x.k.isFloat() && name == "neg" {
			out := &konst{elem: x.elem, shape: x.k.shape, i: make([]sym.Expr, len(x.k.i))}
			for i, v := range x.k.i {
				out.i[i] = sym.Neg(v)
			}
			return one(kval(out))
		}
		return c.wrap(c.e.Unary(name, c.value(x))), nil
	}
}

// symArith is integer arithmetic on symbolic sizes, for shape folding.
func symArith(name string) func(a, b sym.Expr) (sym.Expr, bool) {
	return func(a, b sym.Expr) (sym.Expr, bool) {
		ac, aok := a.IsConst()
		bc, bok := b.IsConst()
		if aok && bok {
			if f := graph.BinaryIntFunc(name); f != nil {
				return sym.Const(f(ac, bc)), true
			}
		}
		switch name {
		case "add":
			return sym.Add(a, b), true
		case "sub":
			return sym.Sub(a, b), true
		case "mul":
			return sym.Mul(a, b), true
		case "div":
			if bok && bc > 0 {
				return sym.FloorDiv(a, b), true // sizes are non-negative: floor is truncation
			}
		case "max":
			return sym.Max(a, b), true
		case "min":
			return sym.Min(a, b), true
		}
		return sym.Expr{}, false
	}
}

// binaryOp builds or folds the elementwise op name.
func (c *nodeCtx) binaryOp(name string, a, b *val) (*val, error) {
	if a.elem != b.elem {
		return nil, fmt.Errorf("operands have different element types %s and %s", a.elem, b.elem)
	}
	if a.k != nil && b.k != nil {
		if k, ok := kBinary(a.k, b.k, a.elem, graph.BinaryFloatFunc(name), symArith(name)); ok {
			return kval(k), nil
		}
	}
	v := c.e.Binary(name, c.value(a), c.value(b))
	if v == nil {
		return nil, c.e.Err
	}
	return c.im.wrap(v), nil
}

func binop(name string) converter {
	return func(c *nodeCtx) ([]*val, error) {
		a, err := c.input(0)
		if err != nil {
			return nil, err
		}
		b, err := c.input(1)
		if err != nil {
			return nil, err
		}
		return one2(c.binaryOp(name, a, b))
	}
}

func variadic(name string) converter {
	return func(c *nodeCtx) ([]*val, error) {
		acc, err := c.input(0)
		if err != nil {
			return nil, err
		}
		for i := 1; i < len(c.in); i++ {
			b, err := c.input(i)
			if err != nil {
				return nil, err
			}
			if acc, err = c.binaryOp(name, acc, b); err != nil {
				return nil, err
			}
		}
		return one(acc)
	}
}

func convMean(c *nodeCtx) ([]*val, error) {
	s, err := variadic("add")(c)
	if err != nil {
		return nil, err
	}
	return one2(c.binaryOp("div", s[0], c.scalar(s[0].elem, float64(len(c.in)))))
}

// scalar is a rank-0 constant of elem.
func (c *nodeCtx) scalar(elem ir.Type, v float64) *val {
	if ir.IsFloat(elem) {
		return kval(&konst{elem: elem, shape: []int64{}, f: []float64{ir.RoundToType(v, elem.(*ir.FloatType))}})
	}
	return kval(newIntKonst(elem, []int64{}, []int64{int64(v)}))
}

func convPow(c *nodeCtx) ([]*val, error) {
	a, err := c.input(0)
	if err != nil {
		return nil, err
	}
	b, err := c.input(1)
	if err != nil {
		return nil, err
	}
	if b.elem != a.elem {
		if b.k == nil {
			b = c.im.wrap(c.e.Typed("cast", []*ir.Value{c.value(b)}, graph.TensorWithDims(b.dims, a.elem)))
		} else if k, ok := kCast(b.k, a.elem); ok {
			b = kval(k)
		}
	}
	if b.k != nil && b.k.len() == 1 && a.k == nil && ir.IsFloat(a.elem) {
		switch fs, _ := b.k.floats(); fs[0] {
		case 1:
			return one(a)
		case 2:
			return one2(c.binaryOp("mul", a, a))
		case 0.5:
			return c.wrap(c.e.Unary("sqrt", c.value(a))), nil
		}
	}
	return one2(c.binaryOp("pow", a, b))
}

func convGelu(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	approx := c.str("approximate", "none")
	if approx != "none" && approx != "tanh" {
		return nil, fmt.Errorf("approximate %q is not one of none, tanh", approx)
	}
	return c.wrap(c.e.Op("gelu", []*ir.Value{c.value(x)}, ir.NamedAttr{Name: "approximate", Value: ir.Str(approx)})), nil
}

func convLeakyRelu(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	alpha := c.float("alpha", 0.01)
	xv := c.value(x)
	zero := c.value(c.scalar(x.elem, 0))
	neg := c.e.Op("cmp", []*ir.Value{xv, zero}, ir.NamedAttr{Name: "predicate", Value: ir.Str("lt")})
	scaled := c.e.Binary("mul", xv, c.value(c.scalar(x.elem, alpha)))
	return c.wrap(c.e.Op("select", []*ir.Value{neg, scaled, xv})), nil
}

func convClip(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	lo, hi := c.opt(1), c.opt(2)
	if c.im.opset < 11 || c.attr("min") != nil || c.attr("max") != nil {
		if a := c.attr("min"); a != nil {
			lo = c.scalar(x.elem, float64(a.F))
		}
		if a := c.attr("max"); a != nil {
			hi = c.scalar(x.elem, float64(a.F))
		}
	}
	out := x
	if lo != nil {
		if out, err = c.binaryOp("max", out, lo); err != nil {
			return nil, err
		}
	}
	if hi != nil {
		if out, err = c.binaryOp("min", out, hi); err != nil {
			return nil, err
		}
	}
	return one(out)
}

func convHardSigmoid(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	y, err := c.hardSigmoid(x, c.float("alpha", 0.2), c.float("beta", 0.5))
	return one2(y, err)
}

func (c *nodeCtx) hardSigmoid(x *val, alpha, beta float64) (*val, error) {
	y, err := c.binaryOp("mul", x, c.scalar(x.elem, alpha))
	if err == nil {
		y, err = c.binaryOp("add", y, c.scalar(x.elem, beta))
	}
	if err == nil {
		y, err = c.binaryOp("max", y, c.scalar(x.elem, 0))
	}
	if err == nil {
		y, err = c.binaryOp("min", y, c.scalar(x.elem, 1))
	}
	return y, err
}

func convHardSwish(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	h, err := c.hardSigmoid(x, 1.0/6, 0.5)
	if err != nil {
		return nil, err
	}
	return one2(c.binaryOp("mul", x, h))
}

func convSoftplus(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	return c.wrap(c.softplus(x)), nil
}

// where is select(cmp(a, b, pred), t, f) on materialized values.
func (c *nodeCtx) where(a *ir.Value, pred string, b, t, f *ir.Value) *ir.Value {
	m := c.e.Op("cmp", []*ir.Value{a, b}, ir.NamedAttr{Name: "predicate", Value: ir.Str(pred)})
	return c.e.Op("select", []*ir.Value{m, t, f})
}

// floatInput returns input 0, which must be a float tensor.
func (c *nodeCtx) floatInput() (*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	if !ir.IsFloat(x.elem) {
		return nil, fmt.Errorf("the input must be a float tensor, got %s", x.elem)
	}
	return x, nil
}

// convPRelu is x where x ≥ 0, else slope·x, slope broadcast to x's shape
// (nn.PReLU's [C, 1, 1] or a single slope).
func convPRelu(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	slope, err := c.input(1)
	if err != nil {
		return nil, err
	}
	if shape, err := broadcastDims(x.dims, slope.dims); err != nil || !sameDims(shape, x.dims) {
		return nil, fmt.Errorf("the slope of shape %s does not broadcast to the input's %s", shapeString(slope.dims), shapeString(x.dims))
	}
	scaled, err := c.binaryOp("mul", x, slope)
	if err != nil {
		return nil, err
	}
	xv := c.value(x)
	return c.wrap(c.where(xv, "lt", c.value(c.scalar(x.elem, 0)), c.value(scaled), xv)), nil
}

// convElu is Elu (x, or alpha·(e^x − 1) below 0) and Selu (gamma times
// that, with SELU's constants as defaults).
func convElu(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	alpha, gamma := c.float("alpha", 1), 1.0
	if c.n.OpType == "Selu" {
		alpha, gamma = c.float("alpha", 1.67326319217681884765625), c.float("gamma", 1.05070102214813232421875)
	}
	xv := c.value(x)
	neg := c.e.Binary("mul", c.e.Binary("sub", c.e.Unary("exp", xv), c.value(c.scalar(x.elem, 1))), c.value(c.scalar(x.elem, alpha)))
	y := c.where(xv, "lt", c.value(c.scalar(x.elem, 0)), neg, xv)
	if gamma != 1 {
		y = c.e.Binary("mul", y, c.value(c.scalar(x.elem, gamma)))
	}
	return c.wrap(y), nil
}

// convCelu is max(0, x) + min(0, alpha·(e^(x/alpha) − 1)).
func convCelu(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	alpha := c.float("alpha", 1)
	if alpha == 0 {
		return nil, errors.New("alpha must not be 0")
	}
	xv, zero := c.value(x), c.value(c.scalar(x.elem, 0))
	e := c.e.Unary("exp", c.e.Binary("div", xv, c.value(c.scalar(x.elem, alpha))))
	neg := c.e.Binary("mul", c.e.Binary("sub", e, c.value(c.scalar(x.elem, 1))), c.value(c.scalar(x.elem, alpha)))
	return c.wrap(c.e.Binary("add", c.e.Binary("max", xv, zero), c.e.Binary("min", neg, zero))), nil
}

// softplus is log(1 + e^x) as max(x, 0) + log(1 + e^-|x|), finite for
// every x.
func (c *nodeCtx) softplus(x *val) *ir.Value {
	xv := c.value(x)
	pos := c.e.Binary("max", xv, c.value(c.scalar(x.elem, 0)))
	e := c.e.Unary("exp", c.e.Unary("neg", c.e.Unary("abs", xv)))
	l := c.e.Unary("log", c.e.Binary("add", e, c.value(c.scalar(x.elem, 1))))
	return c.e.Binary("add", pos, l)
}

// convMish is x·tanh(softplus(x)).
func convMish(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	return c.wrap(c.e.Binary("mul", c.value(x), c.e.Unary("tanh", c.softplus(x)))), nil
}

// convSoftsign is x/(1 + |x|).
func convSoftsign(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	xv := c.value(x)
	return c.wrap(c.e.Binary("div", xv, c.e.Binary("add", c.e.Unary("abs", xv), c.value(c.scalar(x.elem, 1))))), nil
}

// convThresholdedRelu is x where x > alpha, else 0.
func convThresholdedRelu(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	xv := c.value(x)
	return c.wrap(c.where(xv, "gt", c.value(c.scalar(x.elem, c.float("alpha", 1))), xv, c.value(c.scalar(x.elem, 0)))), nil
}

// convArgMax is ArgMax, and ArgMin as the first maximum of −x (the first
// minimum), for integers of ^x = −x − 1: −x of the type's minimum wraps
// to the minimum itself, ^x is the maximum.
func convArgMax(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	if c.int("select_last_index", 0) != 0 {
		return nil, errors.New("select_last_index = 1 is not supported")
	}
	if x.elem == ir.I1 {
		return nil, errors.New("the input must be numeric, not bool")
	}
	axis, err := normAxis(c.int("axis", 0), x.rank())
	if err != nil {
		return nil, err
	}
	if n, ok := x.dims[axis].IsConst(); ok && n == 0 {
		return nil, fmt.Errorf("axis %d is empty", axis)
	}
	xv := c.value(x)
	if c.n.OpType == "ArgMin" {
		xv = c.e.Unary("neg", xv)
		if !ir.IsFloat(x.elem) {
			xv = c.e.Binary("sub", xv, c.value(c.scalar(x.elem, 1)))
		}
	}
	return c.wrap(c.e.Op("argmax", []*ir.Value{xv}, ir.NamedAttr{Name: "axis", Value: ir.Int(int64(axis), ir.I64)},
		ir.NamedAttr{Name: "keepdims", Value: ir.Bool(c.int("keepdims", 1) != 0)})), nil
}

// normalize is (x − mean)/√(var + eps) over axes (biased variance, two
// passes, as ONNX Runtime and PyTorch compute instance and group norm).
func (c *nodeCtx) normalize(x *ir.Value, elem ir.Type, axes []int64, eps float64) *ir.Value {
	d := c.e.Binary("sub", x, c.e.Reduce("reduce_mean", x, axes, true))
	v := c.e.Reduce("reduce_mean", c.e.Binary("mul", d, d), axes, true)
	return c.e.Binary("mul", d, c.e.Unary("rsqrt", c.e.Binary("add", v, c.value(c.scalar(elem, eps)))))
}

// affine is y·scale + bias with scale and bias of n elements along axis
// 1 of a rank-rank result.
func (c *nodeCtx) affine(y *ir.Value, elem ir.Type, rank int, scale, bias *val, n int64) (*ir.Value, error) {
	shape := ones(rank - 1)
	shape[0] = n
	for _, p := range []*val{scale, bias} {
		ps, ok := p.staticShape()
		if !ok || shapeLen(ps) != n {
			return nil, fmt.Errorf("scale and bias must have %d elements, got shape %v", n, p.dims)
		}
	}
	sv := c.e.Op("reshape", []*ir.Value{c.value(scale)}, ir.NamedAttr{Name: "shape", Value: graph.Ints(shape...)})
	bv := c.e.Op("reshape", []*ir.Value{c.value(bias)}, ir.NamedAttr{Name: "shape", Value: graph.Ints(shape...)})
	return c.e.Binary("add", c.e.Binary("mul", y, sv), bv), nil
}

// shapeLen is the number of elements of a static shape s.
func shapeLen(s []int64) int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}

// convInstanceNorm normalizes each channel of each sample over the
// spatial axes, then applies scale and B per channel.
func convInstanceNorm(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	if x.rank() < 3 {
		return nil, fmt.Errorf("the input must have rank ≥ 3, got %d", x.rank())
	}
	ch, ok := x.dims[1].IsConst()
	if !ok {
		return nil, errSymbolic("the channel count %s must be static", x.dims[1])
	}
	scale, err := c.input(1)
	if err != nil {
		return nil, err
	}
	bias, err := c.input(2)
	if err != nil {
		return nil, err
	}
	y := c.normalize(c.value(x), x.elem, iotaList(int64(x.rank()))[2:], c.float("epsilon", 1e-5))
	out, err := c.affine(y, x.elem, x.rank(), scale, bias, ch)
	if err != nil {
		return nil, err
	}
	return c.wrap(out), nil
}

// convLRN is local response normalization across channels (AlexNet's,
// GoogLeNet's; nn.LocalResponseNorm): x / (bias + alpha/size · Σ x²)^beta,
// the sum over the size channels around each (zero-padded at the ends),
// taken as size gathers of the padded squares at constant indices.
func convLRN(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	if x.rank() < 3 {
		return nil, fmt.Errorf("the input must have rank ≥ 3, got %d", x.rank())
	}
	ch, ok := x.dims[1].IsConst()
	if !ok {
		return nil, errSymbolic("the channel count %s must be static", x.dims[1])
	}
	size := c.int("size", 0)
	if size < 1 {
		return nil, fmt.Errorf("size %d must be ≥ 1", size)
	}
	alpha, beta, bias := c.float("alpha", 1e-4), c.float("beta", 0.75), c.float("bias", 1)
	xv := c.value(x)
	sq := c.e.Binary("mul", xv, xv)
	lo, hi := (size-1)/2, size-1-(size-1)/2
	low, high := make([]int64, x.rank()), make([]int64, x.rank())
	low[1], high[1] = lo, hi
	sq = c.e.Op("pad", []*ir.Value{sq}, ir.NamedAttr{Name: "low", Value: graph.Ints(low...)}, ir.NamedAttr{Name: "high", Value: graph.Ints(high...)})
	var sum *ir.Value
	for k := range size {
		idx := make([]int64, ch)
		for i := range idx {
			idx[i] = int64(i) + k
		}
		w := c.gatherAt(sq, 1, idx)
		if sum == nil {
			sum = w
		} else {
			sum = c.e.Binary("add", sum, w)
		}
	}
	d := c.e.Binary("add", c.e.Binary("mul", sum, c.value(c.scalar(x.elem, alpha/float64(size)))), c.value(c.scalar(x.elem, bias)))
	return c.wrap(c.e.Binary("div", xv, c.e.Binary("pow", d, c.value(c.scalar(x.elem, beta))))), nil
}

// convGroupNorm normalizes each group of num_groups channels of each
// sample (over the group's channels and the spatial axes), then applies
// scale and bias per channel (opset 21), or per group (opset 18's
// definition, when they have num_groups elements and that differs from
// the channel count).
func convGroupNorm(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	if x.rank() < 3 {
		return nil, fmt.Errorf("the input must have rank ≥ 3, got %d", x.rank())
	}
	shape, ok := (&val{dims: x.dims[1:]}).staticShape()
	if !ok {
		return nil, errSymbolic("the channel and spatial sizes %v must be static", x.dims[1:])
	}
	ch, groups := shape[0], c.int("num_groups", 0)
	if groups < 1 || ch%groups != 0 {
		return nil, fmt.Errorf("num_groups %d must be ≥ 1 and divide the %d channels", groups, ch)
	}
	if c.int("stash_type", 1) != 1 {
		return nil, errors.New("stash_type other than 1 (float32) is not supported")
	}
	scale, err := c.input(1)
	if err != nil {
		return nil, err
	}
	bias, err := c.input(2)
	if err != nil {
		return nil, err
	}
	// [N, C, spatial…] → [N, G, C/G·spatial] (N the only unknown), normalized
	// over the last axis, and back.
	grouped := c.e.Op("reshape", []*ir.Value{c.value(x)}, ir.NamedAttr{Name: "shape", Value: graph.Ints(-1, groups, shapeLen(shape)/groups)})
	y := c.normalize(grouped, x.elem, []int64{2}, c.float("epsilon", 1e-5))
	y = c.reshapeValue(c.im.wrap(y), x.dims)
	if ss, ok := scale.staticShape(); ok && shapeLen(ss) == groups && groups != ch {
		// Opset 18's scale and bias per group: repeat each C/G times.
		rep := make([]int64, 0, ch)
		for g := range groups {
			for range ch / groups {
				rep = append(rep, g)
			}
		}
		idx := c.value(kval(newIntKonst(ir.I64, []int64{ch}, rep)))
		scale = c.im.wrap(c.e.Op("gather", []*ir.Value{c.value(scale), idx}, ir.NamedAttr{Name: "axis", Value: ir.Int(0, ir.I64)}))
		bias = c.im.wrap(c.e.Op("gather", []*ir.Value{c.value(bias), idx}, ir.NamedAttr{Name: "axis", Value: ir.Int(0, ir.I64)}))
	}
	out, err := c.affine(y, x.elem, x.rank(), scale, bias, ch)
	if err != nil {
		return nil, err
	}
	return c.wrap(out), nil
}

func compare(pred string) converter {
	return func(c *nodeCtx) ([]*val, error) {
		a, err := c.input(0)
		if err != nil {
			return nil, err
		}
		b, err := c.input(1)
		if err != nil {
			return nil, err
		}
		if a.k != nil && b.k != nil {
			if k, ok := kCompare(a.k, b.k, pred); ok {
				return one(kval(k))
			}
		}
		return c.wrap(c.e.Op("cmp", []*ir.Value{c.value(a), c.value(b)}, ir.NamedAttr{Name: "predicate", Value: ir.Str(pred)})), nil
	}
}

func (c *nodeCtx) boolConst(v bool) *val {
	b := int64(0)
	if v {
		b = 1
	}
	return kval(newIntKonst(ir.I1, []int64{}, []int64{b}))
}

func convNot(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	if x.k != nil {
		if k, ok := kCompare(x.k, c.boolConst(false).k, "eq"); ok {
			return one(kval(k))
		}
	}
	return c.wrap(c.e.Op("cmp", []*ir.Value{c.value(x), c.value(c.boolConst(false))}, ir.NamedAttr{Name: "predicate", Value: ir.Str("eq")})), nil
}

func logical(kind string) converter {
	return func(c *nodeCtx) ([]*val, error) {
		a, err := c.input(0)
		if err != nil {
			return nil, err
		}
		b, err := c.input(1)
		if err != nil {
			return nil, err
		}
		if a.elem != ir.I1 || b.elem != ir.I1 {
			return nil, errors.New("operands must be bool")
		}
		av, bv := c.value(a), c.value(b)
		switch kind {
		case "and":
			return c.wrap(c.e.Op("select", []*ir.Value{av, bv, c.value(c.boolConst(false))})), nil
		case "or":
			return c.wrap(c.e.Op("select", []*ir.Value{av, c.value(c.boolConst(true)), bv})), nil
		}
		return c.wrap(c.e.Op("cmp", []*ir.Value{av, bv}, ir.NamedAttr{Name: "predicate", Value: ir.Str("ne")})), nil
	}
}

func convWhere(c *nodeCtx) ([]*val, error) {
	cond, err := c.input(0)
	if err != nil {
		return nil, err
	}
	a, err := c.input(1)
	if err != nil {
		return nil, err
	}
	b, err := c.input(2)
	if err != nil {
		return nil, err
	}
	if cond.k != nil && a.k != nil && b.k != nil && a.elem == b.elem {
		shape, ok := broadcastShapes(cond.k.shape, a.k.shape)
		if ok {
			shape, ok = broadcastShapes(shape, b.k.shape)
		}
		if ok {
			cc, ac, bc := kBroadcast(cond.k, shape), kBroadcast(a.k, shape), kBroadcast(b.k, shape)
			out := &konst{elem: a.elem, shape: shape}
			for i := range cc.i {
				t := !cc.i[i].Equal(sym.Const(0))
				if a.k.isFloat() {
					out.f = append(out.f, pick(t, ac.f[i], bc.f[i]))
				} else {
					out.i = append(out.i, pick(t, ac.i[i], bc.i[i]))
				}
			}
			if out.isFloat() && out.f == nil {
				out.f = []float64{}
			}
			return one(kval(out))
		}
	}
	return c.wrap(c.e.Op("select", []*ir.Value{c.value(cond), c.value(a), c.value(b)})), nil
}

func pick[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

func (c *nodeCtx) cast(x *val, to ir.Type) (*val, error) {
	if x.elem == to {
		return x, nil
	}
	if x.k != nil {
		if k, ok := kCast(x.k, to); ok {
			return kval(k), nil
		}
	}
	v := c.e.Typed("cast", []*ir.Value{c.value(x)}, graph.TensorWithDims(x.dims, to))
	if v == nil {
		return nil, c.e.Err
	}
	return c.im.wrap(v), nil
}

func convCast(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	to, err := elemType(int32(c.int("to", 0)))
	if err != nil {
		return nil, err
	}
	return one2(c.cast(x, to))
}

func convCastLike(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	like, err := c.input(1)
	if err != nil {
		return nil, err
	}
	return one2(c.cast(x, like.elem))
}

// --- linear algebra and convolution ---

func convMatMul(c *nodeCtx) ([]*val, error) {
	a, err := c.input(0)
	if err != nil {
		return nil, err
	}
	b, err := c.input(1)
	if err != nil {
		return nil, err
	}
	return c.wrap(c.e.Op("matmul", []*ir.Value{c.value(a), c.value(b)})), nil
}

func convGemm(c *nodeCtx) ([]*val, error) {
	a, err := c.input(0)
	if err != nil {
		return nil, err
	}
	b, err := c.input(1)
	if err != nil {
		return nil, err
	}
	if a.rank() != 2 || b.rank() != 2 {
		return nil, fmt.Errorf("A and B must be matrices, got ranks %d and %d", a.rank(), b.rank())
	}
	av, bv := c.value(a), c.value(b)
	if c.int("transA", 0) != 0 {
		av = c.e.Op("transpose", []*ir.Value{av}, ir.NamedAttr{Name: "perm", Value: graph.Ints(1, 0)})
	}
	if c.int("transB", 0) != 0 {
		bv = c.e.Op("transpose", []*ir.Value{bv}, ir.NamedAttr{Name: "perm", Value: graph.Ints(1, 0)})
	}
	y := c.e.Op("matmul", []*ir.Value{av, bv})
	if alpha := c.float("alpha", 1); alpha != 1 {
		y = c.e.Binary("mul", y, c.value(c.scalar(a.elem, alpha)))
	}
	if bias := c.opt(2); bias != nil {
		bv := c.value(bias)
		if beta := c.float("beta", 1); beta != 1 {
			bv = c.e.Binary("mul", bv, c.value(c.scalar(a.elem, beta)))
		}
		y = c.e.Binary("add", y, bv)
	}
	return c.wrap(y), nil
}

// window reads a sliding window's attributes (strides and dilations,
// default 1, then the pads) for a kernel of the given spatial sizes over
// an input of spatial sizes in (-1 where not static), as Conv and the
// pooling ops share them. ext is each dilated kernel's extent.
func (c *nodeCtx) window(in, kernel []int64) (strides, dil, ext, pads []int64, err error) {
	sp := len(in)
	strides, dil = ones(sp), ones(sp)
	if s, ok := c.ints("strides"); ok {
		strides = s
	}
	if d, ok := c.ints("dilations"); ok {
		dil = d
	}
	if len(strides) != sp || len(dil) != sp {
		return nil, nil, nil, nil, fmt.Errorf("strides %v and dilations %v need %d entries", strides, dil, sp)
	}
	// Checked here, before auto_pad and the output sizes divide by them.
	for i := range sp {
		if strides[i] < 1 || dil[i] < 1 || kernel[i] < 1 {
			return nil, nil, nil, nil, fmt.Errorf("kernel %v, strides %v, dilations %v: want each ≥ 1", kernel, strides, dil)
		}
	}
	ext = make([]int64, sp)
	for i := range sp {
		ext[i] = (kernel[i]-1)*dil[i] + 1
	}
	pads, err = c.spatialPads(in, ext, strides)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return strides, dil, ext, pads, nil
}

// spatialPads resolves pads (begin…, end…) for n spatial dims from pads
// or auto_pad, given the static input sizes, kernel extents (dilated) and
// strides.
func (c *nodeCtx) spatialPads(in, ext, strides []int64) ([]int64, error) {
	n := len(in)
	pads := make([]int64, 2*n)
	switch ap := c.str("auto_pad", "NOTSET"); ap {
	case "NOTSET", "":
		if p, ok := c.ints("pads"); ok {
			if len(p) != 2*n {
				return nil, fmt.Errorf("pads has %d entries, want %d", len(p), 2*n)
			}
			copy(pads, p)
		}
	case "VALID":
	case "SAME_UPPER", "SAME_LOWER":
		for i := range n {
			if in[i] < 0 {
				return nil, errSymbolic("auto_pad %s needs static spatial sizes", ap)
			}
			out := (in[i] + strides[i] - 1) / strides[i]
			total := max((out-1)*strides[i]+ext[i]-in[i], 0)
			lo := total / 2
			if ap == "SAME_LOWER" {
				lo = total - total/2
			}
			pads[i], pads[n+i] = lo, total-lo
		}
	default:
		return nil, fmt.Errorf("unknown auto_pad %q", ap)
	}
	for _, p := range pads {
		if p < 0 {
			return nil, fmt.Errorf("negative pads %v", pads)
		}
	}
	return pads, nil
}

func staticDims(dims []sym.Expr) []int64 {
	out := make([]int64, len(dims))
	for i, d := range dims {
		out[i] = -1
		if v, ok := d.IsConst(); ok {
			out[i] = v
		}
	}
	return out
}

func convConv(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	w, err := c.input(1)
	if err != nil {
		return nil, err
	}
	if x.rank() != w.rank() || (x.rank() != 4 && x.rank() != 3) {
		return nil, fmt.Errorf("only 1-D and 2-D convolutions are supported (input rank %d, weight rank %d)", x.rank(), w.rank())
	}
	sp := x.rank() - 2
	wshape, ok := w.staticShape()
	if !ok {
		return nil, errors.New("the weight must have a static shape")
	}
	if ks, ok := c.ints("kernel_shape"); ok && !slices.Equal(ks, wshape[2:]) {
		return nil, fmt.Errorf("kernel_shape %v differs from the weight's spatial shape %v", ks, wshape[2:])
	}
	strides, dil, _, pads, err := c.window(staticDims(x.dims[2:]), wshape[2:])
	if err != nil {
		return nil, err
	}
	xv, wv := c.value(x), c.value(w)
	if sp == 1 { // as a 2-D convolution of height 1
		strides, dil = []int64{1, strides[0]}, []int64{1, dil[0]}
		pads = []int64{0, pads[0], 0, pads[1]}
		xv = c.reshapeValue(c.im.wrap(xv), slices.Insert(slices.Clone(x.dims), 2, sym.Const(1)))
		wv = c.e.Op("reshape", []*ir.Value{wv}, ir.NamedAttr{Name: "shape", Value: graph.Ints(wshape[0], wshape[1], 1, wshape[2])})
	} else {
		pads = []int64{pads[0], pads[1], pads[2], pads[3]}
	}
	ops := []*ir.Value{xv, wv}
	if b := c.opt(2); b != nil {
		ops = append(ops, c.value(b))
	}
	y := c.e.Op("conv2d", ops,
		ir.NamedAttr{Name: "strides", Value: graph.Ints(strides...)},
		ir.NamedAttr{Name: "padding", Value: graph.Ints(pads...)},
		ir.NamedAttr{Name: "dilations", Value: graph.Ints(dil...)},
		ir.NamedAttr{Name: "groups", Value: ir.Int(c.int("group", 1), ir.I64)})
	if y == nil {
		return nil, c.e.Err
	}
	if sp == 1 {
		yd := c.im.wrap(y).dims
		return c.wrap(c.reshapeValue(c.im.wrap(y), slices.Delete(slices.Clone(yd), 2, 3))), nil
	}
	return c.wrap(y), nil
}

func ones(n int) []int64 { return slices.Repeat([]int64{1}, n) }

// gatherAt gathers v along axis at the constant indices idx.
func (c *nodeCtx) gatherAt(v *ir.Value, axis int64, idx []int64) *ir.Value {
	iv := c.value(kval(newIntKonst(ir.I64, []int64{int64(len(idx))}, idx)))
	return c.e.Op("gather", []*ir.Value{v, iv}, ir.NamedAttr{Name: "axis", Value: ir.Int(axis, ir.I64)})
}

// convConvTranspose is a transposed convolution (1-D and 2-D) written as a
// convolution: the input with stride−1 zeros inserted after each element
// (a reshape to [N, C, H, 1, W, 1], a pad, a reshape back), convolved at
// stride 1 with the kernel flipped and its in and out channels swapped
// per group, padded by dilation·(k−1) − pads (cropped where negative),
// output_padding added at the end.
func convConvTranspose(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	w, err := c.input(1)
	if err != nil {
		return nil, err
	}
	if x.rank() != w.rank() || (x.rank() != 4 && x.rank() != 3) {
		return nil, fmt.Errorf("only 1-D and 2-D transposed convolutions are supported (input rank %d, weight rank %d)", x.rank(), w.rank())
	}
	sp := x.rank() - 2
	ws, ok := w.staticShape()
	if !ok {
		return nil, errors.New("the weight must have a static shape")
	}
	in := staticDims(x.dims[2:])
	if slices.Contains(in, -1) {
		return nil, errSymbolic("the spatial sizes %s must be static", shapeString(x.dims[2:]))
	}
	group := c.int("group", 1)
	if ch, ok := x.dims[1].IsConst(); !ok || ch != ws[0] || group < 1 || ws[0]%group != 0 {
		return nil, fmt.Errorf("input channels %s, weight %v, group %d: want the weight's first dim equal to the channels and divisible by group", x.dims[1], ws, group)
	}
	kernel := ws[2:]
	if ks, ok := c.ints("kernel_shape"); ok && !slices.Equal(ks, kernel) {
		return nil, fmt.Errorf("kernel_shape %v differs from the weight's spatial shape %v", ks, kernel)
	}
	strides, dil, outPad := ones(sp), ones(sp), make([]int64, sp)
	for _, a := range []struct {
		name string
		to   []int64
	}{{"strides", strides}, {"dilations", dil}, {"output_padding", outPad}} {
		if v, ok := c.ints(a.name); ok {
			if len(v) != sp {
				return nil, fmt.Errorf("%s %v needs %d entries", a.name, v, sp)
			}
			copy(a.to, v)
		}
	}
	for i := range sp {
		if strides[i] < 1 || dil[i] < 1 || kernel[i] < 1 || outPad[i] < 0 || outPad[i] >= max(strides[i], dil[i]) {
			return nil, fmt.Errorf("kernel %v, strides %v, dilations %v, output_padding %v: want each ≥ 1 and output_padding below the stride or the dilation", kernel, strides, dil, outPad)
		}
	}
	pads := make([]int64, 2*sp)
	full := func(i int64) int64 { return strides[i]*(in[i]-1) + outPad[i] + (kernel[i]-1)*dil[i] + 1 }
	autoPad := c.str("auto_pad", "NOTSET")
	outShape, hasOut := c.ints("output_shape")
	if hasOut && len(outShape) == x.rank() {
		outShape = outShape[2:]
	}
	switch {
	case hasOut || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER":
		if !hasOut {
			outShape = make([]int64, sp)
			for i := range sp {
				outShape[i] = in[i] * strides[i]
			}
		}
		if len(outShape) != sp {
			return nil, fmt.Errorf("output_shape %v needs %d entries", outShape, sp)
		}
		for i := range int64(sp) {
			total := full(i) - outShape[i]
			if total < 0 {
				return nil, fmt.Errorf("output_shape %v is larger than the full output %d of axis %d", outShape, full(i), i+2)
			}
			if autoPad == "SAME_UPPER" {
				pads[i], pads[int64(sp)+i] = total/2, total-total/2
			} else {
				pads[i], pads[int64(sp)+i] = total-total/2, total/2
			}
		}
	case autoPad == "NOTSET" || autoPad == "":
		if p, ok := c.ints("pads"); ok {
			if len(p) != 2*sp {
				return nil, fmt.Errorf("pads %v need %d entries", p, 2*sp)
			}
			copy(pads, p)
		}
	case autoPad != "VALID":
		return nil, fmt.Errorf("unknown auto_pad %q", autoPad)
	}
	for i := range int64(sp) {
		if pads[i] < 0 || pads[int64(sp)+i] < 0 || full(i)-pads[i]-pads[int64(sp)+i] < 1 {
			return nil, fmt.Errorf("pads %v leave no output of axis %d (full size %d)", pads, i+2, full(i))
		}
	}
	// As 2-D: a 1-D input and kernel get a height of 1.
	xd, wv := slices.Clone(x.dims), c.value(w)
	if sp == 1 {
		xd = slices.Insert(xd, 2, sym.Const(1))
		in, kernel = []int64{1, in[0]}, []int64{1, kernel[0]}
		strides, dil, outPad = []int64{1, strides[0]}, []int64{1, dil[0]}, []int64{0, outPad[0]}
		pads = []int64{0, pads[0], 0, pads[1]}
		ws = []int64{ws[0], ws[1], 1, ws[2]}
		wv = c.e.Op("reshape", []*ir.Value{wv}, ir.NamedAttr{Name: "shape", Value: graph.Ints(ws...)})
	}
	v := c.value(x)
	if sp == 1 {
		v = c.reshapeValue(x, xd)
	}
	// Zeros after each element: [N, C, H, 1, W, 1] padded to [N, C, H, s, W, s].
	if strides[0] > 1 || strides[1] > 1 {
		spread := []sym.Expr{xd[0], xd[1], xd[2], sym.Const(1), xd[3], sym.Const(1)}
		v = c.reshapeValue(c.im.wrap(v), spread)
		v = c.e.Op("pad", []*ir.Value{v}, ir.NamedAttr{Name: "low", Value: graph.Ints(0, 0, 0, 0, 0, 0)},
			ir.NamedAttr{Name: "high", Value: graph.Ints(0, 0, 0, strides[0]-1, 0, strides[1]-1)})
		v = c.reshapeValue(c.im.wrap(v), []sym.Expr{xd[0], xd[1], sym.Const(in[0] * strides[0]), sym.Const(in[1] * strides[1])})
	}
	// The kernel: [Cin, Cout/g, kh, kw] → [Cout, Cin/g, kh, kw], flipped.
	g, cinG, coutG := group, ws[0]/group, ws[1]
	wv = c.e.Op("reshape", []*ir.Value{wv}, ir.NamedAttr{Name: "shape", Value: graph.Ints(g, cinG, coutG, ws[2], ws[3])})
	wv = c.e.Op("transpose", []*ir.Value{wv}, ir.NamedAttr{Name: "perm", Value: graph.Ints(0, 2, 1, 3, 4)})
	wv = c.e.Op("reshape", []*ir.Value{wv}, ir.NamedAttr{Name: "shape", Value: graph.Ints(g*coutG, cinG, ws[2], ws[3])})
	for a := range 2 {
		if k := ws[2+a]; k > 1 {
			rev := make([]int64, k)
			for i := range rev {
				rev[i] = k - 1 - int64(i)
			}
			wv = c.gatherAt(wv, int64(2+a), rev)
		}
	}
	// Padding of the spread input (of length in·s, s−1 zeros past the last
	// element already), cropped where negative.
	convPads := make([]int64, 4)
	for a := range 2 {
		ext := dil[a] * (kernel[a] - 1)
		lo, hi := ext-pads[a], ext-pads[2+a]+outPad[a]-(strides[a]-1)
		length := in[a] * strides[a]
		if lo < 0 || hi < 0 {
			from, to := max(-lo, 0), length-max(-hi, 0)
			idx := make([]int64, 0, max(to-from, 0))
			for i := from; i < to; i++ {
				idx = append(idx, i)
			}
			v = c.gatherAt(v, int64(2+a), idx)
			lo, hi = max(lo, 0), max(hi, 0)
		}
		convPads[a], convPads[2+a] = lo, hi
	}
	ops := []*ir.Value{v, wv}
	if b := c.opt(2); b != nil {
		ops = append(ops, c.value(b))
	}
	y := c.e.Op("conv2d", ops,
		ir.NamedAttr{Name: "strides", Value: graph.Ints(1, 1)},
		ir.NamedAttr{Name: "padding", Value: graph.Ints(convPads...)},
		ir.NamedAttr{Name: "dilations", Value: graph.Ints(dil...)},
		ir.NamedAttr{Name: "groups", Value: ir.Int(group, ir.I64)})
	if y == nil {
		return nil, c.e.Err
	}
	if sp == 1 {
		yd := c.im.wrap(y).dims
		return c.wrap(c.reshapeValue(c.im.wrap(y), slices.Delete(slices.Clone(yd), 2, 3))), nil
	}
	return c.wrap(y), nil
}

// floatsOf returns the elements of a constant or initializer as float64.
func (c *nodeCtx) floatsOf(x *val, what string) ([]float64, error) {
	if x.k != nil {
		if fs, ok := x.k.floats(); ok {
			return fs, nil
		}
	}
	if x.w != nil {
		k, err := c.im.decode(x.w)
		if err != nil {
			return nil, err
		}
		return k.f, nil
	}
	return nil, fmt.Errorf("%s must be a constant", what)
}

func convBatchNorm(c *nodeCtx) ([]*val, error) {
	if c.int("training_mode", 0) != 0 {
		return nil, errors.New("training_mode = 1 is not supported (inference only)")
	}
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	if x.rank() < 2 || !ir.IsFloat(x.elem) {
		return nil, fmt.Errorf("the input must be a float tensor of rank >= 2, got %s", x.elem)
	}
	var p [4][]float64
	for i, what := range []string{"scale", "B", "input_mean", "input_var"} {
		in, err := c.input(i + 1)
		if err != nil {
			return nil, err
		}
		if p[i], err = c.floatsOf(in, what); err != nil {
			return nil, err
		}
	}
	ch := len(p[0])
	for i := range 4 {
		if len(p[i]) != ch {
			return nil, fmt.Errorf("scale, B, mean and var must have one size, got %d, %d, %d, %d", len(p[0]), len(p[1]), len(p[2]), len(p[3]))
		}
	}
	eps := c.float("epsilon", 1e-5)
	ft := x.elem.(*ir.FloatType)
	// y = x·a + b with a = scale/√(var+ε) and b = B − mean·a, in float32
	// as ONNX Runtime computes them.
	a := make([]float64, ch)
	b := make([]float64, ch)
	for i := range ch {
		r := func(v float64) float64 { return ir.RoundToType(v, ir.F32) }
		a[i] = r(p[0][i] / r(math.Sqrt(r(p[3][i]+r(eps)))))
		b[i] = r(p[1][i] - r(p[2][i]*a[i]))
		a[i], b[i] = ir.RoundToType(a[i], ft), ir.RoundToType(b[i], ft)
	}
	shape := ones(x.rank() - 1)
	shape[0] = int64(ch)
	ak := &konst{elem: x.elem, shape: shape, f: a}
	bk := &konst{elem: x.elem, shape: shape, f: b}
	y, err := c.binaryOp("mul", x, kval(ak))
	if err != nil {
		return nil, err
	}
	return one2(c.binaryOp("add", y, kval(bk)))
}

func convLayerNorm(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	scale, err := c.input(1)
	if err != nil {
		return nil, err
	}
	axis, err := normAxis(c.int("axis", -1), x.rank())
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(c.n.Outputs); i++ {
		if c.n.Outputs[i] != "" && c.im.used(c.n.Outputs[i]) {
			return nil, errors.New("the Mean and InvStdDev outputs are not supported")
		}
	}
	bias := c.opt(2)
	if bias == nil {
		bias = kval(&konst{elem: x.elem, shape: []int64{}, f: []float64{0}})
	}
	// The graph op wants weight and bias of the normalized shape.
	norm := x.dims[axis:]
	fit := func(p *val) *ir.Value {
		v := c.value(p)
		if len(p.dims) == len(norm) && slices.EqualFunc(p.dims, norm, func(a, b sym.Expr) bool { return a.Equal(b) }) {
			return v
		}
		shape, ok := (&val{dims: norm}).staticShape()
		if !ok {
			if c.e.Err == nil {
				c.e.Err = errSymbolic("a LayerNormalization scale or bias that broadcasts over symbolic sizes is not supported")
			}
			return nil
		}
		if len(p.dims) > len(norm) {
			v = c.e.Op("reshape", []*ir.Value{v}, ir.NamedAttr{Name: "shape", Value: graph.Ints(staticDims(p.dims[len(p.dims)-len(norm):])...)})
		}
		return c.e.Op("broadcast_to", []*ir.Value{v}, ir.NamedAttr{Name: "shape", Value: graph.Ints(shape...)})
	}
	w, b := fit(scale), fit(bias)
	if c.e.Err != nil {
		return nil, c.e.Err
	}
	return c.wrap(c.e.Op("layer_norm", []*ir.Value{c.value(x), w, b},
		ir.NamedAttr{Name: "axis", Value: ir.Int(int64(axis), ir.I64)},
		ir.NamedAttr{Name: "epsilon", Value: ir.Float(c.float("epsilon", 1e-5), ir.F32)})), nil
}

func softmax(name string) converter {
	return func(c *nodeCtx) ([]*val, error) {
		x, err := c.input(0)
		if err != nil {
			return nil, err
		}
		def := int64(-1)
		if c.im.opset < 13 {
			def = 1
		}
		axis, err := normAxis(c.int("axis", def), x.rank())
		if err != nil {
			return nil, err
		}
		if c.im.opset >= 13 || axis == x.rank()-1 {
			return c.wrap(c.e.Op(name, []*ir.Value{c.value(x)}, ir.NamedAttr{Name: "axis", Value: ir.Int(int64(axis), ir.I64)})), nil
		}
		// Before opset 13 the input is flattened to 2-D at axis.
		flat := []sym.Expr{sym.Product(x.dims[:axis]...), sym.Product(x.dims[axis:]...)}
		f := c.reshapeValue(x, flat)
		y := c.e.Op(name, []*ir.Value{f}, ir.NamedAttr{Name: "axis", Value: ir.Int(1, ir.I64)})
		if y == nil {
			return nil, c.e.Err
		}
		return c.wrap(c.reshapeValue(c.im.wrap(y), x.dims)), nil
	}
}

func reduce(kind string) converter {
	return func(c *nodeCtx) ([]*val, error) {
		x, err := c.input(0)
		if err != nil {
			return nil, err
		}
		axes, has, err := c.axesOf(1)
		if err != nil {
			return nil, err
		}
		if !has || len(axes) == 0 {
			if c.int("noop_with_empty_axes", 0) != 0 {
				return one(x)
			}
			axes = iotaList(int64(x.rank()))
		}
		for i, a := range axes {
			n, err := normAxis(a, x.rank())
			if err != nil {
				return nil, err
			}
			axes[i] = int64(n)
		}
		return c.wrap(c.e.Reduce("reduce_"+kind, c.value(x), axes, c.int("keepdims", 1) != 0)), nil
	}
}

func globalPool(kind string) converter {
	return func(c *nodeCtx) ([]*val, error) {
		x, err := c.input(0)
		if err != nil {
			return nil, err
		}
		if x.rank() < 3 {
			return nil, fmt.Errorf("the input must have rank >= 3, got %d", x.rank())
		}
		axes := iotaList(int64(x.rank()))[2:]
		return c.wrap(c.e.Reduce("reduce_"+kind, c.value(x), axes, true)), nil
	}
}

// pool is MaxPool and AveragePool over 2-D (or 1-D) windows, expressed as
// graph ops: the input is padded, and each kernel offset's strided window
// is taken by gathering rows then columns at constant indices (which
// keeps symbolic batch sizes); the windows combine with max, or add then
// scale by the per-position count.
func pool(kind string) converter {
	return func(c *nodeCtx) ([]*val, error) {
		x, err := c.input(0)
		if err != nil {
			return nil, err
		}
		if len(c.n.Outputs) > 1 && c.n.Outputs[1] != "" && c.im.used(c.n.Outputs[1]) {
			return nil, errors.New("the Indices output of MaxPool is not supported")
		}
		if c.int("storage_order", 0) != 0 {
			return nil, errors.New("storage_order = 1 is not supported")
		}
		if !ir.IsFloat(x.elem) {
			return nil, fmt.Errorf("pooling needs a float input, got %s", x.elem)
		}
		ks, ok := c.ints("kernel_shape")
		if !ok {
			return nil, errors.New("missing kernel_shape")
		}
		sp := len(ks)
		if sp < 1 || sp > 2 || x.rank() != sp+2 {
			return nil, fmt.Errorf("only 1-D and 2-D pooling is supported (kernel_shape %v, input rank %d)", ks, x.rank())
		}
		in := staticDims(x.dims[2:])
		for _, d := range in {
			if d < 0 {
				return nil, errSymbolic("pooling needs static spatial sizes")
			}
		}
		strides, dil, ext, pads, err := c.window(in, ks)
		if err != nil {
			return nil, err
		}
		// A window that lies in the padding only would pool nothing (−∞
		// or 0/0): ONNX Runtime and PyTorch reject such pads too.
		for i, p := range pads {
			if p >= ext[i%sp] {
				return nil, fmt.Errorf("pads %v must be smaller than the kernel %v (dilated: %v)", pads, ks, ext)
			}
		}
		ceil := c.int("ceil_mode", 0) != 0
		out := make([]int64, sp)
		extra := make([]int64, sp) // padding past the end for ceil-mode windows
		for i := range sp {
			span := in[i] + pads[i] + pads[sp+i] - ext[i]
			if span < 0 {
				return nil, fmt.Errorf("the kernel %v does not fit the padded input %v", ks, in)
			}
			o := span/strides[i] + 1
			if ceil && span%strides[i] != 0 {
				o++
				if (o-1)*strides[i] >= in[i]+pads[i] {
					o--
				}
			}
			out[i] = o
			extra[i] = max((o-1)*strides[i]+ext[i]-(in[i]+pads[i]+pads[sp+i]), 0)
		}
		xv := c.value(x)
		rank := x.rank()
		if slices.ContainsFunc(pads, func(p int64) bool { return p != 0 }) || slices.ContainsFunc(extra, func(p int64) bool { return p != 0 }) {
			low, high := make([]int64, rank), make([]int64, rank)
			for i := range sp {
				low[2+i], high[2+i] = pads[i], pads[sp+i]+extra[i]
			}
			fill := 0.0
			if kind == "max" {
				fill = math.Inf(-1)
			}
			xv = c.e.Op("pad", []*ir.Value{xv}, ir.NamedAttr{Name: "low", Value: graph.Ints(low...)},
				ir.NamedAttr{Name: "high", Value: graph.Ints(high...)},
				ir.NamedAttr{Name: "value", Value: ir.Float(fill, x.elem.(*ir.FloatType))})
		}
		// rows[ky] = the strided rows for kernel row ky.
		gather := func(v *ir.Value, axis int, k int64, i int) *ir.Value {
			idx := make([]int64, out[i])
			for j := range idx {
				idx[j] = k*dil[i] + int64(j)*strides[i]
			}
			return c.gatherAt(v, int64(axis), idx)
		}
		var acc *ir.Value
		combine := func(w *ir.Value) {
			switch {
			case acc == nil:
				acc = w
			case kind == "max":
				acc = c.e.Binary("max", acc, w)
			default:
				acc = c.e.Binary("add", acc, w)
			}
		}
		for ky := range ks[0] {
			rows := gather(xv, 2, ky, 0)
			if sp == 1 {
				combine(rows)
				continue
			}
			for kx := range ks[1] {
				combine(gather(rows, 3, kx, 1))
			}
		}
		if kind == "avg" {
			include := c.int("count_include_pad", 0) != 0
			counts := poolCounts(in, pads, ext, dil, ks, strides, out, include)
			inv := make([]float64, len(counts))
			for i, n := range counts {
				inv[i] = ir.RoundToType(1/float64(n), x.elem.(*ir.FloatType))
			}
			acc = c.e.Binary("mul", acc, c.value(kval(&konst{elem: x.elem, shape: out, f: inv})))
		}
		return c.wrap(acc), nil
	}
}

// poolCounts is the number of elements each average-pooling window counts:
// those inside the input, or inside input and padding with
// count_include_pad (never the ceil-mode overhang).
func poolCounts(in, pads, ext, dil, ks, strides, out []int64, include bool) []int64 {
	sp := len(in)
	per := make([][]int64, sp)
	for i := range sp {
		per[i] = make([]int64, out[i])
		lo, hi := int64(0), in[i]
		if include {
			lo, hi = -pads[i], in[i]+pads[sp+i]
		}
		for o := range out[i] {
			start := o*strides[i] - pads[i]
			for k := range ks[i] {
				if p := start + k*dil[i]; p >= lo && p < hi {
					per[i][o]++
				}
			}
			per[i][o] = max(per[i][o], 1)
		}
	}
	if sp == 1 {
		return per[0]
	}
	out2 := make([]int64, 0, out[0]*out[1])
	for _, a := range per[0] {
		for _, b := range per[1] {
			out2 = append(out2, a*b)
		}
	}
	return out2
}

// convResize is Resize in nearest and linear modes (nn.Upsample,
// F.interpolate: nearest, bilinear with or without align_corners): each
// resized axis, whose input size must be static, is a gather at constant
// source indices (nearest), or two gathers weighted by constant factors
// (linear), as ONNX defines the coordinate transformations.
func convResize(c *nodeCtx) ([]*val, error) {
	x, err := c.floatInput()
	if err != nil {
		return nil, err
	}
	mode := c.str("mode", "nearest")
	if mode != "nearest" && mode != "linear" {
		return nil, fmt.Errorf("mode %q is not supported (nearest, linear)", mode)
	}
	if c.int("antialias", 0) != 0 {
		return nil, errors.New("antialias = 1 is not supported")
	}
	if p := c.str("keep_aspect_ratio_policy", "stretch"); p != "stretch" {
		return nil, fmt.Errorf("keep_aspect_ratio_policy %q is not supported (stretch)", p)
	}
	ctm := c.str("coordinate_transformation_mode", "half_pixel")
	switch ctm {
	case "half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners":
	default:
		return nil, fmt.Errorf("coordinate_transformation_mode %q is not supported (half_pixel, pytorch_half_pixel, asymmetric, align_corners)", ctm)
	}
	nearest := c.str("nearest_mode", "round_prefer_floor")
	switch nearest {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return nil, fmt.Errorf("nearest_mode %q is unknown", nearest)
	}
	axes := iotaList(int64(x.rank()))
	if a, ok := c.ints("axes"); ok {
		if axes, err = normAxes(a, x.rank()); err != nil {
			return nil, err
		}
	}
	// Per resized axis: the output size and the scale the coordinates use.
	outSize := make([]int64, len(axes))
	keep := make([]bool, len(axes)) // a size copied from the input's symbolic one
	scale := make([]float64, len(axes))
	switch {
	case c.opt(3) != nil:
		// Sizes may copy a symbolic size from the input's shape (an
		// exporter's Shape → Slice → Concat): that axis is kept.
		sz := c.opt(3)
		if sz.k == nil || sz.k.isFloat() {
			return nil, errors.New("sizes (input 3) must be an integer constant or a shape computation")
		}
		if len(sz.k.i) != len(axes) {
			return nil, fmt.Errorf("sizes %v need %d entries", sz.k.i, len(axes))
		}
		for j, e := range sz.k.i {
			v, ok := e.IsConst()
			switch {
			case e.Equal(x.dims[axes[j]]):
				keep[j] = true
			case !ok:
				return nil, errSymbolic("sizes %v: entry %d depends on symbolic sizes", sz.k.i, j)
			}
			outSize[j] = v
		}
		scale = nil // from the sizes, below
	case c.opt(2) != nil:
		sc, err := c.floatsOf(c.opt(2), "scales")
		if err != nil {
			return nil, err
		}
		if len(sc) != len(axes) {
			return nil, fmt.Errorf("scales %v need %d entries", sc, len(axes))
		}
		copy(scale, sc)
	default:
		return nil, errors.New("neither scales nor sizes is given")
	}
	v := c.value(x)
	for j, a := range axes {
		n, static := x.dims[a].IsConst()
		if scale != nil {
			if !(scale[j] > 0) || math.IsInf(scale[j], 0) {
				return nil, fmt.Errorf("scale %v of axis %d is not positive", scale[j], a)
			}
			if scale[j] == 1 {
				continue
			}
			if !static {
				return nil, errSymbolic("resizing the symbolic axis %d (%s) is not supported", a, x.dims[a])
			}
			outSize[j] = int64(math.Floor(float64(n) * scale[j]))
		} else {
			if keep[j] || static && outSize[j] == n {
				continue
			}
			if !static {
				return nil, errSymbolic("resizing the symbolic axis %d (%s) is not supported", a, x.dims[a])
			}
		}
		if n < 1 || outSize[j] < 1 {
			return nil, fmt.Errorf("axis %d resized from %d to %d elements: want at least 1", a, n, outSize[j])
		}
		s := float64(outSize[j]) / float64(n)
		if scale != nil {
			s = scale[j]
		}
		src := make([]float64, outSize[j])
		for o := range src {
			switch {
			case ctm == "align_corners" && outSize[j] == 1, ctm == "pytorch_half_pixel" && outSize[j] == 1:
				src[o] = 0
			case ctm == "align_corners":
				src[o] = float64(o) * float64(n-1) / float64(outSize[j]-1)
			case ctm == "asymmetric":
				src[o] = float64(o) / s
			default:
				src[o] = (float64(o)+0.5)/s - 0.5
			}
		}
		if mode == "nearest" {
			idx := make([]int64, len(src))
			for o, f := range src {
				var r float64
				switch nearest {
				case "floor":
					r = math.Floor(f)
				case "ceil":
					r = math.Ceil(f)
				case "round_prefer_ceil":
					r = math.Floor(f + 0.5)
				default:
					r = math.Ceil(f - 0.5)
				}
				idx[o] = min(max(int64(r), 0), n-1)
			}
			v = c.gatherAt(v, a, idx)
		} else {
			// Linear: the two neighbours of each clamped source position,
			// weighted by its distances to them ([out, 1, …] factors).
			i0, i1 := make([]int64, len(src)), make([]int64, len(src))
			w0, w1 := make([]float64, len(src)), make([]float64, len(src))
			ft := x.elem.(*ir.FloatType)
			for o, f := range src {
				f = min(max(f, 0), float64(n-1))
				i0[o] = int64(math.Floor(f))
				i1[o] = min(i0[o]+1, n-1)
				d := f - float64(i0[o])
				w0[o], w1[o] = ir.RoundToType(1-d, ft), ir.RoundToType(d, ft)
			}
			wshape := ones(x.rank() - int(a))
			wshape[0] = outSize[j]
			lo := c.e.Binary("mul", c.gatherAt(v, a, i0), c.value(kval(&konst{elem: x.elem, shape: wshape, f: w0})))
			hi := c.e.Binary("mul", c.gatherAt(v, a, i1), c.value(kval(&konst{elem: x.elem, shape: wshape, f: w1})))
			v = c.e.Binary("add", lo, hi)
		}
	}
	return c.wrap(v), nil
}

// normAxes normalizes a list of axes for rank, rejecting repeats.
func normAxes(axes []int64, rank int) ([]int64, error) {
	out := make([]int64, len(axes))
	for i, a := range axes {
		n, err := normAxis(a, rank)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out[:i], int64(n)) {
			return nil, fmt.Errorf("axes %v repeat axis %d", axes, n)
		}
		out[i] = int64(n)
	}
	return out, nil
}

// convDepthToSpace is DepthToSpace (nn.PixelShuffle: mode CRD; DCR the
// default) and SpaceToDepth (nn.PixelUnshuffle's layout) as a reshape to
// rank 6, a transpose and a reshape back.
func convDepthToSpace(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	if x.rank() != 4 {
		return nil, fmt.Errorf("the input must have rank 4, got %d", x.rank())
	}
	b := c.int("blocksize", 0)
	shape, ok := (&val{dims: x.dims[1:]}).staticShape()
	if !ok {
		return nil, errSymbolic("the channel and spatial sizes %s must be static", shapeString(x.dims[1:]))
	}
	ch, h, w := shape[0], shape[1], shape[2]
	n := x.dims[0]
	k := sym.Const
	var split, merged []sym.Expr
	var perm []int64
	if c.n.OpType == "DepthToSpace" {
		if b < 1 || ch%(b*b) != 0 {
			return nil, fmt.Errorf("blocksize %d: want ≥ 1 with its square dividing the %d channels", b, ch)
		}
		switch mode := c.str("mode", "DCR"); mode {
		case "DCR":
			split, perm = []sym.Expr{n, k(b), k(b), k(ch / (b * b)), k(h), k(w)}, []int64{0, 3, 4, 1, 5, 2}
		case "CRD":
			split, perm = []sym.Expr{n, k(ch / (b * b)), k(b), k(b), k(h), k(w)}, []int64{0, 1, 4, 2, 5, 3}
		default:
			return nil, fmt.Errorf("mode %q is not one of DCR, CRD", mode)
		}
		merged = []sym.Expr{n, k(ch / (b * b)), k(h * b), k(w * b)}
	} else {
		if b < 1 || h%b != 0 || w%b != 0 {
			return nil, fmt.Errorf("blocksize %d: want ≥ 1 and dividing the spatial sizes %d×%d", b, h, w)
		}
		split, perm = []sym.Expr{n, k(ch), k(h / b), k(b), k(w / b), k(b)}, []int64{0, 3, 5, 1, 2, 4}
		merged = []sym.Expr{n, k(ch * b * b), k(h / b), k(w / b)}
	}
	v := c.reshapeValue(x, split)
	v = c.e.Op("transpose", []*ir.Value{v}, ir.NamedAttr{Name: "perm", Value: graph.Ints(perm...)})
	return c.wrap(c.reshapeValue(c.im.wrap(v), merged)), nil
}

// rounding is Floor, Ceil and Round (half to even). Constants (shape
// arithmetic) fold with f; a tensor is rounded through a truncating cast
// to i64 and back, corrected by one where that moved the wrong way or a
// tie rounded to odd, for |x| below 2^(precision−1) (larger floats, infinities
// and NaN are integral already and pass through).
func rounding(f func(float64) float64) converter {
	return func(c *nodeCtx) ([]*val, error) {
		x, err := c.floatInput()
		if err != nil {
			return nil, err
		}
		ft := x.elem.(*ir.FloatType)
		if x.k != nil {
			out := &konst{elem: x.elem, shape: x.k.shape, f: make([]float64, len(x.k.f))}
			for i, v := range x.k.f {
				out.f[i] = ir.RoundToType(f(v), ft)
			}
			return one(kval(out))
		}
		xv := c.value(x)
		k := func(v float64) *ir.Value { return c.value(c.scalar(x.elem, v)) }
		trunc := func(v *ir.Value) *ir.Value {
			i := c.e.Typed("cast", []*ir.Value{v}, graph.TensorWithDims(x.dims, ir.I64))
			return c.e.Typed("cast", []*ir.Value{i}, graph.TensorWithDims(x.dims, x.elem))
		}
		floor := func(v *ir.Value) *ir.Value {
			t := trunc(v)
			return c.where(t, "gt", v, c.e.Binary("sub", t, k(1)), t)
		}
		var r *ir.Value
		switch c.n.OpType {
		case "Floor":
			r = floor(xv)
		case "Ceil":
			t := trunc(xv)
			r = c.where(t, "lt", xv, c.e.Binary("add", t, k(1)), t)
		default: // Round: floor(x + 1/2), less one where x was a tie and that is odd
			r = floor(c.e.Binary("add", xv, k(0.5)))
			tie := c.e.Op("cmp", []*ir.Value{c.e.Binary("sub", r, xv), k(0.5)}, ir.NamedAttr{Name: "predicate", Value: ir.Str("eq")})
			half := floor(c.e.Binary("mul", r, k(0.5)))
			odd := c.e.Op("cmp", []*ir.Value{c.e.Binary("sub", r, c.e.Binary("mul", half, k(2))), k(1)}, ir.NamedAttr{Name: "predicate", Value: ir.Str("eq")})
			both := c.e.Op("select", []*ir.Value{tie, odd, c.value(c.boolConst(false))})
			r = c.e.Op("select", []*ir.Value{both, c.e.Binary("sub", r, k(1)), r})
		}
		big := math.Ldexp(1, ft.Mantissa-1) // every float at least this is an integer
		return c.wrap(c.where(c.e.Unary("abs", xv), "lt", k(big), r, xv)), nil
	}
}
