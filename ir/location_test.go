package ir

import "testing"

// TestDiagnosticPositions checks how a diagnostic writes its location:
// file:line:col, file:line when the column is unknown (0, as the
// frontend records a Go caller), and notes on lines of their own.
func TestDiagnosticPositions(t *testing.T) {
	for _, c := range []struct {
		loc  Location
		want string
	}{
		{FileLineColLoc{File: "a.mlir", Line: 3, Col: 7}, "a.mlir:3:7: error: bad"},
		{FileLineColLoc{File: "main.go", Line: 30}, "main.go:30: error: bad"},
		{UnknownLoc{}, "error: bad"},
	} {
		if got := Errorf(c.loc, "bad").Error(); got != c.want {
			t.Errorf("%v: %q, want %q", c.loc, got, c.want)
		}
	}
	d := Errorf(FileLineColLoc{File: "a.mlir", Line: 3, Col: 7}, "bad").Note(FileLineColLoc{File: "main.go", Line: 9}, "from here")
	if got, want := d.Error(), "a.mlir:3:7: error: bad\nmain.go:9: note: from here"; got != want {
		t.Errorf("with a note: %q, want %q", got, want)
	}
}

// TestPosition checks the position text logs and reports share with
// diagnostics: through a name or call site to its file position, and
// empty where there is none.
func TestPosition(t *testing.T) {
	for _, c := range []struct {
		loc  Location
		want string
	}{
		{FileLineColLoc{File: "a.mlir", Line: 3, Col: 7}, "a.mlir:3:7"},
		{FileLineColLoc{File: "main.go", Line: 52}, "main.go:52"},
		{NameLoc{Name: "x", Child: FileLineColLoc{File: "main.go", Line: 8}}, "main.go:8"},
		{UnknownLoc{}, ""},
		{nil, ""},
	} {
		if got := Position(c.loc); got != c.want {
			t.Errorf("Position(%v) = %q, want %q", c.loc, got, c.want)
		}
	}
}
