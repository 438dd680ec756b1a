package frontend_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

func TestRandCompiledMatchesEager(t *testing.T) {
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		return frontend.Dropout(x, 0.5, true).Add(frontend.RandLike(x))
	}
	for _, be := range withGPU(t, stateBackends) {
		x := frontend.Ones(frontend.Float32, 64)
		frontend.Seed(42)
		var eager [][]float32
		for range 3 {
			eager = append(eager, fn(x).Float32s())
		}
		frontend.Seed(42)
		c := frontend.MustCompile(fn, frontend.Options{Backend: be})
		for i := range 3 {
			got := call(t, c, x)[0].Float32s()
			near(t, got, eager[i])
			if i > 0 && slices.Equal(eager[i], eager[i-1]) {
				t.Fatalf("call %d repeated the previous call's numbers", i)
			}
		}
		if st := c.Stats(); st.Compiles != 1 || st.Replays != 2 {
			t.Errorf("%s: stats %+v, want 1 compile and 2 replays", be, st)
		}
	}
}

func TestRandState(t *testing.T) {
	frontend.Seed(7)
	a := frontend.RandUniform(frontend.Float64, 5).Float64s()
	seed, off := frontend.RandState()
	if seed != 7 || off != 2 {
		t.Errorf("state = (%d, %d), want (7, 2): 5 words take 2 blocks", seed, off)
	}
	b := frontend.RandUniform(frontend.Float32, 3).Float32s()
	frontend.SetRandState(7, 2)
	near(t, frontend.RandUniform(frontend.Float32, 3).Float32s(), b)
	// A large draw (split across cores) is the stream drawn piece by piece.
	frontend.SetRandState(9, 5)
	whole := frontend.RandUniform(frontend.Float32, 1<<17).Float32s()
	frontend.SetRandState(9, 5)
	var parts []float32
	for range 4 {
		parts = append(parts, frontend.RandUniform(frontend.Float32, 1<<15).Float32s()...)
	}
	if !slices.Equal(whole, parts) {
		t.Errorf("a large draw differs from the same stream drawn in parts")
	}
	for _, v := range a {
		if v < 0 || v >= 1 {
			t.Errorf("uniform value %v out of [0, 1)", v)
		}
	}
}

func TestBernoulliAndDropout(t *testing.T) {
	frontend.Seed(1)
	const n = 20000
	mean := frontend.Bernoulli(0.3, n).Mean(nil, false).Item()
	if math.Abs(mean-0.3) > 0.02 {
		t.Errorf("Bernoulli(0.3) mean %v", mean)
	}
	x := frontend.Ones(frontend.Float32, n)
	d := frontend.Dropout(x, 0.25, true).Float32s()
	zeros := 0
	for _, v := range d {
		switch {
		case v == 0:
			zeros++
		case math.Abs(float64(v)-1/0.75) > 1e-6:
			t.Fatalf("kept element %v, want 1/(1-p)", v)
		}
	}
	if f := float64(zeros) / n; math.Abs(f-0.25) > 0.02 {
		t.Errorf("dropped fraction %v, want about 0.25", f)
	}
	if frontend.Dropout(x, 0.5, false) != x {
		t.Errorf("Dropout in evaluation mode is not the identity")
	}
	if err := frontend.Dropout(x, 1.5, true).Err(); err == nil || !strings.Contains(err.Error(), "rand_test.go:") {
		t.Errorf("Dropout(p=1.5): err = %v, want a located error", err)
	}
	if err := frontend.Bernoulli(-1, 2).Err(); err == nil {
		t.Errorf("Bernoulli(-1) succeeded")
	}
}
