package ircmain

import (
	"strings"
	"testing"
)

// TestLongLineSnippet checks that a diagnostic on a huge one-line input
// shows a window around the column, with the caret under it.
func TestLongLineSnippet(t *testing.T) {
	src := strings.Repeat(`"x.y"() ({`, 2000)
	r := irc(t, src, "--allow-unregistered-dialect", "-")
	if r.status != ExitDiagnostics {
		t.Fatalf("status %d, want %d; stderr:\n%s", r.status, ExitDiagnostics, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want message, snippet and caret; got:\n%s", r.stderr)
	}
	snippet, caret := lines[1], lines[2]
	if len(snippet) > 2*snippetContext+10 || !strings.HasPrefix(snippet, "...") || !strings.HasSuffix(snippet, "...") {
		t.Errorf("snippet is not a window of the line: %q", snippet)
	}
	col := strings.Index(caret, "^")
	if col < 0 || snippet[col:col+1] != `(` && snippet[col:col+1] != `"` {
		t.Errorf("caret at %d does not point into the window:\n%s\n%s", col, snippet, caret)
	}
}

// TestSnippetPastLineEnd checks diagnostics whose location points past the
// end of its line (a loc(...) written by hand): the caret goes after the
// line's end, on long lines (once a panic) and short ones.
func TestSnippetPastLineEnd(t *testing.T) {
	for _, pad := range []int{0, 300} {
		src := `"test.bad"() : () -> () loc("<stdin>":1:5000)` + strings.Repeat(" ", pad) + "\n"
		r := irc(t, src, "-")
		if r.status != ExitDiagnostics || !strings.HasPrefix(r.stderr, "<stdin>:1:5000: error: ") {
			t.Fatalf("status %d; stderr:\n%s", r.status, r.stderr)
		}
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		if len(lines) < 3 || !strings.HasSuffix(lines[2], "^") || len([]rune(lines[2])) != len([]rune(lines[1]))+1 {
			t.Errorf("the caret is not just past the line's end:\n%s", r.stderr)
		}
	}
}
