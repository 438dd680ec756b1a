package ircmain

import (
	"fmt"
	"io"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// source is the text of an input file, kept to show the lines diagnostics
// point at.
type source struct {
	name  string
	text  string
	path  string   // a file read again for the first snippet, when text is not kept
	lines []string // without line ends, split at the first diagnostic
}

func newSource(name, text string) *source {
	return &source{name: name, text: text}
}

// newFileSource is the source of the file at path, which is not kept in
// memory while the IR read from it is (a large input would be held twice):
// the first diagnostic that shows a line reads the file again.
func newFileSource(name, path string) *source {
	return &source{name: name, path: path}
}

// fileLoc finds the file:line:col inside loc (the first one of a fused
// location, the callee of a call site), as MLIR's diagnostics do.
func fileLoc(loc ir.Location) (ir.FileLineColLoc, bool) {
	switch l := loc.(type) {
	case ir.FileLineColLoc:
		return l, true
	case ir.NameLoc:
		if l.Child != nil {
			return fileLoc(l.Child)
		}
	case ir.CallSiteLoc:
		return fileLoc(l.Callee)
	case ir.FusedLoc:
		for _, c := range l.Locs {
			if f, ok := fileLoc(c); ok {
				return f, true
			}
		}
	}
	return ir.FileLineColLoc{}, false
}

// flatten lists d and its notes as separate diagnostics, the way MLIR's
// handlers see them.
func flatten(d *ir.Diagnostic) []*ir.Diagnostic {
	out := []*ir.Diagnostic{{Loc: d.Loc, Severity: d.Severity, Message: d.Message}}
	for _, n := range d.Notes {
		out = append(out, flatten(n)...)
	}
	return out
}

// write prints d and its notes as MLIR does: "file:line:col: error: msg",
// followed, when the location is in this source, by the line and a caret
// under the column.
func (s *source) write(w io.Writer, d *ir.Diagnostic) {
	for _, one := range flatten(d) {
		fmt.Fprintln(w, one.Error())
		s.writeSnippet(w, one.Loc)
	}
}

// snippetContext is how many characters of a long source line are shown on
// each side of the diagnostic's column.
const snippetContext = 60

// writeSnippet prints the source line loc points at and a caret under its
// column, if loc is a position in s.
func (s *source) writeSnippet(w io.Writer, loc ir.Location) {
	l, ok := fileLoc(loc)
	if !ok || s == nil || l.File != s.name {
		return
	}
	if s.lines == nil {
		text := s.text
		if text == "" && s.path != "" {
			if t, err := readInputFile(s.path); err == nil {
				text = t
			}
		}
		s.lines = strings.Split(text, "\n")
	}
	if l.Line < 1 || l.Line > len(s.lines) {
		return
	}
	line := strings.TrimRight(s.lines[l.Line-1], "\r")
	runes := []rune(line)
	// A location may point past the end of its line (a loc(...) written by
	// hand): the caret goes just after the line's last character.
	col := min(max(l.Col, 1), len(runes)+1)
	// Show a window of a very long line (generated or minified input), so
	// one diagnostic stays one screen.
	if len(runes) > 2*snippetContext+20 {
		start := max(col-1-snippetContext, 0)
		end := min(col-1+snippetContext, len(runes))
		prefix, suffix := "", ""
		if start > 0 {
			prefix = "..."
		}
		if end < len(runes) {
			suffix = "..."
		}
		line = prefix + string(runes[start:end]) + suffix
		col = col - start + len(prefix)
	}
	// Keep tabs so the caret lines up with the text above it.
	var pad strings.Builder
	n := 0
	for _, r := range line {
		if n++; n >= col {
			break
		}
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
	}
	fmt.Fprintf(w, "%s\n%s^\n", line, pad.String())
}
