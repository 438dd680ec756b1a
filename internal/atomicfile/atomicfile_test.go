package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// TestAllOrNone: a failure writing the second file leaves the first one's
// old content, and no temporary file behind.
func TestAllOrNone(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("old a"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteAll([]File{{a, writeString("new a")}, {b, func(io.Writer) error { return boom }}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), b) {
		t.Fatalf("err = %v, want boom naming %s", err, b)
	}
	if got, _ := os.ReadFile(a); string(got) != "old a" {
		t.Errorf("a = %q after a failed batch, want the old content", got)
	}
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Errorf("b exists after a failed batch: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only a", len(ents))
	}
	if err := WriteAll([]File{{a, writeString("new a")}, {b, writeString("new b")}}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{a: "new a", b: "new b"} {
		if got, _ := os.ReadFile(p); string(got) != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
}

// TestMissingDirectory names the destination, not the temporary file.
func TestMissingDirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "such", "file")
	err := Write(p, writeString("x"))
	if err == nil || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), ".tmp") {
		t.Fatalf("err = %v, want one naming %s and no temporary file", err, p)
	}
}

// TestDevice writes /dev/null in place instead of replacing it.
func TestDevice(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skip(err)
	}
	if err := Write(os.DevNull, writeString("x")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode().IsRegular() {
		t.Fatalf("%s replaced: %v %v", os.DevNull, st.Mode(), err)
	}
}
