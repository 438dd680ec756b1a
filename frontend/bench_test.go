package frontend_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/runtime/interp"
)

// chain returns a function of n elementwise ops on x and a captured
// weight.
func chain(n int) func(x *frontend.Tensor) *frontend.Tensor {
	w := frontend.Full(frontend.Float32, 0.5, 4)
	return func(x *frontend.Tensor) *frontend.Tensor {
		for i := range n {
			switch i % 3 {
			case 0:
				x = x.Mul(w)
			case 1:
				x = x.Add(w)
			default:
				x = x.Tanh()
			}
		}
		return x
	}
}

// BenchmarkCachedCall measures a call whose graph is compiled already:
// the host overhead of a cached call plus running the graph, for a 10-op
// and a 1000-op function on a 4-element tensor (the eager backend runs
// the graph op by op, so the graph's own time is small and the same
// before and after a change of the call path).
func BenchmarkCachedCall(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			c := frontend.MustCompile(chain(n), frontend.Options{Backend: frontend.EagerBackend})
			x := frontend.Ones(frontend.Float32, 4)
			if _, err := c.Call(x); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := c.Call(x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// memoBackend compiles with the eager backend and returns the first
// run's results on every later run: a call then costs only the
// frontend's own work, which BenchmarkCachedCallOverhead measures.
type memoBackend struct{}

func (memoBackend) Compile(g *frontend.Graph) (frontend.Executable, error) {
	inner, _ := frontend.LookupBackend(frontend.EagerBackend)
	exe, err := inner.Compile(g)
	if err != nil {
		return nil, err
	}
	var memo []*interp.Tensor
	return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
		if memo == nil {
			memo, err = exe.Run(in)
		}
		return memo, err
	}), nil
}

// BenchmarkCachedCallOverhead is BenchmarkCachedCall without the graph's
// own time: the host overhead of a cached call of a 10-op and a 1000-op
// function.
func BenchmarkCachedCallOverhead(b *testing.B) {
	frontend.RegisterBackend("memo", memoBackend{})
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			c := frontend.MustCompile(chain(n), frontend.Options{Backend: "memo"})
			x := frontend.Ones(frontend.Float32, 4)
			if _, err := c.Call(x); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := c.Call(x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
