package togpu

import (
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// matmulNest is convert-graph-to-loop's matmul nest, the form both the
// tensor-core mapping (mmaPlan) and gpu.library_matmul (libraryPlan) start
// from:
//
//	loop.parallel (%b…, %i, %j) {
//	  %acc = loop.for %k = 0 to K iter(%s = 0.0 : f32) {
//	    %s + extf(A[%b…, %i, %k]) · extf(B[%b…, %k, %j])   (A or B may be stored transposed)
//	  }
//	  epilogue(%acc)
//	}
//
// Each plan adds the constraints of its own lowering.
type matmulNest struct {
	kloop *ir.Operation
	// extents are the nest's static extents, ir.Dynamic for a dynamic M
	// or N (batch extents are static and positive).
	extents []int64
	k       int64   // the static K
	elem    ir.Type // of both factors
	a, b    factor  // A (outer dimension M) and B (outer dimension N)
}

// factor is one operand of the product as the nest loads it.
type factor struct {
	mem *ir.Value
	// kLast: stored [outer, K] (A [M, K], B [N, K]); otherwise [K, outer].
	kLast bool
}

// batch returns the number of batch dimensions.
func (m *matmulNest) batch() int { return len(m.extents) - 2 }

// matchMatmul recognizes a matmul nest with unit steps from 0, or returns
// nil. A nest convert-graph-to-loop marked (loop.NestKind) is a matmul
// only when marked so; the shape is then only read for its operands. An
// unmarked nest (loop IR from elsewhere) is recognized by its shape.
func matchMatmul(nest *ir.Operation) *matmulNest {
	if kind := loop.NestKind(nest); kind != "" && kind != "matmul" {
		return nil
	}
	lbs, ubs, steps, inits, err := loop.ParallelBounds(nest)
	rank := len(lbs)
	if err != nil || rank < 2 || len(inits) > 0 {
		return nil
	}
	m := &matmulNest{}
	for d := range lbs {
		lb, ok1 := staticInt(lbs[d])
		st, ok2 := staticInt(steps[d])
		if !ok1 || !ok2 || lb != 0 || st != 1 {
			return nil
		}
		ub, ok := staticInt(ubs[d])
		switch {
		case ok:
			m.extents = append(m.extents, ub)
		case d >= rank-2:
			m.extents = append(m.extents, ir.Dynamic)
		default:
			return nil
		}
		if d < rank-2 && ub <= 0 {
			return nil
		}
	}
	body := loop.Body(nest)
	for _, o := range body.Ops() {
		if o.Name() == loop.ForOp && o.NumResults() == 1 {
			m.kloop = o
			break
		}
	}
	if m.kloop == nil {
		return nil
	}
	lb, ub, step := loop.ForBounds(m.kloop)
	l, ok1 := staticInt(lb)
	k, ok2 := staticInt(ub)
	s, ok3 := staticInt(step)
	if !ok1 || !ok2 || !ok3 || l != 0 || s != 1 || k < 1 || !isZeroF32(loop.ForInits(m.kloop)[0]) {
		return nil
	}
	m.k = k
	kb := m.kloop.Region(0).Front()
	kv, acc := kb.Argument(0), kb.Argument(1)
	y := kb.Terminator()
	if y == nil || y.NumOperands() != 1 || len(kb.Ops()) != 7 {
		return nil
	}
	add := y.Operand(0).DefiningOp()
	if add == nil || add.Name() != arith.OpAddF || add.Result(0).Type() != ir.F32 {
		return nil
	}
	prod := add.Operand(1)
	if prod == acc {
		prod = add.Operand(0)
	} else if add.Operand(0) != acc {
		return nil
	}
	mul := prod.DefiningOp()
	if mul == nil || mul.Name() != arith.OpMulF {
		return nil
	}
	nb := m.batch()
	iv, jv := body.Argument(nb), body.Argument(nb+1)
	for _, f := range mul.Operands() {
		ext := f.DefiningOp()
		if ext == nil || ext.Name() != arith.OpExtF {
			return nil
		}
		ld := ext.Operand(0).DefiningOp()
		if ld == nil || ld.Name() != loop.LoadOp || ld.NumOperands() != rank+1 || definedIn(ld.Operand(0), nest) {
			return nil
		}
		idx := slices.Clone(ld.Operands()[1:])
		for d := range idx {
			idx[d] = throughUnitBroadcast(idx[d], body, ubs)
		}
		for d := range nb {
			if !indexes(idx[d], body.Argument(d), m.extents[d]) {
				return nil
			}
		}
		var o *factor
		kLast := false
		r, c := idx[nb], idx[nb+1]
		for _, f := range []struct {
			o      *factor
			outer  *ir.Value
			extent int64
		}{{&m.a, iv, m.extents[nb]}, {&m.b, jv, m.extents[nb+1]}} {
			if f.o.mem != nil {
				continue
			}
			if indexes(r, f.outer, f.extent) && indexes(c, kv, m.k) {
				o, kLast = f.o, true
			} else if indexes(r, kv, m.k) && indexes(c, f.outer, f.extent) {
				o = f.o
			}
			if o != nil {
				break
			}
		}
		if o == nil {
			return nil
		}
		o.mem, o.kLast = ld.Operand(0), kLast
		if m.elem == nil {
			m.elem = ext.Operand(0).Type()
		} else if m.elem != ext.Operand(0).Type() {
			return nil
		}
	}
	if m.a.mem == nil || m.b.mem == nil {
		return nil
	}
	return m
}

// indexes reports whether index v runs over iv, an induction variable of
// the given extent: v is iv, or the constant 0 where the extent is 1 (iv
// is then always 0; convert-graph-to-loop indexes a dimension of size 1
// by 0, so a batch of one or an M, N or K of 1 reads that way).
func indexes(v, iv *ir.Value, extent int64) bool {
	if v == iv {
		return true
	}
	c, ok := staticInt(v)
	return ok && c == 0 && extent == 1
}

// throughUnitBroadcast returns the induction variable iv of the nest
// (body's argument d) when v is convert-graph-to-loop's broadcast of a
// dynamic dimension, select(D == 1, 0, iv), and D is the size the nest
// runs dimension d over (the same value, or loop.dim of the same buffer
// and dimension): D = 1 then bounds iv to 0, so v is iv whatever D. It
// returns v otherwise. A graph matmul with a dynamic M or N loads its
// operands through such selects (one per fused broadcasting op), which
// hid it from both plans.
func throughUnitBroadcast(v *ir.Value, body *ir.Block, ubs []*ir.Value) *ir.Value {
	sel := v.DefiningOp()
	if sel == nil || sel.Name() != arith.OpSelect {
		return v
	}
	// Fused broadcasts nest: select(D == 1, 0, select(D' == 1, 0, iv)).
	iv := throughUnitBroadcast(sel.Operand(2), body, ubs)
	if c, ok := staticInt(sel.Operand(1)); !ok || c != 0 || !iv.IsBlockArgument() || iv.ParentBlock() != body {
		return v
	}
	cmp := sel.Operand(0).DefiningOp()
	if cmp == nil || cmp.Name() != arith.OpCmpI {
		return v
	}
	if p, _ := cmp.Attr("predicate").(ir.IntegerAttr); arith.CmpIPredicate(p.Value) != arith.CmpIEQ {
		return v
	}
	size := cmp.Operand(0)
	if c, ok := staticInt(cmp.Operand(1)); !ok || c != 1 {
		if c, ok := staticInt(size); !ok || c != 1 {
			return v
		}
		size = cmp.Operand(1)
	}
	if d := iv.Index(); d < len(ubs) && sameSize(size, ubs[d]) {
		return iv
	}
	return v
}

// sameSize reports whether a and b are the same size: one value, or
// loop.dim of one buffer and dimension (a buffer's sizes do not change).
func sameSize(a, b *ir.Value) bool {
	if a == b {
		return true
	}
	da, db := a.DefiningOp(), b.DefiningOp()
	if da == nil || db == nil || da.Name() != loop.DimOp || db.Name() != loop.DimOp || da.Operand(0) != db.Operand(0) {
		return false
	}
	ia, _ := da.Attr(loop.IndexAttr).(ir.IntegerAttr)
	ib, _ := db.Attr(loop.IndexAttr).(ir.IntegerAttr)
	return ia.Value == ib.Value
}
