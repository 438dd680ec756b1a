package frontend

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ir/strata/runtime/interp"
)

// aheadBackend compiles with the interpreter, counting compiles and runs;
// a compile waits for gate (when set) after telling started, and the
// first fail compiles fail.
type aheadBackend struct {
	compiles, runs atomic.Int32
	fail           atomic.Int32
	started        chan struct{}
	gate           chan struct{}
}

func (b *aheadBackend) Compile(g *Graph) (Executable, error) {
	n := b.compiles.Add(1)
	if b.started != nil && n == 1 {
		close(b.started)
	}
	if b.gate != nil {
		<-b.gate
	}
	if b.fail.Add(-1) >= 0 {
		return nil, errors.New("refused on purpose")
	}
	exe, err := mustBackend(InterpBackend).b.Compile(g)
	if err != nil {
		return nil, err
	}
	return ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
		b.runs.Add(1)
		return exe.Run(in)
	}), nil
}

// concurrentAheadBackend is aheadBackend allowed to compile in the
// background (concurrentCompiler, as the nvptx backend).
type concurrentAheadBackend struct{ *aheadBackend }

func (concurrentAheadBackend) concurrentCompile() {}

func registerAhead(t *testing.T, concurrent bool) (*aheadBackend, string) {
	b := &aheadBackend{}
	name := "ahead-" + t.Name()
	if concurrent {
		RegisterBackend(name, concurrentAheadBackend{b})
	} else {
		RegisterBackend(name, b)
	}
	return b, name
}

// axpy is the update Precompile is tested on: p - lr·g, and g's square.
func axpy(lr, p, g *Tensor) (*Tensor, *Tensor) { return p.Sub(g.Mul(lr)), g.Mul(g) }

// TestPrecompileBackground checks a compile ahead on a backend that
// compiles in the background: Precompile returns while the compile is
// still in flight and runs nothing, the call that needs the graph waits
// for it and runs it (once compiled: one compile, one cache hit), on
// values Precompile never saw.
func TestPrecompileBackground(t *testing.T) {
	b, name := registerAhead(t, true)
	b.started, b.gate = make(chan struct{}), make(chan struct{})
	c := MustCompile(axpy, Options{Backend: name})
	p := FromSlice([]float32{1, 2, 3})
	if err := c.Precompile(Scalar(0), p, Zeros(Float32, 3)); err != nil {
		t.Fatal(err)
	}
	<-b.started // the compile is in flight, held at the gate
	if r := b.runs.Load(); r != 0 {
		t.Fatalf("Precompile ran the graph %d times", r)
	}
	done := make(chan []*Tensor)
	go func() {
		res, err := c.Call(Scalar(0.5), p, FromSlice([]float32{2, 4, 6}))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case <-done:
		t.Fatal("the call returned before the graph it needs was compiled")
	case <-time.After(50 * time.Millisecond):
	}
	close(b.gate)
	res := <-done
	if res == nil {
		return
	}
	if got, want := res[0].Float32s(), []float32{0, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("p - lr·g = %v, want %v", got, want)
	}
	if got, want := res[1].Float32s(), []float32{4, 16, 36}; !slices.Equal(got, want) {
		t.Errorf("g² = %v, want %v", got, want)
	}
	if n, r := b.compiles.Load(), b.runs.Load(); n != 1 || r != 1 {
		t.Errorf("%d compiles and %d runs, want 1 and 1", n, r)
	}
	if s := c.Stats(); s.Compiles != 1 || s.CacheHits != 1 || s.Calls != 1 {
		t.Errorf("stats %+v: want 1 call, 1 compile (ahead) and 1 cache hit", s)
	}
}

// TestPrecompileSynchronous checks Precompile on a backend that compiles
// one graph at a time: the graph is compiled before Precompile returns,
// not run, and a tensor the function assigns in place keeps its value;
// the call then compiles nothing and updates it.
func TestPrecompileSynchronous(t *testing.T) {
	b, name := registerAhead(t, false)
	state := FromSlice([]float32{1, 1})
	c := MustCompile(func(x *Tensor) *Tensor {
		if err := state.Assign(state.Add(x)); err != nil {
			return failed(err)
		}
		return x.Exp()
	}, Options{Backend: name})
	if err := c.Precompile(FromSlice([]float32{5, 5})); err != nil {
		t.Fatal(err)
	}
	if n, r := b.compiles.Load(), b.runs.Load(); n != 1 || r != 0 {
		t.Fatalf("after Precompile: %d compiles and %d runs, want 1 and 0", n, r)
	}
	if got := state.Float32s(); !slices.Equal(got, []float32{1, 1}) {
		t.Fatalf("Precompile changed the assigned tensor: %v, want [1 1]", got)
	}
	if _, err := c.Call(FromSlice([]float32{1, 2})); err != nil {
		t.Fatal(err)
	}
	if got := state.Float32s(); !slices.Equal(got, []float32{2, 3}) {
		t.Errorf("after the call: %v, want [2 3]", got)
	}
	if n := b.compiles.Load(); n != 1 {
		t.Errorf("%d compiles, want 1: the call should use the precompiled graph", n)
	}
}

// TestPrecompileOtherShapes checks that a graph precompiled for one shape
// does not serve a call on another (its guards), which compiles its own.
func TestPrecompileOtherShapes(t *testing.T) {
	b, name := registerAhead(t, true)
	c := MustCompile(axpy, Options{Backend: name})
	if err := c.Precompile(Scalar(0), Zeros(Float32, 2), Zeros(Float32, 2)); err != nil {
		t.Fatal(err)
	}
	res, err := c.Call(Scalar(1), FromSlice([]float32{1, 2, 3}), FromSlice([]float32{1, 1, 1}))
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Float32s(); !slices.Equal(got, []float32{0, 1, 2}) {
		t.Errorf("got %v, want [0 1 2]", got)
	}
	if s := c.Stats(); s.Compiles != 2 || s.CacheHits != 0 {
		t.Errorf("stats %+v: want 2 compiles (shape 2 ahead, shape 3 by the call)", s)
	}
	if r := b.runs.Load(); r != 1 {
		t.Errorf("%d runs, want 1", r)
	}
}

// TestPrecompileFailedCompile checks that a compile ahead that fails is
// the error of the call that needs the graph, as its own compile's would
// be, and that the next call compiles the graph again.
func TestPrecompileFailedCompile(t *testing.T) {
	b, name := registerAhead(t, true)
	b.fail.Store(1)
	c := MustCompile(axpy, Options{Backend: name})
	if err := c.Precompile(Scalar(0), Zeros(Float32, 2), Zeros(Float32, 2)); err != nil {
		t.Fatal(err)
	}
	args := []*Tensor{Scalar(1), FromSlice([]float32{3, 3}), FromSlice([]float32{1, 2})}
	if _, err := c.Call(args...); err == nil || !strings.Contains(err.Error(), "refused on purpose") {
		t.Fatalf("the call after a failed compile ahead: %v, want its error", err)
	}
	res, err := c.Call(args...)
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Float32s(); !slices.Equal(got, []float32{2, 1}) {
		t.Errorf("got %v, want [2 1]", got)
	}
	if n, r := b.compiles.Load(), b.runs.Load(); n != 2 || r != 1 {
		t.Errorf("%d backend compiles and %d runs, want 2 (the failed one ahead, the second call's) and 1", n, r)
	}
	if s := c.Stats(); s.Compiles != 2 || s.CacheHits != 0 {
		t.Errorf("stats %+v: want 2 compiles, no cache hit", s)
	}
}

// TestPrecompileBreak checks that Precompile stops at a graph break: the
// graph before the host read is compiled, nothing after it, and the call
// then compiles only the second graph.
func TestPrecompileBreak(t *testing.T) {
	b, name := registerAhead(t, false)
	c := MustCompile(func(x *Tensor) *Tensor {
		y := x.Exp()
		if y.Sum(nil, false).Item() > 100 { // a host read: a graph break
			return y.Neg()
		}
		return y.Mul(y)
	}, Options{Backend: name})
	if err := c.Precompile(Zeros(Float32, 2)); err != nil {
		t.Fatal(err)
	}
	if n, r := b.compiles.Load(), b.runs.Load(); n != 1 || r != 0 {
		t.Fatalf("after Precompile: %d compiles and %d runs, want 1 and 0", n, r)
	}
	res, err := c.Call(FromSlice([]float32{0, 0}))
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Float32s(); !slices.Equal(got, []float32{1, 1}) {
		t.Errorf("got %v, want [1 1]", got)
	}
	if n := b.compiles.Load(); n != 2 {
		t.Errorf("%d compiles, want 2 (graph 0 ahead, graph 1 by the call)", n)
	}
}

// TestPrecompileErrors checks Precompile's errors: a wrong number of
// arguments, and a shape error of the trace (located at fn's line, which
// in this package's own test is the test's caller), with nothing
// compiled.
func TestPrecompileErrors(t *testing.T) {
	b, name := registerAhead(t, false)
	c := MustCompile(axpy, Options{Backend: name})
	if err := c.Precompile(Scalar(0)); err == nil || !strings.Contains(err.Error(), "takes 3 arguments, got 1") {
		t.Errorf("one argument of 3: %v", err)
	}
	err := c.Precompile(Scalar(0), Zeros(Float32, 2), Zeros(Float32, 3))
	if err == nil || !strings.Contains(err.Error(), "not broadcast-compatible") {
		t.Errorf("shapes 2 and 3: %v, want the trace's shape error", err)
	}
	if n := b.compiles.Load(); n != 0 {
		t.Errorf("%d compiles after failed traces, want 0", n)
	}
}

// TestPrecompileConcurrentCalls checks a compile ahead racing calls of
// other compiled functions and a second Precompile of the same graph
// (go test -race): one compile, every call right.
func TestPrecompileConcurrentCalls(t *testing.T) {
	b, name := registerAhead(t, true)
	c := MustCompile(axpy, Options{Backend: name})
	other := MustCompile(func(x *Tensor) *Tensor { return x.Add(x) }, Options{Backend: name})
	if err := c.Precompile(Scalar(0), Zeros(Float32, 4), Zeros(Float32, 4)); err != nil {
		t.Fatal(err)
	}
	if err := c.Precompile(Scalar(0), Zeros(Float32, 4), Zeros(Float32, 4)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			res, err := other.Call(FromSlice([]float32{float32(i)}))
			if err != nil || res[0].Float32s()[0] != float32(2*i) {
				t.Errorf("other call %d: %v %v", i, res, err)
			}
		})
	}
	res, err := c.Call(Scalar(2), FromSlice([]float32{1, 1, 1, 1}), FromSlice([]float32{1, 2, 3, 4}))
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Float32s(); !slices.Equal(got, []float32{-1, -3, -5, -7}) {
		t.Errorf("got %v", got)
	}
	if s := c.Stats(); s.Compiles != 1 {
		t.Errorf("stats %+v: want 1 compile for two Precompiles and a call", s)
	}
	if n := b.compiles.Load(); n != 2 {
		t.Errorf("%d backend compiles, want 2 (c's ahead, other's)", n)
	}
}
