// Package dynlib finds and binds a shared library that runtime packages
// load at run time (NCCL, cuBLASLt, cuDNN): an environment variable's path
// first, then the dynamic loader's names, then the places toolkits and
// Python wheels install to. Open binds a library's entry points to Go
// function variables, and GoString copies the C strings they return.
package dynlib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Candidates returns the paths to try, in order: $env when set, sonames,
// then what each of globs matches.
func Candidates(env string, sonames, globs []string) []string {
	var out []string
	if p := os.Getenv(env); p != "" {
		out = append(out, p)
	}
	out = append(out, sonames...)
	for _, g := range globs {
		m, _ := filepath.Glob(g) // only ErrBadPattern, and callers' patterns are fixed
		out = append(out, m...)
	}
	return out
}

// Search returns what open makes of the first of paths it accepts. When it
// accepts none, the error wraps notFound and every path's failure, and
// names env so that the user knows how to point at the library.
func Search[L any](paths []string, open func(path string) (L, error), notFound error, env string) (L, error) {
	var why []error
	for _, p := range paths {
		l, err := open(p)
		if err == nil {
			return l, nil
		}
		why = append(why, err)
	}
	var zero L
	return zero, fmt.Errorf("%w: tried $%s, %d paths: %w", notFound, env, len(paths), errors.Join(why...))
}
