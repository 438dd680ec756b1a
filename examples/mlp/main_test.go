package main

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

func TestMLP(t *testing.T) {
	for _, backend := range []string{frontend.InterpBackend, frontend.EagerBackend, frontend.CPUBackend} {
		var out strings.Builder
		if err := run(&out, backend, frontend.ModeDefault); err != nil {
			t.Fatalf("%s: %v\n%s", backend, err, out.String())
		}
		if want := "backend " + backend + ", mode default: output [4 10]"; !strings.Contains(out.String(), want) {
			t.Errorf("%s: output\n%s", backend, out.String())
		}
	}
}
