package togpu_test

import (
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
)

// BenchmarkLowerToGPU runs the whole lower-to-gpu pipeline (lower-to-loop,
// convert-loop-to-gpu, canonicalize, cse) on the 1000-op graph function of
// passes/lower's BenchmarkLowerToLoop.
func BenchmarkLowerToGPU(b *testing.B) {
	passtest.BenchmarkPipeline(b, "lower-to-gpu", passtest.RowChain(250))
}

// BenchmarkDedupKernels runs gpu-dedup-kernels alone on the kernels
// convert-loop-to-gpu makes of BenchmarkLowerToGPU's function; the
// lowering and the parse are not timed.
func BenchmarkDedupKernels(b *testing.B) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, passtest.RowChain(250), ir.ParseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-loop," + togpu.PassName + ")")
	if err != nil {
		b.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		b.Fatal(err)
	}
	src := ir.Sprint(m, ir.PrintOptions{Generic: true})
	want := -1
	for b.Loop() {
		b.StopTimer()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		n := togpu.DedupKernels(m)
		if want >= 0 && n != want {
			b.Fatalf("%d kernels merged, then %d", want, n)
		}
		want = n
	}
}
