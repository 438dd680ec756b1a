package ir

// Parsing of locations: loc(...) and the forward-referenced #loc aliases.

// --- locations ---

func (p *Parser) parseLocation() Location {
	return p.parseLocationInto(nil)
}

// parseLocationInto parses loc(...). A reference to a location alias defined
// later in the file returns nil and calls set once the alias is known.
func (p *Parser) parseLocationInto(set func(Location)) Location {
	if p.expect("loc") != nil || !p.want("(", "expected '(' in location") {
		return nil
	}
	if p.tok.kind == tokHashIdent {
		name, pos := p.tok.text, p.tok.pos
		p.advance()
		if !p.want(")", "expected ')' in location") {
			return nil
		}
		if l, ok := p.locAliases[name]; ok {
			if !p.chargeAlias(name, pos) {
				return nil
			}
			return l
		}
		if a, ok := p.attrAliases[name]; ok {
			p.failAt(pos, "expected location, but found '%s'", a)
			return nil
		}
		if set == nil {
			p.failAt(pos, "operation location alias was never defined: '%s'", name[1:])
			return nil
		}
		p.pendingLocs = append(p.pendingLocs, pendingLoc{alias: name, pos: pos, set: set})
		return nil
	}
	l := p.parseLocBody()
	if !p.want(")", "expected ')' in location") {
		return nil
	}
	return l
}

// want consumes the punctuation or keyword s, or records msg (with what
// was found) and returns false.
func (p *Parser) want(s, msg string) bool {
	if p.err != nil {
		return false
	}
	if !p.consumeIf(s) {
		p.wrongToken("%s, found %s", msg, p.describe())
		return false
	}
	return true
}

func (p *Parser) parseLocBody() Location {
	if !p.enter() {
		return nil
	}
	defer p.leave()
	switch {
	case p.is("unknown"):
		p.advance()
		return UnknownLoc{}
	case p.is("callsite"):
		p.advance()
		if !p.want("(", "expected '(' in callsite location") {
			return nil
		}
		callee := p.parseLocBody()
		if !p.want("at", "expected 'at' in callsite location") {
			return nil
		}
		caller := p.parseLocBody()
		if !p.want(")", "expected ')' in callsite location") {
			return nil
		}
		return CallSiteLoc{Callee: callee, Caller: caller}
	case p.is("fused"):
		p.advance()
		var l FusedLoc
		if p.consumeIf("<") {
			l.Metadata = p.parseAttribute(nil)
			if !p.want(">", "expected '>' after fused location metadata") {
				return nil
			}
		}
		if !p.want("[", "expected '[' in fused location") {
			return nil
		}
		if !p.is("]") {
			for {
				l.Locs = append(l.Locs, p.parseLocBody())
				if p.err != nil || !p.consumeIf(",") {
					break
				}
			}
		}
		if !p.want("]", "expected ']' in fused location") {
			return nil
		}
		return l
	case p.tok.kind == tokHashIdent:
		name, pos := p.tok.text, p.tok.pos
		p.advance()
		if l, ok := p.locAliases[name]; ok {
			if !p.chargeAlias(name, pos) {
				return nil
			}
			return l
		}
		p.Errorf("undefined location alias '%s'", name[1:])
		return nil
	case p.tok.kind == tokString:
		s, ok := unquote(p.tok.text)
		if !ok {
			p.Errorf("invalid escape in string")
			return nil
		}
		p.advance()
		if p.consumeIf(":") {
			line, ok1 := p.parseUint()
			if !ok1 || p.expect(":") != nil {
				p.Errorf("expected line:column in file location")
				return nil
			}
			col, ok2 := p.parseUint()
			if !ok2 {
				p.Errorf("expected column number in file location")
				return nil
			}
			return FileLineColLoc{File: s, Line: line, Col: col}
		}
		if p.consumeIf("(") {
			child := p.parseLocBody()
			if !p.want(")", "expected ')' after child location of NameLoc") {
				return nil
			}
			return NameLoc{Name: s, Child: child}
		}
		return NameLoc{Name: s}
	}
	p.wrongToken("expected location instance, found %s", p.describe())
	return nil
}
