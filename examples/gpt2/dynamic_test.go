package gpt2

import (
	"errors"
	"fmt"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/passes/togpu"
)

// TestDynamicPrefillCompilesOnce calls the compiled prefill of the toy
// model at several sequence lengths: one compile serves them all, and
// every call's logits equal the static model's (Logits, run eagerly).
func TestDynamicPrefillCompilesOnce(t *testing.T) {
	for _, be := range []string{frontend.InterpBackend, frontend.CPUBackend} {
		t.Run(be, func(t *testing.T) {
			m := New(Toy)
			p, err := NewDynamicPrefill(m, frontend.Options{Backend: be})
			if err != nil {
				t.Fatal(err)
			}
			lengths := []int{5, 9, 16, 2, 7, 9}
			for i, n := range lengths {
				idx := nn.NewRNG(uint64(10+i)).Int64s(Toy.Vocab, 2, n)
				got, err := p.Call(idx)
				if err != nil {
					t.Fatalf("T=%d: %v", n, err)
				}
				want := m.Logits(idx)
				if fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
					t.Fatalf("T=%d: logits of shape %v, want %v", n, got.Shape(), want.Shape())
				}
				if d := maxDiff(got.Float64s(), want.Float64s()); d > 1e-4 {
					t.Errorf("T=%d: logits differ from the static model's by %g", n, d)
				}
			}
			st := p.Compiled().Frontend().Stats()
			if st.Compiles != 1 || st.Recompiles != 0 || st.Calls != len(lengths) {
				t.Errorf("stats %+v, want 1 compile for %d calls", st, len(lengths))
			}
			// One positions tensor a length, made once: a call of a
			// length seen before passes the same tensor (no copy).
			if len(p.positions) != 5 {
				t.Errorf("%d positions tensors for 5 lengths", len(p.positions))
			}
			idx := nn.NewRNG(1).Int64s(Toy.Vocab, 2, 9)
			if a, b := p.positionsOf(idx), p.positionsOf(idx); a != b || fmt.Sprint(a.Int64s()) != "[0 1 2 3 4 5 6 7 8]" {
				t.Errorf("positions of T=9: %v and %v, want one tensor [0, 9)", a.Int64s(), b.Int64s())
			}
		})
	}
}

// TestDynamicPrefillChecksLength: a sequence longer than the context is
// an error, not a call.
func TestDynamicPrefillChecksLength(t *testing.T) {
	p, err := NewDynamicPrefill(New(Toy), frontend.Options{Backend: frontend.InterpBackend})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(nn.NewRNG(1).Int64s(Toy.Vocab, 1, Toy.Ctx+1)); err == nil {
		t.Errorf("%d tokens in a context of %d: no error", Toy.Ctx+1, Toy.Ctx)
	}
}

// maxDiff is the largest |a[i] - b[i]|.
func maxDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return 1e300
	}
	d := 0.0
	for i := range a {
		d = max(d, abs(a[i]-b[i]))
	}
	return d
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestDynamicPrefillLowersForTheGPU lowers the dynamic prefill's graph
// (bf16, the sequence length symbolic) with the nvptx backend's passes.
func TestDynamicPrefillLowersForTheGPU(t *testing.T) {
	name, got := loweringBackend(t)
	m := New(small)
	if err := nn.Cast(m, frontend.BFloat16); err != nil {
		t.Fatal(err)
	}
	p, err := NewDynamicPrefill(m, frontend.Options{Backend: name})
	if err != nil {
		t.Fatal(err)
	}
	x, _ := batch(small, 2, 32)
	if _, err := p.Call(x); !errors.Is(err, errLowered) {
		t.Fatalf("prefill: %v, want the backend's stop", err)
	}
	gs := got()
	if len(gs) != 1 {
		t.Fatalf("%d graphs lowered, want 1", len(gs))
	}
	// Four products a layer (c_attn's q, k and v in one, the output
	// projection, the MLP's two) and the head, every one an mma kernel
	// whatever the length; every attention one flash kernel taking the
	// length at run time (no decomposed attention: its two batched
	// products would be more mma kernels).
	products := 4*small.Layers + 1
	if g := gs[0]; !g.dynamic || g.matmuls != products || g.mappings[togpu.MappingMMA] != products || g.mappings[togpu.MappingFlash] != small.Layers {
		t.Errorf("lowered %+v; want a dynamic graph, %d products, as many mma kernels, %d flash kernels", g, products, small.Layers)
	}
}

// TestDynamicPrefillOnTheLibrary lowers the dynamic prefill of a bf16
// model with heads of 64 as the nvptx backend does with cuBLASLt
// (libraryPipeline): every product a gpu.library_matmul whatever the
// length (no mma kernel), every attention a flash kernel taking the length
// at run time. The lowered graph, run in the interpreter at several
// lengths, computes what the graph does; one compile serves them all.
func TestDynamicPrefillOnTheLibrary(t *testing.T) {
	cfg := Config{Vocab: 32, Ctx: 80, D: 128, Heads: 2, Layers: 2, Seed: 3}
	bf := New(cfg)
	if err := nn.Cast(bf, frontend.BFloat16); err != nil {
		t.Fatal(err)
	}
	name, got := loweringBackendWith(t, libraryPipeline)
	p, err := NewDynamicPrefill(bf, frontend.Options{Backend: name})
	if err != nil {
		t.Fatal(err)
	}
	x, _ := batch(cfg, 2, 16)
	if _, err := p.Call(x); !errors.Is(err, errLowered) {
		t.Fatalf("prefill: %v, want the backend's stop", err)
	}
	if gs := got(); len(gs) != 1 || gs[0].mappings[togpu.MappingMMA] != 0 || gs[0].mappings[togpu.MappingFlash] != cfg.Layers {
		t.Errorf("lowered %+v; want one graph, no mma kernel, %d flash kernels", gs, cfg.Layers)
	}

	check, checked := checkingBackend(t, libraryPipeline)
	p, err = NewDynamicPrefill(bf, frontend.Options{Backend: check})
	if err != nil {
		t.Fatal(err)
	}
	lengths := []int{2, 7, 70}
	for _, n := range lengths {
		x, _ := batch(cfg, 2, n)
		if _, err := p.Call(x); err != nil {
			t.Fatalf("T=%d: %v", n, err)
		}
	}
	if st := p.Compiled().Frontend().Stats(); st.Compiles != 1 || checked() != len(lengths) {
		t.Errorf("stats %+v, %d calls checked: want 1 compile, every call checked", st, checked())
	}
}
