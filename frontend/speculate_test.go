package frontend_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// speculating compiles fn on a deviceBackend (a DeviceExecutable, as the
// GPU's) of its own and returns it with the backend.
func speculating(t *testing.T, fn any) (*frontend.Compiled, *deviceBackend) {
	t.Helper()
	b := &deviceBackend{}
	name := "device-" + t.Name()
	frontend.RegisterBackend(name, b)
	c, err := frontend.Compile(fn, frontend.Options{Backend: name})
	if err != nil {
		t.Fatal(err)
	}
	return c, b
}

// TestSpeculativeReplay checks that a replayed call of a GPU executable
// queues it before fn runs, once the tape's last replay lifted the same
// captured tensors: from the third call on, fn finds the executable
// already run, the results are right, and it ran once a call.
func TestSpeculativeReplay(t *testing.T) {
	w := frontend.FromSlice([]float32{10, 20})
	var runsAtEntry []int32
	var b *deviceBackend
	c, b := speculating(t, func(x *frontend.Tensor) *frontend.Tensor {
		runsAtEntry = append(runsAtEntry, b.runs.Load())
		return x.Add(w).Mul(x)
	})
	for i := range 5 {
		x := frontend.FromSlice([]float32{1, float32(i)})
		out := call(t, c, x)
		near(t, out[0].Float32s(), []float32{11, (20 + float32(i)) * float32(i)})
	}
	// Calls 1 and 2 (the trace, the first replay) run at their end;
	// calls 3–5 before fn.
	want := []int32{0, 1, 3, 4, 5}
	for i, r := range runsAtEntry {
		if r != want[i] {
			t.Fatalf("runs when fn began, call by call: %v, want %v", runsAtEntry, want)
		}
	}
	if r := b.runs.Load(); r != 5 {
		t.Errorf("the executable ran %d times for 5 calls", r)
	}
	if s := c.Stats(); s.Speculated != 3 || s.Dropped != 0 || s.Replays != 4 {
		t.Errorf("stats %+v: want 4 replays, 3 of them speculated, none dropped", s)
	}
}

// TestSpeculationDroppedForOtherCapture checks that a speculative run
// on the tensors the last replay captured is thrown away when fn
// captures another tensor of the same shape: the results are the new
// tensor's, and the tape stops speculating.
func TestSpeculationDroppedForOtherCapture(t *testing.T) {
	w := frontend.FromSlice([]float32{10, 20})
	c, b := speculating(t, func(x *frontend.Tensor) *frontend.Tensor { return x.Add(w) })
	x := frontend.FromSlice([]float32{1, 2})
	for range 3 {
		near(t, call(t, c, x)[0].Float32s(), []float32{11, 22})
	}
	w = frontend.FromSlice([]float32{100, 200})
	near(t, call(t, c, x)[0].Float32s(), []float32{101, 202})
	near(t, call(t, c, x)[0].Float32s(), []float32{101, 202})
	s := c.Stats()
	if s.Speculated != 1 || s.Dropped != 1 {
		t.Errorf("stats %+v: want the third call speculated and the fourth's dropped", s)
	}
	// 5 calls, one of them run twice (the dropped speculation), none
	// speculating after it.
	if r := b.runs.Load(); r != 6 {
		t.Errorf("the executable ran %d times, want 6", r)
	}
}

// TestSpeculationDroppedOnDivergence checks a speculation of a replay
// that takes another path: fn's new graph runs and is the result, the
// speculative results are dropped, and the first tape no longer
// speculates when fn goes back to it.
func TestSpeculationDroppedOnDivergence(t *testing.T) {
	double := false
	c, _ := speculating(t, func(x *frontend.Tensor) *frontend.Tensor {
		if double {
			return x.Add(x)
		}
		return x.Neg()
	})
	x := frontend.FromSlice([]float32{1, 2})
	for range 3 {
		near(t, call(t, c, x)[0].Float32s(), []float32{-1, -2})
	}
	double = true
	near(t, call(t, c, x)[0].Float32s(), []float32{2, 4})
	double = false
	for range 2 {
		near(t, call(t, c, x)[0].Float32s(), []float32{-1, -2})
	}
	if s := c.Stats(); s.Speculated != 1 || s.Dropped != 1 {
		t.Errorf("stats %+v: want one speculation used (call 3), one dropped (call 4)", s)
	}
}

// TestNoSpeculationOfInPlaceUpdates checks that a tape that assigns a
// tensor in place never runs ahead of fn, and that a failing fn drops a
// speculation without effect on the next call.
func TestNoSpeculationOfInPlaceUpdates(t *testing.T) {
	acc := frontend.FromSlice([]float32{0, 0})
	c, _ := speculating(t, func(x *frontend.Tensor) (*frontend.Tensor, error) {
		if err := acc.Assign(acc.Add(x)); err != nil {
			return nil, err
		}
		return acc.Mul(x), nil
	})
	x := frontend.FromSlice([]float32{1, 2})
	for i := range 4 {
		k := float32(i + 1)
		near(t, call(t, c, x)[0].Float32s(), []float32{k, 4 * k})
	}
	if s := c.Stats(); s.Speculated != 0 || s.Dropped != 0 {
		t.Errorf("stats %+v: a tape updating in place speculated", s)
	}

	fail := false
	c2, _ := speculating(t, func(x *frontend.Tensor) (*frontend.Tensor, error) {
		y := x.Exp()
		if fail {
			return nil, errors.New("fn failed")
		}
		return y, nil
	})
	for range 3 {
		call(t, c2, x)
	}
	fail = true
	if _, err := c2.Call(x); err == nil {
		t.Fatal("fn's error was lost")
	}
	fail = false
	near(t, call(t, c2, frontend.FromSlice([]float32{0, 0}))[0].Float32s(), []float32{1, 1})
	if s := c2.Stats(); s.Speculated != 1 || s.Dropped != 1 {
		t.Errorf("stats %+v: want call 3 speculated and the failed call's speculation dropped", s)
	}
}

// fakeDevice registers, once, a deviceBackend for the differential and
// adversarial tests, and returns its name.
var fakeDevice = sync.OnceValue(func() string {
	const name = "device-fake"
	frontend.RegisterBackend(name, &deviceBackend{})
	return name
})
