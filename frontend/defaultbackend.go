package frontend

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/strata-ir/strata/runtime/cuda"
)

// DefaultBackend names the backend of Options with an empty Backend on
// this machine: nvptx where the CUDA driver library loads, cpu elsewhere
// when its LLVM tools are installed, interp otherwise (DESIGN §9 and §12).
// A driver without a usable device is found only when the GPU opens, at
// the first graph's compile; the graphs of a default Compile then run on
// the cpu backend (or in the interpreter), with one warning. A Backend
// named explicitly never falls back: nvptx without a GPU is an error
// wrapping ErrNoGPUBackend.
func DefaultBackend() string {
	if driverLoads() {
		return NVPTXBackend
	}
	return noGPUBackend()
}

// noGPUBackend is the default backend without a GPU: cpu when its tools
// are present, interp otherwise.
func noGPUBackend() string {
	if cpuToolsPresent() {
		return CPUBackend
	}
	return InterpBackend
}

// driverLoads reports, once a process, whether libcuda loads (a dlopen,
// without initialising the driver).
var driverLoads = sync.OnceValue(func() bool { return cuda.Load() == nil })

// noGPU is set when the default backend found no usable GPU.
var noGPU atomic.Bool

// defaultGPUBackend is the default backend where the driver loads: nvptx,
// or the interp backend once opening the GPU has failed.
type defaultGPUBackend struct{}

func (defaultGPUBackend) Start() { nvptxBackend{}.Start() }

func (defaultGPUBackend) Describe() string { return nvptxBackend{}.Describe() }

// Compile waits for the GPU first (as PhaseDevice), so that a machine
// without one does not run the GPU passes before finding out.
func (defaultGPUBackend) Compile(g *Graph) (Executable, error) {
	if !noGPU.Load() {
		err := g.Time(PhaseDevice, func() error { _, err := gpuRuntime(); return err })
		switch {
		case errors.Is(err, ErrNoGPUBackend):
			if noGPU.CompareAndSwap(false, true) {
				warnf(topicPerfHints, "no usable GPU (%v): the default backend runs graphs on the %s backend", err, noGPUBackend())
			}
		case err != nil:
			return nil, err
		default:
			return nvptxBackend{}.Compile(g)
		}
	}
	return mustBackend(noGPUBackend()).b.Compile(g)
}

// trainingLayout implements trainingLayout: the nvptx backend's, none
// once opening the GPU has failed (the interp backend's graphs stay as
// traced).
func (defaultGPUBackend) trainingLayout(g *Graph) string {
	if noGPU.Load() {
		return ""
	}
	return nvptxBackend{}.trainingLayout(g)
}

// defaultBackendEntry is the entry of the backend an empty Backend picks.
func defaultBackendEntry() backendEntry {
	if driverLoads() {
		return backendEntry{NVPTXBackend, defaultGPUBackend{}}
	}
	return mustBackend(noGPUBackend())
}
