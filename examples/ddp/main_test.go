package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSimulated trains on two simulated ranks and checks (inside run)
// that the weights match one rank's on the whole batch.
func TestSimulated(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-sim", "2", "-steps", "2", "-batch", "3"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 simulated ranks × 3 rows") || !strings.Contains(out.String(), "step 1:") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-steps", "0"}, "must be positive"},
		{[]string{"-sim", "-1"}, "positive number of ranks"},
	} {
		err := run(c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	// One rank of a job without a GPU says so (and suggests -sim); a bad
	// environment is reported first.
	t.Setenv("STRATA_WORLD_SIZE", "0")
	if err := run(nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "world size") {
		t.Errorf("world size 0: %v", err)
	}
}
