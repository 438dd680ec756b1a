package cublaslt

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"unsafe"

	"github.com/strata-ir/strata/runtime/cuda"
)

// TestGPUMatmul runs a small batched product with A stored transposed on
// the GPU and checks it against a sum in float64: operands that are small
// integers make every product and sum exact, so any mix-up of layouts,
// transposes or batch strides shows.
func TestGPUMatmul(t *testing.T) {
	dev, alloc, hd := gpuHandle(t)
	t.Logf("cuBLASLt from %s", hd.Path())
	const batch, m, n, k = 3, 5, 7, 9
	// A stored [batch, K, M], B [batch, K, N]; bf16 of small integers.
	a, b := make([]float64, batch*k*m), make([]float64, batch*k*n)
	for i := range a {
		a[i] = float64(i%7 - 3)
	}
	for i := range b {
		b[i] = float64(i%5 - 2)
	}
	upload := func(data []byte) cuda.DevicePtr { return uploadBytes(t, dev, alloc, data) }
	pa, pb, pd := upload(bf16(a)), upload(bf16(b)), upload(make([]byte, 4*batch*m*n))
	mm := Matmul{AType: BF16, DType: F32, M: m, N: n, K: k, Batch: batch, TransA: true}
	for range 2 { // the second call reuses the plan
		if err := hd.Run(mm, pa, pb, pd, nil); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]byte, 4*batch*m*n)
	if err := dev.CopyDtoH(out, pd); err != nil {
		t.Fatal(err)
	}
	for z := range batch {
		for i := range m {
			for j := range n {
				want := 0.0
				for kk := range k {
					want += a[z*k*m+kk*m+i] * b[z*k*n+kk*n+j]
				}
				off := 4 * (z*m*n + i*n + j)
				if got := math.Float32frombits(binary.LittleEndian.Uint32(out[off:])); float64(got) != want {
					t.Fatalf("D[%d, %d, %d] = %g, want %g", z, i, j, got, want)
				}
			}
		}
	}
}

// TestGPUMatmulBias runs a batched bf16 product with the BIAS epilogue
// on small integers (exact in bf16 and f32): D[z, i, j] = Σ + bias[j] for
// every batch z; a second call with another bias buffer reuses the plan
// and reads the new bias.
func TestGPUMatmulBias(t *testing.T) {
	dev, alloc, hd := gpuHandle(t)
	const batch, m, n, k = 2, 5, 7, 9
	a, b := make([]float64, batch*m*k), make([]float64, batch*k*n)
	for i := range a {
		a[i] = float64(i%7 - 3)
	}
	for i := range b {
		b[i] = float64(i%5 - 2)
	}
	bias1, bias2 := make([]float64, n), make([]float64, n)
	for j := range n {
		bias1[j], bias2[j] = float64(10*j+1), float64(-3*j)
	}
	upload := func(data []byte) cuda.DevicePtr { return uploadBytes(t, dev, alloc, data) }
	pa, pb, pd := upload(bf16(a)), upload(bf16(b)), upload(make([]byte, 2*batch*m*n))
	mm := Matmul{AType: BF16, DType: BF16, M: m, N: n, K: k, Batch: batch, Bias: true}
	aligns := map[uint64]bool{}
	for _, bias := range [][]float64{bias1, bias2} {
		pbias := upload(bf16(bias))
		aligns[alignment(pbias)] = true
		if err := hd.RunBias(mm, pa, pb, pd, pbias, nil); err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 2*batch*m*n)
		if err := dev.CopyDtoH(out, pd); err != nil {
			t.Fatal(err)
		}
		for z := range batch {
			for i := range m {
				for j := range n {
					want := bias[j]
					for kk := range k {
						want += a[z*m*k+i*k+kk] * b[z*k*n+kk*n+j]
					}
					off := 2 * (z*m*n + i*n + j)
					got := math.Float32frombits(uint32(binary.LittleEndian.Uint16(out[off:])) << 16)
					if float64(got) != want {
						t.Fatalf("bias %v: D[%d, %d, %d] = %g, want %g", bias, z, i, j, got, want)
					}
				}
			}
		}
	}
	if len(hd.plans) != len(aligns) {
		t.Errorf("%d plans for one product, want one per bias alignment (%d)", len(hd.plans), len(aligns))
	}
}

// gpuHandle opens GPU 0, loads cuBLASLt and makes a handle on a caching
// allocator, all released when t ends; it skips t without a GPU or the
// library.
func gpuHandle(t *testing.T) (*cuda.Device, *cuda.Allocator, *Handle) {
	t.Helper()
	dev, err := cuda.Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	if err := Load(); err != nil {
		if errors.Is(err, ErrNotFound) {
			t.Skipf("no cuBLASLt: %v", err)
		}
		t.Fatal(err)
	}
	alloc := cuda.NewAllocator(dev)
	t.Cleanup(func() { alloc.EmptyCache() })
	hd, err := New(dev, alloc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hd.Close(); err != nil {
			t.Error(err)
		}
	})
	return dev, alloc, hd
}

// TestGPUMatmulSharedA runs a batched product whose A, one matrix, every
// batch multiplies (batch stride 0: an unstrided 1×1 convolution's
// weight), and checks it exactly against sums in float64.
func TestGPUMatmulSharedA(t *testing.T) {
	dev, alloc, hd := gpuHandle(t)
	const batch, m, n, k = 3, 6, 10, 4
	a, b := make([]float64, m*k), make([]float64, batch*k*n)
	for i := range a {
		a[i] = float64(i%5 - 2)
	}
	for i := range b {
		b[i] = float64(i%7 - 3)
	}
	upload := func(data []byte) cuda.DevicePtr { return uploadBytes(t, dev, alloc, data) }
	pa, pb, pd := upload(bf16(a)), upload(bf16(b)), upload(make([]byte, 4*batch*m*n))
	if err := hd.Run(Matmul{AType: BF16, DType: F32, M: m, N: n, K: k, Batch: batch, SharedA: true}, pa, pb, pd, nil); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*batch*m*n)
	if err := dev.CopyDtoH(out, pd); err != nil {
		t.Fatal(err)
	}
	for z := range batch {
		for i := range m {
			for j := range n {
				want := 0.0
				for kk := range k {
					want += a[i*k+kk] * b[z*k*n+kk*n+j]
				}
				if got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*(z*m*n+i*n+j):])); float64(got) != want {
					t.Fatalf("D[%d, %d, %d] = %g, want %g", z, i, j, got, want)
				}
			}
		}
	}
}

// bf16 encodes vs as bfloat16 (truncated: the tests' values are exact).
func bf16(vs []float64) []byte {
	out := make([]byte, 2*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(math.Float32bits(float32(v))>>16))
	}
	return out
}

// uploadBytes copies data to a new device buffer.
func uploadBytes(t *testing.T, dev *cuda.Device, alloc *cuda.Allocator, data []byte) cuda.DevicePtr {
	t.Helper()
	p, err := alloc.Alloc(uint64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.CopyHtoD(p, data); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGPUTuneWorkspace: every call of a Tune, a small product's one run
// (under TuneMinFlops) and a large one's candidates, is on the tuning
// workspace, and Run's on the handle's. A warm-up's Tune runs on a stream
// of its own beside the program's calls: on the handle's workspace, its
// kernels and the program's could overwrite each other's partial results.
func TestGPUTuneWorkspace(t *testing.T) {
	dev, alloc, hd := gpuHandle(t)
	var used []cuda.DevicePtr
	l := *hd.lib
	matmul := l.cublasLtMatmul
	l.cublasLtMatmul = func(h, desc uintptr, alpha unsafe.Pointer, a uint64, adesc uintptr, b uint64, bdesc uintptr,
		beta unsafe.Pointer, c uint64, cdesc uintptr, d uint64, ddesc uintptr, algo unsafe.Pointer,
		workspace uint64, workspaceBytes uint64, stream uintptr) Status {
		used = append(used, cuda.DevicePtr(workspace))
		return matmul(h, desc, alpha, a, adesc, b, bdesc, beta, c, cdesc, d, ddesc, algo, workspace, workspaceBytes, stream)
	}
	hd.lib = &l
	st, err := dev.NewNonBlockingStream()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destroy()
	for _, mm := range []Matmul{
		{AType: BF16, DType: BF16, M: 1, N: 1, K: 3, Batch: 90},         // one run
		{AType: BF16, DType: BF16, M: 1024, N: 1024, K: 1024, Batch: 1}, // timed candidates
	} {
		bytes := func(rows, cols int64) uint64 { return uint64(2 * rows * cols * mm.Batch) }
		a, b, d := uploadBytes(t, dev, alloc, make([]byte, bytes(mm.M, mm.K))),
			uploadBytes(t, dev, alloc, make([]byte, bytes(mm.K, mm.N))), uploadBytes(t, dev, alloc, make([]byte, bytes(mm.M, mm.N)))
		used = used[:0]
		if err := hd.Tune(mm, a, b, d, 0, st); err != nil {
			t.Fatal(err)
		}
		if err := st.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if len(used) == 0 {
			t.Fatalf("%dx%dx%d: Tune made no call", mm.M, mm.N, mm.K)
		}
		for i, ws := range used {
			if ws != hd.tuneWorkspace || ws == hd.workspace {
				t.Errorf("%dx%dx%d: Tune's call %d on workspace %#x, want the tuning one %#x (the handle's: %#x)",
					mm.M, mm.N, mm.K, i, uint64(ws), uint64(hd.tuneWorkspace), uint64(hd.workspace))
			}
		}
		used = used[:0]
		if err := hd.Run(mm, a, b, d, nil); err != nil {
			t.Fatal(err)
		}
		if len(used) != 1 || used[0] != hd.workspace {
			t.Errorf("%dx%dx%d: Run's calls on workspaces %v, want the handle's %#x", mm.M, mm.N, mm.K, used, uint64(hd.workspace))
		}
	}
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
}
