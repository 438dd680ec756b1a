//go:build !linux

package dynlib

import "os"

// prefetchFile only checks that path is there: the page cache is asked
// to read ahead on Linux only.
func prefetchFile(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
