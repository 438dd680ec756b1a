// Package testsize says how much of a large test matrix, or of a slow
// property test, a test run covers. `make test` (and plain `go test`) runs
// the default size: every case and every variant of a matrix at least
// once, not every pair, and the slowest rapid tests with fewer checks;
// `make test-long` sets STRATA_TEST_LONG=1 and runs everything in full, as
// CI does where time allows.
package testsize

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// EnvVar is the environment variable that asks for the full matrices.
const EnvVar = "STRATA_TEST_LONG"

// Long reports whether the full matrices run (STRATA_TEST_LONG set and
// not "0").
func Long() bool {
	v := os.Getenv(EnvVar)
	return v != "" && v != "0"
}

// Cover returns which pairs (i, j) of an n×m matrix a default run tests:
// all of them under Long, else a covering set in which every row i and
// every column j appears at least once, rows cycling through the columns.
// valid reports whether a pair can be tested at all (nil: every pair);
// a row or column with no valid pair is left out.
func Cover(n, m int, valid func(i, j int) bool) func(i, j int) bool {
	if valid == nil {
		valid = func(int, int) bool { return true }
	}
	if Long() {
		return valid
	}
	chosen := map[[2]int]bool{}
	col := map[int]bool{}
	next := 0
	// Each row takes the next column, round robin, that it can use.
	for i := range n {
		for k := range m {
			j := (next + k) % m
			if valid(i, j) {
				chosen[[2]int{i, j}], col[j] = true, true
				next = j + 1
				break
			}
		}
	}
	// Each column not yet taken takes the first row that can use it.
	for j := range m {
		if col[j] {
			continue
		}
		for i := range n {
			if valid(i, j) {
				chosen[[2]int{i, j}] = true
				break
			}
		}
	}
	return func(i, j int) bool { return chosen[[2]int{i, j}] }
}

// RapidChecks lowers rapid's number of checks (-rapid.checks, default
// 100) to n for the rest of t, in a default run, unless the command line
// or RAPID_CHECKS set it; Long runs keep it. It changes a process-wide
// flag: call it only from a test that is not parallel (parallel tests
// start after it ends, when the flag is back).
func RapidChecks(t testing.TB, n int) {
	if Long() || os.Getenv("RAPID_CHECKS") != "" {
		return
	}
	f := flag.Lookup("rapid.checks")
	if f == nil {
		return
	}
	given := false
	flag.Visit(func(v *flag.Flag) { given = given || v.Name == f.Name })
	if given {
		return
	}
	old := f.Value.String()
	if err := f.Value.Set(strconv.Itoa(n)); err != nil {
		t.Fatalf("testsize: -rapid.checks=%d: %v", n, err)
	}
	t.Cleanup(func() { f.Value.Set(old) })
}
