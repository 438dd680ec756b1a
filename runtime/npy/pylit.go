package npy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The header of a .npy file is a Python literal; these are the Go forms of
// the literals it may contain: string, int64, bool, nil (None) and the types below.
type (
	pyDict  map[string]any
	pyTuple []any
	pyList  []any
)

// maxPyDepth bounds nesting so a hostile header cannot exhaust the stack.
const maxPyDepth = 32

// parsePyLiteral parses the Python literal that makes up all of s (leading
// and trailing white space aside), as ast.literal_eval would for the subset
// numpy writes: dicts with string keys, tuples, lists, strings, ints,
// True, False and None.
func parsePyLiteral(s string) (any, error) {
	p := &pyParser{s: s}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("unexpected %q after the literal", p.rest())
	}
	return v, nil
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) skipSpace() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

// rest returns a short excerpt of the unparsed input, for error messages.
func (p *pyParser) rest() string {
	r := p.s[p.i:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

func (p *pyParser) value(depth int) (any, error) {
	if depth > maxPyDepth {
		return nil, errors.New("literal nested too deeply")
	}
	p.skipSpace()
	if p.i == len(p.s) {
		return nil, errors.New("unexpected end of header")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.dict(depth)
	case c == '(':
		items, trailingComma, err := p.seq(depth, ')')
		if err != nil {
			return nil, err
		}
		if len(items) == 1 && !trailingComma {
			return items[0], nil // (x) is x, not a tuple
		}
		return pyTuple(items), nil
	case c == '[':
		items, _, err := p.seq(depth, ']')
		return pyList(items), err
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || c == '+' || c >= '0' && c <= '9':
		return p.int()
	}
	for word, v := range map[string]any{"True": true, "False": false, "None": nil} {
		if strings.HasPrefix(p.s[p.i:], word) {
			p.i += len(word)
			return v, nil
		}
	}
	return nil, fmt.Errorf("unexpected %q", p.rest())
}

// seq parses the items of a tuple or list up to the closing byte, reporting
// whether the last item was followed by a comma.
func (p *pyParser) seq(depth int, closing byte) (items []any, trailingComma bool, err error) {
	p.i++ // the opening bracket
	for {
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == closing {
			p.i++
			return items, trailingComma, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, false, err
		}
		items = append(items, v)
		p.skipSpace()
		trailingComma = p.i < len(p.s) && p.s[p.i] == ','
		if trailingComma {
			p.i++
		} else if p.i >= len(p.s) || p.s[p.i] != closing {
			return nil, false, fmt.Errorf("expected ',' or %q, found %q", closing, p.rest())
		}
	}
}

func (p *pyParser) dict(depth int) (any, error) {
	d := pyDict{}
	p.i++ // '{'
	for {
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return d, nil
		}
		k, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("dict key %v is not a string", k)
		}
		if _, dup := d[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, fmt.Errorf("expected ':' after key %q", key)
		}
		p.i++
		if d[key], err = p.value(depth + 1); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
		} else if p.i >= len(p.s) || p.s[p.i] != '}' {
			return nil, fmt.Errorf("expected ',' or '}', found %q", p.rest())
		}
	}
}

// str parses a quoted string. Headers hold plain ASCII descriptors, so only
// the simple escapes are understood.
func (p *pyParser) str() (any, error) {
	quote := p.s[p.i]
	var b strings.Builder
	for p.i++; p.i < len(p.s); p.i++ {
		c := p.s[p.i]
		switch {
		case c == quote:
			p.i++
			return b.String(), nil
		case c == '\\' && p.i+1 < len(p.s):
			p.i++
			b.WriteByte(p.s[p.i])
		default:
			b.WriteByte(c)
		}
	}
	return nil, errors.New("unterminated string")
}

// int parses a decimal integer, allowing Python 2's "L" suffix, which old
// numpy versions wrote in shapes.
func (p *pyParser) int() (any, error) {
	start := p.i
	if p.s[p.i] == '-' || p.s[p.i] == '+' {
		p.i++
	}
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	n, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("bad integer %q", p.s[start:p.i])
	}
	if p.i < len(p.s) && p.s[p.i] == 'L' {
		p.i++
	}
	return n, nil
}
