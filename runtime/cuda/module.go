package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"
	"unsafe"
)

// CUjit_option values passed to cuModuleLoadDataEx.
const (
	jitWallTime                = 2
	jitOptimizationLevel       = 7
	jitInfoLogBuffer           = 3
	jitInfoLogBufferSizeBytes  = 4
	jitErrorLogBuffer          = 5
	jitErrorLogBufferSizeBytes = 6
	jitLogVerbose              = 12
)

// jitLogSize bounds each JIT log; ptxas messages are short, and the first
// errors are the useful ones.
const jitLogSize = 64 << 10

// Module is PTX loaded into a device: its kernels can be looked up and
// launched.
type Module struct {
	dev     *Device
	mod     uintptr // CUmodule
	infoLog string
	stats   LoadStats
}

// LoadStats say what loading a module cost. JIT is the driver's own
// account of its compiler and linker (CU_JIT_WALL_TIME; zero when the
// driver took the binary from its ComputeCache instead of compiling); Wall
// is the host clock around the whole cuModuleLoadDataEx, so Wall - JIT is
// what the load spent outside the compiler (parsing the image, allocating
// and copying code to the device, waiting for the context).
type LoadStats struct {
	// At is when the load started.
	At time.Time
	// Wall is the host clock's duration of the load.
	Wall time.Duration
	// JIT is the driver's compile and link time, as it reports it.
	JIT time.Duration
}

// Function is a kernel of a Module.
type Function struct {
	mod    *Module
	fn     uintptr // CUfunction
	name   string
	shared sharedOptIn
}

// LoadModule JIT-compiles ptx for the device and loads it. When the JIT
// rejects the PTX, the error is a *JITError whose log holds the compiler's
// messages ("ptxas application ptx input, line 12; error : ..."). It may
// be called from several goroutines at once: each load runs on its own OS
// thread, and the driver compiles them concurrently.
func (dev *Device) LoadModule(ptx string) (*Module, error) {
	return dev.LoadModuleJIT(ptx, JITOptions{})
}

// JITOptions tune the driver's compile of a module (LoadModuleJIT).
type JITOptions struct {
	// OptLevel is the JIT's optimization level (CU_JIT_OPTIMIZATION_LEVEL)
	// plus one: 0 leaves the driver's default (4, the most), 1 to 5 ask
	// for levels 0 to 4.
	OptLevel int
	// Cache, when set, serves and keeps LoadModuleLinked's cubins
	// (LoadModuleJIT has the driver's own cache).
	Cache *LinkCache
}

// LoadModuleJIT is LoadModule with options for the driver's JIT.
func (dev *Device) LoadModuleJIT(ptx string, o JITOptions) (*Module, error) {
	if err := checkOptLevel(o); err != nil {
		return nil, err
	}
	image := cBytes(ptx)
	j := newJITArgs(o)
	m := &Module{dev: dev}
	start := time.Now()
	err := dev.call("cuModuleLoadDataEx", func() Result {
		return dev.drv.cuModuleLoadDataEx(&m.mod, unsafe.Pointer(&image[0]),
			uint32(len(j.opts)), &j.opts[0], &j.vals[0])
	})
	m.stats = LoadStats{At: start, Wall: time.Since(start), JIT: j.wallTime()}
	runtime.KeepAlive(image)
	defer j.keepAlive()
	if err != nil {
		var e *Error
		errors.As(err, &e)
		return nil, &JITError{Err: e, Log: logText(j.errorLog)}
	}
	m.infoLog = logText(j.infoLog)
	return m, nil
}

// jitArgs are the option arrays LoadModuleJIT gives cuModuleLoadDataEx and
// LoadModuleLinked gives cuLinkCreate, with the log buffers they point
// to. Option values are void*-sized: buffer addresses, and the sizes and
// the verbosity flag as plain integers in pointer-sized slots; the driver
// writes the wall time back into its slot as a float. They are uintptr,
// not unsafe.Pointer, so the collector never sees integers as pointers;
// the buffers are Go heap memory (which does not move) that keepAlive
// holds until the driver is done with them (cuLinkDestroy for the
// linker, which writes its logs until then).
type jitArgs struct {
	opts              []int32
	vals              []uintptr
	infoLog, errorLog []byte
	wall              int // the index of CU_JIT_WALL_TIME's slot
}

// newJITArgs returns the options for o: 64 KiB info and error logs,
// verbose, the wall time, and the optimization level when o sets one.
// o.OptLevel must have been checked (checkOptLevel).
func newJITArgs(o JITOptions) *jitArgs {
	j := &jitArgs{infoLog: make([]byte, jitLogSize), errorLog: make([]byte, jitLogSize)}
	j.opts = []int32{
		jitInfoLogBuffer, jitInfoLogBufferSizeBytes,
		jitErrorLogBuffer, jitErrorLogBufferSizeBytes,
		jitLogVerbose, jitWallTime,
	}
	j.vals = []uintptr{
		uintptr(unsafe.Pointer(&j.infoLog[0])), jitLogSize,
		uintptr(unsafe.Pointer(&j.errorLog[0])), jitLogSize,
		1, 0,
	}
	j.wall = len(j.vals) - 1
	if o.OptLevel > 0 {
		j.opts = append(j.opts, jitOptimizationLevel)
		j.vals = append(j.vals, uintptr(o.OptLevel-1))
	}
	return j
}

// wallTime returns the compile time the driver wrote back.
func (j *jitArgs) wallTime() time.Duration { return jitMillis(j.vals[j.wall]) }

// keepAlive keeps the arrays and the buffers reachable up to its call.
func (j *jitArgs) keepAlive() {
	runtime.KeepAlive(j.opts)
	runtime.KeepAlive(j.vals)
	runtime.KeepAlive(j.infoLog)
	runtime.KeepAlive(j.errorLog)
}

// checkOptLevel refuses an optimization level the driver does not have.
func checkOptLevel(o JITOptions) error {
	if o.OptLevel < 0 || o.OptLevel > 5 {
		return fmt.Errorf("cuda: JIT optimization level %d out of range (0: default, 1-5: levels 0-4)", o.OptLevel)
	}
	return nil
}

// jitMillis reads the float milliseconds the driver wrote into the first
// four bytes of an option slot (little-endian: the low half of the word).
// A value that is not a finite non-negative float reads as zero.
func jitMillis(slot uintptr) time.Duration {
	ms := float64(math.Float32frombits(uint32(slot)))
	if !(ms >= 0) || math.IsInf(ms, 0) {
		return 0
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// LoadStats returns what loading the module cost.
func (m *Module) LoadStats() LoadStats { return m.stats }

// logText returns the NUL-terminated text the JIT wrote into buf.
func logText(buf []byte) string {
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		buf = buf[:i]
	}
	return string(bytes.TrimRight(buf, "\n"))
}

// InfoLog returns the JIT's informational log for the module (register
// and memory use of each kernel, with verbose logging on).
func (m *Module) InfoLog() string { return m.infoLog }

// Function looks up the kernel called name (its .entry name in the PTX).
func (m *Module) Function(name string) (*Function, error) {
	cname := cBytes(name)
	f := &Function{mod: m, name: name}
	err := m.dev.call("cuModuleGetFunction("+name+")", func() Result {
		return m.dev.drv.cuModuleGetFunction(&f.fn, m.mod, &cname[0])
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Unload unloads the module; its Functions must not be launched after.
func (m *Module) Unload() error {
	return m.dev.call("cuModuleUnload", func() Result { return m.dev.drv.cuModuleUnload(m.mod) })
}

// Name returns the kernel's name.
func (f *Function) Name() string { return f.name }

// Module returns the module the kernel is in.
func (f *Function) Module() *Module { return f.mod }

// Launch queues kernel fn on stream (nil: the device's default stream) with
// a grid of grid blocks of block threads and sharedBytes of dynamic shared
// memory. args are the kernel's parameters in order, as Go values per the
// kernel ABI (see packParams): DevicePtr for a memref, int64 or int for an
// index, int32, float32, float64, uint16 for f16 and bf16 bits, bool or
// uint8 for i1, TensorMapArg for a tensor-map parameter (encoded here,
// tensormap.go). Launch does not wait for the kernel; errors raised while it
// runs surface at the next synchronisation.
func (dev *Device) Launch(fn *Function, grid, block [3]uint32, sharedBytes uint32, stream *Stream, args ...any) error {
	if err := dev.allowShared(fn, sharedBytes); err != nil {
		return err
	}
	args, err := dev.encodeTensorMaps(fn, args)
	if err != nil {
		return err
	}
	params, err := packParams(args)
	if err != nil {
		return err
	}
	defer params.release()
	var s uintptr
	if stream != nil {
		s = stream.s
	}
	// The launch path of a small kernel allocates nothing it can avoid
	// (tiny_chain's host overhead): no closure for call, raw entry points,
	// pooled parameters, and the kernel's name goes into the error only
	// when there is one.
	runtime.LockOSThread()
	op := "cuCtxSetCurrent"
	r := dev.drv.ctxSetCurrent(dev.ctx)
	if r == Success {
		op = "cuLaunchKernel"
		r = dev.drv.launchKernel(fn.fn, grid, block, sharedBytes, s, params.array())
	}
	runtime.UnlockOSThread()
	runtime.KeepAlive(params)
	if r != Success {
		e := dev.drv.errorFor(op, r)
		if op == "cuLaunchKernel" {
			e.Op += "(" + fn.name + ")"
		}
		return e
	}
	return nil
}
