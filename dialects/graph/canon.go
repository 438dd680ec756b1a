package graph

import (
	"math"

	"github.com/strata-ir/strata/ir"
)

// Canonicalization patterns. Each rewrites through the Rewriter and keeps
// the op's result type; where removing an op would lose a broadcast, the
// replacement is a graph.broadcast_to.

// constantOf returns the value of v when a constant-like op defines it.
func constantOf(v *ir.Value) (ir.DenseAttr, bool) {
	def := v.DefiningOp()
	if def == nil || !def.HasTrait(ir.ConstantLike) {
		return ir.DenseAttr{}, false
	}
	d, ok := def.Attr("value").(ir.DenseAttr)
	return d, ok
}

// splatBits returns the bits of every element of a constant value when they
// are all equal.
func splatBits(v *ir.Value) (uint64, bool) {
	d, ok := constantOf(v)
	if !ok || d.Len() == 0 {
		return 0, false
	}
	first := d.At(0)
	if !d.Splat {
		for i := int64(1); i < d.Len(); i++ {
			if d.At(i) != first {
				return 0, false
			}
		}
	}
	return first, true
}

// isSplatOf reports whether v is a constant whose every element equals the
// scalar given by its float value f (for float types, compared bit for bit
// so that -0.0 and +0.0 differ) or its integer value i.
func isSplatOf(v *ir.Value, f float64, i int64) bool {
	b, ok := splatBits(v)
	if !ok {
		return false
	}
	switch t := ir.ElementTypeOf(v.Type()).(type) {
	case *ir.FloatType:
		return b == ir.FloatToBits(f, t)
	case *ir.IntegerType:
		return int64(b) == ir.TruncInt(i, t)
	}
	return false
}

// replaceBroadcast replaces op by x, broadcast to op's result type when the
// shapes differ.
func replaceBroadcast(r *ir.Rewriter, op *ir.Operation, x *ir.Value) bool {
	want := op.Result(0).Type()
	if sameShapeAndElem(x.Type(), want) {
		r.ReplaceOp(op, []*ir.Value{x})
		return true
	}
	wt, ok := want.(*ir.TensorType)
	if !ok || ir.ElementTypeOf(x.Type()) != wt.ElementType() || numElements(wt.Shape()) < 0 {
		return false
	}
	r.SetInsertionPointBefore(op)
	b, err := Build(&r.Builder, "broadcast_to", op.Loc(), []*ir.Value{x}, ir.Dict(ir.NamedAttr{Name: "shape", Value: Ints(wt.Shape()...)}))
	if err != nil {
		return false
	}
	r.ReplaceOp(op, []*ir.Value{b})
	return true
}

// identityPattern removes a binary op when the constant operand at side
// (0 or 1) is the identity element: floats compared by bits, ints by value.
func identityPattern(name, opName string, side int, f float64, i int64) *ir.Pattern {
	return &ir.Pattern{
		Name: name, Root: Name + "." + opName, Benefit: 1,
		Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
			if !isSplatOf(op.Operand(side), f, i) {
				return false
			}
			return replaceBroadcast(r, op, op.Operand(1-side))
		},
	}
}

// negZero is -0.0: x + (-0.0) is x for every x, while x + 0.0 turns -0.0 into +0.0.
var negZero = math.Copysign(0, -1)

// binaryPatterns are the identity-element rewrites of the binary ops.
var binaryPatterns = map[string][]*ir.Pattern{
	"add": {
		identityPattern("graph.add-zero-rhs", "add", 1, negZero, 0),
		identityPattern("graph.add-zero-lhs", "add", 0, negZero, 0),
		intOnly(identityPattern("graph.add-int-zero-rhs", "add", 1, 0, 0)),
		intOnly(identityPattern("graph.add-int-zero-lhs", "add", 0, 0, 0)),
	},
	"sub": {identityPattern("graph.sub-zero", "sub", 1, 0, 0)},
	"mul": {
		identityPattern("graph.mul-one-rhs", "mul", 1, 1, 1),
		identityPattern("graph.mul-one-lhs", "mul", 0, 1, 1),
	},
	"div": {identityPattern("graph.div-one", "div", 1, 1, 1)},
}

// intOnly restricts a pattern to integer element types; for floats, adding
// +0.0 is not the identity (-0.0 + 0.0 is +0.0).
func intOnly(p *ir.Pattern) *ir.Pattern {
	rw := p.Rewrite
	p.Rewrite = func(r *ir.Rewriter, op *ir.Operation) bool {
		return ir.IsInteger(ir.ElementTypeOf(op.Result(0).Type())) && rw(r, op)
	}
	return p
}

// definedBy returns the op defining v when it is named graph.<name>.
func definedBy(v *ir.Value, name string) *ir.Operation {
	if d := v.DefiningOp(); d != nil && d.Name() == Name+"."+name {
		return d
	}
	return nil
}

var negNeg = &ir.Pattern{
	Name: "graph.neg-neg", Root: Name + ".neg", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		inner := definedBy(op.Operand(0), "neg")
		if inner == nil {
			return false
		}
		r.ReplaceOp(op, []*ir.Value{inner.Operand(0)})
		return true
	},
}

// sameTypePattern removes a shape-preserving op (reshape, broadcast_to,
// cast) whose result type equals its operand type.
func sameTypePattern(name, opName string) *ir.Pattern {
	return &ir.Pattern{
		Name: name, Root: Name + "." + opName, Benefit: 1,
		Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
			if op.Operand(0).Type() != op.Result(0).Type() {
				return false
			}
			r.ReplaceOp(op, []*ir.Value{op.Operand(0)})
			return true
		},
	}
}

var (
	reshapeSame   = sameTypePattern("graph.reshape-same-type", "reshape")
	broadcastSame = sameTypePattern("graph.broadcast-same-type", "broadcast_to")
	castSame      = sameTypePattern("graph.cast-same-type", "cast")
)

// castCast folds cast(cast(x)) to x when the inner cast widens exactly
// (a float to a wider float): then casting back loses nothing.
var castCast = &ir.Pattern{
	Name: "graph.cast-widen-narrow", Root: Name + ".cast", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		inner := definedBy(op.Operand(0), "cast")
		if inner == nil || inner.Operand(0).Type() != op.Result(0).Type() {
			return false
		}
		from, _ := ir.ElementTypeOf(op.Result(0).Type()).(*ir.FloatType)
		mid, _ := ir.ElementTypeOf(inner.Result(0).Type()).(*ir.FloatType)
		if from == nil || mid == nil || !widens(from, mid) {
			return false
		}
		r.ReplaceOp(op, []*ir.Value{inner.Operand(0)})
		return true
	},
}

// widens reports whether every value of float type a is exact in b.
func widens(a, b *ir.FloatType) bool {
	if a == b || b == ir.F64 {
		return true
	}
	return b == ir.F32 && (a == ir.F16 || a == ir.BF16)
}

// reshapeReshape merges reshape(reshape(x)) into one reshape. With a
// symbolic size the outer reshape's -1 is inferred again from x, which
// may give the same size as another expression (x: [s0] through
// [2, floordiv(s0, 2)] back to [-1] is floordiv(s0, 2)*2 from the inner
// reshape but s0 from x): the verifier would then reject the op's
// recorded type, so such a pair is left alone.
var reshapeReshape = &ir.Pattern{
	Name: "graph.reshape-reshape", Root: Name + ".reshape", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		inner := definedBy(op.Operand(0), "reshape")
		if inner == nil {
			return false
		}
		if infer := op.Def().InferTypes; infer != nil && op.Attr("shape") != nil {
			ts, err := infer([]ir.Type{inner.Operand(0).Type()}, op.Properties(), op.Loc())
			if err != nil || len(ts) != 1 || ts[0] != op.Result(0).Type() {
				return false
			}
		}
		r.ModifyInPlace(op, func() { op.SetOperand(0, inner.Operand(0)) })
		return true
	},
}

// broadcastBroadcast merges broadcast_to(broadcast_to(x)) into one.
var broadcastBroadcast = &ir.Pattern{
	Name: "graph.broadcast-broadcast", Root: Name + ".broadcast_to", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		inner := definedBy(op.Operand(0), "broadcast_to")
		if inner == nil {
			return false
		}
		r.ModifyInPlace(op, func() { op.SetOperand(0, inner.Operand(0)) })
		return true
	},
}

func permOf(op *ir.Operation) []int64 {
	p, _ := IntList(op.Attr("perm"))
	return p
}

// SwapsLastTwo reports whether op is a graph.transpose that exchanges its
// last two dims only: a matrix transpose of every batch element, which a
// product can read in place by swapping its indices.
func SwapsLastTwo(op *ir.Operation) bool {
	if op == nil || op.Name() != OpTranspose {
		return false
	}
	perm := permOf(op)
	n := len(perm)
	if n < 2 || perm[n-2] != int64(n-1) || perm[n-1] != int64(n-2) {
		return false
	}
	return isIdentityPerm(perm[:n-2])
}

func isIdentityPerm(p []int64) bool {
	for i, v := range p {
		if v != int64(i) {
			return false
		}
	}
	return true
}

var transposeIdentity = &ir.Pattern{
	Name: "graph.transpose-identity", Root: Name + ".transpose", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		if !isIdentityPerm(permOf(op)) || op.Operand(0).Type() != op.Result(0).Type() {
			return false
		}
		r.ReplaceOp(op, []*ir.Value{op.Operand(0)})
		return true
	},
}

// transposeUnitDims replaces a transpose that moves only dims of size 1,
// keeping the order of the others, by a reshape: the elements stay in
// the same order, so nothing is copied (a decoding step's attention output
// [B, H, 1, dh] merged back into rows [B, 1, H, dh]).
var transposeUnitDims = &ir.Pattern{
	Name: "graph.transpose-unit-dims", Root: Name + ".transpose", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		in, ok1 := op.Operand(0).Type().(*ir.TensorType)
		res, ok2 := op.Result(0).Type().(*ir.TensorType)
		perm := permOf(op)
		if !ok1 || !ok2 || !in.Ranked() || !res.Ranked() || len(perm) != len(in.Shape()) || isIdentityPerm(perm) || ir.NumElements(in.Shape()) < 0 {
			return false
		}
		last := int64(-1)
		for _, p := range perm {
			if in.Shape()[p] == 1 {
				continue
			}
			if p < last {
				return false
			}
			last = p
		}
		r.SetInsertionPointBefore(op)
		out, err := Build(&r.Builder, "reshape", op.Loc(), []*ir.Value{op.Operand(0)}, ir.Dict(ir.NamedAttr{Name: "shape", Value: Ints(res.Shape()...)}))
		if err != nil || out.Type() != op.Result(0).Type() {
			return false
		}
		r.ReplaceOp(op, []*ir.Value{out})
		return true
	},
}

// transposeTranspose composes transpose(transpose(x, p), q) into
// transpose(x, p∘q); the identity is then removed by transposeIdentity.
var transposeTranspose = &ir.Pattern{
	Name: "graph.transpose-transpose", Root: Name + ".transpose", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		inner := definedBy(op.Operand(0), "transpose")
		if inner == nil {
			return false
		}
		p, q := permOf(inner), permOf(op)
		if len(p) != len(q) {
			return false
		}
		// result[i] = mid[q[i]] = x[p[q[i]]].
		composed := make([]int64, len(q))
		for i, qi := range q {
			composed[i] = p[qi]
		}
		r.ModifyInPlace(op, func() {
			op.SetOperand(0, inner.Operand(0))
			op.SetProperty("perm", Ints(composed...))
		})
		return true
	},
}

// selectConstCond replaces select(c, a, b) by a or b when c is a constant
// that is all true or all false.
var selectConstCond = &ir.Pattern{
	Name: "graph.select-constant-cond", Root: Name + ".select", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		b, ok := splatBits(op.Operand(0))
		if !ok {
			return false
		}
		pick := op.Operand(2)
		if b != 0 {
			pick = op.Operand(1)
		}
		return replaceBroadcast(r, op, pick)
	},
}

// selectSame replaces select(c, x, x) by x.
var selectSame = &ir.Pattern{
	Name: "graph.select-same", Root: Name + ".select", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		if op.Operand(1) != op.Operand(2) {
			return false
		}
		return replaceBroadcast(r, op, op.Operand(1))
	},
}
