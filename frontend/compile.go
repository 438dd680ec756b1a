package frontend

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/sym"
)

// Mode is a torch.compile mode.
type Mode string

// The modes (DESIGN §9). On the CPU backends every mode behaves as
// ModeDefault; the GPU backend will read them.
const (
	ModeDefault                 Mode = "default"
	ModeReduceOverhead          Mode = "reduce-overhead"
	ModeMaxAutotune             Mode = "max-autotune"
	ModeMaxAutotuneNoCUDAGraphs Mode = "max-autotune-no-cudagraphs"
)

// Dynamic is the dynamic-shape policy.
type Dynamic uint8

// The policies. The zero value is DynamicAuto.
const (
	// DynamicAuto compiles for the sizes of the first call, and marks a
	// dim dynamic once a call brings another size for it.
	DynamicAuto Dynamic = iota
	// DynamicTrue compiles every dim of size ≥ 2 as dynamic from the first
	// call.
	DynamicTrue
	// DynamicFalse compiles every size statically (MarkDynamic is ignored).
	DynamicFalse
)

// String returns the policy as the dynamic option spells it: "auto", "true" or "false".
func (d Dynamic) String() string {
	switch d {
	case DynamicAuto:
		return "auto"
	case DynamicTrue:
		return "true"
	case DynamicFalse:
		return "false"
	}
	return fmt.Sprintf("Dynamic(%d)", uint8(d))
}

// DefaultRecompileLimit is the default Options.RecompileLimit.
const DefaultRecompileLimit = 8

// Options configure Compile (torch.compile's arguments). The zero value
// is the default configuration.
type Options struct {
	Mode      Mode
	Dynamic   Dynamic
	Fullgraph bool
	Backend   string
	// BackendOptions are passed to the backend.
	BackendOptions map[string]any
	// RecompileLimit bounds the graphs compiled for one position of the
	// function; past it the function runs eagerly (0: DefaultRecompileLimit).
	RecompileLimit int
}

// Compiled is a compiled function. It is safe for concurrent use; calls
// are serialized.
type Compiled struct {
	fn       reflect.Value
	nargs    int
	variadic bool
	results  resultShape
	opts     Options
	backend  backendEntry

	mu         sync.Mutex
	cache      map[string][]*cached // by graph position and structure
	latest     map[int]*cached      // the last graph compiled per position
	compiles   map[int]int          // compiled graphs per graph position
	fast       []*fastEntry
	eager      bool
	dyn        []map[int]bool // dims marked dynamic, per argument
	lastShapes [][]int64
	stats      Stats
	times      *CompileTimes
	last       *session
}

// Stats counts what a compiled function did.
type Stats struct {
	Calls, Compiles, Recompiles, GraphBreaks, CacheHits int
	// Eager is set once the recompile limit sent the function to eager mode.
	Eager bool
}

// resultShape says how fn returns its tensors.
type resultShape struct {
	n     int  // number of *Tensor results (-1: one []*Tensor)
	withE bool // a trailing error result
}

var (
	tensorType = reflect.TypeFor[*Tensor]()
	sliceType  = reflect.TypeFor[[]*Tensor]()
	errorType  = reflect.TypeFor[error]()
)

// Compile returns fn compiled with opts. fn is an ordinary Go function of
// *Tensor arguments (or ...*Tensor) returning one or more *Tensor, or a
// []*Tensor, optionally followed by an error: func(x, w *Tensor) *Tensor,
// func(...*Tensor) (*Tensor, *Tensor, error), ….
//
// Each call records the tensor ops fn performs into graph-dialect graphs,
// compiles them with the backend (cached: a later call whose inputs pass
// a compiled graph's guards reuses it) and runs them. fn must depend on its
// arguments only through tensor ops, shapes and values read (a read is a
// graph break); Go values it captures count as constants.
func Compile(fn any, opts Options) (*Compiled, error) {
	switch opts.Mode {
	case "":
		opts.Mode = ModeDefault
	case ModeDefault, ModeReduceOverhead, ModeMaxAutotune, ModeMaxAutotuneNoCUDAGraphs:
	default:
		return nil, fmt.Errorf("frontend: unknown mode %q (want one of %s)", opts.Mode, modeNames())
	}
	if opts.Dynamic > DynamicFalse {
		return nil, fmt.Errorf("frontend: unknown Dynamic policy %d", opts.Dynamic)
	}
	if opts.RecompileLimit < 0 {
		return nil, fmt.Errorf("frontend: negative RecompileLimit %d", opts.RecompileLimit)
	}
	if opts.RecompileLimit == 0 {
		opts.RecompileLimit = DefaultRecompileLimit
	}
	be, err := lookupBackend(opts.Backend)
	if err != nil {
		return nil, err
	}
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return nil, fmt.Errorf("frontend: Compile needs a function, got %T", fn)
	}
	t := v.Type()
	for i := range t.NumIn() {
		if in := t.In(i); in != tensorType && !(t.IsVariadic() && i == t.NumIn()-1 && in == sliceType) {
			return nil, fmt.Errorf("frontend: argument %d of %v is %v, want *Tensor", i, t, in)
		}
	}
	rs := resultShape{n: t.NumOut()}
	if rs.n > 0 && t.Out(rs.n-1) == errorType {
		rs.withE, rs.n = true, rs.n-1
	}
	if rs.n == 1 && t.Out(0) == sliceType {
		rs.n = -1
	} else {
		for i := range rs.n {
			if t.Out(i) != tensorType {
				return nil, fmt.Errorf("frontend: result %d of %v is %v, want *Tensor, []*Tensor or a final error", i, t, t.Out(i))
			}
		}
	}
	if rs.n == 0 {
		return nil, fmt.Errorf("frontend: %v returns no tensors", t)
	}
	if st, ok := be.b.(Starter); ok {
		st.Start() // e.g. open the GPU while the caller prepares its inputs
	}
	return &Compiled{
		fn: v, nargs: t.NumIn(), variadic: t.IsVariadic(), results: rs, opts: opts, backend: be,
		cache: map[string][]*cached{}, latest: map[int]*cached{}, compiles: map[int]int{},
	}, nil
}

// MustCompile is Compile for examples and tests: it panics on error.
func MustCompile(fn any, opts Options) *Compiled {
	c, err := Compile(fn, opts)
	if err != nil {
		panic(err)
	}
	return c
}

// Backend names the backend that compiles c's graphs: Options.Backend, or
// the default's choice for this machine (interp once the default found no
// GPU).
func (c *Compiled) Backend() string {
	if _, ok := c.backend.b.(defaultGPUBackend); ok && noGPU.Load() {
		return InterpBackend
	}
	return c.backend.name
}

// Stats returns the counters of c.
func (c *Compiled) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// CompileTimes returns how the first call split its time between tracing,
// passes, code generation and loading (zero before the first call).
func (c *Compiled) CompileTimes() CompileTimes {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.times == nil {
		return CompileTimes{}
	}
	return *c.times
}

// Call runs the compiled function on inputs and returns its results, or
// the first error: a shape or dtype error found while tracing (located at
// the offending line of fn), a graph break refused by Fullgraph, a backend
// or run-time failure, or fn's own error.
func (c *Compiled) Call(inputs ...*Tensor) ([]*Tensor, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Calls++
	if !c.variadic && len(inputs) != c.nargs || c.variadic && len(inputs) < c.nargs-1 {
		return nil, fmt.Errorf("frontend: compiled function takes %d arguments, got %d", c.nargs, len(inputs))
	}
	vals := make([]tensorData, len(inputs))
	for i, t := range inputs {
		if t == nil {
			return nil, fmt.Errorf("frontend: argument %d is nil", i)
		}
		v, err := t.data("argument of a compiled function")
		if err != nil {
			return nil, fmt.Errorf("frontend: argument %d: %w", i, err)
		}
		vals[i] = v
	}
	if !c.eager {
		for _, e := range c.fast {
			if e.passes(vals) {
				c.stats.CacheHits++
				return e.run(vals)
			}
		}
	}
	return c.trace(inputs, vals)
}

// trace runs fn on traced arguments.
func (c *Compiled) trace(inputs []*Tensor, vals []tensorData) ([]*Tensor, error) {
	start := time.Now()
	first := c.times == nil
	be := c.backend
	if c.eager {
		be = mustBackend(EagerBackend)
	}
	s := newSession(c, be, c.opts.Fullgraph)
	s.eager = c.eager
	types := c.argTypes(inputs, vals)
	args := make([]*Tensor, len(inputs))
	for i, v := range vals {
		args[i] = fromData(v)
		args[i].sess = s
	}
	g0 := s.newGraph(args, types)
	outs, fnErr := c.invoke(args)
	err := s.finish(outs, fnErr)
	c.last = s
	c.stats.GraphBreaks += len(s.breaks)
	if first {
		s.times.Trace = time.Since(start) - s.spent
		c.times = &s.times
	}
	if err != nil {
		return nil, err
	}
	if !s.eager && len(s.graphs) == 1 && len(s.breaks) == 0 && !g0.fresh && s.outsFrom(g0, outs) {
		c.addFast(g0, types, outs)
	}
	return outs, nil
}

// invoke calls fn with args and collects its tensor results. A panic in
// fn is returned as an error: it is user code.
func (c *Compiled) invoke(args []*Tensor) (outs []*Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("frontend: compiled function panicked: %v", r)
		}
	}()
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		in[i] = reflect.ValueOf(a)
	}
	res := c.fn.Call(in)
	if c.results.withE {
		if e := res[len(res)-1]; !e.IsNil() {
			err = e.Interface().(error)
		}
		res = res[:len(res)-1]
	}
	if c.results.n < 0 {
		outs = res[0].Interface().([]*Tensor)
	} else {
		for _, r := range res {
			outs = append(outs, r.Interface().(*Tensor))
		}
	}
	for i, o := range outs {
		if o == nil && err == nil {
			err = fmt.Errorf("frontend: result %d is nil", i)
		}
	}
	return outs, err
}

// collect records the traced function's error and its results' errors in
// the session and returns the session's error, if any.
func (s *session) collect(outs []*Tensor, fnErr error) error {
	if fnErr != nil {
		s.fail(fnErr)
	}
	for _, o := range outs {
		if o != nil && o.err != nil {
			s.fail(o.err)
		}
	}
	return s.err
}

// finish ends the session: the current graph runs with the results that
// are pending in it as outputs.
func (s *session) finish(outs []*Tensor, fnErr error) error {
	defer func() { s.active = false }()
	if err := s.collect(outs, fnErr); err != nil {
		return err
	}
	if g := s.cur; g != nil {
		var fromG []*Tensor
		for _, o := range outs {
			if o.g == g && !slices.Contains(fromG, o) {
				fromG = append(fromG, o)
			}
		}
		s.finalOuts = fromG
		if err := s.flush(g, fromG); err != nil {
			return err
		}
	}
	for _, o := range outs {
		// data, not value: a result on the GPU stays there until read.
		if _, err := o.data("result of a compiled function"); err != nil {
			return err
		}
	}
	return s.err
}

// outsFrom reports whether every result is an output of g, the only
// graph of the session.
func (s *session) outsFrom(g *graphTrace, outs []*Tensor) bool {
	if len(s.graphs) != 1 || s.graphs[0].Index != g.index {
		return false
	}
	for _, o := range outs {
		if !slices.Contains(s.finalOuts, o) {
			return false
		}
	}
	return true
}

// run compiles g (or finds it in the cache) and runs it: on the data
// itself, wherever it is, for a backend that keeps data on the GPU.
func (s *session) run(g *graphTrace) ([]tensorData, error) {
	exe, err := s.compile(g)
	if err != nil {
		return nil, err
	}
	return runExecutable(exe, g.inputs)
}

// compile returns the executable of g: cached by structure and guarded
// by sym guards for compiled functions, compiled afresh for lazy eager code.
func (s *session) compile(g *graphTrace) (Executable, error) {
	c := s.c
	if c == nil || s.eager {
		return s.backendCompile(s.backend, g)
	}
	key := fmt.Sprintf("%d:%x", g.index, g.fp.Sum64())
	inputs := shapeDtypes(g.inputs)
	for _, e := range c.cache[key] {
		if _, fail := e.guards.Check(inputs); fail == nil {
			c.stats.CacheHits++
			g.compiled = e
			return e.exe, nil
		}
	}
	if c.compiles[g.index] >= c.opts.RecompileLimit {
		if !c.eager {
			c.eager, c.stats.Eager = true, true
			warnf(topicRecompiles, "recompile limit (%d) reached for graph %d of %v; running it eagerly from now on", c.opts.RecompileLimit, g.index, c.fn.Type())
		}
		return s.backendCompile(mustBackend(EagerBackend), g)
	}
	c.compiles[g.index]++
	c.stats.Compiles++
	if c.compiles[g.index] > 1 {
		c.stats.Recompiles++
		logs.Printf(topicRecompiles, "recompiling graph %d of %v (compile %d of at most %d): %s", g.index, c.fn.Type(), c.compiles[g.index], c.opts.RecompileLimit, s.missReason(g, inputs))
	}
	guards, err := s.guard(g)
	if err != nil {
		return nil, err
	}
	logs.Printf(topicGuards, "graph %d of %v guarded by:\n%s", g.index, c.fn.Type(), indent(guards.String()))
	exe, err := s.backendCompile(s.backend, g)
	if err != nil {
		return nil, err
	}
	e := &cached{exe: exe, guards: guards}
	c.cache[key] = append(c.cache[key], e)
	c.latest[g.index] = e
	g.compiled = e
	return exe, nil
}

// missReason explains why graph g was not in the cache: the guards of the
// graph last compiled at its position that g's inputs fail (sym's Explain
// diff), or a change of structure.
func (s *session) missReason(g *graphTrace, inputs []sym.ShapeDtype) string {
	if e := s.c.latest[g.index]; e != nil {
		if diff := e.guards.Explain(inputs); diff != "" {
			return "guards failed:\n" + indent(strings.TrimSuffix(diff, "\n"))
		}
	}
	return "the graph's structure changed"
}

func (s *session) backendCompile(be backendEntry, g *graphTrace) (Executable, error) {
	graph := &Graph{Context: irContext(), Module: g.module, Func: ir.SymbolName(g.fn), Options: nil, times: &s.times}
	if s.c != nil {
		graph.Mode, graph.Options = s.c.opts.Mode, s.c.opts.BackendOptions
		if be.name != s.c.backend.name {
			graph.Options = nil // the eager fallback takes no options
		}
	}
	start := time.Now()
	before := s.times.Total()
	exe, err := be.b.Compile(graph)
	attributed := s.times.Total() - before
	s.times.Codegen += max(time.Since(start)-attributed, 0)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", be.name, err)
	}
	return exe, nil
}

// argTypes returns the types graph 0 gives the arguments: their static
// types, with the dims the dynamic policy picks as "?" (graph-symbolize-
// shapes turns them into symbols before the graph is compiled). Under
// DynamicAuto, the dims sym.AutoDynamic finds changed since the last call
// stay dynamic from then on.
func (c *Compiled) argTypes(inputs []*Tensor, vals []tensorData) []ir.Type {
	if len(c.dyn) < len(vals) {
		c.dyn = append(c.dyn, make([]map[int]bool, len(vals)-len(c.dyn))...)
	}
	shapes := make([][]int64, len(vals))
	for i, v := range vals {
		shapes[i] = slices.Clone(v.Shape())
	}
	if c.opts.Dynamic == DynamicAuto && !c.eager {
		for _, r := range sym.AutoDynamic(c.lastShapes, shapes) {
			if c.dyn[r.Arg][r.Dim] {
				continue
			}
			if c.dyn[r.Arg] == nil {
				c.dyn[r.Arg] = map[int]bool{}
			}
			c.dyn[r.Arg][r.Dim] = true
			logs.Printf(topicRecompiles, "automatic dynamic: argument %d dim %d changed from %d to %d; marking it dynamic", r.Arg, r.Dim, c.lastShapes[r.Arg][r.Dim], shapes[r.Arg][r.Dim])
		}
	}
	types := make([]ir.Type, len(vals))
	for i, v := range vals {
		shape := slices.Clone(shapes[i])
		if c.opts.Dynamic != DynamicFalse {
			for d, size := range shape {
				// Sizes 0 and 1 stay static (the 0/1 specialisation
				// policy of docs/dynamic-shapes.md): they change
				// broadcasting and emptiness.
				if size >= 2 && (c.opts.Dynamic == DynamicTrue || c.dyn[i][d] || slices.Contains(inputs[i].dyn, d)) {
					shape[d] = ir.Dynamic
				}
			}
		}
		types[i] = ir.TensorOf(shape, v.ElemType())
	}
	c.lastShapes = shapes
	return types
}

// fastEntry is a function compiled to one graph without breaks: a call
// whose arguments pass the graph's guards runs exe without running fn.
type fastEntry struct {
	guards   sym.Guards
	exe      Executable
	captured []tensorData     // values of the tensors fn captured, after the arguments
	outIdx   []int            // result i of fn is result outIdx[i] of exe
	scratch  []sym.ShapeDtype // the inputs as the guards see them, reused
}

// passes reports whether args (followed by the captured tensors) pass the
// entry's guards.
func (e *fastEntry) passes(args []tensorData) bool {
	e.scratch = e.scratch[:0]
	for _, v := range args {
		e.scratch = append(e.scratch, shapeDtype(v))
	}
	for _, v := range e.captured {
		e.scratch = append(e.scratch, shapeDtype(v))
	}
	_, fail := e.guards.Check(e.scratch)
	return fail == nil
}

func (e *fastEntry) run(args []tensorData) ([]*Tensor, error) {
	res, err := runExecutable(e.exe, append(slices.Clip(args), e.captured...))
	if err != nil {
		return nil, err
	}
	outs := make([]*Tensor, len(e.outIdx))
	for i, j := range e.outIdx {
		outs[i] = fromData(res[j])
	}
	return outs, nil
}

func (c *Compiled) addFast(g *graphTrace, types []ir.Type, outs []*Tensor) {
	if g.compiled == nil {
		return
	}
	e := &fastEntry{guards: g.compiled.guards, exe: g.compiled.exe, captured: slices.Clone(g.inputs[len(types):])}
	for _, o := range outs {
		e.outIdx = append(e.outIdx, slices.Index(c.last.finalOuts, o))
	}
	c.fast = append(c.fast, e)
}

// Print is a host callback: it writes t's dtype, shape and elements to
// standard output. Inside a compiled function it is a graph break.
func Print(t *Tensor) {
	if _, err := t.value("host callback (Print)"); err != nil {
		fmt.Println(t)
		return
	}
	fmt.Printf("%v %v\n", t, t.Float64s())
}
