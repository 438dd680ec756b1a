package frontend

import (
	"errors"
	"runtime"
	"strings"
	"sync"

	"github.com/strata-ir/strata/ir"
)

// libraries are the function-name prefixes of the packages LibraryPackage
// named, under librariesMu.
var (
	librariesMu sync.RWMutex
	libraries   []string
)

// LibraryPackage names a package (its import path) that records ops for
// its callers, as a layer library does: the error of an op it records
// (a shape or dtype mismatch) is then located at the first caller
// outside it and this package, the user's line that holds the mistake,
// with the library's line as a note. The ops themselves keep the
// library's line as their location.
func LibraryPackage(path string) {
	librariesMu.Lock()
	defer librariesMu.Unlock()
	libraries = append(libraries, path+".")
}

// libraryFrame reports whether fn is a function of a LibraryPackage.
func libraryFrame(fn string) bool {
	librariesMu.RLock()
	defer librariesMu.RUnlock()
	for _, p := range libraries {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// atUserLine returns err, an op's error located at loc, located instead
// at the first caller outside this package and the LibraryPackages when
// loc is a library's line (the first caller outside this package), with
// loc as a note. Other errors are returned as they are.
func atUserLine(err error) error {
	var d *ir.Diagnostic
	if !errors.As(err, &d) || d != err {
		return err
	}
	var pcs [32]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	first := true
	for {
		f, more := frames.Next()
		switch {
		case internalFrame(f.Function):
		case first && (d.Loc != (ir.FileLineColLoc{File: f.File, Line: f.Line}) || !libraryFrame(f.Function)):
			return err // not an op a library recorded at its own line
		case libraryFrame(f.Function):
			first = false
		default:
			user := &ir.Diagnostic{Loc: ir.FileLineColLoc{File: f.File, Line: f.Line}, Severity: d.Severity, Message: d.Message}
			user.Note(d.Loc, "recorded by the library here")
			user.Notes = append(user.Notes, d.Notes...)
			return user
		}
		if !more {
			return err
		}
	}
}
