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

// TestTensorMapCache checks that a launch on the buffers and geometry of
// an earlier one reuses its map (no second encoding), that a different
// address, size or box is encoded anew, that failures are not cached, and
// that the cache is bounded.
func TestTensorMapCache(t *testing.T) {
	var c tensorMapCache
	encodes := 0
	encode := func(a TensorMapArg) (tensorMapImage, error) {
		encodes++
		if _, err := a.encoding(); err != nil {
			return tensorMapImage{}, err
		}
		return tensorMapImage{new([TensorMapBytes]byte)}, nil
	}
	a := TensorMapArg{Ptr: 0x7000, Elem: TensorMapBF16, Sizes: []int64{200, 72}, Box: []int64{128, 64}, Swizzle: 128}
	first, err := c.get(a, encode)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.get(TensorMapArg{Ptr: 0x7000, Elem: TensorMapBF16, Sizes: []int64{200, 72}, Box: []int64{128, 64}, Swizzle: 128}, encode)
	if err != nil || again.b != first.b || encodes != 1 {
		t.Errorf("the same map again: %d encodings, same image %v (%v)", encodes, again.b == first.b, err)
	}
	for _, b := range []TensorMapArg{
		{Ptr: 0x8000, Elem: TensorMapBF16, Sizes: []int64{200, 72}, Box: []int64{128, 64}, Swizzle: 128},
		{Ptr: 0x7000, Elem: TensorMapBF16, Sizes: []int64{201, 72}, Box: []int64{128, 64}, Swizzle: 128},
		{Ptr: 0x7000, Elem: TensorMapBF16, Sizes: []int64{200, 72}, Box: []int64{64, 64}, Swizzle: 128},
		{Ptr: 0x7000, Elem: TensorMapBF16, Sizes: []int64{1, 200, 72}, Box: []int64{1, 128, 64}, Swizzle: 128},
	} {
		before := encodes
		if _, err := c.get(b, encode); err != nil || encodes != before+1 {
			t.Errorf("%+v: %d encodings (%v), want a new one", b, encodes-before, err)
		}
	}
	bad := TensorMapArg{Ptr: 0x7008, Elem: TensorMapBF16, Sizes: []int64{200, 72}, Box: []int64{128, 64}, Swizzle: 128}
	for range 2 {
		if _, err := c.get(bad, encode); err == nil {
			t.Error("a misaligned map was encoded")
		}
	}
	if encodes != 7 {
		t.Errorf("%d encodings, want 7 (failures are not cached)", encodes)
	}
	for i := range tensorMapCacheSize + 1 {
		if _, err := c.get(TensorMapArg{Ptr: DevicePtr(0x10000 + 16*i), Elem: TensorMapBF16, Sizes: []int64{8, 8}, Box: []int64{8, 8}}, encode); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.maps); n > tensorMapCacheSize {
		t.Errorf("%d cached maps, more than %d", n, tensorMapCacheSize)
	}
}
