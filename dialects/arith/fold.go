package arith

import (
	"math"
	"math/bits"

	"github.com/strata-ir/strata/ir"
)

// foldFunc is the signature of ir.OpDef.Fold.
type foldFunc = func(op *ir.Operation, operands []ir.Attribute) []ir.FoldResult

// folders holds each op's folder, installed into its OpDef by init.
var folders = map[string]foldFunc{}

// rule is one algebraic simplification tried before constant folding: it
// returns the op's replacement, or ok == false.
type rule func(op *ir.Operation, lhs, rhs ir.Attribute) (r ir.FoldResult, ok bool)

// rules lists the simplifications of the binary ops, as upstream's folders do them.
var rules = map[string][]rule{
	OpAddI:       {rhsIs(isZero, keepLHS), addSubCancel, divRemRecombine},
	OpSubI:       {sameOperands(zero), rhsIs(isZero, keepLHS), subAddCancel},
	OpMulI:       {rhsIs(isZero, keepRHS), rhsIs(isOne, keepLHS)},
	OpDivSI:      {rhsIs(isOne, keepLHS)},
	OpDivUI:      {rhsIs(isOne, keepLHS)},
	OpCeilDivSI:  {rhsIs(isOne, keepLHS)},
	OpCeilDivUI:  {rhsIs(isOne, keepLHS)},
	OpFloorDivSI: {rhsIs(isOne, keepLHS)},
	OpRemSI:      {rhsIs(isOne, zero)},
	OpRemUI:      {rhsIs(isOne, zero)},
	OpAndI:       {rhsIs(isZero, keepRHS), rhsIs(isAllOnes, keepLHS), sameOperands(keepLHS), complementOperands(zero)},
	OpOrI:        {rhsIs(isZero, keepLHS), rhsIs(isAllOnes, keepRHS), sameOperands(keepLHS), complementOperands(allOnes)},
	OpXOrI:       {rhsIs(isZero, keepLHS), sameOperands(zero), xorCancel},
	OpShLI:       {rhsIs(isZero, keepLHS)},
	OpShRSI:      {rhsIs(isZero, keepLHS)},
	OpShRUI:      {rhsIs(isZero, keepLHS)},
	OpMaxSI:      {sameOperands(keepLHS), rhsIs(isSignedMax, keepRHS), rhsIs(isSignedMin, keepLHS)},
	OpMinSI:      {sameOperands(keepLHS), rhsIs(isSignedMin, keepRHS), rhsIs(isSignedMax, keepLHS)},
	OpMaxUI:      {sameOperands(keepLHS), rhsIs(isAllOnes, keepRHS), rhsIs(isZero, keepLHS)},
	OpMinUI:      {sameOperands(keepLHS), rhsIs(isZero, keepRHS), rhsIs(isAllOnes, keepLHS)},
	OpAddF:       {rhsIs(isFloat(math.Copysign(0, -1)), keepLHS)},
	OpSubF:       {rhsIs(isFloat(0), keepLHS)},
	OpMulF:       {rhsIs(isFloat(1), keepLHS)},
	OpDivF:       {rhsIs(isFloat(1), keepLHS)},
	OpMaximumF:   {sameOperands(keepLHS), rhsIs(isFloat(math.Inf(-1)), keepLHS)},
	OpMinimumF:   {sameOperands(keepLHS), rhsIs(isFloat(math.Inf(1)), keepLHS)},
	// Upstream also folds maxnumf(x, -inf) and minnumf(x, +inf) to x, which
	// is wrong for a NaN x (maxnum ignores the NaN and gives -inf).
	OpMaxNumF: {sameOperands(keepLHS)},
	OpMinNumF: {sameOperands(keepLHS)},
	OpNegF:    {involution},
}

func init() {
	for _, b := range binaryOps {
		folders["arith."+b.name] = foldBinary("arith."+b.name, rules["arith."+b.name])
	}
	for _, c := range castOps {
		folders["arith."+c.name] = foldCast("arith."+c.name, castRules["arith."+c.name])
	}
	folders[OpCmpI] = foldCmpI
	folders[OpCmpF] = foldCmpF
	folders[OpSelect] = foldSelect
}

func value(v *ir.Value) []ir.FoldResult { return []ir.FoldResult{{Value: v}} }
func constant(a ir.Attribute) []ir.FoldResult {
	if a == nil {
		return nil
	}
	return []ir.FoldResult{{Attr: a}}
}

// foldBinary tries the op's rules, then folds constant operands elementwise
// with EvalInt or EvalFloat.
func foldBinary(name string, rs []rule) foldFunc {
	return func(op *ir.Operation, operands []ir.Attribute) []ir.FoldResult {
		if len(operands) != op.NumOperands() || op.NumResults() != 1 {
			return nil
		}
		var lhs, rhs ir.Attribute
		lhs = operands[0]
		if len(operands) > 1 {
			rhs = operands[1]
		}
		for _, r := range rs {
			if res, ok := r(op, lhs, rhs); ok {
				return []ir.FoldResult{res}
			}
		}
		return constant(evalConst(name, op.Result(0).Type(), operands...))
	}
}

// evalConst computes the binary (or unary) op name on constant operands of
// type t elementwise with EvalInt or EvalFloat; nil if it cannot.
func evalConst(name string, t ir.Type, operands ...ir.Attribute) ir.Attribute {
	elem := ir.ElementTypeOf(t)
	return mapConst(t, operands, func(xs []uint64) (uint64, bool) {
		if ft, ok := elem.(*ir.FloatType); ok {
			a, b := ir.FloatFromBits(xs[0], ft), 0.0
			if len(xs) > 1 {
				b = ir.FloatFromBits(xs[1], ft)
			}
			r, ok := EvalFloat(name, ft, a, b)
			return ir.FloatToBits(r, ft), ok
		}
		if len(xs) != 2 {
			return 0, false
		}
		r, ok := EvalInt(name, elem, int64(xs[0]), int64(xs[1]))
		return uint64(r), ok
	})
}

// elementsOf views a constant operand as element bits (see ir.DenseAttr); a
// scalar or splat is one element. Complex elements are not supported.
func elementsOf(a ir.Attribute) (bits []uint64, splat, ok bool) {
	switch a := a.(type) {
	case ir.IntegerAttr:
		return []uint64{uint64(a.Value)}, true, true
	case ir.FloatAttr:
		return []uint64{a.Bits}, true, true
	case ir.DenseAttr:
		if _, complex := a.Type.ElementType().(*ir.ComplexType); complex || len(a.Bits) == 0 && a.Len() != 0 {
			return nil, false, false
		}
		if a.Splat {
			return a.Bits[:1], true, true
		}
		return a.Bits, false, int64(len(a.Bits)) == a.Len()
	}
	return nil, false, false
}

// mapConst applies f to the elements of constant operands (all non-nil) and
// returns the constant of type t holding the results, or nil when an operand
// is not constant or f is undefined on an element.
func mapConst(t ir.Type, operands []ir.Attribute, f func(xs []uint64) (uint64, bool)) ir.Attribute {
	n, splat := 1, true
	views := make([][]uint64, len(operands))
	for i, a := range operands {
		bits, s, ok := elementsOf(a)
		if !ok {
			return nil
		}
		if !s {
			if !splat && len(bits) != n {
				return nil
			}
			n, splat = len(bits), false
		}
		views[i] = bits
	}
	out := make([]uint64, n)
	xs := make([]uint64, len(views))
	for i := range out {
		for j, v := range views {
			if len(v) == 1 {
				xs[j] = v[0]
			} else {
				xs[j] = v[i]
			}
		}
		r, ok := f(xs)
		if !ok {
			return nil
		}
		out[i] = r
	}
	return makeConst(t, out)
}

// makeConst returns the constant of type t made of bits: a scalar attribute
// or a dense one (a splat when bits has one element). It returns nil for a
// shaped type without a static shape, or when bits do not fill it.
func makeConst(t ir.Type, bits []uint64) ir.Attribute {
	switch t := t.(type) {
	case *ir.FloatType:
		return ir.FloatAttr{Bits: bits[0], Type: t}
	case *ir.IntegerType, *ir.IndexType:
		return ir.IntegerAttr{Value: int64(bits[0]), Type: t}
	case *ir.TensorType, *ir.VectorType:
		st := t.(ir.ShapedType)
		n := ir.NumElements(st.Shape())
		if !st.Ranked() || n < 0 || (len(bits) != 1 && int64(len(bits)) != n) {
			return nil
		}
		return ir.DenseAttr{Type: st, Bits: bits, Splat: len(bits) == 1 && n != 0}
	}
	return nil
}

// splatOf returns the single element of a scalar or splat constant.
func splatOf(a ir.Attribute) (uint64, bool) {
	bits, _, ok := elementsOf(a)
	if !ok || len(bits) == 0 {
		return 0, false
	}
	for _, b := range bits[1:] {
		if b != bits[0] {
			return 0, false
		}
	}
	return bits[0], true
}

// intPred tests the element of a splat integer constant of element type t.
type intPred func(v int64, t ir.Type) bool

func isZero(v int64, _ ir.Type) bool    { return v == 0 }
func isOne(v int64, _ ir.Type) bool     { return v == 1 }
func isAllOnes(v int64, t ir.Type) bool { return v == ir.TruncInt(-1, t) }
func isSignedMax(v int64, t ir.Type) bool {
	w := ir.IntWidth(t)
	return w > 0 && v == ir.TruncInt(math.MaxInt64>>(64-w), t)
}
func isSignedMin(v int64, t ir.Type) bool {
	w := ir.IntWidth(t)
	return w > 0 && v == ir.TruncInt(-1<<(w-1), t)
}

// isFloat matches a splat float constant with exactly the value f (the sign
// of zero counts).
func isFloat(f float64) intPred {
	return func(v int64, t ir.Type) bool {
		ft, ok := t.(*ir.FloatType)
		return ok && foldableFloat(ft) && uint64(v) == ir.FloatToBits(f, ft)
	}
}

// result builders for rules.
type outcome func(op *ir.Operation, lhs, rhs ir.Attribute) (ir.FoldResult, bool)

func keepLHS(op *ir.Operation, _, _ ir.Attribute) (ir.FoldResult, bool) {
	return ir.FoldResult{Value: op.Operand(0)}, true
}

func keepRHS(op *ir.Operation, _, _ ir.Attribute) (ir.FoldResult, bool) {
	return ir.FoldResult{Value: op.Operand(1)}, true
}

// fill returns an outcome that is the constant with every element v.
func fill(v func(t ir.Type) int64) outcome {
	return func(op *ir.Operation, _, _ ir.Attribute) (ir.FoldResult, bool) {
		t := op.Result(0).Type()
		a := makeConst(t, []uint64{uint64(v(ir.ElementTypeOf(t)))})
		return ir.FoldResult{Attr: a}, a != nil
	}
}

var (
	zero    = fill(func(ir.Type) int64 { return 0 })
	allOnes = fill(func(t ir.Type) int64 { return ir.TruncInt(-1, t) })
)

// rhsIs applies then when the right operand is a constant satisfying pred.
func rhsIs(pred intPred, then outcome) rule {
	return func(op *ir.Operation, lhs, rhs ir.Attribute) (ir.FoldResult, bool) {
		v, ok := splatOf(rhs)
		if !ok || !pred(int64(v), ir.ElementTypeOf(op.Result(0).Type())) {
			return ir.FoldResult{}, false
		}
		return then(op, lhs, rhs)
	}
}

// sameOperands applies then when both operands are one value.
func sameOperands(then outcome) rule {
	return func(op *ir.Operation, lhs, rhs ir.Attribute) (ir.FoldResult, bool) {
		if op.NumOperands() != 2 || op.Operand(0) != op.Operand(1) {
			return ir.FoldResult{}, false
		}
		return then(op, lhs, rhs)
	}
}

// definedBy returns v's defining op if it is named name.
func definedBy(v *ir.Value, name string) *ir.Operation {
	if d := v.DefiningOp(); d != nil && d.Name() == name {
		return d
	}
	return nil
}

// isNot reports whether v is xori(x, all-ones).
func isNot(v, x *ir.Value) bool {
	d := definedBy(v, OpXOrI)
	if d == nil || d.Operand(0) != x {
		return false
	}
	c, ok := splatOf(constValue(d.Operand(1)))
	return ok && isAllOnes(int64(c), ir.ElementTypeOf(x.Type()))
}

// complementOperands applies then to x op xori(x, -1) (either order).
func complementOperands(then outcome) rule {
	return func(op *ir.Operation, lhs, rhs ir.Attribute) (ir.FoldResult, bool) {
		a, b := op.Operand(0), op.Operand(1)
		if !isNot(a, b) && !isNot(b, a) {
			return ir.FoldResult{}, false
		}
		return then(op, lhs, rhs)
	}
}

// addSubCancel folds addi(subi(a, b), b) and addi(b, subi(a, b)) to a.
func addSubCancel(op *ir.Operation, _, _ ir.Attribute) (ir.FoldResult, bool) {
	x, y := op.Operand(0), op.Operand(1)
	if s := definedBy(x, OpSubI); s != nil && s.Operand(1) == y {
		return ir.FoldResult{Value: s.Operand(0)}, true
	}
	if s := definedBy(y, OpSubI); s != nil && s.Operand(1) == x {
		return ir.FoldResult{Value: s.Operand(0)}, true
	}
	return ir.FoldResult{}, false
}

// divRemRecombine folds addi(muli(divui(x, c), c), remui(x, c)) to x, and
// its power-of-two form addi(muli(shrui(x, k), 2^k), andi(x, 2^k − 1))
// (or shli(shrui(x, k), k) for the product), with the operands of the
// addi and the muli in either order: in unsigned division
// x = (x / c)·c + x mod c, with no wrap (the product is at most x). A
// loop nest's coordinates delinearized from a flat index and linearized
// again into a contiguous buffer's offset are such chains: ResNet-50's
// batch-norm kernels recomputed (n·56 + h)·56 + w from the index's
// quotients and remainders by 56, about 25 PTX instructions a vector.
// Upstream 19 does not fold it.
func divRemRecombine(op *ir.Operation, _, _ ir.Attribute) (ir.FoldResult, bool) {
	for i := range 2 {
		if x := recombined(op.Operand(i), op.Operand(1-i)); x != nil && x.Type() == op.Result(0).Type() {
			return ir.FoldResult{Value: x}, true
		}
	}
	return ir.FoldResult{}, false
}

// recombined returns x when prod is (x / c)·c and rem is x mod c, in
// divui and remui or in shift and mask form (see divRemRecombine), else
// nil.
func recombined(prod, rem *ir.Value) *ir.Value {
	p, r := prod.DefiningOp(), rem.DefiningOp()
	if p == nil || r == nil || r.NumOperands() != 2 || p.NumOperands() != 2 {
		return nil
	}
	x := r.Operand(0)
	switch r.Name() {
	case OpRemUI:
		c := r.Operand(1)
		for i := range 2 {
			if p.Name() == OpMulI && sameInt(p.Operand(1-i), c) {
				if d := definedBy(p.Operand(i), OpDivUI); d != nil && d.Operand(0) == x && sameInt(d.Operand(1), c) {
					return x
				}
			}
		}
	case OpAndI:
		mask, ok := splatOf(constValue(r.Operand(1)))
		w := ir.IntWidth(ir.ElementTypeOf(x.Type()))
		if !ok || mask == 0 || mask&(mask+1) != 0 || w == 0 || bits.Len64(mask) >= w {
			return nil // not 2^k − 1 for 0 < k < the width
		}
		k := uint64(bits.Len64(mask))
		shifted := func(v *ir.Value) bool { // shrui(x, k)
			d := definedBy(v, OpShRUI)
			if d == nil || d.Operand(0) != x {
				return false
			}
			s, ok := splatOf(constValue(d.Operand(1)))
			return ok && s == k
		}
		switch p.Name() {
		case OpMulI:
			for i := range 2 {
				if m, ok := splatOf(constValue(p.Operand(1 - i))); ok && m == 1<<k && shifted(p.Operand(i)) {
					return x
				}
			}
		case OpShLI:
			if s, ok := splatOf(constValue(p.Operand(1))); ok && s == k && shifted(p.Operand(0)) {
				return x
			}
		}
	}
	return nil
}

// sameInt reports whether a and b are one value or equal splat integer
// constants.
func sameInt(a, b *ir.Value) bool {
	if a == b {
		return true
	}
	x, ok := splatOf(constValue(a))
	y, ok2 := splatOf(constValue(b))
	return ok && ok2 && x == y
}

// subAddCancel folds subi(addi(a, b), b) to a and subi(addi(a, b), a) to b.
func subAddCancel(op *ir.Operation, _, _ ir.Attribute) (ir.FoldResult, bool) {
	if a := definedBy(op.Operand(0), OpAddI); a != nil {
		switch op.Operand(1) {
		case a.Operand(1):
			return ir.FoldResult{Value: a.Operand(0)}, true
		case a.Operand(0):
			return ir.FoldResult{Value: a.Operand(1)}, true
		}
	}
	return ir.FoldResult{}, false
}

// xorCancel folds xori(xori(a, b), b) to a and xori(xori(a, b), a) to b.
func xorCancel(op *ir.Operation, _, _ ir.Attribute) (ir.FoldResult, bool) {
	if x := definedBy(op.Operand(0), OpXOrI); x != nil {
		switch op.Operand(1) {
		case x.Operand(1):
			return ir.FoldResult{Value: x.Operand(0)}, true
		case x.Operand(0):
			return ir.FoldResult{Value: x.Operand(1)}, true
		}
	}
	return ir.FoldResult{}, false
}

// involution folds f(f(x)) to x.
func involution(op *ir.Operation, _, _ ir.Attribute) (ir.FoldResult, bool) {
	if d := definedBy(op.Operand(0), op.Name()); d != nil {
		return ir.FoldResult{Value: d.Operand(0)}, true
	}
	return ir.FoldResult{}, false
}

// constValue returns the value attribute of v's defining constant-like op, or nil.
func constValue(v *ir.Value) ir.Attribute {
	if d := v.DefiningOp(); d != nil && d.HasTrait(ir.ConstantLike) {
		return d.Attr("value")
	}
	return nil
}

// sameResultValue folds to x when x's type is the op's result type.
func sameResultValue(op *ir.Operation, x *ir.Value) []ir.FoldResult {
	if x.Type() == op.Result(0).Type() {
		return value(x)
	}
	return nil
}

// castRules are the simplifications of the cast ops, tried before constant
// folding. They return nil when they do not apply.
var castRules = map[string]func(op *ir.Operation) []ir.FoldResult{
	// trunci(extsi(x)) and trunci(extui(x)) are x when x has the result type.
	OpTruncI: func(op *ir.Operation) []ir.FoldResult {
		for _, ext := range []string{OpExtSI, OpExtUI} {
			if d := definedBy(op.Operand(0), ext); d != nil {
				return sameResultValue(op, d.Operand(0))
			}
		}
		return nil
	},
	// truncf(extf(x)) is x when x has the result type: extf is exact.
	OpTruncF: func(op *ir.Operation) []ir.FoldResult {
		if d := definedBy(op.Operand(0), OpExtF); d != nil {
			return sameResultValue(op, d.Operand(0))
		}
		return nil
	},
	// A bitcast to the same type is the identity.
	OpBitcast: func(op *ir.Operation) []ir.FoldResult { return sameResultValue(op, op.Operand(0)) },
}

// foldCast folds casts of constants elementwise with Cast, after the op's
// rule. truncf folds only when no precision is lost, as upstream.
func foldCast(name string, r func(*ir.Operation) []ir.FoldResult) foldFunc {
	return func(op *ir.Operation, operands []ir.Attribute) []ir.FoldResult {
		if len(operands) != 1 || op.NumResults() != 1 {
			return nil
		}
		if r != nil {
			if res := r(op); res != nil {
				return res
			}
		}
		from := ir.ElementTypeOf(op.Operand(0).Type())
		to := ir.ElementTypeOf(op.Result(0).Type())
		return constant(mapConst(op.Result(0).Type(), operands, func(xs []uint64) (uint64, bool) {
			r, ok := Cast(name, from, to, xs[0])
			if ok && name == OpTruncF {
				back, _ := Cast(OpExtF, to, from, r)
				ok = back == xs[0]
			}
			return r, ok
		}))
	}
}

func predicateOf(op *ir.Operation) (int64, bool) {
	p, ok := op.Properties().Get("predicate").(ir.IntegerAttr)
	return p.Value, ok
}

// foldCmpI folds comparisons of a value with itself, the i1 identities
// cmpi(ne, x, false), cmpi(eq, x, true) and cmpi(ne, ext(x: i1), 0) to x,
// and comparisons of constants.
func foldCmpI(op *ir.Operation, operands []ir.Attribute) []ir.FoldResult {
	p, ok := predicateOf(op)
	pred := CmpIPredicate(p)
	if !ok || !pred.Valid() || len(operands) != 2 {
		return nil
	}
	t := op.Result(0).Type()
	if op.Operand(0) == op.Operand(1) {
		reflexive := pred == CmpIEQ || pred == CmpISLE || pred == CmpISGE || pred == CmpIULE || pred == CmpIUGE
		return constant(makeConst(t, []uint64{b2u(reflexive)}))
	}
	lhs := op.Operand(0)
	if c, ok := splatOf(operands[1]); ok {
		isI1 := ir.ElementTypeOf(lhs.Type()) == ir.I1
		if c == 0 && pred == CmpINE {
			for _, ext := range []string{OpExtSI, OpExtUI} {
				if d := definedBy(lhs, ext); d != nil && ir.ElementTypeOf(d.Operand(0).Type()) == ir.I1 {
					return value(d.Operand(0))
				}
			}
			if isI1 {
				return value(lhs)
			}
		}
		if c == 1 && pred == CmpIEQ && isI1 {
			return value(lhs)
		}
	}
	elem := ir.ElementTypeOf(op.Operand(0).Type())
	return constant(mapConst(t, operands, func(xs []uint64) (uint64, bool) {
		return b2u(CmpI(pred, elem, int64(xs[0]), int64(xs[1]))), true
	}))
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// foldCmpF folds comparisons of constants, and any comparison with a NaN
// constant (which decides every predicate whatever the other operand is).
func foldCmpF(op *ir.Operation, operands []ir.Attribute) []ir.FoldResult {
	p, ok := predicateOf(op)
	pred := CmpFPredicate(p)
	ft, isFloat := ir.ElementTypeOf(op.Operand(0).Type()).(*ir.FloatType)
	if !ok || !pred.Valid() || len(operands) != 2 || !isFloat || !foldableFloat(ft) {
		return nil
	}
	for _, a := range operands {
		if c, ok := splatOf(a); ok && math.IsNaN(ir.FloatFromBits(c, ft)) {
			operands = []ir.Attribute{a, a}
			break
		}
	}
	return constant(mapConst(op.Result(0).Type(), operands, func(xs []uint64) (uint64, bool) {
		return b2u(CmpF(pred, ir.FloatFromBits(xs[0], ft), ir.FloatFromBits(xs[1], ft))), true
	}))
}

// foldSelect folds a select whose branches agree, whose condition is
// constant, that is select(c, true, false) on i1, or that picks between the
// operands of an eq/ne comparison it is conditioned on.
func foldSelect(op *ir.Operation, operands []ir.Attribute) []ir.FoldResult {
	if len(operands) != 3 || op.NumResults() != 1 {
		return nil
	}
	cond, tv, fv := op.Operand(0), op.Operand(1), op.Operand(2)
	if tv == fv {
		return value(tv)
	}
	if c, ok := splatOf(operands[0]); ok {
		if c != 0 {
			return value(tv)
		}
		return value(fv)
	}
	if op.Result(0).Type() == ir.I1 {
		t, tok := splatOf(operands[1])
		f, fok := splatOf(operands[2])
		if tok && fok && t == 1 && f == 0 {
			return value(cond)
		}
	}
	if cmp := definedBy(cond, OpCmpI); cmp != nil {
		p, _ := predicateOf(cmp)
		l, r := cmp.Operand(0), cmp.Operand(1)
		if (p == int64(CmpIEQ) || p == int64(CmpINE)) && ((l == tv && r == fv) || (r == tv && l == fv)) {
			if p == int64(CmpINE) {
				return value(tv)
			}
			return value(fv)
		}
	}
	return constant(mapConst(op.Result(0).Type(), operands, func(xs []uint64) (uint64, bool) {
		if xs[0] != 0 {
			return xs[1], true
		}
		return xs[2], true
	}))
}
