package cuda

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestJITMillis checks the reading of CU_JIT_WALL_TIME's slot: the driver
// writes a float into the low four bytes of a word that held zero.
func TestJITMillis(t *testing.T) {
	for _, c := range []struct {
		slot uintptr
		want time.Duration
	}{
		{uintptr(math.Float32bits(12.5)), 12500 * time.Microsecond},
		{uintptr(math.Float32bits(0.25)), 250 * time.Microsecond},
		{0, 0},
		{uintptr(math.Float32bits(-1)), 0},
		{uintptr(math.Float32bits(float32(math.NaN()))), 0},
		{uintptr(math.Float32bits(float32(math.Inf(1)))), 0},
	} {
		if got := jitMillis(c.slot); got != c.want {
			t.Errorf("jitMillis(%#x) = %v, want %v", c.slot, got, c.want)
		}
	}
}

// TestGPULoadStats loads a PTX text no other test loads (so the driver's
// cache cannot serve it in a fresh cache directory) and checks that the
// load reports its wall time and a JIT time within it.
func TestGPULoadStats(t *testing.T) {
	dev := openGPU(t)
	ptx := vaddPTX + fmt.Sprintf("\n// load-stats %d\n", time.Now().UnixNano())
	before := time.Now()
	mod, err := dev.LoadModule(ptx)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	s := mod.LoadStats()
	t.Logf("load: wall %v, JIT %v", s.Wall, s.JIT)
	if s.At.Before(before) || s.Wall <= 0 || s.JIT < 0 || s.JIT > s.Wall {
		t.Errorf("LoadStats = %+v: want At after %v, Wall > 0, 0 <= JIT <= Wall", s, before)
	}
	fn, err := mod.Function("vadd")
	if err != nil {
		t.Fatal(err)
	}
	if fn.Module() != mod {
		t.Error("Function.Module is not the module the function was looked up in")
	}
}
