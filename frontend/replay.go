package frontend

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// This file is the cached call: replay and compare (docs/frontend-state.md).
//
// A call whose trace was one graph without breaks leaves a tape: the
// graph's inputs (lifts, with their types), ops (name, attributes,
// operand value ids, result shape) and in-place updates, in the order
// fn performed them, with the compiled executable and the ids of its
// outputs. A later call runs fn again, but in replay mode: an op builds
// no IR; it is compared with the next step of the tape, and its result
// is a placeholder tensor naming a value id. Concrete tensors fn uses
// (arguments, captured tensors, struct fields, fresh constants) are
// collected by identity and current value as the graph's inputs. If fn
// ends having matched the whole tape (and the inputs pass its guards),
// the executable runs on the inputs collected; at the first difference
// the steps replayed so far are built into IR and the call goes on
// recording, as a first call does (switch to recording: fn runs once).

// stepKind is what a tape step records.
type stepKind uint8

const (
	stepLift   stepKind = iota // a concrete tensor becomes an input
	stepOp                     // an op
	stepAssign                 // an in-place update
)

// step is one step of a tape.
type step struct {
	kind stepKind
	// lift: the input's element type and shape (ir.Dynamic for a
	// symbolic dim). op: the result's.
	elem  ir.Type
	shape []int64
	// op
	name     string
	props    ir.DictAttr
	cast     ir.Type
	operands []int32
	loc      ir.Location
	// assign: the target's value id (-1: a concrete tensor that is not
	// an input), whether it is a tensor from outside the graph (written
	// back), and the value assigned.
	target int32
	slot   bool
	value  int32
	// memo holds, on a dynamic tape, the result shapes an op's inference
	// gave for operand shapes seen before (replayOp): the same few lengths
	// come back call after call, and inferring a shape builds IR types
	// (half of a dynamic call's host time).
	memo []shapeMemo
}

// shapeMemo is one inferred result shape and the operand shapes it is of.
type shapeMemo struct {
	in  [][]int64
	out []int64
}

// maxShapeMemo bounds a step's memo: past it, shapes are inferred each
// time.
const maxShapeMemo = 16

// shapeFor returns the result shape of the op step s records for
// operands, inferred once for each distinct list of operand shapes.
func (s *step) shapeFor(loc ir.Location, spec opSpec, operands []*Tensor) ([]int64, error) {
	for _, m := range s.memo {
		if slices.EqualFunc(m.in, operands, func(shape []int64, t *Tensor) bool { return slices.Equal(shape, t.shape) }) {
			return slices.Clone(m.out), nil
		}
	}
	shape, err := concreteShape(loc, spec, operands)
	if err != nil || len(s.memo) >= maxShapeMemo {
		return shape, err
	}
	in := make([][]int64, len(operands))
	for i, t := range operands {
		in[i] = slices.Clone(t.shape)
	}
	s.memo = append(s.memo, shapeMemo{in: in, out: slices.Clone(shape)})
	return shape, nil
}

func (a *step) equal(b *step) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case stepLift:
		return a.elem == b.elem && slices.Equal(a.shape, b.shape)
	case stepOp:
		return a.name == b.name && a.cast == b.cast && slices.Equal(a.operands, b.operands) && a.props.Equal(b.props)
	}
	return a.target == b.target && a.slot == b.slot && a.value == b.value
}

// tape is a recorded call: one graph, compiled.
type tape struct {
	steps   []step
	nleaves int
	outs    []int32 // value ids of the graph's results, in order
	dynamic bool    // some input type has a "?" dim: guards checked at the end
	// specialized is set when the trace read sizes of the dynamic graph
	// (its guards then hold for those sizes only).
	specialized bool
	guards      sym.Guards
	exe         Executable
	info        GraphInfo // what Explain reports of the graph
	// train and wrt are set on the tapes of a differentiated function
	// (grad.go): its forward and backward passes, run instead of exe,
	// and the arguments they differentiate with respect to.
	train *trainStep
	wrt   []int
	// lcp[j] is the number of leading steps this tape shares with tape j.
	lcp []int
	// lifted refers to the data of the inputs the tape's last replay
	// lifted after its leaves (nil: none replayed yet), which the next
	// replay's speculative run reads; noSpec is set once a speculation
	// was dropped (speculate.go).
	lifted *[]weakData
	noSpec bool
}

// tapeRecorder builds the tape of a graph while it is traced.
type tapeRecorder struct {
	steps []step
}

// maxTapes bounds the tapes a compiled function keeps.
const maxTapes = 16

// replay is the state of a call in replay mode.
type replay struct {
	c      *Compiled
	tp     *tape
	pos    int   // the next step
	nvals  int32 // values so far (lifts and ops)
	inputs []tensorData
	objs   []*Tensor // per step: the lifted tensor, the op's result, the assigned tensor
	shapes [][]int64 // per value id: its type's shape in the tape (ir.Dynamic: symbolic)
	leaves []*Tensor
	vals   []tensorData // the leaves' data
	// specializer is where fn read sizes of the (specialized) dynamic
	// graph, if it did.
	specializer ir.Location
	// spec is the tape's executable queued when the replay began, if it
	// was (speculate.go).
	spec *speculation
}

// liftType is the type graph inputs of concrete tensors get (static).
func liftShapeMatches(want []int64, got []int64) bool {
	if len(want) != len(got) {
		return false
	}
	for i, w := range want {
		if w != got[i] && !(w == ir.Dynamic && got[i] >= 2) {
			return false
		}
	}
	return true
}

// startReplay begins a call in replay mode on a tape whose leaf lifts
// the arguments' tensors match; it reports false (nothing started) when
// no tape matches.
func (s *session) startReplay(leaves []*Tensor, vals []tensorData) bool {
	c := s.c
	var tp *tape
	for _, cand := range c.tapes {
		if cand.nleaves == len(leaves) && leavesMatch(cand, vals) {
			tp = cand
			break
		}
	}
	if tp == nil {
		return false
	}
	rp := &c.rp
	*rp = replay{c: c, tp: tp, inputs: rp.inputs[:0], objs: rp.objs[:0], shapes: rp.shapes, leaves: leaves, vals: vals}
	clear(c.rpLifted)
	rp.shapes = rp.shapes[:0]
	for i, t := range leaves {
		rp.shapes = append(rp.shapes, tp.steps[i].shape)
		rp.inputs = append(rp.inputs, vals[i])
		rp.objs = append(rp.objs, t)
		c.rpLifted[t] = int32(i)
		s.stamp(t)
	}
	rp.pos, rp.nvals = len(leaves), int32(len(leaves))
	s.rp = rp
	return true
}

func leavesMatch(tp *tape, vals []tensorData) bool {
	for i, v := range vals {
		st := &tp.steps[i]
		if st.elem != v.ElemType() || !liftShapeMatches(st.shape, v.Shape()) {
			return false
		}
	}
	return true
}

// replayID returns the value id of t, a placeholder of the replay in
// flight.
func (t *Tensor) replayID() (int32, bool) {
	s := t.sess
	if s == nil || s.rp == nil || t.rid == 0 || t.val != nil || t.dev != nil {
		return 0, false
	}
	return t.rid - 1, true
}

// switchTape looks for another tape that shares the steps replayed so
// far and whose step at the current position is want (nil: whose end is
// here and which accept is true of). It reports whether it switched.
func (rp *replay) switchTape(want *step, accept func(*tape) bool) bool {
	cur := rp.tp
	for j, u := range rp.c.tapes {
		if u == cur || j >= len(cur.lcp) || cur.lcp[j] < rp.pos {
			continue
		}
		if want != nil {
			if rp.pos < len(u.steps) && u.steps[rp.pos].equal(want) {
				rp.tp = u
				return true
			}
			continue
		}
		if len(u.steps) == rp.pos && accept(u) {
			rp.tp = u
			return true
		}
	}
	return false
}

// match checks the step fn performed against the tape, switching tapes
// if another one fits.
func (rp *replay) match(st *step) bool {
	if rp.pos < len(rp.tp.steps) && rp.tp.steps[rp.pos].equal(st) {
		return true
	}
	return rp.switchTape(st, nil)
}

// lift makes concrete tensor t an input of the replay, or returns its id
// if it is one; ok is false when the tape differs.
func (s *session) replayLift(t *Tensor) (int32, bool) {
	rp := s.rp
	if id, ok := rp.c.rpLifted[t]; ok {
		return id, true
	}
	d, err := t.data("input of a compiled graph")
	if err != nil {
		return 0, false // the trace reports the error
	}
	st := step{kind: stepLift, elem: d.ElemType(), shape: d.Shape()}
	if !rp.match(&st) {
		return 0, false
	}
	id := rp.nvals
	rp.shapes = append(rp.shapes, rp.tp.steps[rp.pos].shape)
	rp.nvals++
	rp.pos++
	rp.inputs = append(rp.inputs, d)
	rp.objs = append(rp.objs, t)
	rp.c.rpLifted[t] = id
	s.stamp(t)
	return id, true
}

// operandID returns the value id of operand t in the replay.
func (s *session) operandID(t *Tensor) (int32, bool) {
	if id, ok := t.replayID(); ok {
		return id, true
	}
	return s.replayLift(t)
}

// replayOp is apply in replay mode.
func (s *session) replayOp(loc ir.Location, spec opSpec, operands []*Tensor) *Tensor {
	rp := s.rp
	var buf [4]int32
	ids := buf[:0]
	for _, t := range operands {
		id, ok := s.operandID(t)
		if !ok {
			s.diverge()
			return s.apply(loc, spec, operands)
		}
		ids = append(ids, id)
	}
	st := step{kind: stepOp, name: spec.name, props: spec.props, cast: spec.cast, operands: ids}
	if !rp.match(&st) {
		s.diverge()
		return s.apply(loc, spec, operands)
	}
	rec := &rp.tp.steps[rp.pos]
	t := newTensor()
	t.sess = s
	t.rid = rp.nvals + 1
	t.dtype, _ = dtypeOf(rec.elem)
	if rp.tp.dynamic {
		if loc == nil {
			loc = rec.loc
		}
		shape, err := rec.shapeFor(loc, spec, operands)
		if err != nil {
			s.diverge()
			return s.apply(loc, spec, operands)
		}
		t.shape = shape
	} else {
		t.shape = rec.shape
	}
	rp.shapes = append(rp.shapes, rec.shape)
	rp.nvals++
	rp.pos++
	rp.objs = append(rp.objs, t)
	return t
}

// replayAssign is session.assign in replay mode.
func (s *session) replayAssign(loc ir.Location, t, v *Tensor) error {
	rp := s.rp
	vid, ok := s.operandID(v)
	if !ok {
		s.diverge()
		return s.assign(loc, t, v)
	}
	st := step{kind: stepAssign, value: vid, target: -1}
	if id, ok := t.replayID(); ok {
		st.target = id
	} else {
		st.slot = true
		if id, ok := rp.c.rpLifted[t]; ok {
			st.target = id
		}
	}
	if !rp.match(&st) {
		s.diverge()
		return s.assign(loc, t, v)
	}
	if st.slot {
		if t.g != nil || t.remat != nil {
			if _, err := t.data("tensor assigned in place"); err != nil {
				return err
			}
		}
		s.mutated = append(s.mutated, mutation{t: t, old: tensorData{host: t.val, dev: t.dev}})
		t.val, t.dev = nil, nil
		t.ver++
	}
	t.sess, t.rid = s, vid+1
	rp.pos++
	rp.objs = append(rp.objs, t)
	return nil
}

// diverge ends replay mode: the steps replayed so far are built into a
// graph, as tracing would have built them, and the call goes on tracing.
func (s *session) diverge() {
	rp := s.rp
	if rp == nil {
		return
	}
	rp.dropSpeculation()
	s.rp = nil
	c := s.c
	g := s.newGraphData(rp.leaves, rp.vals, c.argTypes(rp.leaves, rp.vals))
	if rp.specializer != nil {
		g.specialize(rp.specializer)
	}
	vals := make([]*ir.Value, 0, rp.nvals)
	for _, t := range rp.leaves {
		vals = append(vals, g.lifted[t].v)
	}
	lifts := len(rp.leaves)
	for i := len(rp.leaves); i < len(rp.objs); i++ {
		st := &rp.tp.steps[i]
		t := rp.objs[i]
		switch st.kind {
		case stepLift:
			d := rp.inputs[lifts]
			lifts++
			v := g.addInput(d, ir.TensorOf(d.Shape(), d.ElemType()))
			g.lifted[t] = lift{v, t.ver}
			vals = append(vals, v)
		case stepOp:
			operands := make([]*ir.Value, len(st.operands))
			for j, id := range st.operands {
				operands[j] = vals[id]
			}
			var v *ir.Value
			var err error
			if st.cast != nil {
				v, err = graph.BuildTyped(g.b, st.name, st.loc, operands, st.props, ir.TensorOf(shapeOf(operands[0]), st.cast))
			} else {
				v, err = graph.Build(g.b, st.name, st.loc, operands, st.props)
			}
			if err != nil {
				s.fail(err)
				return
			}
			t.g, t.node, t.rid = g, v, 0
			g.pending = append(g.pending, t)
			g.record(v.DefiningOp(), operands)
			g.tapeOp(opSpec{name: st.name, props: st.props, cast: st.cast}, st.loc, operands, v)
			vals = append(vals, v)
		case stepAssign:
			if st.slot {
				g.pending = append(g.pending, t)
			}
			g.tapeAssign(st.target, st.slot, int32(g.ids[vals[st.value]]))
			t.g, t.node, t.rid = g, vals[st.value], 0
		}
	}
	clear(rp.objs) // the buffers are reused; the tensors are not kept alive
	clear(rp.inputs)
	rp.leaves, rp.vals = nil, nil
}

// tapeLift records an input.
func (g *graphTrace) tapeLift(t ir.Type) {
	if g.tape == nil {
		return
	}
	tt := t.(*ir.TensorType)
	g.tape.steps = append(g.tape.steps, step{kind: stepLift, elem: tt.ElementType(), shape: slices.Clone(tt.Shape())})
}

// tapeOp records an op with result v.
func (g *graphTrace) tapeOp(spec opSpec, loc ir.Location, operands []*ir.Value, v *ir.Value) {
	if g.tape == nil {
		return
	}
	ids := make([]int32, len(operands))
	for i, o := range operands {
		ids[i] = int32(g.ids[o])
	}
	tt := v.Type().(*ir.TensorType)
	g.tape.steps = append(g.tape.steps, step{kind: stepOp, name: spec.name, props: spec.props, cast: spec.cast,
		operands: ids, loc: loc, elem: tt.ElementType(), shape: slices.Clone(tt.Shape())})
}

// tapeAssign records an in-place update.
func (g *graphTrace) tapeAssign(target int32, slot bool, value int32) {
	if g.tape == nil {
		return
	}
	g.tape.steps = append(g.tape.steps, step{kind: stepAssign, target: target, slot: slot, value: value})
}

// finishReplay ends a call in replay mode: when fn matched a whole tape,
// the tape's executable runs on the inputs collected and reports true.
// Otherwise the call switches to tracing and it reports false.
func (s *session) finishReplay(outs []*Tensor) (bool, error) {
	rp := s.rp
	var outIDs []int32
	var outTs []*Tensor
	for _, o := range outs {
		if id, ok := o.replayID(); ok && !slices.Contains(outTs, o) {
			outIDs, outTs = append(outIDs, id), append(outTs, o)
		}
	}
	for _, m := range s.mutated {
		if id, ok := m.t.replayID(); ok && !slices.Contains(outTs, m.t) {
			outIDs, outTs = append(outIDs, id), append(outTs, m.t)
		}
	}
	accept := func(tp *tape) bool {
		if !slices.Equal(tp.outs, outIDs) {
			return false
		}
		if tp.dynamic {
			if _, fail := tp.guards.Check(shapeDtypes(rp.inputs)); fail != nil {
				return false
			}
		}
		return true
	}
	if rp.pos != len(rp.tp.steps) || !accept(rp.tp) {
		if !rp.switchTape(nil, accept) {
			s.diverge()
			return false, nil
		}
	}
	s.rp = nil
	s.c.stats.CacheHits++
	s.c.stats.Replays++
	s.ran = append(s.ran, ranGraph{exe: rp.tp.exe, inputs: slices.Clone(rp.inputs)})
	s.graphs = append(s.graphs, rp.tp.info)
	res, speculated := rp.takeSpeculation()
	var err error
	if !speculated {
		res, err = runExecutable(rp.tp.exe, rp.inputs)
		if err == nil {
			rp.tp.rememberLifted(rp.inputs, len(rp.leaves))
		}
	}
	if err == nil && len(res) != len(outTs) {
		err = errTooFewResults(len(res), len(outTs))
	}
	if err != nil {
		s.fail(err)
		for _, t := range outTs {
			t.err, t.rid = err, 0
		}
	} else {
		for i, t := range outTs {
			t.rid = 0
			t.setData(res[i])
		}
	}
	var src *rematSrc
	if err == nil {
		src = &rematSrc{steps: rp.tp.steps, inputs: s.ran[len(s.ran)-1].inputs}
	}
	for _, t := range rp.objs {
		if t.rid != 0 {
			if t.val == nil && t.dev == nil {
				t.escape(src, t.rid-1)
			}
			t.rid = 0
		}
	}
	clear(rp.objs)
	clear(rp.inputs) // the buffers are reused; the tensors are not kept alive
	rp.leaves, rp.vals = nil, nil
	return true, err
}

// resetReplay forgets the tapes.
func (c *Compiled) resetReplay() { c.tapes = nil }

// addTape keeps the tape of a call traced into one graph, compiled,
// without breaks.
func (c *Compiled) addTape(s *session, g *graphTrace, nleaves int) {
	if g.tape == nil || g.compiled == nil || len(c.tapes) >= maxTapes || len(s.graphs) != 1 || len(s.breaks) != 0 || len(s.ran) != 1 {
		return
	}
	tp := &tape{steps: g.tape.steps, nleaves: nleaves, dynamic: g.dynamic, specialized: g.specialized, guards: g.compiled.guards, exe: g.compiled.exe}
	tp.outs = g.outIDs
	tp.info = s.graphs[0]
	c.keepTape(tp)
}

// keepTape adds tp to c's tapes, with the steps it shares with each of
// them.
func (c *Compiled) keepTape(tp *tape) {
	for _, u := range c.tapes {
		n := 0
		for n < len(tp.steps) && n < len(u.steps) && tp.steps[n].equal(&u.steps[n]) {
			n++
		}
		tp.lcp = append(tp.lcp, n)
		u.lcp = append(u.lcp, n)
	}
	tp.lcp = append(tp.lcp, len(tp.steps)) // itself
	c.tapes = append(c.tapes, tp)
}

// errTooFewResults is the error of a backend whose executable returned
// another number of results than the graph has.
func errTooFewResults(got, want int) error {
	return fmt.Errorf("frontend: the backend's executable returned %d results for a graph of %d", got, want)
}
