package frontend

import (
	"slices"
	"testing"
)

// TestStepShapeMemo checks a dynamic tape step's inferred shapes: each
// list of operand shapes gets its own result shape, repeated ones from the
// memo, and the memo keeps at most maxShapeMemo of them.
func TestStepShapeMemo(t *testing.T) {
	operand := func(shape ...int64) *Tensor {
		x := newTensor()
		x.shape, x.dtype = shape, Float32
		return x
	}
	var st step
	spec := opSpec{name: "add"}
	var rows []int64
	for n := int64(2); n < 2+maxShapeMemo+4; n++ {
		rows = append(rows, n, 3)
	}
	for _, n := range rows {
		got, err := st.shapeFor(nil, spec, []*Tensor{operand(n, 4), operand(4)})
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{n, 4}; !slices.Equal(got, want) {
			t.Fatalf("rows %d: shape %v, want %v", n, got, want)
		}
		got[0] = -1 // the caller owns the slice: the memo must not change
	}
	if len(st.memo) != maxShapeMemo {
		t.Errorf("%d shapes kept, want %d", len(st.memo), maxShapeMemo)
	}
}
