//go:build !linux

package interp

// physicalMemoryOS returns 0 (unknown) where the machine's memory is not
// queried: only the element-count bound applies there.
func physicalMemoryOS() uint64 { return 0 }

// availableMemoryOS returns 0 (unknown).
func availableMemoryOS() uint64 { return 0 }
