package ir

import (
	"fmt"
	"strconv"
	"strings"
)

// Location says where an operation came from.
type Location interface {
	// String returns the location as written inside loc(...).
	String() string
	isLoc()
}

// UnknownLoc is the absence of a location.
type UnknownLoc struct{}

func (UnknownLoc) isLoc() {}

// String implements Location.
func (UnknownLoc) String() string { return "unknown" }

// FileLineColLoc is "file":line:col.
type FileLineColLoc struct {
	File      string
	Line, Col int
}

func (FileLineColLoc) isLoc() {}

// String implements Location.
func (l FileLineColLoc) String() string {
	return QuoteString(l.File) + ":" + strconv.Itoa(l.Line) + ":" + strconv.Itoa(l.Col)
}

// NameLoc is "name" or "name"(child).
type NameLoc struct {
	Name  string
	Child Location // nil when absent
}

func (NameLoc) isLoc() {}

// String implements Location.
func (l NameLoc) String() string {
	if l.Child == nil {
		return QuoteString(l.Name)
	}
	return QuoteString(l.Name) + "(" + l.Child.String() + ")"
}

// CallSiteLoc is callsite(callee at caller).
type CallSiteLoc struct{ Callee, Caller Location }

func (CallSiteLoc) isLoc() {}

// String implements Location.
func (l CallSiteLoc) String() string {
	return "callsite(" + l.Callee.String() + " at " + l.Caller.String() + ")"
}

// FusedLoc is fused[a, b] or fused<metadata>[a, b].
type FusedLoc struct {
	Locs     []Location
	Metadata Attribute // nil when absent
}

func (FusedLoc) isLoc() {}

// String implements Location.
func (l FusedLoc) String() string {
	var b strings.Builder
	b.WriteString("fused")
	if l.Metadata != nil {
		b.WriteString("<" + l.Metadata.String() + ">")
	}
	b.WriteByte('[')
	for i, c := range l.Locs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.String())
	}
	b.WriteByte(']')
	return b.String()
}

// OpaqueLoc keeps a location form Strata does not model, as its text.
type OpaqueLoc struct{ Text string }

func (OpaqueLoc) isLoc() {}

// String implements Location.
func (l OpaqueLoc) String() string { return l.Text }

// fileLineCol finds the first file:line:col inside l, for diagnostics.
func fileLineCol(l Location) (FileLineColLoc, bool) {
	switch l := l.(type) {
	case FileLineColLoc:
		return l, true
	case NameLoc:
		if l.Child != nil {
			return fileLineCol(l.Child)
		}
	case CallSiteLoc:
		return fileLineCol(l.Callee)
	case FusedLoc:
		for _, c := range l.Locs {
			if f, ok := fileLineCol(c); ok {
				return f, true
			}
		}
	}
	return FileLineColLoc{}, false
}

// Severity of a diagnostic.
type Severity uint8

// Diagnostic severities, as in MLIR.
const (
	SevError Severity = iota
	SevWarning
	SevNote
	SevRemark
)

// String returns the severity as diagnostics print it: "error", "warning", "note" or "remark".
func (s Severity) String() string {
	return [...]string{"error", "warning", "note", "remark"}[s]
}

// Diagnostic is one located message, with attached notes.
type Diagnostic struct {
	Loc      Location
	Severity Severity
	Message  string
	Notes    []*Diagnostic
}

// Error formats the diagnostic as MLIR does: "file:line:col: error: message".
func (d *Diagnostic) Error() string {
	var b strings.Builder
	d.write(&b)
	for _, n := range d.Notes {
		b.WriteByte('\n')
		n.write(&b)
	}
	return b.String()
}

// Position renders a location for people: "file:line:col" where it has
// a file position, "file:line" where the column is 0 (unknown: a Go
// caller's line, as the frontend records it; the Go toolchain writes it
// so), and "" where it has none.
func Position(l Location) string {
	f, ok := fileLineCol(l)
	switch {
	case !ok:
		return ""
	case f.Col == 0:
		return f.File + ":" + strconv.Itoa(f.Line)
	}
	return f.File + ":" + strconv.Itoa(f.Line) + ":" + strconv.Itoa(f.Col)
}

func (d *Diagnostic) write(b *strings.Builder) {
	if pos := Position(d.Loc); pos != "" {
		b.WriteString(pos)
		b.WriteString(": ")
	} else if d.Loc != nil {
		if _, unknown := d.Loc.(UnknownLoc); !unknown {
			fmt.Fprintf(b, "loc(%s): ", d.Loc)
		}
	}
	b.WriteString(d.Severity.String())
	b.WriteString(": ")
	b.WriteString(d.Message)
}

// Note attaches a note at loc and returns d.
func (d *Diagnostic) Note(loc Location, format string, args ...any) *Diagnostic {
	d.Notes = append(d.Notes, &Diagnostic{Loc: loc, Severity: SevNote, Message: fmt.Sprintf(format, args...)})
	return d
}

// Errorf returns an error diagnostic at loc.
func Errorf(loc Location, format string, args ...any) *Diagnostic {
	return &Diagnostic{Loc: loc, Severity: SevError, Message: fmt.Sprintf(format, args...)}
}

// DiagnosticList is a set of diagnostics returned as one error.
type DiagnosticList []*Diagnostic

// Error joins the diagnostics, one per line.
func (l DiagnosticList) Error() string {
	parts := make([]string, len(l))
	for i, d := range l {
		parts[i] = d.Error()
	}
	return strings.Join(parts, "\n")
}

// Err returns nil for an empty list, else the list itself.
func (l DiagnosticList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Diagnostics flattens err into diagnostics: a Diagnostic, a DiagnosticList,
// or any other error as one unlocated error.
func Diagnostics(err error) []*Diagnostic {
	switch e := err.(type) {
	case nil:
		return nil
	case *Diagnostic:
		return []*Diagnostic{e}
	case DiagnosticList:
		return e
	}
	return []*Diagnostic{{Loc: UnknownLoc{}, Severity: SevError, Message: err.Error()}}
}

// Loc returns where v was defined: its defining op's location for a result,
// the location recorded with SetArgLoc for a block argument, and UnknownLoc
// when there is none.
func (v *Value) Loc() Location {
	switch {
	case v.op != nil:
		if v.op.loc != nil {
			return v.op.loc
		}
	case v.block != nil:
		if l, ok := v.block.argLocs[v]; ok {
			return l
		}
	}
	return UnknownLoc{}
}

// SetArgLoc records the location of block argument v. It does nothing for
// an op result, whose location is its op's.
func (v *Value) SetArgLoc(l Location) {
	if v.block == nil || v.op != nil {
		return
	}
	if v.block.argLocs == nil {
		v.block.argLocs = map[*Value]Location{}
	}
	v.block.argLocs[v] = l
}
