package ircmain

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/strata-ir/strata/runtime/interp"
)

// maxInputBytes is the largest input file irc reads, and maxStreamBytes
// the most it reads from a pipe, a device or standard input, whose size
// is not known before reading (variables for tests). Reading stops there,
// so /dev/zero or an endless pipe gets an error within seconds, not a
// process that grows until the system kills it.
var maxInputBytes, maxStreamBytes int64 = 1 << 30, 256 << 20

// parseBytesPerInputByte estimates the memory parsing takes per byte of
// text (the IR, its types and attributes, the printer's buffer): an input
// that would need more than the memory available is refused before it is
// parsed, since Go ends the process when an allocation fails.
const parseBytesPerInputByte = 16

// readBounded reads r, of size bytes when known (else -1), up to
// maxInputBytes, and checks that parsing what it read fits in memory. The
// text is read straight into its string: a file's is allocated once, at
// its size (no byte slice to convert, no buffer doubling past the end).
func readBounded(r io.Reader, size int64) (string, error) {
	if size > maxInputBytes {
		return "", fmt.Errorf("is %s, more than the %s irc reads", sizeString(size), sizeString(maxInputBytes))
	}
	limit := maxInputBytes
	var b strings.Builder
	if size >= 0 {
		b.Grow(int(size) + 1)
	} else {
		limit = min(limit, maxStreamBytes)
	}
	n, err := io.Copy(&b, io.LimitReader(r, limit+1))
	if err != nil {
		return "", err
	}
	if n > limit {
		return "", fmt.Errorf("is larger than the %s irc reads from a stream", sizeString(limit))
	}
	if err := checkParseMemory(n); err != nil {
		return "", err
	}
	return b.String(), nil
}

// readInputFile reads the named file (see readBounded).
func readInputFile(path string) (string, error) {
	text, _, err := openInputFile(path, false)
	return text, err
}

// mapFrom is the size from which openInputFile maps a file rather than
// reading it (a variable for tests): the same size from which irc sets a
// memory limit, where the text's share of the memory starts to matter.
var mapFrom int64 = memoryLimitFrom

// openInputFile returns the named file's text, read as readBounded does
// or, with mapLarge, for a regular file of mapFrom bytes or more where the
// system allows, mapped (m non-nil; see mappedText). Bounds are checked
// either way.
func openInputFile(path string, mapLarge bool) (text string, m *mappedText, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, pathless(err)
	}
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	} else if err == nil && st.IsDir() {
		return "", nil, fmt.Errorf("is a directory")
	}
	if mapLarge && size >= mapFrom && size <= maxInputBytes {
		if err := checkParseMemory(size); err != nil {
			return "", nil, err
		}
		if m, err := mapText(f, size); err == nil {
			return m.text(), m, nil
		}
		// Mapping failed (not supported, say): read the file instead.
	}
	text, err = readBounded(f, size)
	return text, nil, pathless(err)
}

// faulted reports whether r, a recovered panic, is a fault on m's pages
// (under debug.SetPanicOnFault): a read past the end of a file that shrank
// while mapped.
func (m *mappedText) faulted(r any) bool {
	fault, ok := r.(interface{ Addr() uintptr })
	return ok && m.contains(fault.Addr())
}

// checkParseMemory checks that parsing n bytes of text fits in memory.
func checkParseMemory(n int64) error {
	if err := interp.CheckMemory(uint64(n) * parseBytesPerInputByte); err != nil {
		return fmt.Errorf("is %s: parsing it %w", sizeString(n), err)
	}
	return nil
}

// sizeString formats a byte count: "512 bytes", "1.0 GiB".
func sizeString(n int64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}

// pathless drops an *fs.PathError's operation and path: the message that
// reports it names the input already.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
