package ir

// Builder creates operations at an insertion point.
type Builder struct {
	Ctx    *Context
	block  *Block
	before *Operation // insert before this op; nil means at the end of block
	// OnInsert, when set, is told about every op the builder inserts.
	OnInsert func(*Operation)
}

// NewBuilder returns a builder with no insertion point.
func NewBuilder(ctx *Context) *Builder { return &Builder{Ctx: ctx} }

// SetInsertionPointBefore makes new ops go just before op.
func (b *Builder) SetInsertionPointBefore(op *Operation) { b.block, b.before = op.block, op }

// SetInsertionPointAfter makes new ops go just after op.
func (b *Builder) SetInsertionPointAfter(op *Operation) { b.block, b.before = op.block, op.next }

// SetInsertionPointToEnd makes new ops go at the end of blk.
func (b *Builder) SetInsertionPointToEnd(blk *Block) { b.block, b.before = blk, nil }

// SetInsertionPointToStart makes new ops go at the start of blk.
func (b *Builder) SetInsertionPointToStart(blk *Block) { b.block, b.before = blk, blk.first }

// InsertionBlock returns the block new ops go into, or nil.
func (b *Builder) InsertionBlock() *Block { return b.block }

// Insert inserts a detached op at the insertion point (if there is one) and returns it.
func (b *Builder) Insert(op *Operation) *Operation {
	if b.block != nil {
		b.block.insertBefore(op, b.before)
		if b.OnInsert != nil {
			b.OnInsert(op)
		}
	}
	return op
}

// Create builds an op from st and inserts it.
func (b *Builder) Create(st OperationState) *Operation {
	return b.Insert(NewOperation(b.Ctx, st))
}

// Op is a shorthand for Create with operands, result types and properties.
func (b *Builder) Op(name string, loc Location, operands []*Value, results []Type, props ...NamedAttr) *Operation {
	return b.Insert(newOperation(b.Ctx, name, loc, operands, results, dictRef(Dict(props...)), nil, nil, nil))
}
