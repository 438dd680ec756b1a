package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/strata-ir/strata/internal/dynlib"
)

// DevicePtr is an address in device memory (a CUdeviceptr). Pointer
// arithmetic is ordinary integer arithmetic: p + 256 is 256 bytes further.
type DevicePtr uint64

// Device attribute codes (CUdevice_attribute) that Device reads.
const (
	attrMaxThreadsPerBlock     = 1
	attrMaxSharedPerBlock      = 8
	attrWarpSize               = 10
	attrMultiprocessorCount    = 16
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
)

// Device is one GPU and its primary context. Its methods may be called
// from any goroutine: each one locks the goroutine to its OS thread and
// makes the context current before entering the driver.
type Device struct {
	drv     *driver
	ordinal int
	dev     int32   // CUdevice
	ctx     uintptr // the retained primary CUcontext
	name    string
	ccMajor int
	ccMinor int
	total   uint64
	sms     int
	maps    tensorMapCache // encoded tensor maps (tensormap.go)
	timing  sync.Mutex     // TimingLock
	work    programWork    // BeginWork, EndWork, WaitQuiet (work.go)
}

// TimingLock is the lock the vendor libraries' Tunes hold while they time
// the candidates of a choice (cuBLASLt's algorithms, cuDNN's engines) on
// the device (TimeQuiet): their warm-ups run on streams of their own at
// once, and a product timed beside another library's convolution shares
// the SMs with it, which inflates its time and can make a slower
// candidate win.
func (d *Device) TimingLock() sync.Locker { return &d.timing }

// Open retains the primary context of device ordinal (0 is the first GPU)
// and reads its properties. Without a driver it returns an error wrapping
// ErrNoDriver; without such a device, one wrapping ErrNoDevice.
func Open(ordinal int) (*Device, error) {
	d, err := load()
	if err != nil {
		return nil, err
	}
	var count int32
	if r := d.cuDeviceGetCount(&count); r != Success {
		return nil, d.errorFor("cuDeviceGetCount", r)
	}
	if count == 0 {
		return nil, fmt.Errorf("%w: the driver reports no GPU", ErrNoDevice)
	}
	if ordinal < 0 || ordinal >= int(count) {
		return nil, fmt.Errorf("%w: device %d requested, %d present", ErrNoDevice, ordinal, count)
	}
	dev := &Device{drv: d, ordinal: ordinal}
	if r := d.cuDeviceGet(&dev.dev, int32(ordinal)); r != Success {
		return nil, d.errorFor("cuDeviceGet", r)
	}
	if r := d.cuDevicePrimaryCtxRetain(&dev.ctx, dev.dev); r != Success {
		return nil, d.errorFor("cuDevicePrimaryCtxRetain", r)
	}
	if err := dev.readProperties(); err != nil {
		d.cuDevicePrimaryCtxRelease(dev.dev)
		return nil, err
	}
	return dev, nil
}

// readProperties caches what never changes for the life of the device.
func (dev *Device) readProperties() error {
	d := dev.drv
	buf := make([]byte, 256)
	if r := d.cuDeviceGetName(&buf[0], int32(len(buf)), dev.dev); r != Success {
		return d.errorFor("cuDeviceGetName", r)
	}
	dev.name = dynlib.GoString(&buf[0])
	if r := d.cuDeviceTotalMem(&dev.total, dev.dev); r != Success {
		return d.errorFor("cuDeviceTotalMem_v2", r)
	}
	var err error
	if dev.ccMajor, err = dev.Attribute(attrComputeCapabilityMajor); err != nil {
		return err
	}
	if dev.ccMinor, err = dev.Attribute(attrComputeCapabilityMinor); err != nil {
		return err
	}
	dev.sms, err = dev.Attribute(attrMultiprocessorCount)
	return err
}

// Close releases the primary context. Memory, modules, streams and events
// of the device must not be used afterwards.
func (dev *Device) Close() error {
	if ev := dev.work.done; ev != nil {
		_ = ev.Destroy() // the context's release frees it anyway
		dev.work.done = nil
	}
	if r := dev.drv.cuDevicePrimaryCtxRelease(dev.dev); r != Success {
		return dev.drv.errorFor("cuDevicePrimaryCtxRelease_v2", r)
	}
	return nil
}

// Ordinal returns the device's index among the driver's devices.
func (dev *Device) Ordinal() int { return dev.ordinal }

// Name returns the product name, e.g. "NVIDIA H200".
func (dev *Device) Name() string { return dev.name }

// ComputeCapability returns the major and minor compute capability
// (9, 0 for sm_90).
func (dev *Device) ComputeCapability() (major, minor int) { return dev.ccMajor, dev.ccMinor }

// TotalMem returns the device memory in bytes.
func (dev *Device) TotalMem() uint64 { return dev.total }

// Multiprocessors returns the number of streaming multiprocessors.
func (dev *Device) Multiprocessors() int { return dev.sms }

// Attribute returns a CUdevice_attribute of the device.
func (dev *Device) Attribute(attr int) (int, error) {
	var v int32
	if r := dev.drv.cuDeviceGetAttribute(&v, int32(attr), dev.dev); r != Success {
		return 0, dev.drv.errorFor(fmt.Sprintf("cuDeviceGetAttribute(%d)", attr), r)
	}
	return int(v), nil
}

// call runs f, which calls the driver entry point op, with the goroutine
// locked to its OS thread and the device's context current on it. Setting
// the context on every entry is what makes a Device usable from any
// goroutine (GPU.md: otherwise cuModuleLoadData fails with error 201).
func (dev *Device) call(op string, f func() Result) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := dev.drv.ctxSetCurrent(dev.ctx); r != Success {
		return dev.drv.errorFor("cuCtxSetCurrent", r)
	}
	if r := f(); r != Success {
		return dev.drv.errorFor(op, r)
	}
	return nil
}

// MemInfo returns the free and total device memory in bytes.
func (dev *Device) MemInfo() (free, total uint64, err error) {
	err = dev.call("cuMemGetInfo_v2", func() Result { return dev.drv.cuMemGetInfo(&free, &total) })
	return free, total, err
}

// Synchronize waits until all work queued on the device has finished, and
// returns the first error of an asynchronous launch, if any.
func (dev *Device) Synchronize() error {
	return dev.call("cuCtxSynchronize", func() Result { return dev.drv.cuCtxSynchronize() })
}

// Alloc allocates bytes of device memory (uninitialised, 256-byte aligned
// at least). When it does not fit, the error is an *OutOfMemoryError with
// the bytes asked for and free.
func (dev *Device) Alloc(bytes uint64) (DevicePtr, error) {
	if bytes == 0 {
		return 0, fmt.Errorf("cuda: Alloc of 0 bytes")
	}
	var p DevicePtr
	err := dev.call("cuMemAlloc_v2", func() Result { return dev.drv.cuMemAlloc(&p, bytes) })
	if IsCode(err, ErrorOutOfMemory) {
		oom := &OutOfMemoryError{Requested: bytes, Total: dev.total}
		errors.As(err, &oom.Err)
		oom.Free, _, _ = dev.MemInfo() // best effort: the message is what matters
		return 0, oom
	}
	return p, err
}

// Free releases memory returned by Alloc.
func (dev *Device) Free(p DevicePtr) error {
	return dev.call("cuMemFree_v2", func() Result { return dev.drv.cuMemFree(p) })
}

// CopyHtoD copies src to device memory at dst, synchronously.
func (dev *Device) CopyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return dev.call("cuMemcpyHtoD_v2", func() Result {
		return dev.drv.cuMemcpyHtoD(dst, unsafe.Pointer(&src[0]), uint64(len(src)))
	})
}

// CopyDtoH copies len(dst) bytes of device memory at src into dst,
// synchronously.
func (dev *Device) CopyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return dev.call("cuMemcpyDtoH_v2", func() Result {
		return dev.drv.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), src, uint64(len(dst)))
	})
}

// CopyDtoD copies n bytes between device buffers.
func (dev *Device) CopyDtoD(dst, src DevicePtr, n uint64) error {
	if n == 0 {
		return nil
	}
	return dev.call("cuMemcpyDtoD_v2", func() Result { return dev.drv.cuMemcpyDtoD(dst, src, n) })
}

// CopyDtoDAsync queues a copy of n bytes between device buffers on stream
// (nil: the default stream), ordered with the stream's other work; the
// host does not wait. The synchronous CopyDtoD costs the host several
// times more per call, which a replayed graph's argument copies pay on
// every call.
func (dev *Device) CopyDtoDAsync(dst, src DevicePtr, n uint64, stream *Stream) error {
	if n == 0 {
		return nil
	}
	s := stream.Handle()
	return dev.call("cuMemcpyDtoDAsync_v2", func() Result {
		return dev.drv.raw(dev.drv.rawMemcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(n), s)
	})
}

// Memset sets n bytes of device memory at dst to v.
func (dev *Device) Memset(dst DevicePtr, v byte, n uint64) error {
	if n == 0 {
		return nil
	}
	return dev.call("cuMemsetD8_v2", func() Result { return dev.drv.cuMemsetD8(dst, v, n) })
}
