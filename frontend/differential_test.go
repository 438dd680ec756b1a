package frontend_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"pgregory.net/rapid"
)

// diffEnv is the Go state a drawn program reads and changes: captured
// scalars, a captured weight, a struct field and an in-place state.
type diffEnv struct {
	flag  bool
	k     int
	scale float32
	w     *frontend.Tensor
	m     struct{ B *frontend.Tensor }
	s     *frontend.Tensor
}

// diffInstr is one instruction of a drawn program.
type diffInstr struct {
	kind, a, b int
}

const diffRegs = 3

// run interprets prog on x with e's state, as the Go function a user
// would write: Go control flow on captured values, tensor ops, host
// reads, in-place updates.
func runDiffProg(prog []diffInstr, e *diffEnv, x *frontend.Tensor) (*frontend.Tensor, error) {
	regs := [diffRegs]*frontend.Tensor{x, x.Neg(), x.Tanh()}
	for _, in := range prog {
		a, b := in.a%diffRegs, in.b%diffRegs
		switch in.kind {
		case 0:
			regs[a] = regs[a].Tanh()
		case 1:
			regs[a] = regs[a].Add(regs[b])
		case 2:
			regs[a] = regs[a].Mul(regs[b]).Sigmoid()
		case 3:
			regs[a] = regs[a].Mul(e.w)
		case 4:
			regs[a] = regs[a].Add(e.m.B)
		case 5:
			if e.flag {
				regs[a] = regs[a].Neg()
			} else {
				regs[a] = regs[a].Abs()
			}
		case 6:
			for range e.k {
				regs[a] = regs[a].Mul(frontend.Scalar(e.scale)).Tanh()
			}
		case 7:
			if regs[a].Sum(nil, false).Item() > 0 { // a break: a pending value
				regs[b] = regs[b].Relu()
			}
		case 8:
			if x.Float32s()[0] > 0 { // a break: an argument's value
				regs[a] = regs[a].Sub(regs[b])
			}
		case 9:
			if err := e.s.AddInPlace(regs[a].Mul(frontend.Scalar(0.5))); err != nil {
				return nil, err
			}
		case 10:
			regs[a] = regs[a].Add(e.s)
		case 11:
			if err := e.s.Assign(regs[a].Tanh()); err != nil {
				return nil, err
			}
		case 12:
			regs[a] = regs[a].Max(regs[b])
		case 13:
			regs[a] = frontend.Dropout(regs[a], 0.5, e.flag)
		}
	}
	return regs[0].Add(regs[1]).Sub(regs[2]), nil
}

// diffChange is one change of the state between calls.
func drawChange(t *rapid.T, label string) int { return rapid.IntRange(0, 7).Draw(t, label) }

// TestDifferentialCallSequences draws programs and sequences of calls
// with changes of the Go state between them (scalar flips, weight
// rebinding, a field replaced, in-place updates inside and outside the
// function, value-dependent branches, shape changes) and compares every
// compiled call, and the state it leaves, with the function run eagerly.
func TestDifferentialCallSequences(t *testing.T) {
	// fakeDevice's executables are DeviceExecutables: their replays run
	// ahead of fn (speculate.go).
	for _, be := range []string{frontend.InterpBackend, frontend.AOTEagerBackend, fakeDevice()} {
		for _, dyn := range []frontend.Dynamic{frontend.DynamicAuto, frontend.DynamicTrue} {
			t.Run(fmt.Sprintf("%s/%s", be, dyn), func(t *testing.T) {
				var all frontend.Stats
				rapid.Check(t, func(t *rapid.T) {
					s := diffCheck(t, be, dyn)
					all.Replays += s.Replays
					all.Speculated += s.Speculated
				})
				if all.Replays == 0 {
					t.Errorf("no call was replayed: the test does not reach the cached path")
				}
				if be == fakeDevice() && dyn == frontend.DynamicAuto && all.Speculated == 0 {
					t.Errorf("no replay ran ahead of fn: the test does not reach the speculative path")
				}
			})
		}
	}
}

// diffCheck runs one drawn program and call sequence and returns the
// compiled function's counters (how many calls were replayed).
// TestGPUDifferentialCallSequences is the differential test on the nvptx
// backend (run it with a small -rapid.checks: every graph is compiled to
// PTX).
func TestGPUDifferentialCallSequences(t *testing.T) {
	gpu(t)
	var replays int
	rapid.Check(t, func(t *rapid.T) { replays += diffCheck(t, frontend.NVPTXBackend, frontend.DynamicAuto).Replays })
	if replays == 0 {
		t.Errorf("no call was replayed")
	}
}

func diffCheck(t *rapid.T, be string, dyn frontend.Dynamic) frontend.Stats {
	n := rapid.IntRange(1, 5).Draw(t, "n")
	prog := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) diffInstr {
		return diffInstr{rapid.IntRange(0, 13).Draw(t, "kind"), rapid.IntRange(0, diffRegs-1).Draw(t, "a"), rapid.IntRange(0, diffRegs-1).Draw(t, "b")}
	}), 1, 12).Draw(t, "prog")
	vals := func(label string, n int) []float32 {
		return rapid.SliceOfN(rapid.Float32Range(-2, 2), n, n).Draw(t, label)
	}
	// Two copies of the state: one for the compiled function, one for
	// the eager reference, changed identically.
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
	compiled := &envs[0]
	c := frontend.MustCompile(func(x *frontend.Tensor) (*frontend.Tensor, error) { return runDiffProg(prog, compiled, x) },
		frontend.Options{Backend: be, Dynamic: dyn})
	calls := rapid.IntRange(1, 6).Draw(t, "calls")
	for call := range calls {
		if call > 0 {
			for range rapid.IntRange(0, 3).Draw(t, "changes") {
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
					set(func(e *diffEnv) { e.w = frontend.FromSlice(nw) }) // rebinding
				case 4:
					nb := vals("b", n)
					set(func(e *diffEnv) { e.m.B = frontend.FromSlice(nb) }) // a field replaced
				case 5:
					set(func(e *diffEnv) { e.w = e.w.Sub(e.m.B.Mul(frontend.Scalar(0.1))) }) // w = w - lr*g
				case 6:
					n = rapid.IntRange(1, 5).Draw(t, "n") // a shape change: every tensor anew
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
		want, werr := runDiffProg(prog, &envs[1], frontend.FromSlice(xs))
		var wantVals []float32
		if werr == nil {
			wantVals = want.Float32s()
			werr = want.Err()
		}
		frontend.SetRandState(seed, off) // the same random numbers
		got, gerr := c.Call(frontend.FromSlice(xs))
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("call %d: compiled error %v, eager error %v", call, gerr, werr)
		}
		if werr != nil {
			continue
		}
		diffNear(t, fmt.Sprintf("call %d result", call), got[0].Float32s(), wantVals)
		diffNear(t, fmt.Sprintf("call %d state", call), envs[0].s.Float32s(), envs[1].s.Float32s())
	}
	return c.Stats()
}

func diffNear(t *rapid.T, what string, got, want []float32) {
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-4*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("%s: element %d: got %v, want %v (all: %v vs %v)", what, i, got[i], want[i], got, want)
		}
	}
}
