package frontend

import (
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
// Loaded serves every batch size. It is safe for concurrent use; calls are
// serialized.
type Loaded struct {
	name    string
	backend string
	inputs  []ir.Type // the model's input types, with #graph.dims encodings
	weights []*interp.Tensor
	exe     Executable
	mu      sync.Mutex
}

// Load imports the model at path (a .onnx file; initializers become
// constants, dim_param sizes symbols: see docs/importers.md) and compiles
// it with opts.Backend (the default backend when empty) in opts.Mode.
//
//	m, err := frontend.Load("resnet18.onnx", frontend.Options{})
//	out, err := m.Call(frontend.Rand(1, 8, 3, 224, 224))
func Load(path string, opts Options) (*Loaded, error) {
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".onnx" {
		return nil, fmt.Errorf("frontend: Load: %s: unknown model format %q (want .onnx)", path, ext)
	}
	ctx := dialects.NewContext()
	mod, err := onnx.Import(ctx, path, onnx.Options{FuncName: "main"})
	if err != nil {
		return nil, fmt.Errorf("frontend: Load: %w", err)
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
	fn := ir.LookupSymbol(mod, ir.SymbolRef("main"))
	if fn == nil {
		return nil, fmt.Errorf("frontend: Load: %s: no @main", path)
	}
	ft, err := interp.FuncType(fn)
	if err != nil {
		return nil, fmt.Errorf("frontend: Load: %s: %w", path, err)
	}
	weights, err := liftConstants(fn)
	if err != nil {
		return nil, fmt.Errorf("frontend: Load: %s: %w", path, err)
	}
	g := &Graph{Context: ctx, Module: mod, Func: "main", Mode: opts.Mode, Options: opts.BackendOptions}
	exe, err := entry.b.Compile(g)
	if err != nil {
		return nil, fmt.Errorf("frontend: Load: %s: backend %s: %w", path, entry.name, err)
	}
	return &Loaded{name: filepath.Base(path), backend: entry.name, inputs: ft.Inputs, weights: weights, exe: exe}, nil
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
// sizes sharing a symbol must agree.
func (l *Loaded) Call(inputs ...*Tensor) ([]*Tensor, error) {
	if len(inputs) != len(l.inputs) {
		return nil, fmt.Errorf("frontend: %s takes %d inputs, got %d", l.name, len(l.inputs), len(inputs))
	}
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
		if want := ir.ElementTypeOf(l.inputs[i]); v.ElemType() != want {
			return nil, fmt.Errorf("frontend: %s: input %d has element type %s, want %s", l.name, i, v.ElemType(), want)
		}
		args[i], shapes[i] = v, v.Shape()
	}
	if _, err := graph.CheckShapes(l.inputs, shapes); err != nil {
		return nil, fmt.Errorf("frontend: %s: %w", l.name, err)
	}
	args = append(args, l.weights...)
	l.mu.Lock()
	res, err := l.exe.Run(args)
	l.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("frontend: %s: %w", l.name, err)
	}
	out := make([]*Tensor, len(res))
	for i, r := range res {
		out[i] = fromInterp(r)
	}
	return out, nil
}
