package frontend_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/frontend"
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

// BenchmarkEagerRun is the graphs of BenchmarkCachedCall's functions run
// by the executable alone, for comparison: the graph's own time.
func BenchmarkEagerRun(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			fn := chain(n)
			x := frontend.Ones(frontend.Float32, 4)
			for b.Loop() {
				if err := fn(x).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
