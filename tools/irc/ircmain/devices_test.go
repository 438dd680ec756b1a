package ircmain

import (
	"bytes"
	"errors"
	"testing"

	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/nvml"
)

func TestDevicesWithoutDriver(t *testing.T) {
	if _, err := nvml.Devices(); err == nil {
		t.Skip("NVML works here; this test needs a machine without an NVIDIA driver")
	}
	if err := cuda.Load(); !errors.Is(err, cuda.ErrNoDriver) {
		t.Skipf("a CUDA driver is installed (%v); this test needs a machine without one", err)
	}
	var out, errOut bytes.Buffer
	status := Main([]string{"devices"}, nil, &out, &errOut)
	if status != ExitDiagnostics {
		t.Errorf("status %d, want %d", status, ExitDiagnostics)
	}
	const want = "irc devices: no NVIDIA driver found (libnvidia-ml.so.1 / libcuda.so.1 not loadable)\n"
	if errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q, want nothing", out.String())
	}
}

func TestDevicesUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if status := Main([]string{"devices", "extra"}, nil, &out, &errOut); status != ExitUsage {
		t.Errorf("status %d, want %d (stderr %q)", status, ExitUsage, errOut.String())
	}
}

func TestWriteDevices(t *testing.T) {
	const gib = 1 << 30
	infos := []nvml.DeviceInfo{
		{
			Index: 0, Name: "NVIDIA H200", UUID: "GPU-0123", CCMajor: 9, CCMinor: 0,
			MemoryTotal: 140 * gib, MemoryUsed: 1 * gib, MemoryFree: 139 * gib,
			SMClock: 345, SMClockMax: 1980, MemClock: 2619, MemClockMax: 2619,
			Driver: "580.65.06", CUDAVersion: 13000,
		},
		// As the CUDA fallback fills it: no UUID, no clocks, no driver string.
		{Index: 1, Name: "NVIDIA H200", CCMajor: 9, CCMinor: 0, MemoryTotal: 2 * gib, MemoryFree: 2 * gib},
	}
	var b bytes.Buffer
	writeDevices(&b, infos)
	const want = `GPU 0: NVIDIA H200
  compute capability: 9.0 (sm_90)
  uuid:               GPU-0123
  memory:             143360 MiB total, 1024 MiB used, 142336 MiB free
  clocks:             SM 345 MHz (max 1980), memory 2619 MHz (max 2619)
GPU 1: NVIDIA H200
  compute capability: 9.0 (sm_90)
  memory:             2048 MiB total, 0 MiB used, 2048 MiB free
driver 580.65.06, CUDA 13.0
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	writeDevices(&b, []nvml.DeviceInfo{{Name: "X", CUDAVersion: 12080}})
	if want := "driver version unknown (no NVML), CUDA 12.8\n"; !bytes.HasSuffix(b.Bytes(), []byte(want)) {
		t.Errorf("fallback driver line: got %q, want suffix %q", b.String(), want)
	}
}
