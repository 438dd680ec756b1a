// Package nvml discovers NVIDIA GPUs and reads their memory and clocks
// through NVML (libnvidia-ml.so.1, bound by github.com/NVIDIA/go-nvml).
//
// go-nvml loads the library at run time and needs cgo; a binary built with
// CGO_ENABLED=0 gets ErrUnavailable. Without the NVIDIA driver, Devices
// returns an error wrapping ErrNoDriver.
package nvml

import "errors"

// DeviceInfo describes one GPU as NVML sees it. Clocks are in MHz;
// memory is in bytes.
type DeviceInfo struct {
	Index       int
	Name        string // e.g. "NVIDIA H200"
	UUID        string // e.g. "GPU-1c0f..."
	CCMajor     int    // compute capability, 9.0 for sm_90
	CCMinor     int
	MemoryTotal uint64
	MemoryUsed  uint64
	MemoryFree  uint64
	SMClock     uint32 // current SM clock
	SMClockMax  uint32
	MemClock    uint32 // current memory clock
	MemClockMax uint32
	Driver      string // driver version, e.g. "580.65.06"
	CUDAVersion int    // CUDA version the driver supports: 1000*major + 10*minor
}

// ErrNoDriver is wrapped by the error Devices returns when
// libnvidia-ml.so.1 cannot be loaded.
var ErrNoDriver = errors.New("no NVIDIA driver: libnvidia-ml.so.1 not loadable")

// ErrUnavailable is wrapped by the error Devices returns in a binary built
// without cgo, which go-nvml requires.
var ErrUnavailable = errors.New("NVML unavailable: built without cgo")
