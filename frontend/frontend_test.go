package frontend_test

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/runtime/interp"
)

// countingBackend compiles with the interp backend and counts compiles.
type countingBackend struct {
	mu       sync.Mutex
	compiles int
	funcs    []string
	reject   string // an op name it does not support
}

func (b *countingBackend) Compile(g *frontend.Graph) (frontend.Executable, error) {
	b.mu.Lock()
	b.compiles++
	b.funcs = append(b.funcs, g.Func)
	b.mu.Unlock()
	inner, _ := frontend.LookupBackend(frontend.EagerBackend)
	return inner.Compile(g)
}

func (b *countingBackend) SupportsOp(name string) bool { return name != b.reject }

func (b *countingBackend) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.compiles
}

// register registers a fresh counting backend under the test's name.
func register(t *testing.T, reject string) (*countingBackend, string) {
	b := &countingBackend{reject: reject}
	name := "counting-" + t.Name()
	frontend.RegisterBackend(name, b)
	return b, name
}

func near(t *testing.T, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d values %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("value %d: got %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
}

func call(t *testing.T, c *frontend.Compiled, in ...*frontend.Tensor) []*frontend.Tensor {
	t.Helper()
	out, err := c.Call(in...)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	return out
}

func TestEagerOpsRunLazily(t *testing.T) {
	x := frontend.FromSlice([]float32{1, -2, 3, -4}, 2, 2)
	y := x.Relu().Add(frontend.Ones(frontend.Float32, 2))
	if s := y.String(); !strings.Contains(s, "pending") {
		t.Errorf("y = %s, want a pending tensor before it is read", s)
	}
	near(t, y.Float32s(), []float32{2, 1, 4, 1})
	if got := y.Sum(nil, false).Item(); got != 8 {
		t.Errorf("sum = %v, want 8", got)
	}
}

func TestShapeErrorAtCallerLine(t *testing.T) {
	x := frontend.Zeros(frontend.Float32, 2, 3)
	y := frontend.Zeros(frontend.Float32, 4, 5)
	z := x.MatMul(y) // the error names this line
	err := z.Err()
	if err == nil || !strings.Contains(err.Error(), "frontend_test.go:") || !strings.Contains(err.Error(), "graph.matmul") {
		t.Fatalf("err = %v, want a graph.matmul error located in frontend_test.go", err)
	}
	if z.Add(x).Err() != err {
		t.Errorf("ops on a failed tensor should repeat its error")
	}
}

func TestShapeErrorReturnedByCall(t *testing.T) {
	c := frontend.MustCompile(func(x, y *frontend.Tensor) *frontend.Tensor {
		return x.Add(y).Relu()
	}, frontend.Options{})
	_, err := c.Call(frontend.Zeros(frontend.Float32, 2, 3), frontend.Zeros(frontend.Float32, 4))
	if err == nil || !strings.Contains(err.Error(), "frontend_test.go:") || !strings.Contains(err.Error(), "graph.add") {
		t.Fatalf("err = %v, want graph.add error at a frontend_test.go line", err)
	}
}

func TestCompileSignatures(t *testing.T) {
	x := frontend.FromSlice([]float32{1, 2, 3})
	two := func(a, b *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor) { return a.Add(b), a.Mul(b) }
	out := call(t, frontend.MustCompile(two, frontend.Options{}), x, x)
	near(t, out[0].Float32s(), []float32{2, 4, 6})
	near(t, out[1].Float32s(), []float32{1, 4, 9})
	variadic := func(ts ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{frontend.Concat(0, ts...)} }
	out = call(t, frontend.MustCompile(variadic, frontend.Options{}), x, x, x)
	if got := out[0].Shape(); got[0] != 9 {
		t.Errorf("concat shape %v, want [9]", got)
	}
	for _, bad := range []any{42, func(chan int) *frontend.Tensor { return nil }, func(*frontend.Tensor) func() { return nil }, func(map[[2]int]*frontend.Tensor) {}} {
		if _, err := frontend.Compile(bad, frontend.Options{}); err == nil {
			t.Errorf("Compile(%T) succeeded", bad)
		}
	}
	if _, err := frontend.Compile(two, frontend.Options{Mode: "fast"}); err == nil || !strings.Contains(err.Error(), "max-autotune") {
		t.Errorf("bad mode: err = %v", err)
	}
	if _, err := frontend.Compile(two, frontend.Options{Backend: "nope"}); err == nil {
		t.Errorf("unknown backend accepted")
	}
}

func TestNVPTXBackendSaysWhy(t *testing.T) {
	if _, err := frontend.GPURuntime(); err == nil {
		t.Skip("a GPU is present: the nvptx backend has nothing to explain")
	}
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Exp() }, frontend.Options{Backend: frontend.NVPTXBackend})
	_, err := c.Call(frontend.Ones(frontend.Float32, 2))
	if err == nil || !strings.Contains(err.Error(), "needs an NVIDIA GPU") {
		t.Fatalf("err = %v", err)
	}
}

func TestGraphBreakOnItem(t *testing.T) {
	b, name := register(t, "")
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		s := x.Sum(nil, false)
		if s.Item() > 0 { // data-dependent branch: a graph break
			return x.Mul(x)
		}
		return x.Neg()
	}
	c := frontend.MustCompile(fn, frontend.Options{Backend: name})
	out := call(t, c, frontend.FromSlice([]float32{1, 2}))
	near(t, out[0].Float32s(), []float32{1, 4})
	out = call(t, c, frontend.FromSlice([]float32{-1, -2}))
	near(t, out[0].Float32s(), []float32{1, 2})
	st := c.Stats()
	if st.GraphBreaks != 2 {
		t.Errorf("graph breaks = %d, want 2 (one per call)", st.GraphBreaks)
	}
	// Graph 0 (sum) is compiled once; graph 1 exists in two forms (mul, neg).
	if b.count() != 3 {
		t.Errorf("compiles = %d (%v), want 3", b.count(), b.funcs)
	}
	out = call(t, c, frontend.FromSlice([]float32{3, 4}))
	near(t, out[0].Float32s(), []float32{9, 16})
	if b.count() != 3 {
		t.Errorf("compiles = %d after a repeated path, want 3 (cached)", b.count())
	}
}

func TestGraphBreakOnPrintAndValueRead(t *testing.T) {
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		y := x.Exp()
		frontend.Print(y)
		vs := y.Float32s()
		return y.Add(frontend.FromSlice([]float32{vs[0]}))
	}
	e, err := frontend.Explain(fn, frontend.FromSlice([]float32{0, 1}))
	if err != nil {
		t.Fatal(err)
	}
	if e.BreakCount != 1 || !strings.Contains(e.Breaks[0].Reason, "Print") {
		t.Fatalf("explain:\n%s\nwant one break, at Print (the read after it finds y computed)", e)
	}
}

func TestGraphBreakOnUnsupportedOp(t *testing.T) {
	b, name := register(t, "graph.sin")
	fn := func(x *frontend.Tensor) *frontend.Tensor { return x.Exp().Sin().Neg() }
	c := frontend.MustCompile(fn, frontend.Options{Backend: name})
	out := call(t, c, frontend.FromSlice([]float32{0, 1}))
	want := []float32{-float32(math.Sin(1)), -float32(math.Sin(math.E))}
	near(t, out[0].Float32s(), want)
	if st := c.Stats(); st.GraphBreaks != 1 {
		t.Errorf("graph breaks = %d, want 1", st.GraphBreaks)
	}
	if b.count() != 2 {
		t.Errorf("backend compiled %d graphs, want 2 (exp, neg)", b.count())
	}
}

func TestFullgraphRefusesBreak(t *testing.T) {
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		if x.Sum(nil, false).Item() > 0 {
			return x
		}
		return x.Neg()
	}
	c := frontend.MustCompile(fn, frontend.Options{Fullgraph: true})
	_, err := c.Call(frontend.FromSlice([]float32{1}))
	if err == nil {
		t.Fatal("Fullgraph accepted a graph break")
	}
	for _, want := range []string{"Fullgraph", "Item", "frontend_test.go:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %q", err, want)
		}
	}
	ok := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Neg() }, frontend.Options{Fullgraph: true})
	near(t, call(t, ok, frontend.FromSlice([]float32{1}))[0].Float32s(), []float32{-1})
}

func TestRecompileOnShapeAndDtype(t *testing.T) {
	b, name := register(t, "")
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(x) }, frontend.Options{Backend: name, Dynamic: frontend.DynamicFalse})
	call(t, c, frontend.Ones(frontend.Float32, 2))
	call(t, c, frontend.Ones(frontend.Float32, 2))
	if b.count() != 1 {
		t.Fatalf("compiles = %d after two equal calls, want 1", b.count())
	}
	call(t, c, frontend.Ones(frontend.Float32, 3))
	call(t, c, frontend.Ones(frontend.Float64, 3))
	if b.count() != 3 {
		t.Errorf("compiles = %d, want 3 (shape change, dtype change)", b.count())
	}
	if st := c.Stats(); st.Recompiles != 2 || st.CacheHits < 1 {
		t.Errorf("stats %+v, want 2 recompiles and a cache hit", st)
	}
}

func TestRecompileLimitFallsBackToEager(t *testing.T) {
	b, name := register(t, "")
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Add(x) },
		frontend.Options{Backend: name, Dynamic: frontend.DynamicFalse, RecompileLimit: 2})
	for n := 1; n <= 5; n++ {
		out := call(t, c, frontend.Ones(frontend.Float32, n))
		if got := out[0].Shape()[0]; got != n || out[0].Float32s()[n-1] != 2 {
			t.Fatalf("call %d: wrong result %v", n, out[0].Float32s())
		}
	}
	if b.count() != 2 {
		t.Errorf("compiles = %d, want the limit, 2", b.count())
	}
	if !c.Stats().Eager {
		t.Errorf("function did not switch to eager mode")
	}
}

func TestAutomaticDynamicMarksChangedDim(t *testing.T) {
	b, name := register(t, "")
	c := frontend.MustCompile(func(x, w *frontend.Tensor) *frontend.Tensor { return x.MatMul(w).Relu() }, frontend.Options{Backend: name})
	w := frontend.Ones(frontend.Float32, 4, 3)
	for _, n := range []int{2, 5, 7, 9} {
		out := call(t, c, frontend.Ones(frontend.Float32, n, 4), w)
		if got := out[0].Shape(); got[0] != n || got[1] != 3 || out[0].Float32s()[0] != 4 {
			t.Fatalf("n=%d: shape %v values %v", n, got, out[0].Float32s())
		}
	}
	if b.count() != 2 {
		t.Errorf("compiles = %d, want 2 (static, then dynamic in dim 0)", b.count())
	}
}

func TestAutomaticDynamicMarkDynamic(t *testing.T) {
	b, name := register(t, "")
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Softmax(-1) }, frontend.Options{Backend: name})
	for _, n := range []int{3, 4, 6} {
		x := frontend.MarkDynamic(frontend.Rand(1, 2, n), 1)
		out := call(t, c, x)
		if got := out[0].Sum(nil, false).Item(); math.Abs(got-2) > 1e-5 {
			t.Fatalf("softmax rows sum to %v, want 2", got)
		}
	}
	if b.count() != 1 {
		t.Errorf("compiles = %d, want 1 (dim 1 dynamic from the start)", b.count())
	}
	s := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Exp() }, frontend.Options{Backend: name, Dynamic: frontend.DynamicTrue})
	call(t, s, frontend.Ones(frontend.Float32, 1, 4))
	call(t, s, frontend.Ones(frontend.Float32, 2, 4)) // size 1 is specialized: a recompile
	call(t, s, frontend.Ones(frontend.Float32, 3, 8))
	if b.count() != 3 {
		t.Errorf("compiles = %d, want 3 (1 then dynamic ≥ 2 for the second)", b.count())
	}
}

func TestExplainReportsGraphsAndBreaks(t *testing.T) {
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		y := x.Exp().Add(x)
		n := y.ReduceMax(nil, false).Item()
		z := y.Mul(frontend.Full(frontend.Float32, n, 1))
		frontend.Print(z)
		return z.Relu()
	}
	e, err := frontend.Explain(fn, frontend.FromSlice([]float32{1, 2, 3}))
	if err != nil {
		t.Fatal(err)
	}
	if e.GraphCount != 3 || e.BreakCount != 2 {
		t.Fatalf("explain:\n%s\nwant 3 graphs and 2 breaks", e)
	}
	if ops := e.Graphs[0].OpCounts; ops["graph.exp"] != 1 || ops["graph.add"] != 1 || ops["graph.reduce_max"] != 1 {
		t.Errorf("graph 0 ops %v", ops)
	}
	if !strings.Contains(e.Breaks[0].Reason, "Item") || !strings.Contains(e.Breaks[1].Reason, "Print") {
		t.Errorf("break reasons %+v", e.Breaks)
	}
	for _, br := range e.Breaks {
		if !strings.Contains(br.Loc, "frontend_test.go:") {
			t.Errorf("break location %q is not in the test file", br.Loc)
		}
	}
	if s := e.String(); !strings.Contains(s, "graphs: 3") || !strings.Contains(s, "graph.exp×1") {
		t.Errorf("String() =\n%s", s)
	}
}

func TestCustomBackendSeesGraphAndOptions(t *testing.T) {
	var seen []string
	frontend.RegisterBackend("test-recorder", frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		seen = append(seen, g.Func+":"+string(g.Mode))
		if g.Options["scale"] != 2.0 {
			t.Errorf("backend options %v", g.Options)
		}
		return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
			// Doubles the input instead of running the graph: proof that
			// the backend's executable is what runs.
			vs := in[0].Float64s()
			for i := range vs {
				vs[i] *= 2
			}
			r, err := interp.FromFloat64s(in[0].ElemType(), in[0].Shape(), vs)
			return []*interp.Tensor{r}, err
		}), nil
	}))
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Neg() },
		frontend.Options{Backend: "test-recorder", Mode: frontend.ModeMaxAutotune, BackendOptions: map[string]any{"scale": 2.0}})
	out := call(t, c, frontend.FromSlice([]float32{1, 2}))
	near(t, out[0].Float32s(), []float32{2, 4})
	call(t, c, frontend.FromSlice([]float32{3, 4}))
	if len(seen) != 1 || seen[0] != "graph0:max-autotune" {
		t.Errorf("backend saw %v, want one compile of graph0 in max-autotune", seen)
	}
	found := false
	for _, b := range frontend.ListBackends() {
		found = found || b.Name == "test-recorder"
	}
	if !found {
		t.Errorf("ListBackends lacks the registered backend")
	}
}

func TestCompileTimesAndLists(t *testing.T) {
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Softmax(-1) }, frontend.Options{})
	call(t, c, frontend.Rand(3, 4, 8))
	ct := c.CompileTimes()
	if ct.Trace <= 0 || ct.Passes <= 0 || ct.Total() < ct.Passes {
		t.Errorf("compile times %v: want trace and passes measured", ct)
	}
	if len(frontend.ListModes()) != 4 || len(frontend.ListOptions()) < 6 {
		t.Errorf("modes %v options %v", frontend.ListModes(), frontend.ListOptions())
	}
}

// TestFullZero checks that Full of +0 (the fast path: a zeroed tensor)
// holds what filling element by element gives, in every dtype, and that
// -0 keeps its sign.
func TestFullZero(t *testing.T) {
	for _, dt := range []frontend.DType{frontend.Float32, frontend.Float64, frontend.Float16, frontend.BFloat16, frontend.Int64, frontend.Bool} {
		z := frontend.Zeros(dt, 2, 3)
		if z.Err() != nil || !slices.Equal(z.Shape(), []int{2, 3}) || z.DType() != dt {
			t.Fatalf("%v: %v, shape %v, dtype %v", dt, z.Err(), z.Shape(), z.DType())
		}
		for i, v := range z.Float64s() {
			if v != 0 || math.Signbit(v) {
				t.Errorf("%v: element %d is %v", dt, i, v)
			}
		}
		if one := frontend.Full(dt, 1, 2, 3).Float64s(); one[5] != 1 {
			t.Errorf("%v: Full(1) element 5 is %v", dt, one[5])
		}
	}
	for _, dt := range []frontend.DType{frontend.Float32, frontend.BFloat16} {
		if v := frontend.Full(dt, math.Copysign(0, -1), 4).Float64s(); !math.Signbit(v[3]) {
			t.Errorf("%v: Full(-0) lost the sign: %v", dt, v)
		}
	}
	if err := frontend.Full(frontend.Float32, 0, 2, -1).Err(); err == nil {
		t.Error("Full(0) of a negative size: no error")
	}
}

// TestKnownInt64s checks which tensors' values KnownInt64s returns: a
// host tensor's, and a compiled function's integer argument's without a
// graph break, on the recorded call and on replayed ones; not a pending,
// a floating-point or a failed tensor's.
func TestKnownInt64s(t *testing.T) {
	ids := frontend.FromSlice([]int64{3, 1, 2})
	if v, ok := ids.KnownInt64s(); !ok || !slices.Equal(v, []int64{3, 1, 2}) {
		t.Errorf("host tensor: %v, %v; want [3 1 2], true", v, ok)
	}
	for _, c := range []struct {
		name string
		x    *frontend.Tensor
	}{
		{"pending", ids.Add(frontend.FromSlice([]int64{1, 1, 1}))},
		{"float", frontend.FromSlice([]float32{1, 2})},
		{"failed", frontend.FromSlice([]int64{1, 2}, 3)},
	} {
		if v, ok := c.x.KnownInt64s(); ok {
			t.Errorf("%s tensor: %v, true; want false", c.name, v)
		}
	}
	var seen [][]int64
	c, err := frontend.Compile(func(x, labels *frontend.Tensor) *frontend.Tensor {
		v, ok := labels.KnownInt64s()
		if !ok {
			t.Error("argument inside a compiled call: not known")
		}
		seen = append(seen, v)
		return x.Mul(x).Add(labels.Cast(frontend.Float32))
	}, frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.Call(frontend.FromSlice([]float32{1, 2}), frontend.FromSlice([]int64{int64(i), 5})); err != nil {
			t.Fatal(err)
		}
	}
	if s := c.Stats(); s.GraphBreaks != 0 || s.Replays != 2 {
		t.Errorf("%d graph breaks and %d replays, want 0 and 2", s.GraphBreaks, s.Replays)
	}
	if !slices.EqualFunc(seen, [][]int64{{0, 5}, {1, 5}, {2, 5}}, slices.Equal) {
		t.Errorf("values seen %v, want [[0 5] [1 5] [2 5]]", seen)
	}
}

// TestGatherIndicesChecked checks that Gather's indices the host holds
// are checked against the axis's size (negative ones count from the end):
// out of range, the error names the caller's line, and a compiled call
// fails with it before running anything.
func TestGatherIndicesChecked(t *testing.T) {
	x := frontend.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 3, 2)
	if got := x.Gather(frontend.FromSlice([]int64{-3, 2}), 0).Float32s(); !slices.Equal(got, []float32{1, 2, 5, 6}) {
		t.Errorf("rows -3 and 2: %v, want [1 2 5 6]", got)
	}
	_, _, line, _ := runtime.Caller(0)
	for _, c := range []struct {
		idx  []int64
		axis int
		want string
	}{
		{[]int64{0, 3}, 0, "index 3 at position 1 is out of range for axis 0 of size 3"},
		{[]int64{-4}, 0, "index -4 at position 0 is out of range for axis 0 of size 3"},
		{[]int64{1, 2}, -1, "index 2 at position 1 is out of range for axis -1 of size 2"},
	} {
		err := x.Gather(frontend.FromSlice(c.idx), c.axis).Err()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), fmt.Sprintf("frontend_test.go:%d:", line+10)) {
			t.Errorf("indices %v on axis %d: %v, want %q at frontend_test.go:%d", c.idx, c.axis, err, c.want, line+10)
		}
	}
	// A backend that counts the graphs it runs.
	eager, ok := frontend.LookupBackend(frontend.EagerBackend)
	if !ok {
		t.Fatal("no eager backend")
	}
	runs := 0
	frontend.RegisterBackend("count-gather-runs", frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		exe, err := eager.Compile(g)
		if err != nil {
			return nil, err
		}
		return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
			runs++
			return exe.Run(in)
		}), nil
	}))
	c, err := frontend.Compile(func(x, idx *frontend.Tensor) *frontend.Tensor {
		return x.Mul(x).Gather(idx, 0)
	}, frontend.Options{Backend: "count-gather-runs"})
	if err != nil {
		t.Fatal(err)
	}
	for i, idx := range [][]int64{{2, 0}, {5}, {1}} {
		before := runs
		out, err := c.Call(x, frontend.FromSlice(idx))
		switch {
		case i == 1 && (err == nil || !strings.Contains(err.Error(), "index 5 at position 0 is out of range") || runs != before):
			t.Errorf("call %d: %v after %d graph runs, want index 5 out of range and none", i, err, runs-before)
		case i != 1 && (err != nil || runs != before+1):
			t.Errorf("call %d: %v after %d graph runs, want 1", i, err, runs-before)
		case i == 2 && !slices.Equal(out[0].Float32s(), []float32{9, 16}):
			t.Errorf("call %d: %v, want [9 16]", i, out[0].Float32s())
		}
	}
}
