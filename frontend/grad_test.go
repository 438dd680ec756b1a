package frontend_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// mse is a one-layer regression loss: mean((tanh(x·w) + b - y)²).
func mse(x, w, b, y *frontend.Tensor) *frontend.Tensor {
	d := x.MatMul(w).Tanh().Add(b).Sub(y)
	return d.Mul(d).Mean(nil, false)
}

// centralDiff returns (f(x + h·eⱼ) - f(x - h·eⱼ)) / 2h for argument a.
func centralDiff(t *testing.T, f func(args ...*frontend.Tensor) float64, args []*frontend.Tensor, a, j int, h float64) float64 {
	t.Helper()
	at := func(delta float64) float64 {
		vs := args[a].Float64s()
		vs[j] += delta
		moved := slices.Clone(args)
		moved[a] = frontend.FromSlice(vs, args[a].Shape()...)
		return f(moved...)
	}
	return (at(h) - at(-h)) / (2 * h)
}

func f64Rand(seed uint64, shape ...int) *frontend.Tensor {
	return frontend.Rand(seed, shape...).Cast(frontend.Float64)
}

// TestGradMatchesCentralDifferences differentiates a traced loss with
// respect to three of its four arguments.
func TestGradMatchesCentralDifferences(t *testing.T) {
	args := []*frontend.Tensor{f64Rand(1, 5, 3), f64Rand(2, 3, 4), f64Rand(3, 4), f64Rand(4, 5, 4)}
	for _, a := range args {
		if a.Err() != nil {
			t.Fatal(a.Err())
		}
	}
	g := frontend.Grad(mse, 0, 1, 2)
	grads, err := g.Call(args...)
	if err != nil {
		t.Fatal(err)
	}
	if len(grads) != 3 {
		t.Fatalf("%d gradients, want 3", len(grads))
	}
	loss := func(args ...*frontend.Tensor) float64 { return mse(args[0], args[1], args[2], args[3]).Item() }
	for i, a := range []int{0, 1, 2} {
		if !slices.Equal(grads[i].Shape(), args[a].Shape()) {
			t.Fatalf("gradient %d has shape %v, want %v", i, grads[i].Shape(), args[a].Shape())
		}
		gs := grads[i].Float64s()
		for j := range gs {
			num := centralDiff(t, loss, args, a, j, 1e-6)
			if math.Abs(num-gs[j]) > 1e-7*(1+math.Abs(num)) {
				t.Errorf("argument %d, element %d: gradient %g, central difference %g", a, j, gs[j], num)
			}
		}
	}
	if r := g.Report(); len(r.Saved) == 0 || r.SavedBytes > r.SaveAllBytes || !strings.Contains(r.String(), "saves") {
		t.Errorf("report: %+v\n%s", r, r)
	}
}

// TestValueAndGrad returns the loss and an auxiliary result with the
// gradients, and caches the compiled passes across calls.
func TestValueAndGrad(t *testing.T) {
	b, backend := register(t, "")
	f := func(x, w *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor) {
		y := x.MatMul(w)
		return y.Mul(y).Sum(nil, false), y
	}
	vg := frontend.ValueAndGrad(f, 1).WithOptions(frontend.Options{Backend: backend})
	x := frontend.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	w := frontend.FromSlice([]float32{1, 0, 0, 1}, 2, 2)
	for range 2 {
		values, grads, err := vg.Call(x, w)
		if err != nil {
			t.Fatal(err)
		}
		// loss = Σ (x·w)², x·w = x; ∂/∂w = 2·xᵀ·x.
		near(t, values[0].Float32s(), []float32{30})
		near(t, values[1].Float32s(), []float32{1, 2, 3, 4})
		near(t, grads[0].Float32s(), []float32{20, 28, 28, 40})
	}
	if got := b.count(); got != 2 {
		t.Errorf("the backend compiled %d graphs for two calls, want 2 (forward and backward, once)", got)
	}
	if !slices.Equal(b.funcs, []string{"graph0_fwd", "graph0_bwd"}) {
		t.Errorf("compiled %v", b.funcs)
	}
}

// TestVJP differentiates a non-scalar result with a given cotangent, which
// Grad refuses.
func TestVJP(t *testing.T) {
	f := func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(x) }
	x := frontend.FromSlice([]float32{1, 2, 3})
	if _, err := frontend.Grad(f).Call(x); err == nil || !strings.Contains(err.Error(), "must return a floating-point scalar loss") {
		t.Errorf("Grad of a vector: %v", err)
	}
	values, grads, err := frontend.ValueAndGrad(f).VJP([]*frontend.Tensor{frontend.FromSlice([]float32{1, 10, 100})}, x)
	if err != nil {
		t.Fatal(err)
	}
	near(t, values[0].Float32s(), []float32{1, 4, 9})
	near(t, grads[0].Float32s(), []float32{2, 40, 600})
	if _, _, err := frontend.ValueAndGrad(f).VJP([]*frontend.Tensor{frontend.FromSlice([]float32{1})}, x); err == nil || !strings.Contains(err.Error(), "cotangent 0 is f32[1], want the result's f32[3]") {
		t.Errorf("a cotangent of the wrong shape: %v", err)
	}
}

// TestGradWithBackends gets the same gradients from every CPU backend.
func TestGradWithBackends(t *testing.T) {
	args := []*frontend.Tensor{f64Rand(5, 4, 3), f64Rand(6, 3, 2), f64Rand(7, 2), f64Rand(8, 4, 2)}
	want, err := frontend.Grad(mse).Call(args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, be := range []string{frontend.EagerBackend, frontend.InterpBackend} {
		got, err := frontend.Grad(mse).WithOptions(frontend.Options{Backend: be}).Call(args...)
		if err != nil {
			t.Fatalf("%s: %v", be, err)
		}
		if len(got) != 4 {
			t.Fatalf("%s: %d gradients, want one per float argument", be, len(got))
		}
		for i := range got {
			g, w := got[i].Float64s(), want[i].Float64s()
			for j := range g {
				if math.Abs(g[j]-w[j]) > 1e-12*(1+math.Abs(w[j])) {
					t.Fatalf("%s: gradient %d element %d: %g, aot_eager gives %g", be, i, j, g[j], w[j])
				}
			}
		}
	}
}

// Bad requests are errors of Call, never panics.
func TestGradErrors(t *testing.T) {
	x := frontend.FromSlice([]float32{1, 2})
	sum := func(x *frontend.Tensor) *frontend.Tensor { return x.Sum(nil, false) }
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"not a function", func() error { _, err := frontend.Grad(3).Call(x); return err }, "Compile needs a function"},
		{"wrt out of range", func() error { _, err := frontend.Grad(sum, 2).Call(x); return err }, "wrt 2 is out of range"},
		{"integer wrt", func() error {
			_, err := frontend.Grad(sum, 0).Call(frontend.FromSlice([]int64{1, 2}))
			return err
		}, "only floating-point tensors have gradients"},
		{"arity", func() error { _, err := frontend.Grad(sum).Call(x, x); return err }, "takes 1 arguments, got 2"},
		{"graph break", func() error {
			_, err := frontend.Grad(func(x *frontend.Tensor) *frontend.Tensor {
				_ = x.Sum(nil, false).Item()
				return x.Sum(nil, false)
			}).Call(x)
			return err
		}, "graph break"},
		{"constant result", func() error {
			c := frontend.Scalar(1)
			_, err := frontend.Grad(func(x *frontend.Tensor) *frontend.Tensor { return c }).Call(x)
			return err
		}, "is not computed from the arguments"},
		{"unknown backend", func() error {
			_, err := frontend.Grad(sum).WithOptions(frontend.Options{Backend: "nope"}).Call(x)
			return err
		}, `unknown backend "nope"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
