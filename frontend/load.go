package frontend

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/importers/onnx"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// Loaded is a model file imported into the graph dialect and compiled by a
// backend: the Go entry point for exported models (ONNX), with no Python
// and no tracing. Its arguments keep the model's symbolic sizes, so one
// Loaded serves every batch size. A model whose symbolic sizes the import
// cannot keep (onnx.ErrSymbolicSizes: pooling over dynamic spatial sizes,
// a reshape to several of them) is imported and compiled again for each
// new set of input sizes, as irc run does. It is safe for concurrent use;
// calls are serialized.
type Loaded struct {
	name    string
	backend string
	path    string
	entry   backendEntry
	opts    Options
	model   *compiledModel // the symbolic import; nil when sized
	// Per input sizes (onnx.DimsFor's dim_params), when the import needs
	// static sizes: graphInputs are the model's inputs (no weights).
	graphInputs *onnx.Model
	sized       map[string]*compiledModel
	mu          sync.Mutex
}

// compiledModel is one import of the model, compiled.
type compiledModel struct {
	inputs  []ir.Type // the model's input types, with #graph.dims encodings
	weights []*interp.Tensor
	exe     Executable
}

// Load imports the model at path (a .onnx file; initializers become
// constants, dim_param sizes symbols: see docs/importers.md) and compiles
// it with opts.Backend (the default backend when empty) in opts.Mode. A
// model whose import needs static sizes (onnx.ErrSymbolicSizes) is
// imported and compiled at the first call of each set of input sizes
// instead (see Loaded).
//
//	m, err := frontend.Load("resnet18.onnx", frontend.Options{})
//	out, err := m.Call(frontend.Rand(1, 8, 3, 224, 224))
func Load(path string, opts Options) (*Loaded, error) {
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".onnx" {
		return nil, fmt.Errorf("frontend: Load: %s: unknown model format %q (want .onnx)", path, ext)
	}
	if opts.Mode == "" {
		opts.Mode = ModeDefault
	}
	entry, err := lookupBackend(opts.Backend)
	if err != nil {
		return nil, err
	}
	if st, ok := entry.b.(Starter); ok {
		st.Start()
	}
	l := &Loaded{name: filepath.Base(path), backend: entry.name, path: path, entry: entry, opts: opts}
	l.model, err = l.compile(nil)
	if errors.Is(err, onnx.ErrSymbolicSizes) {
		// Imported per input sizes at the first call of each.
		m, rerr := onnx.ReadModel(path)
		if rerr != nil {
			return nil, fmt.Errorf("frontend: Load: %w", rerr)
		}
		l.graphInputs = &onnx.Model{Graph: &onnx.Graph{Inputs: m.Graph.Inputs}}
		for _, t := range m.Graph.Initializers { // their names: DimsFor skips them
			l.graphInputs.Graph.Initializers = append(l.graphInputs.Graph.Initializers, &onnx.Tensor{Name: t.Name})
		}
		l.sized = map[string]*compiledModel{}
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// compile imports the model with dims (nil: symbolic) and compiles it.
func (l *Loaded) compile(dims map[string]int64) (*compiledModel, error) {
	ctx := dialects.NewContext()
	mod, err := onnx.Import(ctx, l.path, onnx.Options{FuncName: "main", Dims: dims})
	if err != nil {
		return nil, fmt.Errorf("frontend: Load: %w", err)
	}
	fn := ir.LookupSymbol(mod, ir.SymbolRef("main"))
	if fn == nil {
		return nil, fmt.Errorf("frontend: Load: %s: no @main", l.path)
	}
	ft, err := interp.FuncType(fn)
	if err != nil {
		return nil, fmt.Errorf("frontend: Load: %s: %w", l.path, err)
	}
	weights, err := liftConstants(fn)
	if err != nil {
		return nil, fmt.Errorf("frontend: Load: %s: %w", l.path, err)
	}
	g := &Graph{Context: ctx, Module: mod, Func: "main", Mode: l.opts.Mode, Options: l.opts.BackendOptions}
	exe, err := l.entry.b.Compile(g)
	if err != nil {
		return nil, fmt.Errorf("frontend: Load: %s: backend %s: %w", l.path, l.entry.name, err)
	}
	return &compiledModel{inputs: ft.Inputs, weights: weights, exe: exe}, nil
}

// liftConstants lifts fn's weights to arguments (onnx.LiftWeights) and
// returns the tensors to bind to them.
func liftConstants(fn *ir.Operation) ([]*interp.Tensor, error) {
	ds, err := onnx.LiftWeights(fn)
	if err != nil {
		return nil, err
	}
	weights := make([]*interp.Tensor, len(ds))
	for i, d := range ds {
		if weights[i], err = interp.FromBits(d.Type.ElementType(), d.Type.Shape(), d.Bits); err != nil {
			return nil, err
		}
	}
	return weights, nil
}

// Backend names the backend that compiled the model.
func (l *Loaded) Backend() string { return l.backend }

// Call runs the model on inputs (in the order of the model's graph
// inputs) and returns its outputs. Inputs must have the model's element
// types and static sizes; symbolic sizes take the inputs' sizes, and
// sizes sharing a symbol must agree. A model imported per input sizes
// (see Loaded) is imported and compiled at the first call of new sizes.
func (l *Loaded) Call(inputs ...*Tensor) ([]*Tensor, error) {
	args := make([]*interp.Tensor, len(inputs))
	shapes := make([][]int64, len(inputs))
	for i, t := range inputs {
		if t == nil {
			return nil, fmt.Errorf("frontend: %s: input %d is nil", l.name, i)
		}
		v, err := t.value("input of a loaded model")
		if err != nil {
			return nil, err
		}
		args[i], shapes[i] = v, v.Shape()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	m, err := l.forSizes(shapes)
	if err != nil {
		return nil, err
	}
	if len(inputs) != len(m.inputs) {
		return nil, fmt.Errorf("frontend: %s takes %d inputs, got %d", l.name, len(m.inputs), len(inputs))
	}
	for i, v := range args {
		if want := ir.ElementTypeOf(m.inputs[i]); v.ElemType() != want {
			return nil, fmt.Errorf("frontend: %s: input %d has element type %s, want %s", l.name, i, v.ElemType(), want)
		}
	}
	if _, err := graph.CheckShapes(m.inputs, shapes); err != nil {
		return nil, fmt.Errorf("frontend: %s: %w", l.name, err)
	}
	res, err := m.exe.Run(append(args, m.weights...))
	if err != nil {
		return nil, fmt.Errorf("frontend: %s: %w", l.name, err)
	}
	out := make([]*Tensor, len(res))
	for i, r := range res {
		out[i] = fromInterp(r)
	}
	return out, nil
}

// forSizes is the compiled model for inputs of the given shapes: the
// symbolic one, or the import for those sizes (made at their first call).
func (l *Loaded) forSizes(shapes [][]int64) (*compiledModel, error) {
	if l.model != nil {
		return l.model, nil
	}
	dims, err := onnx.DimsFor(l.graphInputs, shapes)
	if err != nil {
		return nil, fmt.Errorf("frontend: %s: %w", l.name, err)
	}
	key := fmt.Sprint(dims) // fmt prints maps in key order
	if m, ok := l.sized[key]; ok {
		return m, nil
	}
	m, err := l.compile(dims)
	if err != nil {
		return nil, err
	}
	l.sized[key] = m
	return m, nil
}
