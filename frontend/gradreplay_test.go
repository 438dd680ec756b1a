package frontend_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"pgregory.net/rapid"
)

// TestGradReplays: a later call of a gradient replays fn against the
// recorded call instead of tracing it, and what fn depends on is never
// stale: a captured weight's new value is read, a changed Go scalar, a
// closure's branch or an argument's shape traces again.
func TestGradReplays(t *testing.T) {
	w := frontend.FromSlice([]float32{0.5, -1, 2}, 3)
	flag, k := true, 1
	f := func(x *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor) {
		y := x.Mul(w.Cast(x.DType()))
		for range k {
			y = y.Tanh()
		}
		if flag {
			y = y.Add(x)
		}
		return y.Mul(y).Sum(nil, false), y
	}
	vg := frontend.ValueAndGrad(f, 0)
	type stats struct{ compiles, replays int }
	check := func(what string, x *frontend.Tensor, want stats) {
		t.Helper()
		values, grads, err := vg.Call(x)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		// The reference: a new gradient, which traces.
		rv, rg, err := frontend.ValueAndGrad(f, 0).Call(x)
		if err != nil {
			t.Fatalf("%s: reference: %v", what, err)
		}
		near(t, values[0].Float32s(), rv[0].Float32s())
		near(t, values[1].Float32s(), rv[1].Float32s())
		near(t, grads[0].Float32s(), rg[0].Float32s())
		if s := vg.Stats(); s.Compiles != want.compiles || s.Replays != want.replays {
			t.Fatalf("%s: %d compiles, %d replays; want %d, %d", what, s.Compiles, s.Replays, want.compiles, want.replays)
		}
	}
	x := frontend.FromSlice([]float32{1, 2, 3}, 3)
	check("first call", x, stats{1, 0})
	check("new argument values", frontend.FromSlice([]float32{-1, 0.5, 4}, 3), stats{1, 1})
	w = frontend.FromSlice([]float32{3, 1, -2}, 3) // the captured weight rebound
	check("captured weight rebound", x, stats{1, 2})
	if err := w.AddInPlace(frontend.Scalar(1)); err != nil { // updated in place
		t.Fatal(err)
	}
	check("captured weight updated", x, stats{1, 3})
	k = 2
	check("loop count changed", x, stats{2, 3})
	flag = false
	check("branch changed", x, stats{3, 3})
	check("branch kept", x, stats{3, 4})
	flag, k = true, 1
	check("back to the first call's code", x, stats{3, 5})
	check("another shape", frontend.FromSlice([]float32{1, 2, 3, 4}, 4).Slice([]int{0}, []int{3}, nil).Reshape(1, 3), stats{4, 5})
	check("another dtype", frontend.FromSlice([]float64{1, 2, 3}, 3), stats{5, 5})
}

// TestGradReplayWritesBack: a tensor fn updates in place (a running
// statistic) gets its new value after a replayed call as after a traced
// one, and keeps its old value when the replayed call fails.
func TestGradReplayWritesBack(t *testing.T) {
	for _, n := range []int{3, 5} {
		run := func() ([]float32, *frontend.Tensor, frontend.Stats) {
			stat := frontend.FromSlice([]float32{0, 1, 2}, 3)
			fail := false
			f := func(x *frontend.Tensor) (*frontend.Tensor, error) {
				if err := stat.Assign(stat.Mul(frontend.Scalar(0.9)).Add(x.Mul(frontend.Scalar(0.1)))); err != nil {
					return nil, err
				}
				if fail {
					return nil, fmt.Errorf("refused")
				}
				return x.Mul(stat).Sum(nil, false), nil
			}
			g := frontend.Grad(f, 0)
			var last *frontend.Tensor
			for i := range n {
				grads, err := g.Call(frontend.FromSlice([]float32{float32(i), 1, -1}, 3))
				if err != nil {
					t.Fatal(err)
				}
				last = grads[0]
			}
			fail = true
			before := stat.Float32s()
			if _, err := g.Call(frontend.FromSlice([]float32{1, 1, 1}, 3)); err == nil || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("a failing call returned %v", err)
			}
			near(t, stat.Float32s(), before) // the failed call's update is undone
			return stat.Float32s(), last, g.Stats()
		}
		got, grad, st := run()
		if st.Replays != n-1 {
			t.Fatalf("%d calls: %d replays, want %d", n, st.Replays, n-1)
		}
		// The same sequence by hand.
		stat := []float32{0, 1, 2}
		var dx []float32
		for i := range n {
			x := []float32{float32(i), 1, -1}
			dx = dx[:0]
			for j := range stat {
				stat[j] = stat[j]*0.9 + x[j]*0.1
				dx = append(dx, stat[j]+x[j]*0.1) // ∂(x·stat)/∂x with stat depending on x
			}
		}
		near(t, got, stat)
		near(t, grad.Float32s(), dx)
	}
}

// TestGradReplayCotangents: VJP checks the cotangents it is given on a
// replayed call as on a traced one.
func TestGradReplayCotangents(t *testing.T) {
	vg := frontend.ValueAndGrad(func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(x) }, 0)
	x := frontend.FromSlice([]float32{1, 2}, 2)
	for i := range 3 {
		ct := frontend.FromSlice([]float32{1, float32(i)}, 2)
		_, grads, err := vg.VJP([]*frontend.Tensor{ct}, x)
		if err != nil {
			t.Fatal(err)
		}
		near(t, grads[0].Float32s(), []float32{2, 4 * float32(i)})
		if _, _, err := vg.VJP([]*frontend.Tensor{frontend.FromSlice([]float32{1, 2, 3}, 3)}, x); err == nil || !strings.Contains(err.Error(), "cotangent 0 is") {
			t.Fatalf("call %d: a cotangent of another shape gave %v", i, err)
		}
	}
	if s := vg.Stats(); s.Replays < 2 {
		t.Fatalf("%d replays, want at least 2", s.Replays)
	}
}

// TestGradReplayEscaped: a tensor fn computes and keeps without
// returning it has no value after a replayed call, as after a traced one.
func TestGradReplayEscaped(t *testing.T) {
	var kept *frontend.Tensor
	g := frontend.Grad(func(x *frontend.Tensor) *frontend.Tensor {
		kept = x.Tanh()
		return kept.Sum(nil, false)
	}, 0)
	for i := range 2 {
		if _, err := g.Call(frontend.FromSlice([]float32{1, 2}, 2)); err != nil {
			t.Fatal(err)
		}
		if kept.Err() == nil || !strings.Contains(kept.Err().Error(), "escaped") {
			t.Fatalf("call %d: the kept tensor is %v", i, kept)
		}
	}
	if s := g.Stats(); s.Replays != 1 {
		t.Fatalf("%d replays, want 1", s.Replays)
	}
}

// TestGradDifferentialCallSequences draws programs (runDiffProg's, whose
// graph breaks a gradient refuses) and call sequences with changes of the
// Go state between calls, and compares every call of one gradient, which
// replays, with a new gradient's traced call on a copy of the state.
func TestGradDifferentialCallSequences(t *testing.T) {
	var replays, calls int
	rapid.Check(t, func(t *rapid.T) {
		r, n := gradDiffCheck(t)
		replays, calls = replays+r, calls+n
	})
	if replays == 0 {
		t.Errorf("no call was replayed in %d: the test does not reach the replay", calls)
	}
}

func gradDiffCheck(t *rapid.T) (replays, calls int) {
	n := rapid.IntRange(1, 4).Draw(t, "n")
	prog := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) diffInstr {
		return diffInstr{rapid.IntRange(0, 13).Draw(t, "kind"), rapid.IntRange(0, diffRegs-1).Draw(t, "a"), rapid.IntRange(0, diffRegs-1).Draw(t, "b")}
	}), 1, 10).Draw(t, "prog")
	vals := func(label string, n int) []float32 {
		return rapid.SliceOfN(rapid.Float32Range(-2, 2), n, n).Draw(t, label)
	}
	var envs [2]diffEnv
	set := func(f func(e *diffEnv)) {
		for i := range envs {
			f(&envs[i])
		}
	}
	w, b, s := vals("w", n), vals("b", n), vals("s", n)
	set(func(e *diffEnv) {
		e.flag, e.k, e.scale = true, 1, 0.5
		e.w, e.m.B, e.s = frontend.FromSlice(w), frontend.FromSlice(b), frontend.FromSlice(s)
	})
	loss := func(e *diffEnv) func(x *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor, error) {
		return func(x *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor, error) {
			y, err := runDiffProg(prog, e, x)
			if err != nil {
				return nil, nil, err
			}
			return y.Mul(y).Sum(nil, false), y, nil
		}
	}
	vg := frontend.ValueAndGrad(loss(&envs[0]), 0)
	ncalls := rapid.IntRange(2, 6).Draw(t, "calls")
	for call := range ncalls {
		if call > 0 {
			for range rapid.IntRange(0, 2).Draw(t, "changes") {
				switch drawChange(t, "change") {
				case 0:
					set(func(e *diffEnv) { e.flag = !e.flag })
				case 1:
					k := rapid.IntRange(0, 3).Draw(t, "k")
					set(func(e *diffEnv) { e.k = k })
				case 2:
					sc := rapid.Float32Range(-1.5, 1.5).Draw(t, "scale")
					set(func(e *diffEnv) { e.scale = sc })
				case 3:
					nw := vals("w", n)
					set(func(e *diffEnv) { e.w = frontend.FromSlice(nw) })
				case 4:
					nb := vals("b", n)
					set(func(e *diffEnv) { e.m.B = frontend.FromSlice(nb) })
				case 5:
					set(func(e *diffEnv) { e.w = e.w.Sub(e.m.B.Mul(frontend.Scalar(0.1))) })
				case 6:
					n = rapid.IntRange(1, 4).Draw(t, "n")
					nw, nb, ns := vals("w", n), vals("b", n), vals("s", n)
					set(func(e *diffEnv) {
						e.w, e.m.B, e.s = frontend.FromSlice(nw), frontend.FromSlice(nb), frontend.FromSlice(ns)
					})
				case 7:
					d := rapid.Float32Range(-1, 1).Draw(t, "delta")
					set(func(e *diffEnv) {
						if err := e.s.AddInPlace(frontend.Scalar(d)); err != nil {
							t.Fatal(err)
						}
					})
				}
			}
		}
		xs := vals("x", n)
		seed, off := frontend.RandState()
		wv, wg, werr := frontend.ValueAndGrad(loss(&envs[1]), 0).Call(frontend.FromSlice(xs))
		frontend.SetRandState(seed, off) // the same random numbers
		gv, gg, gerr := vg.Call(frontend.FromSlice(xs))
		calls++
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("call %d: error %v, traced error %v", call, gerr, werr)
		}
		if werr != nil {
			if !strings.Contains(werr.Error(), "graph break") && !strings.Contains(werr.Error(), "escaped") {
				t.Fatalf("call %d: unexpected error %v", call, werr)
			}
			continue
		}
		for i := range wv {
			diffNear(t, fmt.Sprintf("call %d value %d", call, i), gv[i].Float32s(), wv[i].Float32s())
		}
		diffNear(t, fmt.Sprintf("call %d gradient", call), gg[0].Float32s(), wg[0].Float32s())
		diffNear(t, fmt.Sprintf("call %d state", call), envs[0].s.Float32s(), envs[1].s.Float32s())
	}
	return vg.Stats().Replays, calls
}
