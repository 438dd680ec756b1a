package frontend

import (
	"slices"

	"github.com/strata-ir/strata/ir"
)

// This file is in-place mutation of tensors. Tensors are values in the
// graphs, so an update in place is recorded functionally (AOTAutograd's
// functionalization): t.Assign(v) makes t stand for v's value in the
// graph being recorded (later ops that read t read v), and t's new value
// is an output of the graph, which the frontend gives back to t when the
// graph has run. Outside a compiled function the update happens at once.

// mutation is a tensor Assign changed during a session, and its value
// before.
type mutation struct {
	t   *Tensor
	old tensorData
}

// Assign replaces t's contents with v's, in place: every holder of t
// (a struct field, a closure, a slice) sees the new value, as an
// optimizer step, batch-norm running statistics or a KV cache need. v
// must have t's shape and dtype; otherwise t keeps its value and Assign
// returns an error located at the call (t itself stays usable). Inside a
// compiled function the update is recorded in the graph and written back
// to t when the graph has run; ops after it that read t see v.
func (t *Tensor) Assign(v *Tensor) error {
	return t.assign(nil, v, "Assign")
}

// AddInPlace adds v to t in place (t.Assign(t.Add(v))); v broadcasts to
// t's shape.
func (t *Tensor) AddInPlace(v *Tensor) error {
	return t.assignOp(nil, "add", v, "AddInPlace")
}

// SubInPlace subtracts v from t in place (t.Assign(t.Sub(v))).
func (t *Tensor) SubInPlace(v *Tensor) error {
	return t.assignOp(nil, "sub", v, "SubInPlace")
}

// MulInPlace multiplies t by v in place (t.Assign(t.Mul(v))).
func (t *Tensor) MulInPlace(v *Tensor) error {
	return t.assignOp(nil, "mul", v, "MulInPlace")
}

func (t *Tensor) assignOp(loc ir.Location, name string, v *Tensor, what string) error {
	if t == nil || v == nil {
		loc = callerLoc()
		return located(loc, "%s: nil tensor", what)
	}
	return t.assign(loc, apply(loc, op(name), t, v), what)
}

// A nil loc is the caller's location, found where needed.
func (t *Tensor) assign(loc ir.Location, v *Tensor, what string) error {
	if loc == nil && (t == nil || v == nil || t.err == nil && v.err == nil && (t.dtype != v.dtype || !slices.Equal(t.shape, v.shape))) {
		loc = callerLoc()
	}
	switch {
	case t == nil || v == nil:
		return located(loc, "%s: nil tensor", what)
	case t.err != nil:
		return t.err
	case v.err != nil:
		return v.err
	case t.dtype != v.dtype || !slices.Equal(t.shape, v.shape):
		return located(loc, "%s: cannot assign a %s%v tensor to a %s%v one (same shape and dtype needed)", what, v.dtype, v.shape, t.dtype, t.shape)
	case t == v:
		return nil
	}
	if s := mutationSession(t, v); s != nil {
		return s.assign(loc, t, v)
	}
	// Eager: v's value becomes t's (values are immutable: no copy).
	d, err := v.data("value assigned in place")
	if err != nil {
		return err
	}
	if g := t.g; g != nil {
		g.pending = slices.DeleteFunc(g.pending, func(p *Tensor) bool { return p == t })
	}
	t.setData(d)
	t.ver++
	return nil
}

// mutationSession returns the compiled call in flight that t or v belongs
// to, if any.
func mutationSession(t, v *Tensor) *session {
	for _, x := range []*Tensor{t, v} {
		if s := x.sess; s != nil && s.active && s.c != nil {
			return s
		}
		if s := x.in.Load(); s != nil && s.active && s.c != nil {
			return s
		}
	}
	return nil
}

// assign records t.Assign(v) in s's current graph: t becomes a pending
// tensor of the graph with v's value, an output of the graph.
func (s *session) assign(loc ir.Location, t, v *Tensor) error {
	if s.err != nil {
		return s.err
	}
	if s.rp != nil {
		return s.replayAssign(loc, t, v)
	}
	g := s.graph()
	node, err := g.use(v)
	if err != nil {
		return err
	}
	if g != s.cur { // using v ran the graph (a break): record in the next
		return s.assign(loc, t, v)
	}
	target, slot := int32(-1), false
	if t.g == g {
		target = int32(g.ids[t.node])
	} else {
		slot = true
		if a, ok := g.lifted[t]; ok {
			target = int32(g.ids[a.v])
		}
	}
	if t.g != g {
		if t.g != nil || t.remat != nil {
			// Pending in a graph that has not run: run it, so that t has
			// a value to restore should the session fail.
			if _, err := t.data("tensor assigned in place"); err != nil {
				return err
			}
			if g != s.cur {
				return s.assign(loc, t, v)
			}
		}
		s.mutated = append(s.mutated, mutation{t: t, old: tensorData{host: t.val, dev: t.dev}})
		t.val, t.dev = nil, nil
		t.ver++
		g.pending = append(g.pending, t)
	}
	g.tapeAssign(target, slot, int32(g.ids[node]))
	t.g, t.node, t.sess = g, node, s
	return nil
}
