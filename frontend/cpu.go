package frontend

import (
	"errors"
	"fmt"
	"sync"

	"github.com/strata-ir/strata/passes"
	_ "github.com/strata-ir/strata/passes/lower" // lower-to-loop
	"github.com/strata-ir/strata/runtime/cpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// CPUBackend is the name of the backend that compiles graphs for the host
// CPU (targets/cpu, runtime/cpu).
const CPUBackend = "cpu"

// LowerToLoopPipeline is the pipeline the cpu backend lowers graphs with.
const LowerToLoopPipeline = "builtin.module(lower-to-loop)"

// cpuBackend lowers graphs to the loop level, compiles every nest into a
// vectorized host kernel with LLVM (opt, llc and the system linker) and
// runs them on all cores. Where the tools are missing it says so once and
// runs graphs in the interpreter; a graph it cannot compile runs in the
// interpreter with a warning naming the reason.
type cpuBackend struct{}

func (cpuBackend) Describe() string {
	return "lowers with lower-to-loop, compiles the kernels for this CPU with LLVM (opt, llc, gcc) into a cached shared library and runs them on every core (options: workers N); without the tools it runs graphs in the interpreter, with one warning"
}

// cpuToolsWarning is printed once a process when the tools are missing.
var cpuToolsWarning sync.Once

// ValidateOptions implements OptionValidator: the one option, workers,
// bounds the goroutines a kernel runs on (0: GOMAXPROCS).
func (cpuBackend) ValidateOptions(opts map[string]any) error {
	_, err := cpuWorkers(opts)
	return err
}

func cpuWorkers(opts map[string]any) (int, error) {
	workers := 0
	for k, v := range opts {
		switch k {
		case "workers":
			n, ok := v.(int)
			if !ok || n < 0 {
				return 0, fmt.Errorf("cpu backend option workers must be a non-negative int, got %v", v)
			}
			workers = n
		default:
			return 0, fmt.Errorf("cpu backend has no option %q (it takes: workers)", k)
		}
	}
	return workers, nil
}

func (cpuBackend) Compile(g *Graph) (Executable, error) {
	workers, err := cpuWorkers(g.Options)
	if err != nil {
		return nil, err
	}
	// The interpreter, where it runs instead, takes none of the options.
	interpret := func() (Executable, error) {
		g.Options = nil
		return mustBackend(InterpBackend).b.Compile(g)
	}
	if _, err := cpu.FindTools(); err != nil {
		cpuToolsWarning.Do(func() {
			warnf(topicPerfHints, "the cpu backend runs graphs in the interpreter: %v", err)
		})
		return interpret()
	}
	// The interpreter fallback needs the graph as it is.
	graph := g.Module.Clone(nil)
	err = g.Time(PhasePasses, func() error {
		pm, err := passes.Parse(LowerToLoopPipeline)
		if err != nil {
			return err
		}
		return pm.Run(g.Context, g.Module)
	})
	var prog *cpu.Program
	if err == nil {
		err = g.Time(PhaseCodegen, func() (err error) { prog, err = cpu.Compile(g.Module); return err })
	}
	if err != nil {
		if errors.Is(err, cpu.ErrNoTools) {
			return nil, err
		}
		warnf(topicPerfHints, "the cpu backend runs @%s in the interpreter: %v", g.Func, err)
		g.Module = graph
		return interpret()
	}
	prog.Workers = workers
	name := g.Func
	return ExecutableFunc(func(inputs []*interp.Tensor) ([]*interp.Tensor, error) {
		return prog.Run(name, inputs)
	}), nil
}

// cpuToolsPresent reports, once a process, whether the cpu backend's
// tools are installed.
var cpuToolsPresent = sync.OnceValue(func() bool {
	_, err := cpu.FindTools()
	return err == nil
})

func init() {
	RegisterBackend(CPUBackend, cpuBackend{})
}
