package loop

import "github.com/strata-ir/strata/ir"

// Builders. Each inserts its op at b's insertion point. Region-holding ops
// take Go callbacks that build their bodies with a builder positioned in the
// new block (sharing b's context and OnInsert hook) and return the values
// the body's terminator passes on; the builder inserts that terminator.

// Alloc inserts loop.alloc of a buffer of type t, whose dynamic dims take
// their sizes from dynSizes (one index value per "?", in order), and
// returns the buffer.
func Alloc(b *ir.Builder, loc ir.Location, t *ir.MemRefType, dynSizes ...*ir.Value) *ir.Value {
	return b.Op(AllocOp, loc, dynSizes, []ir.Type{t}).Result(0)
}

// Dealloc inserts loop.dealloc of the buffer m.
func Dealloc(b *ir.Builder, loc ir.Location, m *ir.Value) *ir.Operation {
	return b.Op(DeallocOp, loc, []*ir.Value{m}, nil)
}

// Load inserts loop.load of m at indices (one index value per dim) and
// returns the element read.
func Load(b *ir.Builder, loc ir.Location, m *ir.Value, indices ...*ir.Value) *ir.Value {
	elem := ir.ElementTypeOf(m.Type())
	return b.Op(LoadOp, loc, append([]*ir.Value{m}, indices...), []ir.Type{elem}).Result(0)
}

// Store inserts loop.store of v into m at indices.
func Store(b *ir.Builder, loc ir.Location, v, m *ir.Value, indices ...*ir.Value) *ir.Operation {
	return b.Op(StoreOp, loc, append([]*ir.Value{v, m}, indices...), nil)
}

// Dim inserts loop.dim reading the size of dimension dim of m.
func Dim(b *ir.Builder, loc ir.Location, m *ir.Value, dim int) *ir.Value {
	return b.Op(DimOp, loc, []*ir.Value{m}, []ir.Type{ir.Index},
		ir.NamedAttr{Name: IndexAttr, Value: ir.Int(int64(dim), ir.I64)}).Result(0)
}

// Yield inserts loop.yield of vals.
func Yield(b *ir.Builder, loc ir.Location, vals ...*ir.Value) *ir.Operation {
	return b.Op(YieldOp, loc, vals, nil)
}

// ForBody builds a loop.for body: given the induction variable and the
// current iter values, it returns the next iter values.
type ForBody func(b *ir.Builder, iv *ir.Value, iters []*ir.Value) []*ir.Value

// For inserts loop.for from lb to ub by step carrying inits, builds its body
// with body (which may be nil when there are no inits: an empty body), and
// returns the op; its results are the final iter values.
func For(b *ir.Builder, loc ir.Location, lb, ub, step *ir.Value, inits []*ir.Value, body ForBody) *ir.Operation {
	types := valueTypes(inits)
	blk := ir.NewBlock(append([]ir.Type{ir.Index}, types...)...)
	op := b.Create(ir.OperationState{
		Name:        ForOp,
		Loc:         loc,
		Operands:    append([]*ir.Value{lb, ub, step}, inits...),
		ResultTypes: types,
		Regions:     []*ir.Region{regionOf(blk)},
	})
	nb := nested(b, blk)
	var next []*ir.Value
	if body != nil {
		next = body(nb, blk.Argument(0), blk.Arguments()[1:])
	}
	Yield(nb, loc, next...)
	return op
}

// ParallelBody builds a loop.parallel body: given the N induction variables,
// it returns the K values this iteration contributes to the reductions.
type ParallelBody func(b *ir.Builder, ivs []*ir.Value) []*ir.Value

// Combiner builds a reduction's combiner region: it returns the combination
// of lhs and rhs, of their type. It must be associative and commutative.
type Combiner func(b *ir.Builder, lhs, rhs *ir.Value) *ir.Value

// Parallel inserts a loop.parallel nest over lbs, ubs and steps (N each)
// with one reduction per init, combined by the matching combiner, and
// returns the op; its results are the reduced values. body may be nil for
// an empty nest without reductions. Parallel panics if the counts of lbs,
// ubs, steps or of inits and combiners differ: that is a bug in the caller,
// not bad input.
func Parallel(b *ir.Builder, loc ir.Location, lbs, ubs, steps, inits []*ir.Value, body ParallelBody, combiners ...Combiner) *ir.Operation {
	n, k := len(lbs), len(inits)
	if len(ubs) != n || len(steps) != n || len(combiners) != k {
		panic("loop.Parallel: mismatched numbers of bounds, steps, inits or combiners")
	}
	operands := make([]*ir.Value, 0, 3*n+k)
	operands = append(append(append(append(operands, lbs...), ubs...), steps...), inits...)
	types := valueTypes(inits)
	blk := ir.NewBlock(repeat(ir.Index, n)...)
	op := b.Create(ir.OperationState{
		Name:        ParallelOp,
		Loc:         loc,
		Operands:    operands,
		ResultTypes: types,
		Properties: ir.Dict(ir.NamedAttr{Name: SegmentsAttr, Value: ir.DenseArrayAttr{
			Elem: ir.I32, Values: []int64{int64(n), int64(n), int64(n), int64(k)},
		}}),
		Regions: []*ir.Region{regionOf(blk)},
	})
	nb := nested(b, blk)
	var vals []*ir.Value
	if body != nil {
		vals = body(nb, blk.Arguments())
	}
	regions := make([]*ir.Region, len(combiners))
	blocks := make([]*ir.Block, len(combiners))
	for i, t := range types {
		blocks[i] = ir.NewBlock(t, t)
		regions[i] = regionOf(blocks[i])
	}
	nb.Create(ir.OperationState{Name: ReduceOp, Loc: loc, Operands: vals, Regions: regions})
	for i, c := range combiners {
		cb := nested(b, blocks[i])
		Yield(cb, loc, c(cb, blocks[i].Argument(0), blocks[i].Argument(1)))
	}
	return op
}

// IfBody builds a region of loop.if and returns the values it yields.
type IfBody func(b *ir.Builder) []*ir.Value

// If inserts loop.if on cond with results of the given types, building the
// then region with then and the else region with els, and returns the op.
// A nil els leaves the else region empty, which is valid only without
// results.
func If(b *ir.Builder, loc ir.Location, cond *ir.Value, results []ir.Type, then, els IfBody) *ir.Operation {
	thenBlk := ir.NewBlock()
	elseRegion := ir.NewRegion()
	var elseBlk *ir.Block
	if els != nil {
		elseBlk = ir.NewBlock()
		elseRegion.Append(elseBlk)
	}
	op := b.Create(ir.OperationState{
		Name:        IfOp,
		Loc:         loc,
		Operands:    []*ir.Value{cond},
		ResultTypes: results,
		Regions:     []*ir.Region{regionOf(thenBlk), elseRegion},
	})
	for _, r := range []struct {
		blk  *ir.Block
		body IfBody
	}{{thenBlk, then}, {elseBlk, els}} {
		if r.blk == nil {
			continue
		}
		nb := nested(b, r.blk)
		var vals []*ir.Value
		if r.body != nil {
			vals = r.body(nb)
		}
		Yield(nb, loc, vals...)
	}
	return op
}

// Accessors.

// ForBounds returns loop.for's lower bound, upper bound and step.
func ForBounds(op *ir.Operation) (lb, ub, step *ir.Value) {
	return op.Operand(0), op.Operand(1), op.Operand(2)
}

// ForInits returns loop.for's initial iter values.
func ForInits(op *ir.Operation) []*ir.Value { return op.Operands()[3:] }

// ParallelBounds returns loop.parallel's lower bounds, upper bounds, steps
// and inits, split by its operandSegmentSizes.
func ParallelBounds(op *ir.Operation) (lbs, ubs, steps, inits []*ir.Value, err error) {
	n, _, err := Segments(op)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	vs := op.Operands()
	return vs[:n], vs[n : 2*n], vs[2*n : 3*n], vs[3*n:], nil
}

// Body returns the single block of a loop.for or loop.parallel, or nil.
func Body(op *ir.Operation) *ir.Block {
	if op.NumRegions() == 0 {
		return nil
	}
	return op.Region(0).Front()
}

func nested(b *ir.Builder, blk *ir.Block) *ir.Builder {
	nb := &ir.Builder{Ctx: b.Ctx, OnInsert: b.OnInsert}
	nb.SetInsertionPointToEnd(blk)
	return nb
}

func regionOf(blk *ir.Block) *ir.Region {
	r := ir.NewRegion()
	r.Append(blk)
	return r
}

func valueTypes(vs []*ir.Value) []ir.Type {
	ts := make([]ir.Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type()
	}
	return ts
}
