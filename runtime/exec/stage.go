package exec

import (
	"fmt"
	"sync"

	"github.com/strata-ir/strata/runtime/cuda"
)

// Small uploads are staged through pinned host memory. A copy from
// pageable memory lets the driver synchronize with the stream before it
// stages the data (CUDA's API synchronization rules), and the upload
// stream waits for the legacy default stream's launches: a call that
// uploads one small input (gpt2_dynamic's positions, an optimizer's
// per-step scalars, a decoding step's position) waited for every kernel
// queued before it, so the host could not run ahead of the device. From
// pinned memory the copy is queued without a wait.
const (
	// stageBytes is the pinned buffer, filled in two halves: a half is
	// written again only once the copies made from it have run.
	stageBytes = 1 << 20
	// stageMax is the largest upload staged; larger ones are copied from
	// the caller's memory.
	stageMax = 64 << 10
	// stageAlign aligns each staged upload in the buffer.
	stageAlign = 16
)

// stageDevice is what a stager needs of the device.
type stageDevice interface {
	// buffer is the pinned memory, size bytes.
	buffer() []byte
	// copy queues a copy of buffer()[off:off+n] to dst.
	copy(dst DevicePtr, off, n int) error
	// mark records, for half h, the point after the copies queued so far.
	mark(h int) error
	// wait waits until the copies queued before half h's last mark have
	// run.
	wait(h int) error
}

// stager queues small uploads from a pinned buffer in two halves.
type stager struct {
	mu   sync.Mutex
	dev  stageDevice
	size int // bytes of a half
	half int // the half being filled
	off  int // its next free byte
	// marked[h]: half h has copies whose mark wait must see before the
	// half is written again.
	marked [2]bool
}

func newStager(dev stageDevice) *stager {
	return &stager{dev: dev, size: len(dev.buffer()) / 2}
}

// upload queues a copy of data to dst and reports whether it staged it
// (false: data is larger than the stager takes; nothing was queued).
func (s *stager) upload(dst DevicePtr, data []byte) (bool, error) {
	n := len(data)
	if n == 0 || n > stageMax || n > s.size {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off+n > s.size {
		// Move to the other half, once the copies from it have run.
		if err := s.dev.mark(s.half); err != nil {
			return false, err
		}
		s.marked[s.half] = true
		s.half ^= 1
		if s.marked[s.half] {
			if err := s.dev.wait(s.half); err != nil {
				return false, err
			}
			s.marked[s.half] = false
		}
		s.off = 0
	}
	at := s.half*s.size + s.off
	copy(s.dev.buffer()[at:at+n], data)
	if err := s.dev.copy(dst, at, n); err != nil {
		return false, err
	}
	s.off += (n + stageAlign - 1) / stageAlign * stageAlign
	return true, nil
}

// cudaStage is a stageDevice on a CUDA stream.
type cudaStage struct {
	buf    *cuda.HostBuffer
	stream *cuda.Stream
	events [2]*cuda.Event
}

func newCUDAStage(dev *cuda.Device, stream *cuda.Stream, bytes int) (*cudaStage, error) {
	buf, err := dev.AllocHost(bytes)
	if err != nil {
		return nil, fmt.Errorf("exec: the upload staging buffer: %w", err)
	}
	s := &cudaStage{buf: buf, stream: stream}
	for i := range s.events {
		if s.events[i], err = dev.NewSyncEvent(); err != nil {
			_ = s.close()
			return nil, fmt.Errorf("exec: the upload staging events: %w", err)
		}
	}
	return s, nil
}

func (s *cudaStage) buffer() []byte { return s.buf.Bytes() }

func (s *cudaStage) copy(dst DevicePtr, off, n int) error {
	return s.stream.CopyHtoD(dst, s.buf.Sub(off, n))
}

func (s *cudaStage) mark(h int) error { return s.events[h].Record(s.stream) }
func (s *cudaStage) wait(h int) error { return s.events[h].Synchronize() }

// close frees the buffer and events; the stream's work must have run.
func (s *cudaStage) close() error {
	var err error
	for _, e := range s.events {
		if e != nil {
			if e2 := e.Destroy(); err == nil {
				err = e2
			}
		}
	}
	if e2 := s.buf.Free(); err == nil {
		err = e2
	}
	return err
}
