package lower

import (
	"strings"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// lowerCollective lowers a graph collective, which graph-fuse leaves
// outside every fusion, to a loop.collective from its operand's buffer into
// a new buffer: a host step of the launch plan, between kernels. A
// discardable attribute of the graph op (graph-data-parallel's
// strata.bucket) is kept on the step.
func (c *converter) lowerCollective(op *ir.Operation) error {
	src := c.bufs[op.Operand(0)]
	if src == nil {
		var err error
		if src, err = c.materialize(op.Operand(0), op.Loc()); err != nil {
			return err
		}
	}
	rt, ok := op.Result(0).Type().(*ir.TensorType)
	if !ok || !rt.Ranked() {
		return errorf(op.Loc(), "'%s' of an unranked tensor", op.Name())
	}
	kind := strings.TrimPrefix(op.Name(), graph.Name+".")
	axis := graph.Axis(op)
	if axis < 0 {
		axis += int64(len(rt.Shape()))
	}
	var dyn []*ir.Value
	for d, n := range rt.Shape() {
		if n != ir.Dynamic {
			continue
		}
		if int64(d) == axis && (kind == "all_gather" || kind == "reduce_scatter") {
			return errorf(op.Loc(), "'%s' with a dynamic size along its axis is not lowered (the result's size depends on the group's)", op.Name())
		}
		dyn = append(dyn, loop.Dim(c.at, op.Loc(), src, d))
	}
	reduce := graph.ReduceKind(op)
	if reduce == "" {
		reduce = "sum" // broadcast and reduce_to have none; reduce_to sums
	}
	dst := loopAlloc(c.at, op.Loc(), bufferType(rt).(*ir.MemRefType), dyn)
	step := loop.BuildCollective(c.at, op.Loc(), src, dst, loop.Collective{
		Kind: kind, Reduce: reduce, Group: graph.Group(op), Axis: max(axis, 0), Root: graph.Root(op),
	})
	for _, na := range op.Attributes() {
		if strings.Contains(na.Name, ".") {
			step.SetAttr(na.Name, na.Value)
		}
	}
	c.bufs[op.Result(0)] = dst
	return nil
}
