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
	in       []reflect.Type // parameter types (the last one a slice when variadic)
	variadic bool
	results  resultShape
	opts     Options
	backend  backendEntry

	mu         sync.Mutex
	cache      map[string][]*cached // by graph position and structure
	latest     map[int]*cached      // the last graph compiled per position
	compiles   map[int]int          // compiled graphs per graph position
	dyn        []map[int]bool       // dims marked dynamic, per input tensor
	lastShapes [][]int64
	stats      Stats
	times      *CompileTimes
	last       *session
	disabled   bool
	// The recorded calls (replay.go), and the state of a replay, reused
	// from call to call.
	tapes    []*tape
	rp       replay
	rpLifted map[*Tensor]int32
}

// Stats counts what a compiled function did.
type Stats struct {
	Calls, Compiles, Recompiles, GraphBreaks, CacheHits int
	// Replays counts the calls that matched a recorded call and ran its
	// executable without recording a graph (replay.go).
	Replays int
	// Speculated counts the replays whose executable was queued before fn
	// ran and whose results were the call's; Dropped, the speculative runs
	// thrown away (speculate.go).
	Speculated, Dropped int
	// Eager is set once the recompile limit made a graph run eagerly.
	Eager bool
}

// resultShape says how fn returns its values.
type resultShape struct {
	types  []reflect.Type // the results, without a trailing error
	withE  bool           // a trailing error result
	simple bool           // every result is a *Tensor, or there is one []*Tensor
}

var (
	tensorType = reflect.TypeFor[*Tensor]()
	sliceType  = reflect.TypeFor[[]*Tensor]()
	errorType  = reflect.TypeFor[error]()
)

// Compile returns fn compiled with opts. fn is an ordinary Go function;
// its arguments and results are trees (see Invoke) of *Tensor and Go
// scalars, with an optional trailing error result: func(x, w *Tensor)
// *Tensor, func(...*Tensor) (*Tensor, *Tensor, error), func(m *Model, x
// *Tensor, train bool) (*Tensor, error), ….
//
// Every call runs fn. The tensor ops fn performs are recorded into
// graph-dialect graphs, compiled by the backend (cached by the graph's
// structure, its attributes and its inputs' types: a later call that
// records the same graph on inputs passing its guards reuses it) and run
// on the tensors the call read: arguments, tensors fn captures or reads
// from struct fields, all by their value at this call. So a Go value fn
// depends on (a captured bool, a learning rate, a loop count, a weight
// replaced by w = w.Sub(…)) is never stale: a changed value records a
// different graph, or feeds the same graph other inputs. A host read
// (Item, Float32s, …) of a tensor computed in the graph, or of one of its
// inputs, is a graph break. docs/frontend-state.md describes the design.
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
	if err := validateBackendOptions(be, opts); err != nil {
		return nil, err
	}
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return nil, fmt.Errorf("frontend: Compile needs a function, got %T", fn)
	}
	t := v.Type()
	c := &Compiled{
		fn: v, variadic: t.IsVariadic(), opts: opts, backend: be,
		cache: map[string][]*cached{}, latest: map[int]*cached{}, compiles: map[int]int{},
		rpLifted: map[*Tensor]int32{},
	}
	seen := map[reflect.Type]bool{}
	for i := range t.NumIn() {
		in := t.In(i)
		if err := checkTree(in, seen); err != nil {
			return nil, fmt.Errorf("frontend: argument %d of %v: %w", i, t, err)
		}
		c.in = append(c.in, in)
	}
	rs := resultShape{simple: true}
	n := t.NumOut()
	if n > 0 && t.Out(n-1) == errorType {
		rs.withE, n = true, n-1
	}
	for i := range n {
		out := t.Out(i)
		if err := checkTree(out, seen); err != nil {
			return nil, fmt.Errorf("frontend: result %d of %v: %w", i, t, err)
		}
		rs.types = append(rs.types, out)
		if out != tensorType && !(n == 1 && out == sliceType) {
			rs.simple = false
		}
	}
	c.results = rs
	if st, ok := be.b.(Starter); ok {
		st.Start() // e.g. open the GPU while the caller prepares its inputs
	}
	return c, nil
}

// simpleArgs reports whether fn takes only *Tensor arguments (or
// ...*Tensor), as Call needs.
func (c *Compiled) simpleArgs() bool {
	for i, in := range c.in {
		if in != tensorType && !(c.variadic && i == len(c.in)-1 && in == sliceType) {
			return false
		}
	}
	return true
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

// Call runs the compiled function on inputs and returns its tensor
// results, or the first error: a shape or dtype error found while tracing
// (located at the offending line of fn), a graph break refused by
// Fullgraph, a backend or run-time failure, or fn's own error. It is for
// functions of *Tensor arguments (or ...*Tensor) returning *Tensor
// results or one []*Tensor; Invoke takes any compiled function.
func (c *Compiled) Call(inputs ...*Tensor) ([]*Tensor, error) {
	if !c.simpleArgs() || !c.results.simple {
		return nil, fmt.Errorf("frontend: Call needs a function of tensors returning tensors, not %v: use Invoke", c.fn.Type())
	}
	nargs := len(c.in)
	if !c.variadic && len(inputs) != nargs || c.variadic && len(inputs) < nargs-1 {
		c.mu.Lock()
		c.stats.Calls++
		c.mu.Unlock()
		return nil, fmt.Errorf("frontend: compiled function takes %d arguments, got %d", nargs, len(inputs))
	}
	for i, t := range inputs {
		if t == nil {
			return nil, fmt.Errorf("frontend: argument %d is nil", i)
		}
	}
	args := make([]reflect.Value, len(inputs))
	for i, t := range inputs {
		args[i] = reflect.ValueOf(t)
	}
	res, err := c.call(args)
	if err != nil {
		return nil, err
	}
	if len(res) == 1 && res[0].Type() == sliceType {
		return res[0].Interface().([]*Tensor), nil
	}
	outs := make([]*Tensor, len(res))
	for i, r := range res {
		outs[i] = r.Interface().(*Tensor)
	}
	return outs, nil
}

// Invoke runs the compiled function on args and returns its results but
// the trailing error, which it returns as err. Arguments and results are
// trees: *Tensor, Go scalars (bool, integers, floats, strings), and
// structs (their exported fields), pointers, slices, arrays, maps (in the
// order of their sorted keys) and interfaces of them, such as a model's
// parameters or an optimizer's state. The tensors of the arguments are
// the graph's first inputs, in that order (their sizes are what the
// Dynamic policy makes symbolic); scalars are passed to fn, which runs on
// every call, so a changed scalar records a different graph where it
// matters. The tensors of the results are computed before Invoke returns.
//
//	step := frontend.MustCompile(func(m *Model, x *Tensor, lr float32) (*Tensor, error) { … }, opts)
//	res, err := step.Invoke(model, x, float32(0.1)) // res[0].(*Tensor) is the loss
func (c *Compiled) Invoke(args ...any) ([]any, error) {
	nargs := len(c.in)
	if !c.variadic && len(args) != nargs || c.variadic && len(args) < nargs-1 {
		c.mu.Lock()
		c.stats.Calls++
		c.mu.Unlock()
		return nil, fmt.Errorf("frontend: compiled function takes %d arguments, got %d", nargs, len(args))
	}
	in, err := c.values(args)
	if err != nil {
		return nil, err
	}
	res, err := c.call(in)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(res))
	for i, r := range res {
		out[i] = r.Interface()
	}
	return out, nil
}

// values converts Invoke's arguments, whose number was checked, to the
// values fn is called with.
func (c *Compiled) values(args []any) ([]reflect.Value, error) {
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		want := c.paramType(i)
		if a == nil {
			switch want.Kind() {
			case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map:
				in[i] = reflect.Zero(want)
				continue
			}
			return nil, fmt.Errorf("frontend: argument %d is nil, want %v", i, want)
		}
		v := reflect.ValueOf(a)
		if !v.Type().AssignableTo(want) {
			if !v.Type().ConvertibleTo(want) || !scalarKind(want.Kind()) || !scalarKind(v.Kind()) {
				return nil, fmt.Errorf("frontend: argument %d is %T, want %v", i, a, want)
			}
			v = v.Convert(want)
		}
		in[i] = v
	}
	return in, nil
}

// paramType is the type of argument i (the element type for the
// variadic part).
func (c *Compiled) paramType(i int) reflect.Type {
	if c.variadic && i >= len(c.in)-1 {
		return c.in[len(c.in)-1].Elem()
	}
	return c.in[i]
}

func scalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String, reflect.Complex64, reflect.Complex128:
		return false
	}
	return k >= reflect.Int && k <= reflect.Float64
}

// call runs fn on args: it checks the tensors of the arguments, traces fn
// into graphs, compiles or reuses them and runs them.
func (c *Compiled) call(args []reflect.Value) ([]reflect.Value, error) {
	unlock, err := c.lockCompiled()
	if err != nil {
		return nil, err
	}
	defer unlock()
	c.stats.Calls++
	leaves := treeLeaves(args)
	vals := make([]tensorData, len(leaves))
	for i, t := range leaves {
		v, err := t.data("argument of a compiled function")
		if err != nil {
			return nil, fmt.Errorf("frontend: argument tensor %d: %w", i, err)
		}
		vals[i] = v
	}
	if c.disabled || disabledAll.Load() {
		return c.runEager(args)
	}
	return c.trace(args, leaves, vals)
}

// trace runs fn on args, recording its ops.
func (c *Compiled) trace(args []reflect.Value, leaves []*Tensor, vals []tensorData) ([]reflect.Value, error) {
	start := time.Now()
	first := c.times == nil
	s := newSession(c, c.backend, c.opts.Fullgraph)
	defer s.end()
	if len(c.tapes) == 0 || !s.startReplay(leaves, vals) {
		s.newGraph(leaves, c.argTypes(leaves, vals))
	} else {
		s.speculate()
	}
	res, outs, fnErr := c.invoke(args)
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
	if !s.replayed && s.first != nil {
		c.addTape(s, s.first, len(leaves))
	}
	return res, nil
}

// runEager runs fn as plain Go code on tensors computed op by op (a
// disabled function).
func (c *Compiled) runEager(args []reflect.Value) ([]reflect.Value, error) {
	res, outs, err := c.invoke(args)
	if err != nil {
		return nil, err
	}
	for _, o := range outs {
		if _, err := o.data("result of a disabled compiled function"); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// invoke calls fn with args and collects its results (without the
// trailing error) and their tensors. A panic in fn is returned as an
// error: it is user code.
func (c *Compiled) invoke(args []reflect.Value) (res []reflect.Value, outs []*Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("frontend: compiled function panicked: %v", r)
		}
	}()
	res = c.fn.Call(args)
	if c.results.withE {
		if e := res[len(res)-1]; !e.IsNil() {
			err = e.Interface().(error)
		}
		res = res[:len(res)-1]
	}
	if c.results.simple {
		for i, r := range res {
			if r.Type() == tensorType && r.IsNil() && err == nil {
				err = fmt.Errorf("frontend: result %d is nil", i)
			}
			if r.Type() == sliceType {
				for j, t := range r.Interface().([]*Tensor) {
					if t == nil && err == nil {
						err = fmt.Errorf("frontend: result %d is nil", j)
					}
				}
			}
		}
	}
	outs = treeLeaves(res)
	return res, outs, err
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
	if err := s.collect(outs, fnErr); err != nil {
		return err
	}
	if s.rp != nil {
		done, err := s.finishReplay(outs)
		if done {
			s.replayed = true
			return err
		}
	}
	if g := s.cur; g != nil {
		var fromG []*Tensor
		for _, o := range outs {
			if o.g == g && !slices.Contains(fromG, o) {
				fromG = append(fromG, o)
			}
		}
		for _, m := range s.mutated {
			if m.t.g == g && !slices.Contains(fromG, m.t) {
				fromG = append(fromG, m.t)
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

// run compiles g (or finds it in the cache) and runs it: on the data
// itself, wherever it is, for a backend that keeps data on the GPU.
func (s *session) run(g *graphTrace) ([]tensorData, error) {
	if s.ahead {
		return nil, s.compileAhead(g)
	}
	exe, err := s.compile(g)
	if err != nil {
		return nil, err
	}
	s.ran = append(s.ran, ranGraph{exe: exe, inputs: g.inputs})
	return runExecutable(exe, g.inputs)
}

// compile returns the executable of g: cached by structure and guarded
// by sym guards for compiled functions, compiled afresh for lazy eager code.
func (s *session) compile(g *graphTrace) (Executable, error) {
	c := s.c
	if c == nil {
		return s.backendCompile(s.backend, g)
	}
	key := cacheKey(g)
	inputs := shapeDtypes(g.inputs)
	if e, err := c.lookup(key, g.index, inputs); err != nil {
		return nil, err
	} else if e != nil {
		c.stats.CacheHits++
		g.compiled = e
		return e.exe, nil
	}
	if c.compiles[g.index] >= c.opts.RecompileLimit {
		// The graphs compiled so far stay in the cache and keep serving
		// the calls that record them; this one runs eagerly.
		if !c.stats.Eager {
			c.stats.Eager = true
			warnf(topicRecompiles, "recompile limit (%d) reached for graph %d of %v; graphs not compiled yet run eagerly from now on (%s)", c.opts.RecompileLimit, g.index, c.fn.Type(), s.missReason(g, inputs))
		}
		return s.backendCompile(mustBackend(EagerBackend), g)
	}
	e, err := s.newEntry(g, key, inputs)
	if err != nil {
		return nil, err
	}
	exe, err := s.backendCompile(s.backend, g)
	if err != nil {
		c.dropEntry(key, g.index, e)
		return nil, err
	}
	e.exe = exe
	c.latest[g.index] = e
	g.compiled = e
	return exe, nil
}

// cacheKey is the key of g's entries in Compiled.cache: its position
// and structure.
func cacheKey(g *graphTrace) string { return fmt.Sprintf("%d:%x", g.index, g.fp.Sum64()) }

// lookup returns the entry of the cache under key whose guards inputs
// pass, or nil. An entry a Precompile is still compiling is waited for;
// one whose compile failed is dropped and its error returned: the call
// reports it as its own compile's, and the next call compiles again.
func (c *Compiled) lookup(key string, index int, inputs []sym.ShapeDtype) (*cached, error) {
	for _, e := range c.cache[key] {
		if _, fail := e.guards.Check(inputs); fail != nil {
			continue
		}
		if e.ready != nil {
			<-e.ready
			e.ready = nil
			if e.err != nil {
				c.dropEntry(key, index, e)
				return nil, e.err
			}
		}
		return e, nil
	}
	return nil, nil
}

// newEntry counts a compile of g (whose cache key is key, whose inputs
// are inputs), guards g and adds its entry, without an executable yet,
// to the cache.
func (s *session) newEntry(g *graphTrace, key string, inputs []sym.ShapeDtype) (*cached, error) {
	c := s.c
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
	e := &cached{guards: guards}
	c.cache[key] = append(c.cache[key], e)
	return e, nil
}

// dropEntry removes e, whose compile failed, from the cache under key
// (the compile still counts toward the recompile limit).
func (c *Compiled) dropEntry(key string, index int, e *cached) {
	c.cache[key] = slices.DeleteFunc(c.cache[key], func(x *cached) bool { return x == e })
	if len(c.cache[key]) == 0 {
		delete(c.cache, key)
	}
	if c.latest[index] == e {
		delete(c.latest, index)
	}
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
	if len(c.lastShapes) != len(vals) {
		c.lastShapes = nil // another structure: nothing to compare with
	}
	if len(c.dyn) < len(vals) {
		c.dyn = append(c.dyn, make([]map[int]bool, len(vals)-len(c.dyn))...)
	}
	shapes := make([][]int64, len(vals))
	for i, v := range vals {
		shapes[i] = slices.Clone(v.Shape())
	}
	if c.opts.Dynamic == DynamicAuto {
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

// Print is a host callback: it writes t's dtype, shape and elements to
// standard output. Inside a compiled function it is a graph break.
func Print(t *Tensor) {
	if _, err := t.value("host callback (Print)"); err != nil {
		fmt.Println(t)
		return
	}
	fmt.Printf("%v %v\n", t, t.Float64s())
}
