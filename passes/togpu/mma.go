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
//	    A[%b…, %i, %k] (or A[%b…, %k, %i]), B[%b…, %k, %j] (or B[%b…, %j, %k])
//	    of bf16, extf, mulf, addf %a, %p
//	  }
//	  epilogue(%b…, %i, %j, %acc) and stores
//	}
//
// becomes a tiled tensor-core kernel; the epilogue runs once per
// accumulator element (each guarded against the output's bounds unless
// the sizes are multiples of the tile), so the bias, activation, residual
// and cast stay fused. Leading (batch) dimensions are flattened into the
// block index: block z·tiles + t computes tile t of matrix z. Either
// operand may be stored with K last or K first: the backward pass of a
// linear layer reads xᵀ·dy (A stored [K, M]) and dy·wᵀ (B stored [N, K]).
type mma struct {
	kloop *ir.Operation
	a, b  operand // A (outer dimension M) and B (outer dimension N) on the host
	elem  ir.Type
	k     int64
	batch []int64 // static extents of the leading dimensions
	m, n  int64   // static M and N, or ir.Dynamic
	width ir.Type // of the kernel's offset arithmetic: i32 when every offset fits
}

// operand is one factor of the product as the kernel reads it: a matrix
// (of each batch) with an outer dimension (A's M, B's N) and K, stored
// [outer, K] (kLast) or [K, outer].
type operand struct {
	mem   *ir.Value
	shape []int64
	// kLast: rows run along K (A [M, K], B [N, K]) and are read by plain
	// ldmatrix; otherwise the rows run along the outer dimension (A
	// [K, M], B [K, N]) and ldmatrix transposes them.
	kLast bool
	tile  int64 // the block tile's extent in the outer dimension
}

// ld is the stride between the stored rows of one matrix.
func (o *operand) ld(nb int) int64 { return o.shape[nb+1] }

// mmaPlan recognizes a matmul nest that tensor cores can run: bf16
// operands, f32 accumulation from 0, a static K that is a multiple of 8
// (16-byte rows for cp.async), for an operand stored [K, outer] a static
// outer extent that is a multiple of 8, unit steps from 0, and batch
// dimensions of static extent that index A and B in order. Anything else
// keeps the SIMT mapping.
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
	// The two factors: extf of loads A[b…, i, k] or A[b…, k, i], and
	// B[b…, k, j] or B[b…, j, k].
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
		var o *operand
		switch r, c := idx[nb], idx[nb+1]; {
		case r == iv && c == kv || r == kv && c == iv:
			o = &p.a
		case r == jv && c == kv || r == kv && c == jv:
			o = &p.b
		default:
			return nil
		}
		if o.mem != nil {
			return nil
		}
		o.mem, o.kLast = mem, idx[nb+1] == kv
		if p.elem == nil {
			p.elem = ext.Operand(0).Type()
		} else if p.elem != ext.Operand(0).Type() {
			return nil
		}
	}
	if p.a.mem == nil || p.b.mem == nil || p.elem != ir.BF16 || len(kb.Ops()) != 7 {
		return nil
	}
	p.k, p.a.tile, p.b.tile = kk, tileM, tileN
	for _, o := range []*operand{&p.a, &p.b} {
		mt, _ := o.mem.Type().(*ir.MemRefType)
		if mt == nil {
			return nil
		}
		o.shape = mt.Shape()
		kDim := nb
		if o.kLast {
			kDim = nb + 1
		}
		if o.shape[kDim] != kk {
			return nil
		}
		if ld := o.ld(nb); !o.kLast && (ld == ir.Dynamic || ld%8 != 0) {
			return nil
		}
	}
	if nb > 0 {
		// Batched operands are addressed by static strides.
		for d, e := range p.batch {
			if p.a.shape[d] != e || p.b.shape[d] != e {
				return nil
			}
		}
		if !allStatic(p.a.shape) || !allStatic(p.b.shape) || p.m == ir.Dynamic || p.n == ir.Dynamic {
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
	if !allStatic(p.a.shape) || !allStatic(p.b.shape) || p.m == ir.Dynamic || p.n == ir.Dynamic {
		return false
	}
	elems := func(shape []int64) float64 {
		n := 1.0
		for _, d := range shape {
			n *= float64(d)
		}
		return n
	}
	// A tile's overhang is at most a tile of rows (or of k rows) past the
	// matrix's end, plus a tile's width.
	over := float64(2*(tileM+tileN)) * float64(p.k+p.m+p.n+tileK)
	blocks := elems(p.batch) * float64(p.tilesM()*p.tilesN())
	lim := float64(math.MaxInt32)
	return elems(p.a.shape)+over < lim && elems(p.b.shape)+over < lim && blocks < lim
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
