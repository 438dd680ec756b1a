package ir

// Checking of affine_map<...> and affine_set<...> text. The IR keeps these
// attributes as opaque text (no pass reads them), but text that is not an
// affine map or set gets the diagnostic MLIR's parser gives, at the place
// it gives it, instead of being carried along.

import (
	"fmt"
	"strings"
)

// affineError is a malformed affine map or set: the byte offset where it
// goes wrong and the message.
type affineError struct {
	pos int
	msg string
}

func (e *affineError) Error() string { return e.msg }

// affineToken is one token of affine text: an identifier, an integer, or
// punctuation ("->", ">=" and "==" are one token each). kind is 0 at the
// end of the input.
type affineToken struct {
	kind byte // 'i' identifier, 'n' integer, 'p' punctuation, 0 end
	text string
	pos  int
}

// affineKeywords are the binary operators spelt as words.
var affineKeywords = map[string]bool{"floordiv": true, "ceildiv": true, "mod": true}

// affineParser checks one affine map or set.
type affineParser struct {
	src  string
	pos  int
	tok  affineToken
	ids  map[string]bool // declared identifier → is a symbol
	fail *affineError
}

// checkAffine checks the affine_map or affine_set (kind) whose '<' is at
// src[start] and returns the map's or set's number of dimensions.
func checkAffine(src string, start int, kind string) (dims int, err *affineError) {
	a := &affineParser{src: src, pos: start + 1, ids: map[string]bool{}}
	a.next()
	dims = a.idList("(", ")", false)
	if a.is("[") {
		a.idList("[", "]", true)
	}
	if kind == "affine_set" {
		a.expect(":", "expected ':' in integer set")
		a.list("expected '(' in integer set constraint list", "expected ')' in integer set constraint list", a.constraint)
	} else {
		a.expect("->", "expected '->' in affine map")
		a.list("expected '(' in affine map range", "expected ')' in affine map range", func() { a.expr() })
	}
	a.expect(">", "expected '>' to close "+kind)
	return dims, a.fail
}

func (a *affineParser) errorf(pos int, format string, args ...any) {
	if a.fail == nil {
		a.fail = &affineError{pos: pos, msg: fmt.Sprintf(format, args...)}
	}
	a.tok = affineToken{pos: pos} // stop
}

func (a *affineParser) next() {
	if a.fail != nil {
		return
	}
	src, i := a.src, a.pos
	for i < len(src) && strings.IndexByte(" \t\r\n", src[i]) >= 0 {
		i++
	}
	start := i
	switch {
	case i >= len(src):
		a.tok = affineToken{pos: i}
		return
	case isLetter(src[i]) || src[i] == '_':
		for i < len(src) && (isLetter(src[i]) || isDigit(src[i]) || src[i] == '_' || src[i] == '$' || src[i] == '.') {
			i++
		}
		a.tok = affineToken{kind: 'i', text: src[start:i], pos: start}
	case isDigit(src[i]):
		for i < len(src) && isDigit(src[i]) {
			i++
		}
		a.tok = affineToken{kind: 'n', text: src[start:i], pos: start}
	default:
		i++
		if i < len(src) && (src[start:i+1] == "->" || src[start:i+1] == ">=" || src[start:i+1] == "==") {
			i++
		}
		a.tok = affineToken{kind: 'p', text: src[start:i], pos: start}
	}
	a.pos = i
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func (a *affineParser) is(p string) bool { return a.tok.kind == 'p' && a.tok.text == p }

func (a *affineParser) expect(p, msg string) {
	if a.fail != nil {
		return
	}
	if !a.is(p) {
		a.errorf(a.tok.pos, "%s", msg)
		return
	}
	a.next()
}

// idList reads "(d0, d1)" or "[s0]", declaring the identifiers, and returns
// how many there are.
func (a *affineParser) idList(open, close string, symbols bool) int {
	a.expect(open, fmt.Sprintf("expected '%s' in affine map or set", open))
	n := 0
	if a.is(close) {
		a.next()
		return 0
	}
	for a.fail == nil {
		if a.tok.kind != 'i' {
			a.errorf(a.tok.pos, "expected bare identifier")
			return n
		}
		if _, dup := a.ids[a.tok.text]; dup {
			a.errorf(a.tok.pos, "redefinition of identifier '%s'", a.tok.text)
			return n
		}
		a.ids[a.tok.text] = symbols
		n++
		a.next()
		if !a.is(",") {
			break
		}
		a.next()
	}
	a.expect(close, fmt.Sprintf("expected ',' or '%s'", close))
	return n
}

// list reads "(item, item, ...)" (possibly empty).
func (a *affineParser) list(openMsg, closeMsg string, item func()) {
	a.expect("(", openMsg)
	if a.is(")") {
		a.next()
		return
	}
	for a.fail == nil {
		item()
		if !a.is(",") {
			break
		}
		a.next()
	}
	a.expect(")", closeMsg)
}

// constraint reads "expr >= 0" or "expr == 0" (any expression on the right).
func (a *affineParser) constraint() {
	a.expr()
	if !a.is(">=") && !a.is("==") {
		a.errorf(a.tok.pos, "expected '== affine-expr' or '>= affine-expr' at end of affine constraint")
		return
	}
	a.next()
	a.expr()
}

// expr reads a sum and reports whether it is symbolic (holds no
// dimension); ok is false once it failed.
func (a *affineParser) expr() (symbolic, ok bool) {
	symbolic, ok = a.term()
	for ok && (a.is("+") || a.is("-")) {
		a.next()
		if !a.startsOperand() {
			a.errorf(a.tok.pos, "missing right operand of binary op")
			return false, false
		}
		var s bool
		if s, ok = a.term(); ok {
			symbolic = symbolic && s
		}
	}
	return symbolic, ok
}

// term reads a product, quotient or remainder chain.
func (a *affineParser) term() (symbolic, ok bool) {
	symbolic, ok = a.unary()
	for ok {
		op := a.tok.text
		if !a.is("*") && !(a.tok.kind == 'i' && affineKeywords[op]) {
			return symbolic, ok
		}
		a.next()
		if !a.startsOperand() {
			a.errorf(a.tok.pos, "missing right operand of binary op")
			return false, false
		}
		pos := a.tok.pos
		var right bool
		if right, ok = a.unary(); !ok {
			return false, false
		}
		switch {
		case op == "*" && !symbolic && !right:
			a.errorf(pos, "non-affine expression: at least one of the multiply operands has to be either a constant or symbolic")
			return false, false
		case op != "*" && !right:
			a.errorf(pos, "non-affine expression: right operand of %s has to be either a constant or symbolic", op)
			return false, false
		}
		symbolic = symbolic && right
	}
	return symbolic, ok
}

// startsOperand reports whether the token can begin an operand.
func (a *affineParser) startsOperand() bool {
	switch a.tok.kind {
	case 'i', 'n':
		return true
	case 'p':
		return a.is("(") || a.is("-")
	}
	return false
}

func (a *affineParser) unary() (symbolic, ok bool) {
	if !a.is("-") {
		return a.operand()
	}
	a.next()
	if !a.startsOperand() {
		a.errorf(a.tok.pos, "missing operand of negation")
		return false, false
	}
	return a.unary()
}

func (a *affineParser) operand() (symbolic, ok bool) {
	t := a.tok
	switch {
	case t.kind == 'n':
		a.next()
		return true, true
	case t.kind == 'i':
		sym, declared := a.ids[t.text]
		if !declared {
			a.errorf(t.pos, "use of undeclared identifier")
			return false, false
		}
		a.next()
		return sym, true
	case a.is("("):
		a.next()
		if a.is(")") {
			a.errorf(a.tok.pos, "no expression inside parentheses")
			return false, false
		}
		symbolic, ok = a.expr()
		if ok && !a.is(")") {
			a.errorf(a.tok.pos, "expected ')'")
			return false, false
		}
		a.next()
		return symbolic, ok
	case a.is("+") || a.is("*"):
		a.errorf(t.pos, "missing left operand of binary op")
		return false, false
	}
	a.errorf(t.pos, "expected affine expression")
	return false, false
}
