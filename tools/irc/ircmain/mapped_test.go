package ircmain

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// mappedModule returns a generic module of n unregistered ops, about 70
// bytes each, with an op missing its type as op number badAt when badAt >=
// 0. The ops' properties are all the same text, which the parser caches
// and compares with the text of the first op, in the first page.
func mappedModule(n, badAt int) string {
	var b strings.Builder
	b.WriteString("\"builtin.module\"() ({\n")
	for i := range n {
		if i == badAt {
			b.WriteString("  \"t.op\"() {index = 0 : i64}\n")
			continue
		}
		fmt.Fprintf(&b, "  \"t.op\"() <{kind = \"same\"}> {index = %d : i64} : () -> ()\n", i)
	}
	b.WriteString("}) : () -> ()\n")
	return b.String()
}

// TestMappedInput: a file of mapFrom bytes or more is mapped and its pages
// released behind the parser (ProgressStep and releaseLag are passed here),
// with the output and the diagnostics of a file read into the heap.
func TestMappedInput(t *testing.T) {
	saved := mapFrom
	mapFrom = 1 << 20
	defer func() { mapFrom = saved }()

	src := mappedModule(150_000, -1) // about 9 MiB
	path := writeFile(t, "big.mlir", src)
	if text, m, err := openInputFile(path, true); err != nil || m == nil || text != src {
		t.Fatalf("openInputFile: mapped %v, same text %v, error %v", m != nil, text == src, err)
	}
	out := filepath.Join(t.TempDir(), "out.mlir")
	mapped := irc(t, "", "--allow-unregistered-dialect", path, "-o", out)
	read := irc(t, src, "--allow-unregistered-dialect")
	got, err := os.ReadFile(out)
	if mapped.status != ExitOK || err != nil || string(got) != read.stdout || read.status != ExitOK {
		t.Fatalf("mapped: status %d, %d bytes (%v); read: status %d, %d bytes\n%s", mapped.status, len(got), err, read.status, len(read.stdout), mapped.stderr)
	}

	// An error far behind the released pages, in one chunk and in the
	// second of two.
	bad := mappedModule(150_000, 140_000)
	line := 140_000 + 2
	for _, split := range []bool{false, true} {
		text := bad
		args := []string{"--allow-unregistered-dialect"}
		if split {
			text = mappedModule(10, -1) + "// -----\n" + bad
			line += 10 + 2 + 1
			args = append(args, "--split-input-file")
		}
		path := writeFile(t, "bad.mlir", text)
		r := irc(t, "", append(args, path)...)
		// The error is placed after the last token of the bad line.
		want := fmt.Sprintf("%s:%d:29: error: expected ':' followed by operation type, found '\"t.op\"'\n  \"t.op\"() {index = 0 : i64}\n", path, line)
		if r.status != ExitDiagnostics || !strings.HasPrefix(r.stderr, want) {
			t.Errorf("split %v: status %d, stderr:\n%s\nwant it to start with\n%s", split, r.status, r.stderr, want)
		}
	}
}

// sink receives what tests read only for the reading.
var sink byte

// TestMappedFileShrinks: reading a mapped page that the file no longer has
// is a fault, recovered (under SetPanicOnFault, as opt sets it) and
// recognized as one on the mapping.
func TestMappedFileShrinks(t *testing.T) {
	path := writeFile(t, "shrinks.mlir", strings.Repeat("x", 3*os.Getpagesize()))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := mapText(f, 3*int64(os.Getpagesize()))
	if err != nil {
		t.Skipf("no mapping here: %v", err)
	}
	text := m.text()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var recovered any
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { recovered = recover() }()
		sink = text[len(text)-1]
		t.Error("reading a page past the end of the file did not fault")
	}()
	if !m.faulted(recovered) {
		t.Errorf("recovered %v, not a fault on the mapping", recovered)
	}
	if m.faulted(fmt.Errorf("an error")) {
		t.Error("an ordinary panic value counts as a fault")
	}
}
