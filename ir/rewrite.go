package ir

// Pattern is a named rewrite rule for ops named Root ("" matches every op).
// Rewrite changes the IR only through the Rewriter and reports whether it did.
type Pattern struct {
	Name    string
	Root    string
	Benefit int
	Rewrite func(r *Rewriter, op *Operation) bool
}

// RewriteListener is told about every change a Rewriter makes, so that
// drivers can revisit the ops involved.
type RewriteListener interface {
	OpInserted(op *Operation)
	OpModified(op *Operation)
	OpErased(op *Operation)
	// OpReplaced is called before op's results are replaced by vals.
	OpReplaced(op *Operation, vals []*Value)
}

// Rewriter is the Builder handed to patterns: every change goes through it.
type Rewriter struct {
	Builder
	Listener RewriteListener // may be nil
}

// NewRewriter returns a rewriter for ctx with no listener.
func NewRewriter(ctx *Context) *Rewriter {
	r := &Rewriter{Builder: Builder{Ctx: ctx}}
	r.OnInsert = func(op *Operation) {
		if r.Listener != nil {
			r.Listener.OpInserted(op)
		}
	}
	return r
}

// ReplaceOp replaces op's results with vals (one per result) and erases op.
func (r *Rewriter) ReplaceOp(op *Operation, vals []*Value) {
	if r.Listener != nil {
		r.Listener.OpReplaced(op, vals)
	}
	for i, res := range op.results {
		if r.Listener != nil {
			for u := range res.Uses() {
				r.Listener.OpModified(u.owner)
			}
		}
		res.ReplaceAllUsesWith(vals[i])
	}
	r.EraseOp(op)
}

// ReplaceAllUsesWith replaces every use of from with to, notifying the users.
func (r *Rewriter) ReplaceAllUsesWith(from, to *Value) {
	if r.Listener != nil {
		for u := range from.Uses() {
			r.Listener.OpModified(u.owner)
		}
	}
	from.ReplaceAllUsesWith(to)
}

// EraseOp erases op (and everything nested in it); its results must be unused.
func (r *Rewriter) EraseOp(op *Operation) {
	if r.Listener != nil {
		op.WalkPost(func(o *Operation) { r.Listener.OpErased(o) })
	}
	op.Erase()
}

// ModifyInPlace runs f, which changes op in place, and reports the change.
func (r *Rewriter) ModifyInPlace(op *Operation, f func()) {
	f()
	if r.Listener != nil {
		r.Listener.OpModified(op)
	}
}

// EraseBlock erases b and every op in it; values it defines must be unused
// outside it.
func (r *Rewriter) EraseBlock(b *Block) {
	if r.Listener != nil {
		for _, op := range b.Ops() {
			op.WalkPost(func(o *Operation) { r.Listener.OpErased(o) })
		}
	}
	b.Erase()
}

// InlineRegionBefore moves every block of region into dest, before the block
// before (at dest's end when before is nil), and reports the moved ops as
// inserted.
func (r *Rewriter) InlineRegionBefore(region, dest *Region, before *Block) {
	for _, b := range region.Blocks() {
		region.unlinkBlock(b)
		dest.InsertBefore(b, before)
		if r.Listener != nil {
			for op := range b.All() {
				op.Walk(func(o *Operation) bool { r.Listener.OpInserted(o); return true })
			}
		}
	}
}
