package frontend

import (
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
)

// irContext is the context every traced graph is built in: it holds no
// per-graph state, so one is shared.
var irContext = sync.OnceValue(dialects.NewContext)

// errEscaped marks a pending tensor whose graph finished without it being
// an output: it was made inside a compiled function but not returned.
var errEscaped = errors.New("frontend: tensor escaped from a compiled function without being returned, so it was never computed")

// session is one run of captured code: a call of a compiled function, or
// the lazy eager computation of ops used outside any compiled function.
// It records graphs one after another; a graph break ends one and the
// next op starts another.
type session struct {
	c         *Compiled // nil for a lazy eager session
	backend   backendEntry
	fullgraph bool
	finalOuts []*Tensor
	// stamped are the concrete tensors whose in field names s: the
	// inputs of its graphs (end clears it).
	stamped []*Tensor
	// mutated are the tensors Assign changed during the session, with
	// their values before it (restored when the session fails).
	mutated []mutation
	// ran are the graphs run, in order, with their inputs.
	ran []ranGraph
	// rp is the replay in flight (nil: recording); first is the first
	// graph recorded, whose tape a call may keep.
	rp       *replay
	first    *graphTrace
	replayed bool // the call ran a tape's executable
	// ahead is set for a Precompile: a flush compiles its graph without
	// running it and ends the session (compileAhead).
	ahead    bool
	active   bool
	cur      *graphTrace
	err      error // the first error, which every later op repeats
	startSeq uint64
	breaks   []Break
	graphs   []GraphInfo
	// spent is the time flushes spent compiling and running graphs, so
	// that the rest of the call counts as tracing.
	spent time.Duration
	times CompileTimes
}

func newSession(c *Compiled, be backendEntry, fullgraph bool) *session {
	return &session{c: c, backend: be, fullgraph: fullgraph, active: true, startSeq: seqCounter.Load()}
}

// ranGraph is a graph a session ran: its executable and inputs.
type ranGraph struct {
	exe    Executable
	inputs []tensorData
}

// end marks s finished: its tensors no longer name it, and the tensors
// it mutated get their old values back if it failed.
func (s *session) end() {
	// A failed call gives the tensors it updated in place their values
	// back first: a replay's placeholders below include them, and they
	// must not be marked escaped.
	if s.err != nil {
		for i := len(s.mutated) - 1; i >= 0; i-- {
			if m := s.mutated[i]; m.t.val == nil && m.t.dev == nil {
				m.t.setData(m.old)
				m.t.err, m.t.rid, m.t.sess = nil, 0, nil
			}
		}
		s.mutated = nil
	}
	if rp := s.rp; rp != nil {
		s.rp = nil
		rp.dropSpeculation()
		// The call failed while replaying: what fn kept of it (a tensor
		// stored in Go state) is computed when used, from the steps and
		// inputs replayed so far, as after a traced call that failed.
		var src *rematSrc
		for _, t := range rp.objs {
			if t.rid != 0 {
				if t.val == nil && t.dev == nil && t.err == nil {
					if src == nil {
						src = &rematSrc{steps: rp.tp.steps, inputs: slices.Clone(rp.inputs)}
					}
					t.escape(src, t.rid-1)
				}
				t.rid = 0
			}
		}
		clear(rp.objs)
		clear(rp.inputs)
		rp.leaves, rp.vals = nil, nil
	}
	s.active = false
	for _, t := range s.stamped {
		t.in.CompareAndSwap(s, nil)
	}
	s.stamped = nil
	s.mutated = nil
}

// fail records err as the session's first error.
func (s *session) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// graphTrace is one graph being recorded: a func.func in its own module,
// whose arguments are the concrete tensors it reads.
type graphTrace struct {
	sess    *session
	index   int
	module  *ir.Operation
	fn      *ir.Operation
	entry   *ir.Block
	b       *ir.Builder
	inputs  []tensorData
	lifted  map[*Tensor]lift
	pending []*Tensor
	opCount map[string]int
	nops    int
	// fp fingerprints the graph's structure (ops, attributes, types and
	// wiring), which with the input types keys the compile cache.
	fp  maphash.Hash
	ids map[*ir.Value]int
	// dynamic is set when some input dim is "?"; specialized when code
	// read a shape of such a graph, which then holds for those sizes only.
	dynamic     bool
	specialized bool
	specializer ir.Location
	// compiled is the cache entry that ran g (nil for eager runs).
	compiled *cached
	// tape records g's steps for replay (the first graph of a compiled
	// call only).
	tape   *tapeRecorder
	outIDs []int32 // the value ids of the results, once sealed
}

var fpSeed = maphash.MakeSeed()

// graph returns the session's current graph, starting one if needed.
func (s *session) graph() *graphTrace {
	if s.cur == nil {
		s.cur = s.newGraph(nil, nil)
	}
	return s.cur
}

// newGraph starts a graph whose first arguments are args, of the given
// types (which may have dynamic dims).
func (s *session) newGraph(args []*Tensor, types []ir.Type) *graphTrace {
	return s.newGraphData(args, nil, types)
}

// newGraphData is newGraph with the arguments' data given (nil: their
// current data).
func (s *session) newGraphData(args []*Tensor, datas []tensorData, types []ir.Type) *graphTrace {
	ctx := irContext()
	g := &graphTrace{
		sess: s, index: len(s.graphs), lifted: map[*Tensor]lift{},
		opCount: map[string]int{}, ids: map[*ir.Value]int{},
	}
	g.fp.SetSeed(fpSeed)
	if s.c != nil {
		// Every graph of a compiled call records its steps: the first's
		// tape may be replayed, and any graph's steps are the recipe of
		// the tensors that escape it (remat.go).
		g.tape = &tapeRecorder{}
		if g.index == 0 && s.first == nil {
			s.first = g
		}
	}
	g.module = builtin.NewModule(ir.UnknownLoc{})
	g.b = ir.NewBuilder(ctx)
	g.b.SetInsertionPointToEnd(builtin.ModuleBody(g.module))
	g.fn, g.entry = funcs.NewFunc(g.b, fmt.Sprintf("graph%d", g.index), ir.FunctionOf(nil, nil), ir.UnknownLoc{})
	g.b.SetInsertionPointToEnd(g.entry)
	for i, t := range args {
		if _, ok := g.lifted[t]; ok {
			continue // an argument given twice is one input
		}
		d := tensorData{host: t.val, dev: t.dev}
		if datas != nil {
			d = datas[i]
		}
		g.lifted[t] = lift{g.addInput(d, types[i]), t.ver}
		g.dynamic = g.dynamic || hasDynamic(types[i])
		s.stamp(t)
	}
	s.cur = g
	return g
}

func hasDynamic(t ir.Type) bool {
	tt, ok := t.(*ir.TensorType)
	return ok && slices.Contains(tt.Shape(), ir.Dynamic)
}

// addInput adds a function argument bound to v.
func (g *graphTrace) addInput(v tensorData, t ir.Type) *ir.Value {
	arg := g.entry.AddArgument(t)
	g.ids[arg] = len(g.ids)
	g.inputs = append(g.inputs, v)
	g.fp.WriteString("in:" + t.String() + ";")
	g.tapeLift(t)
	return arg
}

// stamp records that t is an input of one of s's graphs, so that a host
// read of t during the session is a graph break.
func (s *session) stamp(t *Tensor) {
	if s.c == nil {
		return
	}
	if t.in.Swap(s) != s {
		s.stamped = append(s.stamped, t)
	}
}

// use returns the value standing for t in g, making t an input of g when
// it is concrete (or pending in another graph, which then runs).
func (g *graphTrace) use(t *Tensor) (*ir.Value, error) {
	if t.remat != nil {
		if err := t.rematerialize(); err != nil {
			return nil, err
		}
	}
	if t.g == g {
		return t.node, nil
	}
	if t.g != nil {
		if _, err := t.value("tensor pending in another graph"); err != nil {
			return nil, err
		}
	}
	if l, ok := g.lifted[t]; ok && l.ver == t.ver {
		return l.v, nil
	}
	if t.val == nil && t.dev == nil {
		return nil, errEscaped
	}
	d := tensorData{host: t.val, dev: t.dev}
	v := g.addInput(d, ir.TensorOf(d.Shape(), d.ElemType()))
	g.lifted[t] = lift{v, t.ver}
	g.sess.stamp(t)
	return v, nil
}

// specialize notes that code read a shape of this dynamic graph.
func (g *graphTrace) specialize(loc ir.Location) {
	if !g.specialized {
		g.specialized, g.specializer = true, loc
		logs.Printf(topicGuards, "shape read at %s specializes graph %d on its input sizes", locString(loc), g.index)
	}
}

// pickSession chooses the session an op on operands is recorded in: that
// of a running compiled function if an operand belongs to one, else that
// of a lazy eager computation, else a new lazy eager session.
func pickSession(operands []*Tensor) *session {
	var lazy *session
	for _, t := range operands {
		if s := t.sess; s != nil && s.active {
			if s.c != nil {
				return s
			}
			if lazy == nil {
				lazy = s
			}
		}
	}
	// A concrete tensor that is an input of a compiled call in flight
	// (an argument, a captured weight it used) joins that call.
	for _, t := range operands {
		if s := t.in.Load(); s != nil && s.active {
			return s
		}
	}
	if lazy != nil {
		return lazy
	}
	return newSession(nil, mustBackend(EagerBackend), false)
}

// opSpec says how to record one op: its graph op name, attributes, and
// for ops whose result type is given rather than inferred (cast), the
// element type of the result.
type opSpec struct {
	name  string
	props ir.DictAttr
	cast  ir.Type
}

// apply records the op in the right graph and returns its result. Errors
// (a failed operand, a shape or dtype mismatch) give a failed tensor.
//
// A nil loc stands for the caller's location (callerLoc), found only
// where it is needed: a replayed op does not need it, and finding it is
// most of the cost of a replayed op.
func apply(loc ir.Location, spec opSpec, operands ...*Tensor) *Tensor {
	for _, t := range operands {
		if t == nil {
			if loc == nil {
				loc = callerLoc()
			}
			return failed(located(loc, "'graph.%s': nil tensor operand", spec.name))
		}
		if t.err != nil {
			return failed(t.err)
		}
	}
	return pickSession(operands).apply(loc, spec, operands)
}

// apply records the op in s's current graph.
func (s *session) apply(loc ir.Location, spec opSpec, operands []*Tensor) *Tensor {
	if s.err != nil {
		return failed(s.err)
	}
	if s.rp != nil && s.backend.supportsGraphOp(spec.name) {
		return s.replayOp(loc, spec, operands)
	}
	if loc == nil {
		loc = callerLoc()
	}
	if !s.backend.supportsGraphOp(spec.name) {
		s.diverge()
		return s.unsupported(loc, spec, operands)
	}
	g := s.graph()
	vals := make([]*ir.Value, len(operands))
	for i, t := range operands {
		v, err := g.use(t)
		if err != nil {
			return failed(err)
		}
		vals[i] = v
	}
	if g != s.cur { // using an operand ran the graph (a break): record in the next
		return s.apply(loc, spec, operands)
	}
	var v *ir.Value
	var err error
	if spec.cast != nil {
		v, err = graph.BuildTyped(g.b, spec.name, loc, vals, spec.props, ir.TensorOf(shapeOf(vals[0]), spec.cast))
	} else {
		v, err = graph.Build(g.b, spec.name, loc, vals, spec.props)
	}
	if err != nil {
		err = atUserLine(err)
		if s.c != nil {
			s.fail(err)
		}
		return failed(err)
	}
	t := newTensor()
	t.g, t.node, t.sess = g, v, s
	t.dtype, _ = dtypeOf(ir.ElementTypeOf(v.Type()))
	t.shape = shapeOf(v)
	if g.dynamic {
		if t.shape, err = concreteShape(loc, spec, operands); err != nil {
			s.fail(err)
			return failed(err)
		}
	}
	g.pending = append(g.pending, t)
	g.record(v.DefiningOp(), vals)
	g.tapeOp(spec, loc, vals, v)
	return t
}

func shapeOf(v *ir.Value) []int64 {
	if tt, ok := v.Type().(*ir.TensorType); ok {
		return slices.Clone(tt.Shape())
	}
	return nil
}

// concreteShape infers an op's result shape from its operands' concrete
// shapes, for graphs whose IR types have dynamic dims.
func concreteShape(loc ir.Location, spec opSpec, operands []*Tensor) ([]int64, error) {
	if spec.cast != nil {
		return slices.Clone(operands[0].shape), nil
	}
	types := make([]ir.Type, len(operands))
	for i, t := range operands {
		types[i] = ir.TensorOf(t.shape, t.dtype.Elem())
	}
	ts, err := irContext().OpDef("graph."+spec.name).InferTypes(types, spec.props, loc)
	if err != nil {
		return nil, err
	}
	return slices.Clone(ts[0].(*ir.TensorType).Shape()), nil
}

// record counts op and adds it to the fingerprint.
func (g *graphTrace) record(op *ir.Operation, operands []*ir.Value) {
	g.nops++
	g.opCount[op.Name()]++
	g.fp.WriteString(op.Name())
	g.fp.WriteString(op.Properties().String())
	for _, v := range operands {
		fmt.Fprintf(&g.fp, ",%d", g.ids[v])
	}
	for _, r := range op.Results() {
		g.ids[r] = len(g.ids)
		g.fp.WriteString(":" + r.Type().String())
	}
	g.fp.WriteString(";")
}

// unsupported runs an op the session's backend cannot compile: the graph
// so far breaks, and the op runs on its own in the eager backend.
func (s *session) unsupported(loc ir.Location, spec opSpec, operands []*Tensor) *Tensor {
	if s.ahead {
		// A Precompile runs nothing: the trace ends at the break.
		if g := s.cur; g != nil {
			return failed(s.graphBreak(g, "", loc))
		}
		s.fail(errAhead)
		return failed(errAhead)
	}
	reason := fmt.Sprintf("op 'graph.%s' is not supported by backend %q", spec.name, s.backend.name)
	if g := s.cur; g != nil {
		if err := s.graphBreak(g, reason, loc); err != nil {
			return failed(err)
		}
	} else if err := s.noteBreak(reason, loc); err != nil {
		return failed(err)
	}
	t := newSession(nil, mustBackend(EagerBackend), false).apply(loc, spec, operands)
	if t.err == nil {
		if _, err := t.value("unsupported op"); err != nil {
			return failed(err)
		}
	}
	t.sess = s
	return t
}

// noteBreak records a graph break of a compiled function, or refuses it
// under Fullgraph.
func (s *session) noteBreak(reason string, loc ir.Location) error {
	if s.c == nil {
		return nil
	}
	if s.fullgraph {
		err := located(loc, "graph break in a function compiled with Fullgraph: %s", reason)
		s.fail(err)
		return err
	}
	ops := 0
	if s.cur != nil {
		ops = s.cur.nops
	}
	s.breaks = append(s.breaks, Break{Reason: reason, Loc: locString(loc), Graph: len(s.graphs)})
	logs.Printf(topicGraphBreaks, "%s: graph break after graph %d (%d ops): %s", locString(loc), len(s.graphs), ops, reason)
	return nil
}

// graphBreak ends g, which must be current, at a break: it runs g with
// every pending tensor as an output, so code after the break can read
// them.
func (s *session) graphBreak(g *graphTrace, reason string, loc ir.Location) error {
	if s.active {
		if err := s.noteBreak(reason, loc); err != nil {
			return err
		}
	}
	// A tensor of g.pending may have left g since (a failed call gave a
	// tensor it updated in place its value back).
	outs := slices.DeleteFunc(slices.Clone(g.pending), func(t *Tensor) bool { return t.g != g })
	return s.flush(g, outs)
}

// seal ends g's function with outs, which g computes, as its results and
// records g among the session's graphs.
func (s *session) seal(g *graphTrace, outs []*Tensor) {
	vals := make([]*ir.Value, len(outs))
	types := make([]ir.Type, len(outs))
	for i, t := range outs {
		vals[i], types[i] = t.node, t.node.Type()
	}
	funcs.Return(g.b, ir.UnknownLoc{}, vals...)
	// The results are part of the graph's identity: the same ops
	// returning other values are another graph.
	g.fp.WriteString("out")
	g.outIDs = make([]int32, len(vals))
	for i, v := range vals {
		g.outIDs[i] = int32(g.ids[v])
		g.fp.WriteString(",")
		g.fp.WriteString(strconv.Itoa(g.ids[v]))
	}
	inTypes := make([]ir.Type, g.entry.NumArguments())
	for i, a := range g.entry.Arguments() {
		inTypes[i] = a.Type()
	}
	g.fn.SetProperty(funcs.FunctionTypeAttr, ir.TypeAttr{Type: ir.FunctionOf(inTypes, types)})
	s.graphs = append(s.graphs, GraphInfo{Index: g.index, Ops: g.nops, OpCounts: g.opCount, Inputs: len(g.inputs), Outputs: len(outs)})
}

// flush finishes g with outs as its results, compiles it, runs it and
// gives the outputs their values. Pending tensors of g that are not
// outputs are left without a value (errEscaped).
func (s *session) flush(g *graphTrace, outs []*Tensor) error {
	start := time.Now()
	defer func() { s.spent += time.Since(start) }()
	if s.cur == g {
		s.cur = nil
	}
	s.seal(g, outs)
	results, err := s.run(g)
	if err == nil && len(results) != len(outs) {
		err = errTooFewResults(len(results), len(outs))
	}
	for i, t := range outs {
		if err != nil {
			t.err, t.g, t.node = err, nil, nil
			continue
		}
		t.setData(results[i])
	}
	var src *rematSrc
	if err == nil && g.tape != nil {
		src = &rematSrc{steps: g.tape.steps, inputs: g.inputs}
	}
	for _, t := range g.pending {
		if t.g == g {
			t.escape(src, int32(g.ids[t.node]))
		}
	}
	if err != nil {
		s.fail(err)
	}
	return err
}

// callerLoc returns the location of the first caller outside this package
// (and outside the reflect and runtime packages, through which Compile
// calls user functions).
//
// The stack is unwound a few frames deep first, and as deep as
// callerFrames only when those are all internal: the first outside
// caller is usually a few frames up (a layer's Forward calling Add), and
// unwinding every recorded op's whole stack was most of the cost of
// tracing (ResNet-50's training step: 1969 ops, 35 ms).
func callerLoc() ir.Location {
	var pcs [callerFrames]uintptr
	for _, depth := range []int{callerFramesFirst, callerFrames} {
		n := runtime.Callers(2, pcs[:depth])
		for _, pc := range pcs[:n] {
			if e := pcLoc(pc); !e.internal {
				return e.loc
			}
		}
		if n < depth {
			break // the whole stack was internal
		}
	}
	return ir.UnknownLoc{}
}

// callerFramesFirst and callerFrames are the depths callerLoc unwinds.
const (
	callerFramesFirst = 6
	callerFrames      = 24
)

// pcEntry is what callerLoc learns from one return address: whether all
// its frames (the function and those inlined into it at that point) are
// internal, and else the location of the first that is not.
type pcEntry struct {
	internal bool
	loc      ir.Location
}

// pcLocs caches pcLoc by return address: a traced program records an op
// per call, from a few call sites, and resolving frames is most of the
// cost of recording it.
var pcLocs sync.Map // uintptr -> pcEntry

// pcLoc returns the pcEntry of a return address from runtime.Callers.
func pcLoc(pc uintptr) pcEntry {
	if e, ok := pcLocs.Load(pc); ok {
		return e.(pcEntry)
	}
	e := pcEntry{internal: true}
	frames := runtime.CallersFrames([]uintptr{pc})
	for {
		f, more := frames.Next()
		if !internalFrame(f.Function) {
			e = pcEntry{loc: ir.FileLineColLoc{File: f.File, Line: f.Line, Col: 0}}
			break
		}
		if !more {
			break
		}
	}
	pcLocs.Store(pc, e)
	return e
}

const pkgPath = "github.com/strata-ir/strata/frontend."

func internalFrame(fn string) bool {
	return strings.HasPrefix(fn, pkgPath) || strings.HasPrefix(fn, "reflect.") || strings.HasPrefix(fn, "runtime.")
}

// located returns a diagnostic at loc.
func located(loc ir.Location, format string, args ...any) error {
	return ir.Errorf(loc, format, args...)
}

// locString prints loc as file:line.
func locString(loc ir.Location) string {
	if l, ok := loc.(ir.FileLineColLoc); ok {
		return fmt.Sprintf("%s:%d", l.File, l.Line)
	}
	return loc.String()
}

// lift is a concrete tensor's input in a graph, and the version of the
// tensor it holds: an in-place update outside any compiled function
// (Assign) bumps the version, so a lazy graph that read the old value
// reads the new one as another input.
type lift struct {
	v   *ir.Value
	ver uint32
}
