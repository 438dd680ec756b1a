package cublaslt

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-ir/strata/runtime/cuda"
)

// TestSearchMissing checks that a search finding nothing is ErrNotFound
// and says what it tried.
func TestSearchMissing(t *testing.T) {
	_, err := search([]string{"libstrata-no-such-cublasLt.so.12"})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("got %v, want an error wrapping ErrNotFound", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "cuBLASLt not found: tried $STRATA_CUBLASLT, 1 paths: libstrata-no-such-cublasLt.so.12: ") {
		t.Errorf("unclear message %q", msg)
	}
}

// TestSearchNotCuBLASLt checks that a library without cuBLASLt's entry
// points is refused cleanly (not by a panic while binding), and that the
// search goes on to the next candidate.
func TestSearchNotCuBLASLt(t *testing.T) {
	_, err := search([]string{"libc.so.6", "libstrata-no-such-cublasLt.so.13"})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "libc.so.6 has no cublasLtCreate") ||
		!strings.Contains(err.Error(), "libstrata-no-such-cublasLt.so.13") {
		t.Fatalf("got %v, want ErrNotFound naming libc's missing cublasLtCreate and the second path", err)
	}
}

// TestCandidates checks the search order: $STRATA_CUBLASLT first, then
// the sonames, newest first.
func TestCandidates(t *testing.T) {
	t.Setenv(EnvPath, "/opt/x/libcublasLt.so.12")
	c := candidates()
	if len(c) < 3 || c[0] != "/opt/x/libcublasLt.so.12" || c[1] != "libcublasLt.so.13" || c[2] != "libcublasLt.so.12" {
		t.Errorf("candidates() = %q", c)
	}
}

// TestMatmulCheck checks the products Run refuses before calling the
// library.
func TestMatmulCheck(t *testing.T) {
	ok := Matmul{AType: BF16, DType: BF16, M: 3, N: 5, K: 7, Batch: 2}
	if err := ok.check(); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	for _, tc := range []struct {
		m    func(*Matmul)
		want string
	}{
		{func(m *Matmul) { m.AType = F32 }, "operands must be bf16 or f16"},
		{func(m *Matmul) { m.DType = F16 }, "the result must be bf16 or f32"},
		{func(m *Matmul) { m.K = 0 }, "every size must be positive"},
		{func(m *Matmul) { m.Batch = 1 << 31 }, "sizes must fit in 32 bits"},
		{func(m *Matmul) { m.Bias, m.DType = true, F32 }, "with a bias: the result must be bf16"},
	} {
		m := ok
		tc.m(&m)
		if err := m.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", m, err, tc.want)
		}
	}
}

// TestRunBiasMisuse checks that a product with a bias is refused by Run
// and one without by RunBias (or without the bias's address), before the
// library is touched.
func TestRunBiasMisuse(t *testing.T) {
	hd := &Handle{}
	m := Matmul{AType: BF16, DType: BF16, M: 3, N: 5, K: 7, Batch: 1}
	if err := hd.RunBias(m, 1, 2, 3, 4, nil); err == nil || !strings.Contains(err.Error(), "RunBias needs a product with a bias") {
		t.Errorf("RunBias without Bias: %v", err)
	}
	m.Bias = true
	if err := hd.Run(m, 1, 2, 3, nil); err == nil || !strings.Contains(err.Error(), "runs with RunBias") {
		t.Errorf("Run with Bias: %v", err)
	}
	if err := hd.RunBias(m, 1, 2, 3, 0, nil); err == nil || !strings.Contains(err.Error(), "the bias's address") {
		t.Errorf("RunBias without the address: %v", err)
	}
}

// TestAlignment checks the bias alignment classes plans are keyed by.
func TestAlignment(t *testing.T) {
	for p, want := range map[uint64]uint64{0: 256, 512: 256, 0x1000 + 128: 128, 0x1000 + 2: 2, 0x1000 + 1: 1, 0x1000 + 48: 16} {
		if got := alignment(cuda.DevicePtr(p)); got != want {
			t.Errorf("alignment(%#x) = %d, want %d", p, got, want)
		}
	}
}

// TestStatusNames checks the names of statuses the library cannot be
// asked about.
func TestStatusNames(t *testing.T) {
	if got := Status(15).String(); got != "CUBLAS_STATUS_NOT_SUPPORTED" {
		t.Errorf("Status(15) = %q", got)
	}
	if got := Status(99).String(); got != "cublasStatus_t(99)" {
		t.Errorf("Status(99) = %q", got)
	}
	e := &Error{Op: "cublasLtMatmul", Status: 7, Name: "CUBLAS_STATUS_INVALID_VALUE"}
	if got := e.Error(); got != "cuBLASLt: cublasLtMatmul failed: CUBLAS_STATUS_INVALID_VALUE" {
		t.Errorf("Error() = %q", got)
	}
}
