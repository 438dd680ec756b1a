package togpu

import (
	"math"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// MappingMMA is the tensor-core mapping of matmul nests.
const MappingMMA = "mma"

// The tensor-core tiling: a block of mmaThreads threads (8 warps) computes
// a tileM × tileN output tile, stepping over K by tileK with mmaStages
// shared-memory stages filled by cp.async; warps form a 2 × 4 grid, each
// owning a 64 × 32 tile of 4 × 4 m16n8 accumulators. Blocks walk the
// output tiles in groups of groupM tile rows, column by column, so that
// the blocks resident at one time share A's and B's tiles in L2.
const (
	tileM, tileN, tileK = 128, 128, 32
	mmaStages           = 3
	mmaThreads          = 256
	warpsN              = 4
	warpTileM           = 64
	warpTileN           = 32
	fragsM              = warpTileM / 16 // m16 tiles per warp
	fragsN              = warpTileN / 8  // n8 tiles per warp
	groupM              = 8
)

// mma is the mapping of a matmul nest: convert-graph-to-loop's
//
//	loop.parallel (%b…, %i, %j) {
//	  %acc = loop.for %k = 0 to K step 1 iter(%a = 0.0 : f32) {
//	    A[%b…, %i, %k], B[%b…, %k, %j] (or B[%b…, %j, %k]) of bf16, extf, mulf, addf %a, %p
//	  }
//	  epilogue(%b…, %i, %j, %acc) and stores
//	}
//
// becomes a tiled tensor-core kernel; the epilogue runs once per
// accumulator element (each guarded against the output's bounds unless
// the sizes are multiples of the tile), so the bias, activation, residual
// and cast stay fused. Leading (batch) dimensions are flattened into the
// block index: block z·tiles + t computes tile t of matrix z.
type mma struct {
	kloop    *ir.Operation
	lhs, rhs *ir.Value // A [b…, M, K] and B [b…, K, N] or [b…, N, K] on the host
	elem     ir.Type
	k        int64
	transB   bool    // B is stored [N, K] (q·kᵀ)
	batch    []int64 // static extents of the leading dimensions
	m, n     int64   // static M and N, or ir.Dynamic
	shapeA   []int64
	shapeB   []int64
	width    ir.Type // of the kernel's offset arithmetic: i32 when every offset fits
}

// mmaPlan recognizes a matmul nest that tensor cores can run: bf16
// operands, f32 accumulation from 0, a static K (and, for B stored [K, N],
// a static N) that is a multiple of 8 (16-byte rows for cp.async), unit
// steps from 0, and batch dimensions of static extent that index A and B
// in order. Anything else keeps the SIMT mapping.
func mmaPlan(nest *ir.Operation) *mma {
	lbs, ubs, steps, inits, err := loop.ParallelBounds(nest)
	rank := len(lbs)
	if err != nil || rank < 2 || len(inits) > 0 {
		return nil
	}
	p := &mma{m: ir.Dynamic, n: ir.Dynamic}
	for d := range lbs {
		lb, ok1 := staticInt(lbs[d])
		st, ok2 := staticInt(steps[d])
		if !ok1 || !ok2 || lb != 0 || st != 1 {
			return nil
		}
		ub, ok := staticInt(ubs[d])
		switch {
		case d == rank-2 && ok:
			p.m = ub
		case d == rank-1 && ok:
			p.n = ub
		case d < rank-2 && ok && ub > 0:
			p.batch = append(p.batch, ub)
		case d < rank-2:
			return nil
		}
	}
	body := loop.Body(nest)
	var kloop *ir.Operation
	nested := 0
	nest.Walk(func(o *ir.Operation) bool {
		if o != nest && o.NumRegions() > 0 {
			nested++
			if o.Name() == loop.ForOp && o.ParentOp() == nest {
				kloop = o
			}
		}
		return true
	})
	if kloop == nil || nested != 1 || kloop.NumResults() != 1 {
		return nil
	}
	lb, ub, step := loop.ForBounds(kloop)
	l, ok1 := staticInt(lb)
	kk, ok2 := staticInt(ub)
	s, ok3 := staticInt(step)
	init := loop.ForInits(kloop)[0]
	if !ok1 || !ok2 || !ok3 || l != 0 || s != 1 || kk <= 0 || kk%8 != 0 || !isZeroF32(init) {
		return nil
	}
	kb := kloop.Region(0).Front()
	kv, acc := kb.Argument(0), kb.Argument(1)
	y := kb.Terminator()
	if y == nil || y.NumOperands() != 1 {
		return nil
	}
	add := y.Operand(0).DefiningOp()
	if add == nil || add.Name() != "arith.addf" || add.Result(0).Type() != ir.F32 {
		return nil
	}
	prod := add.Operand(1)
	if add.Operand(1) == acc {
		prod = add.Operand(0)
	} else if add.Operand(0) != acc {
		return nil
	}
	mul := prod.DefiningOp()
	if mul == nil || mul.Name() != "arith.mulf" {
		return nil
	}
	// The two factors: extf of loads A[b…, i, k] and B[b…, k, j] or B[b…, j, k].
	p.kloop = kloop
	nb := len(p.batch)
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
		for d := range nb {
			if idx[d] != body.Argument(d) {
				return nil
			}
		}
		switch r, c := idx[nb], idx[nb+1]; {
		case r == iv && c == kv && p.lhs == nil:
			p.lhs = mem
		case r == kv && c == jv && p.rhs == nil:
			p.rhs = mem
		case r == jv && c == kv && p.rhs == nil:
			p.rhs, p.transB = mem, true
		default:
			return nil
		}
		if p.elem == nil {
			p.elem = ext.Operand(0).Type()
		} else if p.elem != ext.Operand(0).Type() {
			return nil
		}
	}
	if p.lhs == nil || p.rhs == nil || p.elem != ir.BF16 || len(kb.Ops()) != 7 {
		return nil
	}
	at, _ := p.lhs.Type().(*ir.MemRefType)
	bt, _ := p.rhs.Type().(*ir.MemRefType)
	if at == nil || bt == nil {
		return nil
	}
	p.k, p.shapeA, p.shapeB = kk, at.Shape(), bt.Shape()
	kDimB, nDimB := nb, nb+1
	if p.transB {
		kDimB, nDimB = nb+1, nb
	}
	if p.shapeA[nb+1] != kk || p.shapeB[kDimB] != kk {
		return nil
	}
	if !p.transB && (p.shapeB[nDimB] == ir.Dynamic || p.shapeB[nDimB]%8 != 0) {
		return nil
	}
	if nb > 0 {
		// Batched operands are addressed by static strides.
		for d, e := range p.batch {
			if p.shapeA[d] != e || p.shapeB[d] != e {
				return nil
			}
		}
		if !allStatic(p.shapeA) || !allStatic(p.shapeB) || p.m == ir.Dynamic || p.n == ir.Dynamic {
			return nil
		}
	}
	p.width = ir.Index
	if p.fitsI32() {
		p.width = ir.I32
	}
	return p
}

// allStatic reports whether a shape has no dynamic dimension.
func allStatic(shape []int64) bool {
	for _, n := range shape {
		if n == ir.Dynamic {
			return false
		}
	}
	return true
}

// fitsI32 reports whether every offset and block index the kernel
// computes, including those of the tiles' overhang past the matrices'
// edges, is below 2³¹, so that 32-bit arithmetic is exact.
func (p *mma) fitsI32() bool {
	if !allStatic(p.shapeA) || !allStatic(p.shapeB) || p.m == ir.Dynamic || p.n == ir.Dynamic {
		return false
	}
	elems := func(shape []int64) float64 {
		n := 1.0
		for _, d := range shape {
			n *= float64(d)
		}
		return n
	}
	over := float64(2*(tileM+tileN)) * float64(p.k+p.n+tileK)
	blocks := elems(p.batch) * float64(p.tilesM()*p.tilesN())
	lim := float64(math.MaxInt32)
	return elems(p.shapeA)+over < lim && elems(p.shapeB)+over < lim && blocks < lim
}

func (p *mma) tilesM() int64 { return (p.m + tileM - 1) / tileM }
func (p *mma) tilesN() int64 { return (p.n + tileN - 1) / tileN }

// isZeroF32 reports whether v is the constant +0.0 : f32.
func isZeroF32(v *ir.Value) bool {
	if !isConstant(v) || v.Type() != ir.F32 {
		return false
	}
	a, ok := v.DefiningOp().Attr("value").(ir.FloatAttr)
	return ok && a.Bits == 0
}
