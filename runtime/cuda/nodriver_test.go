package cuda

import (
	"errors"
	"strings"
	"testing"
)

func TestOpenDriverMissingLibrary(t *testing.T) {
	_, err := openDriver("libstrata-no-such-driver.so.1")
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("got %v, want an error wrapping ErrNoDriver", err)
	}
	if !strings.HasPrefix(err.Error(), "no NVIDIA driver: libstrata-no-such-driver.so.1 not found (") {
		t.Errorf("unclear message %q", err)
	}
}

func TestOpenDriverNotCUDA(t *testing.T) {
	// A library that loads but is not a CUDA driver must be refused
	// cleanly, not by a panic when binding the first missing symbol.
	_, err := openDriver("libc.so.6")
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "libc.so.6 has no cuInit") {
		t.Fatalf("got %v, want ErrNoDriver naming the missing cuInit", err)
	}
}

func TestOpenWithoutDriver(t *testing.T) {
	if err := Load(); !errors.Is(err, ErrNoDriver) {
		t.Skipf("a CUDA driver is installed (Load: %v); this test needs a machine without one", err)
	}
	dev, err := Open(0)
	if dev != nil || !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Open(0) = %v, %v; want nil and ErrNoDriver", dev, err)
	}
	if !strings.HasPrefix(err.Error(), "no NVIDIA driver: libcuda.so.1 not found (") {
		t.Errorf("unclear message %q", err)
	}
	if _, err := DeviceCount(); !errors.Is(err, ErrNoDriver) {
		t.Errorf("DeviceCount: %v, want ErrNoDriver", err)
	}
	if _, err := DriverVersion(); !errors.Is(err, ErrNoDriver) {
		t.Errorf("DriverVersion: %v, want ErrNoDriver", err)
	}
}
