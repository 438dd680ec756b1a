package ircmain

import "testing"

// TestMemoryLimitFor: no limit below 16 MiB; above, 4.5 bytes per byte of
// input plus 64 MiB (the 131 MB benchmark file gets about 654 MiB).
func TestMemoryLimitFor(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want int64
	}{{0, 0}, {16<<20 - 1, 0}, {16 << 20, 72<<20 + 64<<20}, {131_711_340, 592_701_030 + 64<<20}} {
		if got := memoryLimitFor(tc.n); got != tc.want {
			t.Errorf("memoryLimitFor(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}
