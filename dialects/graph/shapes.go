package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// ElementTypes lists the element types graph tensors may have.
var ElementTypes = []ir.Type{ir.F64, ir.F32, ir.F16, ir.BF16, ir.I64, ir.I32, ir.I1}

// elemClass is a set of element types an operand accepts.
type elemClass uint8

const (
	anyElem       elemClass = iota // every graph element type
	numericElem                    // floats, i64, i32 (not i1)
	floatElem                      // f64, f32, f16, bf16
	intElem                        // i64, i32
	boolElem                       // i1
	wideFloatElem                  // f64, f32
)

var classNames = [...]string{
	anyElem:       "f64, f32, f16, bf16, i64, i32 or i1",
	numericElem:   "f64, f32, f16, bf16, i64 or i32",
	floatElem:     "f64, f32, f16 or bf16",
	intElem:       "i64 or i32",
	boolElem:      "i1",
	wideFloatElem: "f64 or f32",
}

func (c elemClass) has(t ir.Type) bool {
	if !slices.Contains(ElementTypes, t) {
		return false
	}
	switch c {
	case numericElem:
		return t != ir.I1
	case floatElem:
		return ir.IsFloat(t)
	case intElem:
		return t == ir.I64 || t == ir.I32
	case boolElem:
		return t == ir.I1
	case wideFloatElem:
		return t == ir.F64 || t == ir.F32
	}
	return true
}

// asTensor returns t as a ranked tensor type whose element type is in class.
func asTensor(t ir.Type, what string, class elemClass) (*ir.TensorType, error) {
	tt, ok := t.(*ir.TensorType)
	if !ok || !tt.Ranked() || !class.has(tt.ElementType()) {
		return nil, fmt.Errorf("%s must be a ranked tensor of %s, got %s", what, classNames[class], t)
	}
	return tt, nil
}

// dimString prints a size: the integer when static, "?" when unknown,
// else its expression.
func dimString(d sym.Expr) string {
	if c, ok := d.IsConst(); ok {
		return strconv.FormatInt(c, 10)
	}
	if IsUnknown(d) {
		return "?"
	}
	return d.String()
}

// shapeString prints a shape as [2, ?, s0].
func shapeString(s []sym.Expr) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = dimString(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// sizeFacts are the facts shape rules decide constraints under: sizes are
// ≥ 0, whatever the 0/1 policy of the symbols.
var sizeFacts = &sym.Facts{AllowZero: true}

func isOne(d sym.Expr) bool {
	c, ok := d.IsConst()
	return ok && c == 1
}

// meet returns the size of two dims that must be equal. A "?" meets
// anything; two symbolic sizes that may be equal record the constraint
// that they are, and the result is the constant one if any. It fails when
// they can never be equal.
func meet(a, b sym.Expr, cs *sym.Constraints) (sym.Expr, bool) {
	switch {
	case a.Equal(b):
		return a, true
	case IsUnknown(a):
		return b, true
	case IsUnknown(b):
		return a, true
	}
	return require(sym.Eq(a, b), cs), holdsMaybe(sym.Eq(a, b))
}

// require records c unless it always holds, and returns the preferred
// size of an equality: its constant side, else its left.
func require(c sym.Constraint, cs *sym.Constraints) sym.Expr {
	if _, lConst := c.L.IsConst(); lConst && c.Rel == sym.EQ {
		c.L, c.R = c.R, c.L // constants on the right: s1 == 8
	}
	if holds, known := sizeFacts.Decide(c); !known || !holds {
		cs.Add(c)
	}
	if _, ok := c.R.IsConst(); ok && c.Rel == sym.EQ {
		return c.R
	}
	return c.L
}

// holdsMaybe reports whether c can hold for some sizes.
func holdsMaybe(c sym.Constraint) bool {
	holds, known := sizeFacts.Decide(c)
	return holds || !known
}

// broadcastDim broadcasts two sizes (NumPy): equal sizes stay, 1 stretches,
// "?" broadcasts with anything. Two symbolic sizes, or a symbolic and a
// static one other than 1, record the constraint that they are equal: a
// symbol meeting another size in broadcasting is assumed not to be 1 (the
// 0/1 policy of graph-symbolize-shapes makes that a guard).
func broadcastDim(a, b sym.Expr, cs *sym.Constraints) (sym.Expr, bool) {
	switch {
	case a.Equal(b):
		return a, true
	case isOne(a):
		return b, true
	case isOne(b):
		return a, true
	}
	_, aConst := a.IsConst()
	_, bConst := b.IsConst()
	if aConst && bConst {
		return a, false
	}
	return meet(a, b, cs)
}

// broadcastShapes returns the NumPy broadcast of shapes a and b. On
// failure, it returns the result-aligned dimension that does not fit.
func broadcastShapes(a, b []sym.Expr, cs *sym.Constraints) ([]sym.Expr, int, bool) {
	n := max(len(a), len(b))
	out := make([]sym.Expr, n)
	for i := range n {
		d, ok := broadcastDim(alignedDim(a, n, i), alignedDim(b, n, i), cs)
		if !ok {
			return nil, i, false
		}
		out[i] = d
	}
	return out, 0, true
}

// broadcastOperands broadcasts the shapes of operands idx of in, naming the
// first pair that does not fit.
func broadcastOperands(in []*ir.TensorType, cs *sym.Constraints, idx ...int) ([]sym.Expr, error) {
	shape := DimsOf(in[idx[0]])
	var local sym.Constraints
	for k := 1; k < len(idx); k++ {
		next := DimsOf(in[idx[k]])
		out, bad, ok := broadcastShapes(shape, next, &local)
		if !ok {
			// Name the first earlier operand that clashes, for a precise message.
			for _, j := range idx[:k] {
				s := DimsOf(in[j])
				if _, bad2, ok2 := broadcastShapes(s, next, nil); !ok2 {
					n := max(len(s), len(next))
					return nil, fmt.Errorf("operands %d and %d are not broadcast-compatible: %s vs %s (dim %d: %s vs %s)",
						j, idx[k], in[j], in[idx[k]], bad2, dimString(alignedDim(s, n, bad2)), dimString(alignedDim(next, n, bad2)))
				}
			}
			n := max(len(shape), len(next))
			return nil, fmt.Errorf("operands are not broadcast-compatible: %s vs %s (dim %d: %s vs %s)",
				shapeString(shape), in[idx[k]], bad, dimString(alignedDim(shape, n, bad)), dimString(alignedDim(next, n, bad)))
		}
		shape = out
	}
	for _, c := range local.List() {
		cs.Add(c)
	}
	return shape, nil
}

// alignedDim is the size of dim i of s once s is right-aligned to rank n.
func alignedDim(s []sym.Expr, n, i int) sym.Expr {
	if j := i - (n - len(s)); j >= 0 {
		return s[j]
	}
	return sym.Const(1)
}

// sameElem checks that operands idx of in share one element type.
func sameElem(in []*ir.TensorType, idx ...int) error {
	first := in[idx[0]].ElementType()
	for _, i := range idx[1:] {
		if e := in[i].ElementType(); e != first {
			return fmt.Errorf("operands %d and %d have different element types: %s vs %s", idx[0], i, first, e)
		}
	}
	return nil
}

// normAxis maps axis (negative counts from the end) into [0, rank).
func normAxis(what string, axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, fmt.Errorf("%s %d is out of range for rank %d (expected %d to %d)", what, axis, rank, -rank, rank-1)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// normAxes normalizes a list of axes and rejects repeats.
func normAxes(what string, axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	seen := make([]bool, rank)
	for i, a := range axes {
		n, err := normAxis(what, a, rank)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, fmt.Errorf("%s %d is repeated in %v", what, a, axes)
		}
		seen[n] = true
		out[i] = n
	}
	return out, nil
}

// checkPerm checks that perm is a permutation of 0..rank-1.
func checkPerm(perm []int64, rank int) error {
	if len(perm) != rank {
		return fmt.Errorf("perm %v has %d entries but the operand has rank %d", perm, len(perm), rank)
	}
	seen := make([]bool, rank)
	for _, p := range perm {
		if p < 0 || p >= int64(rank) {
			return fmt.Errorf("perm %v entry %d is out of range for rank %d", perm, p, rank)
		}
		if seen[p] {
			return fmt.Errorf("perm %v repeats %d", perm, p)
		}
		seen[p] = true
	}
	return nil
}

// numElements returns the element count of shape, or -1 when a size is dynamic.
func numElements(shape []int64) int64 { return ir.NumElements(shape) }

// sameShapeAndElem reports whether two tensor types agree on shape and
// element type; encodings (symbolic dims) are not compared.
func sameShapeAndElem(a, b ir.Type) bool {
	ta, okA := a.(*ir.TensorType)
	tb, okB := b.(*ir.TensorType)
	if !okA || !okB {
		return a == b
	}
	return ta.Ranked() == tb.Ranked() && ta.ElementType() == tb.ElementType() && slices.Equal(ta.Shape(), tb.Shape())
}

// BroadcastShape returns the NumPy broadcast of two static shapes (the
// interpreter's), or false when they do not broadcast. A dynamic size
// broadcasts with anything.
func BroadcastShape(a, b []int64) ([]int64, bool) {
	n := max(len(a), len(b))
	out := make([]int64, n)
	at := func(s []int64, i int) int64 {
		if j := i - (n - len(s)); j >= 0 {
			return s[j]
		}
		return 1
	}
	for i := range n {
		da, db := at(a, i), at(b, i)
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		case da == ir.Dynamic:
			out[i] = db
		case db == ir.Dynamic:
			out[i] = da
		default:
			return nil, false
		}
	}
	return out, true
}

// sameSymbolicDims reports whether two tensor types agree on the sizes
// both name symbolically. A type without a #graph.dims encoding says
// nothing about its "?" sizes, so it agrees with any.
func sameSymbolicDims(a, b ir.Type) bool {
	ta, okA := a.(*ir.TensorType)
	tb, okB := b.(*ir.TensorType)
	if !okA || !okB || !ta.Ranked() || !tb.Ranked() || ta.Encoding == nil || tb.Encoding == nil {
		return true
	}
	da, db := DimsOf(ta), DimsOf(tb)
	if len(da) != len(db) {
		return false
	}
	for i := range da {
		if !IsUnknown(da[i]) && !IsUnknown(db[i]) && !da[i].Equal(db[i]) {
			return false
		}
	}
	return true
}
