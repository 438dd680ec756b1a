package nvml

import (
	"errors"
	"os"
	"testing"
)

// hasNVML reports whether the NVML library is installed, by its usual
// paths; Devices itself is what the tests exercise.
func hasNVML() bool {
	for _, p := range []string{
		"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
		"/usr/lib64/libnvidia-ml.so.1",
		"/usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1",
	} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

func TestDevicesWithoutDriver(t *testing.T) {
	if hasNVML() {
		t.Skip("libnvidia-ml.so.1 is installed; this test needs a machine without it")
	}
	infos, err := Devices()
	if err == nil {
		t.Fatalf("Devices() = %v, nil without a driver", infos)
	}
	if !errors.Is(err, ErrNoDriver) && !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Devices() error %v wraps neither ErrNoDriver nor ErrUnavailable", err)
	}
	// A second call must fail the same way, not panic on half-initialised state.
	if _, err2 := Devices(); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("second call: %v, first: %v", err2, err)
	}
}

func TestGPUDevices(t *testing.T) {
	infos, err := Devices()
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	if len(infos) == 0 {
		t.Fatal("NVML loaded but lists no device")
	}
	for _, d := range infos {
		t.Logf("%+v", d)
		if d.Name == "" || d.MemoryTotal == 0 || d.CCMajor == 0 || d.Driver == "" || d.CUDAVersion == 0 {
			t.Errorf("device %d: incomplete %+v", d.Index, d)
		}
		if d.MemoryUsed > d.MemoryTotal || d.MemoryFree > d.MemoryTotal {
			t.Errorf("device %d: memory used %d free %d total %d", d.Index, d.MemoryUsed, d.MemoryFree, d.MemoryTotal)
		}
	}
}
