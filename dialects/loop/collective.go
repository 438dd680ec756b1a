package loop

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/ir"
)

// CollectiveOp is a graph collective (graph.all_reduce…) lowered to
// buffers: one host step of the launch plan, run by a communication
// library (NCCL) between kernel launches, never a kernel itself.
const CollectiveOp = OpCollective

// The properties of loop.collective; every one is always present.
const (
	// CollectiveKindAttr names the graph collective: all_reduce,
	// all_gather, reduce_scatter, broadcast or reduce_to.
	CollectiveKindAttr = "kind"
	// CollectiveReduceAttr is sum, max or avg (all_reduce, reduce_scatter).
	CollectiveReduceAttr = "reduce"
	// CollectiveAxisAttr is the axis of all_gather and reduce_scatter.
	CollectiveAxisAttr = "axis"
	// CollectiveRootAttr is the root rank of broadcast and reduce_to.
	CollectiveRootAttr = "root"
	// CollectiveGroupAttr is the process group.
	CollectiveGroupAttr = "group"
)

// CollectiveKinds are the values of loop.collective's kind.
var CollectiveKinds = []string{"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce_to"}

var collectiveDef = &ir.OpDef{
	Name:    CollectiveOp,
	Summary: "A collective among ranks, a host step of the launch plan",
	Description: "Reads `source` on every rank of `group` and writes this rank's result into `dest`, " +
		"with the semantics of the graph op named by `kind` (graph.all_reduce, all_gather, " +
		"reduce_scatter, broadcast, reduce_to) and its `reduce`, `axis` and `root`. It stays on the " +
		"host through convert-loop-to-gpu: the nvptx executor calls the runtime's communicator " +
		"(NCCL) on the plan's stream, the interpreter exchanges with its simulated ranks. " +
		"A discardable `strata.bucket` (i64) names the gradient bucket graph-data-parallel made it for.",
	Inherent: []string{CollectiveKindAttr, CollectiveReduceAttr, CollectiveAxisAttr, CollectiveRootAttr, CollectiveGroupAttr},
	Operands: []ir.ArgDoc{
		{Name: "source", Doc: "this rank's operand, a ranked memref"},
		{Name: "dest", Doc: "the result, a ranked memref of source's element type, written"},
	},
	Attrs: []ir.ArgDoc{
		{Name: CollectiveKindAttr, Doc: "the collective (string)"},
		{Name: CollectiveReduceAttr, Doc: `"sum", "max" or "avg" (string)`},
		{Name: CollectiveAxisAttr, Doc: "axis of all_gather and reduce_scatter (i64)"},
		{Name: CollectiveRootAttr, Doc: "root rank of broadcast and reduce_to (i64)"},
		{Name: CollectiveGroupAttr, Doc: "the process group (string)"},
	},
	Example: `"loop.collective"(%g, %r) <{axis = 0 : i64, group = "world", kind = "all_reduce", reduce = "avg", root = 0 : i64}> : (memref<64xf32>, memref<64xf32>) -> ()`,
	Verify:  verifyCollective,
}

// Collective describes a loop.collective's properties.
type Collective struct {
	Kind, Reduce, Group string
	Axis, Root          int64
}

// CollectiveOf reads op's properties.
func CollectiveOf(op *ir.Operation) Collective {
	str := func(n string) string { s, _ := op.Attr(n).(ir.StringAttr); return s.Value }
	num := func(n string) int64 { v, _ := op.Attr(n).(ir.IntegerAttr); return v.Value }
	return Collective{Kind: str(CollectiveKindAttr), Reduce: str(CollectiveReduceAttr), Group: str(CollectiveGroupAttr),
		Axis: num(CollectiveAxisAttr), Root: num(CollectiveRootAttr)}
}

// BuildCollective inserts loop.collective from source into dest.
func BuildCollective(b *ir.Builder, loc ir.Location, source, dest *ir.Value, c Collective) *ir.Operation {
	return b.Op(CollectiveOp, loc, []*ir.Value{source, dest}, nil,
		ir.NamedAttr{Name: CollectiveKindAttr, Value: ir.Str(c.Kind)},
		ir.NamedAttr{Name: CollectiveReduceAttr, Value: ir.Str(c.Reduce)},
		ir.NamedAttr{Name: CollectiveAxisAttr, Value: ir.IntegerAttr{Value: c.Axis, Type: ir.I64}},
		ir.NamedAttr{Name: CollectiveRootAttr, Value: ir.IntegerAttr{Value: c.Root, Type: ir.I64}},
		ir.NamedAttr{Name: CollectiveGroupAttr, Value: ir.Str(c.Group)})
}

func verifyCollective(op *ir.Operation) error {
	if op.NumOperands() != 2 || op.NumResults() != 0 {
		return fmt.Errorf("requires two operands and no results, but found %d operands and %d results", op.NumOperands(), op.NumResults())
	}
	src, err := rankedMemRef(op.Operand(0).Type(), "operand #0")
	if err != nil {
		return err
	}
	dst, err := rankedMemRef(op.Operand(1).Type(), "operand #1")
	if err != nil {
		return err
	}
	if src.ElementType() != dst.ElementType() || len(src.Shape()) != len(dst.Shape()) {
		return fmt.Errorf("source '%s' and dest '%s' must have one element type and rank", src, dst)
	}
	for _, n := range []string{CollectiveKindAttr, CollectiveReduceAttr, CollectiveGroupAttr} {
		if _, ok := op.Attr(n).(ir.StringAttr); !ok {
			return fmt.Errorf("requires string property '%s'", n)
		}
	}
	for _, n := range []string{CollectiveAxisAttr, CollectiveRootAttr} {
		if _, ok := op.Attr(n).(ir.IntegerAttr); !ok {
			return fmt.Errorf("requires integer property '%s'", n)
		}
	}
	c := CollectiveOf(op)
	if !slices.Contains(CollectiveKinds, c.Kind) {
		return fmt.Errorf("kind must be one of %q, got %q", CollectiveKinds, c.Kind)
	}
	if !slices.Contains([]string{"sum", "max", "avg"}, c.Reduce) {
		return fmt.Errorf(`reduce must be "sum", "max" or "avg", got %q`, c.Reduce)
	}
	if c.Axis < 0 || c.Axis >= int64(max(len(src.Shape()), 1)) || c.Root < 0 {
		return fmt.Errorf("axis %d must be a dim of the source and root %d a rank ≥ 0", c.Axis, c.Root)
	}
	return nil
}
