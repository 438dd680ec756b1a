package testsize

import (
	"flag"
	"testing"
)

func TestCover(t *testing.T) {
	t.Setenv(EnvVar, "")
	// Column 2 is valid only in row 4; row 3 has no valid column.
	valid := func(i, j int) bool { return i != 3 && (j != 2 || i == 4) }
	in := Cover(6, 4, valid)
	rows, cols, pairs := map[int]bool{}, map[int]bool{}, 0
	for i := range 6 {
		for j := range 4 {
			if in(i, j) {
				if !valid(i, j) {
					t.Errorf("(%d, %d) is not valid", i, j)
				}
				rows[i], cols[j] = true, true
				pairs++
			}
		}
	}
	if len(rows) != 5 || len(cols) != 4 {
		t.Errorf("rows %v, columns %v: want every row but 3 and every column", rows, cols)
	}
	if pairs > 6 {
		t.Errorf("%d pairs for 5 rows and 4 columns", pairs)
	}
	t.Setenv(EnvVar, "1")
	all := Cover(6, 4, valid)
	for i := range 6 {
		for j := range 4 {
			if all(i, j) != valid(i, j) {
				t.Errorf("Long: (%d, %d) chosen %v", i, j, all(i, j))
			}
		}
	}
}

func TestRapidChecks(t *testing.T) {
	var checks int
	if flag.Lookup("rapid.checks") == nil {
		flag.IntVar(&checks, "rapid.checks", 100, "as rapid's")
	}
	f := flag.Lookup("rapid.checks")
	t.Setenv(EnvVar, "")
	t.Setenv("RAPID_CHECKS", "")
	t.Run("default", func(t *testing.T) {
		RapidChecks(t, 7)
		if got := f.Value.String(); got != "7" {
			t.Errorf("-rapid.checks %s, want 7", got)
		}
	})
	if got := f.Value.String(); got != "100" {
		t.Errorf("-rapid.checks %s after the test, want 100 back", got)
	}
	t.Setenv(EnvVar, "1")
	t.Run("long", func(t *testing.T) {
		RapidChecks(t, 7)
		if got := f.Value.String(); got != "100" {
			t.Errorf("-rapid.checks %s under %s, want 100", got, EnvVar)
		}
	})
}
