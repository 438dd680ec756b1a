package ir

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind classifies a token of MLIR's textual format.
type tokKind uint8

const (
	tokEOF tokKind = iota
	tokError
	tokBareIdent // foo, func.func, f32, x
	tokValueID   // %0, %arg0, %x#1 (the #N is lexed separately)
	tokBlockID   // ^bb0
	tokSymbol    // @foo or @"foo bar"
	tokHashIdent // #alias or #dialect.attr
	tokBangIdent // !alias or !dialect.type
	tokInteger   // 42, 0x2A
	tokFloat     // 1.5, 2.0e-3
	tokString    // "..."
	tokPunct     // ( ) [ ] { } < > , : = ? * + - -> :: {-# #-}
)

type token struct {
	kind tokKind
	text string // the token's source text (for strings: with quotes)
	pos  int    // byte offset in the source
}

// lexer turns source bytes into tokens on demand.
type lexer struct {
	src string
	pos int
}

func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }

func isIdentChar(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9') || c == '$' || c == '.'
}

func isSuffixChar(c byte) bool { return isIdentChar(c) || c == '-' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// skipSpace skips whitespace and // comments.
func (l *lexer) skipSpace() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.pos++
		case c == '/' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '/':
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		default:
			return
		}
	}
}

// next returns the next token. An error token's text is the message.
func (l *lexer) next() token {
	l.skipSpace()
	start := l.pos
	if l.pos >= len(l.src) {
		return token{kind: tokEOF, pos: start}
	}
	c := l.src[l.pos]
	tok := func(k tokKind) token { return token{kind: k, text: l.src[start:l.pos], pos: start} }
	switch {
	case isIdentStart(c):
		for l.pos < len(l.src) && isIdentChar(l.src[l.pos]) {
			l.pos++
		}
		return tok(tokBareIdent)
	case isDigit(c):
		return l.number(start)
	case c == '"':
		return l.str(start)
	case c == '%' || c == '^' || c == '#' || c == '!':
		l.pos++
		kind := map[byte]tokKind{'%': tokValueID, '^': tokBlockID, '#': tokHashIdent, '!': tokBangIdent}[c]
		if c == '#' && l.pos < len(l.src) && l.src[l.pos] == '-' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '}' {
			l.pos += 2
			return tok(tokPunct)
		}
		n := l.pos
		if kind == tokValueID || kind == tokBlockID {
			for l.pos < len(l.src) && isSuffixChar(l.src[l.pos]) {
				l.pos++
			}
		} else {
			for l.pos < len(l.src) && isIdentChar(l.src[l.pos]) {
				l.pos++
			}
		}
		if l.pos == n {
			if (kind == tokHashIdent || kind == tokBangIdent) && l.pos < len(l.src) && l.src[l.pos] == '"' {
				// #"quoted" / !"quoted": accept as an identifier.
				t := l.str(l.pos)
				if t.kind == tokError {
					return t
				}
				return tok(kind)
			}
			l.pos = start + 1
			if c == '!' {
				return token{kind: tokError, text: "invalid type identifier: expected an identifier after '!'", pos: start}
			}
			return token{kind: tokError, text: "expected identifier after '" + string(c) + "'", pos: start}
		}
		return tok(kind)
	case c == '@':
		l.pos++
		if l.pos < len(l.src) && l.src[l.pos] == '"' {
			t := l.str(l.pos)
			if t.kind == tokError {
				return t
			}
			return tok(tokSymbol)
		}
		n := l.pos
		for l.pos < len(l.src) && isSuffixChar(l.src[l.pos]) {
			l.pos++
		}
		if l.pos == n {
			return token{kind: tokError, text: "expected symbol name after '@'", pos: start}
		}
		if c := l.src[n]; !isLetter(c) && c != '_' {
			return token{kind: tokError, text: "@ identifier expected to start with letter or '_'", pos: start}
		}
		return tok(tokSymbol)
	case c == '-':
		l.pos++
		if l.pos < len(l.src) && l.src[l.pos] == '>' {
			l.pos++
		}
		return tok(tokPunct)
	case c == ':':
		l.pos++
		if l.pos < len(l.src) && l.src[l.pos] == ':' {
			l.pos++
		}
		return tok(tokPunct)
	case c == '{':
		l.pos++
		if l.pos < len(l.src) && l.src[l.pos] == '-' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '#' {
			l.pos += 2
		}
		return tok(tokPunct)
	case c == '.':
		if strings.HasPrefix(l.src[l.pos:], "...") {
			l.pos += 3
			return tok(tokPunct)
		}
		l.pos++
		return token{kind: tokError, text: "expected three consecutive dots for an ellipsis", pos: start}
	case c == '(' || c == ')' || c == '[' || c == ']' || c == '}' || c == '<' || c == '>' ||
		c == ',' || c == '=' || c == '?' || c == '*' || c == '+' || c == '|':
		l.pos++
		return tok(tokPunct)
	}
	if c >= utf8.RuneSelf {
		r, size := utf8.DecodeRuneInString(l.src[l.pos:])
		l.pos += size
		if r == utf8.RuneError && size <= 1 {
			return token{kind: tokError, text: "invalid UTF-8 in source", pos: start}
		}
		return token{kind: tokError, text: "unexpected character " + strconv.QuoteRune(r), pos: start}
	}
	l.pos++
	return token{kind: tokError, text: "unexpected character " + strconv.QuoteRune(rune(c)), pos: start}
}

func (l *lexer) number(start int) token {
	if l.src[l.pos] == '0' && l.pos+1 < len(l.src) && l.src[l.pos+1] == 'x' && l.pos+2 < len(l.src) && isHexDigit(l.src[l.pos+2]) {
		l.pos += 2
		for l.pos < len(l.src) && isHexDigit(l.src[l.pos]) {
			l.pos++
		}
		return token{kind: tokInteger, text: l.src[start:l.pos], pos: start}
	}
	for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
		l.pos++
	}
	if l.pos >= len(l.src) || l.src[l.pos] != '.' {
		return token{kind: tokInteger, text: l.src[start:l.pos], pos: start}
	}
	l.pos++
	for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
		l.pos++
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		p := l.pos + 1
		if p < len(l.src) && (l.src[p] == '+' || l.src[p] == '-') {
			p++
		}
		if p < len(l.src) && isDigit(l.src[p]) {
			for p < len(l.src) && isDigit(l.src[p]) {
				p++
			}
			l.pos = p
		}
	}
	return token{kind: tokFloat, text: l.src[start:l.pos], pos: start}
}

func (l *lexer) str(start int) token {
	l.pos = start + 1
	for l.pos < len(l.src) {
		switch l.src[l.pos] {
		case '"':
			l.pos++
			return token{kind: tokString, text: l.src[start:l.pos], pos: start}
		case '\\':
			l.pos += 2
		case '\n':
			return token{kind: tokError, text: "expected '\"' in string literal", pos: start}
		default:
			l.pos++
		}
	}
	return token{kind: tokError, text: "expected '\"' in string literal", pos: start}
}

// unquote decodes an MLIR string literal (with its quotes).
func unquote(lit string) (string, bool) {
	body := lit[1 : len(lit)-1]
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+1 >= len(body) {
			return "", false
		}
		i++
		switch e := body[i]; e {
		case '"', '\\':
			out = append(out, e)
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		default:
			if i+1 < len(body) && isHexDigit(e) && isHexDigit(body[i+1]) {
				v, _ := strconv.ParseUint(body[i:i+2], 16, 8)
				out = append(out, byte(v))
				i++
				continue
			}
			return "", false
		}
	}
	return string(out), true
}
