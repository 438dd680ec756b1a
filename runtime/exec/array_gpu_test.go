package exec

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/strata-ir/strata/runtime/interp"
)

// TestGPUArrayChain chains vadd on device Arrays with and without CUDA
// graphs on fresh random data: launches, uploads, graph replays and the
// device copies into and out of a graph's buffers run on different
// streams, and must be ordered as one; every result is checked against
// the interpreter, and the chain copies nothing to or from the host.
func TestGPUArrayChain(t *testing.T) {
	rt := openGPU(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	p := compileFile(t, "vadd.mlir")
	for _, graphs := range []bool{false, true} {
		r := NewRunner(p, rt, "main", graphs)
		rng := rand.New(rand.NewPCG(seed, 3))
		n := 1<<20 + 3 // large enough that a missing order shows
		ha, hb := randomF32(t, rng, n, 1), randomF32(t, rng, n, 1)
		a, err := rt.Upload(ha)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rt.Upload(hb)
		if err != nil {
			t.Fatal(err)
		}
		before := rt.Transfers()
		x := interp.Value(a)
		const calls = 5
		for range calls {
			res, err := r.RunDevice([]interp.Value{x, b})
			if err != nil {
				t.Fatal(err)
			}
			x = res[0]
		}
		d := rt.Transfers().Sub(before)
		if d.HtoD != 0 || d.DtoH != 0 || !graphs && d.DtoD != 0 {
			t.Errorf("graphs %v: the chain copied: %v", graphs, d)
		}
		got := f32s(t, x)
		va, vb := interp.Elems[float32](mustTensor(t, ha)), interp.Elems[float32](mustTensor(t, hb))
		for i := range got {
			w := va[i]
			for range 2 * calls {
				w += vb[i]
			}
			if diff := got[i] - w; diff > 1e-4 || diff < -1e-4 {
				t.Fatalf("graphs %v: element %d: %v, want %v", graphs, i, got[i], w)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		for _, arr := range []*Array{a, b, x.(*Array)} {
			if err := arr.Release(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
