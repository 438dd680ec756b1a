package dynlib

import (
	"os"

	"golang.org/x/sys/unix"
)

// prefetchFile asks for the whole of the file at path to be read into the
// page cache (posix_fadvise WILLNEED, which queues the reads and returns)
// and returns its size.
func prefetchFile(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), unix.Fadvise(int(f.Fd()), 0, st.Size(), unix.FADV_WILLNEED)
}
