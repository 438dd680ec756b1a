package interp

import (
	"errors"
	"fmt"
	"slices"

	"github.com/strata-ir/strata/ir"
)

// Buffer is the value of a memref: a mutable n-dimensional array with
// reference semantics. Every SSA value, function argument and result that
// holds the same *Buffer sees the same elements, as memrefs alias in MLIR.
// Elements are stored as a Tensor's are (row-major, in a Go slice of the
// element type's storage type; see Tensor), so the two convert by copying
// one slice.
//
// A buffer freed by loop.dealloc keeps its shape but no longer its
// elements: any later access is an error.
type Buffer struct {
	elem  ir.Type
	shape []int64
	data  any
	freed bool
}

// errFreed is returned by every access to a deallocated buffer.
var errFreed = errors.New("use of deallocated buffer")

// NewBuffer returns a zero-filled buffer of the given element type and shape.
func NewBuffer(elem ir.Type, shape []int64) (*Buffer, error) {
	t, err := NewTensor(elem, shape)
	if err != nil {
		return nil, err
	}
	return &Buffer{elem: t.elem, shape: t.shape, data: t.data}, nil
}

// BufferFromTensor returns a new buffer holding a copy of t's elements.
func BufferFromTensor(t *Tensor) *Buffer {
	return &Buffer{elem: t.elem, shape: slices.Clone(t.shape), data: cloneStorage(t.data)}
}

// Tensor returns a tensor holding a copy of b's current elements.
func (b *Buffer) Tensor() (*Tensor, error) {
	if b.freed {
		return nil, errFreed
	}
	return &Tensor{elem: b.elem, shape: slices.Clone(b.shape), data: cloneStorage(b.data)}, nil
}

// ElemType implements Value.
func (b *Buffer) ElemType() ir.Type { return b.elem }

// Shape implements Value. The slice must not be modified.
func (b *Buffer) Shape() []int64 { return b.shape }

// String implements Value.
func (b *Buffer) String() string {
	s := "buffer of " + describe(b.elem, b.shape)
	if b.freed {
		s += " (deallocated)"
	}
	return s
}

// Freed reports whether the buffer was deallocated.
func (b *Buffer) Freed() bool { return b.freed }

// Data returns the storage slice, shared with the buffer: writes to it are
// writes to the buffer. It is nil once the buffer is freed.
func (b *Buffer) Data() any { return b.data }

// free releases the elements; later accesses fail with errFreed.
func (b *Buffer) free() error {
	if b.freed {
		return fmt.Errorf("%w: freed twice", errFreed)
	}
	b.freed, b.data = true, nil
	return nil
}

// offset returns the row-major position of the element at idx, checking
// each index against its dimension's size.
func (b *Buffer) offset(idx []int64) (int, error) {
	if b.freed {
		return 0, errFreed
	}
	if len(idx) != len(b.shape) {
		return 0, fmt.Errorf("%d indices for %s", len(idx), b)
	}
	off := int64(0)
	for d, i := range idx {
		if i < 0 || i >= b.shape[d] {
			return 0, fmt.Errorf("index %d is out of bounds for dimension %d of size %d (%s)", i, d, b.shape[d], b)
		}
		off = off*b.shape[d] + i
	}
	return int(off), nil
}

// load returns the element at position off as a scalar tensor.
func (b *Buffer) load(off int) *Tensor {
	t := &Tensor{elem: b.elem}
	switch s := b.data.(type) {
	case []float64:
		t.data = []float64{s[off]}
	case []float32:
		t.data = []float32{s[off]}
	case []uint16:
		t.data = []uint16{s[off]}
	case []int64:
		t.data = []int64{s[off]}
	case []int32:
		t.data = []int32{s[off]}
	case []int16:
		t.data = []int16{s[off]}
	case []int8:
		t.data = []int8{s[off]}
	case []bool:
		t.data = []bool{s[off]}
	}
	return t
}

// store writes the single element of the scalar v at position off.
func (b *Buffer) store(off int, v *Tensor) error {
	ok := v.elem == b.elem && v.Len() == 1
	if ok {
		switch s := b.data.(type) {
		case []float64:
			s[off] = v.data.([]float64)[0]
		case []float32:
			s[off] = v.data.([]float32)[0]
		case []uint16:
			s[off] = v.data.([]uint16)[0]
		case []int64:
			s[off] = v.data.([]int64)[0]
		case []int32:
			s[off] = v.data.([]int32)[0]
		case []int16:
			s[off] = v.data.([]int16)[0]
		case []int8:
			s[off] = v.data.([]int8)[0]
		case []bool:
			s[off] = v.data.([]bool)[0]
		}
	}
	if !ok {
		return fmt.Errorf("cannot store %s into %s", v, b)
	}
	return nil
}

// cloneStorage copies a storage slice.
func cloneStorage(data any) any {
	switch s := data.(type) {
	case []float64:
		return slices.Clone(s)
	case []float32:
		return slices.Clone(s)
	case []uint16:
		return slices.Clone(s)
	case []int64:
		return slices.Clone(s)
	case []int32:
		return slices.Clone(s)
	case []int16:
		return slices.Clone(s)
	case []int8:
		return slices.Clone(s)
	case []bool:
		return slices.Clone(s)
	}
	return nil
}
