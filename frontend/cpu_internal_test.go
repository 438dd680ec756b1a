package frontend

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cpu"
)

// mlpSoftmax is a small model for the cpu backend tests: a matmul with a
// fused bias and relu, then a row softmax.
func mlpSoftmax(w, b *Tensor) func(x *Tensor) *Tensor {
	return func(x *Tensor) *Tensor { return x.MatMul(w).Add(b).Relu().Softmax(-1) }
}

func closeTo(t *testing.T, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d elements, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-5+1e-4*math.Abs(float64(want[i])) {
			t.Fatalf("element %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

func TestCPUBackendMatchesEager(t *testing.T) {
	if _, err := cpu.FindTools(); err != nil {
		t.Skip(err)
	}
	w, b, x := Rand(1, 48, 40), Rand(2, 40), Rand(3, 13, 48)
	eager, err := Compile(mlpSoftmax(w, b), Options{Backend: EagerBackend})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(mlpSoftmax(w, b), Options{Backend: CPUBackend, BackendOptions: map[string]any{"workers": 2}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := eager.Call(x)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Call(x)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, got[0].Float32s(), want[0].Float32s())
	if c.Backend() != CPUBackend {
		t.Errorf("Backend() = %q, want cpu", c.Backend())
	}
	if _, err := Compile(mlpSoftmax(w, b), Options{Backend: CPUBackend, BackendOptions: map[string]any{"threads": 2}}); err == nil {
		t.Error("an unknown cpu backend option was accepted")
	} else if _, err := c.Call(x); err != nil {
		t.Fatal(err)
	}
}

// TestCPUBackendWithoutToolsRunsTheInterpreter: without LLVM's tools (and
// nothing cached) the cpu backend warns once and the interpreter runs.
func TestCPUBackendWithoutToolsRunsTheInterpreter(t *testing.T) {
	t.Setenv("STRATA_LLVM_BIN", t.TempDir())
	t.Setenv("STRATA_CACHE_DIR", t.TempDir())
	cpuToolsWarning = sync.Once{}
	var buf bytes.Buffer
	prev := logs.SetOutput(&buf)
	defer logs.SetOutput(prev)
	logs.Enable(topicPerfHints)
	defer logs.Disable()
	w, b, x := Rand(1, 8, 5), Rand(2, 5), Rand(3, 3, 8)
	eager, err := Compile(mlpSoftmax(w, b), Options{Backend: EagerBackend})
	if err != nil {
		t.Fatal(err)
	}
	want, err := eager.Call(x)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []func(*Tensor) *Tensor{mlpSoftmax(w, b), func(x *Tensor) *Tensor { return x.Mul(x) }} {
		c, err := Compile(f, Options{Backend: CPUBackend})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			closeTo(t, got[0].Float32s(), want[0].Float32s())
		}
	}
	if n := strings.Count(buf.String(), "the cpu backend runs graphs in the interpreter"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "STRATA_LLVM_BIN=") {
		t.Errorf("the warning does not say where it looked:\n%s", buf.String())
	}
}
