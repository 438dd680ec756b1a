package ir

import (
	"bytes"
	"fmt"
	"sort"
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
	// Progress, if set, is called as the parser moves through the source,
	// every ProgressStep bytes or so, with an offset that it has left
	// behind: the IR keeps nothing of the text before it (see keep) and
	// the parser seldom reads it again. A caller holding a large source in
	// pages it can drop and read back (irc maps its input file) releases
	// them there. The text must stay readable: diagnostics, for one, look
	// back at it.
	Progress func(offset int)
}

// ProgressStep is about how many bytes the parser reads between two calls
// of ParseOptions.Progress.
const ProgressStep = 4 << 20

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
	// distinct maps the IDs of distinct[N]<...> attributes to their text.
	distinct    map[uint64]string
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
	freeScopes  []*valueScope // closed scopes, emptied, for pushScope to reuse
	blockScopes []*blockScope
	dialects    []string // default dialects of enclosing custom ops

	typeCache  map[string]Type          // top-level type text → type (see parseType)
	kept       map[string]string        // see keep
	dictCache  map[string]DictAttr      // dictionary text → dictionary (see parseDictBody)
	dictRefs   map[*NamedAttr]*DictAttr // a cached dictionary's first entry → the ops' pointer to it (see newOperation)
	builtDicts map[string]*DictAttr     // short dictionaries built by custom parsers, by text (see dictRef)
	dictText   bytes.Buffer             // scratch for dictRef
	progressAt int                      // offset at which advance next calls opts.Progress
	opNames    map[string]string        // quoted op name → name (see parseGenericOp)
	inType     bool                     // inside parseType, where nothing is cached
	prevEnd    int                      // end offset of the token before p.tok
	lastCol    colMark                  // the last position posLoc computed

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
	names    []string            // the keys of defs, for reuse (see popScope)
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
	p.lines = make([]int, 1, strings.Count(src, "\n")+1)
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

// failWithNote records an error at pos with a note at noteLoc, unless an
// error is recorded already.
func (p *Parser) failWithNote(noteLoc Location, note string, pos int, format string, args ...any) {
	if p.err == nil {
		d := Errorf(p.posLoc(pos), format, args...)
		d.Note(noteLoc, "%s", note)
		p.err = d
	}
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
	if p.tok.pos >= p.progressAt && p.opts.Progress != nil {
		p.opts.Progress(p.tok.pos)
		p.progressAt = p.tok.pos + ProgressStep
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
		return p.wrongToken("expected '%s', found %s", s, p.describe())
	}
	return nil
}

// wrongToken records an error about the current token being unexpected.
// When the token starts a later line than the previous one ended, the
// error is placed just after the previous token, as MLIR places it: what
// is missing belongs to the line before.
func (p *Parser) wrongToken(format string, args ...any) error {
	pos := p.tok.pos
	if 0 < p.prevEnd && p.prevEnd <= pos && strings.Contains(p.lex.src[p.prevEnd:pos], "\n") {
		pos = p.prevEnd
	}
	return p.failAt(pos, format, args...)
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
	if strings.Contains(name, ".") {
		p.failAt(pos, "attribute names with a '.' are reserved for dialect-defined names")
		return
	}
	p.advance()
	if !p.consumeIf("=") {
		p.Errorf("expected '=' in attribute alias definition, found %s", p.describe())
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
	if strings.Contains(name, ".") {
		p.failAt(pos, "type names with a '.' are reserved for dialect-defined names")
		return
	}
	p.advance()
	if !p.consumeIf("=") {
		p.Errorf("expected '=' in type alias definition, found %s", p.describe())
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
		if a, isAttr := p.attrAliases[pl.alias]; !ok && isAttr {
			p.failAt(pl.pos, "expected location, but found '%s'", a)
			return
		}
		if !ok {
			p.failAt(pl.pos, "operation location alias was never defined: '%s'", pl.alias[1:])
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
	if n := len(p.freeScopes); n > 0 {
		s := p.freeScopes[n-1]
		p.freeScopes = p.freeScopes[:n-1]
		s.isolated = isolated
		p.scopes = append(p.scopes, s)
		return
	}
	p.scopes = append(p.scopes, &valueScope{isolated: isolated, defs: map[string][]*Value{}, forward: map[string]*forwardRef{}})
}

// popScope closes the innermost scope, handing its open forward uses to
// the enclosing one or reporting them. The scope is emptied and kept for
// the next pushScope: a module's functions then fill the same map, grown
// once, instead of growing one each (garbage the size of the IR's names).
// Emptying it costs one deletion per name it defined.
func (p *Parser) popScope() {
	s := p.scopes[len(p.scopes)-1]
	p.scopes = p.scopes[:len(p.scopes)-1]
	p.resolveOpenUses(s)
	for _, name := range s.names {
		delete(s.defs, name)
	}
	s.names = s.names[:0]
	if len(s.forward) > 0 {
		s.forward = map[string]*forwardRef{}
	}
	p.freeScopes = append(p.freeScopes, s)
}

// resolveOpenUses hands the forward uses still open in s, a scope being
// closed, to the enclosing scope, or reports the first one when they
// cannot be resolved there.
func (p *Parser) resolveOpenUses(s *valueScope) {
	if p.err != nil || len(s.forward) == 0 {
		return
	}
	if !s.isolated && len(p.scopes) > 0 {
		// A region may use a value its enclosing region defines later
		// (the verifier then checks dominance): the enclosing scope
		// resolves the uses still open.
		parent := p.scopes[len(p.scopes)-1]
		for name, fr := range s.forward {
			pf := parent.forward[name]
			if pf == nil {
				parent.forward[name] = fr
				continue
			}
			for idx, ph := range fr.vals {
				if prev, ok := pf.vals[idx]; !ok {
					pf.vals[idx] = ph
				} else if prev.Type() != ph.Type() {
					p.failWithNote(p.posLoc(pf.pos), "prior use here", fr.pos, "use of value '%s' expects different type than prior uses: '%s' vs '%s'", name, ph.Type(), prev.Type())
					return
				} else {
					ph.ReplaceAllUsesWith(prev)
				}
			}
			pf.pos = min(pf.pos, fr.pos)
		}
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
				p.failWithNote(v.Loc(), "prior use here", pos, "use of value '%s' expects different type than prior uses: '%s' vs '%s'", name, t, v.Type())
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
			p.failWithNote(p.posLoc(fr.pos), "prior use here", pos, "use of value '%s' expects different type than prior uses: '%s' vs '%s'", name, t, v.Type())
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
		if prev, dup := p.scopes[i].defs[name]; dup {
			var at Location = UnknownLoc{}
			if len(prev) > 0 {
				at = prev[0].Loc()
			}
			p.failWithNote(at, "previously defined here", pos, "redefinition of SSA value '%s'", name)
			return
		}
		if p.scopes[i].isolated {
			break
		}
	}
	s := p.scopes[len(p.scopes)-1]
	s.defs[name] = vs
	s.names = append(s.names, name)
	// Forward references may sit in this scope or in nested ones already closed
	// (they were moved up on close); resolve them here.
	if fr, ok := s.forward[name]; ok {
		for idx, ph := range fr.vals {
			if idx >= len(vs) {
				p.failAt(fr.pos, "result number %d out of range: %s defines %d results", idx, name, len(vs))
				return
			}
			if ph.Type() != vs[idx].Type() {
				p.failWithNote(p.posLoc(fr.pos), fmt.Sprintf("previously used here with type '%s'", ph.Type()),
					pos, "definition of SSA value '%s#%d' has type '%s'", name, idx, vs[idx].Type())
				return
			}
			ph.ReplaceAllUsesWith(vs[idx])
		}
		delete(s.forward, name)
	}
}

// keep returns s, a slice of the source that the IR is about to hold (an
// attribute name, a keyword), as a string of its own: a slice would keep
// the whole source text alive as long as the IR. The copies are shared
// within one parse, so each distinct name is allocated once.
func (p *Parser) keep(s string) string {
	if k, ok := p.kept[s]; ok {
		return k
	}
	if p.kept == nil {
		p.kept = map[string]string{}
	}
	k := strings.Clone(s)
	p.kept[k] = k
	return k
}
