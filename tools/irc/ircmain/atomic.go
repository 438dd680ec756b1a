package ircmain

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// outputFile is one file irc is about to write: its path and what goes in.
type outputFile struct {
	path  string
	write func(io.Writer) error
}

// writeFiles writes every file of a command's output, all or none
// (DESIGN §12): each goes to a temporary file beside its destination, and
// only when every one is written and synced are they renamed into place.
// A failure (a full disk, a missing directory, an encoding error) before
// that removes the temporary files and leaves every destination as it
// was; an existing file is never truncated first. Only a rename failing
// midway (the destination became a directory) can leave the earlier ones
// renamed.
func writeFiles(files []outputFile) error {
	tmps := make([]string, 0, len(files))
	defer func() {
		for _, t := range tmps {
			if t != "" {
				os.Remove(t)
			}
		}
	}()
	var direct []outputFile
	for _, f := range files {
		if st, err := os.Stat(f.path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
			// /dev/null, /dev/stdout, a FIFO: there is no file to replace.
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
		if err := os.Rename(tmps[i], f.path); err != nil {
			return fmt.Errorf("cannot write output file %s: %w", f.path, pathless(err))
		}
		tmps[i] = ""
	}
	return nil
}

// writeTemp writes f to a new temporary file in its destination's
// directory (so that the rename stays on one file system) and returns its
// name.
func writeTemp(f outputFile) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(f.path), "."+filepath.Base(f.path)+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("cannot write output file %s: %w", f.path, pathless(err))
	}
	w := bufio.NewWriterSize(tmp, 1<<16)
	err = f.write(w)
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
		return "", fmt.Errorf("cannot write output file %s: %w", f.path, pathless(err))
	}
	return tmp.Name(), nil
}

// writeDirect writes f to its destination, a device or a FIFO, in place.
func writeDirect(f outputFile) error {
	out, err := os.OpenFile(f.path, os.O_WRONLY, 0)
	if err == nil {
		w := bufio.NewWriterSize(out, 1<<16)
		err = f.write(w)
		if err == nil {
			err = w.Flush()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cannot write output file %s: %w", f.path, pathless(err))
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
