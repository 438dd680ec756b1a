package frontend_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// stateBackends are the backends the state tests compile with (nvptx is
// added by withGPU where a GPU is present).
var stateBackends = []string{frontend.InterpBackend, frontend.AOTEagerBackend}

// withGPU returns backends and nvptx when a GPU opens; without one it
// logs why nvptx is left out.
func withGPU(t testing.TB, backends []string) []string {
	if _, err := frontend.GPURuntime(); err != nil {
		t.Logf("nvptx left out: %v", err)
		return backends
	}
	return append(slices.Clone(backends), frontend.NVPTXBackend)
}

func vec(xs ...float32) *frontend.Tensor { return frontend.FromSlice(xs) }

func TestCapturedScalarFlip(t *testing.T) {
	for _, be := range withGPU(t, stateBackends) {
		flag, n, scale := true, 1, float32(2)
		fn := func(x *frontend.Tensor) *frontend.Tensor {
			y := x
			if flag {
				y = y.Neg()
			}
			for range n {
				y = y.Add(x)
			}
			return y.Mul(frontend.Scalar(scale))
		}
		c := frontend.MustCompile(fn, frontend.Options{Backend: be})
		x := vec(1, 2)
		for step := range 6 {
			flag, n, scale = step%2 == 0, step%3, float32(step)
			want := fn(x).Float32s()
			near(t, call(t, c, x)[0].Float32s(), want)
		}
	}
}

func TestCapturedTensorRebinding(t *testing.T) {
	for _, be := range withGPU(t, stateBackends) {
		w := vec(1, 1)
		c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(w) }, frontend.Options{Backend: be})
		x := vec(3, 4)
		for step := range 4 {
			want := []float32{3 * float32(1-step), 4 * float32(1-step)}
			near(t, call(t, c, x)[0].Float32s(), want)
			w = w.Sub(frontend.Ones(frontend.Float32, 2)) // a new tensor each step
		}
		if st := c.Stats(); st.Compiles != 1 {
			t.Errorf("%s: compiles = %d, want 1 (rebinding changes inputs, not the graph)", be, st.Compiles)
		}
	}
}

type linear struct {
	W, B *frontend.Tensor
}

func (l *linear) forward(x *frontend.Tensor) *frontend.Tensor { return x.MatMul(l.W).Add(l.B) }

func TestStructFieldReplaced(t *testing.T) {
	for _, be := range withGPU(t, stateBackends) {
		m := &linear{W: frontend.FromSlice([]float32{1, 0, 0, 1}, 2, 2), B: vec(0, 0)}
		c := frontend.MustCompile(m.forward, frontend.Options{Backend: be})
		x := frontend.FromSlice([]float32{1, 2}, 1, 2)
		near(t, call(t, c, x)[0].Float32s(), []float32{1, 2})
		m.W = frontend.FromSlice([]float32{2, 0, 0, 2}, 2, 2)
		m.B = vec(1, 1)
		near(t, call(t, c, x)[0].Float32s(), []float32{3, 5})
	}
}

func TestHostReadOfArgumentBreaks(t *testing.T) {
	fn := func(x, y *frontend.Tensor) *frontend.Tensor {
		if x.Sum(nil, false).Item() > 0 { // pending: a break
			return y.Neg()
		}
		if y.Item() > 5 { // an argument: a break too
			return y.Add(y)
		}
		return y
	}
	for _, be := range stateBackends {
		c := frontend.MustCompile(fn, frontend.Options{Backend: be})
		for _, xs := range []float32{1, -1, -1, 1} {
			for _, ys := range []float32{2, 7} {
				x, y := vec(xs), vec(ys)
				near(t, call(t, c, x, y)[0].Float32s(), fn(x, y).Float32s())
			}
		}
		if c.Stats().GraphBreaks == 0 {
			t.Errorf("%s: no graph breaks counted", be)
		}
	}
	argRead := func(x *frontend.Tensor) *frontend.Tensor {
		if x.Item() > 0 {
			return x.Neg()
		}
		return x.Exp()
	}
	c := frontend.MustCompile(argRead, frontend.Options{Fullgraph: true})
	_, err := c.Call(vec(1))
	if err == nil || !strings.Contains(err.Error(), "state_test.go:") || !strings.Contains(err.Error(), "of an input") {
		t.Fatalf("Fullgraph: err = %v, want a located data-dependent read error", err)
	}
	c = frontend.MustCompile(argRead, frontend.Options{})
	for _, v := range []float32{1, -1, 2, -2} {
		near(t, call(t, c, vec(v))[0].Float32s(), argRead(vec(v)).Float32s())
	}
}

func TestLoopTripCountIsGoValue(t *testing.T) {
	steps := 1
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		for range steps {
			x = x.Mul(x).Add(frontend.Scalar(1))
		}
		return x
	}
	c := frontend.MustCompile(fn, frontend.Options{})
	x := vec(0.5, 0.25)
	for _, n := range []int{1, 3, 0, 3, 2} {
		steps = n
		near(t, call(t, c, x)[0].Float32s(), fn(x).Float32s())
	}
}

type params struct {
	Layers []*linear
	Scale  float32
	Names  map[string]*frontend.Tensor
	Train  bool
}

func TestPytreeArguments(t *testing.T) {
	mk := func(v float32) *linear {
		return &linear{W: frontend.FromSlice([]float32{v, 0, 0, v}, 2, 2), B: vec(v, -v)}
	}
	fn := func(p *params, x *frontend.Tensor, k int) (map[string]*frontend.Tensor, []*frontend.Tensor, error) {
		for _, l := range p.Layers {
			x = l.forward(x)
		}
		x = x.Mul(frontend.Scalar(p.Scale * float32(k)))
		if p.Train {
			x = x.Add(p.Names["bias"])
		}
		return map[string]*frontend.Tensor{"out": x}, []*frontend.Tensor{x.Neg()}, nil
	}
	for _, be := range withGPU(t, stateBackends) {
		c := frontend.MustCompile(fn, frontend.Options{Backend: be})
		p := &params{Layers: []*linear{mk(1), mk(2)}, Scale: 1, Names: map[string]*frontend.Tensor{"bias": vec(10, 20)}}
		x := frontend.FromSlice([]float32{1, 2}, 1, 2)
		for step := range 5 {
			p.Train = step%2 == 1
			p.Scale = float32(step)
			if step == 3 {
				p.Layers = append(p.Layers, mk(3)) // a structure change
			}
			res, err := c.Invoke(p, x, step)
			if err != nil {
				t.Fatal(err)
			}
			wm, ws, _ := fn(p, x, step)
			near(t, res[0].(map[string]*frontend.Tensor)["out"].Float32s(), wm["out"].Float32s())
			near(t, res[1].([]*frontend.Tensor)[0].Float32s(), ws[0].Float32s())
		}
	}
	c := frontend.MustCompile(fn, frontend.Options{})
	if _, err := c.Call(vec(1)); err == nil || !strings.Contains(err.Error(), "Invoke") {
		t.Errorf("Call of a pytree function: err = %v, want a pointer to Invoke", err)
	}
	if _, err := c.Invoke(1, 2, 3); err == nil {
		t.Errorf("Invoke with wrong argument types succeeded")
	}
}

func TestAssignEager(t *testing.T) {
	w := vec(1, 2)
	alias := w
	if err := w.Assign(vec(5, 6)); err != nil {
		t.Fatal(err)
	}
	near(t, alias.Float32s(), []float32{5, 6})
	if err := w.AddInPlace(frontend.Scalar(1)); err != nil {
		t.Fatal(err)
	}
	near(t, alias.Float32s(), []float32{6, 7})
	err := w.Assign(vec(1, 2, 3))
	if err == nil || !strings.Contains(err.Error(), "state_test.go:") {
		t.Errorf("shape mismatch: err = %v, want a located error", err)
	}
	near(t, w.Float32s(), []float32{6, 7})
	// A pending tensor assigned in place.
	p := w.Mul(w)
	if err := p.Assign(vec(0, 1)); err != nil {
		t.Fatal(err)
	}
	near(t, p.Float32s(), []float32{0, 1})
}

func TestAssignInCompiled(t *testing.T) {
	for _, be := range withGPU(t, stateBackends) {
		type state struct{ W, M *frontend.Tensor }
		st := &state{W: vec(1, 2), M: vec(0, 0)}
		step := func(s *state, g *frontend.Tensor, lr float32) (*frontend.Tensor, error) {
			if err := s.M.Assign(s.M.Mul(frontend.Scalar(0.5)).Add(g)); err != nil {
				return nil, err
			}
			if err := s.W.SubInPlace(s.M.Mul(frontend.Scalar(lr))); err != nil {
				return nil, err
			}
			return s.W.Sum(nil, false), nil // reads the new W
		}
		ref := &state{W: vec(1, 2), M: vec(0, 0)}
		c := frontend.MustCompile(step, frontend.Options{Backend: be})
		w0 := st.W
		for i := range 4 {
			g := vec(float32(i), 1)
			lr := float32(0.1) * float32(i+1)
			res, err := c.Invoke(st, g, lr)
			if err != nil {
				t.Fatal(err)
			}
			want, err := step(ref, g, lr)
			if err != nil {
				t.Fatal(err)
			}
			near(t, res[0].(*frontend.Tensor).Float32s(), want.Float32s())
			near(t, st.W.Float32s(), ref.W.Float32s())
			near(t, st.M.Float32s(), ref.M.Float32s())
			if st.W != w0 {
				t.Fatalf("Assign replaced the tensor object instead of updating it")
			}
		}
		if s := c.Stats(); s.Compiles != 1 {
			t.Errorf("%s: compiles = %d, want 1", be, s.Compiles)
		}
	}
}

func TestAssignFailureRestores(t *testing.T) {
	w := vec(1, 2)
	c := frontend.MustCompile(func(x *frontend.Tensor) (*frontend.Tensor, error) {
		if err := w.Assign(x.Add(w)); err != nil {
			return nil, err
		}
		return w.Add(vec(1, 2, 3)), nil // shape mismatch: fails
	}, frontend.Options{})
	if _, err := c.Call(vec(1, 1)); err == nil {
		t.Fatal("want an error")
	}
	near(t, w.Float32s(), []float32{1, 2})
}
