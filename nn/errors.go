package nn

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
)

// errorf returns a failed tensor whose error is located at the first
// caller outside this package and the frontend: the user's line that
// called the layer.
func errorf(format string, args ...any) *frontend.Tensor {
	return frontend.Failed(ir.Errorf(userLoc(), "nn: %s", fmt.Sprintf(format, args...)))
}

// located returns an error located at the user's line, as errorf's.
func located(format string, args ...any) error {
	return ir.Errorf(userLoc(), "nn: %s", fmt.Sprintf(format, args...))
}

// The errors of the ops a layer records are the user's (frontend
// locates them at the caller's line).
func init() { frontend.LibraryPackage("github.com/strata-ir/strata/nn") }

// firstErr returns the first of ts that failed, or nil.
func firstErr(ts ...*frontend.Tensor) *frontend.Tensor {
	for _, t := range ts {
		if t != nil && t.Err() != nil {
			return t
		}
	}
	return nil
}

// internal lists the package prefixes a located error looks past.
var internal = []string{
	"github.com/strata-ir/strata/nn.",
	"github.com/strata-ir/strata/frontend.",
	"reflect.", "runtime.",
}

func userLoc() ir.Location {
	var pcs [32]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		inside := false
		for _, p := range internal {
			if strings.HasPrefix(f.Function, p) {
				inside = true
				break
			}
		}
		if !inside && f.Function != "" {
			return ir.FileLineColLoc{File: f.File, Line: f.Line}
		}
		if !more {
			return ir.UnknownLoc{}
		}
	}
}
