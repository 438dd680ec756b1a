package frontend

import (
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// This file computes tensors that escaped a compiled call without being
// returned. Go code often keeps an intermediate in Go state: a closure's
// KV cache rebound inside the function (cache = Concat(0, cache, k)), the
// last activation stored for the next call, a memoized value. Eagerly
// such a tensor is simply a value; in a compiled call it is a value of
// the graph that is not an output, so the executable never gives it
// back. Making every intermediate an output would cost every graph its
// fusion, so instead an escaped tensor keeps the recipe of its value: the
// steps of the graph that computed it and the graph's inputs as they
// were at that call (values are immutable). The first read or use of the
// tensor builds the ops it needs into a lazy eager graph, which runs as
// any eager computation does. A tensor that is never used again costs
// two field stores.

// rematSrc is what a finished compiled graph leaves to the tensors that
// escaped it: its steps and its inputs, in lift order.
type rematSrc struct {
	steps  []step
	inputs []tensorData
}

// escape gives t, pending in a graph that finished without t among its
// outputs, the recipe of its value, id in src's steps.
func (t *Tensor) escape(src *rematSrc, id int32) {
	t.g, t.node, t.rid = nil, nil, 0
	if src == nil {
		t.err = errEscaped
		return
	}
	t.remat, t.rematID = src, id
}

// rematerialize makes t, an escaped tensor, pending in a new lazy eager
// graph that computes it from the inputs its compiled call had.
func (t *Tensor) rematerialize() error {
	src, id := t.remat, t.rematID
	t.remat = nil
	// The value id of each step (-1 for an in-place update).
	ids := make([]int32, len(src.steps))
	n := int32(0)
	for i := range src.steps {
		ids[i] = -1
		if src.steps[i].kind != stepAssign {
			ids[i] = n
			n++
		}
	}
	need := make([]bool, n)
	need[id] = true
	for i := len(src.steps) - 1; i >= 0; i-- {
		st := &src.steps[i]
		if st.kind == stepOp && ids[i] >= 0 && need[ids[i]] {
			for _, o := range st.operands {
				need[o] = true
			}
		}
	}
	s := newSession(nil, mustBackend(EagerBackend), false)
	g := s.graph()
	vals := make([]*ir.Value, n)
	lifts := 0
	for i := range src.steps {
		st := &src.steps[i]
		switch st.kind {
		case stepLift:
			d := src.inputs[lifts]
			lifts++
			if need[ids[i]] {
				vals[ids[i]] = g.addInput(d, ir.TensorOf(d.Shape(), d.ElemType()))
			}
		case stepOp:
			if !need[ids[i]] {
				continue
			}
			operands := make([]*ir.Value, len(st.operands))
			for j, o := range st.operands {
				operands[j] = vals[o]
			}
			loc := st.loc
			if loc == nil {
				loc = ir.UnknownLoc{}
			}
			var v *ir.Value
			var err error
			if st.cast != nil {
				v, err = graph.BuildTyped(g.b, st.name, loc, operands, st.props, ir.TensorOf(shapeOf(operands[0]), st.cast))
			} else {
				v, err = graph.Build(g.b, st.name, loc, operands, st.props)
			}
			if err != nil {
				t.err = err
				return err
			}
			g.record(v.DefiningOp(), operands)
			vals[ids[i]] = v
		}
		if ids[i] == id {
			break
		}
	}
	t.g, t.node, t.sess = g, vals[id], s
	g.pending = append(g.pending, t)
	return nil
}
