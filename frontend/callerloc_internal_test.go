package frontend

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
)

// deepCallerLoc calls callerLoc n frames of this package below its caller.
//
//go:noinline
func deepCallerLoc(n int) ir.Location {
	if n == 0 {
		return callerLoc()
	}
	return deepCallerLoc(n - 1)
}

// TestCallerLocDepths checks that callerLoc finds the first frame outside
// the package (here the testing package's, which runs the test) however
// many of the package's frames lie above it, up to callerFrames, past the
// depth it unwinds first; and no location beyond.
func TestCallerLocDepths(t *testing.T) {
	for _, n := range []int{0, callerFramesFirst - 3, callerFramesFirst, callerFramesFirst + 5, callerFrames - 3, callerFrames + 2} {
		loc := deepCallerLoc(n)
		// The frames below callerLoc: n+1 of deepCallerLoc, then the test.
		found := n+2 < callerFrames
		fl, ok := loc.(ir.FileLineColLoc)
		switch {
		case found && (!ok || !strings.HasSuffix(fl.File, "testing.go")):
			t.Errorf("%d frames deep: location %v, want testing.go's", n, loc)
		case !found && ok:
			t.Errorf("%d frames deep: location %v, want none (deeper than %d frames)", n, loc, callerFrames)
		}
	}
}
