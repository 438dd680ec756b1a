//go:build !cgo

package nvml

// Devices reports ErrUnavailable: go-nvml needs cgo.
func Devices() ([]DeviceInfo, error) { return nil, ErrUnavailable }
