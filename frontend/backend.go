package frontend

import (
	"fmt"
	"sort"
	"sync"
	"time"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	_ "github.com/strata-ir/strata/passes/decompose" // graph-decompose, for the interp pipeline
	"github.com/strata-ir/strata/runtime/interp"
)

// Backend compiles captured graphs. Compile is called once per distinct
// graph and input types (the frontend caches what it returns); the
// Executable then runs on every call whose inputs pass the graph's guards.
//
// A backend may also implement OpSupporter, to make the frontend break the
// graph around ops it cannot compile, and Describer, for ListBackends.
type Backend interface {
	Compile(g *Graph) (Executable, error)
}

// OpSupporter is implemented by backends that compile only some ops.
type OpSupporter interface {
	// SupportsOp reports whether the backend compiles ops named name
	// ("graph.sin"). Unsupported ops are run by the eager backend between
	// two graphs (a graph break).
	SupportsOp(name string) bool
}

// Describer is implemented by backends that describe themselves for
// ListBackends and irc --list-backends.
type Describer interface {
	Describe() string
}

// Starter is implemented by backends with a slow one-time set-up, such as
// the nvptx backend's opening of the GPU (driver and context, about 0.2 s
// on the H200). Compile calls Start when it selects the backend, so that
// the set-up runs in the background while the program prepares its first
// call, as a PyTorch program starts CUDA when it makes its first CUDA
// tensor. Start must return at once; the backend's Compile waits for the
// set-up and attributes the wait to PhaseDevice.
type Starter interface {
	Start()
}

// StartBackend starts backend's one-time set-up (Starter) in the
// background, as Compile would on its first use of the backend: a
// program calls it first thing, as a PyTorch program imports torch (which
// loads CUDA's libraries) before it builds its model, so that the set-up
// overlaps the model's construction too. An unknown backend is an error;
// one without a set-up does nothing.
func StartBackend(backend string) error {
	entry, err := lookupBackend(backend)
	if err != nil {
		return err
	}
	if st, ok := entry.b.(Starter); ok {
		st.Start()
	}
	return nil
}

// Executable runs a compiled graph on concrete inputs, in the order of the
// graph function's arguments, and returns its results in order.
type Executable interface {
	Run(inputs []*interp.Tensor) ([]*interp.Tensor, error)
}

// BackendFunc adapts a function to Backend.
type BackendFunc func(g *Graph) (Executable, error)

// Compile implements Backend.
func (f BackendFunc) Compile(g *Graph) (Executable, error) { return f(g) }

// ExecutableFunc adapts a function to Executable.
type ExecutableFunc func(inputs []*interp.Tensor) ([]*interp.Tensor, error)

// Run implements Executable.
func (f ExecutableFunc) Run(inputs []*interp.Tensor) ([]*interp.Tensor, error) { return f(inputs) }

// Graph is what a backend compiles: a module holding one graph-dialect
// func.func, with the options of the Compile call. The backend may
// rewrite Module in place.
type Graph struct {
	Context *ir.Context
	Module  *ir.Operation
	// Func is the name of the function to compile (graph0, graph1, …: the
	// position of the graph in its function, counting graph breaks).
	Func string
	Mode Mode
	// Options are Options.BackendOptions, for the backend to interpret.
	Options map[string]any
	times   *CompileTimes
}

// Phase is a part of compilation that CompileTimes reports.
type Phase uint8

// The phases of a first call. Trace is measured by the frontend; backends
// attribute their time to the others with Graph.Time (time they do not
// attribute counts as Codegen). PhaseDevice is waiting for the backend's
// device to open (see Starter).
const (
	PhaseTrace Phase = iota
	PhasePasses
	PhaseCodegen
	PhaseLoad
	PhaseDevice
)

// Time runs f and adds its duration to phase.
func (g *Graph) Time(phase Phase, f func() error) error {
	start := time.Now()
	err := f()
	if g.times != nil {
		g.times.add(phase, time.Since(start))
	}
	return err
}

// CompileTimes splits the first call of a compiled function into its
// phases: recording the graphs (Trace), running passes, generating code,
// loading it (the nvptx backend: the driver's JIT of the PTX) and waiting
// for the device to open (Device: once a process, started in the
// background by Compile, and zero when it was open by the first call).
// Running the compiled graphs is not included.
type CompileTimes struct {
	Trace, Passes, Codegen, Load, Device time.Duration
}

// merge adds the phases of o to ct's.
func (ct *CompileTimes) merge(o CompileTimes) {
	ct.Trace += o.Trace
	ct.Passes += o.Passes
	ct.Codegen += o.Codegen
	ct.Load += o.Load
	ct.Device += o.Device
}

func (ct *CompileTimes) add(p Phase, d time.Duration) {
	switch p {
	case PhaseTrace:
		ct.Trace += d
	case PhasePasses:
		ct.Passes += d
	case PhaseCodegen:
		ct.Codegen += d
	case PhaseLoad:
		ct.Load += d
	case PhaseDevice:
		ct.Device += d
	}
}

// Total returns the sum of the phases.
func (ct CompileTimes) Total() time.Duration {
	return ct.Trace + ct.Passes + ct.Codegen + ct.Load + ct.Device
}

// String prints the phases.
func (ct CompileTimes) String() string {
	return fmt.Sprintf("trace %v, passes %v, codegen %v, load %v, device %v (total %v)",
		ct.Trace, ct.Passes, ct.Codegen, ct.Load, ct.Device, ct.Total())
}

// Names of the built-in backends.
const (
	EagerBackend    = "eager"
	AOTEagerBackend = "aot_eager"
	InterpBackend   = "interp"
	NVPTXBackend    = "nvptx"
)

// DefaultPipeline is the pass pipeline of the interp backend (its
// "pipeline" backend option replaces it).
const DefaultPipeline = "builtin.module(func.func(graph-decompose,canonicalize,cse))"

// backendEntry is a backend with the name it was picked by.
type backendEntry struct {
	name string
	b    Backend
}

// supportsGraphOp says whether the backend compiles "graph." + name (every
// backend that is no OpSupporter does), building the name once per op
// rather than per call: a replayed op's hot path asks it.
func (e backendEntry) supportsGraphOp(name string) bool {
	s, ok := e.b.(OpSupporter)
	if !ok {
		return true
	}
	full, ok := graphOpNames.Load(name)
	if !ok {
		full, _ = graphOpNames.LoadOrStore(name, "graph."+name)
	}
	return s.SupportsOp(full.(string))
}

// graphOpNames caches "graph." + name by name.
var graphOpNames sync.Map

var (
	backendsMu sync.RWMutex
	backends   = map[string]Backend{}
)

// RegisterBackend makes b available as Options.Backend = name, replacing
// any backend of that name.
func RegisterBackend(name string, b Backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	backends[name] = b
}

// LookupBackend returns the backend registered as name.
func LookupBackend(name string) (Backend, bool) {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	b, ok := backends[name]
	return b, ok
}

func lookupBackend(name string) (backendEntry, error) {
	if name == "" {
		return defaultBackendEntry(), nil
	}
	b, ok := LookupBackend(name)
	if !ok {
		return backendEntry{}, fmt.Errorf("frontend: unknown backend %q (registered: %v)", name, backendNames())
	}
	return backendEntry{name, b}, nil
}

func mustBackend(name string) backendEntry {
	e, err := lookupBackend(name)
	if err != nil {
		panic(err) // built-in backends are registered in init
	}
	return e
}

func backendNames() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BackendInfo describes a registered backend.
type BackendInfo struct {
	Name, Doc string
}

// ListBackends returns the registered backends, sorted by name.
func ListBackends() []BackendInfo {
	var out []BackendInfo
	for _, n := range backendNames() {
		b, _ := LookupBackend(n)
		doc := "user-registered backend"
		if d, ok := b.(Describer); ok {
			doc = d.Describe()
		}
		out = append(out, BackendInfo{n, doc})
	}
	return out
}

// interpBackend runs graphs in the reference interpreter, after pipeline
// (none for eager).
type interpBackend struct {
	doc      string
	pipeline string
}

func (b interpBackend) Describe() string { return b.doc }

func (b interpBackend) Compile(g *Graph) (Executable, error) {
	pipeline := b.pipeline
	for k, v := range g.Options {
		switch k {
		case "pipeline":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("backend option pipeline must be a string, got %T", v)
			}
			pipeline = s
		default:
			return nil, fmt.Errorf("backend has no option %q (it takes: pipeline)", k)
		}
	}
	if pipeline != "" {
		err := g.Time(PhasePasses, func() error {
			pm, err := passes.Parse(pipeline)
			if err != nil {
				return err
			}
			return pm.Run(g.Context, g.Module)
		})
		if err != nil {
			return nil, fmt.Errorf("running %s: %w", pipeline, err)
		}
	}
	var in *interp.Interpreter
	_ = g.Time(PhaseLoad, func() error {
		in = interp.New(g.Module)
		return nil
	})
	name := g.Func
	params := paramTypes(g.Module, name)
	return ExecutableFunc(func(inputs []*interp.Tensor) ([]*interp.Tensor, error) {
		args := make([]interp.Value, len(inputs))
		for i, t := range inputs {
			args[i] = asParam(t, params, i)
		}
		res, err := in.Call(name, args...)
		if err != nil {
			return nil, err
		}
		out := make([]*interp.Tensor, len(res))
		for i, r := range res {
			if out[i], err = asTensor(r); err != nil {
				return nil, fmt.Errorf("result %d: %w", i, err)
			}
		}
		return out, nil
	}), nil
}

// paramTypes returns the parameter types of the function name in module,
// after the backend's passes (nil when there is no such function).
func paramTypes(module *ir.Operation, name string) []ir.Type {
	var params []ir.Type
	module.Walk(func(op *ir.Operation) bool {
		if params == nil && op.Name() == funcs.OpFunc && ir.SymbolName(op) == name {
			if ft := funcs.Type(op); ft != nil {
				params = ft.Inputs
			}
		}
		return params == nil
	})
	return params
}

// asParam passes input i as a buffer where a lowered function (one that
// lower-to-loop or lower-to-gpu rewrote to take memrefs) expects one.
func asParam(t *interp.Tensor, params []ir.Type, i int) interp.Value {
	if i < len(params) {
		if _, ok := params[i].(*ir.MemRefType); ok {
			return interp.BufferFromTensor(t)
		}
	}
	return t
}

// asTensor reads a result: a tensor, or a buffer's elements.
func asTensor(v interp.Value) (*interp.Tensor, error) {
	switch v := v.(type) {
	case *interp.Tensor:
		return v, nil
	case *interp.Buffer:
		return v.Tensor()
	}
	return nil, fmt.Errorf("%v is neither a tensor nor a buffer", v)
}

func init() {
	RegisterBackend(EagerBackend, interpBackend{doc: "captures each graph and runs it op by op in the reference interpreter, without passes"})
	RegisterBackend(AOTEagerBackend, interpBackend{doc: "as eager; for Grad and ValueAndGrad, captures the joint forward and backward graph with autodiff, partitions it into a forward and a backward pass, and interprets both"})
	RegisterBackend(InterpBackend, interpBackend{doc: "runs " + DefaultPipeline + " and then the reference interpreter (the default where neither a GPU nor LLVM's tools are present)", pipeline: DefaultPipeline})
	RegisterBackend(NVPTXBackend, nvptxBackend{})
}
