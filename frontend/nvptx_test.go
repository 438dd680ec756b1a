package frontend_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cublaslt"
)

// startingBackend counts Start calls and attributes fixed times to the
// device and load phases, as the nvptx backend does with real ones.
type startingBackend struct {
	starts atomic.Int32
}

func (b *startingBackend) Start() { b.starts.Add(1) }

func (b *startingBackend) Compile(g *frontend.Graph) (frontend.Executable, error) {
	sleep := func(d time.Duration) func() error { return func() error { time.Sleep(d); return nil } }
	if err := g.Time(frontend.PhaseDevice, sleep(3*time.Millisecond)); err != nil {
		return nil, err
	}
	if err := g.Time(frontend.PhaseLoad, sleep(2*time.Millisecond)); err != nil {
		return nil, err
	}
	inner, _ := frontend.LookupBackend(frontend.EagerBackend)
	return inner.Compile(g)
}

// TestStartBackend checks that StartBackend starts a backend's set-up
// (and does nothing for one without), and that an unknown backend is an
// error naming it.
func TestStartBackend(t *testing.T) {
	b := &startingBackend{}
	name := "starting-" + t.Name()
	frontend.RegisterBackend(name, b)
	if err := frontend.StartBackend(name); err != nil {
		t.Fatal(err)
	}
	if n := b.starts.Load(); n != 1 {
		t.Errorf("StartBackend started the backend %d times, want 1", n)
	}
	if err := frontend.StartBackend(frontend.EagerBackend); err != nil {
		t.Errorf("a backend without a set-up: %v", err)
	}
	if err := frontend.StartBackend("no-such-backend"); err == nil || !strings.Contains(err.Error(), `"no-such-backend"`) {
		t.Errorf("an unknown backend: %v, want an error naming it", err)
	}
}

func TestStarterStartsAtCompile(t *testing.T) {
	b := &startingBackend{}
	name := "starting-" + t.Name()
	frontend.RegisterBackend(name, b)
	if _, err := frontend.Compile(42, frontend.Options{Backend: name}); err == nil {
		t.Fatal("Compile accepted a non-function")
	}
	if n := b.starts.Load(); n != 0 {
		t.Fatalf("a failed Compile started the backend %d times", n)
	}
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Exp() }, frontend.Options{Backend: name})
	if n := b.starts.Load(); n != 1 {
		t.Fatalf("Compile started the backend %d times before the first call, want 1", n)
	}
	start := time.Now()
	call(t, c, frontend.Ones(frontend.Float32, 4))
	wall := time.Since(start)
	ct := c.CompileTimes()
	// Each phase counts once: no time is attributed twice.
	if ct.Total() > wall {
		t.Errorf("phases %v add up to more than the first call's %v", ct, wall)
	}
	if ct.Device < 3*time.Millisecond || ct.Load < 2*time.Millisecond {
		t.Errorf("device %v, load %v: want at least the backend's 3 ms and 2 ms", ct.Device, ct.Load)
	}
	if ct.Total() < ct.Trace+ct.Passes+ct.Codegen+ct.Load+ct.Device {
		t.Errorf("Total %v leaves out a phase of %+v", ct.Total(), ct)
	}
	if s := ct.String(); !strings.Contains(s, fmt.Sprint("device ", ct.Device)) || !strings.Contains(s, fmt.Sprint("load ", ct.Load)) {
		t.Errorf("String() = %q: want the device and load phases", s)
	}
}

// On a GPU, the nvptx backend's first call reports the JIT of its PTX as
// Load and the wait for the device as Device, and computes what the
// interpreter does.
func TestGPUNVPTXFirstCallPhases(t *testing.T) {
	fn := func(x *frontend.Tensor) *frontend.Tensor { return x.Softmax(-1) }
	x := frontend.Rand(7, 64, 96)
	c := frontend.MustCompile(fn, frontend.Options{Backend: frontend.NVPTXBackend})
	got, err := c.Call(x)
	if errors.Is(err, frontend.ErrNoGPUBackend) {
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := call(t, frontend.MustCompile(fn, frontend.Options{Backend: frontend.InterpBackend}), x)
	near(t, got[0].Float32s(), want[0].Float32s())
	ct := c.CompileTimes()
	t.Logf("first call: %v", ct)
	if ct.Load <= 0 || ct.Codegen <= 0 || ct.Passes <= 0 {
		t.Errorf("first call %v: want passes, codegen and load measured", ct)
	}
}

// On a GPU, a bf16 matmul with a bias and relu through the nvptx backend
// computes what the interpreter does, whether the matmul policy put it on
// cuBLASLt (when the library loads) or on Strata's mma.sync kernel; the
// autotune log names the choice.
func TestGPUNVPTXHalfMatmulPolicy(t *testing.T) {
	fn := func(x, w, b *frontend.Tensor) *frontend.Tensor {
		return x.MatMul(w).Add(b).Relu()
	}
	x := frontend.Rand(3, 100, 72).Cast(frontend.BFloat16)
	w := frontend.Rand(4, 72, 136).Cast(frontend.BFloat16)
	b := frontend.Rand(5, 136).Cast(frontend.BFloat16)
	var log strings.Builder
	prev := logs.SetOutput(&log)
	defer logs.SetOutput(prev)
	logs.Enable("autotune")
	defer logs.Disable()
	c := frontend.MustCompile(fn, frontend.Options{Backend: frontend.NVPTXBackend})
	got, err := c.Call(x, w, b)
	if errors.Is(err, frontend.ErrNoGPUBackend) {
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := call(t, frontend.MustCompile(fn, frontend.Options{Backend: frontend.InterpBackend}), x, w, b)
	// Both round the f32 product to bf16; the GPU sums K in another order.
	nearTol(t, "bf16 matmul+bias+relu", got[0].Cast(frontend.Float32).Float32s(), want[0].Cast(frontend.Float32).Float32s(), 1e-2)
	lib := cublaslt.Load() == nil
	if onLib := strings.Contains(log.String(), "on cuBLASLt"); onLib != lib {
		t.Errorf("cuBLASLt loads: %v, but the policy's log says on cuBLASLt: %v\n%s", lib, onLib, log.String())
	}
	t.Logf("cuBLASLt: %v; %s", lib, c.CompileTimes())
}
