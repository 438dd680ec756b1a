package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/strata-ir/strata/internal/dynlib"
)

// libName is the driver library; the unversioned libcuda.so is only
// installed with the toolkit, the .1 soname with every driver.
const libName = "libcuda.so.1"

// jitLibName is the driver's PTX compiler, which libcuda opens on its
// first compile (it is not there on drivers that compile without it).
const jitLibName = "libnvidia-ptxjitcompiler.so.1"

// preloadJIT opens jitLibName in the background when the driver loads
// (load); a test turns it off to measure without.
var preloadJIT = true

// driver holds the bound entry points of one loaded libcuda. Handles
// (CUcontext, CUmodule, CUfunction, CUstream, CUevent) are opaque C
// pointers kept as uintptr; CUdeviceptr and size_t are 64-bit.
type driver struct {
	cuInit                    func(flags uint32) Result
	cuDriverGetVersion        func(version *int32) Result
	cuGetErrorName            func(r Result, str **byte) Result
	cuGetErrorString          func(r Result, str **byte) Result
	cuDeviceGetCount          func(count *int32) Result
	cuDeviceGet               func(dev *int32, ordinal int32) Result
	cuDeviceGetName           func(name *byte, n int32, dev int32) Result
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) Result
	cuDeviceTotalMem          func(bytes *uint64, dev int32) Result
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) Result
	cuDevicePrimaryCtxRelease func(dev int32) Result
	cuCtxSetCurrent           func(ctx uintptr) Result
	cuCtxSynchronize          func() Result
	cuMemGetInfo              func(free, total *uint64) Result
	cuMemAlloc                func(p *DevicePtr, bytes uint64) Result
	cuMemFree                 func(p DevicePtr) Result
	cuMemAllocHost            func(p *unsafe.Pointer, bytes uint64) Result
	cuMemFreeHost             func(p unsafe.Pointer) Result
	cuMemcpyHtoD              func(dst DevicePtr, src unsafe.Pointer, n uint64) Result
	cuMemcpyDtoH              func(dst unsafe.Pointer, src DevicePtr, n uint64) Result
	cuMemcpyDtoD              func(dst, src DevicePtr, n uint64) Result
	cuMemcpyDtoDAsync         func(dst, src DevicePtr, n uint64, s uintptr) Result
	cuMemcpyHtoDAsync         func(dst DevicePtr, src unsafe.Pointer, n uint64, s uintptr) Result
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src DevicePtr, n uint64, s uintptr) Result
	cuMemsetD8                func(dst DevicePtr, v uint8, n uint64) Result
	cuMemsetD32Async          func(dst DevicePtr, v uint32, n uint64, s uintptr) Result
	cuModuleLoadDataEx        func(mod *uintptr, image unsafe.Pointer, nopts uint32, opts *int32, vals *uintptr) Result
	cuModuleUnload            func(mod uintptr) Result
	cuModuleGetFunction       func(fn *uintptr, mod uintptr, name *byte) Result
	cuLaunchKernel            func(fn uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params *unsafe.Pointer, extra *unsafe.Pointer) Result
	cuStreamCreate            func(s *uintptr, flags uint32) Result
	cuStreamDestroy           func(s uintptr) Result
	cuStreamSynchronize       func(s uintptr) Result
	cuStreamWaitEvent         func(s, e uintptr, flags uint32) Result
	cuEventCreate             func(e *uintptr, flags uint32) Result
	cuEventDestroy            func(e uintptr) Result
	cuEventRecord             func(e, s uintptr) Result
	cuEventSynchronize        func(e uintptr) Result
	cuEventElapsedTime        func(ms *float32, start, end uintptr) Result

	// Optional entry points (optionalSymbols): nil when the driver lacks
	// them, and the features that need them report so.
	cuStreamBeginCapture func(s uintptr, mode int32) Result
	cuStreamIsCapturing  func(s uintptr, status *int32) Result
	cuStreamEndCapture   func(s uintptr, graph *uintptr) Result
	cuGraphInstantiate   func(exec *uintptr, graph uintptr, flags uint64) Result
	cuGraphLaunch        func(exec, s uintptr) Result
	cuGraphExecDestroy   func(exec uintptr) Result
	cuGraphDestroy       func(graph uintptr) Result
	cuFuncSetAttribute   func(fn uintptr, attr, value int32) Result
	// CUDA 12 (tensormap.go).
	cuTensorMapEncodeTiled func(tm unsafe.Pointer, dtype, rank uint32, addr DevicePtr, dims, strides *uint64, box, elemStrides *uint32,
		interleave, swizzle, l2, oob uint32) Result

	// Raw addresses of the entry points a cached call goes through, called
	// with purego.SyscallN instead of the functions above: a function
	// bound with RegisterFunc is called through reflection, which cost
	// about 1 µs and 11 allocations per cuLaunchKernel on a 2-core host,
	// against 0.15 µs and one allocation through SyscallN
	// (TestGPULaunchCost compares the two paths on a GPU).
	rawCtxSetCurrent   uintptr
	rawLaunchKernel    uintptr
	rawMemcpyHtoDAsync uintptr
	rawMemcpyDtoDAsync uintptr
	rawGraphLaunch     uintptr // 0 without CUDA graphs
	link               linker  // zero without the linker API (link.go)
}

// raw calls the entry point at addr with args; unsafe.Pointer arguments
// are converted to uintptr in the call expression (uintptrescapes keeps
// what they point at alive and in place until raw returns).
//
//go:uintptrescapes
func (d *driver) raw(addr uintptr, args ...uintptr) Result {
	r, _, _ := purego.SyscallN(addr, args...)
	return Result(int32(r))
}

// ctxSetCurrent calls cuCtxSetCurrent through its raw address.
func (d *driver) ctxSetCurrent(ctx uintptr) Result {
	r, _, _ := purego.SyscallN(d.rawCtxSetCurrent, ctx)
	return Result(int32(r)) // CUresult is a C int: the upper half of the register is not the result's
}

// launchKernel calls cuLaunchKernel through its raw address, with no
// extra argument. params is the address of the kernel's parameter pointer
// array (0 for a kernel without parameters); the caller keeps the array
// and what it points at alive until the call returns.
func (d *driver) launchKernel(fn uintptr, grid, block [3]uint32, shared uint32, s uintptr, params unsafe.Pointer) Result {
	r, _, _ := purego.SyscallN(d.rawLaunchKernel, fn,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		uintptr(shared), s, uintptr(params), 0)
	return Result(int32(r))
}

// symbols lists, for each entry point, the field it binds and the library
// symbols to try in order: the versioned names first (GPU.md: bind the _v2
// entry points; the unversioned ones keep their CUDA 3 ABI).
func (d *driver) symbols() []struct {
	fptr  any
	names []string
} {
	type sym = struct {
		fptr  any
		names []string
	}
	return []sym{
		{&d.cuInit, []string{"cuInit"}},
		{&d.cuDriverGetVersion, []string{"cuDriverGetVersion"}},
		{&d.cuGetErrorName, []string{"cuGetErrorName"}},
		{&d.cuGetErrorString, []string{"cuGetErrorString"}},
		{&d.cuDeviceGetCount, []string{"cuDeviceGetCount"}},
		{&d.cuDeviceGet, []string{"cuDeviceGet"}},
		{&d.cuDeviceGetName, []string{"cuDeviceGetName"}},
		{&d.cuDeviceGetAttribute, []string{"cuDeviceGetAttribute"}},
		{&d.cuDeviceTotalMem, []string{"cuDeviceTotalMem_v2"}},
		{&d.cuDevicePrimaryCtxRetain, []string{"cuDevicePrimaryCtxRetain"}},
		{&d.cuDevicePrimaryCtxRelease, []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
		{&d.cuCtxSetCurrent, []string{"cuCtxSetCurrent"}},
		{&d.cuCtxSynchronize, []string{"cuCtxSynchronize"}},
		{&d.cuMemGetInfo, []string{"cuMemGetInfo_v2"}},
		{&d.cuMemAlloc, []string{"cuMemAlloc_v2"}},
		{&d.cuMemFree, []string{"cuMemFree_v2"}},
		{&d.cuMemAllocHost, []string{"cuMemAllocHost_v2"}},
		{&d.cuMemFreeHost, []string{"cuMemFreeHost"}},
		{&d.cuMemcpyHtoD, []string{"cuMemcpyHtoD_v2"}},
		{&d.cuMemcpyDtoH, []string{"cuMemcpyDtoH_v2"}},
		{&d.cuMemcpyDtoD, []string{"cuMemcpyDtoD_v2"}},
		{&d.cuMemcpyDtoDAsync, []string{"cuMemcpyDtoDAsync_v2"}},
		{&d.cuMemcpyHtoDAsync, []string{"cuMemcpyHtoDAsync_v2"}},
		{&d.cuMemcpyDtoHAsync, []string{"cuMemcpyDtoHAsync_v2"}},
		{&d.cuMemsetD8, []string{"cuMemsetD8_v2"}},
		{&d.cuMemsetD32Async, []string{"cuMemsetD32Async"}},
		{&d.cuModuleLoadDataEx, []string{"cuModuleLoadDataEx"}},
		{&d.cuModuleUnload, []string{"cuModuleUnload"}},
		{&d.cuModuleGetFunction, []string{"cuModuleGetFunction"}},
		{&d.cuLaunchKernel, []string{"cuLaunchKernel"}},
		{&d.cuStreamCreate, []string{"cuStreamCreate"}},
		{&d.cuStreamDestroy, []string{"cuStreamDestroy_v2"}},
		{&d.cuStreamSynchronize, []string{"cuStreamSynchronize"}},
		{&d.cuStreamWaitEvent, []string{"cuStreamWaitEvent"}},
		{&d.cuEventCreate, []string{"cuEventCreate"}},
		{&d.cuEventDestroy, []string{"cuEventDestroy_v2"}},
		{&d.cuEventRecord, []string{"cuEventRecord"}},
		{&d.cuEventSynchronize, []string{"cuEventSynchronize"}},
		// CUDA 12.8 added a _v2 with the same signature; older drivers lack it.
		{&d.cuEventElapsedTime, []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
	}
}

// optionalSymbols lists entry points a driver may lack (CUDA graphs came
// with CUDA 10, cuGraphInstantiateWithFlags with 11.4); openDriver leaves
// their fields nil when they are missing.
func (d *driver) optionalSymbols() []struct {
	fptr  any
	names []string
} {
	type sym = struct {
		fptr  any
		names []string
	}
	return []sym{
		{&d.cuStreamBeginCapture, []string{"cuStreamBeginCapture_v2"}},
		{&d.cuStreamEndCapture, []string{"cuStreamEndCapture"}},
		{&d.cuStreamIsCapturing, []string{"cuStreamIsCapturing"}},
		{&d.cuGraphInstantiate, []string{"cuGraphInstantiateWithFlags"}},
		{&d.cuGraphLaunch, []string{"cuGraphLaunch"}},
		{&d.cuGraphExecDestroy, []string{"cuGraphExecDestroy"}},
		{&d.cuGraphDestroy, []string{"cuGraphDestroy"}},
		{&d.cuFuncSetAttribute, []string{"cuFuncSetAttribute"}},
		{&d.cuTensorMapEncodeTiled, []string{"cuTensorMapEncodeTiled"}},
	}
}

// openDriver loads the library at path and binds every entry point. It
// fails, without panicking, when the library or one of the symbols is
// missing.
func openDriver(path string) (*driver, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s not found (%v)", ErrNoDriver, path, err)
	}
	d := &driver{}
	for _, s := range d.symbols() {
		var addr uintptr
		for _, name := range s.names {
			// Dlsym reports a miss as an error; RegisterLibFunc would panic.
			if a, err := purego.Dlsym(h, name); err == nil && a != 0 {
				addr = a
				break
			}
		}
		if addr == 0 {
			purego.Dlclose(h)
			return nil, fmt.Errorf("%w: %s has no %s (driver too old or not a CUDA driver)",
				ErrNoDriver, path, s.names[0])
		}
		purego.RegisterFunc(s.fptr, addr)
		switch s.names[0] {
		case "cuCtxSetCurrent":
			d.rawCtxSetCurrent = addr
		case "cuLaunchKernel":
			d.rawLaunchKernel = addr
		case "cuMemcpyHtoDAsync_v2":
			d.rawMemcpyHtoDAsync = addr
		case "cuMemcpyDtoDAsync_v2":
			d.rawMemcpyDtoDAsync = addr
		}
	}
	d.bindLinker(h)
	for _, s := range d.optionalSymbols() {
		if a, err := purego.Dlsym(h, s.names[0]); err == nil && a != 0 {
			purego.RegisterFunc(s.fptr, a)
			if s.names[0] == "cuGraphLaunch" {
				d.rawGraphLaunch = a
			}
		}
	}
	return d, nil
}

// The process-wide driver, loaded and initialised once.
var (
	loadOnce  sync.Once
	theDriver *driver
	loadErr   error
)

// load returns the initialised driver, loading libcuda.so.1 and calling
// cuInit on first use.
func load() (*driver, error) {
	loadOnce.Do(func() {
		d, err := openDriver(libName)
		if err != nil {
			loadErr = err
			return
		}
		if preloadJIT {
			// The driver opens its PTX compiler (39 MB) on the first
			// compile; opened now, on another thread, its loading (≈ 3 ms
			// from the page cache on the H200's host) overlaps cuInit
			// and the context's creation instead of a first call.
			go purego.Dlopen(jitLibName, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		}
		if r := d.cuInit(0); r != Success {
			err := d.errorFor("cuInit", r)
			if r == ErrorNoDevice {
				loadErr = fmt.Errorf("%w: %v", ErrNoDevice, err)
			} else {
				loadErr = err
			}
			return
		}
		theDriver = d
	})
	return theDriver, loadErr
}

// Load loads and initialises the CUDA driver without opening a device. It
// returns an error wrapping ErrNoDriver when libcuda.so.1 is not there.
func Load() error {
	_, err := load()
	return err
}

// DriverVersion returns the CUDA version the driver supports, as
// 1000*major + 10*minor (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	d, err := load()
	if err != nil {
		return 0, err
	}
	var v int32
	if r := d.cuDriverGetVersion(&v); r != Success {
		return 0, d.errorFor("cuDriverGetVersion", r)
	}
	return int(v), nil
}

// DeviceCount returns the number of CUDA devices.
func DeviceCount() (int, error) {
	d, err := load()
	if err != nil {
		return 0, err
	}
	var n int32
	if r := d.cuDeviceGetCount(&n); r != Success {
		return 0, d.errorFor("cuDeviceGetCount", r)
	}
	return int(n), nil
}

// errorFor builds the *Error for a failed call of op, naming the code with
// the driver's own tables where it has them.
func (d *driver) errorFor(op string, r Result) *Error {
	e := &Error{Code: r, Name: r.String(), Op: op}
	if d == nil {
		return e
	}
	var s *byte
	if d.cuGetErrorName(r, &s) == Success && s != nil {
		e.Name = dynlib.GoString(s)
	}
	s = nil
	if d.cuGetErrorString(r, &s) == Success && s != nil {
		e.Message = dynlib.GoString(s)
	}
	return e
}

// cBytes returns s as a NUL-terminated byte slice for the driver.
func cBytes(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}
