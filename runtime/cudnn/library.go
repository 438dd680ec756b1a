// Package cudnn runs convolutions with NVIDIA's cuDNN 9, loaded at run
// time with purego as runtime/cublaslt loads cuBLASLt: a Strata binary
// builds without cgo and without the CUDA toolkit, and a machine without
// the library reports ErrNotFound instead of failing to start. Strata's
// own convolution kernels run everywhere; cuDNN is a candidate the
// compiler's policy may choose where it loads.
//
// The library is searched in order: the file named by $STRATA_CUDNN (the
// value "off" disables the library), libcudnn.so.9 through the dynamic
// loader's path, the CUDA toolkit's lib64 directories, and the NVIDIA
// wheels of a Python installation (PyTorch's nvidia/cudnn/lib).
//
// cuDNN 9's libcudnn.so.9 is a shim that opens its sub-libraries
// (libcudnn_graph, _ops, _cnn, _engines_*) by name on first use. Where
// they are not on the loader's path (a Python wheel's directory) the shim
// would not find them, so Load first opens those in the shim's directory
// with global visibility: the shim's later dlopen of a sub-library then
// finds it loaded.
package cudnn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/strata-ir/strata/internal/dynlib"
	"github.com/strata-ir/strata/logs"
)

// ErrNotFound is wrapped by the error of Load when no usable cuDNN library
// is found (or $STRATA_CUDNN is "off").
var ErrNotFound = errors.New("cuDNN not found")

// EnvPath names the environment variable that points at the library file,
// searched first; its value Off disables the library.
const EnvPath = "STRATA_CUDNN"

// Off is the value of $STRATA_CUDNN that keeps the library unloaded: the
// compiler then runs every convolution on Strata's own kernels.
const Off = "off"

// sonames are the library names the dynamic loader resolves.
var sonames = []string{"libcudnn.so.9"}

// searchGlobs are the places outside the loader's path where toolkits and
// Python wheels install the library.
var searchGlobs = []string{
	"/usr/local/cuda/lib64/libcudnn.so.9",
	"/usr/local/cuda-1[23]*/lib64/libcudnn.so.9",
	"/usr/lib/x86_64-linux-gnu/libcudnn.so.9",
	"/usr/lib/python3*/*-packages/nvidia/cudnn/lib/libcudnn.so.9",
	"/usr/local/lib/python3*/*-packages/nvidia/cudnn/lib/libcudnn.so.9",
	"/opt/conda/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
	"/opt/*/.venv/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
}

// subLibraries are cuDNN 9's sub-libraries in the order of their
// dependencies (each needs only those before it), opened from the shim's
// directory before the shim. A missing one is skipped: the shim reports
// what it needs and cannot find when it is called.
var subLibraries = []string{
	"libcudnn_graph.so.9",
	"libcudnn_engines_precompiled.so.9",
	"libcudnn_engines_runtime_compiled.so.9",
	"libcudnn_heuristic.so.9",
	"libcudnn_ops.so.9",
	"libcudnn_cnn.so.9",
}

// lib holds the bound entry points of one loaded cuDNN. Handles and
// descriptors are opaque C pointers kept as uintptr.
type lib struct {
	path string
	// graph is cuDNN 9's graph API, nil when the library lacks it.
	graph *graphAPI

	cudnnGetVersion                           func() uint64
	cudnnGetErrorString                       func(s Status) *byte
	cudnnCreate                               func(h *uintptr) Status
	cudnnDestroy                              func(h uintptr) Status
	cudnnSetStream                            func(h, stream uintptr) Status
	cudnnCreateTensorDescriptor               func(d *uintptr) Status
	cudnnSetTensor4dDescriptor                func(d uintptr, format, dtype int32, n, c, h, w int32) Status
	cudnnDestroyTensorDescriptor              func(d uintptr) Status
	cudnnCreateFilterDescriptor               func(d *uintptr) Status
	cudnnSetFilter4dDescriptor                func(d uintptr, dtype, format int32, k, c, h, w int32) Status
	cudnnDestroyFilterDescriptor              func(d uintptr) Status
	cudnnCreateConvolutionDescriptor          func(d *uintptr) Status
	cudnnSetConvolution2dDescriptor           func(d uintptr, padH, padW, strideH, strideW, dilH, dilW, mode, compute int32) Status
	cudnnSetConvolutionMathType               func(d uintptr, math int32) Status
	cudnnDestroyConvolutionDesc               func(d uintptr) Status
	cudnnGetConvolutionForwardAlgo            func(h, x, w, conv, y uintptr, requested int32, returned *int32, perf *algoPerf) Status
	cudnnGetConvolutionBwdDataAlgo            func(h, w, dy, conv, dx uintptr, requested int32, returned *int32, perf *algoPerf) Status
	cudnnGetConvolutionBwdFilterAlgo          func(h, x, dy, conv, dw uintptr, requested int32, returned *int32, perf *algoPerf) Status
	cudnnGetConvolutionForwardWorkspaceSize   func(h, x, w, conv, y uintptr, algo int32, size *uint64) Status
	cudnnGetConvolutionBwdDataWorkspaceSize   func(h, w, dy, conv, dx uintptr, algo int32, size *uint64) Status
	cudnnGetConvolutionBwdFilterWorkspaceSize func(h, x, dy, conv, dw uintptr, algo int32, size *uint64) Status
	cudnnConvolutionForward                   func(h uintptr, alpha unsafe.Pointer, xd uintptr, x uint64, wd uintptr, w uint64, conv uintptr, algo int32,
		ws, wsBytes uint64, beta unsafe.Pointer, yd uintptr, y uint64) Status
	cudnnConvolutionBackwardData func(h uintptr, alpha unsafe.Pointer, wd uintptr, w uint64, dyd uintptr, dy uint64, conv uintptr, algo int32,
		ws, wsBytes uint64, beta unsafe.Pointer, dxd uintptr, dx uint64) Status
	cudnnConvolutionBackwardFilter func(h uintptr, alpha unsafe.Pointer, xd uintptr, x uint64, dyd uintptr, dy uint64, conv uintptr, algo int32,
		ws, wsBytes uint64, beta unsafe.Pointer, dwd uintptr, dw uint64) Status
}

// symbols pairs each entry point with its field.
func (l *lib) symbols() []dynlib.Symbol {
	return []dynlib.Symbol{
		{Name: "cudnnGetVersion", Fn: &l.cudnnGetVersion},
		{Name: "cudnnGetErrorString", Fn: &l.cudnnGetErrorString},
		{Name: "cudnnCreate", Fn: &l.cudnnCreate},
		{Name: "cudnnDestroy", Fn: &l.cudnnDestroy},
		{Name: "cudnnSetStream", Fn: &l.cudnnSetStream},
		{Name: "cudnnCreateTensorDescriptor", Fn: &l.cudnnCreateTensorDescriptor},
		{Name: "cudnnSetTensor4dDescriptor", Fn: &l.cudnnSetTensor4dDescriptor},
		{Name: "cudnnDestroyTensorDescriptor", Fn: &l.cudnnDestroyTensorDescriptor},
		{Name: "cudnnCreateFilterDescriptor", Fn: &l.cudnnCreateFilterDescriptor},
		{Name: "cudnnSetFilter4dDescriptor", Fn: &l.cudnnSetFilter4dDescriptor},
		{Name: "cudnnDestroyFilterDescriptor", Fn: &l.cudnnDestroyFilterDescriptor},
		{Name: "cudnnCreateConvolutionDescriptor", Fn: &l.cudnnCreateConvolutionDescriptor},
		{Name: "cudnnSetConvolution2dDescriptor", Fn: &l.cudnnSetConvolution2dDescriptor},
		{Name: "cudnnSetConvolutionMathType", Fn: &l.cudnnSetConvolutionMathType},
		{Name: "cudnnDestroyConvolutionDescriptor", Fn: &l.cudnnDestroyConvolutionDesc},
		{Name: "cudnnGetConvolutionForwardAlgorithm_v7", Fn: &l.cudnnGetConvolutionForwardAlgo},
		{Name: "cudnnGetConvolutionBackwardDataAlgorithm_v7", Fn: &l.cudnnGetConvolutionBwdDataAlgo},
		{Name: "cudnnGetConvolutionBackwardFilterAlgorithm_v7", Fn: &l.cudnnGetConvolutionBwdFilterAlgo},
		{Name: "cudnnGetConvolutionForwardWorkspaceSize", Fn: &l.cudnnGetConvolutionForwardWorkspaceSize},
		{Name: "cudnnGetConvolutionBackwardDataWorkspaceSize", Fn: &l.cudnnGetConvolutionBwdDataWorkspaceSize},
		{Name: "cudnnGetConvolutionBackwardFilterWorkspaceSize", Fn: &l.cudnnGetConvolutionBwdFilterWorkspaceSize},
		{Name: "cudnnConvolutionForward", Fn: &l.cudnnConvolutionForward},
		{Name: "cudnnConvolutionBackwardData", Fn: &l.cudnnConvolutionBackwardData},
		{Name: "cudnnConvolutionBackwardFilter", Fn: &l.cudnnConvolutionBackwardFilter},
	}
}

// openLib opens the sub-libraries next to path, then the library at path,
// and binds every entry point; a file that is missing or lacks one of them
// is an error, not a panic.
func openLib(path string) (*lib, error) {
	if filepath.IsAbs(path) {
		dir := filepath.Dir(path)
		for _, sub := range subLibraries {
			p := filepath.Join(dir, sub)
			if _, err := os.Stat(p); err == nil {
				// Kept open for the process's life, as the shim's own
				// dlopen would keep it; a failure is the shim's to report.
				_, _ = purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
			}
		}
	}
	l := &lib{path: path}
	h, err := dynlib.Open(path, l.symbols(), "cuDNN 9")
	if err != nil {
		return nil, err
	}
	l.graph = bindGraphAPI(h)
	return l, nil
}

// candidates returns the paths Load tries, in order.
func candidates() []string { return dynlib.Candidates(EnvPath, sonames, searchGlobs) }

// load returns the process-wide library, searching for it on first use.
var load = sync.OnceValues(func() (*lib, error) {
	defer loaded.Store(true)
	start := time.Now()
	l, err := find(os.Getenv(EnvPath))
	if err == nil {
		// A first call's time (the frontend's passes wait for it): the
		// library is hundreds of megabytes.
		logs.Printf("compile", "cuDNN: library loaded in %.1f ms from %s", float64(time.Since(start).Microseconds())/1000, l.path)
	}
	return l, err
})

// find searches the candidates for the library, unless env (the value
// of $STRATA_CUDNN) is Off.
func find(env string) (*lib, error) {
	if env == Off {
		return nil, fmt.Errorf("%w: disabled by $%s=%s", ErrNotFound, EnvPath, Off)
	}
	return search(candidates())
}

// search opens the first path of paths that is a cuDNN library.
func search(paths []string) (*lib, error) {
	return dynlib.Search(paths, openLib, ErrNotFound, EnvPath)
}

// loaded is set once the library's search has ended, found or not.
var loaded atomic.Bool

// Searched reports whether the search for the library has ended (Load
// then returns at once): a caller about to wait for Load can do other
// work while it has not.
func Searched() bool { return loaded.Load() }

// Load finds and loads cuDNN without touching a device; the error wraps
// ErrNotFound when no library is found.
func Load() error {
	_, err := load()
	return err
}

// Info returns the loaded library's path and version (cudnnGetVersion:
// 10000·major + 100·minor + patch).
func Info() (path string, version int, err error) {
	l, err := load()
	if err != nil {
		return "", 0, err
	}
	return l.path, int(l.cudnnGetVersion()), nil
}
