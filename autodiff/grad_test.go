package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/decompose"
	"github.com/strata-ir/strata/runtime/interp"
)

// arg describes one argument of a test function: its shape, element type
// (f64 unless set) and the range its values are drawn from.
type arg struct {
	shape  []int64
	elem   ir.Type
	lo, hi float64 // values in [lo, hi]; integers are rounded
	signed bool    // values in ±[lo, hi]
}

// instance is one op applied to random arguments: f(args) = op(args).
type instance struct {
	op     string
	args   []arg
	attrs  []ir.NamedAttr
	result ir.Type // for ops whose result type is given (cast)
	h, tol float64 // central-difference step and tolerance; defaults below
}

func f64(shape ...int64) arg      { return arg{shape: shape, lo: -2, hi: 2} }
func positive(shape ...int64) arg { return arg{shape: shape, lo: 0.5, hi: 2} }
func nonzero(shape ...int64) arg  { return arg{shape: shape, lo: 0.5, hi: 2, signed: true} }

func attr(name string, v ir.Attribute) ir.NamedAttr { return ir.NamedAttr{Name: name, Value: v} }
func i64(v int64) ir.IntegerAttr                    { return ir.IntegerAttr{Value: v, Type: ir.I64} }
func f64Attr(v float64) ir.FloatAttr                { return ir.FloatAttr{Bits: math.Float64bits(v), Type: ir.F64} }

// shapeGen draws a shape of rank lo…hi with sizes 1…4.
func shapeGen(t *rapid.T, label string, lo, hi int) []int64 {
	rank := rapid.IntRange(lo, hi).Draw(t, label+"-rank")
	s := make([]int64, rank)
	for i := range s {
		s[i] = int64(rapid.IntRange(1, 4).Draw(t, fmt.Sprintf("%s-%d", label, i)))
	}
	return s
}

// broadcastable draws a shape that broadcasts to out: a suffix of out with
// some sizes replaced by 1.
func broadcastable(t *rapid.T, label string, out []int64) []int64 {
	drop := rapid.IntRange(0, len(out)).Draw(t, label+"-drop")
	s := slices.Clone(out[drop:])
	for i := range s {
		if rapid.Bool().Draw(t, fmt.Sprintf("%s-one-%d", label, i)) {
			s[i] = 1
		}
	}
	return s
}

// domains gives the argument ranges of the unary ops that need one.
var domains = map[string]func(shape ...int64) arg{
	"log": positive, "sqrt": positive, "rsqrt": positive, "reciprocal": nonzero,
}

// cases draws an instance of each op with a VJP, on random shapes.
var cases = map[string]func(t *rapid.T) instance{}

func init() {
	for _, name := range []string{"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "erf", "sin", "cos", "reciprocal"} {
		cases[name] = func(t *rapid.T) instance {
			s := shapeGen(t, "x", 0, 3)
			a := f64(s...)
			if d, ok := domains[name]; ok {
				a = d(s...)
			}
			return instance{op: name, args: []arg{a}}
		}
	}
	for _, approx := range []string{"none", "tanh"} {
		cases["gelu-"+approx] = func(t *rapid.T) instance {
			return instance{op: "gelu", args: []arg{f64(shapeGen(t, "x", 0, 3)...)}, attrs: []ir.NamedAttr{attr("approximate", ir.Str(approx))}}
		}
	}
	for _, name := range []string{"add", "sub", "mul", "div", "pow", "max", "min"} {
		cases[name] = func(t *rapid.T) instance {
			out := shapeGen(t, "out", 0, 3)
			a, b := f64(broadcastable(t, "a", out)...), f64(broadcastable(t, "b", out)...)
			switch name {
			case "div":
				b = nonzero(b.shape...)
			case "pow":
				a = positive(a.shape...)
			}
			return instance{op: name, args: []arg{a, b}}
		}
	}
	cases["select"] = func(t *rapid.T) instance {
		out := shapeGen(t, "out", 0, 3)
		c := arg{shape: broadcastable(t, "c", out), elem: ir.I1, lo: 0, hi: 1}
		return instance{op: "select", args: []arg{c, f64(broadcastable(t, "a", out)...), f64(broadcastable(t, "b", out)...)}}
	}
	// Rounding to f32 and back is linear up to rounding, which a wider
	// step averages out.
	cases["cast"] = func(t *rapid.T) instance {
		s := shapeGen(t, "x", 0, 3)
		return instance{op: "cast", args: []arg{f64(s...)}, result: ir.TensorOf(s, ir.F32), h: 1e-2, tol: 1e-4}
	}
	for _, name := range []string{"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"} {
		cases[name] = func(t *rapid.T) instance {
			s := shapeGen(t, "x", 1, 3)
			var axes []int64
			for d := range s {
				if rapid.Bool().Draw(t, fmt.Sprintf("axis-%d", d)) {
					axes = append(axes, int64(d-len(s)*rapid.IntRange(0, 1).Draw(t, fmt.Sprintf("neg-%d", d))))
				}
			}
			attrs := []ir.NamedAttr{attr("keepdims", ir.Bool(rapid.Bool().Draw(t, "keepdims")))}
			if len(axes) > 0 || rapid.Bool().Draw(t, "empty-axes") {
				attrs = append(attrs, attr("axes", graph.Ints(axes...)))
			}
			return instance{op: name, args: []arg{f64(s...)}, attrs: attrs}
		}
	}
	cases["reshape"] = func(t *rapid.T) instance {
		s := shapeGen(t, "x", 0, 3)
		to := slices.Clone(s)
		rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "perm"), 0)).Shuffle(len(to), func(i, j int) { to[i], to[j] = to[j], to[i] })
		if rapid.Bool().Draw(t, "flatten") {
			to = []int64{ir.NumElements(s), 1}
		}
		return instance{op: "reshape", args: []arg{f64(s...)}, attrs: []ir.NamedAttr{attr("shape", graph.Ints(to...))}}
	}
	cases["transpose"] = func(t *rapid.T) instance {
		s := shapeGen(t, "x", 0, 4)
		perm := rapid.Permutation(iotaInts(len(s))).Draw(t, "perm")
		return instance{op: "transpose", args: []arg{f64(s...)}, attrs: []ir.NamedAttr{attr("perm", graph.Ints(perm...))}}
	}
	cases["broadcast_to"] = func(t *rapid.T) instance {
		out := shapeGen(t, "out", 0, 3)
		return instance{op: "broadcast_to", args: []arg{f64(broadcastable(t, "x", out)...)}, attrs: []ir.NamedAttr{attr("shape", graph.Ints(out...))}}
	}
	cases["concat"] = func(t *rapid.T) instance {
		s := shapeGen(t, "x", 1, 3)
		axis := rapid.IntRange(0, len(s)-1).Draw(t, "axis")
		n := rapid.IntRange(1, 3).Draw(t, "n")
		args := make([]arg, n)
		for i := range args {
			si := slices.Clone(s)
			si[axis] = int64(rapid.IntRange(1, 3).Draw(t, fmt.Sprintf("size-%d", i)))
			args[i] = f64(si...)
		}
		return instance{op: "concat", args: args, attrs: []ir.NamedAttr{attr("axis", i64(int64(axis)))}}
	}
	cases["slice"] = func(t *rapid.T) instance {
		s := shapeGen(t, "x", 1, 3)
		starts, limits, strides := make([]int64, len(s)), make([]int64, len(s)), make([]int64, len(s))
		for d, n := range s {
			starts[d] = int64(rapid.IntRange(0, int(n)-1).Draw(t, fmt.Sprintf("start-%d", d)))
			limits[d] = int64(rapid.IntRange(int(starts[d])+1, int(n)).Draw(t, fmt.Sprintf("limit-%d", d)))
			strides[d] = int64(rapid.IntRange(1, 3).Draw(t, fmt.Sprintf("stride-%d", d)))
		}
		return instance{op: "slice", args: []arg{f64(s...)}, attrs: []ir.NamedAttr{
			attr("starts", graph.Ints(starts...)), attr("limits", graph.Ints(limits...)), attr("strides", graph.Ints(strides...))}}
	}
	cases["pad"] = func(t *rapid.T) instance {
		s := shapeGen(t, "x", 1, 3)
		low, high := make([]int64, len(s)), make([]int64, len(s))
		for d := range s {
			low[d] = int64(rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("low-%d", d)))
			high[d] = int64(rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("high-%d", d)))
		}
		return instance{op: "pad", args: []arg{f64(s...)}, attrs: []ir.NamedAttr{
			attr("low", graph.Ints(low...)), attr("high", graph.Ints(high...)), attr("value", f64Attr(1.5))}}
	}
	cases["gather"] = func(t *rapid.T) instance {
		s := shapeGen(t, "x", 1, 3)
		axis := rapid.IntRange(0, len(s)-1).Draw(t, "axis")
		idx := arg{shape: shapeGen(t, "idx", 0, 2), elem: rapid.SampledFrom([]ir.Type{ir.I64, ir.I32}).Draw(t, "idx-elem"),
			lo: float64(-s[axis]), hi: float64(s[axis] - 1)}
		return instance{op: "gather", args: []arg{f64(s...), idx}, attrs: []ir.NamedAttr{attr("axis", i64(int64(axis-len(s)*rapid.IntRange(0, 1).Draw(t, "neg"))))}}
	}
	cases["scatter_add"] = func(t *rapid.T) instance {
		outer, inner := shapeGen(t, "outer", 0, 2), shapeGen(t, "inner", 0, 1)
		size := int64(rapid.IntRange(1, 4).Draw(t, "size"))
		is := shapeGen(t, "idx", 0, 2)
		idx := arg{shape: is, elem: rapid.SampledFrom([]ir.Type{ir.I64, ir.I32}).Draw(t, "idx-elem"),
			lo: float64(-size), hi: float64(size - 1)}
		axis := int64(len(outer) - (len(outer)+1+len(inner))*rapid.IntRange(0, 1).Draw(t, "neg"))
		return instance{op: "scatter_add", args: []arg{f64(slices.Concat(outer, is, inner)...), idx},
			attrs: []ir.NamedAttr{attr("axis", i64(axis)), attr("size", i64(size))}}
	}
	cases["matmul"] = func(t *rapid.T) instance {
		m, k, n := int64(rapid.IntRange(1, 4).Draw(t, "m")), int64(rapid.IntRange(1, 4).Draw(t, "k")), int64(rapid.IntRange(1, 4).Draw(t, "n"))
		batch := shapeGen(t, "batch", 0, 2)
		a := append(broadcastable(t, "a-batch", batch), m, k)
		b := append(broadcastable(t, "b-batch", batch), k, n)
		if rapid.Bool().Draw(t, "a-vector") {
			a = []int64{k}
		}
		if rapid.Bool().Draw(t, "b-vector") {
			b = []int64{k}
		}
		args := []arg{f64(a...), f64(b...)}
		if len(b) > 1 && rapid.Bool().Draw(t, "bias") {
			args = append(args, f64(n))
		}
		return instance{op: "matmul", args: args}
	}
	for _, name := range []string{"softmax", "log_softmax"} {
		cases[name] = func(t *rapid.T) instance {
			s := shapeGen(t, "x", 1, 3)
			axis := rapid.IntRange(-len(s), len(s)-1).Draw(t, "axis")
			return instance{op: name, args: []arg{f64(s...)}, attrs: []ir.NamedAttr{attr("axis", i64(int64(axis)))}}
		}
	}
	cases["logsumexp"] = func(t *rapid.T) instance {
		s := shapeGen(t, "x", 1, 3)
		axis := rapid.IntRange(-len(s), len(s)-1).Draw(t, "axis")
		return instance{op: "logsumexp", args: []arg{f64(s...)},
			attrs: []ir.NamedAttr{attr("axis", i64(int64(axis))), attr("keepdims", ir.Bool(rapid.Bool().Draw(t, "keepdims")))}}
	}
	for _, name := range []string{"layer_norm", "rms_norm"} {
		cases[name] = func(t *rapid.T) instance {
			s := shapeGen(t, "x", 1, 3)
			axis := rapid.IntRange(0, len(s)-1).Draw(t, "axis")
			args := []arg{f64(s...), f64(s[axis:]...)}
			if name == "layer_norm" {
				args = append(args, f64(s[axis:]...))
			}
			return instance{op: name, args: args, attrs: []ir.NamedAttr{attr("axis", i64(int64(axis))), attr("epsilon", f64Attr(1e-3))}}
		}
	}
	cases["attention"] = func(t *rapid.T) instance {
		batch := shapeGen(t, "batch", 0, 2)
		lq, lk := int64(rapid.IntRange(1, 4).Draw(t, "lq")), int64(rapid.IntRange(1, 4).Draw(t, "lk"))
		d, dv := int64(rapid.IntRange(1, 4).Draw(t, "d")), int64(rapid.IntRange(1, 4).Draw(t, "dv"))
		args := []arg{
			f64(append(broadcastable(t, "q", batch), lq, d)...),
			f64(append(broadcastable(t, "k", batch), lk, d)...),
			f64(append(broadcastable(t, "v", batch), lk, dv)...),
		}
		var attrs []ir.NamedAttr
		switch rapid.IntRange(0, 2).Draw(t, "mask") {
		case 1:
			args = append(args, f64(broadcastable(t, "mask", []int64{lq, lk})...))
		case 2: // an i1 mask that keeps key 0, so that no row is all masked
			args = append(args, arg{shape: []int64{lq, lk}, elem: ir.I1, lo: 0, hi: 1})
		}
		if rapid.Bool().Draw(t, "causal") {
			attrs = append(attrs, attr("causal", ir.Bool(true)))
		}
		if rapid.Bool().Draw(t, "scale") {
			attrs = append(attrs, attr("scale", f64Attr(0.7)))
		}
		return instance{op: "attention", args: args, attrs: attrs}
	}
}

// fixture is a module holding @f (one op on its arguments) and @f_grad.
type fixture struct {
	module  *ir.Operation
	fn      *ir.Operation
	inputs  []*interp.Tensor
	wrt     []int
	results []ir.Type
}

// build makes a module with @f(args) = op(args), without its gradient.
func build(ctx *ir.Context, in instance) (*fixture, error) {
	m := builtin.NewModule(ir.UnknownLoc{})
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointToEnd(builtin.ModuleBody(m))
	types := make([]ir.Type, len(in.args))
	for i, a := range in.args {
		types[i] = ir.TensorOf(a.shape, cmpElem(a.elem))
	}
	fn, body := funcd.NewFunc(b, "f", ir.FunctionOf(types, nil), ir.UnknownLoc{})
	b.SetInsertionPointToEnd(body)
	var (
		y   *ir.Value
		err error
	)
	if in.result != nil {
		y, err = graph.BuildTyped(b, in.op, ir.UnknownLoc{}, body.Arguments(), ir.Dict(in.attrs...), in.result)
	} else {
		y, err = graph.Build(b, in.op, ir.UnknownLoc{}, body.Arguments(), ir.Dict(in.attrs...))
	}
	if err != nil {
		return nil, err
	}
	funcd.Return(b, ir.UnknownLoc{}, y)
	fn.SetProperty(funcd.FunctionTypeAttr, ir.TypeAttr{Type: ir.FunctionOf(types, []ir.Type{y.Type()})})
	fx := &fixture{module: m, fn: fn, results: []ir.Type{y.Type()}}
	for i, a := range in.args {
		if cmpElem(a.elem) == ir.F64 {
			fx.wrt = append(fx.wrt, i)
		}
	}
	return fx, nil
}

func cmpElem(t ir.Type) ir.Type {
	if t == nil {
		return ir.F64
	}
	return t
}

// draw fills the arguments with values from rng.
func (fx *fixture) draw(in instance, rng *rand.Rand) error {
	fx.inputs = make([]*interp.Tensor, len(in.args))
	for i, a := range in.args {
		n := ir.NumElements(a.shape)
		vs := make([]float64, n)
		for j := range vs {
			vs[j] = a.lo + (a.hi-a.lo)*rng.Float64()
			if a.signed && rng.IntN(2) == 0 {
				vs[j] = -vs[j]
			}
		}
		var (
			t   *interp.Tensor
			err error
		)
		switch elem := cmpElem(a.elem); elem {
		case ir.F64:
			t, err = interp.FromFloat64s(ir.F64, a.shape, vs)
		default:
			ints := make([]int64, n)
			for j, v := range vs {
				ints[j] = int64(math.Round(v))
			}
			if elem == ir.I1 && len(a.shape) == 2 { // attention masks keep key 0
				for r := range a.shape[0] {
					ints[r*a.shape[1]] = 1
				}
			}
			t, err = interp.FromInt64s(elem, a.shape, ints)
		}
		if err != nil {
			return err
		}
		fx.inputs[i] = t
	}
	return nil
}

// cotangents draws one random cotangent per result of @f.
func (fx *fixture) cotangents(rng *rand.Rand) ([]*interp.Tensor, error) {
	var cts []*interp.Tensor
	for _, rt := range fx.results {
		tt := rt.(*ir.TensorType)
		vs := make([]float64, ir.NumElements(tt.Shape()))
		for j := range vs {
			vs[j] = 2*rng.Float64() - 1
		}
		ct, err := interp.FromFloat64s(tt.ElementType(), tt.Shape(), vs)
		if err != nil {
			return nil, err
		}
		cts = append(cts, ct)
	}
	return cts, nil
}

// loss is Σ f(x)·ct, computed in float64.
func loss(in *interp.Interpreter, args, cts []*interp.Tensor) (float64, error) {
	outs, err := in.Call("f", values(args)...)
	if err != nil {
		return 0, err
	}
	l := 0.0
	for i, o := range outs {
		ys, ws := o.(*interp.Tensor).Float64s(), cts[i].Float64s()
		for j := range ys {
			l += ys[j] * ws[j]
		}
	}
	return l, nil
}

func values(ts []*interp.Tensor) []interp.Value {
	vs := make([]interp.Value, len(ts))
	for i, t := range ts {
		vs[i] = t
	}
	return vs
}

// gradients runs @f_grad on the arguments and cotangents.
func gradients(in *interp.Interpreter, args, cts []*interp.Tensor) ([]*interp.Tensor, error) {
	outs, err := in.Call("f"+GradSuffix, values(slices.Concat(args, cts))...)
	if err != nil {
		return nil, err
	}
	gs := make([]*interp.Tensor, len(outs))
	for i, o := range outs {
		gs[i] = o.(*interp.Tensor)
	}
	return gs, nil
}

// checkCentralDifferences compares @f_grad's gradients with
// (L(x + h·eᵢ) - L(x - h·eᵢ)) / 2h at up to 6 coordinates of each wrt
// argument.
func checkCentralDifferences(t *rapid.T, in instance, fx *fixture, rng *rand.Rand) {
	h, tol := in.h, in.tol
	if h == 0 {
		h, tol = 1e-5, 1e-6
	}
	run := interp.New(fx.module)
	cts, err := fx.cotangents(rng)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := gradients(run, fx.inputs, cts)
	if err != nil {
		t.Fatalf("running @f_grad: %v\n%s", err, ir.Sprint(fx.module, ir.PrintOptions{}))
	}
	for gi, a := range fx.wrt {
		g := grads[gi]
		if !slices.Equal(g.Shape(), fx.inputs[a].Shape()) {
			t.Fatalf("gradient %d has shape %v, want %v", gi, g.Shape(), fx.inputs[a].Shape())
		}
		xs, gs := fx.inputs[a].Float64s(), g.Float64s()
		for range min(len(xs), 6) {
			j := rng.IntN(len(xs))
			at := func(delta float64) float64 {
				moved := slices.Clone(fx.inputs)
				ys := slices.Clone(xs)
				ys[j] += delta
				moved[a], err = interp.FromFloat64s(ir.F64, fx.inputs[a].Shape(), ys)
				if err != nil {
					t.Fatal(err)
				}
				l, err := loss(run, moved, cts)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			num := (at(h) - at(-h)) / (2 * h)
			if math.Abs(num-gs[j]) > tol*(1+math.Abs(num)) {
				t.Fatalf("argument %d, element %d: gradient %g, central difference %g\n%s",
					a, j, gs[j], num, ir.Sprint(fx.module, ir.PrintOptions{}))
			}
		}
	}
}

// TestVJPAgainstCentralDifferences checks every rule of the table against
// float64 central differences, on random shapes with broadcasting and
// size-1 dims.
func TestVJPAgainstCentralDifferences(t *testing.T) {
	for name, gen := range cases {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				in := gen(rt)
				ctx := dialects.NewContext()
				fx, err := build(ctx, in)
				if err != nil {
					rt.Skipf("shape rule rejects the draw: %v", err)
				}
				if _, err := Grad(ctx, fx.fn, fx.wrt); err != nil {
					rt.Fatalf("Grad: %v\n%s", err, ir.Sprint(fx.module, ir.PrintOptions{}))
				}
				if err := ir.Verify(fx.module); err != nil {
					rt.Fatalf("the gradient does not verify: %v\n%s", err, ir.Sprint(fx.module, ir.PrintOptions{}))
				}
				rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1))
				if err := fx.draw(in, rng); err != nil {
					rt.Fatal(err)
				}
				checkCentralDifferences(rt, in, fx, rng)
			})
		})
	}
}

// TestEveryRuleIsTested keeps the cases and the rule table in step: every
// rule but noGrad has a case, named after its op (gelu-tanh is a case of
// gelu), or a case over simulated ranks (collectiveCases).
func TestEveryRuleIsTested(t *testing.T) {
	tested := map[string]bool{}
	for name := range cases {
		op, _, _ := strings.Cut(name, "-")
		tested["graph."+op] = true
	}
	for _, c := range collectiveCases {
		tested["graph."+c.op] = true
	}
	none := reflect.ValueOf(noGrad).Pointer()
	for name, rule := range rules {
		if reflect.ValueOf(rule).Pointer() != none && !tested[name] {
			t.Errorf("the VJP of %s has no central-difference case", name)
		}
	}
}

// TestCompositeRulesAgreeWithDecompositions differentiates each composite
// through its own rule and through its graph-decompose expansion, and
// compares the two gradients.
func TestCompositeRulesAgreeWithDecompositions(t *testing.T) {
	for _, name := range decompose.Composites() {
		if _, ok := rules[name]; !ok {
			continue // (attention_grad: not differentiated again)
		}
		op := name[len("graph."):]
		t.Run(op, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				in := cases[op](rt)
				ctx := dialects.NewContext()
				whole, err := build(ctx, in)
				if err != nil {
					rt.Skipf("shape rule rejects the draw: %v", err)
				}
				parts, err := build(ctx, in)
				if err != nil {
					rt.Fatal(err)
				}
				composite := funcd.Body(parts.fn).First()
				vs, err := decompose.Expand(ir.NewBuilder(ctx), composite)
				if err != nil {
					rt.Fatal(err)
				}
				composite.Result(0).ReplaceAllUsesWith(vs[0])
				composite.Erase()
				for _, fx := range []*fixture{whole, parts} {
					if _, err := Grad(ctx, fx.fn, fx.wrt); err != nil {
						rt.Fatalf("Grad: %v", err)
					}
				}
				rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 2))
				if err := whole.draw(in, rng); err != nil {
					rt.Fatal(err)
				}
				cts, err := whole.cotangents(rng)
				if err != nil {
					rt.Fatal(err)
				}
				want, err := gradients(interp.New(parts.module), whole.inputs, cts)
				if err != nil {
					rt.Fatal(err)
				}
				got, err := gradients(interp.New(whole.module), whole.inputs, cts)
				if err != nil {
					rt.Fatal(err)
				}
				for i := range got {
					g, w := got[i].Float64s(), want[i].Float64s()
					for j := range g {
						if math.Abs(g[j]-w[j]) > 1e-9*(1+math.Abs(w[j])) {
							rt.Fatalf("gradient %d, element %d: rule %g, decomposition %g", i, j, g[j], w[j])
						}
					}
				}
			})
		})
	}
}

func init() {
	// conv2d draws valid convolutions: channels divisible by the groups
	// and a dilated kernel that fits the padded input.
	cases["conv2d"] = func(t *rapid.T) instance {
		d := func(label string, lo, hi int) int64 { return int64(rapid.IntRange(lo, hi).Draw(t, label)) }
		groups := d("groups", 1, 2)
		n, cg, og := d("n", 1, 2), d("cg", 1, 2), d("og", 1, 2)
		kh, kw := d("kh", 1, 3), d("kw", 1, 3)
		sh, sw := d("sh", 1, 3), d("sw", 1, 2)
		dh, dw := d("dh", 1, 2), d("dw", 1, 2)
		pad := []int64{d("pt", 0, 2), d("pl", 0, 2)}
		if rapid.Bool().Draw(t, "asymmetric") {
			pad = append(pad, d("pb", 0, 2), d("pr", 0, 2))
		} else {
			pad = append(pad, pad...)
		}
		h := max(dh*(kh-1)+1-pad[0]-pad[2], 1) + d("h-extra", 0, 3)
		w := max(dw*(kw-1)+1-pad[1]-pad[3], 1) + d("w-extra", 0, 3)
		args := []arg{f64(n, groups*cg, h, w), f64(groups*og, cg, kh, kw)}
		nhwc := rapid.Bool().Draw(t, "nhwc")
		if nhwc {
			args = []arg{f64(n, h, w, groups*cg), f64(groups*og, kh, kw, cg)}
		}
		if rapid.Bool().Draw(t, "bias") {
			args = append(args, f64(groups*og))
		}
		attrs := []ir.NamedAttr{
			attr("strides", graph.Ints(sh, sw)), attr("dilations", graph.Ints(dh, dw)),
			attr("padding", graph.Ints(pad...)), attr("groups", i64(groups)),
		}
		if nhwc {
			attrs = append(attrs, attr("layout", ir.StringAttr{Value: graph.LayoutNHWC}))
		}
		return instance{op: "conv2d", args: args, attrs: attrs}
	}
}

// TestConv2DStridedPointwiseGradient: the input gradient of an unpadded
// strided 1×1 channels-last convolution (ResNet's downsampling
// projection) convolves g on its own grid and spreads the result to the
// strided positions, instead of convolving the stride-dilated g: its one
// convolution that yields the input's channels reads [N, OH, OW, O].
// Checked against central differences, for input sizes the strides
// divide and ones they do not.
func TestConv2DStridedPointwiseGradient(t *testing.T) {
	for _, c := range []struct {
		h, w, sh, sw int64
	}{{6, 6, 2, 2}, {7, 5, 2, 3}, {4, 7, 3, 1}} {
		t.Run(fmt.Sprintf("%dx%d_stride_%dx%d", c.h, c.w, c.sh, c.sw), func(t *testing.T) {
			in := instance{op: "conv2d", args: []arg{f64(2, c.h, c.w, 3), f64(4, 1, 1, 3)}, attrs: []ir.NamedAttr{
				attr("strides", graph.Ints(c.sh, c.sw)), attr("dilations", graph.Ints(1, 1)),
				attr("padding", graph.Ints(0, 0, 0, 0)), attr("groups", i64(1)),
				attr("layout", ir.StringAttr{Value: graph.LayoutNHWC}),
			}}
			ctx := dialects.NewContext()
			fx, err := build(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			grad, err := Grad(ctx, fx.fn, fx.wrt)
			if err != nil {
				t.Fatal(err)
			}
			oh, ow := (c.h-1)/c.sh+1, (c.w-1)/c.sw+1
			var convs []string
			grad.Walk(func(op *ir.Operation) bool {
				if op.Name() == graph.OpConv2D {
					if rt, ok := op.Result(0).Type().(*ir.TensorType); ok && rt.Shape()[3] == 3 {
						convs = append(convs, fmt.Sprint(op.Operand(0).Type()))
					}
				}
				return true
			})
			want := fmt.Sprintf("tensor<2x%dx%dx4xf64>", oh, ow)
			if len(convs) != 1 || convs[0] != want {
				t.Errorf("input gradient convolutions read %v, want [%s] (g itself)", convs, want)
			}
			rapid.Check(t, func(rt *rapid.T) {
				rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 2))
				if err := fx.draw(in, rng); err != nil {
					rt.Fatal(err)
				}
				checkCentralDifferences(rt, in, fx, rng)
			})
		})
	}
}

// TestConv2DInputGradientIsExact checks the form of conv2d's input
// gradient: for an unstrided convolution with symmetric padding within the
// kernel's span (ResNet's 3×3, padding 1) a convolution with that padding
// computes exactly the input's shape; otherwise (a stride that dilates
// the gradient, padding past the span, padding that differs between the
// sides) the full convolution (padding the span on every side) is cut to
// the input's window. Each is checked against central differences.
func TestConv2DInputGradientIsExact(t *testing.T) {
	for _, c := range []struct {
		name              string
		k, stride, h      int64
		pad               []int64
		wantPad, wantOutH int64 // of the input gradient's convolution
	}{
		{"3x3 padding 1", 3, 1, 6, []int64{1, 1, 1, 1}, 1, 6},
		{"3x3 padding 0", 3, 1, 6, []int64{0, 0, 0, 0}, 2, 6},
		{"3x3 stride 2", 3, 2, 6, []int64{1, 1, 1, 1}, 2, 7},
		{"1x1 padding 1", 1, 1, 4, []int64{1, 1, 1, 1}, 0, 6},
		{"3x3 asymmetric", 3, 1, 6, []int64{1, 0, 0, 1}, 2, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := instance{op: "conv2d", args: []arg{f64(2, 3, c.h, c.h), f64(4, 3, c.k, c.k)}, attrs: []ir.NamedAttr{
				attr("strides", graph.Ints(c.stride, c.stride)), attr("dilations", graph.Ints(1, 1)),
				attr("padding", graph.Ints(c.pad...)), attr("groups", i64(1)),
			}}
			ctx := dialects.NewContext()
			fx, err := build(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			grad, err := Grad(ctx, fx.fn, fx.wrt)
			if err != nil {
				t.Fatal(err)
			}
			// The input gradient's convolution has the input's batch and
			// channels ([2, 3, …]; the weight gradient's is [3, 4, …]).
			var convs []string
			grad.Walk(func(op *ir.Operation) bool {
				if op.Name() != graph.OpConv2D {
					return true
				}
				if rt, ok := op.Result(0).Type().(*ir.TensorType); ok && rt.Shape()[0] == 2 && rt.Shape()[1] == 3 {
					p, _ := graph.Conv2DParamsOf(op)
					convs = append(convs, fmt.Sprintf("padding %v -> %v", p.Padding, op.Result(0).Type()))
				}
				return true
			})
			want := fmt.Sprintf("padding [%d %d %d %d] -> tensor<2x3x%dx%dxf64>", c.wantPad, c.wantPad, c.wantPad, c.wantPad, c.wantOutH, c.wantOutH)
			if len(convs) != 1 || convs[0] != want {
				t.Errorf("input gradient convolutions %v, want [%s]", convs, want)
			}
			rapid.Check(t, func(rt *rapid.T) {
				rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 2))
				if err := fx.draw(in, rng); err != nil {
					rt.Fatal(err)
				}
				checkCentralDifferences(rt, in, fx, rng)
			})
		})
	}
}

// TestRsqrtGradientForm checks rsqrt's VJP by element type: products of
// the result (-½·y³·g, no per-element division, which compiles to a
// subroutine call on the GPU) in float32 and float64, y/x (one rounding)
// in the 16-bit types, and in each a gradient within a few roundings of
// the type of -½·x^(-3/2)·g.
func TestRsqrtGradientForm(t *testing.T) {
	for _, tc := range []struct {
		elem ir.Type
		divs int
		tol  float64 // relative, of the type's rounding
	}{
		{ir.F64, 0, 1e-14}, {ir.F32, 0, 1e-6}, {ir.BF16, 1, 2e-2}, {ir.F16, 1, 3e-3},
	} {
		ctx := dialects.NewContext()
		fx, err := build(ctx, instance{op: "rsqrt", args: []arg{{shape: []int64{64}, elem: tc.elem}}})
		if err != nil {
			t.Fatal(err)
		}
		fx.wrt = []int{0}
		grad, err := Grad(ctx, fx.fn, fx.wrt)
		if err != nil {
			t.Fatal(err)
		}
		divs := 0
		grad.Walk(func(op *ir.Operation) bool {
			if op.Name() == graph.OpDiv {
				divs++
			}
			return true
		})
		if divs != tc.divs {
			t.Errorf("%s: %d graph.div in the gradient, want %d", tc.elem, divs, tc.divs)
		}
		xs, gs := make([]float64, 64), make([]float64, 64)
		for i := range xs {
			xs[i], gs[i] = 0.25+float64(i)*0.37, 1-float64(i)/32
		}
		x, err := interp.FromFloat64s(tc.elem, []int64{64}, xs)
		if err != nil {
			t.Fatal(err)
		}
		g, err := interp.FromFloat64s(tc.elem, []int64{64}, gs)
		if err != nil {
			t.Fatal(err)
		}
		out, err := gradients(interp.New(fx.module), []*interp.Tensor{x}, []*interp.Tensor{g})
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Float64s() {
			xi, gi := x.Float64s()[i], g.Float64s()[i]
			want := -0.5 * math.Pow(xi, -1.5) * gi
			if math.Abs(got-want) > tc.tol*math.Abs(want)+1e-30 {
				t.Errorf("%s: x = %g, g = %g: gradient %g, want %g", tc.elem, xi, gi, got, want)
				break
			}
		}
	}
}
