package frontend

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ir/strata/runtime/interp"
)

// pendingBackend compiles with the interpreter and may compile two graphs
// at once (concurrentCompiler, as the nvptx backend). Its backward pass's
// compile (the graph whose function ends in "_bwd") waits for gate when
// set, and fails or panics when told to; its executables are quietRunners
// whose device is quiet once quiet is closed. events records, in order,
// "fwd ran" and "bwd compiled".
type pendingBackend struct {
	gate      chan struct{}
	quietCh   chan struct{}
	failBwd   bool
	panicBwd  bool
	mu        sync.Mutex
	events    []string
	compiles  int
	fwdRanCh  chan struct{}
	fwdRanSet sync.Once
}

func (*pendingBackend) concurrentCompile() {}

func (b *pendingBackend) record(e string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, e)
}

func (b *pendingBackend) Compile(g *Graph) (Executable, error) {
	b.mu.Lock()
	b.compiles++
	b.mu.Unlock()
	bwd := strings.HasSuffix(g.Func, "_bwd")
	if bwd && b.gate != nil {
		select {
		case <-b.gate:
		case <-time.After(5 * time.Second): // the forward pass never ran
		}
	}
	if bwd && b.panicBwd {
		panic("backward compile panicked on purpose")
	}
	if bwd && b.failBwd {
		return nil, errors.New("backward refused on purpose")
	}
	exe, err := mustBackend(InterpBackend).b.Compile(g)
	if err != nil {
		return nil, err
	}
	if bwd {
		b.record("bwd compiled")
	}
	return &pendingExe{b: b, exe: exe, fwd: !bwd}, nil
}

// pendingExe is a pendingBackend executable.
type pendingExe struct {
	b   *pendingBackend
	exe Executable
	fwd bool
}

func (e *pendingExe) Run(in []*interp.Tensor) ([]*interp.Tensor, error) {
	if e.fwd {
		e.b.record("fwd ran")
		if e.b.fwdRanCh != nil {
			e.b.fwdRanSet.Do(func() { close(e.b.fwdRanCh) })
		}
	}
	return e.exe.Run(in)
}

func (e *pendingExe) quiet() <-chan struct{} { return e.b.quietCh }

func registerPending(t *testing.T, b *pendingBackend) string {
	name := "pending-" + t.Name()
	RegisterBackend(name, b)
	return name
}

// mseArgs are the arguments of the tests' mean squared error.
func mseArgs() []*Tensor {
	return []*Tensor{
		FromSlice([]float32{0.5, -1, 2, 0.25, 3, -0.5}, 2, 3),
		FromSlice([]float32{1, 2, -1}, 3, 1),
		FromSlice([]float32{0.5, -2}, 2, 1),
	}
}

func pendingMSE(w, x, y *Tensor) *Tensor {
	d := w.MatMul(x).Sub(y)
	return d.Mul(d).Sum([]int{0, 1}, false)
}

// checkGrads compares got with the interpreter's gradients of pendingMSE.
func checkGrads(t *testing.T, got []*Tensor) {
	t.Helper()
	want, err := Grad(pendingMSE, 0, 1, 2).Call(mseArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d gradients, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i].Float64s(), want[i].Float64s()
		for j := range w {
			if g[j] != w[j] {
				t.Fatalf("gradient %d [%d] = %v, want %v", i, j, g[j], w[j])
			}
		}
	}
}

// TestGradForwardRunsWhileBackwardCompiles checks that a first call on a
// backend that compiles the two passes at once runs the forward pass
// while the backward pass still compiles (the backward compile here
// waits until the forward pass ran), once the device is quiet, and that
// the gradients are the interpreter's.
func TestGradForwardRunsWhileBackwardCompiles(t *testing.T) {
	b := &pendingBackend{quietCh: make(chan struct{}), fwdRanCh: make(chan struct{})}
	b.gate = b.fwdRanCh
	close(b.quietCh)
	g := Grad(pendingMSE, 0, 1, 2).WithOptions(Options{Backend: registerPending(t, b)})
	got, err := g.Call(mseArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	checkGrads(t, got)
	if want := []string{"fwd ran", "bwd compiled"}; strings.Join(b.events, ", ") != strings.Join(want, ", ") {
		t.Errorf("events %q, want %q", b.events, want)
	}
	// The step is cached once both passes compiled.
	got, err = g.Call(mseArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	checkGrads(t, got)
	if b.compiles != 2 {
		t.Errorf("%d compiles for two calls, want 2 (one step)", b.compiles)
	}
}

// TestGradForwardWaitsForQuiet checks that the forward pass of a first
// call waits for a quiet device or the backward pass's compile, whichever
// ends first: with a device never quiet, it runs after the compile.
func TestGradForwardWaitsForQuiet(t *testing.T) {
	b := &pendingBackend{quietCh: make(chan struct{})} // never quiet
	g := Grad(pendingMSE, 0, 1, 2).WithOptions(Options{Backend: registerPending(t, b)})
	got, err := g.Call(mseArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	checkGrads(t, got)
	if want := []string{"bwd compiled", "fwd ran"}; strings.Join(b.events, ", ") != strings.Join(want, ", ") {
		t.Errorf("events %q, want %q", b.events, want)
	}
}

// TestGradBackwardCompileFails checks that a backward pass that fails to
// compile while the forward pass runs fails the call with its error, and
// that the step is not cached: the next call compiles both passes again.
func TestGradBackwardCompileFails(t *testing.T) {
	b := &pendingBackend{quietCh: make(chan struct{}), failBwd: true}
	close(b.quietCh)
	g := Grad(pendingMSE, 0, 1, 2).WithOptions(Options{Backend: registerPending(t, b)})
	if _, err := g.Call(mseArgs()...); err == nil || !strings.Contains(err.Error(), "backward refused on purpose") {
		t.Fatalf("Call: %v, want the backward compile's error", err)
	}
	b.failBwd = false
	got, err := g.Call(mseArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	checkGrads(t, got)
	if b.compiles != 4 {
		t.Errorf("%d compiles, want 4 (the failed step not cached)", b.compiles)
	}
}

// TestGradBackwardCompilePanics checks that a panic in the backward pass's
// compile, in a goroutine of its own, goes on in the caller's goroutine.
func TestGradBackwardCompilePanics(t *testing.T) {
	b := &pendingBackend{quietCh: make(chan struct{}), panicBwd: true}
	close(b.quietCh)
	g := Grad(pendingMSE, 0, 1, 2).WithOptions(Options{Backend: registerPending(t, b)})
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "panicked on purpose") {
			t.Errorf("recovered %v, want the compile's panic", p)
		}
	}()
	g.Call(mseArgs()...)
	t.Error("Call returned; want the backward compile's panic")
}
