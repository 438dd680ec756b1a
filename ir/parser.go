package ir

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxNesting bounds how deeply regions, attributes and types may nest, so
// hostile input gets a diagnostic instead of exhausting the stack.
const maxNesting = 1000

// ParseOptions configure Parse.
type ParseOptions struct {
	// Filename is used in locations and diagnostics.
	Filename string
	// LineOffset is added to every line number (for --split-input-file chunks).
	LineOffset int
}

// Parse reads a module in MLIR's textual format (generic or custom syntax).
// Top-level ops are wrapped in a builtin.module unless the source is exactly
// one module op. The result is not verified.
func Parse(ctx *Context, src string, opts ParseOptions) (*Operation, error) {
	p := newParser(ctx, src, opts)
	return p.parseTopLevel()
}

// ParseString parses src with the file name "<string>".
func ParseString(ctx *Context, src string) (*Operation, error) {
	return Parse(ctx, src, ParseOptions{Filename: "<string>"})
}

// Parser reads MLIR's textual format. Dialects implementing custom syntax
// receive it in OpDef.Parse and use its exported methods.
type Parser struct {
	ctx   *Context
	lex   lexer
	tok   token
	opts  ParseOptions
	lines []int // byte offsets of line starts
	err   error
	depth int

	attrAliases map[string]Attribute
	typeAliases map[string]Type
	locAliases  map[string]Location
	pendingLocs []pendingLoc
	resources   string
	// aliasSize bounds the text each attribute, type and location alias stands for,
	// aliases it refers to expanded; expansion sums the sizes of the
	// aliases used so far (in the alias definition being parsed, or outside
	// definitions). See chargeAlias.
	aliasSize map[string]int64
	expansion int64

	scopes      []*valueScope
	blockScopes []*blockScope
	dialects    []string // default dialects of enclosing custom ops

	typeCache map[string]Type // top-level type text → type (see parseType)
	inType    bool            // inside parseType, where nothing is cached
	prevEnd   int             // end offset of the token before p.tok
	lastCol   colMark         // the last position posLoc computed

	// the op being parsed by a custom parser
	numResults int
}

type pendingLoc struct {
	alias string
	pos   int
	set   func(Location)
}

type valueScope struct {
	isolated bool
	defs     map[string][]*Value // name → values (result groups)
	forward  map[string]*forwardRef
}

type forwardRef struct {
	vals map[int]*Value
	pos  int
}

type blockScope struct {
	blocks  map[string]*Block
	defined map[*Block]bool
	firstAt map[*Block]int
}

func newParser(ctx *Context, src string, opts ParseOptions) *Parser {
	if opts.Filename == "" {
		opts.Filename = "<stdin>"
	}
	p := &Parser{
		ctx:         ctx,
		lex:         lexer{src: src},
		opts:        opts,
		attrAliases: map[string]Attribute{},
		typeAliases: map[string]Type{},
		locAliases:  map[string]Location{},
		aliasSize:   map[string]int64{},
	}
	p.lines = append(p.lines, 0)
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			p.lines = append(p.lines, i+1)
		}
	}
	if !utf8.ValidString(src) {
		i := 0
		for i < len(src) {
			r, size := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		p.failAt(i, "invalid UTF-8 in source")
	}
	p.advance()
	return p
}

// Ctx returns the context ops are registered in.
func (p *Parser) Ctx() *Context { return p.ctx }

// posLoc converts a byte offset into a file:line:col location.
func (p *Parser) posLoc(pos int) FileLineColLoc {
	line := sort.Search(len(p.lines), func(i int) bool { return p.lines[i] > pos }) - 1
	// Columns count runes from the line's start; positions mostly come in
	// order, so count on from the last one on the same line (a long line
	// of n values would cost n² otherwise).
	from, col := p.lines[line], 1
	if m := p.lastCol; m.col > 0 && m.line == line && m.pos <= pos {
		from, col = m.pos, m.col
	}
	col += utf8.RuneCountInString(p.lex.src[from:pos])
	p.lastCol = colMark{line: line, pos: pos, col: col}
	return FileLineColLoc{File: p.opts.Filename, Line: line + 1 + p.opts.LineOffset, Col: col}
}

// colMark is a position whose column posLoc has computed (col 0: none).
type colMark struct{ line, pos, col int }

// Loc returns the location of the current token.
func (p *Parser) Loc() Location { return p.posLoc(p.tok.pos) }

// Pos returns the byte offset of the current token, for later errors.
func (p *Parser) Pos() int { return p.tok.pos }

// Err returns the first error met, or nil.
func (p *Parser) Err() error { return p.err }

// Errorf records an error at the current token and returns it.
func (p *Parser) Errorf(format string, args ...any) error {
	return p.failAt(p.tok.pos, format, args...)
}

// ErrorAt records an error at byte offset pos and returns it.
func (p *Parser) ErrorAt(pos int, format string, args ...any) error {
	return p.failAt(pos, format, args...)
}

func (p *Parser) failAt(pos int, format string, args ...any) error {
	if p.err == nil {
		p.err = Errorf(p.posLoc(pos), format, args...)
	}
	return p.err
}

func (p *Parser) advance() {
	if p.err != nil {
		p.tok = token{kind: tokEOF, pos: p.tok.pos}
		return
	}
	p.prevEnd = p.tok.pos + len(p.tok.text)
	p.tok = p.lex.next()
	if p.tok.kind == tokError {
		p.failAt(p.tok.pos, "%s", p.tok.text)
		p.tok.kind = tokEOF
	}
}

// resetTo re-lexes from byte offset pos.
func (p *Parser) resetTo(pos int) {
	p.lex.pos = pos
	p.advance()
	p.prevEnd = pos
}

func (p *Parser) is(s string) bool {
	return (p.tok.kind == tokPunct || p.tok.kind == tokBareIdent) && p.tok.text == s
}

func (p *Parser) consumeIf(s string) bool {
	if p.is(s) {
		p.advance()
		return true
	}
	return false
}

func (p *Parser) describe() string {
	if p.tok.kind == tokEOF {
		return "end of file"
	}
	return "'" + p.tok.text + "'"
}

func (p *Parser) expect(s string) error {
	if p.err != nil {
		return p.err
	}
	if !p.consumeIf(s) {
		return p.Errorf("expected '%s', found %s", s, p.describe())
	}
	return nil
}

func (p *Parser) enter() bool {
	p.depth++
	if p.depth > maxNesting {
		p.Errorf("nesting deeper than %d levels", maxNesting)
		return false
	}
	return true
}

func (p *Parser) leave() { p.depth-- }

// --- top level ---

func (p *Parser) parseTopLevel() (*Operation, error) {
	body := NewBlock()
	p.pushScope(false)
	p.pushBlockScope()
	for p.err == nil && p.tok.kind != tokEOF {
		switch {
		case p.tok.kind == tokHashIdent && !strings.HasPrefix(p.tok.text, "#-}"):
			p.parseAttrAliasDef()
		case p.tok.kind == tokBangIdent:
			p.parseTypeAliasDef()
		case p.is("{-#"):
			p.parseResources()
		default:
			if op := p.parseOperation(); op != nil {
				body.Append(op)
			}
		}
	}
	p.popBlockScope()
	p.popScope()
	p.resolveLocs()
	if p.err != nil {
		return nil, p.err
	}
	ops := body.Ops()
	var module *Operation
	if len(ops) == 1 && ops[0].Name() == "builtin.module" {
		module = ops[0]
		module.Remove()
	} else {
		r := NewRegion()
		r.Append(body)
		module = NewOperation(p.ctx, OperationState{Name: "builtin.module", Regions: []*Region{r}, Loc: p.posLoc(0)})
	}
	if p.resources != "" {
		module.SetAttr(resourcesAttr, Str(p.resources))
	}
	return module, nil
}

// resourcesAttr carries a file's {-# ... #-} section through to the printer.
const resourcesAttr = "strata.file_resources"

func (p *Parser) parseAttrAliasDef() {
	name := p.tok.text
	pos := p.tok.pos
	p.advance()
	if p.expect("=") != nil {
		return
	}
	if p.is("loc") {
		done := p.measureAlias(name)
		loc := p.parseLocation()
		done()
		if _, dup := p.locAliases[name]; dup {
			p.failAt(pos, "redefinition of attribute alias id '%s'", name[1:])
		}
		p.locAliases[name] = loc
		return
	}
	if _, dup := p.attrAliases[name]; dup {
		p.failAt(pos, "redefinition of attribute alias id '%s'", name[1:])
		return
	}
	defer p.measureAlias(name)()
	a := p.parseAttribute(nil)
	if p.err == nil {
		p.attrAliases[name] = a
	}
}

// maxAliasExpansion is the least bound on how much text the aliases of a
// module may stand for: an alias can refer to aliases, so 30 lines that
// each use the previous alias twice stand for 2^30 copies of the first,
// which printing (aliases are printed in place) or building a type's key
// would expand. The bound is the larger of this and 64 times the input.
const maxAliasExpansion = 256 << 20

// measureAlias starts measuring the definition of the alias name, whose
// value is the next thing parsed; the returned function records its size:
// its text plus the sizes of the aliases it uses.
func (p *Parser) measureAlias(name string) func() {
	start, outer := p.tok.pos, p.expansion
	p.expansion = 0
	return func() {
		p.aliasSize[name] = int64(p.prevEnd-start) + p.expansion
		p.expansion = outer
	}
}

// chargeAlias adds the size of the alias name, used at pos, to the
// expansion so far, and fails when that exceeds the bound.
func (p *Parser) chargeAlias(name string, pos int) bool {
	p.expansion += p.aliasSize[name]
	if limit := max(maxAliasExpansion, 64*int64(len(p.lex.src))); p.expansion > limit {
		p.failAt(pos, "the aliases used here stand for more than %d MiB of text ('%s' alone for %d bytes), which printing would write out",
			limit>>20, name, p.aliasSize[name])
		return false
	}
	return true
}

func (p *Parser) parseTypeAliasDef() {
	name := p.tok.text
	pos := p.tok.pos
	p.advance()
	if p.expect("=") != nil {
		return
	}
	if _, dup := p.typeAliases[name]; dup {
		p.failAt(pos, "redefinition of type alias id '%s'", name[1:])
		return
	}
	defer p.measureAlias(name)()
	t := p.parseType()
	if p.err == nil {
		p.typeAliases[name] = t
	}
}

func (p *Parser) parseResources() {
	start := p.tok.pos
	end := strings.Index(p.lex.src[start:], "#-}")
	if end < 0 {
		p.Errorf("expected '#-}' to end the file metadata")
		return
	}
	p.resources += p.lex.src[start : start+end+3]
	p.resetTo(start + end + 3)
}

func (p *Parser) resolveLocs() {
	for _, pl := range p.pendingLocs {
		l, ok := p.locAliases[pl.alias]
		if !ok {
			p.failAt(pl.pos, "undefined location alias '%s'", pl.alias[1:])
			return
		}
		if !p.chargeAlias(pl.alias, pl.pos) {
			return
		}
		pl.set(l)
	}
}

// --- scopes ---

func (p *Parser) pushScope(isolated bool) {
	p.scopes = append(p.scopes, &valueScope{isolated: isolated, defs: map[string][]*Value{}, forward: map[string]*forwardRef{}})
}

func (p *Parser) popScope() {
	s := p.scopes[len(p.scopes)-1]
	p.scopes = p.scopes[:len(p.scopes)-1]
	if p.err != nil || len(s.forward) == 0 {
		return
	}
	// Report the earliest undefined use.
	names := make([]string, 0, len(s.forward))
	for n := range s.forward {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return s.forward[names[i]].pos < s.forward[names[j]].pos })
	p.failAt(s.forward[names[0]].pos, "use of undeclared SSA value name")
}

func (p *Parser) pushBlockScope() {
	p.blockScopes = append(p.blockScopes, &blockScope{blocks: map[string]*Block{}, defined: map[*Block]bool{}, firstAt: map[*Block]int{}})
}

func (p *Parser) popBlockScope() {
	s := p.blockScopes[len(p.blockScopes)-1]
	p.blockScopes = p.blockScopes[:len(p.blockScopes)-1]
	if p.err != nil {
		return
	}
	first := -1
	for b, pos := range s.firstAt {
		if !s.defined[b] && (first < 0 || pos < first) {
			first = pos
		}
	}
	if first >= 0 {
		p.failAt(first, "reference to an undefined block")
	}
}

// lookupValue finds (or forward-declares) result number idx of name, with type t.
func (p *Parser) lookupValue(name string, idx int, t Type, pos int) *Value {
	for i := len(p.scopes) - 1; i >= 0; i-- {
		s := p.scopes[i]
		if vs, ok := s.defs[name]; ok {
			if idx >= len(vs) {
				p.failAt(pos, "result number %d out of range: %s defines %d results", idx, name, len(vs))
				return nil
			}
			v := vs[idx]
			if t != nil && v.Type() != t {
				p.failAt(pos, "use of value '%s' expects different type than prior uses: '%s' vs '%s'", name, t, v.Type())
				return nil
			}
			return v
		}
		if s.isolated {
			break
		}
	}
	// A forward reference: keep a placeholder in the innermost scope.
	s := p.scopes[len(p.scopes)-1]
	fr := s.forward[name]
	if fr == nil {
		fr = &forwardRef{vals: map[int]*Value{}, pos: pos}
		s.forward[name] = fr
	}
	if v, ok := fr.vals[idx]; ok {
		if t != nil && v.Type() != t {
			p.failAt(pos, "use of value '%s' expects different type than prior uses: '%s' vs '%s'", name, t, v.Type())
			return nil
		}
		return v
	}
	if t == nil {
		p.failAt(pos, "use of undeclared SSA value name")
		return nil
	}
	v := &Value{typ: t, index: idx}
	fr.vals[idx] = v
	return v
}

// defineValues binds name to vs in the innermost scope, resolving forward uses.
func (p *Parser) defineValues(name string, vs []*Value, pos int) {
	for i := len(p.scopes) - 1; i >= 0; i-- {
		if _, dup := p.scopes[i].defs[name]; dup {
			p.failAt(pos, "redefinition of SSA value '%s'", name)
			return
		}
		if p.scopes[i].isolated {
			break
		}
	}
	s := p.scopes[len(p.scopes)-1]
	s.defs[name] = vs
	// Forward references may sit in this scope or in nested ones already closed
	// (they were moved up on close); resolve them here.
	if fr, ok := s.forward[name]; ok {
		for idx, ph := range fr.vals {
			if idx >= len(vs) {
				p.failAt(fr.pos, "result number %d out of range: %s defines %d results", idx, name, len(vs))
				return
			}
			if ph.Type() != vs[idx].Type() {
				p.failAt(fr.pos, "use of value '%s' expects different type than prior uses: '%s' vs '%s'", name, ph.Type(), vs[idx].Type())
				return
			}
			ph.ReplaceAllUsesWith(vs[idx])
		}
		delete(s.forward, name)
	}
}

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
				p.Errorf("expected SSA value name, found %s", p.describe())
				return nil
			}
			g := resultGroup{name: p.tok.text, count: 1, pos: p.tok.pos}
			p.advance()
			if p.is(":") {
				p.advance()
				n, ok := p.parseUint()
				if !ok || n < 1 {
					p.Errorf("expected integer number of results")
					return nil
				}
				g.count = n
			}
			groups = append(groups, g)
			if !p.consumeIf(",") {
				break
			}
		}
		if p.expect("=") != nil {
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
		op = p.parseCustomOp(total)
	default:
		p.Errorf("expected operation name in quotes, found %s", p.describe())
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
		p.failAt(pos, "operation '%s' is not registered in dialect '%s'", name, DialectOf(name))
	} else {
		p.failAt(pos, "operation '%s' is unregistered: its dialect '%s' is not loaded (use --allow-unregistered-dialect to accept it)", name, DialectOf(name))
	}
	return nil
}

func (p *Parser) parseGenericOp() *Operation {
	namePos := p.tok.pos
	name, ok := unquote(p.tok.text)
	if !ok {
		p.Errorf("invalid escape in operation name")
		return nil
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
		if p.expect(")") != nil {
			return nil
		}
	}
	if p.is("{") {
		st.Attributes = p.parseDictBody()
	}
	if p.expect(":") != nil {
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
	return NewOperation(p.ctx, st)
}

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
	return NewOperation(p.ctx, st)
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
					p.Errorf("expected SSA value name for block argument, found %s", p.describe())
					return nil
				}
				an, apos := p.tok.text, p.tok.pos
				p.advance()
				if p.expect(":") != nil {
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
	if p.expect(":") != nil {
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

// --- locations ---

func (p *Parser) parseLocation() Location {
	return p.parseLocationInto(nil)
}

// parseLocationInto parses loc(...). A reference to a location alias defined
// later in the file returns nil and calls set once the alias is known.
func (p *Parser) parseLocationInto(set func(Location)) Location {
	if p.expect("loc") != nil || p.expect("(") != nil {
		return nil
	}
	if p.tok.kind == tokHashIdent {
		name, pos := p.tok.text, p.tok.pos
		p.advance()
		if p.expect(")") != nil {
			return nil
		}
		if l, ok := p.locAliases[name]; ok {
			if !p.chargeAlias(name, pos) {
				return nil
			}
			return l
		}
		if set == nil {
			p.failAt(pos, "undefined location alias '%s'", name[1:])
			return nil
		}
		p.pendingLocs = append(p.pendingLocs, pendingLoc{alias: name, pos: pos, set: set})
		return nil
	}
	l := p.parseLocBody()
	if p.expect(")") != nil {
		return nil
	}
	return l
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
		if p.expect("(") != nil {
			return nil
		}
		callee := p.parseLocBody()
		if p.expect("at") != nil {
			return nil
		}
		caller := p.parseLocBody()
		if p.expect(")") != nil {
			return nil
		}
		return CallSiteLoc{Callee: callee, Caller: caller}
	case p.is("fused"):
		p.advance()
		var l FusedLoc
		if p.consumeIf("<") {
			l.Metadata = p.parseAttribute(nil)
			if p.expect(">") != nil {
				return nil
			}
		}
		if p.expect("[") != nil {
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
		if p.expect("]") != nil {
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
			if p.expect(")") != nil {
				return nil
			}
			return NameLoc{Name: s, Child: child}
		}
		return NameLoc{Name: s}
	}
	p.Errorf("expected location, found %s", p.describe())
	return nil
}

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
			p.Errorf("invalid integer type width in '%s'", text)
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
			if p.expect("<") != nil {
				return nil
			}
			e := p.parseType()
			if p.expect(">") != nil {
				return nil
			}
			return ComplexOf(e)
		case "tuple":
			p.advance()
			if p.expect("<") != nil {
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
			if p.expect(">") != nil {
				return nil
			}
			return TupleOf(elems)
		}
	}
	p.failAt(pos, "expected type, found %s", p.describe())
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
	for {
		for i < len(src) && (src[i] == ' ' || src[i] == '\n' || src[i] == '\t' || src[i] == '\r') {
			i++
		}
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
			if j+1 >= len(src) || src[j+1] != 'x' {
				p.failAt(j+1, "expected 'x' in dimension list")
				return nil
			}
			shape = append(shape, Dynamic)
			scalable = append(scalable, false)
			i = j + 2
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
				p.failAt(k, "expected ']' after scalable dimension")
				return nil
			}
			k++
		}
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
	elem := p.parseType()
	if p.err != nil {
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
			a := p.parseAttribute(nil)
			if isLayoutAttr(a) && !unranked {
				layout = a
				if p.consumeIf(",") {
					space = p.parseAttribute(nil)
				}
			} else {
				space = a
			}
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

func isLayoutAttr(a Attribute) bool {
	o, ok := a.(OpaqueAttr)
	return ok && (strings.HasPrefix(o.Text, "affine_map<") || strings.HasPrefix(o.Text, "strided<"))
}

// --- attributes ---

// ParseAttribute parses an attribute; typ, when not nil, is the type that an
// untyped literal takes.
func (p *Parser) ParseAttribute(typ Type) (Attribute, error) {
	a := p.parseAttribute(typ)
	return a, p.err
}

func (p *Parser) parseDictBody() DictAttr {
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
				name = p.tok.text
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
			if p.expect("]") != nil {
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
		name := p.tok.text
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
		return p.maybeTyped(OpaqueAttr{Text: name + body})
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
			if p.tok.kind == tokPunct && p.tok.text == "[" && kw == "distinct" {
				// distinct[N]<...>
				start := pos
				for p.err == nil && p.tok.kind != tokEOF && !p.is("]") {
					p.advance()
				}
				if p.expect("]") != nil {
					return nil
				}
				bodyPos := p.tok.pos
				if !p.is("<") {
					p.Errorf("expected '<' after 'distinct[...]'")
					return nil
				}
				body := p.scanBalanced()
				if p.err != nil {
					return nil
				}
				return OpaqueAttr{Text: p.lex.src[start:bodyPos] + body}
			}
			if !p.is("<") {
				p.Errorf("expected '<' after '%s'", kw)
				return nil
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
		t := p.parseType()
		if t == nil {
			p.failAt(pos, "expected attribute value")
			return nil
		}
		return TypeAttr{t}
	}
	p.failAt(pos, "expected attribute value, found %s", p.describe())
	return nil
}

// maybeTyped keeps the ": type" that may follow an opaque attribute.
func (p *Parser) maybeTyped(a OpaqueAttr) Attribute {
	if p.is(":") && (strings.HasPrefix(a.Text, "dense_resource") || strings.HasPrefix(a.Text, "sparse") || strings.HasPrefix(a.Text, "opaque")) {
		p.advance()
		t := p.parseType()
		if t == nil {
			return nil
		}
		return OpaqueAttr{Text: a.Text + " : " + t.String()}
	}
	return a
}

func (p *Parser) symbolText() string {
	s := p.tok.text[1:]
	if strings.HasPrefix(s, "\"") {
		u, _ := unquote(s)
		return u
	}
	return s
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
				bits, err := strconv.ParseUint(lit.text[2:], 16, 64)
				if err != nil || (t.Width < 64 && bits>>uint(t.Width) != 0) {
					return nil, fmt.Errorf("hexadecimal float constant out of range for type %s", t)
				}
				return FloatAttr{Bits: bits, Type: t}, nil
			}
		}
		v, err := strconv.ParseFloat(lit.text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("invalid floating point literal '%s'", lit.text)
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
			n, err := wideIntLiteral(lit.text, neg, typ)
			if err != nil {
				return nil, err
			}
			return OpaqueAttr{Text: n.String() + " : " + typ.String()}, nil
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
	if width == 0 {
		if n.Sign() != 0 {
			return nil, errors.New("integer constant out of range for attribute")
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
		return nil, errors.New("integer constant out of range for attribute")
	}
	return n, nil
}

func (p *Parser) parseDenseArray() Attribute {
	p.advance()
	if p.expect("<") != nil {
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
		p.Errorf("expected integer or float element type in array attribute, found '%s'", elem)
		return nil
	}
	if !isFloat && IntWidth(elem) > 64 {
		// DenseArrayAttr holds int64 values, as MLIR's dense arrays hold at
		// most i64 elements.
		p.failAt(typePos, "array attribute element type '%s' is wider than 64 bits", elem)
		return nil
	}
	if p.consumeIf(":") {
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
	if p.expect(">") != nil {
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
	if !ok || !st.Ranked() {
		p.failAt(typePos, "elements literal must be a ranked shaped type, found '%s'", t)
		return nil
	}
	if _, isMemref := t.(*MemRefType); isMemref {
		p.failAt(typePos, "elements literal type must be a tensor or vector, found '%s'", t)
		return nil
	}
	n := NumElements(st.Shape())
	if n < 0 {
		p.failAt(typePos, "elements literal type must have a static shape, found '%s'", t)
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
			p.failAt(typePos, "empty elements literal for type '%s' with %d elements", t, n)
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
			return 0, fmt.Errorf("expected %s element, found a boolean", t)
		}
		return uint64(e.boolean - 1), nil
	}
	if IsFloat(t) && e.tok.kind == tokInteger && !strings.HasPrefix(e.tok.text, "0x") {
		return 0, errors.New("expected floating-point elements, but parsed integer")
	}
	if IsIntOrIndex(t) && e.tok.kind == tokFloat {
		return 0, errors.New("expected integer elements, but parsed floating-point")
	}
	a, err := literalAttr(e.tok, e.neg, t)
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
		if !ok1 || p.expect(",") != nil {
			return e, false
		}
		im, ok2 := p.parseDenseElem()
		if !ok2 || p.expect(")") != nil {
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
	s := p.tok.text
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
		return "", p.Errorf("expected symbol name, found %s", p.describe())
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
