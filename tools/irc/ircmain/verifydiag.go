package ircmain

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// expectedRE matches an expectation comment, as MLIR's
// -verify-diagnostics reads them:
//
//	// expected-error {{message}}        on this line
//	// expected-note@+2 {{message}}      two lines below (@-N: above)
//	// expected-warning@above {{...}}    on the last line without an expectation
//	// expected-remark@below {{...}}     on the next line without an expectation
//	// expected-error@unknown {{...}}    at an unknown location
//	// expected-error-re {{a {{[0-9]+}} b}}  text outside {{ }} literal, inside a regexp
var expectedRE = regexp.MustCompile(`expected-(error|note|remark|warning)(-re)? *(@([+-][0-9]+|above|below|unknown))? *\{\{(.*)\}\}$`)

// directiveRE finds what looks like an expectation, to reject misspelt ones
// instead of silently ignoring them.
var directiveRE = regexp.MustCompile(`^\s*//\s*expected-(error|note|remark|warning)`)

var severities = map[string]ir.Severity{
	"error":   ir.SevError,
	"warning": ir.SevWarning,
	"note":    ir.SevNote,
	"remark":  ir.SevRemark,
}

// expectation is one expected diagnostic.
type expectation struct {
	severity ir.Severity
	line     int  // line of the whole file the diagnostic must be at
	unknown  bool // @unknown: at a location that is not in a file
	text     string
	re       *regexp.Regexp // for expected-*-re, else nil
	comment  ir.FileLineColLoc
	matched  bool
}

func (e *expectation) match(msg string) bool {
	if e.re != nil {
		return e.re.MatchString(msg)
	}
	return strings.Contains(msg, e.text)
}

// diagVerifier checks the diagnostics of one chunk against its
// expectations, printing each mismatch as an error as it finds it.
type diagVerifier struct {
	src      *source
	w        io.Writer
	expected []*expectation
	failed   bool
}

// newDiagVerifier reads the expectations of chunk c of src.
func newDiagVerifier(src *source, c chunk, w io.Writer) *diagVerifier {
	v := &diagVerifier{src: src, w: w}
	var below []*expectation // @below expectations waiting for their line
	lastPlain := c.lineOffset + 1
	lines := strings.Split(c.text, "\n")
	for i, text := range lines {
		lineNo := c.lineOffset + i + 1
		text = strings.TrimRight(text, " \t\r")
		m := expectedRE.FindStringSubmatchIndex(text)
		if m == nil {
			if directiveRE.MatchString(text) {
				col := strings.Index(text, "expected-") + 1
				v.fail(ir.Errorf(ir.FileLineColLoc{File: src.name, Line: lineNo, Col: col},
					"malformed expectation: want expected-<error|warning|note|remark>[-re][@+N|@-N|@above|@below|@unknown] {{message}}"))
				continue
			}
			for _, e := range below {
				e.line = lineNo
			}
			below = below[:0]
			lastPlain = lineNo
			continue
		}
		group := func(k int) string {
			if m[2*k] < 0 {
				return ""
			}
			return text[m[2*k]:m[2*k+1]]
		}
		e := &expectation{
			severity: severities[group(1)],
			line:     lineNo,
			text:     group(5),
			comment:  ir.FileLineColLoc{File: src.name, Line: lineNo, Col: m[0] + 1},
		}
		if group(2) != "" {
			re, err := expectationRegexp(e.text)
			if err != nil {
				v.fail(ir.Errorf(e.comment, "invalid regular expression in expectation: %v", err))
				continue
			}
			e.re = re
		}
		switch where := group(4); where {
		case "":
		case "above":
			e.line = lastPlain
		case "below":
			// Until a plain line comes, point at the chunk's last line.
			e.line = c.lineOffset + len(lines)
			below = append(below, e)
		case "unknown":
			e.unknown, e.line = true, 0
		default:
			n, _ := strconv.Atoi(where) // the pattern guarantees [+-]digits
			e.line += n
		}
		v.expected = append(v.expected, e)
	}
	return v
}

// expectationRegexp compiles the text of an expected-*-re: literal text
// with regular expressions between {{ and }}.
func expectationRegexp(text string) (*regexp.Regexp, error) {
	var b strings.Builder
	for text != "" {
		open := strings.Index(text, "{{")
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(text))
			break
		}
		b.WriteString(regexp.QuoteMeta(text[:open]))
		text = text[open+2:]
		end := strings.Index(text, "}}")
		if end < 0 {
			return nil, fmt.Errorf("unterminated {{ in %q", text)
		}
		b.WriteString("(?:" + text[:end] + ")")
		text = text[end+2:]
	}
	return regexp.Compile(b.String())
}

// fail prints a mismatch.
func (v *diagVerifier) fail(d *ir.Diagnostic) {
	v.failed = true
	v.src.write(v.w, d)
}

// handle checks a produced diagnostic and its notes.
func (v *diagVerifier) handle(d *ir.Diagnostic) {
	for _, one := range flatten(d) {
		v.check(one)
	}
}

func (v *diagVerifier) check(d *ir.Diagnostic) {
	l, inFile := fileLoc(d.Loc)
	var nearMiss *expectation
	for _, e := range v.expected {
		var here bool
		if inFile {
			here = !e.unknown && l.File == v.src.name && l.Line == e.line
		} else {
			here = e.unknown
		}
		if !here || !e.match(d.Message) {
			continue
		}
		if e.severity == d.Severity {
			e.matched = true
			return
		}
		nearMiss = e
	}
	if nearMiss != nil {
		v.fail(ir.Errorf(nearMiss.comment, "'%s' diagnostic emitted when expecting a '%s'", d.Severity, nearMiss.severity))
		return
	}
	v.fail(ir.Errorf(d.Loc, "unexpected %s: %s", d.Severity, d.Message))
}

// finish reports the expectations nothing matched and returns whether the
// chunk passed.
func (v *diagVerifier) finish() bool {
	for _, e := range v.expected {
		if !e.matched {
			v.fail(ir.Errorf(e.comment, "expected %s \"%s\" was not produced", e.severity, e.text))
		}
	}
	return !v.failed
}
