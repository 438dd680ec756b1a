package main

import (
	"math"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/interp"
	target "github.com/strata-ir/strata/targets/cpu"
)

// TestWorkloadsTranslate keeps the benchmark programs valid: each parses,
// lowers and translates for the host (the matmuls on the blocked path).
func TestWorkloadsTranslate(t *testing.T) {
	for _, w := range workloads() {
		ctx := dialects.NewContext()
		m, err := ir.ParseString(ctx, w.src)
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		pm, err := passes.Parse("builtin.module(lower-to-loop)")
		if err != nil {
			t.Fatal(err)
		}
		if err := pm.Run(ctx, m); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		mod, err := target.TranslateFor(m, "skylake-avx512")
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		matmuls := 0
		for _, k := range mod.Funcs["main"].Kernels {
			if k.Matmul {
				matmuls++
			}
		}
		// linear_t's 4 rows against Wᵀ are dot products (MatmulDotRows).
		want := map[string]int{"matmul": 1, "mlp": 2, "gemv": 1}[w.name]
		if matmuls != want {
			t.Errorf("%s: %d blocked matmul kernels, want %d", w.name, matmuls, want)
		}
		if (w.bytes > 0) == (w.flops > 0) {
			t.Errorf("%s: give bytes or flops", w.name)
		}
	}
}

func TestScaledError(t *testing.T) {
	got, _ := interp.FromFloat64s(ir.F32, []int64{3}, []float64{1, -2, 4.5})
	want, _ := interp.FromFloat64s(ir.F32, []int64{3}, []float64{1, -2, 4})
	if e := scaledError(got, want); math.Abs(e-0.125) > 1e-9 {
		t.Errorf("scaledError = %v, want 0.125", e)
	}
}
