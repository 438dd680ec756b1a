package dynlib

import (
	"strings"
	"testing"
)

// TestOpenBinds checks that Open binds C functions that then run, here
// libc's strlen.
func TestOpenBinds(t *testing.T) {
	var strlen func(s *byte) uint64
	h, err := Open("libc.so.6", []Symbol{{"strlen", &strlen}}, "libc")
	if err != nil {
		t.Fatal(err)
	}
	if h == 0 {
		t.Error("Open returned a zero handle")
	}
	s := []byte("strata\x00")
	if n := strlen(&s[0]); n != 6 {
		t.Errorf("strlen = %d, want 6", n)
	}
}

// TestOpenRefuses checks that a missing library and a missing entry point
// are errors naming them, not panics.
func TestOpenRefuses(t *testing.T) {
	if _, err := Open("libstrata-no-such-lib.so.1", nil, "x"); err == nil ||
		!strings.HasPrefix(err.Error(), "libstrata-no-such-lib.so.1: ") {
		t.Errorf("missing library: %v", err)
	}
	var strlen, missing func(s *byte) uint64
	_, err := Open("libc.so.6", []Symbol{{"strlen", &strlen}, {"strataNoSuchSymbol", &missing}}, "libfoo 2")
	if err == nil || err.Error() != "libc.so.6 has no strataNoSuchSymbol (not libfoo 2)" {
		t.Errorf("missing symbol: %v", err)
	}
}

// TestGoString checks the copy of C strings, nil included.
func TestGoString(t *testing.T) {
	if got := GoString(nil); got != "" {
		t.Errorf("GoString(nil) = %q", got)
	}
	b := []byte("ab\x00cd\x00")
	if got := GoString(&b[0]); got != "ab" {
		t.Errorf("GoString = %q, want \"ab\"", got)
	}
	b[2] = '-'
	got := GoString(&b[0])
	b[0] = 'x'
	if got != "ab-cd" {
		t.Errorf("GoString = %q, want \"ab-cd\" (a copy, read up to the first NUL)", got)
	}
	if got := GoString(&b[5]); got != "" {
		t.Errorf("GoString of an empty C string = %q", got)
	}
}
