//go:build linux

package ircmain

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mappedText is an input file mapped read-only into memory instead of
// read into the Go heap. Its pages are the page cache's: the kernel reads
// them in when the parser first touches them, release drops the ones the
// parser has left behind, and a later read of those (a diagnostic looking
// back, a cached dictionary's key) reads them in again. The mapping lives
// as long as the process: the text's strings point into it, and nothing
// guarantees every one of them is gone when a command ends.
type mappedText struct {
	data []byte
}

// mapText maps the size bytes of the regular file f (size > 0).
func mapText(f *os.File, size int64) (*mappedText, error) {
	if int64(int(size)) != size {
		return nil, fmt.Errorf("is too large to map (%d bytes)", size)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mapping it: %w", err)
	}
	return &mappedText{data: data}, nil
}

// text returns the file's content as a string, without copying it.
func (m *mappedText) text() string { return unsafe.String(&m.data[0], len(m.data)) }

// release drops from memory the whole pages before offset. The text stays
// readable: the kernel reads dropped pages in again from the file.
func (m *mappedText) release(offset int) {
	n := min(offset, len(m.data)) &^ (os.Getpagesize() - 1)
	if n > 0 {
		// An error leaves the pages in memory, which is harmless.
		_ = unix.Madvise(m.data[:n], unix.MADV_DONTNEED)
	}
}

// contains reports whether addr lies in the mapping.
func (m *mappedText) contains(addr uintptr) bool {
	start := uintptr(unsafe.Pointer(&m.data[0]))
	return addr >= start && addr-start < uintptr(len(m.data))
}
