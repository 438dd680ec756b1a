package dynlib

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCandidatesOrder(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"libx.so.2", "liby.so.1"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("STRATA_DYNLIB_TEST", "/env/libx.so")
	got := Candidates("STRATA_DYNLIB_TEST", []string{"libx.so.2"}, []string{filepath.Join(dir, "libx.so*")})
	want := []string{"/env/libx.so", "libx.so.2", filepath.Join(dir, "libx.so.2")}
	if !slices.Equal(got, want) {
		t.Errorf("Candidates = %q, want %q", got, want)
	}
	t.Setenv("STRATA_DYNLIB_TEST", "")
	if got := Candidates("STRATA_DYNLIB_TEST", []string{"a", "b"}, nil); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("without the variable: %q", got)
	}
}

func TestSearch(t *testing.T) {
	errNotFound := errors.New("lib not found")
	open := func(p string) (int, error) {
		if p == "good" {
			return 7, nil
		}
		return 0, errors.New("cannot open " + p)
	}
	if l, err := Search([]string{"bad", "good", "never"}, open, errNotFound, "LIB"); err != nil || l != 7 {
		t.Errorf("Search = %d, %v, want the first path open accepts", l, err)
	}
	_, err := Search([]string{"bad1", "bad2"}, open, errNotFound, "LIB")
	if !errors.Is(err, errNotFound) {
		t.Fatalf("Search of no usable path: %v, want it to wrap notFound", err)
	}
	for _, want := range []string{"$LIB", "2 paths", "cannot open bad1", "cannot open bad2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
