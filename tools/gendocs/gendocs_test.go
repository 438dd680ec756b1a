package main

import (
	"sort"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/passes"
)

// TestDocsUpToDate fails when a registry changed without `make docs`.
func TestDocsUpToDate(t *testing.T) {
	stale, err := generate("../../docs", false)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("generated docs are stale; run `make docs`:\n%s", strings.Join(stale, "\n"))
	}
}

// TestRegistriesAreDocumented keeps the generated references useful: every
// op and pass says what it does.
func TestRegistriesAreDocumented(t *testing.T) {
	for _, d := range dialects.All() {
		if d.Summary == "" {
			t.Errorf("dialect %s has no summary", d.Name)
		}
		for _, op := range d.Ops {
			if op.Summary == "" {
				t.Errorf("op %s has no summary", op.Name)
			}
		}
	}
	for _, p := range passes.All() {
		if p.Summary == "" {
			t.Errorf("pass %s has no summary", p.Name)
		}
	}
}
