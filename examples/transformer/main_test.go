package main

import (
	"math"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

func TestTransformer(t *testing.T) {
	var out strings.Builder
	if err := run(&out, frontend.InterpBackend); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "output [2 16 32]") {
		t.Errorf("output\n%s", out.String())
	}
}

// TestAttentionMatchesDecomposition checks the block's attention against
// the same computation from primitive ops, in the eager backend (no
// graph-decompose), so the composite and the primitives are compared.
func TestAttentionMatchesDecomposition(t *testing.T) {
	q, k, v := frontend.Rand(1, 2, 5, 8), frontend.Rand(2, 2, 5, 8), frontend.Rand(3, 2, 5, 8)
	got := frontend.Attention(q, k, v, frontend.AttentionOptions{}).Float32s()
	scores := q.MatMul(k.Transpose(0, 2, 1)).Mul(frontend.Full(frontend.Float32, 1/math.Sqrt(8), 1))
	want := scores.Softmax(-1).MatMul(v).Float32s()
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-5 {
			t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
		}
	}
}
