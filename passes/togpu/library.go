package togpu

import (
	"slices"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The values of convert-loop-to-gpu's matmul option.
const (
	// MatmulMMA runs matmul nests as Strata's own kernels with their
	// epilogue fused (the mma mapping, or SIMT).
	MatmulMMA = "mma"
	// MatmulCuBLASLt runs each matmul nest as a gpu.library_matmul that
	// cuBLASLt computes, followed by the nest's epilogue as an ordinary
	// kernel reading the product (unfused).
	MatmulCuBLASLt = "cublaslt"
)

// matmulOptions are the values of the matmul option, the default first.
var matmulOptions = []string{MatmulMMA, MatmulCuBLASLt}

// libraryMatmul is a matmul nest a library can compute: convert-graph-
// to-loop's
//
//	loop.parallel (%b…, %i, %j) {
//	  %acc = loop.for %k = 0 to K iter(%s = 0.0 : f32) {
//	    %s + extf(A[%b…, %i, %k]) · extf(B[%b…, %k, %j])   (A or B may be stored transposed)
//	  }
//	  epilogue(%acc)
//	}
//
// over bf16 or f16 operands of static shape whose extents are the nest's.
type libraryMatmul struct {
	nest, kloop    *ir.Operation
	a, b           *ir.Value
	transA, transB bool
	elem           ir.Type
	shape          []int64 // of the product: [b…, M, N]
}

// libraryPlan recognizes a nest that gpu.library_matmul can compute, or
// returns nil. Static shapes keep the check simple and exact: the op's
// extents come from its operands, so they must be the nest's bounds.
func libraryPlan(nest *ir.Operation) *libraryMatmul {
	lbs, ubs, steps, inits, err := loop.ParallelBounds(nest)
	rank := len(lbs)
	if err != nil || rank < 2 || len(inits) > 0 {
		return nil
	}
	p := &libraryMatmul{nest: nest}
	for d := range lbs {
		lb, ok1 := staticInt(lbs[d])
		ub, ok2 := staticInt(ubs[d])
		st, ok3 := staticInt(steps[d])
		if !ok1 || !ok2 || !ok3 || lb != 0 || st != 1 || ub < 1 {
			return nil
		}
		p.shape = append(p.shape, ub)
	}
	body := loop.Body(nest)
	for _, o := range body.Ops() {
		if o.Name() == loop.ForOp && o.NumResults() == 1 && p.kloop == nil {
			p.kloop = o
		}
	}
	if p.kloop == nil {
		return nil
	}
	lb, ub, step := loop.ForBounds(p.kloop)
	l, ok1 := staticInt(lb)
	k, ok2 := staticInt(ub)
	s, ok3 := staticInt(step)
	if !ok1 || !ok2 || !ok3 || l != 0 || s != 1 || k < 1 || !isZeroF32(loop.ForInits(p.kloop)[0]) {
		return nil
	}
	kb := p.kloop.Region(0).Front()
	kv, acc := kb.Argument(0), kb.Argument(1)
	y := kb.Terminator()
	if y == nil || y.NumOperands() != 1 || len(kb.Ops()) != 7 {
		return nil
	}
	add := y.Operand(0).DefiningOp()
	if add == nil || add.Name() != "arith.addf" || add.Result(0).Type() != ir.F32 {
		return nil
	}
	prod := add.Operand(1)
	if prod == acc {
		prod = add.Operand(0)
	} else if add.Operand(0) != acc {
		return nil
	}
	mul := prod.DefiningOp()
	if mul == nil || mul.Name() != "arith.mulf" {
		return nil
	}
	nb := rank - 2
	iv, jv := body.Argument(nb), body.Argument(nb+1)
	for _, f := range mul.Operands() {
		ext := f.DefiningOp()
		if ext == nil || ext.Name() != "arith.extf" {
			return nil
		}
		ld := ext.Operand(0).DefiningOp()
		if ld == nil || ld.Name() != loop.LoadOp || ld.NumOperands() != rank+1 || definedIn(ld.Operand(0), nest) {
			return nil
		}
		mem, idx := ld.Operand(0), ld.Operands()[1:]
		mt, _ := mem.Type().(*ir.MemRefType)
		if mt == nil || !allStatic(mt.Shape()) || !slices.Equal(idx[:nb], body.Arguments()[:nb]) {
			return nil
		}
		elem := mt.ElementType()
		if p.elem == nil {
			p.elem = elem
		}
		shape, r, c := mt.Shape(), idx[nb], idx[nb+1]
		var want []int64 // the shape the indices imply
		switch {
		case p.a == nil && r == iv && c == kv:
			p.a, want = mem, []int64{p.shape[nb], k}
		case p.a == nil && r == kv && c == iv:
			p.a, p.transA, want = mem, true, []int64{k, p.shape[nb]}
		case p.b == nil && r == kv && c == jv:
			p.b, want = mem, []int64{k, p.shape[nb+1]}
		case p.b == nil && r == jv && c == kv:
			p.b, p.transB, want = mem, true, []int64{p.shape[nb+1], k}
		default:
			return nil
		}
		if elem != p.elem || !slices.Equal(shape, append(slices.Clone(p.shape[:nb]), want...)) {
			return nil
		}
	}
	if p.a == nil || p.b == nil || (p.elem != ir.BF16 && p.elem != ir.F16) {
		return nil
	}
	return p
}

// lowerLibraryMatmuls replaces every library-computable matmul nest of fn
// by a gpu.library_matmul into a product buffer and the nest's epilogue
// reading it. When the product is only rounded to its element type (a
// bare matmul) into a buffer of that shape, the library writes that
// buffer and the nest disappears; otherwise the product buffer holds the
// rounded product when the epilogue starts by rounding it (as graph's
// matmul does), the f32 sum when it does not, and is freed after the
// nest.
func lowerLibraryMatmuls(ctx *ir.Context, fn *ir.Operation) {
	for _, nest := range topLevelNests(fn) {
		if p := libraryPlan(nest); p != nil {
			p.lower(ctx)
		}
	}
}

func (p *libraryMatmul) lower(ctx *ir.Context) {
	loc := p.nest.Loc()
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(p.nest)
	sum := p.kloop.Result(0)
	// round is the epilogue's rounding of the sum to the operands' type.
	var round *ir.Operation
	if sum.HasOneUse() {
		if u := sum.Users()[0]; u.Name() == "arith.truncf" && u.Result(0).Type() == p.elem {
			round = u
		}
	}
	if out := p.directStore(round); out != nil {
		gpu.LibraryMatmul(b, loc, p.a, p.b, out, p.transA, p.transB)
		p.nest.Erase()
		return
	}
	elem, replaced := ir.Type(ir.F32), sum
	if round != nil {
		elem, replaced = p.elem, round.Result(0)
	}
	prod := loop.Alloc(b, loc, ir.MemRefOf(p.shape, elem))
	gpu.LibraryMatmul(b, loc, p.a, p.b, prod, p.transA, p.transB)
	body := loop.Body(p.nest)
	in := ir.NewBuilder(ctx)
	in.SetInsertionPointBefore(p.kloop)
	replaced.ReplaceAllUsesWith(loop.Load(in, loc, prod, body.Arguments()...))
	if round != nil {
		round.Erase()
	}
	p.kloop.Erase()
	b.SetInsertionPointAfter(p.nest)
	loop.Dealloc(b, loc, prod)
}

// directStore returns the buffer the nest stores the rounded product into
// at [b…, i, j] when that is all the nest does besides constants, or nil.
func (p *libraryMatmul) directStore(round *ir.Operation) *ir.Value {
	if round == nil || !round.Result(0).HasOneUse() {
		return nil
	}
	st := round.Result(0).Users()[0]
	body := loop.Body(p.nest)
	if st.Name() != loop.StoreOp || st.Operand(0) != round.Result(0) || definedIn(st.Operand(1), p.nest) ||
		!slices.Equal(st.Operands()[2:], body.Arguments()) {
		return nil
	}
	out := st.Operand(1)
	if mt, _ := out.Type().(*ir.MemRefType); mt == nil || !slices.Equal(mt.Shape(), p.shape) || mt.ElementType() != p.elem {
		return nil
	}
	for _, o := range body.Ops() {
		if o != p.kloop && o != round && o != st && !o.HasTrait(ir.Terminator) && o.Name() != "arith.constant" {
			return nil
		}
	}
	return out
}
