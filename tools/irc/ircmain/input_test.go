package ircmain

import "testing"

// TestMemoryLimitFor: no limit below 16 MiB; above, 3 bytes per byte of a
// mapped input plus 64 MiB, one more byte per byte for an input read into
// the heap (the 131 MB benchmark file gets about 441 MiB mapped).
func TestMemoryLimitFor(t *testing.T) {
	for _, tc := range []struct {
		n      int
		mapped bool
		want   int64
	}{
		{0, true, 0},
		{16<<20 - 1, false, 0},
		{16 << 20, true, 48<<20 + 64<<20},
		{16 << 20, false, 64<<20 + 64<<20},
		{131_711_340, true, 395_134_020 + 64<<20},
		{131_711_340, false, 526_845_360 + 64<<20},
	} {
		if got := memoryLimitFor(tc.n, tc.mapped); got != tc.want {
			t.Errorf("memoryLimitFor(%d, %v) = %d, want %d", tc.n, tc.mapped, got, tc.want)
		}
	}
}
