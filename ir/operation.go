package ir

import (
	"iter"
	"math"
	"slices"
)

// Value is an SSA value: an operation result or a block argument.
type Value struct {
	typ      Type
	firstUse *OpOperand
	op       *Operation // defining op, for results
	block    *Block     // owning block, for arguments
	index    int        // result or argument number
}

// Type returns the value's type.
func (v *Value) Type() Type { return v.typ }

// SetType changes the value's type (used by type conversion).
func (v *Value) SetType(t Type) { v.typ = t }

// DefiningOp returns the op that defines v, or nil for a block argument.
func (v *Value) DefiningOp() *Operation { return v.op }

// ParentBlock returns the block that v is defined in.
func (v *Value) ParentBlock() *Block {
	if v.op != nil {
		return v.op.block
	}
	return v.block
}

// IsBlockArgument reports whether v is a block argument.
func (v *Value) IsBlockArgument() bool { return v.op == nil }

// Index returns v's position among its op's results or its block's arguments.
func (v *Value) Index() int { return v.index }

// Uses iterates over the operands that read v.
func (v *Value) Uses() iter.Seq[*OpOperand] {
	return func(yield func(*OpOperand) bool) {
		for u := v.firstUse; u != nil; {
			next := u.next
			if !yield(u) {
				return
			}
			u = next
		}
	}
}

// Users returns the ops that read v, in use-list order (with repeats).
func (v *Value) Users() []*Operation {
	var ops []*Operation
	for u := range v.Uses() {
		ops = append(ops, u.owner)
	}
	return ops
}

// HasUses reports whether anything reads v.
func (v *Value) HasUses() bool { return v.firstUse != nil }

// HasOneUse reports whether exactly one operand reads v.
func (v *Value) HasOneUse() bool { return v.firstUse != nil && v.firstUse.next == nil }

// ReplaceAllUsesWith makes every reader of v read w instead.
func (v *Value) ReplaceAllUsesWith(w *Value) {
	if v == w {
		return
	}
	for u := range v.Uses() {
		u.Set(w)
	}
}

// OpOperand is one operand slot of an operation; it is an entry in its
// value's use list.
type OpOperand struct {
	value      *Value
	owner      *Operation
	index      int
	prev, next *OpOperand
}

// Get returns the value read.
func (o *OpOperand) Get() *Value { return o.value }

// Owner returns the op that has this operand.
func (o *OpOperand) Owner() *Operation { return o.owner }

// Index returns the operand's position.
func (o *OpOperand) Index() int { return o.index }

// Set makes the operand read v.
func (o *OpOperand) Set(v *Value) {
	o.unlink()
	o.value = v
	o.link()
}

func (o *OpOperand) link() {
	if o.value == nil {
		return
	}
	o.prev = nil
	o.next = o.value.firstUse
	if o.next != nil {
		o.next.prev = o
	}
	o.value.firstUse = o
}

func (o *OpOperand) unlink() {
	if o.value == nil {
		return
	}
	if o.prev != nil {
		o.prev.next = o.next
	} else {
		o.value.firstUse = o.next
	}
	if o.next != nil {
		o.next.prev = o.prev
	}
	o.prev, o.next = nil, nil
}

// Operation is the unit of the IR.
//
// A large module holds millions of ops, so the struct keeps what most ops
// lack out of line: regions and successors live in nested (nil for an op
// with neither), and each attribute dictionary is a pointer (nil when
// empty) that the parser shares among the ops whose dictionaries have the
// same text.
type Operation struct {
	name         string
	def          *OpDef // nil when unregistered
	operands     []*OpOperand
	results      []*Value
	props, attrs *DictAttr
	loc          Location
	nested       *opNested

	block      *Block
	prev, next *Operation
}

// opNested holds an op's regions and successors.
type opNested struct {
	regions    []*Region
	successors []*Block
}

// dictRef returns a pointer to d for an op to keep, nil for an empty d.
func dictRef(d DictAttr) *DictAttr {
	if len(d) == 0 {
		return nil
	}
	r := new(DictAttr) // not &d, which would move d to the heap on every call
	*r = d
	return r
}

// deref returns the dictionary r points to, nil for nil.
func (r *DictAttr) deref() DictAttr {
	if r == nil {
		return nil
	}
	return *r
}

// setNested sets the op's regions and successors, dropping the out-of-line
// part when both are empty.
func (op *Operation) setNested(regions []*Region, successors []*Block) {
	if len(regions) == 0 && len(successors) == 0 {
		op.nested = nil
		return
	}
	op.nested = &opNested{regions: regions, successors: successors}
}

// OperationState collects what an op is made of, before it is created.
type OperationState struct {
	Name        string
	Operands    []*Value
	ResultTypes []Type
	Properties  DictAttr
	Attributes  DictAttr
	Regions     []*Region
	Successors  []*Block
	Loc         Location
}

// NewOperation creates a detached op from st, looking its definition up in ctx
// (ctx may be nil for an unregistered op). The regions in st are moved into it.
func NewOperation(ctx *Context, st OperationState) *Operation {
	return newOperation(ctx, st.Name, st.Loc, st.Operands, st.ResultTypes, dictRef(st.Properties), dictRef(st.Attributes), st.Regions, st.Successors)
}

// newOperation is NewOperation with the state spread out: escape analysis
// then sees that only the elements of operands and types are kept, so the
// slices callers build for them can stay on their stacks.
func newOperation(ctx *Context, name string, loc Location, operands []*Value, types []Type, props, attrs *DictAttr, regions []*Region, successors []*Block) *Operation {
	op := allocOp(len(types), len(operands))
	op.name = name
	op.props, op.attrs = props, attrs
	op.loc = loc
	if op.loc == nil {
		op.loc = UnknownLoc{}
	}
	if ctx != nil {
		if op.def = ctx.OpDef(name); op.def == nil {
			op.def = unknownOpDef(ctx, name)
		}
	}
	for i, t := range types {
		op.results[i].typ = t
	}
	for i, v := range operands {
		op.operands[i].value = v
		op.operands[i].link()
	}
	var rs []*Region
	for _, r := range regions {
		if r == nil {
			r = &Region{}
		}
		r.parent = op
		rs = append(rs, r)
	}
	op.setNested(rs, slices.Clone(successors))
	return op
}

// Ops with one result (or none) and up to three operands, most of them, are
// allocated as one object with their results and operand slots; the
// garbage collector then has one object to track instead of five.
type (
	opWith1 struct {
		op       Operation
		results  [1]*Value
		values   [1]Value
		operands [1]*OpOperand
		slots    [1]OpOperand
	}
	opWith2 struct {
		op       Operation
		results  [1]*Value
		values   [1]Value
		operands [2]*OpOperand
		slots    [2]OpOperand
	}
	opWith3 struct {
		op       Operation
		results  [1]*Value
		values   [1]Value
		operands [3]*OpOperand
		slots    [3]OpOperand
	}
)

// allocOp returns a detached op with nResults results (typed later) and
// nOperands unlinked operand slots.
func allocOp(nResults, nOperands int) *Operation {
	var (
		op       *Operation
		results  []*Value
		values   []Value
		operands []*OpOperand
		slots    []OpOperand
	)
	switch {
	case nResults <= 1 && nOperands <= 1:
		s := new(opWith1)
		op = &s.op
		results, values = s.results[:nResults:nResults], s.values[:nResults:nResults]
		operands, slots = s.operands[:nOperands:nOperands], s.slots[:nOperands:nOperands]
	case nResults <= 1 && nOperands == 2: // binary ops, the most common: 384 bytes, not 416
		s := new(opWith2)
		op = &s.op
		results, values = s.results[:nResults:nResults], s.values[:nResults:nResults]
		operands, slots = s.operands[:nOperands:nOperands], s.slots[:nOperands:nOperands]
	case nResults <= 1 && nOperands <= 3:
		s := new(opWith3)
		op = &s.op
		results, values = s.results[:nResults:nResults], s.values[:nResults:nResults]
		operands, slots = s.operands[:nOperands:nOperands], s.slots[:nOperands:nOperands]
	default:
		op = new(Operation)
		results, values = make([]*Value, nResults), make([]Value, nResults)
		operands, slots = make([]*OpOperand, nOperands), make([]OpOperand, nOperands)
	}
	for i := range values {
		values[i] = Value{op: op, index: i}
		results[i] = &values[i]
	}
	for i := range slots {
		slots[i] = OpOperand{owner: op, index: i}
		operands[i] = &slots[i]
	}
	op.results, op.operands = results, operands
	return op
}

// Name returns the op's full name, such as "arith.addf".
func (op *Operation) Name() string { return op.name }

// Def returns the op's registered definition, or nil.
func (op *Operation) Def() *OpDef {
	if op.def != nil && op.def.unknown {
		return nil
	}
	return op.def
}

// Registered reports whether the op has a definition.
func (op *Operation) Registered() bool { return op.def != nil && !op.def.unknown }

// HasTrait reports whether the op is registered with trait t.
func (op *Operation) HasTrait(t Trait) bool { return op.def != nil && op.def.Traits&t != 0 }

// Loc returns the op's location.
func (op *Operation) Loc() Location { return op.loc }

// SetLoc sets the op's location.
func (op *Operation) SetLoc(l Location) { op.loc = l }

// NumOperands returns the number of operands.
func (op *Operation) NumOperands() int { return len(op.operands) }

// Operand returns operand i.
func (op *Operation) Operand(i int) *Value { return op.operands[i].value }

// Operands returns the operand values.
func (op *Operation) Operands() []*Value {
	vs := make([]*Value, len(op.operands))
	for i, o := range op.operands {
		vs[i] = o.value
	}
	return vs
}

// OpOperands returns the operand slots.
func (op *Operation) OpOperands() []*OpOperand { return op.operands }

// SetOperand makes operand i read v.
func (op *Operation) SetOperand(i int, v *Value) { op.operands[i].Set(v) }

// SetOperands replaces all operands.
func (op *Operation) SetOperands(vs []*Value) {
	for _, o := range op.operands {
		o.unlink()
	}
	op.operands = make([]*OpOperand, len(vs))
	slots := make([]OpOperand, len(vs)) // one allocation for all operands
	for i, v := range vs {
		slots[i] = OpOperand{value: v, owner: op, index: i}
		op.operands[i] = &slots[i]
		op.operands[i].link()
	}
}

// NumResults returns the number of results.
func (op *Operation) NumResults() int { return len(op.results) }

// Result returns result i.
func (op *Operation) Result(i int) *Value { return op.results[i] }

// Results returns the results.
func (op *Operation) Results() []*Value { return op.results }

// ResultTypes returns the result types.
func (op *Operation) ResultTypes() []Type {
	ts := make([]Type, len(op.results))
	for i, r := range op.results {
		ts[i] = r.typ
	}
	return ts
}

// OperandTypes returns the operand types.
func (op *Operation) OperandTypes() []Type {
	ts := make([]Type, len(op.operands))
	for i, o := range op.operands {
		ts[i] = o.value.typ
	}
	return ts
}

// Properties returns the inherent attributes, printed in <{...}>.
func (op *Operation) Properties() DictAttr { return op.props.deref() }

// Attributes returns the discardable attributes, printed in {...}.
func (op *Operation) Attributes() DictAttr { return op.attrs.deref() }

// Attr returns the property or, failing that, the discardable attribute named name.
func (op *Operation) Attr(name string) Attribute {
	if a := op.props.deref().Get(name); a != nil {
		return a
	}
	return op.attrs.deref().Get(name)
}

// SetProperty sets (or with nil removes) an inherent attribute.
func (op *Operation) SetProperty(name string, v Attribute) {
	op.props = dictRef(op.props.deref().With(name, v))
}

// SetAttr sets (or with nil removes) a discardable attribute.
func (op *Operation) SetAttr(name string, v Attribute) {
	op.attrs = dictRef(op.attrs.deref().With(name, v))
}

// SetAttributes replaces the discardable attributes.
func (op *Operation) SetAttributes(d DictAttr) { op.attrs = dictRef(d) }

// SetProperties replaces the inherent attributes.
func (op *Operation) SetProperties(d DictAttr) { op.props = dictRef(d) }

// Regions returns the op's regions.
func (op *Operation) Regions() []*Region {
	if op.nested == nil {
		return nil
	}
	return op.nested.regions
}

// Region returns region i.
func (op *Operation) Region(i int) *Region { return op.Regions()[i] }

// NumRegions returns the number of regions.
func (op *Operation) NumRegions() int { return len(op.Regions()) }

// Successors returns the successor blocks of a terminator.
func (op *Operation) Successors() []*Block {
	if op.nested == nil {
		return nil
	}
	return op.nested.successors
}

// SetSuccessor replaces successor i.
func (op *Operation) SetSuccessor(i int, b *Block) { op.Successors()[i] = b }

// Block returns the block containing op, or nil when detached.
func (op *Operation) Block() *Block { return op.block }

// ParentOp returns the op whose region contains op, or nil.
func (op *Operation) ParentOp() *Operation {
	if op.block == nil || op.block.parent == nil {
		return nil
	}
	return op.block.parent.parent
}

// ParentRegion returns the region containing op, or nil.
func (op *Operation) ParentRegion() *Region {
	if op.block == nil {
		return nil
	}
	return op.block.parent
}

// Next returns the op after op in its block, or nil.
func (op *Operation) Next() *Operation { return op.next }

// Prev returns the op before op in its block, or nil.
func (op *Operation) Prev() *Operation { return op.prev }

// IsAncestor reports whether op is anc or nested (at any depth) inside anc.
func (op *Operation) IsAncestor(anc *Operation) bool {
	for o := op; o != nil; o = o.ParentOp() {
		if o == anc {
			return true
		}
	}
	return false
}

// ParentOfType returns the nearest enclosing op named name, or nil.
func (op *Operation) ParentOfType(name string) *Operation {
	for o := op.ParentOp(); o != nil; o = o.ParentOp() {
		if o.name == name {
			return o
		}
	}
	return nil
}

// Remove unlinks op from its block without touching its operands.
func (op *Operation) Remove() {
	if op.block != nil {
		op.block.unlinkOp(op)
	}
}

// Erase removes op from its block and drops its operand uses, and those of
// every op nested in it. Its results must no longer be used.
func (op *Operation) Erase() {
	op.Remove()
	op.dropAllReferences()
}

func (op *Operation) dropAllReferences() {
	for _, o := range op.operands {
		o.unlink()
		o.value = nil
	}
	for _, r := range op.Regions() {
		for _, b := range r.Blocks() {
			for _, nested := range b.Ops() {
				nested.dropAllReferences()
			}
		}
	}
}

// MoveBefore moves op to just before other (in other's block).
func (op *Operation) MoveBefore(other *Operation) {
	op.Remove()
	other.block.insertBefore(op, other)
}

// MoveAfter moves op to just after other.
func (op *Operation) MoveAfter(other *Operation) {
	op.Remove()
	other.block.insertBefore(op, other.next)
}

// IsBeforeInBlock reports whether op comes before other in their common
// block (false when they are in different blocks or in none). It takes
// constant time but after a change to the block that left no room in
// the numbering of its ops, which renumbers them (MLIR's op order
// cache): passes that ask it for many pairs of a large block stay linear.
func (op *Operation) IsBeforeInBlock(other *Operation) bool {
	b := op.block
	if b == nil || other.block != b {
		return false
	}
	if b.order == nil {
		b.renumber()
	}
	return b.order[op] < b.order[other]
}

// orderStride is the gap renumber leaves between neighbouring ops, so
// that ops inserted later can take a number without a renumbering.
const orderStride = 8

// renumber gives b's ops increasing order numbers.
func (b *Block) renumber() {
	b.order = map[*Operation]uint32{}
	n := uint32(0)
	for o := b.first; o != nil; o = o.next {
		n += orderStride
		b.order[o] = n
	}
}

// Walk visits op and every op nested in it, parents before children
// (pre-order). Returning false from f skips the op's regions.
func (op *Operation) Walk(f func(*Operation) bool) {
	if !f(op) {
		return
	}
	for _, r := range op.Regions() {
		for b := r.first; b != nil; b = b.next {
			for o := b.first; o != nil; {
				next := o.next
				o.Walk(f)
				o = next
			}
		}
	}
}

// WalkPost visits every op nested in op and then op itself (post-order). It
// tolerates f erasing the op it is given.
func (op *Operation) WalkPost(f func(*Operation)) {
	for _, r := range op.Regions() {
		for b := r.first; b != nil; b = b.next {
			for o := b.first; o != nil; {
				next := o.next
				o.WalkPost(f)
				o = next
			}
		}
	}
	f(op)
}

// Clone deep-copies op with its regions; operands defined outside op are
// mapped through m (and kept when absent from m). m receives the mapping of
// every value defined by the copy.
func (op *Operation) Clone(m map[*Value]*Value) *Operation {
	if m == nil {
		m = map[*Value]*Value{}
	}
	blocks := map[*Block]*Block{}
	return op.clone(m, blocks)
}

func (op *Operation) clone(m map[*Value]*Value, blocks map[*Block]*Block) *Operation {
	operands := make([]*Value, len(op.operands))
	for i, o := range op.operands {
		operands[i] = o.value
		if n, ok := m[o.value]; ok {
			operands[i] = n
		}
	}
	c := allocOp(len(op.results), len(operands))
	c.name, c.def, c.props, c.attrs, c.loc = op.name, op.def, op.props, op.attrs, op.loc
	for i, v := range operands {
		c.operands[i].value = v
		c.operands[i].link()
	}
	for i, r := range op.results {
		c.results[i].typ = r.typ
		m[r] = c.results[i]
	}
	var regions []*Region
	for _, r := range op.Regions() {
		nr := &Region{parent: c}
		regions = append(regions, nr)
		r.cloneInto(nr, m, blocks)
	}
	successors := slices.Clone(op.Successors())
	for i, s := range successors {
		if n, ok := blocks[s]; ok {
			successors[i] = n
		}
	}
	c.setNested(regions, successors)
	return c
}

// Block is a list of operations with arguments, inside a region.
type Block struct {
	args        []*Value
	first, last *Operation
	// order numbers the ops, increasing from first to last, once
	// Operation.IsBeforeInBlock asked (nil: not numbered). It lives here
	// rather than in each op: few blocks are ever asked.
	order      map[*Operation]uint32
	parent     *Region
	prev, next *Block
	// argLocs holds the locations of arguments that have one (see Value.Loc).
	argLocs map[*Value]Location
}

// NewBlock returns a detached block with arguments of the given types.
func NewBlock(argTypes ...Type) *Block {
	b := &Block{}
	for _, t := range argTypes {
		b.AddArgument(t)
	}
	return b
}

// Arguments returns the block arguments.
func (b *Block) Arguments() []*Value { return b.args }

// Argument returns argument i.
func (b *Block) Argument(i int) *Value { return b.args[i] }

// NumArguments returns the number of arguments.
func (b *Block) NumArguments() int { return len(b.args) }

// AddArgument appends an argument of type t and returns it.
func (b *Block) AddArgument(t Type) *Value {
	v := &Value{typ: t, block: b, index: len(b.args)}
	b.args = append(b.args, v)
	return v
}

// EraseArgument removes argument i, which must be unused.
func (b *Block) EraseArgument(i int) {
	b.args = slices.Delete(b.args, i, i+1)
	for j := i; j < len(b.args); j++ {
		b.args[j].index = j
	}
}

// Parent returns the region containing b.
func (b *Block) Parent() *Region { return b.parent }

// ParentOp returns the op whose region contains b.
func (b *Block) ParentOp() *Operation {
	if b.parent == nil {
		return nil
	}
	return b.parent.parent
}

// First returns the first op, or nil.
func (b *Block) First() *Operation { return b.first }

// Last returns the last op, or nil.
func (b *Block) Last() *Operation { return b.last }

// Next returns the next block in the region.
func (b *Block) Next() *Block { return b.next }

// Empty reports whether b holds no ops.
func (b *Block) Empty() bool { return b.first == nil }

// Ops returns the ops in order (a snapshot, safe to mutate the block during).
func (b *Block) Ops() []*Operation {
	var ops []*Operation
	for o := b.first; o != nil; o = o.next {
		ops = append(ops, o)
	}
	return ops
}

// All iterates over the ops in order; the current op may be erased.
func (b *Block) All() iter.Seq[*Operation] {
	return func(yield func(*Operation) bool) {
		for o := b.first; o != nil; {
			next := o.next
			if !yield(o) {
				return
			}
			o = next
		}
	}
}

// Terminator returns the last op if it is registered as a terminator, else nil.
func (b *Block) Terminator() *Operation {
	if b.last != nil && b.last.HasTrait(Terminator) {
		return b.last
	}
	return nil
}

// Append adds op at the end of b.
func (b *Block) Append(op *Operation) { b.insertBefore(op, nil) }

// InsertBefore inserts op before ref (at the end when ref is nil).
func (b *Block) InsertBefore(op, ref *Operation) { b.insertBefore(op, ref) }

func (b *Block) insertBefore(op, ref *Operation) {
	op.block = b
	op.next = ref
	if ref == nil {
		op.prev = b.last
		b.last = op
	} else {
		op.prev = ref.prev
		ref.prev = op
	}
	if op.prev != nil {
		op.prev.next = op
	} else {
		b.first = op
	}
	if b.order != nil {
		// A number between the neighbours', when there is one.
		lo, hi := uint32(0), uint32(math.MaxUint32)
		if op.prev != nil {
			lo = b.order[op.prev]
		}
		if op.next != nil {
			hi = b.order[op.next]
		}
		switch {
		case op.next == nil && lo <= math.MaxUint32-orderStride:
			b.order[op] = lo + orderStride
		case hi-lo >= 2:
			b.order[op] = lo + (hi-lo)/2
		default:
			b.order = nil
		}
	}
}

func (b *Block) unlinkOp(op *Operation) {
	if op.prev != nil {
		op.prev.next = op.next
	} else {
		b.first = op.next
	}
	if op.next != nil {
		op.next.prev = op.prev
	} else {
		b.last = op.prev
	}
	if b.order != nil {
		delete(b.order, op)
	}
	op.prev, op.next, op.block = nil, nil, nil
}

// Predecessors returns the blocks whose terminators branch to b.
func (b *Block) Predecessors() []*Block {
	var preds []*Block
	if b.parent == nil {
		return nil
	}
	for p := b.parent.first; p != nil; p = p.next {
		if p.last == nil {
			continue
		}
		for _, s := range p.last.Successors() {
			if s == b {
				preds = append(preds, p)
			}
		}
	}
	return preds
}

// Erase removes b from its region and drops the references of its ops.
func (b *Block) Erase() {
	for _, op := range b.Ops() {
		op.dropAllReferences()
	}
	if b.parent != nil {
		b.parent.unlinkBlock(b)
	}
}

// Region is a list of blocks owned by an operation.
type Region struct {
	first, last *Block
	parent      *Operation
}

// NewRegion returns an empty region.
func NewRegion() *Region { return &Region{} }

// ParentOp returns the op that owns r.
func (r *Region) ParentOp() *Operation { return r.parent }

// Blocks returns the blocks in order.
func (r *Region) Blocks() []*Block {
	var bs []*Block
	for b := r.first; b != nil; b = b.next {
		bs = append(bs, b)
	}
	return bs
}

// Empty reports whether r has no blocks.
func (r *Region) Empty() bool { return r.first == nil }

// Front returns the entry block, or nil.
func (r *Region) Front() *Block { return r.first }

// Back returns the last block, or nil.
func (r *Region) Back() *Block { return r.last }

// Append adds b at the end of r.
func (r *Region) Append(b *Block) { r.InsertBefore(b, nil) }

// InsertBefore inserts b before ref (at the end when ref is nil).
func (r *Region) InsertBefore(b, ref *Block) {
	b.parent = r
	b.next = ref
	if ref == nil {
		b.prev = r.last
		r.last = b
	} else {
		b.prev = ref.prev
		ref.prev = b
	}
	if b.prev != nil {
		b.prev.next = b
	} else {
		r.first = b
	}
}

func (r *Region) unlinkBlock(b *Block) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		r.first = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		r.last = b.prev
	}
	b.prev, b.next, b.parent = nil, nil, nil
}

// TakeBody moves every block of other into r, leaving other empty.
func (r *Region) TakeBody(other *Region) {
	for _, b := range other.Blocks() {
		other.unlinkBlock(b)
		r.Append(b)
	}
}

// Walk visits every op in r in pre-order (see Operation.Walk).
func (r *Region) Walk(f func(*Operation) bool) {
	for b := r.first; b != nil; b = b.next {
		for o := b.first; o != nil; {
			next := o.next
			o.Walk(f)
			o = next
		}
	}
}

// cloneInto copies r's blocks into dst, mapping values through m.
func (r *Region) cloneInto(dst *Region, m map[*Value]*Value, blocks map[*Block]*Block) {
	src := r.Blocks()
	for _, b := range src {
		nb := &Block{}
		for _, a := range b.args {
			m[a] = nb.AddArgument(a.typ)
		}
		blocks[b] = nb
		dst.Append(nb)
	}
	for _, b := range src {
		nb := blocks[b]
		for o := b.first; o != nil; o = o.next {
			nb.Append(o.clone(m, blocks))
		}
	}
	// Successors and operands that referred forward are fixed up now that
	// every block and value of the region exists.
	for _, b := range src {
		for o := blocks[b].first; o != nil; o = o.next {
			o.Walk(func(n *Operation) bool {
				for i, s := range n.Successors() {
					if nb, ok := blocks[s]; ok {
						n.SetSuccessor(i, nb)
					}
				}
				for _, opd := range n.operands {
					if nv, ok := m[opd.value]; ok && nv != opd.value {
						opd.Set(nv)
					}
				}
				return true
			})
		}
	}
}
