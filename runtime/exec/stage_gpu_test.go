package exec

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/strata-ir/strata/runtime/interp"
)

// TestGPUStagedUploads checks the staged small uploads on the device: a
// small upload queued behind a long chain of kernels returns without
// waiting for them, and a chain whose every call uploads a fresh small
// input (through the arguments and through Upload, more bytes than the
// staging buffer holds, so its halves are reused) computes what the host
// computes.
func TestGPUStagedUploads(t *testing.T) {
	rt := openGPU(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	p := compileFile(t, "vadd.mlir")
	r := NewRunner(p, rt, "main", false)
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()

	// A chain of 16M-element adds: tens of milliseconds queued.
	const big = 16 << 20
	a, err := rt.Upload(mustTensor(t, randomF32(t, rng, big, 1)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.Upload(mustTensor(t, randomF32(t, rng, big, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Synchronize(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	x := interp.Value(a)
	for range 200 {
		res, err := r.RunDevice([]interp.Value{x, b})
		if err != nil {
			t.Fatal(err)
		}
		if x != interp.Value(a) {
			if err := x.(*Array).Release(); err != nil {
				t.Fatal(err)
			}
		}
		x = res[0]
	}
	queued := time.Since(start)
	before := time.Now()
	if _, err := rt.Upload(mustTensor(t, randomF32(t, rng, 1000, 1))); err != nil {
		t.Fatal(err)
	}
	upload := time.Since(before)
	if err := rt.Synchronize(); err != nil {
		t.Fatal(err)
	}
	left := time.Since(start) - queued
	t.Logf("200 calls queued in %v, the device done %v later; a 4000-byte upload returned in %v", queued, left, upload)
	if left > 10*time.Millisecond && upload > left/2 {
		t.Errorf("the small upload took %v with %v of kernels queued before it: it waited for them", upload, left)
	}

	// Fresh small inputs every call, through the ring's halves.
	const n = 1000
	want := make([]float32, n)
	x0 := mustTensor(t, randomF32(t, rng, n, 1))
	copy(want, interp.Elems[float32](x0))
	x = interp.Value(x0)
	for i := range 3 * stageBytes / (4 * n) {
		y := mustTensor(t, randomF32(t, rng, n, 1))
		arg := interp.Value(y)
		if i%2 == 1 {
			if arg, err = rt.Upload(y); err != nil {
				t.Fatal(err)
			}
		}
		res, err := r.RunDevice([]interp.Value{x, arg})
		if err != nil {
			t.Fatal(err)
		}
		x = res[0]
		for j, v := range interp.Elems[float32](y) {
			want[j] = (want[j] + v) + v
		}
	}
	got := f32s(t, x)
	for j := range got {
		if d := got[j] - want[j]; d > 1e-3 || d < -1e-3 {
			t.Fatalf("element %d: %v, want %v", j, got[j], want[j])
		}
	}
}
