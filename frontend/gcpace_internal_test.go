package frontend

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// gcSettings reads the GC percent and the memory limit.
func gcSettings() (int, int64) {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p, debug.SetMemoryLimit(-1)
}

// TestHoldGC checks that concurrent compiles pause the collector from the
// first to the last and then restore the settings, and that a program's
// own GC percent is left alone.
func TestHoldGC(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: holdGC leaves the collector alone")
	}
	p0, l0 := gcSettings()
	if p0 != 100 || l0 != math.MaxInt64 {
		t.Skipf("the test process runs with GC percent %d, memory limit %d", p0, l0)
	}
	r1 := holdGC()
	r2 := holdGC()
	if p, l := gcSettings(); p != -1 || l >= l0 || l < compileHeadroom {
		t.Errorf("held: GC percent %d, limit %d; want off and a limit of the process's memory plus %d", p, l, compileHeadroom)
	}
	r1()
	if p, _ := gcSettings(); p != -1 {
		t.Errorf("one of two holders left: GC percent %d, want still off", p)
	}
	r2()
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Errorf("released: GC percent %d, limit %d; want %d, %d", p, l, p0, l0)
	}

	old := debug.SetGCPercent(50)
	defer debug.SetGCPercent(old)
	r := holdGC()
	if p, l := gcSettings(); p != 50 || l != l0 {
		t.Errorf("a program's GC percent 50: held as %d, limit %d; want untouched", p, l)
	}
	r()
	if p, _ := gcSettings(); p != 50 {
		t.Errorf("a program's GC percent 50 became %d", p)
	}
}
