package main

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

func TestGraphBreakExample(t *testing.T) {
	var out strings.Builder
	if err := run(&out, frontend.InterpBackend); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"graphs: 2", "graph breaks: 1", "Item", "main.go:",
		"normalize([3 4]) = [0.5370 0.6640]", "normalize([0 0]) = [0.0000 0.0000]",
		"with Fullgraph:", "graph break in a function compiled with Fullgraph",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
