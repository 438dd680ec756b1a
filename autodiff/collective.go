package autodiff

import (
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// The VJPs of the collectives. A program of collectives runs on every rank
// of a group (SPMD); its loss is the sum over ranks of each rank's loss,
// L = Σᵣ Lᵣ, so the gradient of a rank's operand gathers what every rank's
// loss owes it (docs/distributed.md):
//
//	all_reduce sum    y = Σᵢ xᵢ          x̄ᵣ = Σⱼ ȳⱼ             all_reduce sum of the cotangents
//	all_reduce avg    y = (1/N)Σᵢ xᵢ     x̄ᵣ = (1/N)Σⱼ ȳⱼ        all_reduce avg
//	all_reduce max    y = maxᵢ xᵢ        x̄ᵣ = Σⱼȳⱼ·[xᵣ = y] / #ties
//	all_gather        y = concat xᵢ      x̄ᵣ = Σⱼ sliceᵣ(ȳⱼ)     reduce_scatter sum
//	reduce_scatter    yᵣ = sliceᵣ(Σ xᵢ)  x̄ᵣ = concat ȳⱼ         all_gather (÷N for avg)
//	broadcast root    y = x_root         x̄_root = Σⱼ ȳⱼ, else 0 reduce_to root
//	reduce_to root    y_root = Σᵢ xᵢ     x̄ᵣ = ȳ_root            broadcast root
func init() {
	rules[graph.OpAllReduce] = allReduceGrad
	rules[graph.OpAllGather] = func(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
		return []*ir.Value{e.Typed(graph.OpReduceScatter, []*ir.Value{g}, op.Operand(0).Type(),
			axisOf(op), reduceOf("sum"), groupOf(op))}
	}
	rules[graph.OpReduceScatter] = reduceScatterGrad
	rules[graph.OpBroadcast] = func(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
		return []*ir.Value{e.Op(graph.OpReduceTo, []*ir.Value{g}, rootOf(op), groupOf(op))}
	}
	rules[graph.OpReduceTo] = func(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
		return []*ir.Value{e.Op(graph.OpBroadcast, []*ir.Value{g}, rootOf(op), groupOf(op))}
	}
}

func groupOf(op *ir.Operation) ir.NamedAttr {
	return ir.NamedAttr{Name: "group", Value: ir.Str(graph.Group(op))}
}

func rootOf(op *ir.Operation) ir.NamedAttr {
	return ir.NamedAttr{Name: "root", Value: ir.IntegerAttr{Value: graph.Root(op), Type: ir.I64}}
}

func axisOf(op *ir.Operation) ir.NamedAttr {
	return ir.NamedAttr{Name: "axis", Value: ir.IntegerAttr{Value: graph.Axis(op), Type: ir.I64}}
}

func reduceOf(kind string) ir.NamedAttr { return ir.NamedAttr{Name: "reduce", Value: ir.Str(kind)} }

func allReduceGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	switch kind := graph.ReduceKind(op); kind {
	case "sum", "avg":
		return []*ir.Value{e.Op(graph.OpAllReduce, []*ir.Value{g}, reduceOf(kind), groupOf(op))}
	default: // max: the summed cotangent, shared among the ranks that hold the maximum
		x, y := op.Operand(0), op.Result(0)
		_, elem := e.shape(x)
		if e.Err != nil {
			return nil
		}
		hit := e.castTo(e.cmp("eq", x, y), elem)
		ties := e.Op(graph.OpAllReduce, []*ir.Value{hit}, reduceOf("sum"), groupOf(op))
		total := e.Op(graph.OpAllReduce, []*ir.Value{g}, reduceOf("sum"), groupOf(op))
		return []*ir.Value{e.sel(e.cmp("eq", hit, e.scalarLike(hit, 0)), e.scalarLike(g, 0), e.div(e.mul(total, hit), ties))}
	}
}

func reduceScatterGrad(e *emitter, op *ir.Operation, g *ir.Value) []*ir.Value {
	x := op.Operand(0)
	xs, elem := e.shape(x)
	gs, _ := e.shape(g)
	if e.Err != nil {
		return nil
	}
	ax := e.normAxis(graph.Axis(op), len(xs))
	if e.Err != nil {
		return nil
	}
	full := e.Typed(graph.OpAllGather, []*ir.Value{g}, x.Type(), axisOf(op), groupOf(op))
	switch graph.ReduceKind(op) {
	case "avg":
		if gs[ax] == 0 {
			return []*ir.Value{full}
		}
		return []*ir.Value{e.mulc(full, float64(gs[ax])/float64(xs[ax]))}
	case "max":
		// The whole maximum, gathered, marks the elements this rank held.
		ymax := e.Typed(graph.OpAllGather, []*ir.Value{op.Result(0)}, x.Type(), axisOf(op), groupOf(op))
		hit := e.castTo(e.cmp("eq", x, ymax), elem)
		ties := e.Op(graph.OpAllReduce, []*ir.Value{hit}, reduceOf("sum"), groupOf(op))
		return []*ir.Value{e.sel(e.cmp("eq", hit, e.scalarLike(hit, 0)), e.scalarLike(g, 0), e.div(e.mul(full, hit), ties))}
	}
	return []*ir.Value{full}
}
