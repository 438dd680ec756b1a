package cuda

import (
	"slices"
	"strings"
	"testing"
)

// TestTensorMapEncoding checks the arrays cuTensorMapEncodeTiled gets:
// innermost first, byte strides of the outer dimensions, unit element
// strides, the swizzle's enum; and the located refusals of what the
// hardware cannot copy.
func TestTensorMapEncoding(t *testing.T) {
	a := TensorMapArg{Ptr: 0x7000, Elem: TensorMapBF16, Sizes: []int64{3, 200, 72}, Box: []int64{1, 128, 64}, Swizzle: 128}
	e, err := a.encoding()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.dims, []uint64{72, 200, 3}) || !slices.Equal(e.strides, []uint64{144, 28800}) ||
		!slices.Equal(e.box, []uint32{64, 128, 1}) || !slices.Equal(e.elemStrides, []uint32{1, 1, 1}) || e.swizzle != 3 {
		t.Errorf("encoding %+v", e)
	}
	for _, c := range []struct {
		edit func(*TensorMapArg)
		want string
	}{
		{func(a *TensorMapArg) { a.Sizes[2] = 71 }, "not a multiple of 16"},
		{func(a *TensorMapArg) { a.Ptr = 0x7008 }, "16-byte aligned"},
		{func(a *TensorMapArg) { a.Swizzle = 16 }, "swizzle 16"},
		{func(a *TensorMapArg) { a.Box[1] = 512 }, "box extents 1 to 256"},
		{func(a *TensorMapArg) { a.Box = a.Box[1:] }, "3 sizes and 2 box extents"},
		{func(a *TensorMapArg) { a.Elem = 1 }, "element type"},
	} {
		b := a
		b.Sizes, b.Box = slices.Clone(a.Sizes), slices.Clone(a.Box)
		c.edit(&b)
		if _, err := b.encoding(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}
