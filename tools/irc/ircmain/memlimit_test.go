package ircmain

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestTunedMemoryLimit: the input's limit while the live heap fits under
// it with an eighth and 64 MiB to spare, above that the live heap plus
// those.
func TestTunedMemoryLimit(t *testing.T) {
	for _, tc := range []struct{ input, live, want int64 }{
		{500 << 20, 0, 500 << 20},
		{500 << 20, 300 << 20, 500 << 20},
		{500 << 20, 384 << 20, 500 << 20},
		{500 << 20, 400 << 20, 450<<20 + 64<<20},
		{500 << 20, 800 << 20, 900<<20 + 64<<20},
	} {
		if got := tunedMemoryLimit(tc.input, tc.live); got != tc.want {
			t.Errorf("tunedMemoryLimit(%d, %d) = %d, want %d", tc.input, tc.live, got, tc.want)
		}
	}
}

// TestTuneMemoryLimit: a live heap above the limit raises it within a few
// ticks, and stop restores the limit found at the start.
func TestTuneMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	const live = 64 << 20
	stop := tuneMemoryLimit(1 << 20)
	if got := debug.SetMemoryLimit(-1); got != 1<<20 {
		t.Errorf("limit %d at the start, want %d", got, 1<<20)
	}
	hold := make([]byte, live)
	raised := false
	for deadline := time.Now().Add(5 * time.Second); !raised && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(2 * memoryTuneEvery)
		raised = debug.SetMemoryLimit(-1) >= live+memoryLimitBase
	}
	runtime.KeepAlive(hold)
	stop()
	if !raised {
		t.Errorf("limit %d with %d bytes live: not raised", debug.SetMemoryLimit(-1), live)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit %d after stop, want %d", got, before)
	}
}
