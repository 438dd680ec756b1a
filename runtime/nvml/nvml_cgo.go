//go:build cgo

package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Devices initialises NVML, describes every GPU, and shuts NVML down.
// A field NVML cannot report for a device (clocks on some virtual GPUs)
// is left zero; failing to enumerate the devices at all is an error.
func Devices() ([]DeviceInfo, error) {
	// go-nvml answers ERROR_LIBRARY_NOT_FOUND from Init when dlopen fails.
	if ret := gonvml.Init(); ret != gonvml.SUCCESS {
		if ret == gonvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, ErrNoDriver
		}
		return nil, nvmlError("nvmlInit", ret)
	}
	defer gonvml.Shutdown()

	driver, ret := gonvml.SystemGetDriverVersion()
	if ret != gonvml.SUCCESS {
		return nil, nvmlError("nvmlSystemGetDriverVersion", ret)
	}
	cudaVersion, ret := gonvml.SystemGetCudaDriverVersion()
	if ret != gonvml.SUCCESS {
		return nil, nvmlError("nvmlSystemGetCudaDriverVersion", ret)
	}
	count, ret := gonvml.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return nil, nvmlError("nvmlDeviceGetCount", ret)
	}
	infos := make([]DeviceInfo, 0, count)
	for i := range count {
		d, ret := gonvml.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("nvmlDeviceGetHandleByIndex(%d)", i), ret)
		}
		info := DeviceInfo{Index: i, Driver: driver, CUDAVersion: cudaVersion}
		if info.Name, ret = d.GetName(); ret != gonvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("nvmlDeviceGetName(%d)", i), ret)
		}
		// The rest is best effort: a field NVML does not support stays zero.
		info.UUID, _ = d.GetUUID()
		info.CCMajor, info.CCMinor, _ = d.GetCudaComputeCapability()
		if mem, ret := d.GetMemoryInfo(); ret == gonvml.SUCCESS {
			info.MemoryTotal, info.MemoryUsed, info.MemoryFree = mem.Total, mem.Used, mem.Free
		}
		info.SMClock, _ = d.GetClockInfo(gonvml.CLOCK_SM)
		info.SMClockMax, _ = d.GetMaxClockInfo(gonvml.CLOCK_SM)
		info.MemClock, _ = d.GetClockInfo(gonvml.CLOCK_MEM)
		info.MemClockMax, _ = d.GetMaxClockInfo(gonvml.CLOCK_MEM)
		infos = append(infos, info)
	}
	return infos, nil
}

// nvmlError describes a failed NVML call with NVML's own message.
func nvmlError(op string, ret gonvml.Return) error {
	return fmt.Errorf("nvml: %s: %s (%d)", op, gonvml.ErrorString(ret), int32(ret))
}
