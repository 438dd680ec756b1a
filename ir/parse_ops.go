package ir

// Parsing of operations (generic and custom form), their regions, blocks
// and successors.

import (
	"slices"
	"strconv"
	"strings"
)

// --- operations ---

type resultGroup struct {
	name  string
	count int
	pos   int
}

func (p *Parser) parseOperation() *Operation {
	if !p.enter() {
		return nil
	}
	defer p.leave()
	var groups []resultGroup
	if p.tok.kind == tokValueID {
		for {
			if p.tok.kind != tokValueID {
				p.Errorf("expected valid ssa identifier, found %s", p.describe())
				return nil
			}
			g := resultGroup{name: p.tok.text, count: 1, pos: p.tok.pos}
			p.advance()
			if p.is(":") {
				p.advance()
				countPos := p.tok.pos
				n, ok := p.parseUint()
				if !ok {
					p.Errorf("expected integer number of results")
					return nil
				}
				if n < 1 {
					p.failAt(countPos, "expected named operation to have at least 1 result")
					return nil
				}
				g.count = n
			}
			groups = append(groups, g)
			if !p.consumeIf(",") {
				break
			}
		}
		if !p.consumeIf("=") {
			p.wrongToken("expected '=' after SSA name, found %s", p.describe())
			return nil
		}
	}
	total := 0
	for _, g := range groups {
		total += g.count
	}
	namePos := p.tok.pos
	var op *Operation
	switch p.tok.kind {
	case tokString:
		op = p.parseGenericOp()
	case tokBareIdent:
		if parseIntegerTypeName(p.tok.text) != nil {
			// An integer type is a token of its own in MLIR, not an op name.
			p.wrongToken("expected operation name in quotes, found %s", p.describe())
			return nil
		}
		op = p.parseCustomOp(total)
	default:
		p.wrongToken("expected operation name in quotes, found %s", p.describe())
		return nil
	}
	if op == nil || p.err != nil {
		return nil
	}
	if p.is("loc") {
		loc := p.parseLocationInto(func(l Location) { op.loc = l })
		if loc != nil {
			op.loc = loc
		}
	}
	if len(groups) > 0 && op.NumResults() == 0 {
		p.failAt(namePos, "cannot name an operation with no results")
		return nil
	}
	if len(groups) > 0 && total != op.NumResults() {
		p.failAt(namePos, "operation defines %d results but was provided %d to bind", op.NumResults(), total)
		return nil
	}
	i := 0
	for _, g := range groups {
		p.defineValues(g.name, op.results[i:i+g.count], g.pos)
		i += g.count
	}
	return op
}

func (p *Parser) parseUint() (int, bool) {
	if p.tok.kind != tokInteger {
		return 0, false
	}
	n, err := strconv.ParseInt(p.tok.text, 0, 32)
	if err != nil {
		return 0, false
	}
	p.advance()
	return int(n), true
}

type operandRef struct {
	name string
	idx  int
	pos  int
}

func (p *Parser) parseOperandRef() (operandRef, bool) {
	if p.tok.kind != tokValueID {
		p.Errorf("expected SSA operand, found %s", p.describe())
		return operandRef{}, false
	}
	r := operandRef{name: p.tok.text, pos: p.tok.pos}
	// A result number is glued to the name: %x#2.
	end := p.tok.pos + len(p.tok.text)
	if end < len(p.lex.src) && p.lex.src[end] == '#' {
		j := end + 1
		for j < len(p.lex.src) && isDigit(p.lex.src[j]) {
			j++
		}
		if j == end+1 {
			p.failAt(end, "expected result number after '#'")
			return operandRef{}, false
		}
		n, err := strconv.Atoi(p.lex.src[end+1 : j])
		if err != nil {
			p.failAt(end, "invalid result number")
			return operandRef{}, false
		}
		r.idx = n
		p.resetTo(j)
		return r, true
	}
	p.advance()
	return r, true
}

func (p *Parser) lookupOpDef(name string, pos int) *OpDef {
	if def := p.ctx.OpDef(name); def != nil {
		return def
	}
	if p.ctx != nil && p.ctx.AllowUnregistered {
		return nil
	}
	if p.ctx != nil && p.ctx.Dialect(DialectOf(name)) != nil {
		p.failAt(pos, "unregistered operation '%s' found in dialect ('%s') that does not allow unknown operations", name, DialectOf(name))
	} else {
		p.failAt(pos, "operation '%s' is unregistered: its dialect '%s' is not loaded (use --allow-unregistered-dialect to accept it)", name, DialectOf(name))
	}
	return nil
}

func (p *Parser) parseGenericOp() *Operation {
	namePos := p.tok.pos
	// Op names repeat: each distinct one is unquoted and allocated once.
	name, ok := p.opNames[p.tok.text]
	if !ok {
		if name, ok = unquote(p.tok.text); !ok {
			p.Errorf("invalid escape in operation name")
			return nil
		}
		if p.opNames == nil {
			p.opNames = map[string]string{}
		}
		p.opNames[p.tok.text] = name
	}
	if name == "" {
		p.Errorf("empty operation name is invalid")
		return nil
	}
	p.advance()
	def := p.lookupOpDef(name, namePos)
	if p.err != nil {
		return nil
	}
	st := OperationState{Name: name, Loc: p.posLoc(namePos)}
	var refs []operandRef
	if p.expect("(") != nil {
		return nil
	}
	if !p.is(")") {
		for {
			r, ok := p.parseOperandRef()
			if !ok {
				return nil
			}
			refs = append(refs, r)
			if !p.consumeIf(",") {
				break
			}
		}
	}
	if p.expect(")") != nil {
		return nil
	}
	if p.consumeIf("[") {
		for {
			b := p.parseSuccessorRef()
			if b == nil {
				return nil
			}
			st.Successors = append(st.Successors, b)
			if !p.consumeIf(",") {
				break
			}
		}
		if p.expect("]") != nil {
			return nil
		}
	}
	if p.is("<") {
		p.advance()
		if !p.is("{") {
			p.Errorf("expected '{' to start the properties, found %s", p.describe())
			return nil
		}
		st.Properties = p.parseDictBody()
		if p.expect(">") != nil {
			return nil
		}
	}
	isolated := def != nil && def.Traits&IsolatedFromAbove != 0
	if p.is("(") {
		p.advance()
		for {
			r := p.parseRegionIn(nil, isolated)
			if r == nil {
				return nil
			}
			st.Regions = append(st.Regions, r)
			if !p.consumeIf(",") {
				break
			}
		}
		if !p.want(")", "expected ')' to end region list") {
			return nil
		}
	}
	if p.is("{") {
		st.Attributes = p.parseDictBody()
	}
	if !p.consumeIf(":") {
		p.wrongToken("expected ':' followed by operation type, found %s", p.describe())
		return nil
	}
	typePos := p.tok.pos
	t := p.parseType()
	if p.err != nil {
		return nil
	}
	ft, ok := t.(*FunctionType)
	if !ok {
		p.failAt(typePos, "expected function type, found '%s'", t)
		return nil
	}
	if len(ft.Inputs) != len(refs) {
		p.failAt(typePos, "expected %d operand types but had %d", len(refs), len(ft.Inputs))
		return nil
	}
	for i, r := range refs {
		v := p.lookupValue(r.name, r.idx, ft.Inputs[i], r.pos)
		if v == nil {
			return nil
		}
		st.Operands = append(st.Operands, v)
	}
	st.ResultTypes = ft.Results
	if def != nil {
		moveInherent(def, &st)
	}
	return p.newOperation(st)
}

// newOperation creates the op st describes, sharing the pointer to each
// dictionary that parseDictBody cached among the ops that use it.
func (p *Parser) newOperation(st OperationState) *Operation {
	return newOperation(p.ctx, st.Name, st.Loc, st.Operands, st.ResultTypes, p.dictRef(st.Properties), p.dictRef(st.Attributes), st.Regions, st.Successors)
}

// dictRef is the package's dictRef, returning the shared pointer for a
// dictionary of parseDictBody's cache. Other dictionaries (custom parsers
// build one per op, with a default fastmath flag, say) are shared by their
// text when it is short: at most maxSharedDictText bytes, and up to
// maxSharedDicts different ones before the table starts afresh.
func (p *Parser) dictRef(d DictAttr) *DictAttr {
	if len(d) == 0 {
		return nil
	}
	if r := p.dictRefs[&d[0]]; r != nil && len(*r) == len(d) {
		return r
	}
	if len(d) > 2 || slices.ContainsFunc(d, func(na NamedAttr) bool { return !smallAttr(na.Value) }) {
		return dictRef(d)
	}
	p.dictText.Reset()
	d.writeEntries(&p.dictText)
	if p.dictText.Len() > maxSharedDictText {
		return dictRef(d)
	}
	if r := p.builtDicts[string(p.dictText.Bytes())]; r != nil {
		return r
	}
	if p.builtDicts == nil || len(p.builtDicts) >= maxSharedDicts {
		p.builtDicts = map[string]*DictAttr{}
	}
	r := dictRef(d)
	p.builtDicts[p.dictText.String()] = r
	return r
}

// smallAttr reports whether a is of a kind whose text is short, or as
// long as it was in the source at most, so that printing it to share its
// dictionary costs little: not an array, a dictionary or dense data.
func smallAttr(a Attribute) bool {
	switch a := a.(type) {
	case ArrayAttr, DictAttr, DenseArrayAttr, DenseAttr, DenseStringAttr, WideAttr:
		return false
	case StringAttr:
		return len(a.Value) <= maxSharedDictText
	case OpaqueAttr: // dialect attributes such as #arith.fastmath<fast>
		return len(a.Text) <= maxSharedDictText
	}
	return true
}

// maxSharedDictText is the longest text of a dictionary Parser.dictRef
// shares by text.
const maxSharedDictText = 64

// moveInherent moves inherent attributes given as discardable ones into the
// properties, as MLIR does for registered ops.
func moveInherent(def *OpDef, st *OperationState) {
	for _, name := range def.Inherent {
		if a := st.Attributes.Get(name); a != nil && st.Properties.Get(name) == nil {
			st.Properties = st.Properties.With(name, a)
			st.Attributes = st.Attributes.With(name, nil)
		}
	}
}

func (p *Parser) parseCustomOp(numResults int) *Operation {
	namePos := p.tok.pos
	name := p.tok.text
	p.advance()
	def := p.ctx.OpDef(name)
	if def == nil && !strings.Contains(name, ".") {
		for i := len(p.dialects) - 1; i >= 0 && def == nil; i-- {
			def = p.ctx.OpDef(p.dialects[i] + "." + name)
		}
		if def == nil {
			def = p.ctx.OpDef("builtin." + name)
		}
	}
	if def == nil || def.Parse == nil {
		if def == nil && p.ctx != nil && p.ctx.Dialect(DialectOf(name)) == nil && strings.Contains(name, ".") {
			p.failAt(namePos, "custom op '%s' is unknown: its dialect is not loaded (generic syntax \"%s\"(...) works with --allow-unregistered-dialect)", name, name)
		} else if def == nil && !strings.Contains(name, ".") && len(p.dialects) > 0 {
			p.failAt(namePos, "custom op '%s' is unknown (tried '%s.%s' as well)", name, p.dialects[len(p.dialects)-1], name)
		} else {
			p.failAt(namePos, "custom op '%s' is unknown", name)
		}
		return nil
	}
	st := OperationState{Name: def.Name, Loc: p.posLoc(namePos)}
	savedN := p.numResults
	p.numResults = numResults
	if def.DefaultDialect != "" {
		p.dialects = append(p.dialects, def.DefaultDialect)
	}
	err := def.Parse(p, &st)
	if def.DefaultDialect != "" {
		p.dialects = p.dialects[:len(p.dialects)-1]
	}
	p.numResults = savedN
	if err != nil {
		if p.err == nil {
			p.failAt(namePos, "%v", err)
		}
		return nil
	}
	if p.err != nil {
		return nil
	}
	return p.newOperation(st)
}

// NumResults returns how many results the op being parsed must define.
func (p *Parser) NumResults() int { return p.numResults }

// --- regions and blocks ---

// RegionArg is an entry-block argument declared by a custom syntax
// (such as a function signature).
type RegionArg struct {
	Name  string
	Type  Type
	Attrs DictAttr
	Loc   Location
	Pos   int
}

func (p *Parser) parseRegionIn(entryArgs []RegionArg, isolated bool) *Region {
	if !p.enter() {
		return nil
	}
	defer p.leave()
	if p.expect("{") != nil {
		return nil
	}
	r := NewRegion()
	p.pushScope(isolated)
	p.pushBlockScope()
	defer func() {
		p.popBlockScope()
		p.popScope()
	}()
	if p.consumeIf("}") {
		if len(entryArgs) > 0 {
			entry := NewBlock()
			for _, a := range entryArgs {
				entry.AddArgument(a.Type)
			}
			r.Append(entry)
		}
		return r
	}
	var cur *Block
	if len(entryArgs) > 0 || p.tok.kind != tokBlockID {
		cur = NewBlock()
		for _, a := range entryArgs {
			v := cur.AddArgument(a.Type)
			if a.Loc != nil {
				v.SetArgLoc(a.Loc)
			} else {
				v.SetArgLoc(p.posLoc(a.Pos))
			}
			p.defineValues(a.Name, []*Value{v}, a.Pos)
		}
		r.Append(cur)
		if len(entryArgs) > 0 && p.tok.kind == tokBlockID {
			p.Errorf("invalid block name in region with named arguments")
			return nil
		}
	}
	for p.err == nil && !p.is("}") {
		if p.tok.kind == tokEOF {
			p.Errorf("expected '}' to end the region")
			return nil
		}
		if p.tok.kind == tokBlockID {
			cur = p.parseBlockHeader()
			if cur == nil {
				return nil
			}
			r.Append(cur)
			continue
		}
		if op := p.parseOperation(); op != nil {
			cur.Append(op)
		}
	}
	if p.err != nil {
		return nil
	}
	p.advance()
	return r
}

func (p *Parser) blockNamed(name string, pos int) *Block {
	s := p.blockScopes[len(p.blockScopes)-1]
	b, ok := s.blocks[name]
	if !ok {
		b = NewBlock()
		s.blocks[name] = b
		s.firstAt[b] = pos
	}
	return b
}

func (p *Parser) parseBlockHeader() *Block {
	name, pos := p.tok.text, p.tok.pos
	p.advance()
	b := p.blockNamed(name, pos)
	s := p.blockScopes[len(p.blockScopes)-1]
	if s.defined[b] {
		p.failAt(pos, "redefinition of block '%s'", name)
		return nil
	}
	s.defined[b] = true
	if p.consumeIf("(") {
		if !p.is(")") {
			for {
				if p.tok.kind != tokValueID {
					p.wrongToken("expected SSA operand, found %s", p.describe())
					return nil
				}
				an, apos := p.tok.text, p.tok.pos
				p.advance()
				if !p.consumeIf(":") {
					p.wrongToken("expected ':' and type for SSA operand, found %s", p.describe())
					return nil
				}
				t := p.parseType()
				if p.err != nil {
					return nil
				}
				v := b.AddArgument(t)
				v.SetArgLoc(p.posLoc(apos))
				if p.is("loc") {
					if l := p.parseLocationInto(v.SetArgLoc); l != nil {
						v.SetArgLoc(l)
					}
				}
				p.defineValues(an, []*Value{v}, apos)
				if !p.consumeIf(",") {
					break
				}
			}
		}
		if p.expect(")") != nil {
			return nil
		}
	}
	if !p.consumeIf(":") {
		p.wrongToken("expected ':' after block name, found %s", p.describe())
		return nil
	}
	return b
}

func (p *Parser) parseSuccessorRef() *Block {
	if p.tok.kind != tokBlockID {
		p.Errorf("expected block name, found %s", p.describe())
		return nil
	}
	if len(p.blockScopes) <= 1 {
		p.Errorf("branch target outside of a region")
		return nil
	}
	b := p.blockNamed(p.tok.text, p.tok.pos)
	p.advance()
	return b
}
