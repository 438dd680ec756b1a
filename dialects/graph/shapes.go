package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// dyn is the size of a dimension unknown until run time ("?").
const dyn = ir.Dynamic

// ElementTypes lists the element types graph tensors may have.
var ElementTypes = []ir.Type{ir.F64, ir.F32, ir.F16, ir.BF16, ir.I64, ir.I32, ir.I1}

// elemClass is a set of element types an operand accepts.
type elemClass uint8

const (
	anyElem     elemClass = iota // every graph element type
	numericElem                  // floats, i64, i32 (not i1)
	floatElem                    // f64, f32, f16, bf16
	intElem                      // i64, i32
	boolElem                     // i1
)

var classNames = [...]string{
	anyElem:     "f64, f32, f16, bf16, i64, i32 or i1",
	numericElem: "f64, f32, f16, bf16, i64 or i32",
	floatElem:   "f64, f32, f16 or bf16",
	intElem:     "i64 or i32",
	boolElem:    "i1",
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

// dimString prints a size, "?" when dynamic.
func dimString(d int64) string {
	if d == dyn {
		return "?"
	}
	return strconv.FormatInt(d, 10)
}

// shapeString prints a shape as [2, ?, 4].
func shapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = dimString(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// dimsCompatible reports whether two sizes may be equal at run time.
func dimsCompatible(a, b int64) bool { return a == b || a == dyn || b == dyn }

// mergeDim returns the better-known of two compatible sizes.
func mergeDim(a, b int64) int64 {
	if a == dyn {
		return b
	}
	return a
}

// broadcastShapes returns the NumPy broadcast of shapes a and b. A "?" size
// broadcasts with anything: the result is the other size unless that is 1
// or "?" (a "?" could itself be 1, so "?" against 1 stays "?"). On failure,
// it returns the result-aligned dimension that does not fit.
func broadcastShapes(a, b []int64) ([]int64, int, bool) {
	n := max(len(a), len(b))
	out := make([]int64, n)
	for i := range n {
		da, db := int64(1), int64(1)
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		case da == dyn:
			out[i] = db
		case db == dyn:
			out[i] = da
		default:
			return nil, i, false
		}
	}
	return out, 0, true
}

// broadcastOperands broadcasts the shapes of operands idx of in, naming the
// first pair that does not fit.
func broadcastOperands(in []*ir.TensorType, idx ...int) ([]int64, error) {
	shape := in[idx[0]].Shape()
	for k := 1; k < len(idx); k++ {
		next := in[idx[k]].Shape()
		out, bad, ok := broadcastShapes(shape, next)
		if !ok {
			// Name the first earlier operand that clashes, for a precise message.
			for _, j := range idx[:k] {
				s := in[j].Shape()
				if _, bad2, ok2 := broadcastShapes(s, next); !ok2 {
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
	return shape, nil
}

// alignedDim is the size of dim i of s once s is right-aligned to rank n.
func alignedDim(s []int64, n, i int) int64 {
	if j := i - (n - len(s)); j >= 0 {
		return s[j]
	}
	return 1
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

// BroadcastShape returns the NumPy broadcast of two shapes, or false when
// they do not broadcast.
func BroadcastShape(a, b []int64) ([]int64, bool) {
	out, _, ok := broadcastShapes(a, b)
	return out, ok
}
