package passes

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-ir/strata/dialects/builtin"
	"github.com/strata-ir/strata/internal/spelling"
	"github.com/strata-ir/strata/ir"
)

// OpPassManager is a pipeline anchored on one op name: the passes and nested
// pipelines that run, in order, on each op of that name.
type OpPassManager struct {
	anchor string
	items  []item
	// src and at locate the anchor's name in the pipeline text it was
	// parsed from (at is one past its offset; 0 for pipelines built in Go).
	src string
	at  int
	// implicit marks a nested pipeline written as the whole pipeline
	// text, which ParsePipeline nested in builtin.module: mlir-opt runs
	// such a pipeline on the root op itself, so the root must hold ops
	// it anchors on (checkAnchorsRun).
	implicit bool
}

// item is one element of a pipeline: a pass or a nested pipeline.
type item struct {
	pass   *passEntry
	nested *OpPassManager
}

// passEntry is a pass instance in a pipeline, with the options it was built
// from (nil info for passes added as Go values) and its statistics.
type passEntry struct {
	info  *PassInfo
	opts  Options
	pass  Pass
	stats statSet
}

// NewOpPassManager returns an empty pipeline anchored on anchor (an op name
// or AnyOp).
func NewOpPassManager(anchor string) *OpPassManager { return &OpPassManager{anchor: anchor} }

// Anchor returns the op name the pipeline runs on, or AnyOp.
func (pm *OpPassManager) Anchor() string { return pm.anchor }

// Nest appends a pipeline running on the ops named anchor nested directly in
// this pipeline's op, and returns it.
func (pm *OpPassManager) Nest(anchor string) *OpPassManager {
	n := NewOpPassManager(anchor)
	pm.items = append(pm.items, item{nested: n})
	return n
}

// AddPass appends a pass built in Go. Passes added this way have no
// registry entry; they run on any op and print by their Name.
func (pm *OpPassManager) AddPass(p Pass) {
	pm.items = append(pm.items, item{pass: &passEntry{pass: p}})
}

// Add appends the registered pass name built with opts (missing options
// take their defaults).
func (pm *OpPassManager) Add(name string, opts Options) error {
	info := Lookup(name)
	if info == nil {
		return fmt.Errorf("%s", unknownPassMessage(name))
	}
	full := Options{}
	for _, od := range info.Options {
		v, ok := opts[od.Name]
		if !ok {
			v = od.Default
		}
		if n, isInt := v.(int); isInt {
			v = int64(n)
		}
		v, err := od.check(v)
		if err != nil {
			return fmt.Errorf("pass %q option %q: %w", name, od.Name, err)
		}
		full[od.Name] = v
	}
	for k := range opts {
		if info.option(k) == nil {
			return fmt.Errorf("pass %q has no option %q", name, k)
		}
	}
	return pm.addInfo(info, full)
}

func (pm *OpPassManager) addInfo(info *PassInfo, opts Options) error {
	if info.Anchor != AnyOp && pm.anchor != AnyOp && info.Anchor != pm.anchor {
		return fmt.Errorf("can't add pass '%s' restricted to '%s' on a PassManager intended to run on '%s', did you intend to nest?",
			info.Name, info.Anchor, pm.anchor)
	}
	p, err := info.New(opts)
	if err != nil {
		return &passOptionError{pass: info.Name, err: err}
	}
	pm.items = append(pm.items, item{pass: &passEntry{info: info, opts: opts, pass: p}})
	return nil
}

func (info *PassInfo) option(name string) *OptionDef {
	for i := range info.Options {
		if info.Options[i].Name == name {
			return &info.Options[i]
		}
	}
	return nil
}

// AddPipeline parses text, a comma-separated list of pipeline elements
// without an anchor, and appends it.
func (pm *OpPassManager) AddPipeline(text string) error {
	p := &pipelineParser{src: text}
	if err := p.parseList(pm, 0); err != nil {
		return err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return p.errorf(p.pos, "unexpected '%c'", p.src[p.pos])
	}
	return nil
}

// String prints the pipeline in MLIR's syntax with every option spelled
// out: anchor(pass{opt=value ...},nested(...)).
func (pm *OpPassManager) String() string {
	var b strings.Builder
	pm.write(&b)
	return b.String()
}

func (pm *OpPassManager) write(b *strings.Builder) {
	b.WriteString(pm.anchor)
	b.WriteByte('(')
	for i, it := range pm.items {
		if i > 0 {
			b.WriteByte(',')
		}
		if it.nested != nil {
			it.nested.write(b)
			continue
		}
		b.WriteString(it.pass.pass.Name())
		if it.pass.info == nil {
			continue
		}
		var opts []string
		for _, od := range it.pass.info.Options {
			v := it.pass.opts[od.Name]
			if (od.Type == IntList || od.Type == StringList) && formatValue(v) == "" {
				continue // an empty list has no spelling
			}
			opts = append(opts, od.Name+"="+formatValue(v))
		}
		slices.Sort(opts)
		if len(opts) > 0 {
			b.WriteString("{" + strings.Join(opts, " ") + "}")
		}
	}
	b.WriteByte(')')
}

// ParsePipeline parses a textual pipeline, with or without the outer
// builtin.module(...) anchor. A pipeline that is one nested element on
// builtin.module or any is that anchor's pipeline; anything else is the
// body of a builtin.module pipeline, as mlir-opt's --pass-pipeline before
// version 17 accepted.
func ParsePipeline(text string) (*OpPassManager, error) {
	p := &pipelineParser{src: text}
	// Parse into a scratch any-anchored pipeline first, so that the body is
	// checked against the right anchor once we know it.
	scratch := NewOpPassManager(AnyOp)
	p.deferAnchors = true
	p.where = map[*passEntry]int{}
	p.posOf = map[*passEntry]int{}
	if err := p.parseList(scratch, 0); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return nil, p.errorf(p.pos, "unexpected '%c'", p.src[p.pos])
	}
	root := NewOpPassManager(builtin.OpModule)
	root.items = scratch.items
	if len(scratch.items) == 1 && scratch.items[0].nested != nil {
		if a := scratch.items[0].nested.anchor; a == builtin.OpModule || a == AnyOp {
			root = scratch.items[0].nested
		} else {
			scratch.items[0].nested.implicit = true
		}
	}
	if err := p.checkOrder(root); err != nil {
		return nil, err
	}
	if err := p.checkAnchors(root); err != nil {
		return nil, err
	}
	return root, nil
}

// pipelineParser reads MLIR's pass pipeline grammar:
//
//	pipeline ::= element (',' element)*
//	element  ::= op-name '(' pipeline? ')' | pass-name ('{' options '}')?
//	options  ::= (key ('=' value)?)*          separated by spaces
//	value    ::= bare text | "quoted" | 'quoted' | '{' balanced '}'
type pipelineParser struct {
	src string
	pos int
	// expanding lists the named pipelines being expanded, to reject cycles.
	expanding []string
	// deferAnchors postpones anchor checks of the top-level list until the
	// root anchor is known; positions of deferred passes are kept in where.
	deferAnchors bool
	where        map[*passEntry]int
	// posOf holds the offset of every registered pass's name, for the
	// ordering diagnostics (checkOrder).
	posOf map[*passEntry]int
	// at, when positive, is one past the offset in the outer text of the
	// name of the registered pipeline being expanded; deferred errors point there.
	at int
}

// PipelineError is a syntax or semantic error in a textual pipeline.
type PipelineError struct {
	Pipeline string
	Offset   int // byte offset of the culprit in Pipeline
	Msg      string
}

// Error prints the message, the pipeline and a caret under the culprit.
func (e *PipelineError) Error() string {
	return fmt.Sprintf("pass pipeline:1:%d: error: %s\n%s\n%s^", e.Offset+1, e.Msg, e.Pipeline, strings.Repeat(" ", e.Offset))
}

func (p *pipelineParser) errorf(pos int, format string, args ...any) *PipelineError {
	return &PipelineError{Pipeline: p.src, Offset: min(pos, len(p.src)), Msg: fmt.Sprintf(format, args...)}
}

func (p *pipelineParser) skipSpace() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\n\r", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *pipelineParser) ident() string {
	start := p.pos
	for p.pos < len(p.src) && isIdentByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// parseList parses elements into pm until the end of the text or a ')'.
func (p *pipelineParser) parseList(pm *OpPassManager, depth int) error {
	p.skipSpace()
	if p.pos == len(p.src) || p.src[p.pos] == ')' {
		return nil
	}
	for {
		if err := p.parseElement(pm, depth); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			p.skipSpace()
			continue
		}
		return nil
	}
}

func (p *pipelineParser) parseElement(pm *OpPassManager, depth int) error {
	start := p.pos
	name := p.ident()
	if name == "" {
		if p.pos == len(p.src) {
			return p.errorf(p.pos, "expected a pass or pipeline name, found the end of the pipeline")
		}
		return p.errorf(p.pos, "expected a pass or pipeline name, found '%c'", p.src[p.pos])
	}
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '(' {
		open := p.pos
		if depth+1 > MaxPipelineDepth {
			return p.errorf(open, "pipelines nested deeper than %d", MaxPipelineDepth)
		}
		p.pos++
		nested := pm.Nest(name)
		nested.src, nested.at = p.src, start+1
		if err := p.parseList(nested, depth+1); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return p.errorf(open, "unbalanced '(': expected ')' to close the '%s' pipeline", name)
		}
		p.pos++
		return nil
	}
	var optText string
	optPos := p.pos
	if p.pos < len(p.src) && p.src[p.pos] == '{' {
		end, err := p.balanced(p.pos)
		if err != nil {
			return err
		}
		optText = p.src[p.pos+1 : end]
		optPos = p.pos + 1
		p.pos = end + 1
	}
	if p.pos < len(p.src) && p.src[p.pos] == ')' && depth == 0 {
		return p.errorf(p.pos, "unbalanced ')'")
	}
	if info := Lookup(name); info != nil {
		opts, err := p.parseOptions(info, optText, optPos)
		if err != nil {
			return err
		}
		return p.addPass(pm, info, opts, start)
	}
	if pl := LookupPipeline(name); pl != nil {
		if strings.TrimSpace(optText) != "" {
			return p.errorf(optPos, "pipeline '%s' takes no options", name)
		}
		if slices.Contains(p.expanding, name) {
			return p.errorf(start, "pipeline '%s' refers to itself", name)
		}
		sub := &pipelineParser{src: pl.Text, expanding: append(slices.Clone(p.expanding), name),
			deferAnchors: p.deferAnchors, where: p.where, posOf: p.posOf, at: cmp.Or(p.at, start+1)}
		if err := sub.parseList(pm, depth); err != nil {
			return p.errorf(start, "in pipeline '%s': %s", name, err.(*PipelineError).Msg)
		}
		if sub.skipSpace(); sub.pos < len(sub.src) {
			return p.errorf(start, "in pipeline '%s': unexpected '%c' at offset %d", name, sub.src[sub.pos], sub.pos)
		}
		return nil
	}
	return p.errorf(start, "%s", unknownPassMessage(name))
}

func (p *pipelineParser) addPass(pm *OpPassManager, info *PassInfo, opts Options, pos int) error {
	if p.deferAnchors && pm.anchor == AnyOp {
		// Only the scratch top-level list is any-anchored while deferring.
		pe := &passEntry{info: info, opts: opts}
		if p.at > 0 {
			pos = p.at - 1
		}
		p.where[pe] = pos
		p.posOf[pe] = pos
		pm.items = append(pm.items, item{pass: pe})
		return nil
	}
	if err := pm.addInfo(info, opts); err != nil {
		return p.errorf(pos, "%s", err.Error())
	}
	if p.posOf != nil {
		if p.at > 0 {
			pos = p.at - 1
		}
		p.posOf[pm.items[len(pm.items)-1].pass] = pos
	}
	return nil
}

// checkAnchors builds the passes whose anchor checks were deferred.
func (p *pipelineParser) checkAnchors(pm *OpPassManager) error {
	for i, it := range pm.items {
		if it.nested != nil {
			if err := p.checkAnchors(it.nested); err != nil {
				return err
			}
			continue
		}
		pos, deferred := p.where[it.pass]
		if !deferred {
			continue
		}
		tmp := NewOpPassManager(pm.anchor)
		if err := tmp.addInfo(it.pass.info, it.pass.opts); err != nil {
			return p.errorf(pos, "%s", err.Error())
		}
		pm.items[i] = tmp.items[0]
	}
	return nil
}

// MaxPipelineDepth bounds how deeply a textual pipeline may nest op
// pipelines, and how deeply braces may nest in a pass's options (where
// inline's default-pipeline holds a pipeline of its own): real pipelines
// nest a few levels; the bound keeps hostile text from exhausting the
// stack, or from costing time quadratic in its length as each level
// parses the text of the levels inside it again.
const MaxPipelineDepth = 64

// checkAnchorsRun checks, before pm runs on root, the anchors a run would
// silently skip: a nested pipeline anchored on an op name no dialect
// registers (a misspelling such as func.fnuc; unregistered ops are allowed
// when ctx allows them), and a pipeline written without the root's anchor
// on an op the root does not hold (mlir-opt runs it on the root itself and
// refuses a mismatch).
func checkAnchorsRun(ctx *ir.Context, pm *OpPassManager, root *ir.Operation) error {
	for _, it := range pm.items {
		n := it.nested
		if n == nil {
			continue
		}
		if n.anchor != AnyOp && ctx.OpDef(n.anchor) == nil && !ctx.AllowUnregistered {
			return n.errorf("'%s' is not a registered operation, so the pipeline nested on it would never run%s",
				n.anchor, suggestOp(ctx, n.anchor))
		}
		if n.implicit && !holdsOp(root, n.anchor) {
			return n.errorf("can't run '%s' pass manager on '%s' op (it holds no '%s' op; write %s(%s(…)) to run on nested ones where there are any)",
				n.anchor, root.Name(), n.anchor, root.Name(), n.anchor)
		}
		if err := checkAnchorsRun(ctx, n, root); err != nil {
			return err
		}
	}
	return nil
}

// errorf returns a PipelineError at pm's anchor, or a plain error for a
// pipeline built in Go.
func (pm *OpPassManager) errorf(format string, args ...any) error {
	if pm.at == 0 {
		return fmt.Errorf(format, args...)
	}
	return &PipelineError{Pipeline: pm.src, Offset: pm.at - 1, Msg: fmt.Sprintf(format, args...)}
}

// holdsOp reports whether an op named name is directly nested in op.
func holdsOp(op *ir.Operation, name string) bool {
	for _, reg := range op.Regions() {
		for _, b := range reg.Blocks() {
			for _, child := range b.Ops() {
				if child.Name() == name {
					return true
				}
			}
		}
	}
	return false
}

// suggestOp returns " (did you mean 'x'?)" for the registered op name
// closest to name, if one is close.
func suggestOp(ctx *ir.Context, name string) string {
	var names []string
	for _, d := range ctx.Dialects() {
		for _, def := range d.Ops {
			names = append(names, def.Name)
		}
	}
	if c := closest(name, names); c != "" {
		return " (did you mean '" + c + "'?)"
	}
	return ""
}

// balanced returns the index of the '}' closing the '{' at open.
func (p *pipelineParser) balanced(open int) (int, error) {
	tooDeep := false
	end, _, quote := scanQuoted(p.src, open, func(c byte, depth int) bool {
		if c == '{' && depth >= MaxPipelineDepth {
			tooDeep = true
			return true
		}
		return c == '}' && depth == 1
	})
	switch {
	case tooDeep:
		return 0, p.errorf(end, "options nested deeper than %d braces", MaxPipelineDepth)
	case quote != 0:
		return 0, p.errorf(open, "unterminated quoted option value")
	case end == len(p.src):
		return 0, p.errorf(open, "unbalanced '{': expected '}' to close the options")
	}
	return end, nil
}

// scanQuoted scans text from i up to the first byte c for which stop(c,
// depth) holds, depth being the count of '{' open before c; quoted strings
// are skipped whole. It returns that byte's index (len(text) if none), the
// depth there, and the quote left open at the end of text, if any.
func scanQuoted(text string, i int, stop func(c byte, depth int) bool) (end, depth int, quote byte) {
	for ; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case stop(c, depth):
			return i, depth, 0
		case c == '"' || c == '\'':
			quote = c
		case c == '{':
			depth++
		case c == '}':
			depth--
		}
	}
	return i, depth, quote
}

// parseOptions reads "key=value key2=value2 flag" and returns every option
// of info, defaults filled in.
func (p *pipelineParser) parseOptions(info *PassInfo, text string, base int) (Options, error) {
	opts := Options{}
	for _, od := range info.Options {
		opts[od.Name] = od.Default
	}
	i := 0
	for {
		for i < len(text) && strings.IndexByte(" \t\n\r", text[i]) >= 0 {
			i++
		}
		if i == len(text) {
			return opts, nil
		}
		keyStart := i
		for i < len(text) && text[i] != '=' && strings.IndexByte(" \t\n\r", text[i]) < 0 {
			i++
		}
		key := text[keyStart:i]
		value, valStart := "", i
		hasValue := i < len(text) && text[i] == '='
		if hasValue {
			i++
			valStart = i
			end, err := scanValue(text, i)
			if err != nil {
				return nil, p.errorf(base+i, "%s", err)
			}
			value, i = unquote(text[i:end]), end
		}
		od := info.option(key)
		if od == nil {
			return nil, p.errorf(base+keyStart, "pass '%s' has no option '%s'%s", info.Name, key, suggestOption(info, key))
		}
		if !hasValue && od.Type != Bool {
			return nil, p.errorf(base+keyStart, "option '%s' of pass '%s' needs a value (%s)", key, info.Name, od.typeString())
		}
		v, err := od.parseValue(value)
		if err != nil {
			return nil, p.errorf(base+valStart, "bad value for option '%s' of pass '%s': %s", key, info.Name, err)
		}
		opts[key] = v
	}
}

// scanValue returns the end of the option value starting at i: up to the
// next space outside quotes and braces.
func scanValue(text string, i int) (int, error) {
	end, depth, quote := scanQuoted(text, i, func(c byte, depth int) bool {
		return depth == 0 && strings.IndexByte(" \t\n\r", c) >= 0
	})
	switch {
	case quote != 0:
		return 0, fmt.Errorf("unterminated quoted value")
	case depth != 0:
		return 0, fmt.Errorf("unbalanced '{' in value %q", text[i:])
	}
	return end, nil
}

func unknownPassMessage(name string) string {
	msg := fmt.Sprintf("'%s' does not refer to a registered pass or pass pipeline", name)
	if s := closest(name, registeredNames()); s != "" {
		msg += fmt.Sprintf("; did you mean '%s'?", s)
	}
	return msg
}

func suggestOption(info *PassInfo, key string) string {
	names := make([]string, len(info.Options))
	for i, od := range info.Options {
		names[i] = od.Name
	}
	if s := closest(key, names); s != "" {
		return fmt.Sprintf("; did you mean '%s'?", s)
	}
	return ""
}

// closest returns the candidate nearest to s in edit distance, if it is
// close enough to be a plausible typo.
func closest(s string, candidates []string) string {
	return spelling.Closest(s, candidates, len(s)/2+2)
}

// passOptionError is a pass constructor's refusal of its options, named
// by the pass once: constructors that name themselves too ("canonicalize:
// …") are not repeated.
type passOptionError struct {
	pass string
	err  error
}

func (e *passOptionError) Error() string {
	return fmt.Sprintf("pass %q: %s", e.pass, strings.TrimPrefix(e.err.Error(), e.pass+": "))
}

func (e *passOptionError) Unwrap() error { return e.err }
