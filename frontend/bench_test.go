package frontend_test

import (
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// BenchmarkCachedCall measures a call that passes a cached graph's guard
// (the graph itself is one small op).
func BenchmarkCachedCall(b *testing.B) {
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Neg() }, frontend.Options{})
	x := frontend.Ones(frontend.Float32, 4)
	if _, err := c.Call(x); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.Call(x); err != nil {
			b.Fatal(err)
		}
	}
}
