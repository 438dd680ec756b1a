package frontend_test

import (
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// TestFunctionRunsOncePerCall checks that Go side effects happen once per
// call, replayed or diverging.
func TestFunctionRunsOncePerCall(t *testing.T) {
	runs, flag := 0, false
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor {
		runs++
		y := x.Exp()
		if flag {
			y = y.Neg()
		}
		return y.Add(x)
	}, frontend.Options{})
	for i := range 8 {
		flag = i%3 == 1
		call(t, c, vec(1))
		if runs != i+1 {
			t.Fatalf("after %d calls the function ran %d times", i+1, runs)
		}
	}
}

func TestAliasedAndReturnedArguments(t *testing.T) {
	fn := func(a, b *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor) { return a.Sub(b), a }
	c := frontend.MustCompile(fn, frontend.Options{})
	x, y := vec(1, 2), vec(5, 7)
	for _, p := range [][2]*frontend.Tensor{{x, y}, {x, x}, {y, x}, {x, y}, {y, y}} {
		got := call(t, c, p[0], p[1])
		w0, w1 := fn(p[0], p[1])
		near(t, got[0].Float32s(), w0.Float32s())
		near(t, got[1].Float32s(), w1.Float32s())
	}
}

func TestCapturedSliceChangesLength(t *testing.T) {
	ws := []*frontend.Tensor{vec(1, 1)}
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		for _, w := range ws {
			x = x.Mul(w).Add(frontend.Scalar(1))
		}
		return x
	}
	c := frontend.MustCompile(fn, frontend.Options{})
	for i := range 5 {
		near(t, call(t, c, vec(1, 2))[0].Float32s(), fn(vec(1, 2)).Float32s())
		ws = append(ws, vec(float32(i), -1))
		if i == 3 {
			ws = ws[:1]
		}
	}
}

func TestHostReadLoopOnComputedValue(t *testing.T) {
	limit := float64(10)
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		for x.Sum(nil, false).Item() < limit {
			x = x.Mul(frontend.Scalar(2))
		}
		return x
	}
	c := frontend.MustCompile(fn, frontend.Options{})
	for _, l := range []float64{10, 40, 5, 40} {
		limit = l
		near(t, call(t, c, vec(1, 1))[0].Float32s(), fn(vec(1, 1)).Float32s())
	}
}

func TestShapeDrivenReshapeAndConstants(t *testing.T) {
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		s := x.Shape()
		y := x.Reshape(s[0]*s[1], 1)
		mask := frontend.Full(frontend.Bool, 1, s[0]*s[1], 1)
		return frontend.Where(mask, y, y.Neg()).Cast(frontend.Float64).Mul(frontend.Full(frontend.Float64, float64(s[1]), 1))
	}
	for _, dyn := range []frontend.Dynamic{frontend.DynamicAuto, frontend.DynamicTrue, frontend.DynamicFalse} {
		c := frontend.MustCompile(fn, frontend.Options{Dynamic: dyn})
		for _, sh := range [][2]int{{2, 3}, {2, 3}, {4, 3}, {4, 5}, {2, 3}} {
			x := frontend.Rand(uint64(sh[0]*10+sh[1]), sh[0], sh[1])
			got := call(t, c, x)[0].Float64s()
			want := fn(x).Float64s()
			if len(got) != len(want) {
				t.Fatalf("%v: %d values, want %d", sh, len(got), len(want))
			}
			for i := range got {
				if d := got[i] - want[i]; d > 1e-6 || d < -1e-6 {
					t.Fatalf("%v %v: got %v want %v", dyn, sh, got, want)
				}
			}
		}
	}
}

func TestKVCacheInPlace(t *testing.T) {
	type cache struct{ K *frontend.Tensor }
	for _, be := range withGPU(t, stateBackends) {
		kv := &cache{K: frontend.Zeros(frontend.Float32, 4, 2)}
		ref := &cache{K: frontend.Zeros(frontend.Float32, 4, 2)}
		step := func(c *cache, pos int, k *frontend.Tensor) (*frontend.Tensor, error) {
			// Write row pos: K = K·(1-onehot) + onehot·k.
			oh := make([]float32, 4)
			oh[pos] = 1
			m := frontend.FromSlice(oh, 4, 1)
			if err := c.K.Assign(c.K.Mul(frontend.Scalar(1).Sub(m)).Add(m.Mul(k))); err != nil {
				return nil, err
			}
			return c.K.Sum([]int{0}, false), nil
		}
		cs := frontend.MustCompile(step, frontend.Options{Backend: be})
		for pos := range 4 {
			k := vec(float32(pos+1), float32(-pos))
			res, err := cs.Invoke(kv, pos, k.Reshape(1, 2))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := step(ref, pos, k.Reshape(1, 2))
			near(t, res[0].(*frontend.Tensor).Float32s(), want.Float32s())
			near(t, kv.K.Float32s(), ref.K.Float32s())
		}
		if st := cs.Stats(); st.Replays != 3 {
			t.Errorf("%s: stats %+v, want 3 replays", be, st)
		}
	}
}
