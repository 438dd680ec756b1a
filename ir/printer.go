package ir

import (
	"bytes"
	"io"
	"sort"
	"strconv"
	"strings"
)

// PrintOptions configure the printer.
type PrintOptions struct {
	// Generic prints every op in the generic form, as mlir-opt's
	// --mlir-print-op-generic does.
	Generic bool
	// DebugInfo prints each op's location as a trailing loc(...).
	DebugInfo bool
}

// Printer writes ops in MLIR's textual format. Dialects implementing custom
// syntax receive it in OpDef.Print and use its exported methods.
type Printer struct {
	opts   PrintOptions
	out    bytes.Buffer
	indent int
	names  map[*Value]string
	blocks map[*Block]string
	// deferred are the isolated ops whose scopes are numbered only when
	// they are printed, from the numbers given; named lists what has a
	// name, so that a scope's names are dropped once it is printed (the
	// names of a large module are never held all at once).
	deferred    map[*Operation][2]int
	namedValues []*Value
	namedBlocks []*Block
	// dialects are the default dialects of the enclosing custom ops.
	dialects []string
	// valueNames and argNames are the names "%N" and "%argN" given so far,
	// by N (see numbered).
	valueNames, argNames []string
	// sharedDicts maps the dictionaries of ops to their text (see writeShared).
	sharedDicts map[*DictAttr]string
	// w, when set, receives the text as it is printed (see flush); werr is
	// its first error.
	w    io.Writer
	werr error
}

// flushSize is how much text Print gathers before writing it to its
// writer, between ops: the text of a large module is never held whole.
const flushSize = 64 << 10

// flush writes the text gathered so far to p.w, when there is one and the
// text has reached flushSize (or force).
func (p *Printer) flush(force bool) {
	if p.w == nil || (!force && p.out.Len() < flushSize) {
		return
	}
	if p.werr == nil {
		_, p.werr = p.w.Write(p.out.Bytes())
	}
	p.out.Reset() // keeps the buffer: printing a large module makes little garbage
}

// Print writes op (usually a module) and a final newline to w.
func Print(w io.Writer, op *Operation, opts PrintOptions) error {
	p := &Printer{opts: opts, names: map[*Value]string{}, blocks: map[*Block]string{}, w: w}
	p.print(op)
	p.flush(true)
	return p.werr
}

// Sprint returns op in textual form, ending with a newline.
func Sprint(op *Operation, opts PrintOptions) string {
	p := &Printer{opts: opts, names: map[*Value]string{}, blocks: map[*Block]string{}}
	p.print(op)
	return p.out.String()
}

// print prints op, a newline and the file's resources, if op holds any.
func (p *Printer) print(op *Operation) {
	p.numberScope(op)
	p.printOp(op)
	p.out.WriteByte('\n')
	if res, ok := op.Attributes().Get(resourcesAttr).(StringAttr); ok {
		p.out.WriteString("\n" + res.Value + "\n")
	}
}

// String returns op in the default textual form (without a final newline).
func (op *Operation) String() string {
	return strings.TrimSuffix(Sprint(op, PrintOptions{}), "\n")
}

// GenericString returns op in generic form (without a final newline).
func (op *Operation) GenericString() string {
	return strings.TrimSuffix(Sprint(op, PrintOptions{Generic: true}), "\n")
}

// numberScope names the values and blocks of op's regions. Numbering starts
// anew inside isolated ops that are direct children of a symbol table (such as
// functions in a module), as MLIR does, but from where the enclosing scope's
// numbering ended, not from zero: names stay unique along every chain of
// nested regions, which mlir-opt requires of generic text (its generic
// parser does not know which ops are isolated), so a function in a module
// nested in a function does not redefine the outer function's %arg0.
// Isolated ops nested deeper (such as graph.fusion in a function) continue
// their parent's numbering.
func (p *Printer) numberScope(op *Operation) { p.numberScopeFrom(op, 0, 0) }

// numberScopeFrom is numberScope with value and argument numbers starting
// at valueID and argID. The scopes of the isolated children of a symbol
// table are numbered only when they are printed (enterScope).
func (p *Printer) numberScopeFrom(op *Operation, valueID, argID int) {
	queue := append([]*Region(nil), op.Regions()...)
	var isolated []*Operation
	if op.NumResults() > 0 && p.names[op.results[0]] == "" {
		p.nameResults(op, &valueID)
	}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		blockID := 0
		for b := r.first; b != nil; b = b.next {
			p.blocks[b] = "^bb" + strconv.Itoa(blockID)
			p.namedBlocks = append(p.namedBlocks, b)
			blockID++
			for _, a := range b.args {
				if b == r.first {
					p.names[a] = p.numbered(&p.argNames, "%arg", argID)
					argID++
				} else {
					p.names[a] = p.numbered(&p.valueNames, "%", valueID)
					valueID++
				}
				p.namedValues = append(p.namedValues, a)
			}
			for o := b.first; o != nil; o = o.next {
				p.nameResults(o, &valueID)
				if o.HasTrait(IsolatedFromAbove) && b.ParentOp() != nil && b.ParentOp().HasTrait(SymbolTable) {
					isolated = append(isolated, o)
				} else {
					queue = append(queue, o.Regions()...)
				}
			}
		}
	}
	for _, o := range isolated {
		if p.deferred == nil {
			p.deferred = map[*Operation][2]int{}
		}
		p.deferred[o] = [2]int{valueID, argID}
	}
}

// enterScope numbers op's scope if it was deferred (see numberScopeFrom)
// and returns the function that drops its names once op is printed.
func (p *Printer) enterScope(op *Operation) func() {
	start, ok := p.deferred[op]
	if !ok {
		return nil
	}
	delete(p.deferred, op)
	nv, nb := len(p.namedValues), len(p.namedBlocks)
	p.numberScopeFrom(op, start[0], start[1])
	return func() {
		for _, v := range p.namedValues[nv:] {
			delete(p.names, v)
		}
		for _, b := range p.namedBlocks[nb:] {
			delete(p.blocks, b)
		}
		p.namedValues, p.namedBlocks = p.namedValues[:nv], p.namedBlocks[:nb]
	}
}

func (p *Printer) nameResults(o *Operation, id *int) {
	if len(o.results) == 0 {
		return
	}
	base := p.numbered(&p.valueNames, "%", *id)
	*id++
	p.namedValues = append(p.namedValues, o.results...)
	if len(o.results) == 1 {
		p.names[o.results[0]] = base
		return
	}
	for i, r := range o.results {
		p.names[r] = base + "#" + strconv.Itoa(i)
	}
}

// numbered returns prefix followed by n, from the names in *names (indexed
// by n), which it extends. The functions of a module number their values
// from the same start, so the same names come back in each.
func (p *Printer) numbered(names *[]string, prefix string, n int) string {
	for len(*names) <= n {
		*names = append(*names, prefix+strconv.Itoa(len(*names)))
	}
	return (*names)[n]
}

// ValueName returns how v is spelled in the output.
func (p *Printer) ValueName(v *Value) string {
	if n, ok := p.names[v]; ok {
		return n
	}
	return "<<UNKNOWN SSA VALUE>>"
}

func (p *Printer) newline() {
	p.out.WriteByte('\n')
	for i := 0; i < p.indent; i++ {
		p.out.WriteByte(' ')
	}
}

func (p *Printer) printOp(op *Operation) {
	if leave := p.enterScope(op); leave != nil {
		defer leave()
	}
	if n := len(op.results); n > 0 {
		base := p.ValueName(op.results[0])
		if n > 1 {
			base = strings.TrimSuffix(base, "#0") + ":" + strconv.Itoa(n)
		}
		p.out.WriteString(base)
		p.out.WriteString(" = ")
	}
	if !p.opts.Generic && op.def != nil && op.def.Print != nil {
		p.out.WriteString(p.customName(op))
		// Every op's regions see its default dialect, "" when it has none,
		// as in MLIR: builtin ops nested in func.func keep their prefix.
		p.dialects = append(p.dialects, op.def.DefaultDialect)
		op.def.Print(p, op)
		p.dialects = p.dialects[:len(p.dialects)-1]
	} else {
		p.printGeneric(op)
	}
	if p.opts.DebugInfo {
		p.out.WriteString(" loc(" + op.loc.String() + ")")
	}
}

// customName elides the dialect prefix of the enclosing op's default
// dialect; outside any op that default is "builtin".
func (p *Printer) customName(op *Operation) string {
	d := DialectOf(op.name)
	top := "builtin"
	if len(p.dialects) > 0 {
		top = p.dialects[len(p.dialects)-1]
	}
	if d != "" && d == top {
		return op.name[len(d)+1:]
	}
	return op.name
}

func (p *Printer) printGeneric(op *Operation) {
	writeQuoted(&p.out, op.name)
	p.out.WriteByte('(')
	for i, o := range op.operands {
		if i > 0 {
			p.out.WriteString(", ")
		}
		p.out.WriteString(p.ValueName(o.value))
	}
	p.out.WriteByte(')')
	if len(op.Successors()) > 0 {
		p.out.WriteByte('[')
		for i, s := range op.Successors() {
			if i > 0 {
				p.out.WriteString(", ")
			}
			p.PrintSuccessor(s)
		}
		p.out.WriteByte(']')
	}
	if op.props != nil {
		p.out.WriteString(" <{")
		p.writeShared(op.props)
		p.out.WriteString("}>")
	}
	if len(op.Regions()) > 0 {
		saved := p.dialects
		p.dialects = append(p.dialects, "")
		p.out.WriteString(" (")
		for i, r := range op.Regions() {
			if i > 0 {
				p.out.WriteString(", ")
			}
			p.printRegion(r, true, true, true)
		}
		p.out.WriteByte(')')
		p.dialects = saved
	}
	if op.attrs != nil && op.attrs.Get(resourcesAttr) == nil {
		p.out.WriteString(" {")
		p.writeShared(op.attrs)
		p.out.WriteByte('}')
	} else {
		p.PrintAttrDict(op.Attributes())
	}
	p.out.WriteString(" : (")
	// Written directly rather than through FunctionOf, which would intern a
	// type per op: printing is dominated by this signature.
	for i, o := range op.operands {
		if i > 0 {
			p.out.WriteString(", ")
		}
		p.out.WriteString(o.value.typ.String())
	}
	p.out.WriteString(") -> ")
	p.writeResultTypes(op.results)
}

// writeShared writes the entries of an op's dictionary. The parser gives
// ops with equal dictionaries one pointer (Parser.newOperation), so the
// text of a pointer met before is kept and written again rather than
// formatted anew, which is most of the work of printing such an op. A
// pointer's text is kept the second time it is met; ops built one by one
// have a dictionary each, and the cache is cleared when it reaches
// maxSharedDicts.
func (p *Printer) writeShared(d *DictAttr) {
	text, seen := p.sharedDicts[d]
	if text != "" {
		p.out.WriteString(text)
		return
	}
	start := p.out.Len()
	d.writeEntries(&p.out)
	if seen {
		p.sharedDicts[d] = string(p.out.Bytes()[start:])
		return
	}
	if p.sharedDicts == nil || len(p.sharedDicts) >= maxSharedDicts {
		p.sharedDicts = map[*DictAttr]string{}
	}
	p.sharedDicts[d] = ""
}

// maxSharedDicts bounds the dictionaries writeShared remembers.
const maxSharedDicts = 1024

// writeResultTypes writes op results as a function type's results.
func (p *Printer) writeResultTypes(rs []*Value) {
	if len(rs) == 1 {
		if _, isFn := rs[0].typ.(*FunctionType); !isFn {
			p.out.WriteString(rs[0].typ.String())
			return
		}
	}
	p.out.WriteByte('(')
	for i, r := range rs {
		if i > 0 {
			p.out.WriteString(", ")
		}
		p.out.WriteString(r.typ.String())
	}
	p.out.WriteByte(')')
}

// PrintRegion prints { blocks } for a custom syntax. The entry block's label
// is printed when printEntryArgs and it has arguments; terminators are left
// out when !printTerminators and the region is a single block.
func (p *Printer) PrintRegion(r *Region, printEntryArgs, printTerminators bool) {
	p.printRegion(r, printEntryArgs, printTerminators, false)
}

// printRegion is PrintRegion that, with printEmptyBlock, also labels an empty
// entry block, as the generic form does so that it survives a round trip.
func (p *Printer) printRegion(r *Region, printEntryArgs, printTerminators, printEmptyBlock bool) {
	p.out.WriteByte('{')
	p.indent += 2
	// The predecessors of every block, in one pass over the terminators
	// (Block.Predecessors per block would scan the region for each).
	var preds map[*Block][]*Block
	for b := r.first; b != nil; b = b.next {
		if b.last == nil {
			continue
		}
		for _, s := range b.last.Successors() {
			if preds == nil {
				preds = map[*Block][]*Block{}
			}
			preds[s] = append(preds[s], b)
		}
	}
	for b := r.first; b != nil; b = b.next {
		entry := b == r.first
		if !entry || (printEntryArgs && len(b.args) > 0) || (printEmptyBlock && b.first == nil) {
			p.printBlockHeader(b, preds[b])
		}
		for o := b.first; o != nil; o = o.next {
			if !printTerminators && o == b.last && r.first == r.last && o.HasTrait(Terminator) && len(o.operands) == 0 && len(o.results) == 0 {
				continue
			}
			p.newline()
			p.printOp(o)
			p.flush(false)
		}
	}
	p.indent -= 2
	p.newline()
	p.out.WriteByte('}')
}

// printBlockHeader prints b's label, arguments and, in a comment, its
// predecessors preds.
func (p *Printer) printBlockHeader(b *Block, preds []*Block) {
	p.indent -= 2
	p.newline()
	p.indent += 2
	p.out.WriteString(p.blocks[b])
	if len(b.args) > 0 {
		p.out.WriteByte('(')
		for i, a := range b.args {
			if i > 0 {
				p.out.WriteString(", ")
			}
			p.out.WriteString(p.ValueName(a) + ": " + a.typ.String())
			if p.opts.DebugInfo {
				p.out.WriteString(" loc(" + a.Loc().String() + ")")
			}
		}
		p.out.WriteByte(')')
	}
	p.out.WriteByte(':')
	if len(preds) == 0 {
		return
	}
	names := make([]string, 0, len(preds))
	seen := map[*Block]bool{}
	for _, pb := range preds {
		if !seen[pb] {
			seen[pb] = true
			names = append(names, p.blocks[pb])
		}
	}
	sort.Slice(names, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimPrefix(names[i], "^bb"))
		b, _ := strconv.Atoi(strings.TrimPrefix(names[j], "^bb"))
		return a < b
	})
	if len(names) == 1 {
		p.out.WriteString("  // pred: " + names[0])
	} else {
		p.out.WriteString("  // " + strconv.Itoa(len(names)) + " preds: " + strings.Join(names, ", "))
	}
}

// Write writes s verbatim.
func (p *Printer) Write(s string) { p.out.WriteString(s) }

// PrintOperand writes v's name.
func (p *Printer) PrintOperand(v *Value) { p.out.WriteString(p.ValueName(v)) }

// PrintOperands writes comma-separated operand names.
func (p *Printer) PrintOperands(vs []*Value) {
	for i, v := range vs {
		if i > 0 {
			p.out.WriteString(", ")
		}
		p.PrintOperand(v)
	}
}

// PrintType writes t.
func (p *Printer) PrintType(t Type) { p.out.WriteString(t.String()) }

// PrintTypes writes comma-separated types.
func (p *Printer) PrintTypes(ts []Type) {
	for i, t := range ts {
		if i > 0 {
			p.out.WriteString(", ")
		}
		p.out.WriteString(t.String())
	}
}

// PrintResultTypes writes a result list as a function signature does.
func (p *Printer) PrintResultTypes(ts []Type) {
	var b strings.Builder
	writeResultTypes(&b, ts)
	p.out.WriteString(b.String())
}

// PrintAttr writes a.
func (p *Printer) PrintAttr(a Attribute) { p.out.WriteString(a.String()) }

// PrintAttrDict writes " {...}" with the entries of d not named in elide;
// nothing if none remain.
func (p *Printer) PrintAttrDict(d DictAttr, elide ...string) {
	p.printDict(d, " {", elide)
}

// PrintAttrDictWithKeyword writes " attributes {...}" like PrintAttrDict.
func (p *Printer) PrintAttrDictWithKeyword(d DictAttr, elide ...string) {
	p.printDict(d, " attributes {", elide)
}

func (p *Printer) printDict(d DictAttr, open string, elide []string) {
	keep := d
	for _, na := range d {
		if na.Name == resourcesAttr || containsString(elide, na.Name) {
			keep = nil // rare: filter into a copy
			for _, na := range d {
				if na.Name != resourcesAttr && !containsString(elide, na.Name) {
					keep = append(keep, na)
				}
			}
			break
		}
	}
	if len(keep) == 0 {
		return
	}
	p.out.WriteString(open)
	keep.writeEntries(&p.out)
	p.out.WriteByte('}')
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// PrintSuccessor writes a block's label.
func (p *Printer) PrintSuccessor(b *Block) {
	if n, ok := p.blocks[b]; ok {
		p.out.WriteString(n)
		return
	}
	p.out.WriteString("^<<UNKNOWN BLOCK>>")
}

// PrintArgument writes "%name: type" and its attributes, for signatures.
func (p *Printer) PrintArgument(v *Value, attrs DictAttr) {
	p.out.WriteString(p.ValueName(v) + ": " + v.typ.String())
	p.PrintAttrDict(attrs)
}

// PrintSymbolName writes @name.
func (p *Printer) PrintSymbolName(name string) { p.out.WriteString(symbolName(name)) }
