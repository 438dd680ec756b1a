//go:build linux

package interp

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// physicalMemoryOS returns the machine's physical memory in bytes (0 if
// unknown).
func physicalMemoryOS() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// availableMemoryOS returns how many bytes the process can allocate now
// (0 if unknown): the kernel's MemAvailable estimate, bounded by the
// cgroup's memory.max less its memory.current when a limit is set.
func availableMemoryOS() uint64 {
	avail := uint64(0)
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
				kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err == nil {
					avail = kb << 10
				}
				break
			}
		}
		f.Close()
	}
	limit, err1 := readUint("/sys/fs/cgroup/memory.max")
	used, err2 := readUint("/sys/fs/cgroup/memory.current")
	if err1 == nil && err2 == nil && limit > used && (avail == 0 || limit-used < avail) {
		avail = limit - used
	}
	return avail
}

// readUint reads a file holding one unsigned integer ("max" is an error).
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
}
