package autodiff

import (
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// emitter builds the graph ops of one VJP at one location, with the
// helpers gradient rules share on top of graph.Emitter's.
type emitter struct{ graph.Emitter }

func (e *emitter) add(x, y *ir.Value) *ir.Value { return e.Op(graph.OpAdd, []*ir.Value{x, y}) }
func (e *emitter) sub(x, y *ir.Value) *ir.Value { return e.Op(graph.OpSub, []*ir.Value{x, y}) }
func (e *emitter) mul(x, y *ir.Value) *ir.Value { return e.Op(graph.OpMul, []*ir.Value{x, y}) }
func (e *emitter) div(x, y *ir.Value) *ir.Value { return e.Op(graph.OpDiv, []*ir.Value{x, y}) }
func (e *emitter) neg(x *ir.Value) *ir.Value    { return e.Unary(graph.OpNeg, x) }

// mulc multiplies x by the constant c.
func (e *emitter) mulc(x *ir.Value, c float64) *ir.Value { return e.mul(x, e.scalarLike(x, c)) }

// cmp compares x and y with predicate pred.
func (e *emitter) cmp(pred string, x, y *ir.Value) *ir.Value {
	return e.Op(graph.OpCmp, []*ir.Value{x, y}, ir.NamedAttr{Name: "predicate", Value: ir.Str(pred)})
}

// sel builds select(cond, x, y).
func (e *emitter) sel(cond, x, y *ir.Value) *ir.Value {
	return e.Op(graph.OpSelect, []*ir.Value{cond, x, y})
}

func (e *emitter) reshape(x *ir.Value, shape []int64) *ir.Value {
	if s, _ := e.shape(x); slices.Equal(s, shape) {
		return x
	}
	return e.Op(graph.OpReshape, []*ir.Value{x}, ir.NamedAttr{Name: "shape", Value: graph.Ints(shape...)})
}

func (e *emitter) transpose(x *ir.Value, perm []int64) *ir.Value {
	return e.Op(graph.OpTranspose, []*ir.Value{x}, ir.NamedAttr{Name: "perm", Value: graph.Ints(perm...)})
}

func (e *emitter) broadcast(x *ir.Value, shape []int64) *ir.Value {
	if s, _ := e.shape(x); slices.Equal(s, shape) {
		return x
	}
	return e.Op(graph.OpBroadcastTo, []*ir.Value{x}, ir.NamedAttr{Name: "shape", Value: graph.Ints(shape...)})
}

func (e *emitter) slice(x *ir.Value, starts, limits, strides []int64) *ir.Value {
	return e.Op(graph.OpSlice, []*ir.Value{x},
		ir.NamedAttr{Name: "starts", Value: graph.Ints(starts...)},
		ir.NamedAttr{Name: "limits", Value: graph.Ints(limits...)},
		ir.NamedAttr{Name: "strides", Value: graph.Ints(strides...)})
}

// pad pads x with zeros, low[d] before and high[d] after dim d.
func (e *emitter) pad(x *ir.Value, low, high []int64) *ir.Value {
	return e.Op(graph.OpPad, []*ir.Value{x},
		ir.NamedAttr{Name: "low", Value: graph.Ints(low...)},
		ir.NamedAttr{Name: "high", Value: graph.Ints(high...)})
}

// shape returns v's static shape and element type. Gradients of dynamic
// shapes are not supported: broadcasts and un-broadcasts need sizes.
func (e *emitter) shape(v *ir.Value) ([]int64, ir.Type) {
	if v == nil {
		return nil, nil
	}
	t, ok := v.Type().(*ir.TensorType)
	if !ok || !t.Ranked() || ir.NumElements(t.Shape()) < 0 {
		e.Fail("autodiff needs static tensor shapes, got %s", v.Type())
		return nil, nil
	}
	return t.Shape(), t.ElementType()
}

// scalarLike builds a rank-0 constant of x's element type.
func (e *emitter) scalarLike(x *ir.Value, v float64) *ir.Value {
	_, elem := e.shape(x)
	if e.Err != nil {
		return nil
	}
	return e.Scalar(elem, v)
}

// zeros builds a zero tensor of type t.
func (e *emitter) zeros(t ir.Type) *ir.Value {
	tt, ok := t.(*ir.TensorType)
	if !ok || !tt.Ranked() || ir.NumElements(tt.Shape()) < 0 {
		e.Fail("autodiff needs static tensor shapes, got %s", t)
		return nil
	}
	ft, ok := tt.ElementType().(*ir.FloatType)
	if !ok {
		e.Fail("expected a float element type, got %s", t)
		return nil
	}
	return e.Typed(graph.OpFull, nil, t, ir.NamedAttr{Name: "fill", Value: ir.FloatAttr{Bits: ir.FloatToBits(0, ft), Type: ft}})
}

// castTo converts x to element type elem, when it differs.
func (e *emitter) castTo(x *ir.Value, elem ir.Type) *ir.Value {
	s, xe := e.shape(x)
	if e.Err != nil || xe == elem {
		return x
	}
	return e.Typed(graph.OpCast, []*ir.Value{x}, ir.TensorOf(s, elem))
}

// unbroadcast sums g, a gradient of broadcast shape, back to shape: over
// the leading dims shape lacks and over the dims where shape has size 1
// and g does not; then reshapes to shape.
func (e *emitter) unbroadcast(g *ir.Value, shape []int64) *ir.Value {
	gs, _ := e.shape(g)
	if e.Err != nil {
		return nil
	}
	if slices.Equal(gs, shape) {
		return g
	}
	lead := len(gs) - len(shape)
	if lead < 0 {
		e.Fail("internal error: cannot reduce a gradient of shape %v to %v", gs, shape)
		return nil
	}
	var axes []int64
	for d := range gs {
		if d < lead || (shape[d-lead] == 1 && gs[d] != 1) {
			axes = append(axes, int64(d))
		}
	}
	if len(axes) > 0 {
		g = e.Reduce(graph.OpReduceSum, g, axes, false)
	}
	return e.reshape(g, shape)
}

// mT transposes the last two dims of x, of rank >= 2.
func (e *emitter) mT(x *ir.Value) *ir.Value {
	s, _ := e.shape(x)
	if e.Err != nil {
		return nil
	}
	if len(s) < 2 {
		e.Fail("internal error: transposing a tensor of rank %d", len(s))
		return nil
	}
	perm := iotaInts(len(s))
	perm[len(s)-2], perm[len(s)-1] = perm[len(s)-1], perm[len(s)-2]
	return e.transpose(x, perm)
}

// iotaInts returns 0, 1, …, n-1.
func iotaInts(n int) []int64 {
	p := make([]int64, n)
	for i := range p {
		p[i] = int64(i)
	}
	return p
}

// normAxis resolves a possibly negative axis of a rank-r tensor.
func (e *emitter) normAxis(axis int64, rank int) int64 {
	if axis < 0 {
		axis += int64(rank)
	}
	if axis < 0 || axis >= int64(rank) {
		e.Fail("axis %d is out of range for rank %d", axis, rank)
	}
	return axis
}

// keptShape is shape with the dims in axes set to 1 (keepdims form).
func keptShape(shape []int64, axes []int64) []int64 {
	out := slices.Clone(shape)
	for _, a := range axes {
		out[a] = 1
	}
	return out
}

// intsAttr reads an integer-list attribute ([0, 1] or array<i64: 0, 1>).
func intsAttr(op *ir.Operation, name string) ([]int64, bool) { return graph.IntList(op.Attr(name)) }

// reduceAxes returns op's reduction axes, resolved and sorted (all dims
// when the attribute is absent).
func (e *emitter) reduceAxes(op *ir.Operation, rank int) []int64 {
	axes, ok := intsAttr(op, "axes")
	if !ok {
		return iotaInts(rank)
	}
	out := make([]int64, len(axes))
	for i, a := range axes {
		out[i] = e.normAxis(a, rank)
	}
	slices.Sort(out)
	return out
}
