package frontend_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/runtime/interp"
)

func TestScalarArguments(t *testing.T) {
	fn := func(x *frontend.Tensor, k int, lr float32, neg bool, tag string) *frontend.Tensor {
		for range k {
			x = x.Mul(frontend.Scalar(lr))
		}
		if neg {
			x = x.Neg()
		}
		if tag == "abs" {
			x = x.Abs()
		}
		return x
	}
	c := frontend.MustCompile(fn, frontend.Options{})
	x := vec(1, -2)
	for _, a := range []struct {
		k   int
		lr  float32
		neg bool
		tag string
	}{{1, 2, false, ""}, {1, 3, false, ""}, {2, 3, true, ""}, {1, 2, false, "abs"}, {1, 0.5, false, ""}} {
		res, err := c.Invoke(x, a.k, a.lr, a.neg, a.tag)
		if err != nil {
			t.Fatal(err)
		}
		near(t, res[0].(*frontend.Tensor).Float32s(), fn(x, a.k, a.lr, a.neg, a.tag).Float32s())
	}
	// Untyped constants convert to the parameter's type.
	if _, err := c.Invoke(x, 1, 0.5, false, ""); err != nil {
		t.Errorf("Invoke with an untyped float constant: %v", err)
	}
	if st := c.Stats(); st.Compiles != 3 || st.Replays < 2 {
		t.Errorf("stats %+v: want 3 graphs (k=1, k=2 with neg, abs) and the learning rate never recompiling", st)
	}
}

// shortBackend returns one result fewer than the graph has.
type shortBackend struct{}

func (shortBackend) Compile(g *frontend.Graph) (frontend.Executable, error) {
	inner, _ := frontend.LookupBackend(frontend.EagerBackend)
	exe, err := inner.Compile(g)
	if err != nil {
		return nil, err
	}
	return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
		res, err := exe.Run(in)
		if len(res) > 0 {
			res = res[:len(res)-1]
		}
		return res, err
	}), nil
}

func TestBackendReturningTooFewResults(t *testing.T) {
	frontend.RegisterBackend("short-results", shortBackend{})
	c := frontend.MustCompile(func(x *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor) { return x.Neg(), x.Exp() }, frontend.Options{Backend: "short-results"})
	for range 2 { // traced, then replayed
		if _, err := c.Call(vec(1)); err == nil || !strings.Contains(err.Error(), "returned 1 results for a graph of 2") {
			t.Errorf("err = %v, want a too-few-results error", err)
		}
	}
}

func TestBackendOptionsValidatedAtCompile(t *testing.T) {
	fn := func(x *frontend.Tensor) *frontend.Tensor { return x }
	for _, c := range []struct {
		be   string
		opts map[string]any
		want string
	}{
		{frontend.InterpBackend, map[string]any{"pipline": "x"}, `no option "pipline"`},
		{frontend.InterpBackend, map[string]any{"pipeline": 3}, "must be a string"},
		{frontend.InterpBackend, map[string]any{"pipeline": "builtin.module(no-such-pass)"}, "no-such-pass"},
		{frontend.NVPTXBackend, map[string]any{"ptx_target": "sm_1"}, "ptx_target"},
		{frontend.NVPTXBackend, map[string]any{"ptx_backend": "gcc"}, "ptx_backend"},
	} {
		_, err := frontend.Compile(fn, frontend.Options{Backend: c.be, BackendOptions: c.opts})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: err = %v, want %q", c.be, c.opts, err, c.want)
		}
	}
	if _, err := frontend.Compile(fn, frontend.Options{Backend: frontend.InterpBackend, BackendOptions: map[string]any{"pipeline": "builtin.module(canonicalize)"}}); err != nil {
		t.Errorf("a good pipeline: %v", err)
	}
}

func TestRecompileLimitKeepsCompiledGraphs(t *testing.T) {
	b, name := register(t, "")
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Exp() }, frontend.Options{Backend: name, RecompileLimit: 2, Dynamic: frontend.DynamicFalse})
	for _, n := range []int{1, 2, 3, 1, 2, 3} {
		x := frontend.Ones(frontend.Float32, n)
		near(t, call(t, c, x)[0].Float32s(), x.Exp().Float32s())
	}
	st := c.Stats()
	if b.count() != 2 || !st.Eager {
		t.Errorf("compiles %d, stats %+v: want 2 compiles and Eager set", b.count(), st)
	}
	if st.Replays != 2 {
		t.Errorf("replays = %d, want 2: sizes 1 and 2 keep their compiled graphs past the limit", st.Replays)
	}
}

func TestDisableAndReset(t *testing.T) {
	b, name := register(t, "")
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Neg() }, frontend.Options{Backend: name})
	x := vec(1, 2)
	call(t, c, x)
	c.Disable()
	near(t, call(t, c, x)[0].Float32s(), []float32{-1, -2})
	c.Enable()
	call(t, c, x)
	if b.count() != 1 {
		t.Errorf("compiles = %d, want 1", b.count())
	}
	frontend.DisableAll(true)
	call(t, c, x)
	frontend.DisableAll(false)
	c.Reset()
	if st := c.Stats(); st.Calls != 0 {
		t.Errorf("stats after Reset: %+v", st)
	}
	call(t, c, x)
	if b.count() != 2 {
		t.Errorf("compiles = %d after Reset and a call, want 2", b.count())
	}
}

func TestExplainWithBackend(t *testing.T) {
	_, name := register(t, "graph.sin")
	fn := func(x *frontend.Tensor) *frontend.Tensor { return x.Exp().Sin().Neg() }
	e, err := frontend.ExplainWith(frontend.Options{Backend: name}, fn, vec(1))
	if err != nil {
		t.Fatal(err)
	}
	if e.BreakCount != 1 || !strings.Contains(e.Breaks[0].Reason, "graph.sin") {
		t.Errorf("explanation with the backend:\n%s", e)
	}
	e, err = frontend.Explain(fn, vec(1))
	if err != nil || e.BreakCount != 0 || e.GraphCount != 1 {
		t.Errorf("explanation with eager: %v\n%s", err, e)
	}
	c := frontend.MustCompile(fn, frontend.Options{})
	call(t, c, vec(1))
	if e, err := c.Explain(vec(2)); err != nil || e.GraphCount != 1 || e.Graphs[0].Ops != 3 {
		t.Errorf("Explain of a replayed call: %v\n%s", err, e)
	}
}

func TestListModesSaysWhatEachBackendDoes(t *testing.T) {
	for _, m := range frontend.ListModes() {
		for _, want := range []string{"interp", "nvptx"} {
			if !strings.Contains(m.Doc, want) {
				t.Errorf("mode %s: doc %q does not say what %s does", m.Name, m.Doc, want)
			}
		}
	}
}

func TestNestedCompiledCalls(t *testing.T) {
	inner := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Exp() }, frontend.Options{})
	w := vec(2, 3)
	outer := frontend.MustCompile(func(x *frontend.Tensor) (*frontend.Tensor, error) {
		y, err := inner.Call(x.Mul(w))
		if err != nil {
			return nil, err
		}
		return y[0].Add(x), nil
	}, frontend.Options{})
	for i := range 3 {
		x := vec(float32(i), 1)
		got := call(t, outer, x)[0].Float32s()
		near(t, got, x.Mul(w).Exp().Add(x).Float32s())
	}
}
