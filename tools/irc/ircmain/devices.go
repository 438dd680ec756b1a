package ircmain

import (
	"errors"
	"fmt"
	"io"

	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/nvml"
)

// devices is irc devices: list each GPU with its compute capability,
// memory, clocks and the driver's versions. NVML is asked first; where it
// is missing but the CUDA driver is not, the driver API gives what it
// knows (no UUID, no clocks).
func (t *tool) devices(args []string) int {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintf(t.stdout, "usage: %s devices\n\nlists each NVIDIA GPU with its compute capability, memory and clocks, and the\n"+
			"driver's version (through NVML, else the CUDA driver API); exits 1 when there is none\n", t.name)
		return ExitOK
	}
	if len(args) > 0 {
		return t.usageErrorf("devices takes no arguments, got %q", args[0])
	}
	infos, nvmlErr := nvml.Devices()
	if nvmlErr == nil {
		if len(infos) == 0 {
			return t.devicesErrorf("the NVIDIA driver reports no GPU")
		}
		writeDevices(t.stdout, infos)
		return ExitOK
	}
	infos, cudaErr := cudaDevices()
	switch {
	case cudaErr == nil:
		fmt.Fprintf(t.stderr, "%s devices: NVML unavailable (%v); listing through the CUDA driver API\n", t.name, nvmlErr)
		writeDevices(t.stdout, infos)
		return ExitOK
	case (errors.Is(nvmlErr, nvml.ErrNoDriver) || errors.Is(nvmlErr, nvml.ErrUnavailable)) &&
		errors.Is(cudaErr, cuda.ErrNoDriver):
		return t.devicesErrorf("no NVIDIA driver found (libnvidia-ml.so.1 / libcuda.so.1 not loadable)")
	default:
		return t.devicesErrorf("%v; %v", nvmlErr, cudaErr)
	}
}

// devicesErrorf reports why irc devices cannot list the GPUs and returns
// ExitDiagnostics.
func (t *tool) devicesErrorf(format string, args ...any) int {
	fmt.Fprintf(t.stderr, "%s devices: %s\n", t.name, fmt.Sprintf(format, args...))
	return ExitDiagnostics
}

// cudaDevices describes the GPUs with the CUDA driver API, in the shape
// NVML uses; fields the driver API cannot give stay zero.
func cudaDevices() ([]nvml.DeviceInfo, error) {
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, cuda.ErrNoDevice
	}
	version, err := cuda.DriverVersion()
	if err != nil {
		return nil, err
	}
	infos := make([]nvml.DeviceInfo, 0, n)
	for i := range n {
		dev, err := cuda.Open(i)
		if err != nil {
			return nil, err
		}
		free, total, err := dev.MemInfo()
		dev.Close()
		if err != nil {
			return nil, err
		}
		major, minor := dev.ComputeCapability()
		infos = append(infos, nvml.DeviceInfo{
			Index: i, Name: dev.Name(), CCMajor: major, CCMinor: minor,
			MemoryTotal: total, MemoryFree: free, MemoryUsed: total - free,
			CUDAVersion: version,
		})
	}
	return infos, nil
}

// writeDevices prints one block per GPU, then the driver line. Unknown
// fields (zero) are left out rather than printed as zeros.
func writeDevices(w io.Writer, infos []nvml.DeviceInfo) {
	const mib = 1 << 20
	for _, d := range infos {
		fmt.Fprintf(w, "GPU %d: %s\n", d.Index, d.Name)
		fmt.Fprintf(w, "  compute capability: %d.%d (sm_%d%d)\n", d.CCMajor, d.CCMinor, d.CCMajor, d.CCMinor)
		if d.UUID != "" {
			fmt.Fprintf(w, "  uuid:               %s\n", d.UUID)
		}
		fmt.Fprintf(w, "  memory:             %d MiB total, %d MiB used, %d MiB free\n",
			d.MemoryTotal/mib, d.MemoryUsed/mib, d.MemoryFree/mib)
		if d.SMClockMax != 0 || d.MemClockMax != 0 {
			fmt.Fprintf(w, "  clocks:             SM %d MHz (max %d), memory %d MHz (max %d)\n",
				d.SMClock, d.SMClockMax, d.MemClock, d.MemClockMax)
		}
	}
	if len(infos) == 0 {
		return
	}
	d := infos[0]
	driver := "driver " + d.Driver
	if d.Driver == "" {
		driver = "driver version unknown (no NVML)"
	}
	fmt.Fprintf(w, "%s, CUDA %d.%d\n", driver, d.CUDAVersion/1000, d.CUDAVersion%1000/10)
}
