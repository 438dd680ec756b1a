package ir

// Parsing of attributes: dictionaries, scalars, arrays, dense elements and
// dense arrays.

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// --- attributes ---

// ParseAttribute parses an attribute; typ, when not nil, is the type that an
// untyped literal takes.
func (p *Parser) ParseAttribute(typ Type) (Attribute, error) {
	a := p.parseAttribute(typ)
	return a, p.err
}

// parseDictBody reads `{name = value, ...}`. Dictionaries are cached by
// their source text, as top-level types are (see parseType): ops repeat the
// same few property and attribute dictionaries, and equal ones then share
// one DictAttr (attributes are immutable values), which saves both the
// parsing and the memory of a copy per op; ops share the pointer to it too
// (Parser.newOperation). A dictionary that uses aliases
// is not cached, so that every use is charged to the expansion bound.
func (p *Parser) parseDictBody() DictAttr {
	start, end := p.tok.pos, -1
	if p.err == nil && p.is("{") {
		end = dictExtent(p.lex.src, start)
	}
	if end > start {
		if d, ok := p.dictCache[p.lex.src[start:end]]; ok {
			p.resetTo(end)
			return d
		}
	}
	expansion := p.expansion
	d := p.parseDictBodyUncached()
	if p.err == nil && end > start && p.prevEnd == end && p.expansion == expansion {
		if p.dictCache == nil {
			p.dictCache = map[string]DictAttr{}
			p.dictRefs = map[*NamedAttr]*DictAttr{}
		}
		p.dictCache[p.lex.src[start:end]] = d
		if len(d) > 0 {
			p.dictRefs[&d[0]] = dictRef(d)
		}
	}
	return d
}

// dictExtent returns the end of the `{...}` text starting at pos, by
// matching braces outside string literals, or -1.
func dictExtent(src string, pos int) int {
	depth := 0
	for i := pos; i < len(src); i++ {
		switch src[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		}
	}
	return -1
}

func (p *Parser) parseDictBodyUncached() DictAttr {
	if p.expect("{") != nil {
		return nil
	}
	var d DictAttr
	seen := map[string]bool{}
	if !p.is("}") {
		for {
			var name string
			pos := p.tok.pos
			switch p.tok.kind {
			case tokBareIdent:
				name = p.keep(p.tok.text)
			case tokString:
				s, ok := unquote(p.tok.text)
				if !ok {
					p.Errorf("invalid escape in attribute name")
					return nil
				}
				name = s
			default:
				p.Errorf("expected attribute name, found %s", p.describe())
				return nil
			}
			if name == "" {
				p.Errorf("expected valid attribute name")
				return nil
			}
			p.advance()
			var v Attribute = UnitAttr{}
			if p.consumeIf("=") {
				v = p.parseAttribute(nil)
				if p.err != nil {
					return nil
				}
			}
			if seen[name] {
				p.failAt(pos, "duplicate key '%s' in dictionary attribute", name)
				return nil
			}
			seen[name] = true
			d = append(d, NamedAttr{name, v})
			if !p.consumeIf(",") {
				break
			}
		}
	}
	if p.expect("}") != nil {
		return nil
	}
	sort.Slice(d, func(i, j int) bool { return d[i].Name < d[j].Name })
	return d
}

func (p *Parser) parseAttribute(typ Type) Attribute {
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
		switch p.tok.text {
		case "[":
			p.advance()
			arr := ArrayAttr{}
			if !p.is("]") {
				for {
					arr = append(arr, p.parseAttribute(nil))
					if p.err != nil || !p.consumeIf(",") {
						break
					}
				}
			}
			if !p.want("]", "expected ',' or ']'") {
				return nil
			}
			return arr
		case "{":
			d := p.parseDictBody()
			if d == nil {
				d = DictAttr{}
			}
			return d
		case "-":
			return p.parseNumberAttr(typ)
		case "(":
			return TypeAttr{p.parseType()}
		}
	case tokInteger, tokFloat:
		return p.parseNumberAttr(typ)
	case tokString:
		s, ok := unquote(p.tok.text)
		if !ok {
			p.Errorf("invalid escape sequence in string")
			return nil
		}
		p.advance()
		a := StringAttr{Value: s}
		if p.consumeIf(":") {
			a.Type = p.parseType()
		}
		return a
	case tokSymbol:
		ref := SymbolRefAttr{Root: p.symbolText()}
		p.advance()
		for p.is("::") {
			p.advance()
			if p.tok.kind != tokSymbol {
				p.Errorf("expected nested symbol reference identifier")
				return nil
			}
			ref.Nested = append(ref.Nested, p.symbolText())
			p.advance()
		}
		return ref
	case tokHashIdent:
		name := p.keep(p.tok.text)
		if a, ok := p.attrAliases[name]; ok {
			if !p.chargeAlias(name, p.tok.pos) {
				return nil
			}
			p.advance()
			return a
		}
		if l, ok := p.locAliases[name]; ok { // a location used as an attribute
			if !p.chargeAlias(name, p.tok.pos) {
				return nil
			}
			p.advance()
			return OpaqueAttr{Text: "loc(" + l.String() + ")"}
		}
		p.advance()
		body := ""
		if p.tok.pos == pos+len(name) && p.is("<") {
			body = p.scanBalanced()
		}
		if p.err != nil {
			return nil
		}
		if !strings.Contains(name, ".") && body == "" {
			p.failAt(pos, "undefined symbol alias id '%s'", name[1:])
			return nil
		}
		a := OpaqueAttr{Text: name + body}
		if typ == nil && p.is(":") {
			// A dialect attribute may carry a type, "#foo.attr : i32", as
			// upstream reads it wherever no type is implied.
			return p.typedOpaque(a)
		}
		return a
	case tokBangIdent:
		return TypeAttr{p.parseType()}
	case tokBareIdent:
		switch p.tok.text {
		case "true", "false":
			b := p.tok.text == "true"
			p.advance()
			return Bool(b)
		case "unit":
			p.advance()
			return UnitAttr{}
		case "dense":
			return p.parseDense()
		case "array":
			return p.parseDenseArray()
		case "affine_map", "affine_set", "strided", "dense_resource", "sparse", "opaque", "distinct":
			kw := p.tok.text
			p.advance()
			if kw == "distinct" {
				return p.parseDistinct(pos)
			}
			if kw == "dense_resource" {
				return p.parseDenseResource(pos)
			}
			if !p.is("<") {
				p.Errorf("expected '<' after '%s'", kw)
				return nil
			}
			if kw == "affine_map" || kw == "affine_set" {
				if _, err := checkAffine(p.lex.src, p.tok.pos, kw); err != nil {
					p.failAt(err.pos, "%s", err.msg)
					return nil
				}
			}
			body := p.scanBalanced()
			return p.maybeTyped(OpaqueAttr{Text: kw + body})
		case "loc":
			l := p.parseLocation()
			if l == nil {
				return nil
			}
			return OpaqueAttr{Text: "loc(" + l.String() + ")"}
		}
		if !startsType(p.tok.text) {
			p.wrongToken("expected attribute value, found %s", p.describe())
			return nil
		}
		t := p.parseType()
		if t == nil {
			p.failAt(pos, "expected attribute value")
			return nil
		}
		return TypeAttr{t}
	}
	p.wrongToken("expected attribute value, found %s", p.describe())
	return nil
}

// parseDistinct parses distinct[N]<attr> after the keyword (at pos),
// checking that every use of an ID refers to the same attribute. The
// attribute is kept as its text.
func (p *Parser) parseDistinct(pos int) Attribute {
	if !p.want("[", "expected '[' after 'distinct'") {
		return nil
	}
	if p.tok.kind != tokInteger {
		p.wrongToken("expected distinct ID, found %s", p.describe())
		return nil
	}
	id, err := strconv.ParseUint(p.tok.text, 0, 64)
	if err != nil {
		p.Errorf("expected an unsigned 64-bit integer, found %s", p.describe())
		return nil
	}
	p.advance()
	if !p.want("]", "expected ']' to close distinct ID") || !p.want("<", "expected '<' after distinct ID") {
		return nil
	}
	a := p.parseAttribute(nil)
	if p.err != nil || !p.want(">", "expected '>' to close distinct attribute") {
		return nil
	}
	if p.distinct == nil {
		p.distinct = map[uint64]string{}
	}
	if prev, ok := p.distinct[id]; ok && prev != a.String() {
		p.failAt(pos, "referenced attribute does not match previous definition: %s", prev)
		return nil
	}
	p.distinct[id] = a.String()
	return OpaqueAttr{Text: p.lex.src[pos:p.prevEnd]}
}

// parseDenseResource parses dense_resource<name> : shaped-type after the
// keyword (at pos), kept as its text.
func (p *Parser) parseDenseResource(pos int) Attribute {
	if !p.want("<", "expected '<' after 'dense_resource'") {
		return nil
	}
	if p.tok.kind != tokBareIdent && p.tok.kind != tokString {
		p.wrongToken("expected resource handle, found %s", p.describe())
		return nil
	}
	p.advance()
	if !p.want(">", "expected '>'") {
		return nil
	}
	text := p.lex.src[pos:p.prevEnd]
	if !p.want(":", "expected ':'") {
		return nil
	}
	typePos := p.tok.pos
	t := p.parseType()
	if p.err != nil {
		return nil
	}
	if _, ok := t.(ShapedType); !ok {
		p.failAt(typePos, "`dense_resource` expected a shaped type, found '%s'", t)
		return nil
	}
	return OpaqueAttr{Text: text + " : " + t.String()}
}

// startsType reports whether a bare identifier begins a builtin type.
func startsType(id string) bool {
	switch id {
	case "index", "none", "tensor", "memref", "vector", "complex", "tuple":
		return true
	}
	_, isFloat := floatTypes[id]
	return isFloat || parseIntegerTypeName(id) != nil
}

// maybeTyped keeps the ": type" that may follow an opaque attribute.
func (p *Parser) maybeTyped(a OpaqueAttr) Attribute {
	if p.is(":") && (strings.HasPrefix(a.Text, "dense_resource") || strings.HasPrefix(a.Text, "sparse") || strings.HasPrefix(a.Text, "opaque")) {
		return p.typedOpaque(a)
	}
	return a
}

// typedOpaque reads the ": type" after a, the parser at the colon.
func (p *Parser) typedOpaque(a OpaqueAttr) Attribute {
	p.advance()
	t := p.parseType()
	if t == nil {
		return nil
	}
	return OpaqueAttr{Text: a.Text + " : " + t.String()}
}

func (p *Parser) symbolText() string {
	s := p.tok.text[1:]
	if strings.HasPrefix(s, "\"") {
		u, _ := unquote(s)
		return u
	}
	return strings.Clone(s)
}

// parseNumberAttr parses [-]literal [: type].
func (p *Parser) parseNumberAttr(typ Type) Attribute {
	pos := p.tok.pos
	neg := p.consumeIf("-")
	if p.tok.kind != tokInteger && p.tok.kind != tokFloat {
		p.Errorf("expected integer or float literal, found %s", p.describe())
		return nil
	}
	lit := p.tok
	p.advance()
	if p.consumeIf(":") {
		typ = p.parseType()
		if p.err != nil {
			return nil
		}
	}
	if typ == nil {
		if lit.kind == tokFloat {
			typ = F64
		} else {
			typ = I64
		}
	}
	if IsFloat(typ) && lit.kind == tokInteger && !strings.HasPrefix(lit.text, "0x") {
		p.failLiteral(pos, errDecimalForFloat)
		return nil
	}
	a, err := literalAttr(lit, neg, typ)
	if err != nil {
		p.failAt(pos, "%v", err)
		return nil
	}
	return a
}

// literalAttr converts a numeric literal to an attribute of type typ.
func literalAttr(lit token, neg bool, typ Type) (Attribute, error) {
	switch t := typ.(type) {
	case *FloatType:
		if lit.kind == tokInteger {
			if strings.HasPrefix(lit.text, "0x") {
				if neg {
					return nil, errors.New("hexadecimal float literal should not have a leading minus")
				}
				if t.Width > 64 {
					return wideHexFloat(lit.text, t)
				}
				bits, err := strconv.ParseUint(lit.text[2:], 16, 64)
				if err != nil || (t.Width < 64 && bits>>uint(t.Width) != 0) {
					return nil, fmt.Errorf("hexadecimal float constant out of range for type %s", t)
				}
				if f64, ok := narrowBitsToFloat64(bits, t); ok {
					bits = f64
				}
				return FloatAttr{Bits: bits, Type: t}, nil
			}
		}
		v, err := strconv.ParseFloat(lit.text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("invalid floating point literal '%s'", lit.text)
		}
		if err != nil && t.Width > 64 {
			// f80 and f128 reach further than float64: keep the literal.
			text := lit.text
			if neg {
				text = "-" + text
			}
			return WideAttr{Value: text, Type: t}, nil
		}
		if neg {
			v = -v
		}
		if t == F32 {
			f, _ := strconv.ParseFloat(lit.text, 32)
			if neg {
				f = -f
			}
			v = f
		}
		return Float(v, t), nil
	case *IntegerType, *IndexType:
		if lit.kind == tokFloat {
			return nil, errors.New("unexpected decimal integer literal for a floating point value")
		}
		if IntWidth(typ) > 64 {
			// IntegerAttr holds 64 bits; wider literals are kept as text.
			return wideIntAttr(lit.text, neg, typ)
		}
		v, err := parseIntLiteral(lit.text, neg, typ)
		if err != nil {
			return nil, err
		}
		return IntegerAttr{Value: v, Type: typ}, nil
	}
	return nil, fmt.Errorf("invalid type '%s' for a numeric literal", typ)
}

// parseIntLiteral parses a decimal or hex literal and checks it fits typ.
func parseIntLiteral(text string, neg bool, typ Type) (int64, error) {
	if IntWidth(typ) > 64 {
		return 0, fmt.Errorf("integer types wider than 64 bits are not supported here (%s)", typ)
	}
	n, err := wideIntLiteral(text, neg, typ)
	if err != nil {
		return 0, err
	}
	var v int64
	if n.IsInt64() {
		v = n.Int64()
	} else {
		v = int64(n.Uint64())
	}
	return TruncInt(v, typ), nil
}

// wideIntLiteral parses an integer literal of any width and checks that it
// fits typ (signless integers accept both the signed and unsigned range).
func wideIntLiteral(text string, neg bool, typ Type) (*big.Int, error) {
	n := new(big.Int)
	if _, ok := n.SetString(text, 0); !ok {
		return nil, fmt.Errorf("invalid integer literal '%s'", text)
	}
	if neg {
		n.Neg(n)
	}
	width := IntWidth(typ)
	sign := Signless
	if it, ok := typ.(*IntegerType); ok {
		sign = it.Signedness
	}
	if neg && sign == Unsigned && n.Sign() != 0 {
		return nil, errors.New("negative integer literal not valid for unsigned integer type")
	}
	if width == 0 {
		if n.Sign() != 0 {
			return nil, errIntOutOfRange
		}
		return n, nil
	}
	lo := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), uint(width-1)))
	hi := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(width)), big.NewInt(1))
	switch sign {
	case Signed:
		hi = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(width-1)), big.NewInt(1))
	case Unsigned:
		lo = big.NewInt(0)
	}
	if width == 1 && sign == Signless {
		lo = big.NewInt(-1)
	}
	if n.Cmp(lo) < 0 || n.Cmp(hi) > 0 {
		return nil, errIntOutOfRange
	}
	return n, nil
}

var (
	// errIntOutOfRange is an integer literal too large for its type.
	errIntOutOfRange = errors.New("integer constant out of range for attribute")
	// errDecimalForFloat is an integer literal (not hex) given a float type.
	errDecimalForFloat = errors.New("unexpected decimal integer literal for a floating point value")
)

// failLiteral records a literal's error at pos; a decimal integer given a
// float type gets a note saying how to write the float.
func (p *Parser) failLiteral(pos int, err error) {
	if errors.Is(err, errDecimalForFloat) {
		p.failWithNote(p.posLoc(pos), "add a trailing dot to make the literal a float", pos, "%v", err)
		return
	}
	p.failAt(pos, "%v", err)
}

func (p *Parser) parseDenseArray() Attribute {
	p.advance()
	if !p.want("<", "expected '<' after 'array'") {
		return nil
	}
	typePos := p.tok.pos
	elem := p.parseType()
	if p.err != nil {
		return nil
	}
	a := DenseArrayAttr{Elem: elem}
	_, isFloat := elem.(*FloatType)
	if !isFloat && !IsInteger(elem) {
		p.failAt(typePos, "expected integer or float type, got: '%s'", elem)
		return nil
	}
	if w := IntWidth(elem); !isFloat && w != 1 && w%8 != 0 {
		p.failAt(typePos, "element type bitwidth must be a multiple of 8, found '%s'", elem)
		return nil
	}
	if !isFloat && IntWidth(elem) > 64 {
		// DenseArrayAttr holds int64 values, as MLIR's dense arrays hold at
		// most i64 elements.
		p.failAt(typePos, "array attribute element type '%s' is wider than 64 bits", elem)
		return nil
	}
	if !p.is(">") {
		if !p.want(":", "expected ':' after dense array type") {
			return nil
		}
		for {
			pos := p.tok.pos
			if elem == I1 && (p.is("true") || p.is("false")) {
				b := p.is("true")
				p.advance()
				a.Values = append(a.Values, map[bool]int64{true: 1, false: 0}[b])
			} else {
				neg := p.consumeIf("-")
				lit := p.tok
				if lit.kind != tokInteger && lit.kind != tokFloat {
					p.Errorf("expected array element literal, found %s", p.describe())
					return nil
				}
				p.advance()
				v, err := literalAttr(lit, neg, elem)
				if err != nil {
					p.failAt(pos, "%v", err)
					return nil
				}
				if isFloat {
					a.Floats = append(a.Floats, v.(FloatAttr).Value())
				} else {
					a.Values = append(a.Values, v.(IntegerAttr).Value)
				}
			}
			if !p.consumeIf(",") {
				break
			}
		}
	}
	if !p.want(">", "expected '>' to close an array attribute") {
		return nil
	}
	if isFloat && a.Floats == nil {
		a.Floats = []float64{}
	} else if !isFloat && a.Values == nil {
		a.Values = []int64{}
	}
	return a
}

// denseLit is one parsed element of a dense literal, before the type is known.
type denseLit struct {
	tok     token
	neg     bool
	boolean int // 0 none, 1 false, 2 true
	str     string
	isStr   bool
	complex []denseLit
	pos     int
}

func (p *Parser) parseDense() Attribute {
	p.advance()
	if p.tok.kind != tokPunct || p.tok.text != "<" {
		p.Errorf("expected '<' after 'dense'")
		return nil
	}
	p.advance()
	var (
		elems   []denseLit
		shape   []int64
		isSplat bool
		hexData []byte
		hexPos  int
		empty   bool
	)
	switch {
	case p.is(">"):
		empty = true
	case p.tok.kind == tokString && strings.HasPrefix(p.tok.text, `"0x`):
		hexPos = p.tok.pos
		s, _ := unquote(p.tok.text)
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			p.Errorf("expected hex data in elements literal")
			return nil
		}
		hexData = b
		p.advance()
	case p.is("["):
		var ok bool
		shape, ok = p.parseDenseList(&elems, 0)
		if !ok {
			return nil
		}
	default:
		e, ok := p.parseDenseElem()
		if !ok {
			return nil
		}
		elems = []denseLit{e}
		isSplat = true
	}
	if p.expect(">") != nil {
		return nil
	}
	if !p.is(":") {
		p.Errorf("expected ':' and a shaped type after the elements literal")
		return nil
	}
	p.advance()
	typePos := p.tok.pos
	t := p.parseType()
	if p.err != nil {
		return nil
	}
	st, ok := t.(ShapedType)
	if !ok {
		p.failAt(typePos, "elements literal must be a shaped type, found '%s'", t)
		return nil
	}
	if !st.Ranked() {
		p.failAt(typePos, "elements literal type must have static shape, found '%s'", t)
		return nil
	}
	if _, isMemref := t.(*MemRefType); isMemref {
		p.failAt(typePos, "elements literal type must be a tensor or vector, found '%s'", t)
		return nil
	}
	n := NumElements(st.Shape())
	if n < 0 {
		p.failAt(typePos, "elements literal type must have static shape, found '%s'", t)
		return nil
	}
	elemT := st.ElementType()
	scalarT := elemT
	k := 1
	if c, ok := elemT.(*ComplexType); ok {
		scalarT, k = c.Elem, 2
	}
	if empty {
		if n != 0 {
			p.failAt(typePos, "parsed zero elements, but type ('%s') expected at least 1", t)
			return nil
		}
		return DenseAttr{Type: st, Bits: []uint64{}}
	}
	if hexData != nil {
		sz := scalarBytes(scalarT) * k
		if !IsIntOrIndex(scalarT) && !IsFloat(scalarT) {
			p.failAt(hexPos, "hex elements literal needs an integer, index or float element type")
			return nil
		}
		if scalarT == I1 && k == 1 {
			return p.denseBitsHex(st, hexData, n, hexPos)
		}
		var count int64
		switch {
		case int64(len(hexData)) == n*int64(sz):
			count = n
		case len(hexData) == sz:
			count = 1
		default:
			p.failAt(hexPos, "elements hex data size is invalid for provided type: %d bytes for %d elements of %d bytes", len(hexData), n, sz)
			return nil
		}
		a := DenseAttr{Type: st, Splat: count == 1 && n != 1}
		ssz := scalarBytes(scalarT)
		for i := 0; i < int(count)*k; i++ {
			var bits uint64
			for j := 0; j < ssz; j++ {
				bits |= uint64(hexData[i*ssz+j]) << (8 * j)
			}
			if IsInteger(scalarT) {
				bits = uint64(TruncInt(int64(bits), scalarT))
			}
			if ft, ok := scalarT.(*FloatType); ok {
				if f64, ok := narrowBitsToFloat64(bits, ft); ok {
					bits = f64
				}
			}
			a.Bits = append(a.Bits, bits)
		}
		return a
	}
	if !isSplat {
		if !slices.Equal(shape, st.Shape()) {
			p.failAt(typePos, "inferred shape of elements literal (%s) does not match type (%s)", shapeString(shape), shapeString(st.Shape()))
			return nil
		}
	}
	if len(elems) == 0 {
		// dense<[]>, dense<[[], []]>: no elements, as dense<>.
		return DenseAttr{Type: st, Bits: []uint64{}}
	}
	if _, isOpaque := scalarT.(*OpaqueType); isOpaque || k == 1 && elems[0].isStr {
		var strs []string
		for _, e := range elems {
			if !e.isStr {
				p.failAt(e.pos, "expected string element")
				return nil
			}
			strs = append(strs, e.str)
		}
		return DenseStringAttr{Type: st, Values: strs}
	}
	if IsInteger(scalarT) && k == 1 && IntWidth(scalarT) > 64 {
		a, bad, err := wideDense(elems, st)
		if err != nil {
			p.failAt(elems[bad].pos, "%v", err)
			return nil
		}
		return a
	}
	a := DenseAttr{Type: st, Splat: isSplat && n != 1}
	for _, e := range elems {
		parts := []denseLit{e}
		if k == 2 {
			if e.complex == nil {
				p.failAt(e.pos, "expected complex element (real, imag)")
				return nil
			}
			parts = e.complex
		} else if e.complex != nil {
			p.failAt(e.pos, "unexpected complex element for type '%s'", elemT)
			return nil
		}
		for _, part := range parts {
			bits, err := denseScalar(part, scalarT)
			if err != nil {
				p.failAt(part.pos, "%v", err)
				return nil
			}
			a.Bits = append(a.Bits, bits)
		}
	}
	return a
}

// denseBitsHex decodes hex data of i1 elements, which MLIR packs eight to a
// byte, least significant bit first; a single 0x00 or 0xFF byte is a splat.
func (p *Parser) denseBitsHex(t ShapedType, data []byte, n int64, pos int) Attribute {
	if len(data) == 1 && (data[0] == 0 || data[0] == 0xFF) {
		return DenseAttr{Type: t, Bits: []uint64{uint64(data[0] & 1)}, Splat: n != 1}
	}
	if int64(len(data)) != (n+7)/8 {
		p.failAt(pos, "elements hex data size is invalid for provided type: %d bytes for %d elements of 1 bit", len(data), n)
		return nil
	}
	bits := make([]uint64, n)
	for i := range bits {
		bits[i] = uint64(data[i/8]>>(i%8)) & 1
	}
	return DenseAttr{Type: t, Bits: bits}
}

func shapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func denseScalar(e denseLit, t Type) (uint64, error) {
	if e.isStr {
		return 0, errors.New("unexpected string element in numeric elements literal")
	}
	if e.boolean != 0 {
		if t != I1 {
			if IsFloat(t) {
				return 0, errors.New("expected floating-point elements, but parsed integer")
			}
			return 0, errors.New("expected i1 type for 'true' or 'false' values")
		}
		return uint64(e.boolean - 1), nil
	}
	if IsFloat(t) && e.tok.kind == tokInteger && !strings.HasPrefix(e.tok.text, "0x") {
		return 0, errors.New("expected floating-point elements, but parsed integer")
	}
	if IsIntOrIndex(t) && e.tok.kind == tokFloat {
		return 0, errors.New("expected integer elements, but parsed floating-point")
	}
	if it, ok := t.(*IntegerType); ok && it.Signedness == Unsigned && e.neg {
		return 0, errors.New("expected unsigned integer elements, but parsed negative value")
	}
	a, err := literalAttr(e.tok, e.neg, t)
	if errors.Is(err, errIntOutOfRange) {
		return 0, errors.New("integer constant out of range for type")
	}
	if err != nil {
		return 0, err
	}
	switch a := a.(type) {
	case FloatAttr:
		return a.Bits, nil
	case IntegerAttr:
		return uint64(a.Value), nil
	}
	return 0, fmt.Errorf("invalid element type '%s'", t)
}

func (p *Parser) parseDenseElem() (denseLit, bool) {
	e := denseLit{pos: p.tok.pos}
	switch {
	case p.is("true"), p.is("false"):
		e.boolean = 1
		if p.is("true") {
			e.boolean = 2
		}
		p.advance()
	case p.tok.kind == tokString:
		s, ok := unquote(p.tok.text)
		if !ok {
			p.Errorf("invalid escape in string")
			return e, false
		}
		e.str, e.isStr = s, true
		p.advance()
	case p.is("("):
		p.advance()
		re, ok1 := p.parseDenseElem()
		if !ok1 || !p.want(",", "expected ',' between complex elements") {
			return e, false
		}
		im, ok2 := p.parseDenseElem()
		if !ok2 || !p.want(")", "expected ')' after complex elements") {
			return e, false
		}
		e.complex = []denseLit{re, im}
	default:
		e.neg = p.consumeIf("-")
		if p.tok.kind != tokInteger && p.tok.kind != tokFloat {
			p.Errorf("expected element literal of primitive type, found %s", p.describe())
			return e, false
		}
		e.tok = p.tok
		p.advance()
	}
	return e, p.err == nil
}

// parseDenseList parses a nested [...] literal, appending elements in
// row-major order, and returns the shape it implies.
func (p *Parser) parseDenseList(out *[]denseLit, depth int) ([]int64, bool) {
	if !p.enter() {
		return nil, false
	}
	defer p.leave()
	p.advance() // [
	var sub []int64
	count := int64(0)
	if p.is("]") {
		p.advance()
		return []int64{0}, true
	}
	for {
		var s []int64
		if p.is("[") {
			var ok bool
			s, ok = p.parseDenseList(out, depth+1)
			if !ok {
				return nil, false
			}
		} else {
			e, ok := p.parseDenseElem()
			if !ok {
				return nil, false
			}
			*out = append(*out, e)
			s = []int64{}
		}
		if count == 0 {
			sub = s
		} else if !slices.Equal(sub, s) {
			p.Errorf("tensor literal is invalid; ranks are not consistent between elements")
			return nil, false
		}
		count++
		if !p.consumeIf(",") {
			break
		}
	}
	if p.expect("]") != nil {
		return nil, false
	}
	return append([]int64{count}, sub...), true
}
