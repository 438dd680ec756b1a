package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// ErrNoGraphs is wrapped by the errors of CUDA graph calls on a driver that
// lacks the graph entry points.
var ErrNoGraphs = errors.New("the CUDA driver has no CUDA graph entry points")

// hasGraphs reports whether the driver can capture and replay graphs.
func (d *driver) hasGraphs() bool {
	return d.cuStreamBeginCapture != nil && d.cuStreamEndCapture != nil &&
		d.cuGraphInstantiate != nil && d.cuGraphLaunch != nil &&
		d.cuGraphExecDestroy != nil && d.cuGraphDestroy != nil
}

// SupportsGraphs reports whether the driver can capture streams into CUDA
// graphs and replay them.
func (dev *Device) SupportsGraphs() bool { return dev.drv != nil && dev.drv.hasGraphs() }

// NewNonBlockingStream creates a stream that does not synchronise with the
// legacy default stream (CU_STREAM_NON_BLOCKING). Capture needs one: work
// queued on the default stream while a blocking stream is being captured
// would join the capture and invalidate it.
func (dev *Device) NewNonBlockingStream() (*Stream, error) {
	const nonBlocking = 1
	st := &Stream{dev: dev}
	if err := dev.call("cuStreamCreate", func() Result { return dev.drv.cuStreamCreate(&st.s, nonBlocking) }); err != nil {
		return nil, err
	}
	return st, nil
}

// CopyHtoDBytes queues a copy of src, pageable host memory, to dst on the
// stream. The driver stages pageable memory before returning, so src may
// be reused at once; the copy is ordered with the stream's other work.
func (s *Stream) CopyHtoDBytes(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return s.dev.call("cuMemcpyHtoDAsync_v2", func() Result {
		return s.dev.drv.raw(s.dev.drv.rawMemcpyHtoDAsync, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)), s.s)
	})
}

// captureRelaxed is CU_STREAM_CAPTURE_MODE_RELAXED: the capture belongs to
// the stream, not to an OS thread, which suits Go (every driver call may
// run on another thread), and allocating device memory while capturing
// stays legal.
const captureRelaxed = 2

// BeginCapture starts recording the work queued on the stream into a graph
// instead of running it. The stream must be non-blocking.
func (s *Stream) BeginCapture() error {
	if !s.dev.drv.hasGraphs() {
		return ErrNoGraphs
	}
	return s.dev.call("cuStreamBeginCapture_v2", func() Result {
		return s.dev.drv.cuStreamBeginCapture(s.s, captureRelaxed)
	})
}

// Capturing reports whether the stream (nil: the default stream) is being
// captured into a graph: work queued on it then does not run, and the
// host must not wait for it. A driver without graphs never captures.
func (dev *Device) Capturing(s *Stream) (bool, error) {
	if dev.drv.cuStreamIsCapturing == nil {
		return false, nil
	}
	var status int32 // CUstreamCaptureStatus: 0 none, 1 active, 2 invalidated
	err := dev.call("cuStreamIsCapturing", func() Result { return dev.drv.cuStreamIsCapturing(s.Handle(), &status) })
	return status != 0, err
}

// EndCapture ends the stream's capture and returns the recorded graph.
func (s *Stream) EndCapture() (*Graph, error) {
	if !s.dev.drv.hasGraphs() {
		return nil, ErrNoGraphs
	}
	g := &Graph{dev: s.dev}
	if err := s.dev.call("cuStreamEndCapture", func() Result { return s.dev.drv.cuStreamEndCapture(s.s, &g.g) }); err != nil {
		return nil, err
	}
	return g, nil
}

// Graph is a recorded CUDA graph (a CUgraph): a template to instantiate.
type Graph struct {
	dev *Device
	g   uintptr
}

// Instantiate makes an executable graph of g.
func (g *Graph) Instantiate() (*GraphExec, error) {
	e := &GraphExec{dev: g.dev}
	if err := g.dev.call("cuGraphInstantiateWithFlags", func() Result { return g.dev.drv.cuGraphInstantiate(&e.e, g.g, 0) }); err != nil {
		return nil, err
	}
	return e, nil
}

// Destroy destroys the graph; executable graphs made from it stay valid.
func (g *Graph) Destroy() error {
	return g.dev.call("cuGraphDestroy", func() Result { return g.dev.drv.cuGraphDestroy(g.g) })
}

// GraphExec is an instantiated graph (a CUgraphExec), launched as a whole
// with one driver call.
type GraphExec struct {
	dev *Device
	e   uintptr
}

// Launch queues the whole graph on stream (nil: the default stream).
func (e *GraphExec) Launch(stream *Stream) error {
	s := stream.Handle()
	return e.dev.call("cuGraphLaunch", func() Result { return e.dev.drv.raw(e.dev.drv.rawGraphLaunch, e.e, s) })
}

// Destroy destroys the executable graph.
func (e *GraphExec) Destroy() error {
	return e.dev.call("cuGraphExecDestroy", func() Result { return e.dev.drv.cuGraphExecDestroy(e.e) })
}

// defaultSharedLimit is the dynamic shared memory a kernel may use without
// opting in: 48 KiB on every architecture.
const defaultSharedLimit = 48 << 10

// funcAttrMaxDynamicShared is CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
const funcAttrMaxDynamicShared = 8

// sharedOptIn remembers, per kernel, the dynamic shared memory it was
// allowed, so the attribute is set once per size.
type sharedOptIn struct {
	mu      sync.Mutex
	allowed uint32
}

// allowShared lets fn use sharedBytes of dynamic shared memory: beyond 48
// KiB a kernel must opt in with cuFuncSetAttribute before its launch.
func (dev *Device) allowShared(fn *Function, sharedBytes uint32) error {
	if sharedBytes <= defaultSharedLimit {
		return nil
	}
	fn.shared.mu.Lock()
	defer fn.shared.mu.Unlock()
	if sharedBytes <= fn.shared.allowed {
		return nil
	}
	if dev.drv.cuFuncSetAttribute == nil {
		return fmt.Errorf("cuda: %s needs %d bytes of dynamic shared memory and the driver has no cuFuncSetAttribute", fn.name, sharedBytes)
	}
	err := dev.call("cuFuncSetAttribute("+fn.name+")", func() Result {
		return dev.drv.cuFuncSetAttribute(fn.fn, funcAttrMaxDynamicShared, int32(sharedBytes))
	})
	if err != nil {
		return err
	}
	fn.shared.allowed = sharedBytes
	return nil
}
