package frontend_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// TestErrorLineIsExact checks that an op's error names the exact line of
// the user's call, the first time and when the call site's location comes
// from the frontend's cache, and a different line for another call site.
func TestErrorLineIsExact(t *testing.T) {
	x := frontend.Zeros(frontend.Float32, 2, 3)
	y := frontend.Zeros(frontend.Float32, 4, 5)
	for round := range 3 {
		_, _, line, _ := runtime.Caller(0)
		z := x.MatMul(y) // the line after runtime.Caller's
		w := y.MatMul(x) // the line after that
		for i, e := range []error{z.Err(), w.Err()} {
			want := fmt.Sprintf("callerloc_test.go:%d:", line+1+i)
			if e == nil || !strings.Contains(e.Error(), want) {
				t.Errorf("round %d, op %d: error %v, want it at %s", round, i, e, want)
			}
		}
	}
}
