package ir

// Parsing of types: builtin, function, shaped and dialect types.

import (
	"math"
	"strconv"
	"strings"
)

// --- types ---

// ParseType parses a type.
func (p *Parser) ParseType() (Type, error) {
	t := p.parseType()
	return t, p.err
}

func (p *Parser) parseType() Type {
	if p.err != nil || p.inType || p.tok.kind == tokEOF {
		return p.parseTypeUncached()
	}
	// Top-level types are cached by their source text: op signatures repeat
	// the same few types, and a map lookup is much cheaper than re-parsing
	// and re-interning them. The text's extent is found by bracket matching
	// and trusted only after a real parse ended at the same place.
	start := p.tok.pos
	end := typeExtent(p.lex.src, start)
	if end > start {
		if t, ok := p.typeCache[p.lex.src[start:end]]; ok {
			p.resetTo(end)
			return t
		}
	}
	p.inType = true
	t := p.parseTypeUncached()
	p.inType = false
	if t != nil && p.err == nil && end > start && p.prevEnd == end {
		if p.typeCache == nil {
			p.typeCache = map[string]Type{}
		}
		p.typeCache[p.lex.src[start:end]] = t
	}
	return t
}

// typeExtent returns the end of the type text starting at pos, by bracket
// matching alone, or -1 when brackets do not balance.
func typeExtent(src string, pos int) int {
	depth := 0
	for i := pos; i < len(src); i++ {
		switch c := src[i]; c {
		case '<', '(', '[', '{':
			depth++
		case '>', ')', ']', '}':
			if c == '>' && ((i > pos && src[i-1] == '-') || (i+1 < len(src) && src[i+1] == '=')) {
				continue // "->" and ">=" inside brackets
			}
			if depth == 0 {
				return i
			}
			depth--
			if depth > 0 {
				continue
			}
			if c == ')' { // a function type goes on with "-> results"
				j := i + 1
				for j < len(src) && src[j] == ' ' {
					j++
				}
				if strings.HasPrefix(src[j:], "->") {
					j += 2
					for j < len(src) && src[j] == ' ' {
						j++
					}
					return typeExtent(src, j)
				}
			}
			return i + 1
		case '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case ',', ' ', '\n', '\t', '\r', '=', ':':
			if depth == 0 {
				return i
			}
		}
	}
	if depth == 0 {
		return len(src)
	}
	return -1
}

func (p *Parser) parseTypeUncached() Type {
	if p.err != nil {
		return nil
	}
	if !p.enter() {
		return nil
	}
	defer p.leave()
	pos := p.tok.pos
	switch p.tok.kind {
	case tokPunct:
		if p.tok.text == "(" {
			return p.parseFunctionType()
		}
	case tokBangIdent:
		return p.parseDialectType()
	case tokBareIdent:
		text := p.tok.text
		if t, ok := floatTypes[text]; ok {
			p.advance()
			return t
		}
		if t := parseIntegerTypeName(text); t != nil {
			p.advance()
			return t
		}
		if len(text) > 1 && (text[0] == 'i' || strings.HasPrefix(text, "si") || strings.HasPrefix(text, "ui")) && isDigit(text[len(text)-1]) {
			digits := strings.TrimLeft(text, "isu")
			if w, err := strconv.ParseUint(digits, 10, 32); err == nil && w >= 1<<24 {
				p.Errorf("integer bitwidth is limited to %d bits, found '%s'", 1<<24-1, text)
			} else {
				p.Errorf("invalid integer width in '%s'", text)
			}
			return nil
		}
		switch text {
		case "index":
			p.advance()
			return Index
		case "none":
			p.advance()
			return None
		case "tensor", "memref", "vector":
			return p.parseShapedType(text)
		case "complex":
			p.advance()
			if !p.consumeIf("<") {
				p.Errorf("expected '<' in complex type, found %s", p.describe())
				return nil
			}
			epos := p.tok.pos
			e := p.parseType()
			if p.err != nil {
				return nil
			}
			if !p.consumeIf(">") {
				p.Errorf("expected '>' in complex type, found %s", p.describe())
				return nil
			}
			if !IsFloat(e) {
				if _, ok := e.(*IntegerType); !ok {
					p.failAt(epos, "invalid element type for complex, found '%s'", e)
					return nil
				}
			}
			return ComplexOf(e)
		case "tuple":
			p.advance()
			if !p.consumeIf("<") {
				p.Errorf("expected '<' in tuple type, found %s", p.describe())
				return nil
			}
			var elems []Type
			if !p.is(">") {
				for {
					elems = append(elems, p.parseType())
					if p.err != nil || !p.consumeIf(",") {
						break
					}
				}
			}
			if p.err != nil {
				return nil
			}
			if !p.consumeIf(">") {
				p.Errorf("expected '>' in tuple type, found %s", p.describe())
				return nil
			}
			return TupleOf(elems)
		}
	}
	// A type that is not a function type was expected (a '(' would have
	// begun one).
	if p.tok.kind == tokEOF {
		p.wrongToken("expected non-function type, found %s", p.describe())
	} else {
		p.failAt(pos, "expected non-function type, found %s", p.describe())
	}
	return nil
}

func parseIntegerTypeName(s string) *IntegerType {
	sign := Signless
	digits := ""
	switch {
	case strings.HasPrefix(s, "si"):
		sign, digits = Signed, s[2:]
	case strings.HasPrefix(s, "ui"):
		sign, digits = Unsigned, s[2:]
	case strings.HasPrefix(s, "i"):
		digits = s[1:]
	default:
		return nil
	}
	if digits == "" || (digits[0] == '0' && digits != "0") {
		return nil
	}
	for i := 0; i < len(digits); i++ {
		if !isDigit(digits[i]) {
			return nil
		}
	}
	w, err := strconv.Atoi(digits)
	if err != nil || w >= 1<<24 { // MLIR's limit is 2^24-1 bits
		return nil
	}
	return IntegerWithSign(w, sign)
}

func (p *Parser) parseFunctionType() Type {
	p.advance() // (
	var ins []Type
	if !p.is(")") {
		for {
			ins = append(ins, p.parseType())
			if p.err != nil || !p.consumeIf(",") {
				break
			}
		}
	}
	if p.expect(")") != nil || p.expect("->") != nil {
		return nil
	}
	outs := p.parseResultTypeList()
	if p.err != nil {
		return nil
	}
	return FunctionOf(ins, outs)
}

// parseResultTypeList parses a lone type or a parenthesized list.
func (p *Parser) parseResultTypeList() []Type {
	if !p.is("(") {
		t := p.parseType()
		if t == nil {
			return nil
		}
		return []Type{t}
	}
	// "(" starts either a list of results or a function-typed result.
	save := p.tok.pos
	p.advance()
	var outs []Type
	if !p.is(")") {
		for {
			outs = append(outs, p.parseType())
			if p.err != nil || !p.consumeIf(",") {
				break
			}
		}
	}
	if p.expect(")") != nil {
		return nil
	}
	if p.is("->") {
		// It was a function type as the single result.
		p.resetTo(save)
		return []Type{p.parseFunctionType()}
	}
	return outs
}

func (p *Parser) parseDialectType() Type {
	name, pos := p.tok.text, p.tok.pos
	if t, ok := p.typeAliases[name]; ok {
		if !p.chargeAlias(name, pos) {
			return nil
		}
		p.advance()
		return t
	}
	p.advance()
	body := ""
	if p.tok.pos == pos+len(name) && p.is("<") {
		body = p.scanBalanced()
		if p.err != nil {
			return nil
		}
	}
	if !strings.Contains(name, ".") {
		if body == "" {
			p.failAt(pos, "undefined symbol alias id '%s'", name[1:])
			return nil
		}
		return OpaqueTypeOf(name[1:], "", body)
	}
	dot := strings.IndexByte(name, '.')
	return OpaqueTypeOf(name[1:dot], name[dot+1:], body)
}

// scanBalanced consumes a <...> group starting at the current '<' token and
// returns its exact text, brackets included.
func (p *Parser) scanBalanced() string {
	start := p.tok.pos
	src := p.lex.src
	depth := 0
	i := start
	for i < len(src) {
		c := src[i]
		switch c {
		case '<', '(', '[', '{':
			depth++
		case '>', ')', ']', '}':
			// "->" in an affine map and ">=" in an affine set do not close.
			if c == '>' && ((i > 0 && src[i-1] == '-') || (i+1 < len(src) && src[i+1] == '=')) {
				break
			}
			depth--
			if depth == 0 {
				p.resetTo(i + 1)
				return src[start : i+1]
			}
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			i = j
		}
		i++
	}
	p.failAt(start, "unbalanced '<' in dialect type or attribute")
	return ""
}

// staticSizeFits reports whether the product of shape's non-zero static
// sizes fits in an int64, so that element counts and the shape arithmetic
// of passes cannot wrap around.
func staticSizeFits(shape []int64) bool {
	n := int64(1)
	for _, d := range shape {
		if d == Dynamic || d == 0 {
			continue
		}
		if n > math.MaxInt64/d {
			return false
		}
		n *= d
	}
	return true
}

func (p *Parser) parseShapedType(kind string) Type {
	start := p.tok.pos
	p.advance()
	if p.tok.kind != tokPunct || p.tok.text != "<" {
		p.Errorf("expected '<' in %s type", kind)
		return nil
	}
	// Dimensions are scanned from the raw bytes: "4x?xf32" is not tokenizable.
	src := p.lex.src
	i := p.tok.pos + 1
	var shape []int64
	var scalable []bool
	unranked := false
	skipSpace := func(i int) int {
		for i < len(src) && (src[i] == ' ' || src[i] == '\n' || src[i] == '\t' || src[i] == '\r') {
			i++
		}
		return i
	}
	for {
		i = skipSpace(i)
		if i >= len(src) {
			break
		}
		c := src[i]
		if c == '*' && kind != "vector" && len(shape) == 0 {
			if i+1 >= len(src) || src[i+1] != 'x' {
				p.failAt(i, "expected 'x' in unranked %s type", kind)
				return nil
			}
			unranked = true
			i += 2
			break
		}
		isScalable := false
		j := i
		if c == '[' && kind == "vector" {
			isScalable = true
			j++
		}
		if j < len(src) && src[j] == '?' && kind != "vector" {
			x := skipSpace(j + 1)
			if x >= len(src) || src[x] != 'x' {
				p.failAt(x, "expected 'x' in dimension list")
				return nil
			}
			shape = append(shape, Dynamic)
			scalable = append(scalable, false)
			i = x + 1
			continue
		}
		k := j
		for k < len(src) && isDigit(src[k]) {
			k++
		}
		if k == j {
			if isScalable {
				p.failAt(j, "expected dimension size in scalable vector")
				return nil
			}
			break
		}
		d, err := strconv.ParseInt(src[j:k], 10, 64)
		if err != nil || d < 0 {
			p.failAt(j, "invalid dimension size")
			return nil
		}
		if isScalable {
			if k >= len(src) || src[k] != ']' {
				p.failAt(k, "missing ']' closing scalable dimension")
				return nil
			}
			k++
		}
		k = skipSpace(k)
		if k >= len(src) || src[k] != 'x' {
			// A bare integer here is not a dimension.
			p.failAt(k, "expected 'x' in dimension list")
			return nil
		}
		shape = append(shape, d)
		scalable = append(scalable, isScalable)
		i = k + 1
	}
	if !staticSizeFits(shape) {
		p.failAt(start, "%s type has more than 2^63-1 elements", kind)
		return nil
	}
	p.resetTo(i)
	elemPos := p.tok.pos
	elem := p.parseType()
	if p.err != nil {
		return nil
	}
	if !validElementType(kind, elem) {
		if kind == "vector" {
			p.failAt(elemPos, "vector elements must be int/index/float type, found '%s'", elem)
		} else {
			p.failAt(elemPos, "invalid %s element type, found '%s'", kind, elem)
		}
		return nil
	}
	switch kind {
	case "tensor":
		var enc Attribute
		if p.consumeIf(",") {
			enc = p.parseAttribute(nil)
		}
		if p.expect(">") != nil {
			return nil
		}
		if unranked {
			if enc != nil {
				p.Errorf("unranked tensor cannot have an encoding")
				return nil
			}
			return UnrankedTensorOf(elem)
		}
		return TensorWithEncoding(shape, elem, enc)
	case "memref":
		var layout, space Attribute
		if p.consumeIf(",") {
			layoutPos := p.tok.pos
			if p.is(">") {
				p.Errorf("expected list element, found %s", p.describe())
				return nil
			}
			a := p.parseAttribute(nil)
			if o, ok := a.(OpaqueAttr); ok && strings.HasPrefix(o.Text, "affine_map<") && !unranked {
				if n, _ := checkAffine(o.Text, len("affine_map"), "affine_map"); n != len(shape) {
					p.failAt(layoutPos, "memref layout mismatch between rank and affine map: %d != %d", len(shape), n)
					return nil
				}
			}
			if isLayoutAttr(a) && !unranked {
				layout = a
				if p.consumeIf(",") {
					space = p.parseAttribute(nil)
				}
			} else {
				space = a
			}
			// Nothing may follow the memory space.
			if space != nil && p.consumeIf(",") {
				extraPos := p.tok.pos
				if extra := p.parseAttribute(nil); p.err == nil && isLayoutAttr(extra) {
					p.failAt(extraPos, "expected memory space to be last in memref type")
				} else {
					p.failAt(extraPos, "multiple memory spaces specified in memref type")
				}
				return nil
			}
		}
		if _, isType := space.(TypeAttr); isType {
			p.failAt(start, "unsupported memory space Attribute: '%s'", space)
			return nil
		}
		if p.expect(">") != nil {
			return nil
		}
		if unranked {
			return UnrankedMemRefOf(elem, space)
		}
		return MemRefWith(shape, elem, layout, space)
	default:
		if p.expect(">") != nil {
			return nil
		}
		for _, d := range shape {
			if d == 0 {
				p.Errorf("vector types must have positive constant sizes")
				return nil
			}
		}
		return ScalableVectorOf(shape, scalable, elem)
	}
}

// validElementType reports whether elem may be the element type of a
// tensor, memref or vector type, as MLIR's builtin types allow.
func validElementType(kind string, elem Type) bool {
	switch elem.(type) {
	case *IntegerType, *FloatType, *IndexType:
		return true
	case *ComplexType, *VectorType, *OpaqueType:
		return kind != "vector"
	case *MemRefType:
		return kind == "memref"
	}
	return false
}

func isLayoutAttr(a Attribute) bool {
	o, ok := a.(OpaqueAttr)
	return ok && (strings.HasPrefix(o.Text, "affine_map<") || strings.HasPrefix(o.Text, "strided<"))
}
