package graph

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// Build creates the graph op name ("add" or "graph.add") with the given
// operands and inherent attributes at b's insertion point, its result type
// computed by the op's shape rule. It returns the op's first result, or a
// located diagnostic when the operands or attributes do not fit.
func Build(b *ir.Builder, name string, loc ir.Location, operands []*ir.Value, props ir.DictAttr) (*ir.Value, error) {
	s, err := lookup(name)
	if err != nil {
		return nil, err
	}
	ts, err := s.inferTypes(valueTypes(operands), props, loc)
	if err != nil {
		return nil, err
	}
	return create(b, s, loc, operands, props, ts), nil
}

// BuildTyped is Build for ops whose result type is given rather than
// inferred (cast, iota, full, reshape without 'shape'): it checks result
// against the op's rules.
func BuildTyped(b *ir.Builder, name string, loc ir.Location, operands []*ir.Value, props ir.DictAttr, result ir.Type) (*ir.Value, error) {
	s, err := lookup(name)
	if err != nil {
		return nil, err
	}
	want, err := s.infer(valueTypes(operands), props, nil, []ir.Type{result}, nil)
	if err == nil && (len(want) != 1 || !sameShapeAndElem(want[0], result)) {
		err = fmt.Errorf("result type %s does not match the operands and attributes (%v)", result, want)
	}
	if err != nil {
		return nil, ir.Errorf(loc, "'%s' op %s", s.fullName(), err)
	}
	return create(b, s, loc, operands, props, []ir.Type{result}), nil
}

func lookup(name string) (*opSpec, error) {
	if s, ok := specs[name]; ok {
		return s, nil
	}
	if s, ok := specs[Name+"."+name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("graph: no op named %q", name)
}

func create(b *ir.Builder, s *opSpec, loc ir.Location, operands []*ir.Value, props ir.DictAttr, results []ir.Type) *ir.Value {
	op := b.Create(ir.OperationState{Name: s.fullName(), Loc: loc, Operands: operands, ResultTypes: results, Properties: props})
	if op.NumResults() == 0 {
		return nil
	}
	return op.Result(0)
}

func valueTypes(vs []*ir.Value) []ir.Type {
	ts := make([]ir.Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type()
	}
	return ts
}

// mustBuild backs the typed builders. Like MLIR's builders they do not
// fail: when the shape rule rejects the operands, the op is still created,
// with result type none, and ir.Verify reports why at loc.
func mustBuild(b *ir.Builder, name string, loc ir.Location, operands []*ir.Value, attrs ...ir.NamedAttr) *ir.Value {
	props := ir.Dict(attrs...)
	v, err := Build(b, name, loc, operands, props)
	if err != nil {
		return create(b, specs[Name+"."+name], loc, operands, props, []ir.Type{ir.None})
	}
	return v
}

// Unary builds the elementwise unary op name (neg, exp, …) on x.
func Unary(b *ir.Builder, name string, loc ir.Location, x *ir.Value) *ir.Value {
	return mustBuild(b, name, loc, []*ir.Value{x})
}

// Binary builds the elementwise binary op name (add, sub, …) on x and y.
func Binary(b *ir.Builder, name string, loc ir.Location, x, y *ir.Value) *ir.Value {
	return mustBuild(b, name, loc, []*ir.Value{x, y})
}

// Add builds graph.add.
func Add(b *ir.Builder, loc ir.Location, x, y *ir.Value) *ir.Value {
	return Binary(b, "add", loc, x, y)
}

// Sub builds graph.sub.
func Sub(b *ir.Builder, loc ir.Location, x, y *ir.Value) *ir.Value {
	return Binary(b, "sub", loc, x, y)
}

// Mul builds graph.mul.
func Mul(b *ir.Builder, loc ir.Location, x, y *ir.Value) *ir.Value {
	return Binary(b, "mul", loc, x, y)
}

// Div builds graph.div.
func Div(b *ir.Builder, loc ir.Location, x, y *ir.Value) *ir.Value {
	return Binary(b, "div", loc, x, y)
}

// Max builds graph.max.
func Max(b *ir.Builder, loc ir.Location, x, y *ir.Value) *ir.Value {
	return Binary(b, "max", loc, x, y)
}

// Min builds graph.min.
func Min(b *ir.Builder, loc ir.Location, x, y *ir.Value) *ir.Value {
	return Binary(b, "min", loc, x, y)
}

// Pow builds graph.pow.
func Pow(b *ir.Builder, loc ir.Location, x, y *ir.Value) *ir.Value {
	return Binary(b, "pow", loc, x, y)
}

// Neg builds graph.neg.
func Neg(b *ir.Builder, loc ir.Location, x *ir.Value) *ir.Value { return Unary(b, "neg", loc, x) }

// Exp builds graph.exp.
func Exp(b *ir.Builder, loc ir.Location, x *ir.Value) *ir.Value { return Unary(b, "exp", loc, x) }

// Log builds graph.log.
func Log(b *ir.Builder, loc ir.Location, x *ir.Value) *ir.Value { return Unary(b, "log", loc, x) }

// Sqrt builds graph.sqrt.
func Sqrt(b *ir.Builder, loc ir.Location, x *ir.Value) *ir.Value { return Unary(b, "sqrt", loc, x) }

// Rsqrt builds graph.rsqrt.
func Rsqrt(b *ir.Builder, loc ir.Location, x *ir.Value) *ir.Value { return Unary(b, "rsqrt", loc, x) }

// Tanh builds graph.tanh.
func Tanh(b *ir.Builder, loc ir.Location, x *ir.Value) *ir.Value { return Unary(b, "tanh", loc, x) }

// Relu builds graph.relu.
func Relu(b *ir.Builder, loc ir.Location, x *ir.Value) *ir.Value { return Unary(b, "relu", loc, x) }

// Cmp builds graph.cmp with predicate pred (eq, ne, lt, le, gt, ge).
func Cmp(b *ir.Builder, loc ir.Location, pred string, x, y *ir.Value) *ir.Value {
	return mustBuild(b, "cmp", loc, []*ir.Value{x, y}, ir.NamedAttr{Name: "predicate", Value: ir.Str(pred)})
}

// Select builds graph.select.
func Select(b *ir.Builder, loc ir.Location, cond, x, y *ir.Value) *ir.Value {
	return mustBuild(b, "select", loc, []*ir.Value{cond, x, y})
}

// Reduce builds reduce_sum, reduce_max, reduce_min or reduce_mean (name)
// over axes.
func Reduce(b *ir.Builder, name string, loc ir.Location, x *ir.Value, axes []int64, keepdims bool) *ir.Value {
	return mustBuild(b, name, loc, []*ir.Value{x},
		ir.NamedAttr{Name: "axes", Value: Ints(axes...)}, ir.NamedAttr{Name: "keepdims", Value: ir.Bool(keepdims)})
}

// Reshape builds graph.reshape to shape.
func Reshape(b *ir.Builder, loc ir.Location, x *ir.Value, shape []int64) *ir.Value {
	return mustBuild(b, "reshape", loc, []*ir.Value{x}, ir.NamedAttr{Name: "shape", Value: Ints(shape...)})
}

// Transpose builds graph.transpose with perm.
func Transpose(b *ir.Builder, loc ir.Location, x *ir.Value, perm []int64) *ir.Value {
	return mustBuild(b, "transpose", loc, []*ir.Value{x}, ir.NamedAttr{Name: "perm", Value: Ints(perm...)})
}

// BroadcastTo builds graph.broadcast_to shape.
func BroadcastTo(b *ir.Builder, loc ir.Location, x *ir.Value, shape []int64) *ir.Value {
	return mustBuild(b, "broadcast_to", loc, []*ir.Value{x}, ir.NamedAttr{Name: "shape", Value: Ints(shape...)})
}

// Matmul builds graph.matmul.
func Matmul(b *ir.Builder, loc ir.Location, x, y *ir.Value) *ir.Value {
	return mustBuild(b, "matmul", loc, []*ir.Value{x, y})
}

// Constant builds graph.constant holding value.
func Constant(b *ir.Builder, loc ir.Location, value ir.DenseAttr) *ir.Value {
	return mustBuild(b, "constant", loc, nil, ir.NamedAttr{Name: "value", Value: value})
}

// Cast builds graph.cast of x to element type elem.
func Cast(b *ir.Builder, loc ir.Location, x *ir.Value, elem ir.Type) *ir.Value {
	t := ir.Type(ir.None)
	if xt, ok := x.Type().(*ir.TensorType); ok && xt.Ranked() {
		t = TensorWithDims(DimsOf(xt), elem)
	}
	return create(b, specs[Name+".cast"], loc, []*ir.Value{x}, nil, []ir.Type{t})
}
