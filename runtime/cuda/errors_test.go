package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestResultNames(t *testing.T) {
	tests := map[Result]string{
		ErrorInvalidContext: "CUDA_ERROR_INVALID_CONTEXT",
		ErrorOutOfMemory:    "CUDA_ERROR_OUT_OF_MEMORY",
		ErrorNoDevice:       "CUDA_ERROR_NO_DEVICE",
		ErrorInvalidPTX:     "CUDA_ERROR_INVALID_PTX",
		ErrorNotFound:       "CUDA_ERROR_NOT_FOUND",
		Result(12345):       "CUresult(12345)",
	}
	for r, want := range tests {
		if got := r.String(); got != want {
			t.Errorf("Result(%d).String() = %q, want %q", int32(r), got, want)
		}
	}
}

func TestErrorForWithoutDriver(t *testing.T) {
	// Without a driver the static table names the code.
	var d *driver
	e := d.errorFor("cuModuleLoadDataEx", ErrorInvalidContext)
	want := "cuda: cuModuleLoadDataEx: CUDA_ERROR_INVALID_CONTEXT (201)"
	if e.Error() != want {
		t.Errorf("got %q, want %q", e.Error(), want)
	}
}

func TestErrorMatching(t *testing.T) {
	base := &Error{Code: ErrorOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY", Message: "out of memory", Op: "cuMemAlloc_v2"}
	err := fmt.Errorf("allocating x: %w", &OutOfMemoryError{Requested: 3 << 30, Free: 1 << 30, Total: 4 << 30, Err: base})
	if !IsCode(err, ErrorOutOfMemory) {
		t.Error("IsCode(wrapped OOM, ErrorOutOfMemory) = false")
	}
	if IsCode(err, ErrorInvalidValue) {
		t.Error("IsCode(wrapped OOM, ErrorInvalidValue) = true")
	}
	if !errors.Is(err, &Error{Code: ErrorOutOfMemory}) {
		t.Error("errors.Is by code failed")
	}
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) || oom.Requested != 3<<30 {
		t.Fatalf("errors.As OutOfMemoryError: %v", oom)
	}
	msg := err.Error()
	for _, s := range []string{"out of device memory", "3.0 GiB (3221225472 bytes)", "1.0 GiB free of 4.0 GiB"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}
}

func TestJITErrorCarriesLog(t *testing.T) {
	e := &JITError{
		Err: &Error{Code: ErrorInvalidPTX, Name: "CUDA_ERROR_INVALID_PTX", Message: "a PTX JIT compilation failed", Op: "cuModuleLoadDataEx"},
		Log: "ptxas application ptx input, line 3; error   : Unknown symbol 'x'",
	}
	if !strings.Contains(e.Error(), "line 3; error") || !strings.Contains(e.Error(), "CUDA_ERROR_INVALID_PTX") {
		t.Errorf("JITError message %q lacks the log or the code name", e.Error())
	}
	if !IsCode(e, ErrorInvalidPTX) {
		t.Error("JITError does not unwrap to its driver error")
	}
}

func TestFormatBytes(t *testing.T) {
	tests := map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 1 << 50: "1.0 PiB"}
	for n, want := range tests {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
