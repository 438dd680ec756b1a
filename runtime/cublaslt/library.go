// Package cublaslt runs matrix products with NVIDIA's cuBLASLt, loaded at
// run time with purego as runtime/cuda loads the driver: a Strata binary
// builds without cgo and without the CUDA toolkit, and a machine without
// the library reports ErrNotFound instead of failing to start.
//
// The library is searched in order: the file named by $STRATA_CUBLASLT,
// libcublasLt.so.13 and .so.12 through the dynamic loader's path, the
// CUDA toolkit's lib64 directories, and the NVIDIA wheels of a Python
// installation (PyTorch's nvidia/cublas/lib and nvidia/cu13/lib).
//
// cuBLASLt is column-major; Strata's buffers are row-major. A row-major
// C[M,N] = A[M,K]·B[K,N] is the column-major Cᵀ[N,M] = Bᵀ[N,K]·Aᵀ[K,M],
// and a row-major matrix is its transpose read column-major, so Matmul
// passes B as cuBLASLt's A and A as its B, with M and N swapped: no copy.
package cublaslt

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/strata-ir/strata/internal/dynlib"
	"github.com/strata-ir/strata/logs"
)

// ErrNotFound is wrapped by the error of Load when no usable cuBLASLt
// library is found.
var ErrNotFound = errors.New("cuBLASLt not found")

// EnvPath names the environment variable that points at the library file,
// searched first.
const EnvPath = "STRATA_CUBLASLT"

// sonames are the library names the dynamic loader resolves, newest first.
var sonames = []string{"libcublasLt.so.13", "libcublasLt.so.12"}

// searchGlobs are the places outside the loader's path where toolkits and
// Python wheels install the library (the device machine's CUDA 13 lives in
// /usr/local/cuda; PyTorch's wheels bring their own copy).
var searchGlobs = []string{
	"/usr/local/cuda/lib64/libcublasLt.so.1[23]",
	"/usr/local/cuda-1[23]*/lib64/libcublasLt.so.1[23]",
	"/usr/local/cuda/targets/*/lib/libcublasLt.so.1[23]",
	"/usr/lib/python3*/*-packages/nvidia/*/lib/libcublasLt.so.1[23]",
	"/usr/local/lib/python3*/*-packages/nvidia/*/lib/libcublasLt.so.1[23]",
	"/opt/conda/lib/python3*/site-packages/nvidia/*/lib/libcublasLt.so.1[23]",
	"/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib/libcublasLt.so.1[23]",
}

// lib holds the bound entry points of one loaded libcublasLt. Handles and
// descriptors are opaque C pointers kept as uintptr.
type lib struct {
	path string

	cublasLtCreate                       func(h *uintptr) Status
	cublasLtDestroy                      func(h uintptr) Status
	cublasLtGetVersion                   func() uint64
	cublasLtGetStatusName                func(s Status) *byte
	cublasLtMatmulDescCreate             func(d *uintptr, compute int32, scale DataType) Status
	cublasLtMatmulDescDestroy            func(d uintptr) Status
	cublasLtMatmulDescSetAttribute       func(d uintptr, attr int32, buf unsafe.Pointer, size uint64) Status
	cublasLtMatrixLayoutCreate           func(l *uintptr, t DataType, rows, cols uint64, ld int64) Status
	cublasLtMatrixLayoutDestroy          func(l uintptr) Status
	cublasLtMatrixLayoutSetAttribute     func(l uintptr, attr int32, buf unsafe.Pointer, size uint64) Status
	cublasLtMatmulPreferenceCreate       func(p *uintptr) Status
	cublasLtMatmulPreferenceDestroy      func(p uintptr) Status
	cublasLtMatmulPreferenceSetAttribute func(p uintptr, attr int32, buf unsafe.Pointer, size uint64) Status
	cublasLtMatmulAlgoGetHeuristic       func(h, desc, a, b, c, d, pref uintptr, requested int32, results *heuristicResult, returned *int32) Status
	cublasLtMatmul                       func(h, desc uintptr, alpha unsafe.Pointer, a uint64, adesc uintptr, b uint64, bdesc uintptr,
		beta unsafe.Pointer, c uint64, cdesc uintptr, d uint64, ddesc uintptr, algo unsafe.Pointer,
		workspace uint64, workspaceBytes uint64, stream uintptr) Status
}

// symbols pairs each entry point with its field.
func (l *lib) symbols() []dynlib.Symbol {
	return []dynlib.Symbol{
		{Name: "cublasLtCreate", Fn: &l.cublasLtCreate},
		{Name: "cublasLtDestroy", Fn: &l.cublasLtDestroy},
		{Name: "cublasLtGetVersion", Fn: &l.cublasLtGetVersion},
		{Name: "cublasLtGetStatusName", Fn: &l.cublasLtGetStatusName},
		{Name: "cublasLtMatmulDescCreate", Fn: &l.cublasLtMatmulDescCreate},
		{Name: "cublasLtMatmulDescDestroy", Fn: &l.cublasLtMatmulDescDestroy},
		{Name: "cublasLtMatmulDescSetAttribute", Fn: &l.cublasLtMatmulDescSetAttribute},
		{Name: "cublasLtMatrixLayoutCreate", Fn: &l.cublasLtMatrixLayoutCreate},
		{Name: "cublasLtMatrixLayoutDestroy", Fn: &l.cublasLtMatrixLayoutDestroy},
		{Name: "cublasLtMatrixLayoutSetAttribute", Fn: &l.cublasLtMatrixLayoutSetAttribute},
		{Name: "cublasLtMatmulPreferenceCreate", Fn: &l.cublasLtMatmulPreferenceCreate},
		{Name: "cublasLtMatmulPreferenceDestroy", Fn: &l.cublasLtMatmulPreferenceDestroy},
		{Name: "cublasLtMatmulPreferenceSetAttribute", Fn: &l.cublasLtMatmulPreferenceSetAttribute},
		{Name: "cublasLtMatmulAlgoGetHeuristic", Fn: &l.cublasLtMatmulAlgoGetHeuristic},
		{Name: "cublasLtMatmul", Fn: &l.cublasLtMatmul},
	}
}

// openLib loads the library at path and binds every entry point; a file
// that is missing or lacks one of them is an error, not a panic.
func openLib(path string) (*lib, error) {
	l := &lib{path: path}
	if _, err := dynlib.Open(path, l.symbols(), "cuBLASLt 12 or later"); err != nil {
		return nil, err
	}
	return l, nil
}

// candidates returns the paths Load tries, in order.
func candidates() []string { return dynlib.Candidates(EnvPath, sonames, searchGlobs) }

// load returns the process-wide library, searching for it on first use.
var load = sync.OnceValues(func() (*lib, error) {
	defer loaded.Store(true)
	start := time.Now()
	l, err := search(candidates())
	if err == nil {
		// A first call's time (the frontend's passes wait for it): the
		// library is hundreds of megabytes.
		logs.Printf("compile", "cuBLASLt: library loaded in %.1f ms from %s", float64(time.Since(start).Microseconds())/1000, l.path)
	}
	return l, err
})

// search opens the first path of paths that is a cuBLASLt library.
func search(paths []string) (*lib, error) {
	return dynlib.Search(paths, openLib, ErrNotFound, EnvPath)
}

// loaded is set once the library's search has ended, found or not.
var loaded atomic.Bool

// Searched reports whether the search for the library has ended (Load
// then returns at once): a caller about to wait for Load can do other
// work while it has not.
func Searched() bool { return loaded.Load() }

// Load finds and loads cuBLASLt without touching a device; the error wraps
// ErrNotFound when no library is found.
func Load() error {
	_, err := load()
	return err
}

// Info returns the loaded library's path and version (cublasLtGetVersion:
// 10000·major + 100·minor + patch).
func Info() (path string, version int, err error) {
	l, err := load()
	if err != nil {
		return "", 0, err
	}
	return l.path, int(l.cublasLtGetVersion()), nil
}
