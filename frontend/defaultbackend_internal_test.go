package frontend

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cuda"
)

// TestDefaultBackend checks the backend an empty Options.Backend picks:
// nvptx exactly where the driver library loads, cpu elsewhere where its
// tools are installed, and that a default Compile runs either way.
func TestDefaultBackend(t *testing.T) {
	want := noGPUBackend()
	if cuda.Load() == nil {
		want = NVPTXBackend
	}
	if got := DefaultBackend(); got != want {
		t.Errorf("DefaultBackend() = %q, want %q", got, want)
	}
	if e := defaultBackendEntry(); e.name != want {
		t.Errorf("the default entry is %q, want %q", e.name, want)
	}
	c, err := Compile(func(x *Tensor) *Tensor { return x.Mul(x) }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Call(FromSlice([]float32{1, -2, 3}, 3))
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].Float32s(); len(got) != 3 || got[0] != 1 || got[1] != 4 || got[2] != 9 {
		t.Errorf("x·x = %v, want [1 4 9]", got)
	}
	if _, err := gpuRuntime(); err != nil {
		want = noGPUBackend() // the driver loads, the GPU does not open
	}
	if got := c.Backend(); got != want {
		t.Errorf("Compiled.Backend() = %q, want %q", got, want)
	}
}

// TestDefaultGPUBackendFallsBack checks the default backend of a machine
// whose driver loads but has no usable GPU: graphs run in the interpreter
// and one warning says why. (Here the GPU runtime's failure stands in for
// the missing device; where a GPU opens, the graph runs on it.)
func TestDefaultGPUBackendFallsBack(t *testing.T) {
	_, gpuErr := gpuRuntime()
	if gpuErr != nil && !errors.Is(gpuErr, ErrNoGPUBackend) {
		t.Fatalf("the GPU runtime failed otherwise than for want of a GPU: %v", gpuErr)
	}
	const name = "test-default-gpu"
	RegisterBackend(name, defaultGPUBackend{})
	defer func() {
		backendsMu.Lock()
		delete(backends, name)
		backendsMu.Unlock()
		noGPU.Store(false)
	}()
	var buf bytes.Buffer
	prev := logs.SetOutput(&buf)
	defer logs.SetOutput(prev)
	logs.Enable(topicPerfHints)
	defer logs.Disable()
	for i := range 2 {
		c, err := Compile(func(x *Tensor) *Tensor { return x.Add(x) }, Options{Backend: name})
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Call(FromSlice([]float32{1, 2}, 2))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := out[0].Float32s(); len(got) != 2 || got[0] != 2 || got[1] != 4 {
			t.Errorf("call %d: x+x = %v, want [2 4]", i, got)
		}
	}
	warnings := strings.Count(buf.String(), "no usable GPU")
	switch {
	case gpuErr != nil && warnings != 1:
		t.Errorf("without a GPU: %d warnings, want 1:\n%s", warnings, buf.String())
	case gpuErr == nil && warnings != 0:
		t.Errorf("with a GPU: %d warnings, want none:\n%s", warnings, buf.String())
	}
}
