// Package stablehlo converts StableHLO (the stablehlo dialect, as JAX
// exports it) into graph ops: the convert-stablehlo-to-graph pass, which
// gives StableHLO programs their semantics in Strata (the interpreter, the
// lowerings and the backends all take the graph ops it produces).
//
// Each stablehlo op becomes a few graph ops: dot_general a transpose and
// reshape of each side around a batched matmul, convolution a conv2d
// between layout transposes, reduce and reduce_window (pooling) the graph
// reductions and strided gathers that their single-op bodies name,
// broadcast_in_dim a reshape and broadcast_to, gather along one axis a
// graph.gather. What has no graph meaning (custom_call, while, dynamic
// shapes, reductions of several operands) is refused with a located
// error naming the op.
package stablehlo

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	hlo "github.com/strata-ir/strata/dialects/stablehlo"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// PassName is the pipeline name of the conversion.
const PassName = "convert-stablehlo-to-graph"

func init() {
	passes.Register(&passes.PassInfo{
		Name:    PassName,
		Summary: "Convert stablehlo ops (as JAX exports them) into graph ops",
		Description: "Rewrites every stablehlo op in the func.func ops under the anchor into graph ops " +
			"(docs/importers.md lists the ops and how each converts). Shapes must be static. custom_call, " +
			"reductions with several operands or bodies other than one add, maximum or minimum, and " +
			"other ops with no graph equivalent are errors located at the op.",
		Anchor: passes.AnyOp,
		New: func(passes.Options) (passes.Pass, error) {
			return passes.FuncPass{PassName: PassName, Fn: func(op *ir.Operation, st *passes.State) error {
				return Convert(st.Ctx, op)
			}}, nil
		},
	})
}

// Convert rewrites the stablehlo ops of every func.func in root (root
// itself included) into graph ops.
func Convert(ctx *ir.Context, root *ir.Operation) error {
	var fns []*ir.Operation
	root.WalkPost(func(op *ir.Operation) {
		if op.Name() == funcs.FuncOp {
			fns = append(fns, op)
		}
	})
	var errs ir.DiagnosticList
	for _, fn := range fns {
		body := funcs.Body(fn)
		if body == nil {
			continue
		}
		for _, op := range body.Ops() {
			if !strings.HasPrefix(op.Name(), hlo.Name+".") {
				continue
			}
			if err := convertOp(ctx, op); err != nil {
				var d *ir.Diagnostic
				if !errors.As(err, &d) {
					d = ir.Errorf(op.Loc(), "'%s' op %v", op.Name(), err)
				}
				errs = append(errs, d)
				break // later ops may use this one's result
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// conv converts one op.
type conv struct {
	op *ir.Operation
	e  *graph.Emitter
}

func convertOp(ctx *ir.Context, op *ir.Operation) error {
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(op)
	c := &conv{op: op, e: &graph.Emitter{B: b, Loc: op.Loc()}}
	for _, t := range slices.Concat(op.OperandTypes(), op.ResultTypes()) {
		if tt, ok := t.(*ir.TensorType); !ok || !tt.Ranked() || slices.Contains(tt.Shape(), ir.Dynamic) {
			return fmt.Errorf("has the type %s; only static shapes are supported", t)
		}
	}
	name := strings.TrimPrefix(op.Name(), hlo.Name+".")
	v, err := c.convert(name)
	if err == nil && c.e.Err != nil {
		err = c.e.Err
	}
	if err != nil {
		return err
	}
	if op.NumResults() != 1 || v == nil {
		return fmt.Errorf("internal error: converted to %v", v)
	}
	if want := op.Result(0).Type(); !sameType(v.Type(), want) {
		return fmt.Errorf("internal error: converted to %s, want %s", v.Type(), want)
	}
	op.Result(0).ReplaceAllUsesWith(v)
	op.Erase()
	return nil
}

func sameType(a, b ir.Type) bool {
	at, ok1 := a.(*ir.TensorType)
	bt, ok2 := b.(*ir.TensorType)
	return ok1 && ok2 && slices.Equal(at.Shape(), bt.Shape()) && at.ElementType() == bt.ElementType()
}

func shapeOf(v *ir.Value) []int64 { return v.Type().(*ir.TensorType).Shape() }

func elemOf(v *ir.Value) ir.Type { return v.Type().(*ir.TensorType).ElementType() }

func (c *conv) in(i int) *ir.Value { return c.op.Operand(i) }

func (c *conv) result() *ir.TensorType { return c.op.Result(0).Type().(*ir.TensorType) }

func (c *conv) ints(name string) ([]int64, bool) {
	a := hlo.Attr(c.op, name)
	if a == nil {
		return nil, false
	}
	if d, ok := a.(ir.DenseAttr); ok {
		out := make([]int64, d.Len())
		for i := range out {
			out[i] = d.Int(int64(i))
		}
		return out, true
	}
	return graph.IntList(a)
}

func (c *conv) int(name string, def int64) int64 {
	if ia, ok := hlo.Attr(c.op, name).(ir.IntegerAttr); ok {
		return ia.Value
	}
	return def
}

func named(name string, a ir.Attribute) ir.NamedAttr { return ir.NamedAttr{Name: name, Value: a} }

var binaryOps = map[string]string{"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div",
	"maximum": "max", "minimum": "min", "power": "pow"}

var unaryOps = map[string]string{"negate": "neg", "abs": "abs", "exponential": "exp", "log": "log", "sqrt": "sqrt",
	"rsqrt": "rsqrt", "tanh": "tanh", "logistic": "sigmoid", "sine": "sin", "cosine": "cos"}

func (c *conv) convert(name string) (*ir.Value, error) {
	e := c.e
	if g, ok := binaryOps[name]; ok {
		return e.Binary(g, c.in(0), c.in(1)), nil
	}
	if g, ok := unaryOps[name]; ok {
		return e.Unary(g, c.in(0)), nil
	}
	switch name {
	case "constant":
		d, ok := hlo.Attr(c.op, "value").(ir.DenseAttr)
		if !ok {
			return nil, errors.New("value must be a dense elements attribute")
		}
		return e.Op("constant", nil, named("value", d)), nil
	case "exponential_minus_one":
		return e.Binary("sub", e.Unary("exp", c.in(0)), c.scalar(elemOf(c.in(0)), 1)), nil
	case "log_plus_one":
		return e.Unary("log", e.Binary("add", c.in(0), c.scalar(elemOf(c.in(0)), 1))), nil
	case "not", "and", "or", "xor":
		return c.logical(name)
	case "convert":
		return e.Typed("cast", []*ir.Value{c.in(0)}, c.result()), nil
	case "iota":
		return e.Typed("iota", nil, c.result(), named("axis", ir.Int(c.int("iota_dimension", 0), ir.I64))), nil
	case "compare":
		pred, err := hlo.Direction(c.op)
		if err != nil {
			return nil, err
		}
		return e.Op("cmp", []*ir.Value{c.in(0), c.in(1)}, named("predicate", ir.Str(pred))), nil
	case "select":
		return e.Op("select", []*ir.Value{c.in(0), c.in(1), c.in(2)}), nil
	case "clamp":
		return e.Binary("min", e.Binary("max", c.in(1), c.in(0)), c.in(2)), nil
	case "broadcast_in_dim":
		return c.broadcastInDim()
	case "reshape":
		return e.Op("reshape", []*ir.Value{c.in(0)}, named("shape", graph.Ints(c.result().Shape()...))), nil
	case "transpose":
		perm, _ := c.ints("permutation")
		return e.Op("transpose", []*ir.Value{c.in(0)}, named("perm", graph.Ints(perm...))), nil
	case "slice":
		s, _ := c.ints("start_indices")
		l, _ := c.ints("limit_indices")
		st, _ := c.ints("strides")
		return e.Op("slice", []*ir.Value{c.in(0)}, named("starts", graph.Ints(s...)), named("limits", graph.Ints(l...)), named("strides", graph.Ints(st...))), nil
	case "concatenate":
		if c.op.NumOperands() == 1 {
			return c.in(0), nil
		}
		return e.Op("concat", c.op.Operands(), named("axis", ir.Int(c.int("dimension", 0), ir.I64))), nil
	case "dot_general":
		return c.dotGeneral()
	case "convolution":
		return c.convolution()
	case "reduce":
		return c.reduce()
	case "reduce_window":
		return c.reduceWindow()
	case "gather":
		return c.gather()
	case "pad":
		return c.pad()
	case "custom_call":
		target := hlo.Attr(c.op, "call_target_name")
		return nil, fmt.Errorf("custom_call %s is not supported: a call to an external target has no graph semantics", target)
	}
	return nil, fmt.Errorf("is not supported by %s", PassName)
}

// scalar is a rank-0 constant of elem.
func (c *conv) scalar(elem ir.Type, v float64) *ir.Value {
	if ft, ok := elem.(*ir.FloatType); ok {
		return c.e.Scalar(ft, v)
	}
	return c.e.Op("constant", nil, named("value", ir.DenseAttr{Type: ir.TensorOf(nil, elem), Bits: []uint64{uint64(int64(v))}, Splat: true}))
}

func (c *conv) logical(name string) (*ir.Value, error) {
	if elemOf(c.in(0)) != ir.I1 {
		return nil, fmt.Errorf("bitwise %s of %s is not supported (only i1)", name, elemOf(c.in(0)))
	}
	f := c.scalar(ir.I1, 0)
	t := c.scalar(ir.I1, 1)
	switch name {
	case "not":
		return c.e.Op("cmp", []*ir.Value{c.in(0), f}, named("predicate", ir.Str("eq"))), nil
	case "and":
		return c.e.Op("select", []*ir.Value{c.in(0), c.in(1), f}), nil
	case "or":
		return c.e.Op("select", []*ir.Value{c.in(0), t, c.in(1)}), nil
	}
	return c.e.Op("cmp", []*ir.Value{c.in(0), c.in(1)}, named("predicate", ir.Str("ne"))), nil
}

// transposeIf transposes v by perm unless perm is the identity.
func (c *conv) transposeIf(v *ir.Value, perm []int64) *ir.Value {
	for i, p := range perm {
		if p != int64(i) {
			return c.e.Op("transpose", []*ir.Value{v}, named("perm", graph.Ints(perm...)))
		}
	}
	return v
}

// reshapeIf reshapes v to shape unless it has it.
func (c *conv) reshapeIf(v *ir.Value, shape []int64) *ir.Value {
	if v == nil || slices.Equal(shapeOf(v), shape) {
		return v
	}
	return c.e.Op("reshape", []*ir.Value{v}, named("shape", graph.Ints(shape...)))
}

func (c *conv) broadcastInDim() (*ir.Value, error) {
	x := c.in(0)
	dims, _ := c.ints("broadcast_dimensions")
	out := c.result().Shape()
	xs := shapeOf(x)
	if len(dims) != len(xs) {
		return nil, fmt.Errorf("broadcast_dimensions %v do not match the operand's rank %d", dims, len(xs))
	}
	// Order the operand's dims as they appear in the result.
	order := make([]int64, len(dims))
	for i := range order {
		order[i] = int64(i)
	}
	slices.SortFunc(order, func(a, b int64) int { return int(dims[a] - dims[b]) })
	x = c.transposeIf(x, order)
	shape := slices.Repeat([]int64{1}, len(out))
	for _, o := range order {
		d := dims[o]
		if d < 0 || int(d) >= len(out) {
			return nil, fmt.Errorf("broadcast dimension %d is out of range for rank %d", d, len(out))
		}
		shape[d] = xs[o]
	}
	x = c.reshapeIf(x, shape)
	if slices.Equal(shape, out) {
		return x, nil
	}
	return c.e.Op("broadcast_to", []*ir.Value{x}, named("shape", graph.Ints(out...))), nil
}

func (c *conv) dotGeneral() (*ir.Value, error) {
	d, err := hlo.DotDims(c.op)
	if err != nil {
		return nil, err
	}
	lhs, rhs := c.in(0), c.in(1)
	ls, rs := shapeOf(lhs), shapeOf(rhs)
	free := func(rank int, used ...[]int64) []int64 {
		var out []int64
		for i := range int64(rank) {
			if !slices.Contains(used[0], i) && !slices.Contains(used[1], i) {
				out = append(out, i)
			}
		}
		return out
	}
	lf, rf := free(len(ls), d.LhsBatch, d.LhsContract), free(len(rs), d.RhsBatch, d.RhsContract)
	size := func(s []int64, ix []int64) int64 {
		n := int64(1)
		for _, i := range ix {
			n *= s[i]
		}
		return n
	}
	var batch []int64
	for i, b := range d.LhsBatch {
		if ls[b] != rs[d.RhsBatch[i]] {
			return nil, fmt.Errorf("batch dims %d and %d differ in size", b, d.RhsBatch[i])
		}
		batch = append(batch, ls[b])
	}
	for i, k := range d.LhsContract {
		if ls[k] != rs[d.RhsContract[i]] {
			return nil, fmt.Errorf("contracting dims %d and %d differ in size", k, d.RhsContract[i])
		}
	}
	m, k, n := size(ls, lf), size(ls, d.LhsContract), size(rs, rf)
	l := c.transposeIf(lhs, slices.Concat(d.LhsBatch, lf, d.LhsContract))
	l = c.reshapeIf(l, slices.Concat(batch, []int64{m, k}))
	r := c.transposeIf(rhs, slices.Concat(d.RhsBatch, d.RhsContract, rf))
	r = c.reshapeIf(r, slices.Concat(batch, []int64{k, n}))
	if elemOf(lhs) != elemOf(rhs) {
		return nil, fmt.Errorf("operands of element types %s and %s are not supported", elemOf(lhs), elemOf(rhs))
	}
	y := c.e.Op("matmul", []*ir.Value{l, r})
	var out []int64
	out = append(out, batch...)
	for _, i := range lf {
		out = append(out, ls[i])
	}
	for _, i := range rf {
		out = append(out, rs[i])
	}
	y = c.reshapeIf(y, out)
	if want := c.result().ElementType(); y != nil && elemOf(y) != want {
		y = c.e.Typed("cast", []*ir.Value{y}, ir.TensorOf(out, want))
	}
	return y, nil
}

func (c *conv) convolution() (*ir.Value, error) {
	dn, err := hlo.ConvDims(c.op)
	if err != nil {
		return nil, err
	}
	if len(dn.InSpatial) != 2 {
		return nil, fmt.Errorf("only 2-D convolutions are supported, got %d spatial dims", len(dn.InSpatial))
	}
	if c.int("batch_group_count", 1) != 1 {
		return nil, errors.New("batch_group_count != 1 is not supported")
	}
	if ld, ok := c.ints("lhs_dilation"); ok && slices.ContainsFunc(ld, func(v int64) bool { return v != 1 }) {
		return nil, fmt.Errorf("lhs_dilation %v (a transposed convolution) is not supported", ld)
	}
	if a := hlo.Attr(c.op, "window_reversal"); a != nil && strings.Contains(a.String(), "true") {
		return nil, errors.New("window_reversal is not supported")
	}
	strides := []int64{1, 1}
	if s, ok := c.ints("window_strides"); ok {
		strides = s
	}
	dil := []int64{1, 1}
	if s, ok := c.ints("rhs_dilation"); ok {
		dil = s
	}
	pad := []int64{0, 0, 0, 0}
	if p, ok := c.ints("padding"); ok {
		if len(p) != 4 {
			return nil, fmt.Errorf("padding %v needs 2x2 entries", p)
		}
		pad = []int64{p[0], p[2], p[1], p[3]} // [[t, b], [l, r]] → t, l, b, r
	}
	if slices.ContainsFunc(pad, func(v int64) bool { return v < 0 }) {
		return nil, fmt.Errorf("negative padding %v is not supported", pad)
	}
	x := c.transposeIf(c.in(0), slices.Concat([]int64{dn.InBatch, dn.InFeature}, dn.InSpatial))
	w := c.transposeIf(c.in(1), slices.Concat([]int64{dn.KOut, dn.KIn}, dn.KSpatial))
	y := c.e.Op("conv2d", []*ir.Value{x, w}, named("strides", graph.Ints(strides...)),
		named("padding", graph.Ints(pad...)), named("dilations", graph.Ints(dil...)),
		named("groups", ir.Int(c.int("feature_group_count", 1), ir.I64)))
	// y is [N, O, H, W]: move each to its place in the output layout.
	perm := make([]int64, 4)
	perm[dn.OutBatch], perm[dn.OutFeature] = 0, 1
	for i, p := range dn.OutSpatial {
		perm[p] = int64(2 + i)
	}
	return c.transposeIf(y, perm), nil
}

// constantOf returns the value of a constant operand.
func constantOf(v *ir.Value) (ir.DenseAttr, bool) {
	op := v.DefiningOp()
	if op == nil || (op.Name() != "graph.constant" && op.Name() != "stablehlo.constant") {
		return ir.DenseAttr{}, false
	}
	d, ok := hlo.Attr(op, "value").(ir.DenseAttr)
	return d, ok
}

// bodyKind names the reduction a body computes: "sum", "max" or "min".
func (c *conv) bodyKind() (string, error) {
	r := c.op.Region(0)
	blk := r.Front()
	if blk == nil || blk.NumArguments() != 2 {
		return "", errors.New("only reductions of one operand are supported")
	}
	ops := blk.Ops()
	if len(ops) != 2 || ops[1].Name() != "stablehlo.return" || ops[1].NumOperands() != 1 || ops[1].Operand(0) != ops[0].Result(0) {
		return "", errors.New("only bodies of one add, maximum, minimum, and or or are supported")
	}
	kinds := map[string]string{"stablehlo.add": "sum", "stablehlo.maximum": "max", "stablehlo.minimum": "min",
		"stablehlo.and": "and", "stablehlo.or": "or"}
	k, ok := kinds[ops[0].Name()]
	a0, a1 := blk.Argument(0), blk.Argument(1)
	if !ok || ops[0].NumOperands() != 2 || !(ops[0].Operand(0) == a0 && ops[0].Operand(1) == a1 || ops[0].Operand(0) == a1 && ops[0].Operand(1) == a0) {
		return "", fmt.Errorf("a body of %s is not supported (one add, maximum, minimum, and or or of the two arguments)", ops[0].Name())
	}
	return k, nil
}

// withInit combines a reduction's result with its init value, unless the
// init is the reduction's identity.
func (c *conv) withInit(kind string, y, init *ir.Value) *ir.Value {
	if d, ok := constantOf(init); ok && d.Len() == 1 && ir.IsFloat(d.Type.ElementType()) {
		v := d.Float(0)
		if kind == "sum" && v == 0 || kind == "max" && math.IsInf(v, -1) || kind == "min" && math.IsInf(v, 1) {
			return y
		}
	}
	if d, ok := constantOf(init); ok && d.Len() == 1 && !ir.IsFloat(d.Type.ElementType()) && kind == "sum" && d.Int(0) == 0 {
		return y
	}
	op := map[string]string{"sum": "add", "max": "max", "min": "min"}[kind]
	return c.e.Binary(op, y, init)
}

func (c *conv) reduce() (*ir.Value, error) {
	if c.op.NumOperands() != 2 || c.op.NumResults() != 1 {
		return nil, errors.New("only reductions of one operand are supported")
	}
	kind, err := c.bodyKind()
	if err != nil {
		return nil, err
	}
	dims, _ := c.ints("dimensions")
	if kind == "and" || kind == "or" {
		return c.reduceLogical(kind, dims)
	}
	y := c.e.Reduce("reduce_"+kind, c.in(0), dims, false)
	return c.withInit(kind, y, c.in(1)), nil
}

// reduceLogical is all (and) or any (or) of i1 values: the minimum or
// maximum of them as i32, compared with 0, then combined with the init.
func (c *conv) reduceLogical(kind string, dims []int64) (*ir.Value, error) {
	x := c.in(0)
	if elemOf(x) != ir.I1 {
		return nil, fmt.Errorf("a reduction by %s of %s is not supported (only i1)", kind, elemOf(x))
	}
	xi := c.e.Typed("cast", []*ir.Value{x}, ir.TensorOf(shapeOf(x), ir.I32))
	red := map[string]string{"and": "reduce_min", "or": "reduce_max"}[kind]
	y := c.e.Reduce(red, xi, dims, false)
	y = c.e.Op("cmp", []*ir.Value{y, c.scalar(ir.I32, 0)}, named("predicate", ir.Str("ne")))
	init := c.in(1)
	if d, ok := constantOf(init); ok && d.Len() == 1 && (d.Int(0) != 0) == (kind == "and") {
		return y, nil // true for and, false for or: the identity
	}
	if kind == "and" {
		return c.e.Op("select", []*ir.Value{y, init, c.scalar(ir.I1, 0)}), nil
	}
	return c.e.Op("select", []*ir.Value{y, c.scalar(ir.I1, 1), init}), nil
}

// reduceWindow is pooling: the input padded with the init value, and for
// each window offset the strided gather of every windowed dim, combined.
func (c *conv) reduceWindow() (*ir.Value, error) {
	if c.op.NumOperands() != 2 || c.op.NumResults() != 1 {
		return nil, errors.New("only windowed reductions of one operand are supported")
	}
	kind, err := c.bodyKind()
	if err != nil {
		return nil, err
	}
	if kind == "and" || kind == "or" {
		return nil, fmt.Errorf("a windowed reduction by %s is not supported", kind)
	}
	x, init := c.in(0), c.in(1)
	xs := shapeOf(x)
	r := len(xs)
	win, _ := c.ints("window_dimensions")
	strides, wdil := slices.Repeat([]int64{1}, r), slices.Repeat([]int64{1}, r)
	if s, ok := c.ints("window_strides"); ok {
		strides = s
	}
	if s, ok := c.ints("window_dilations"); ok {
		wdil = s
	}
	if s, ok := c.ints("base_dilations"); ok && slices.ContainsFunc(s, func(v int64) bool { return v != 1 }) {
		return nil, fmt.Errorf("base_dilations %v are not supported", s)
	}
	low, high := make([]int64, r), make([]int64, r)
	if p, ok := c.ints("padding"); ok {
		if len(p) != 2*r {
			return nil, fmt.Errorf("padding %v needs %dx2 entries", p, r)
		}
		for i := range r {
			low[i], high[i] = p[2*i], p[2*i+1]
		}
	}
	if len(win) != r || len(strides) != r || len(wdil) != r {
		return nil, fmt.Errorf("window %v, strides %v and dilations %v need %d entries", win, strides, wdil, r)
	}
	// The result type is the file's: check it against the window (a
	// stride of 0 would repeat the first window, a larger result index
	// past the input).
	out := c.result().Shape()
	for d := range r {
		if win[d] < 1 || strides[d] < 1 || wdil[d] < 1 || low[d] < 0 || high[d] < 0 {
			return nil, fmt.Errorf("window %v, strides %v, dilations %v and padding %v/%v: want sizes, strides and dilations ≥ 1 and padding ≥ 0", win, strides, wdil, low, high)
		}
		span := xs[d] + low[d] + high[d] - (win[d]-1)*wdil[d] - 1
		if span < 0 || span/strides[d]+1 != out[d] {
			return nil, fmt.Errorf("the result type %s does not match the window %v, strides %v, dilations %v and padding %v/%v over the input %v", c.result(), win, strides, wdil, low, high, xs)
		}
	}
	if slices.ContainsFunc(low, func(v int64) bool { return v != 0 }) || slices.ContainsFunc(high, func(v int64) bool { return v != 0 }) {
		d, ok := constantOf(init)
		if !ok || d.Len() != 1 {
			return nil, errors.New("a padded window needs a constant init value")
		}
		var fill ir.Attribute
		if ft, ok := d.Type.ElementType().(*ir.FloatType); ok {
			fill = ir.Float(d.Float(0), ft)
		} else {
			fill = ir.Int(d.Int(0), ir.I64)
		}
		x = c.e.Op("pad", []*ir.Value{x}, named("low", graph.Ints(low...)), named("high", graph.Ints(high...)), named("value", fill))
	}
	var acc *ir.Value
	var rec func(v *ir.Value, d int)
	rec = func(v *ir.Value, d int) {
		if d == r {
			switch {
			case acc == nil:
				acc = v
			default:
				acc = c.e.Binary(map[string]string{"sum": "add", "max": "max", "min": "min"}[kind], acc, v)
			}
			return
		}
		if win[d] == 1 && strides[d] == 1 && out[d] == xs[d]+low[d]+high[d] {
			rec(v, d+1)
			return
		}
		for k := range win[d] {
			idx := make([]int64, out[d])
			for j := range idx {
				idx[j] = k*wdil[d] + int64(j)*strides[d]
			}
			iv := c.e.Op("constant", nil, named("value", ir.DenseInts(ir.TensorOf([]int64{out[d]}, ir.I64), idx)))
			rec(c.e.Op("gather", []*ir.Value{v, iv}, named("axis", ir.Int(int64(d), ir.I64))), d+1)
		}
	}
	rec(x, 0)
	if acc == nil {
		return nil, c.e.Err
	}
	return c.withInit(kind, acc, init), nil
}

// gather supports taking along one axis (jnp.take, embeddings): one
// start_index_map entry a, collapsed [a], slice size 1 at a and full
// elsewhere.
func (c *conv) gather() (*ir.Value, error) {
	g, err := hlo.GatherDims(c.op)
	if err != nil {
		return nil, err
	}
	x, idx := c.in(0), c.in(1)
	xs, is := shapeOf(x), shapeOf(idx)
	sizes, _ := c.ints("slice_sizes")
	if len(g.StartIndexMap) != 1 || !slices.Equal(g.CollapsedSliceDims, g.StartIndexMap) || len(g.OperandBatching) > 0 {
		return nil, fmt.Errorf("only a gather along one axis is supported (start_index_map %v, collapsed_slice_dims %v)", g.StartIndexMap, g.CollapsedSliceDims)
	}
	a := g.StartIndexMap[0]
	for d, s := range sizes {
		if int64(d) == a && s != 1 || int64(d) != a && s != xs[d] {
			return nil, fmt.Errorf("slice_sizes %v must be 1 at axis %d and full elsewhere", sizes, a)
		}
	}
	bshape := is
	if g.IndexVectorDim < int64(len(is)) {
		if g.IndexVectorDim != int64(len(is))-1 || is[len(is)-1] != 1 {
			return nil, fmt.Errorf("index_vector_dim %d of indices %v is not supported", g.IndexVectorDim, is)
		}
		bshape = is[:len(is)-1]
		idx = c.reshapeIf(idx, bshape)
	}
	y := c.e.Op("gather", []*ir.Value{x, idx}, named("axis", ir.Int(a, ir.I64)))
	// graph.gather gives x[:a] + batch + x[a+1:]; StableHLO puts the offset
	// dims (x's dims but a, in order) at offset_dims and the batch dims in
	// the other places.
	rank := len(bshape) + len(xs) - 1
	perm := make([]int64, rank)
	nb := int64(len(bshape))
	var bi int64
	for p := range int64(rank) {
		if j := slices.Index(g.OffsetDims, p); j >= 0 {
			if int64(j) < a {
				perm[p] = int64(j)
			} else {
				perm[p] = int64(j) + nb
			}
			continue
		}
		perm[p] = a + bi
		bi++
	}
	return c.transposeIf(y, perm), nil
}

func (c *conv) pad() (*ir.Value, error) {
	low, _ := c.ints("edge_padding_low")
	high, _ := c.ints("edge_padding_high")
	interior, _ := c.ints("interior_padding")
	if slices.ContainsFunc(interior, func(v int64) bool { return v != 0 }) {
		return nil, fmt.Errorf("interior padding %v is not supported", interior)
	}
	if slices.ContainsFunc(slices.Concat(low, high), func(v int64) bool { return v < 0 }) {
		return nil, errors.New("negative padding is not supported")
	}
	d, ok := constantOf(c.in(1))
	if !ok || d.Len() != 1 {
		return nil, errors.New("the padding value must be a constant")
	}
	var fill ir.Attribute
	if ft, ok := d.Type.ElementType().(*ir.FloatType); ok {
		fill = ir.Float(d.Float(0), ft)
	} else {
		fill = ir.Int(d.Int(0), ir.I64)
	}
	return c.e.Op("pad", []*ir.Value{c.in(0)}, named("low", graph.Ints(low...)), named("high", graph.Ints(high...)), named("value", fill)), nil
}
