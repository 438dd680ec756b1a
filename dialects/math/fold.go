package math

import (
	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/ir"
)

// fold evaluates the op on constant operands: scalars (FloatAttr,
// IntegerAttr) or dense vectors and tensors, splat or not. Like upstream, it
// gives up on the whole op when one element cannot be folded.
func (s opSpec) fold(op *ir.Operation, consts []ir.Attribute) []ir.FoldResult {
	t := op.Result(0).Type()
	cols := make([][]uint64, len(consts))
	splat := true
	n := 1
	for i, c := range consts {
		col, sp, ok := column(c, t)
		if !ok {
			return nil
		}
		cols[i], splat = col, splat && sp
		n = max(n, len(col))
	}
	eval, ok := s.evaluator(ir.ElementTypeOf(t))
	if !ok {
		return nil
	}
	out := make([]uint64, n)
	args := make([]uint64, len(cols))
	for e := range out {
		for i, col := range cols {
			args[i] = col[0]
			if len(col) > 1 {
				args[i] = col[e]
			}
		}
		if out[e], ok = eval(args); !ok {
			return nil
		}
	}
	return []ir.FoldResult{{Attr: constant(t, out, splat)}}
}

// column returns the element bits of a constant of type t: one value for a
// scalar or a splat (splat=true), else one per element.
func column(a ir.Attribute, t ir.Type) (elems []uint64, splat, ok bool) {
	switch a := a.(type) {
	case ir.FloatAttr:
		return []uint64{a.Bits}, true, ir.Type(a.Type) == t
	case ir.IntegerAttr:
		return []uint64{uint64(a.Value)}, true, a.Type == t
	case ir.DenseAttr:
		if a.Type != t || len(a.Bits) == 0 {
			return nil, false, false
		}
		if a.Splat {
			return a.Bits[:1], true, true
		}
		return a.Bits, false, int64(len(a.Bits)) == a.Len()
	}
	return nil, false, false
}

// constant builds the attribute of type t holding elems.
func constant(t ir.Type, elems []uint64, splat bool) ir.Attribute {
	if st, ok := t.(ir.ShapedType); ok {
		return ir.DenseAttr{Type: st, Bits: elems, Splat: splat}
	}
	if ft, ok := t.(*ir.FloatType); ok {
		return ir.FloatAttr{Bits: elems[0], Type: ft}
	}
	return ir.IntegerAttr{Value: int64(elems[0]), Type: t}
}

// evaluator returns the element function of the op on element type et,
// working on bit patterns; ok=false when the op does not fold for et.
func (s opSpec) evaluator(et ir.Type) (func([]uint64) (uint64, bool), bool) {
	switch {
	case s.foldF != nil:
		ft, ok := et.(*ir.FloatType)
		if !ok || !foldable(ft, s.prec) {
			return nil, false
		}
		xs := make([]float64, s.arity)
		return func(args []uint64) (uint64, bool) {
			for i, b := range args {
				xs[i] = ir.FloatFromBits(b, ft)
			}
			r, ok := s.foldF(xs, ft)
			// Round the float64 result once to the element type, which
			// is the float32 result for f32 (and exact for exact ops).
			return ir.FloatToBits(r, ft), ok
		}, true
	case s.foldI != nil:
		w := ir.IntWidth(et)
		if !ir.IsInteger(et) || w > 64 {
			return nil, false
		}
		xs := make([]int64, s.arity)
		return func(args []uint64) (uint64, bool) {
			for i, b := range args {
				xs[i] = int64(b)
			}
			r, ok := s.foldI(xs, w)
			return uint64(ir.TruncInt(r, et)), ok
		}, true
	}
	return nil, false
}

// foldable reports whether ops folded with the given precision fold values
// of type ft: libm-based folds only f32 and f64, as upstream; exact folds
// every type whose encoding Strata implements.
func foldable(ft *ir.FloatType, prec precision) bool {
	switch ft {
	case ir.F32, ir.F64:
		return true
	case ir.F16, ir.BF16:
		return prec == exact
	}
	return false
}

// materializeConstant builds the arith.constant that folding produced,
// as upstream's math dialect does; nil when arith is not loaded.
func materializeConstant(b *ir.Builder, a ir.Attribute, t ir.Type, loc ir.Location) *ir.Operation {
	if b.Ctx.OpDef(arith.OpConstant) == nil {
		return nil
	}
	switch a.(type) {
	case ir.FloatAttr, ir.IntegerAttr, ir.DenseAttr:
		return b.Op(arith.OpConstant, loc, nil, []ir.Type{t}, ir.NamedAttr{Name: "value", Value: a})
	}
	return nil
}
