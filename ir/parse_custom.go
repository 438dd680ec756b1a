package ir

// The Parser API that dialects' custom syntax (OpDef.Parse) is written
// with, as MLIR's OpAsmParser.

import ()

// --- helpers for custom syntax ---

// UnresolvedOperand is an SSA use parsed before its type is known.
type UnresolvedOperand struct {
	Name string
	Num  int
	Pos  int
}

// ParseOperand parses %name or %name#N.
func (p *Parser) ParseOperand() (UnresolvedOperand, error) {
	r, ok := p.parseOperandRef()
	if !ok {
		return UnresolvedOperand{}, p.err
	}
	return UnresolvedOperand{r.name, r.idx, r.pos}, nil
}

// IsOperand reports whether the current token starts an operand.
func (p *Parser) IsOperand() bool { return p.tok.kind == tokValueID }

// ParseOperandList parses zero or more comma-separated operands.
func (p *Parser) ParseOperandList() ([]UnresolvedOperand, error) {
	var out []UnresolvedOperand
	if !p.IsOperand() {
		return nil, p.err
	}
	for {
		o, err := p.ParseOperand()
		if err != nil {
			return nil, err
		}
		out = append(out, o)
		if !p.consumeIf(",") {
			return out, nil
		}
	}
}

// Resolve looks up operand o, which must have type t.
func (p *Parser) Resolve(o UnresolvedOperand, t Type) (*Value, error) {
	v := p.lookupValue(o.Name, o.Num, t, o.Pos)
	if v == nil {
		return nil, p.err
	}
	return v, nil
}

// ResolveAll resolves operands against types, which must be as many.
func (p *Parser) ResolveAll(os []UnresolvedOperand, ts []Type, pos int) ([]*Value, error) {
	if len(os) != len(ts) {
		return nil, p.ErrorAt(pos, "%d operands present, but expected %d", len(os), len(ts))
	}
	vs := make([]*Value, len(os))
	for i, o := range os {
		v, err := p.Resolve(o, ts[i])
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	return vs, nil
}

// ConsumeIf consumes the punctuation or keyword s if it is next.
func (p *Parser) ConsumeIf(s string) bool { return p.err == nil && p.consumeIf(s) }

// Expect consumes the punctuation or keyword s, or fails.
func (p *Parser) Expect(s string) error { return p.expect(s) }

// Is reports whether the next token is the punctuation or keyword s.
func (p *Parser) Is(s string) bool { return p.is(s) }

// ParseKeyword parses a bare identifier and returns it.
func (p *Parser) ParseKeyword() (string, error) {
	if p.err != nil {
		return "", p.err
	}
	if p.tok.kind != tokBareIdent {
		return "", p.Errorf("expected keyword, found %s", p.describe())
	}
	s := p.keep(p.tok.text)
	p.advance()
	return s, nil
}

// IsKeyword reports whether the next token is a bare identifier.
func (p *Parser) IsKeyword() bool { return p.tok.kind == tokBareIdent }

// ParseSymbolName parses @name.
func (p *Parser) ParseSymbolName() (string, error) {
	if p.err != nil {
		return "", p.err
	}
	if p.tok.kind != tokSymbol {
		return "", p.Errorf("expected valid '@'-identifier for symbol name, found %s", p.describe())
	}
	s := p.symbolText()
	p.advance()
	return s, nil
}

// IsSymbol reports whether the next token is an @symbol.
func (p *Parser) IsSymbol() bool { return p.tok.kind == tokSymbol }

// IsString reports whether the next token is a string literal.
func (p *Parser) IsString() bool { return p.tok.kind == tokString }

// ParseString parses a string literal.
func (p *Parser) ParseString() (string, error) {
	if p.err != nil {
		return "", p.err
	}
	if p.tok.kind != tokString {
		return "", p.Errorf("expected string, found %s", p.describe())
	}
	s, ok := unquote(p.tok.text)
	if !ok {
		return "", p.Errorf("invalid escape in string")
	}
	p.advance()
	return s, nil
}

// ParseInteger parses an optionally negative integer literal.
func (p *Parser) ParseInteger() (int64, error) {
	if p.err != nil {
		return 0, p.err
	}
	neg := p.consumeIf("-")
	if p.tok.kind != tokInteger {
		return 0, p.Errorf("expected integer, found %s", p.describe())
	}
	v, err := parseIntLiteral(p.tok.text, neg, I64)
	if err != nil {
		return 0, p.Errorf("%v", err)
	}
	p.advance()
	return v, nil
}

// IsInteger reports whether the next token is an integer literal.
func (p *Parser) IsInteger() bool { return p.tok.kind == tokInteger }

// ParseOptionalAttrDict parses {...} if present.
func (p *Parser) ParseOptionalAttrDict() (DictAttr, error) {
	if !p.is("{") {
		return nil, p.err
	}
	d := p.parseDictBody()
	return d, p.err
}

// ParseOptionalAttrDictWithKeyword parses "attributes {...}" if present.
func (p *Parser) ParseOptionalAttrDictWithKeyword() (DictAttr, error) {
	if !p.consumeIf("attributes") {
		return nil, p.err
	}
	if !p.is("{") {
		return nil, p.Errorf("expected '{' after 'attributes'")
	}
	return p.ParseOptionalAttrDict()
}

// ParseColonType parses ": type".
func (p *Parser) ParseColonType() (Type, error) {
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	return p.ParseType()
}

// ParseTypeList parses one or more comma-separated types.
func (p *Parser) ParseTypeList() ([]Type, error) {
	var ts []Type
	for {
		t := p.parseType()
		if p.err != nil {
			return nil, p.err
		}
		ts = append(ts, t)
		if !p.consumeIf(",") {
			return ts, nil
		}
	}
}

// ParseColonTypeList parses ": type, type, ...".
func (p *Parser) ParseColonTypeList() ([]Type, error) {
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	return p.ParseTypeList()
}

// ParseResultTypes parses a function result list: a type or (types).
func (p *Parser) ParseResultTypes() ([]Type, error) {
	ts := p.parseResultTypeList()
	return ts, p.err
}

// ParseRegion parses a region whose entry block has the given arguments.
func (p *Parser) ParseRegion(args []RegionArg, isolated bool) (*Region, error) {
	r := p.parseRegionIn(args, isolated)
	return r, p.err
}

// IsRegion reports whether a region ('{') follows.
func (p *Parser) IsRegion() bool { return p.is("{") }

// ParseSuccessor parses ^bb.
func (p *Parser) ParseSuccessor() (*Block, error) {
	b := p.parseSuccessorRef()
	return b, p.err
}

// IsSuccessor reports whether a block reference follows.
func (p *Parser) IsSuccessor() bool { return p.tok.kind == tokBlockID }

// ParseArgument parses "%name : type [{attrs}] [loc(...)]" as in a function signature.
func (p *Parser) ParseArgument() (RegionArg, error) {
	if p.tok.kind != tokValueID {
		return RegionArg{}, p.Errorf("expected SSA identifier, found %s", p.describe())
	}
	a := RegionArg{Name: p.tok.text, Pos: p.tok.pos}
	p.advance()
	t, err := p.ParseColonType()
	if err != nil {
		return a, err
	}
	a.Type = t
	if a.Attrs, err = p.ParseOptionalAttrDict(); err != nil {
		return a, err
	}
	if p.is("loc") {
		a.Loc = p.parseLocationInto(func(Location) {})
	}
	return a, p.err
}

// ParseOptionalLocation parses a trailing loc(...) if present.
func (p *Parser) ParseOptionalLocation() (Location, error) {
	if !p.is("loc") {
		return nil, p.err
	}
	return p.parseLocationInto(func(Location) {}), p.err
}

// FloatLiteral parses an optionally negative float or integer literal as a
// float of type t (hex integers are bit patterns).
func (p *Parser) FloatLiteral(t *FloatType) (FloatAttr, error) {
	pos := p.tok.pos
	neg := p.consumeIf("-")
	lit := p.tok
	if lit.kind != tokFloat && lit.kind != tokInteger {
		return FloatAttr{}, p.Errorf("expected float literal, found %s", p.describe())
	}
	p.advance()
	a, err := literalAttr(lit, neg, t)
	if err != nil {
		return FloatAttr{}, p.ErrorAt(pos, "%v", err)
	}
	return a.(FloatAttr), nil
}
