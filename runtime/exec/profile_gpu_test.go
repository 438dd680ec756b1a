package exec

import (
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestGPUProfile profiles vadd.mlir's two launches over three plan
// launches, then the same plan captured as a CUDA graph: each kernel (the
// graph as a whole) is timed once per launch, with the plan's idle time
// between them, the profiled launches compute what the interpreter does,
// one profile runs at a time, and Bound.Profile times the same kernels.
func TestGPUProfile(t *testing.T) {
	rt := openGPU(t)
	p := compileFile(t, "vadd.mlir")
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 1 << 18 // the interpreter checks every element: 4M took ~15 s
	var args []interp.Value
	for range 2 {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = rng.NormFloat64()
		}
		x, err := interp.FromFloat64s(ir.F32, []int64{n}, vals)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, interp.BufferFromTensor(x))
	}
	b, err := p.Prepare(rt, "main", args)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if err := b.Launch(); err != nil { // loads the kernels
		t.Fatal(err)
	}
	if err := rt.StartProfile(); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartProfile(); err == nil {
		t.Error("a second profile started while one runs")
	}
	for range 3 {
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.Results()
	if err != nil {
		t.Fatal(err)
	}
	compare(t, p, args, got, 0)
	entries, err := rt.StopProfile()
	if err != nil {
		t.Fatal(err)
	}
	var kernels []ProfileEntry
	idle := 0
	for _, e := range entries {
		switch {
		case e.Kind == IdleKind:
			idle++
			if e.Func != "main" || e.Calls != 3 || e.Ms < 0 {
				t.Errorf("idle time %+v, want @main's over 3 launches", e)
			}
		case e.Func != "main" || e.Label != "@vadd (?)" || e.Kind != "kernel (?)" || e.Calls != 3 || e.Ms <= 0:
			t.Errorf("profiled %+v, want @main's @vadd launched 3 times", e)
		default:
			kernels = append(kernels, e)
		}
	}
	if len(kernels) != 2 || idle != 1 {
		t.Fatalf("%d kernels and %d idle entries, want vadd's two launches and one: %+v", len(kernels), idle, entries)
	}
	entries = kernels
	whole, err := b.Time(1, 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("vadd ×2 on %d floats: profile (a launch) %.4f + %.4f ms, whole launch %.4f ms\n%s", n, entries[0].Ms/3, entries[1].Ms/3, whole, FormatProfile(entries, 0))
	// Bound.Profile: the same two kernels, each once a launch.
	prof, err := b.Profile(4)
	if err != nil {
		t.Fatal(err)
	}
	launches := 0
	for _, e := range prof {
		if e.Kind != IdleKind {
			launches += e.Calls
			if e.Calls != 4 || e.Ms <= 0 {
				t.Errorf("Bound.Profile(4): %+v, want 4 timed launches", e)
			}
		}
	}
	if launches != 8 {
		t.Errorf("Bound.Profile(4) timed %d kernel launches, want 8: %+v", launches, prof)
	}
	if _, err := b.Capture(); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartProfile(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	entries, err = rt.StopProfile()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Label != "cuda graph" || entries[0].Calls != 2 || entries[0].Ms <= 0 {
		t.Errorf("profile of the graph's replays: %+v", entries)
	}
}
