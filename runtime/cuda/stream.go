package cuda

import "unsafe"

// Stream is a queue of device work (a CUstream).
type Stream struct {
	dev *Device
	s   uintptr
}

// NewStream creates a stream that synchronises with the default stream
// like any blocking stream does.
func (dev *Device) NewStream() (*Stream, error) {
	st := &Stream{dev: dev}
	if err := dev.call("cuStreamCreate", func() Result { return dev.drv.cuStreamCreate(&st.s, 0) }); err != nil {
		return nil, err
	}
	return st, nil
}

// DefaultStream returns the device's legacy default stream (the one a nil
// *Stream means) as a Stream, for the methods only a Stream has. It must
// not be destroyed.
func (dev *Device) DefaultStream() *Stream { return &Stream{dev: dev} }

// Synchronize waits until the work queued on the stream has finished.
func (s *Stream) Synchronize() error {
	return s.dev.call("cuStreamSynchronize", func() Result { return s.dev.drv.cuStreamSynchronize(s.s) })
}

// Destroy destroys the stream once its queued work has finished.
func (s *Stream) Destroy() error {
	return s.dev.call("cuStreamDestroy_v2", func() Result { return s.dev.drv.cuStreamDestroy(s.s) })
}

// CopyHtoD queues a copy of the pinned buffer src to device memory at dst.
func (s *Stream) CopyHtoD(dst DevicePtr, src *HostBuffer) error {
	if src.n == 0 {
		return nil
	}
	return s.dev.call("cuMemcpyHtoDAsync_v2", func() Result {
		return s.dev.drv.cuMemcpyHtoDAsync(dst, src.p, uint64(src.n), s.s)
	})
}

// CopyDtoH queues a copy of device memory at src into the pinned buffer
// dst (all of it).
func (s *Stream) CopyDtoH(dst *HostBuffer, src DevicePtr) error {
	if dst.n == 0 {
		return nil
	}
	return s.dev.call("cuMemcpyDtoHAsync_v2", func() Result {
		return s.dev.drv.cuMemcpyDtoHAsync(dst.p, src, uint64(dst.n), s.s)
	})
}

// MemsetD32 queues setting n 32-bit words at dst to v on stream (nil: the
// default stream), ordered with the stream's other work.
func (dev *Device) MemsetD32(dst DevicePtr, v uint32, n uint64, stream *Stream) error {
	var s uintptr
	if stream != nil {
		s = stream.s
	}
	return dev.call("cuMemsetD32Async", func() Result { return dev.drv.cuMemsetD32Async(dst, v, n, s) })
}

// Event marks a point in a stream; two events time the work between them.
type Event struct {
	dev *Device
	e   uintptr
}

// NewEvent creates an event with timing enabled.
func (dev *Device) NewEvent() (*Event, error) {
	ev := &Event{dev: dev}
	if err := dev.call("cuEventCreate", func() Result { return dev.drv.cuEventCreate(&ev.e, 0) }); err != nil {
		return nil, err
	}
	return ev, nil
}

// NewSyncEvent creates an event without timing (CU_EVENT_DISABLE_TIMING),
// the cheap kind that orders one stream after another (Stream.WaitEvent).
func (dev *Device) NewSyncEvent() (*Event, error) {
	const disableTiming = 2
	ev := &Event{dev: dev}
	if err := dev.call("cuEventCreate", func() Result { return dev.drv.cuEventCreate(&ev.e, disableTiming) }); err != nil {
		return nil, err
	}
	return ev, nil
}

// WaitEvent makes the work queued on the stream after it wait for the work
// before e's last Record (on any stream); the host does not wait. On the
// nil Stream it orders the default stream.
func (dev *Device) WaitEvent(stream *Stream, e *Event) error {
	return dev.call("cuStreamWaitEvent", func() Result { return dev.drv.cuStreamWaitEvent(stream.Handle(), e.e, 0) })
}

// Record queues the event on stream (nil: the default stream).
func (e *Event) Record(stream *Stream) error {
	var s uintptr
	if stream != nil {
		s = stream.s
	}
	return e.dev.call("cuEventRecord", func() Result { return e.dev.drv.cuEventRecord(e.e, s) })
}

// Synchronize waits until the work before the event's last Record has
// finished.
func (e *Event) Synchronize() error {
	return e.dev.call("cuEventSynchronize", func() Result { return e.dev.drv.cuEventSynchronize(e.e) })
}

// Destroy destroys the event.
func (e *Event) Destroy() error {
	return e.dev.call("cuEventDestroy_v2", func() Result { return e.dev.drv.cuEventDestroy(e.e) })
}

// Elapsed returns the time in milliseconds between two recorded, completed
// events (resolution about half a microsecond).
func Elapsed(start, end *Event) (float32, error) {
	var ms float32
	err := end.dev.call("cuEventElapsedTime", func() Result {
		return end.dev.drv.cuEventElapsedTime(&ms, start.e, end.e)
	})
	return ms, err
}

// HostBuffer is page-locked (pinned) host memory, which the device reads
// and writes directly: asynchronous copies need it, and it makes
// synchronous ones faster.
type HostBuffer struct {
	dev   *Device
	p     unsafe.Pointer // driver-allocated, outside the Go heap
	n     int
	owner bool // false for a Sub view, which must not be freed
}

// AllocHost allocates n bytes of pinned host memory.
func (dev *Device) AllocHost(n int) (*HostBuffer, error) {
	h := &HostBuffer{dev: dev, n: n, owner: true}
	if n == 0 {
		return h, nil
	}
	if err := dev.call("cuMemAllocHost_v2", func() Result { return dev.drv.cuMemAllocHost(&h.p, uint64(n)) }); err != nil {
		return nil, err
	}
	return h, nil
}

// Bytes returns the buffer's memory as a byte slice, valid until Free.
func (h *HostBuffer) Bytes() []byte {
	if h.n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(h.p), h.n)
}

// Len returns the buffer's size in bytes.
func (h *HostBuffer) Len() int { return h.n }

// Sub returns the n bytes at off as a buffer sharing h's memory, for
// copying part of it. It panics if the range is outside h, like slicing.
func (h *HostBuffer) Sub(off, n int) *HostBuffer {
	_ = h.Bytes()[off : off+n] // bounds check
	return &HostBuffer{dev: h.dev, p: unsafe.Add(h.p, off), n: n}
}

// Free releases the buffer. Views made with Sub are not freed on their
// own; freeing one is a no-op.
func (h *HostBuffer) Free() error {
	if !h.owner || h.p == nil {
		return nil
	}
	p := h.p
	h.p, h.n = nil, 0
	return h.dev.call("cuMemFreeHost", func() Result { return h.dev.drv.cuMemFreeHost(p) })
}
