package frontend_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// specCase is a program whose calls a speculating replay could get
// wrong: make returns a fresh fn (its state in closures) and what to do
// between calls (before call i), both built on backend opts.
type specCase struct {
	name  string
	calls int
	gpu   bool // it needs a GPU (ToGPU, Free)
	make  func(opts frontend.Options) (fn func(x *frontend.Tensor) (*frontend.Tensor, error), between func(i int) error)
}

var specCases = []specCase{
	{"capture updated in place between calls", 6, false, func(frontend.Options) (func(*frontend.Tensor) (*frontend.Tensor, error), func(int) error) {
		w := vec(1, 2)
		return func(x *frontend.Tensor) (*frontend.Tensor, error) { return x.Mul(w).Add(w), nil },
			func(i int) error {
				if i%2 == 1 {
					return w.AddInPlace(vec(1, 1))
				}
				return nil
			}
	}},
	{"capture updated by another compiled function", 6, false, func(opts frontend.Options) (func(*frontend.Tensor) (*frontend.Tensor, error), func(int) error) {
		w := vec(1, 2)
		upd, err := frontend.Compile(func() error { return w.MulInPlace(vec(2, 3)) }, opts)
		if err != nil {
			panic(err)
		}
		return func(x *frontend.Tensor) (*frontend.Tensor, error) { return x.Add(w), nil },
			func(i int) error {
				if i >= 3 {
					_, err := upd.Invoke()
					return err
				}
				return nil
			}
	}},
	{"nested compiled update before the read", 6, false, func(opts frontend.Options) (func(*frontend.Tensor) (*frontend.Tensor, error), func(int) error) {
		w := vec(1, 2)
		upd, err := frontend.Compile(func() error { return w.AddInPlace(vec(10, 10)) }, opts)
		if err != nil {
			panic(err)
		}
		n := 0
		return func(x *frontend.Tensor) (*frontend.Tensor, error) {
			n++
			if n >= 4 {
				if _, err := upd.Invoke(); err != nil {
					return nil, err
				}
			}
			return x.Mul(w), nil
		}, nil
	}},
	{"field replaced between calls", 6, false, func(frontend.Options) (func(*frontend.Tensor) (*frontend.Tensor, error), func(int) error) {
		m := &struct{ W *frontend.Tensor }{vec(1, 2)}
		return func(x *frontend.Tensor) (*frontend.Tensor, error) { return x.Sub(m.W).Exp(), nil },
			func(i int) error {
				if i == 4 {
					m.W = vec(3, 4)
				}
				return nil
			}
	}},
	{"fn rebinds its capture after using it", 6, false, func(frontend.Options) (func(*frontend.Tensor) (*frontend.Tensor, error), func(int) error) {
		w := vec(1, 2)
		return func(x *frontend.Tensor) (*frontend.Tensor, error) {
			y := x.Mul(w)
			w = w.Add(vec(1, -1)) // a Python-style side effect: the next call sees the new w
			return y, nil
		}, nil
	}},
	{"fn's previous result captured (a recurrence)", 6, false, func(frontend.Options) (func(*frontend.Tensor) (*frontend.Tensor, error), func(int) error) {
		h := vec(0, 0)
		return func(x *frontend.Tensor) (*frontend.Tensor, error) {
			h = h.Mul(vec(0.5, 0.5)).Add(x).Tanh()
			return h, nil
		}, nil
	}},
	{"a Go counter scaling the result", 6, false, func(frontend.Options) (func(*frontend.Tensor) (*frontend.Tensor, error), func(int) error) {
		step := 0
		return func(x *frontend.Tensor) (*frontend.Tensor, error) {
			step++
			return x.Mul(frontend.Scalar(float32(step))), nil
		}, nil
	}},
	{"dropout under a seed set each call", 6, false, func(frontend.Options) (func(*frontend.Tensor) (*frontend.Tensor, error), func(int) error) {
		return func(x *frontend.Tensor) (*frontend.Tensor, error) {
				return frontend.Dropout(x.Add(vec(1, 1)), 0.5, true), nil
			},
			func(i int) error { frontend.Seed(uint64(i % 3)); return nil }
	}},
	{"capture freed and replaced", 6, true, func(frontend.Options) (func(*frontend.Tensor) (*frontend.Tensor, error), func(int) error) {
		w := vec(1, 2).ToGPU()
		return func(x *frontend.Tensor) (*frontend.Tensor, error) { return x.Add(w), nil },
			func(i int) error {
				if i == 4 {
					if err := w.Free(); err != nil {
						return err
					}
					w = vec(5, 6)
				}
				return nil
			}
	}},
}

// TestSpeculationAdversarial runs programs that change what a replay
// would run ahead of fn — captures updated in place (eagerly, by another
// compiled function, by one fn calls before its read), fields replaced,
// captures rebound by fn itself, recurrences through a captured result,
// Go values, dropout under a seed, a capture freed and replaced — on a
// backend whose replays speculate (a DeviceExecutable) and eagerly, and
// compares every call's result and every result kept from earlier calls.
func TestSpeculationAdversarial(t *testing.T) {
	speculationAdversarial(t, fakeDevice())
}

// TestGPUSpeculationAdversarial runs the programs of
// TestSpeculationAdversarial on the GPU, whose executables run
// asynchronously.
func TestGPUSpeculationAdversarial(t *testing.T) {
	gpu(t)
	speculationAdversarial(t, frontend.NVPTXBackend)
}

func speculationAdversarial(t *testing.T, backend string) {
	for _, sc := range specCases {
		t.Run(sc.name, func(t *testing.T) {
			if sc.gpu && backend != frontend.NVPTXBackend {
				t.Skip("needs a GPU")
			}
			run := func(opts frontend.Options) ([][]float32, frontend.Stats) {
				fn, between := sc.make(opts)
				c, err := frontend.Compile(fn, opts)
				if err != nil {
					t.Fatal(err)
				}
				var kept []*frontend.Tensor
				var out [][]float32
				for i := range sc.calls {
					if between != nil {
						if err := between(i); err != nil {
							t.Fatalf("%s: before call %d: %v", opts.Backend, i, err)
						}
					}
					res, err := c.Call(vec(float32(i), 1-float32(i)))
					if err != nil {
						t.Fatalf("%s: call %d: %v", opts.Backend, i, err)
					}
					kept = append(kept, res[0])
				}
				for _, r := range kept { // read at the end: later calls must not have changed them
					out = append(out, r.Float32s())
				}
				return out, c.Stats()
			}
			frontend.Seed(0)
			want, _ := run(frontend.Options{Backend: frontend.EagerBackend})
			frontend.Seed(0)
			got, stats := run(frontend.Options{Backend: backend})
			for i := range want {
				if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
					t.Errorf("call %d: %v, eagerly %v (stats %+v)", i, got[i], want[i], stats)
				}
			}
			t.Logf("stats %+v", stats)
		})
	}
}
