// Package atomicfile writes output files all or none (DESIGN §12): each
// file goes to a temporary file beside its destination, and only when every
// one is written and synced are they renamed into place, so a failure never
// leaves a destination truncated or half written.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// File is one file about to be written: its path and what goes in.
type File struct {
	Path  string
	Write func(io.Writer) error
}

// Write writes one file atomically; see WriteAll.
func Write(path string, write func(io.Writer) error) error {
	return WriteAll([]File{{path, write}})
}

// WriteAll writes every file, all or none: each goes to a temporary file in
// its destination's directory, and only when every one is written and
// synced are they renamed into place. A failure (a full disk, a missing
// directory, an encoding error) before that removes the temporary files and
// leaves every destination as it was; an existing file is never truncated
// first. Only a rename failing midway (the destination became a directory)
// can leave the earlier ones renamed. A destination that exists and is
// neither a regular file nor a directory (/dev/null, /dev/stdout, a FIFO)
// is written in place, after every temporary file is complete.
func WriteAll(files []File) error {
	tmps := make([]string, 0, len(files))
	defer func() {
		for _, t := range tmps {
			if t != "" {
				os.Remove(t)
			}
		}
	}()
	var direct []File
	for _, f := range files {
		if st, err := os.Stat(f.Path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
			direct = append(direct, f)
			tmps = append(tmps, "")
			continue
		}
		tmp, err := writeTemp(f)
		if err != nil {
			return err
		}
		tmps = append(tmps, tmp)
	}
	for _, f := range direct {
		if err := writeDirect(f); err != nil {
			return err
		}
	}
	for i, f := range files {
		if tmps[i] == "" {
			continue
		}
		if err := os.Rename(tmps[i], f.Path); err != nil {
			return fmt.Errorf("cannot write output file %s: %w", f.Path, pathless(err))
		}
		tmps[i] = ""
	}
	return nil
}

// writeTemp writes f to a new temporary file in its destination's
// directory (so that the rename stays on one file system) and returns its
// name.
func writeTemp(f File) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("cannot write output file %s: %w", f.Path, pathless(err))
	}
	w := bufio.NewWriterSize(tmp, 1<<16)
	err = f.Write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("cannot write output file %s: %w", f.Path, pathless(err))
	}
	return tmp.Name(), nil
}

// writeDirect writes f to its destination, a device or a FIFO, in place.
func writeDirect(f File) error {
	out, err := os.OpenFile(f.Path, os.O_WRONLY, 0)
	if err == nil {
		w := bufio.NewWriterSize(out, 1<<16)
		err = f.Write(w)
		if err == nil {
			err = w.Flush()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cannot write output file %s: %w", f.Path, pathless(err))
	}
	return nil
}

// pathless drops an *fs.PathError's operation and path, which name a
// temporary file; the message names the destination instead.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
