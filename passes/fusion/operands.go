package fusion

import (
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// A bf16 or f16 matmul runs on tensor cores (or a library) only when it
// reads each operand as a buffer: directly, through reshapes (a view of
// the buffer, convert-graph-to-loop), or as the transpose of its last two
// dims. Any other view chain between a buffer and the matmul (a slice of
// a transpose of the q/k/v projection, the [B, H, T, dh] → [B, T, H, dh]
// transpose of an attention output before its projection) would be index
// arithmetic in the product's inner loop, which no tensor-core plan
// reads: such a chain's topmost non-reshape view becomes a copy group of
// its own, one pass over the operand's elements to save the product from
// the scalar path. Groups made before it (which may hold the view's
// producer) keep reading the view as index arithmetic; groups made after
// read the copy. A chain with a broadcast_to is left alone (its copy
// could be larger than its source).

// halfMatmul reports whether op is a graph.matmul of bf16 or f16 operands.
func halfMatmul(op *ir.Operation) bool {
	if op.Name() != graph.OpMatmul || op.NumOperands() < 2 {
		return false
	}
	e := ir.ElementTypeOf(op.Operand(0).Type())
	return (e == ir.BF16 || e == ir.F16) && ir.ElementTypeOf(op.Operand(1).Type()) == e
}

// stageOperands gives a copy group to the view each operand of the half
// matmul op must be read from a buffer through, where it has one.
func (p *planner) stageOperands(op *ir.Operation) {
	if !halfMatmul(op) {
		return
	}
	for _, v := range op.Operands()[:2] { // a bias [N] is read as it is
		x := p.stagedView(v)
		if x == nil || p.groupOf[x] != nil {
			continue
		}
		g := p.newGroup(x)
		p.staged[x] = g.id
		p.logf("group %d = %s: copy (a view the tensor-core matmul %s cannot read in place)", g.id, described{x}, described{op})
		p.stats.Copies++
	}
}

// stagedView returns the view of v's chain to materialize, or nil when
// the matmul reads v as it is.
func (p *planner) stagedView(v *ir.Value) *ir.Operation {
	viewOf := func(v *ir.Value) *ir.Operation {
		d := p.top(v.DefiningOp())
		if d == nil || d != v.DefiningOp() || classify(d) != view || p.groupOf[d] != nil {
			return nil
		}
		return d
	}
	d := viewOf(v)
	if graph.SwapsLastTwo(d) {
		d = viewOf(d.Operand(0))
	}
	for d != nil && d.Name() == graph.OpReshape {
		d = viewOf(d.Operand(0))
	}
	if d == nil {
		return nil // a buffer: an argument, a computing op's result or a grouped view
	}
	for w := d; w != nil; w = viewOf(w.Operand(0)) {
		if w.Name() == graph.OpBroadcastTo {
			return nil
		}
	}
	return d
}
