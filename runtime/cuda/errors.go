package cuda

import (
	"errors"
	"fmt"
)

// Result is a CUresult: the status code every driver entry point returns.
type Result int32

// Driver status codes that Strata inspects or commonly reports.
const (
	Success                   Result = 0
	ErrorInvalidValue         Result = 1
	ErrorOutOfMemory          Result = 2
	ErrorNotInitialized       Result = 3
	ErrorDeinitialized        Result = 4
	ErrorStubLibrary          Result = 34
	ErrorDeviceUnavailable    Result = 46
	ErrorNoDevice             Result = 100
	ErrorInvalidDevice        Result = 101
	ErrorInvalidImage         Result = 200
	ErrorInvalidContext       Result = 201
	ErrorNoBinaryForGPU       Result = 209
	ErrorInvalidPTX           Result = 218
	ErrorJITCompilerNotFound  Result = 221
	ErrorUnsupportedPTX       Result = 222
	ErrorInvalidSource        Result = 300
	ErrorInvalidHandle        Result = 400
	ErrorNotFound             Result = 500
	ErrorNotReady             Result = 600
	ErrorIllegalAddress       Result = 700
	ErrorLaunchOutOfResources Result = 701
	ErrorLaunchTimeout        Result = 702
	ErrorMisalignedAddress    Result = 716
	ErrorLaunchFailed         Result = 719
	ErrorUnknown              Result = 999
)

// resultNames names the codes above, for when the driver cannot be asked
// (cuGetErrorName is missing or does not know the code).
var resultNames = map[Result]string{
	Success:                   "CUDA_SUCCESS",
	ErrorInvalidValue:         "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory:          "CUDA_ERROR_OUT_OF_MEMORY",
	ErrorNotInitialized:       "CUDA_ERROR_NOT_INITIALIZED",
	ErrorDeinitialized:        "CUDA_ERROR_DEINITIALIZED",
	ErrorStubLibrary:          "CUDA_ERROR_STUB_LIBRARY",
	ErrorDeviceUnavailable:    "CUDA_ERROR_DEVICE_UNAVAILABLE",
	ErrorNoDevice:             "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidDevice:        "CUDA_ERROR_INVALID_DEVICE",
	ErrorInvalidImage:         "CUDA_ERROR_INVALID_IMAGE",
	ErrorInvalidContext:       "CUDA_ERROR_INVALID_CONTEXT",
	ErrorNoBinaryForGPU:       "CUDA_ERROR_NO_BINARY_FOR_GPU",
	ErrorInvalidPTX:           "CUDA_ERROR_INVALID_PTX",
	ErrorJITCompilerNotFound:  "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	ErrorUnsupportedPTX:       "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	ErrorInvalidSource:        "CUDA_ERROR_INVALID_SOURCE",
	ErrorInvalidHandle:        "CUDA_ERROR_INVALID_HANDLE",
	ErrorNotFound:             "CUDA_ERROR_NOT_FOUND",
	ErrorNotReady:             "CUDA_ERROR_NOT_READY",
	ErrorIllegalAddress:       "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrorLaunchOutOfResources: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	ErrorLaunchTimeout:        "CUDA_ERROR_LAUNCH_TIMEOUT",
	ErrorMisalignedAddress:    "CUDA_ERROR_MISALIGNED_ADDRESS",
	ErrorLaunchFailed:         "CUDA_ERROR_LAUNCH_FAILED",
	ErrorUnknown:              "CUDA_ERROR_UNKNOWN",
}

// String returns the code's CUDA_ERROR_* name from the static table, or
// "CUresult(N)" for a code the table does not know.
func (r Result) String() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("CUresult(%d)", int32(r))
}

// Error is a failed driver call.
type Error struct {
	Code    Result // the CUresult
	Name    string // CUDA_ERROR_..., from cuGetErrorName or the static table
	Message string // the driver's description, from cuGetErrorString; may be empty
	Op      string // the driver entry point that failed, e.g. "cuMemAlloc_v2"
}

// Error formats the failure as "cuda: op: message (NAME, code)".
func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("cuda: %s: %s (%d)", e.Op, e.Name, int32(e.Code))
	}
	return fmt.Sprintf("cuda: %s: %s (%s, %d)", e.Op, e.Message, e.Name, int32(e.Code))
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &cuda.Error{Code: cuda.ErrorInvalidPTX}) works whatever
// the operation.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// IsCode reports whether err is, or wraps, a driver error with code c.
func IsCode(err error, c Result) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == c
}

// OutOfMemoryError reports a device allocation that did not fit.
type OutOfMemoryError struct {
	Requested uint64 // bytes asked for
	Free      uint64 // bytes free on the device when the allocation failed
	Total     uint64 // device memory in bytes
	Err       *Error // the driver's CUDA_ERROR_OUT_OF_MEMORY
}

// Error says how much was asked for and how much was free.
func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("cuda: out of device memory: asked for %s (%d bytes), %s free of %s",
		formatBytes(e.Requested), e.Requested, formatBytes(e.Free), formatBytes(e.Total))
}

// Unwrap returns the driver error.
func (e *OutOfMemoryError) Unwrap() error { return e.Err }

// JITError reports PTX that the driver's JIT compiler rejected.
type JITError struct {
	Err *Error // the failed driver call (cuModuleLoadDataEx, cuLinkAddData_v2, cuLinkComplete, …)
	Log string // the JIT's error log (ptxas-style "line N; error : ...")
}

// Error is the driver error followed by the JIT log, if any.
func (e *JITError) Error() string {
	if e.Log == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + "\nJIT log:\n" + e.Log
}

// Unwrap returns the driver error.
func (e *JITError) Unwrap() error { return e.Err }

// ErrNoDriver is wrapped by the error returned when libcuda.so.1 cannot be
// loaded (no NVIDIA driver on this machine).
var ErrNoDriver = errors.New("no NVIDIA driver")

// ErrNoDevice is wrapped by the error returned when the driver is present
// but reports no usable device, or when an ordinal is out of range.
var ErrNoDevice = errors.New("no CUDA device")

// formatBytes writes n with a binary unit, for messages.
func formatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n)/unit, 0
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
