package exec

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// fakeStage is a stageDevice whose copies run only when a wait reaches
// them (or at the end): a copy whose bytes changed before it ran read
// memory the stager had written again too early.
type fakeStage struct {
	buf     []byte
	queued  []fakeCopy
	marks   [2]int // len(queued) at each half's last mark
	done    int    // copies run
	written map[DevicePtr][]byte
}

type fakeCopy struct {
	dst  DevicePtr
	off  int
	want []byte
}

func (f *fakeStage) buffer() []byte { return f.buf }

func (f *fakeStage) copy(dst DevicePtr, off, n int) error {
	f.queued = append(f.queued, fakeCopy{dst, off, bytes.Clone(f.buf[off : off+n])})
	return nil
}

func (f *fakeStage) mark(h int) error { f.marks[h] = len(f.queued); return nil }

func (f *fakeStage) wait(h int) error { return f.run(f.marks[h]) }

// run runs the queued copies up to n, in order.
func (f *fakeStage) run(n int) error {
	for ; f.done < n; f.done++ {
		c := f.queued[f.done]
		got := f.buf[c.off : c.off+len(c.want)]
		if !bytes.Equal(got, c.want) {
			return fmt.Errorf("copy %d (%d bytes at %d) ran after its bytes were overwritten", f.done, len(c.want), c.off)
		}
		f.written[c.dst] = bytes.Clone(got)
	}
	return nil
}

// TestStagerKeepsQueuedBytes uploads random sizes through a small staging
// buffer: every staged copy delivers the bytes it was given (none is
// overwritten before it runs), uploads larger than stageMax or a half are
// left to the caller, and a half is reused only after a wait.
func TestStagerKeepsQueuedBytes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		size := rapid.SampledFrom([]int{64, 256, 4096}).Draw(rt, "buffer")
		f := &fakeStage{buf: make([]byte, size), written: map[DevicePtr][]byte{}}
		s := newStager(f)
		want := map[DevicePtr][]byte{}
		n := rapid.IntRange(1, 60).Draw(rt, "uploads")
		for i := range n {
			data := rapid.SliceOfN(rapid.Byte(), 1, size).Draw(rt, "data")
			dst := DevicePtr(i + 1)
			staged, err := s.upload(dst, data)
			if err != nil {
				rt.Fatal(err)
			}
			if big := len(data) > size/2 || len(data) > stageMax; staged == big {
				rt.Fatalf("upload %d of %d bytes (halves of %d): staged %v", i, len(data), size/2, staged)
			}
			if staged {
				want[dst] = bytes.Clone(data)
			}
			// The caller may reuse its memory at once.
			clear(data)
		}
		if err := f.run(len(f.queued)); err != nil {
			rt.Fatal(err)
		}
		for dst, w := range want {
			if !bytes.Equal(f.written[dst], w) {
				rt.Fatalf("upload to %d: got %v, want %v", dst, f.written[dst], w)
			}
		}
	})
}
