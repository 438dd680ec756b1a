package frontend

import (
	"errors"

	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// ErrPTXOnly is the error of every call of a graph compiled by PTXOnly's
// backend: its code was generated, not run.
var ErrPTXOnly = errors.New("the graph's PTX was generated, not run (frontend.PTXOnly)")

// PTXOnlyOptions configure PTXOnly.
type PTXOnlyOptions struct {
	// Major and Minor are the compute capability the kernels are generated
	// for, as the nvptx backend generates them for an open device of that
	// capability (9.0: the H200's wgmma kernels). 0.0 is the backend's
	// choice without a device: kernels every target runs.
	Major, Minor int
	// Libraries takes cuBLASLt and cuDNN to load, as on a GPU host, so
	// that the matmuls and convolutions the policy gives them become
	// library calls (autotune.AssumedConfig); false takes them not to.
	Libraries bool
	// Keep, when set, receives each graph with its program (its PTX and
	// launch plans) and the time its passes and code generation took. It
	// may be called from several goroutines at once.
	Keep func(g *Graph, prog *exec.Program, times CompileTimes)
}

// PTXOnly returns a backend that does the nvptx backend's host work for
// each graph, on a machine with or without a GPU: the passes and the code
// generation to PTX, for the device opts describes and with the options
// the nvptx backend takes (ptx_backend, ptx_target). It loads and runs
// nothing: every call of a compiled graph fails with ErrPTXOnly, once its
// compile has been timed (Compiled.CompileTimes: trace, passes, codegen)
// and handed to opts.Keep. It lets a program's first call be measured and
// its PTX inspected without a device.
func PTXOnly(opts PTXOnlyOptions) Backend {
	capability := [2]int{opts.Major, opts.Minor}
	return ptxOnlyBackend{opts: opts, b: nvptxBackend{capability: &capability, libraries: &opts.Libraries}}
}

// ptxOnlyBackend is PTXOnly's backend.
type ptxOnlyBackend struct {
	opts PTXOnlyOptions
	b    nvptxBackend
}

// Compile implements Backend.
func (p ptxOnlyBackend) Compile(g *Graph) (Executable, error) {
	mode, err := exec.ParseMode(string(g.Mode))
	if err != nil {
		return nil, err
	}
	own := &CompileTimes{}
	outer := g.times
	g.times = own
	release := holdGC()
	prog, _, err := p.b.generate(g, mode)
	release()
	g.times = outer
	if outer != nil {
		outer.Passes += own.Passes
		outer.Codegen += own.Codegen
	}
	if err != nil {
		return nil, err
	}
	if p.opts.Keep != nil {
		p.opts.Keep(g, prog, *own)
	}
	return ExecutableFunc(func([]*interp.Tensor) ([]*interp.Tensor, error) { return nil, ErrPTXOnly }), nil
}

// Describe implements Describer.
func (p ptxOnlyBackend) Describe() string {
	return "generates the nvptx backend's PTX without a device and runs nothing"
}

// concurrentCompile implements concurrentCompiler: as nvptxBackend, and
// Keep may be called from several goroutines at once.
func (ptxOnlyBackend) concurrentCompile() {}

// trainingLayout implements trainingLayout: as nvptxBackend.
func (p ptxOnlyBackend) trainingLayout(g *Graph) string { return p.b.trainingLayout(g) }
