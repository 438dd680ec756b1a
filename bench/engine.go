package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strata-ir/strata/autodiff"
	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	_ "github.com/strata-ir/strata/passes/symbolize" // graph-symbolize-shapes
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/npy"
)

// Engine compiles workload modules for the Strata modes it supports.
type Engine interface {
	// Name identifies the engine in results ("nvptx", "interp").
	Name() string
	// Modes lists the modes Compile accepts, "default" first.
	Modes() []string
	// Compile compiles the entry function of module, made in ctx, for mode.
	// It may rewrite module.
	Compile(ctx *ir.Context, module *ir.Operation, entry, mode string) (Program, error)
}

// Program is a compiled entry function.
type Program interface {
	// Run calls the function once and returns its results. Arguments and
	// results are .npy arrays, bf16 as float32.
	Run(args []*npy.Array) ([]*npy.Array, error)
	// Time returns the median milliseconds of one call, measured after
	// warmup calls over iters calls.
	Time(args []*npy.Array, warmup, iters int) (float64, error)
	// Phases returns the seconds Compile spent per phase ("compile", "load",
	// …) as far as the engine knows them.
	Phases() map[string]float64
	// Kernels returns the number of kernels one call launches (0: unknown).
	Kernels() int
}

// Transferrer is a Program that knows how much of its last Run was moving
// data: converting the .npy arguments, uploading them, downloading and
// converting the results. A first call is timed without it, as
// torch.compile's first call is: inputs already on the device, outputs
// left there.
type Transferrer interface {
	TransferS() float64
}

// WallTimer is a Program that also times back-to-back calls with the host
// clock: the median of Time is device time, which hides the host's cost of
// a launch; WallTime returns the milliseconds per call a loop of calls
// sees.
type WallTimer interface {
	WallTime(args []*npy.Array, iters int) (float64, error)
}

// Estimator is a Program that estimates a call as
// triton.testing.do_bench does before it times one: the mean milliseconds
// of a cache clear and a call over n of them between two events. Its
// counts of warm-up and timed calls follow from that estimate, so a
// Program that has it times as many calls as do_bench does on PyTorch's
// side.
type Estimator interface {
	Estimate(args []*npy.Array, n int) (float64, error)
}

// Quiescer is an Engine that can wait for the work it queued earlier (the
// previous measurement's launches), so that a first call starts on an
// idle device instead of paying for what came before it.
type Quiescer interface {
	Quiesce() error
}

// LoadReporter is a Program that can say what loading its kernels cost:
// the modules it loaded at or after a time, the host clock around those
// loads and the driver's own PTX-compile time within them.
type LoadReporter interface {
	LoadsSince(t time.Time) (LoadReport, error)
}

// LoadReport sums module loads (see LoadReporter).
type LoadReport struct {
	// Modules is the number of modules loaded.
	Modules int
	// Wall is the host clock around the loads; JIT is the part the driver
	// reports as compiling (zero for a hit in its ComputeCache).
	Wall, JIT time.Duration
}

// Load parses an instance's program, verifies it, derives the gradient
// function and symbolizes shapes where the workload asks for it. It is the
// "trace" phase of a first call. Functions other than the entry are erased,
// so that engines compile only what is called.
func Load(in *Instance) (*ir.Context, *ir.Operation, error) {
	ctx := dialects.NewContext()
	name := in.Workload.Name + ".mlir"
	module, err := ir.Parse(ctx, in.Program, ir.ParseOptions{Filename: name})
	if err != nil {
		return nil, nil, err
	}
	if err := ir.Verify(module); err != nil {
		return nil, nil, err
	}
	if in.Grad != "" {
		fn := ir.NewSymTable(module).Lookup(in.Grad)
		if fn == nil {
			return nil, nil, fmt.Errorf("%s: no function @%s to differentiate", name, in.Grad)
		}
		// Every argument but the data (argument 0) is a weight.
		ft, err := interp.FuncType(fn)
		if err != nil {
			return nil, nil, err
		}
		wrt := make([]int, 0, len(ft.Inputs)-1)
		for i := 1; i < len(ft.Inputs); i++ {
			wrt = append(wrt, i)
		}
		if _, err := autodiff.Grad(ctx, fn, wrt); err != nil {
			return nil, nil, fmt.Errorf("%s: graph-autodiff: %w", name, err)
		}
		// @f_grad recomputes what it needs from f: f itself is not called.
		ir.NewSymTable(module).Erase(fn)
	}
	if len(in.Symbolize) > 0 {
		pm, err := passes.Parse(fmt.Sprintf("builtin.module(graph-symbolize-shapes{dims=%s})", strings.Join(in.Symbolize, ",")))
		if err != nil {
			return nil, nil, err
		}
		if err := pm.Run(ctx, module); err != nil {
			return nil, nil, fmt.Errorf("%s: graph-symbolize-shapes: %w", name, err)
		}
	}
	return ctx, module, nil
}

// Interp is the engine that runs programs in the reference interpreter,
// without lowering: the unit tests' oracle and a GPU-free dry run of the
// benchmark flow (with --size small).
type Interp struct{}

// Name implements Engine.
func (Interp) Name() string { return "interp" }

// Modes implements Engine.
func (Interp) Modes() []string { return []string{"default"} }

// Compile implements Engine.
func (Interp) Compile(_ *ir.Context, module *ir.Operation, entry, mode string) (Program, error) {
	if !slices.Contains(Interp{}.Modes(), mode) {
		return nil, fmt.Errorf("interp: no mode %q", mode)
	}
	in := interp.New(module)
	fn := in.Func(entry)
	if fn == nil {
		return nil, fmt.Errorf("interp: no function @%s", entry)
	}
	ft, err := interp.FuncType(fn)
	if err != nil {
		return nil, err
	}
	return &interpProgram{in: in, entry: entry, ft: ft}, nil
}

type interpProgram struct {
	in    *interp.Interpreter
	entry string
	ft    *ir.FunctionType
}

// argValues converts the .npy arguments of a call of entry to the
// interpreter values of its signature ft.
func argValues(entry string, ft *ir.FunctionType, args []*npy.Array) ([]interp.Value, error) {
	if len(args) != len(ft.Inputs) {
		return nil, fmt.Errorf("@%s takes %d arguments, got %d", entry, len(ft.Inputs), len(args))
	}
	vals := make([]interp.Value, len(args))
	for i, a := range args {
		v, err := interp.FromNPY(a, ft.Inputs[i])
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		vals[i] = v
	}
	return vals, nil
}

func (p *interpProgram) Run(args []*npy.Array) ([]*npy.Array, error) {
	vals, err := argValues(p.entry, p.ft, args)
	if err != nil {
		return nil, err
	}
	res, err := p.in.Call(p.entry, vals...)
	if err != nil {
		return nil, err
	}
	out := make([]*npy.Array, len(res))
	for i, r := range res {
		a, err := interp.ToNPY(r)
		if err != nil {
			return nil, fmt.Errorf("result %d: %w", i, err)
		}
		out[i] = a
	}
	return out, nil
}

// Time measures with the host clock: the interpreter is synchronous.
func (p *interpProgram) Time(args []*npy.Array, warmup, iters int) (float64, error) {
	for range warmup {
		if _, err := p.Run(args); err != nil {
			return 0, err
		}
	}
	ms := make([]float64, 0, iters)
	for range iters {
		t0 := time.Now()
		if _, err := p.Run(args); err != nil {
			return 0, err
		}
		ms = append(ms, float64(time.Since(t0).Nanoseconds())/1e6)
	}
	return Median(ms), nil
}

func (p *interpProgram) Phases() map[string]float64 { return nil }
func (p *interpProgram) Kernels() int               { return 0 }

// Median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// engines builds each engine by name; NewEngine picks from it.
var engines = map[string]func() (Engine, error){
	"interp": func() (Engine, error) { return Interp{}, nil },
}

// EngineNames lists the engines NewEngine knows, sorted.
func EngineNames() []string {
	names := make([]string, 0, len(engines))
	for n := range engines {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// NewEngine returns the engine with the given name.
func NewEngine(name string) (Engine, error) {
	mk, ok := engines[name]
	if !ok {
		return nil, fmt.Errorf("no engine %q (have %s)", name, strings.Join(EngineNames(), ", "))
	}
	return mk()
}
