package interp

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// Value is what an SSA value holds while a program runs. Tensors, vectors
// and scalars are *Tensor values (a scalar is a rank-0 tensor); memref
// buffers, which alias one another, are *Buffer values sharing Tensor's
// storage representation.
type Value interface {
	// ElemType returns the element type: f32 for both f32 and tensor<4xf32>.
	ElemType() ir.Type
	// Shape returns the concrete dimension sizes, empty for a scalar.
	Shape() []int64
	// String describes the value for diagnostics, such as "f32 of shape [3]".
	String() string
}

// Tensor is an immutable n-dimensional array of one element type, stored
// densely in row-major order in a Go slice of the element type's own width,
// so arithmetic happens in the element type's precision:
//
//	f64 []float64    f32 []float32    f16, bf16 []uint16 (bit patterns)
//	i1 []bool        i8 []int8        i16 []int16    i32 []int32
//	i64, index and other integer widths []int64
//
// Integers are held in ir.TruncInt's canonical form for their type. Rules
// never modify a Tensor after returning it.
type Tensor struct {
	elem  ir.Type
	shape []int64
	data  any
}

// ElemType implements Value.
func (t *Tensor) ElemType() ir.Type { return t.elem }

// Shape implements Value. The slice must not be modified.
func (t *Tensor) Shape() []int64 { return t.shape }

// Len returns the number of elements.
func (t *Tensor) Len() int { return storageLen(t.data) }

// Data returns the storage slice (see Tensor for its Go type per element
// type). It must not be modified.
func (t *Tensor) Data() any { return t.data }

// String implements Value.
func (t *Tensor) String() string { return describe(t.elem, t.shape) }

func describe(elem ir.Type, shape []int64) string {
	if len(shape) == 0 {
		return elem.String() + " scalar"
	}
	return fmt.Sprintf("%s of shape %v", elem, shape)
}

// Storage is the set of Go slice element types that hold tensor data.
type Storage interface {
	float64 | float32 | uint16 | int64 | int32 | int16 | int8 | bool
}

// Elems returns t's storage as a []T, or nil if T is not t's storage type.
// The slice must not be modified.
func Elems[T Storage](t *Tensor) []T {
	s, _ := t.data.([]T)
	return s
}

func storageLen(data any) int {
	switch s := data.(type) {
	case []float64:
		return len(s)
	case []float32:
		return len(s)
	case []uint16:
		return len(s)
	case []int64:
		return len(s)
	case []int32:
		return len(s)
	case []int16:
		return len(s)
	case []int8:
		return len(s)
	case []bool:
		return len(s)
	}
	return 0
}

// CheckElemType reports whether tensors can hold elements of type elem:
// f16, bf16, f32, f64, integers up to 64 bits, and index.
func CheckElemType(elem ir.Type) error {
	switch e := elem.(type) {
	case *ir.FloatType:
		if e == ir.F16 || e == ir.BF16 || e == ir.F32 || e == ir.F64 {
			return nil
		}
	case *ir.IntegerType:
		if e.Width >= 1 && e.Width <= 64 {
			return nil
		}
	case *ir.IndexType:
		return nil
	}
	return fmt.Errorf("element type %s is not supported by the interpreter", elem)
}

// newStorage returns zeroed storage for n elements of elem.
func newStorage(elem ir.Type, n int) any {
	switch elem {
	case ir.F64:
		return make([]float64, n)
	case ir.F32:
		return make([]float32, n)
	case ir.F16, ir.BF16:
		return make([]uint16, n)
	}
	if it, ok := elem.(*ir.IntegerType); ok && it.Signedness != ir.Unsigned {
		switch it.Width {
		case 1:
			return make([]bool, n)
		case 8:
			return make([]int8, n)
		case 16:
			return make([]int16, n)
		case 32:
			return make([]int32, n)
		}
	}
	return make([]int64, n)
}

// maxElements bounds the size of one tensor (2^36 elements), so a corrupt
// shape is reported rather than attempted.
const maxElements = 1 << 36

// numElements returns the element count of a static shape of elem
// elements, checking that one tensor of it fits in memory (CheckMemory).
func numElements(elem ir.Type, shape []int64) (int, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("invalid dimension %d in shape %v", d, shape)
		}
		if d != 0 && n > maxElements/d {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		n *= d
	}
	if err := CheckMemory(uint64(n) * uint64(storageBytes(elem))); err != nil {
		return 0, fmt.Errorf("a tensor of shape %v and element type %s %w", shape, elem, err)
	}
	return int(n), nil
}

// scratchBytes is what a rule may hold for each element of a tensor it
// computes, beyond the tensor's own storage: a float64, int64 or
// bit-pattern copy of the elements and an index map.
const scratchBytes = 16

// reserve is the check every rule makes before it allocates a tensor whose
// size does not come from the data of an operand (a static result type, a
// broadcast, a padding, a product's rows and columns, the rows of
// attention's scores, an input widened from a file): the element count of
// shape must not overflow nor exceed 2^36, and the tensor with its scratch
// (scratchBytes per element) must fit in memory (CheckMemory). exec makes
// it for every static result type before the op's rule runs; rules whose
// result shapes are computed make it themselves. Go ends the process when
// an allocation fails, so without it a 200-byte program could ask for
// terabytes and die with a stack trace instead of a diagnostic.
func reserve(elem ir.Type, shape []int64) (int, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("invalid dimension %d in shape %v", d, shape)
		}
		if d != 0 && n > maxElements/d {
			return 0, fmt.Errorf("a result of shape %v and element type %s has more than 2^36 elements", shape, elem)
		}
		n *= d
	}
	if err := CheckMemory(uint64(n) * uint64(storageBytes(elem)+scratchBytes)); err != nil {
		return 0, fmt.Errorf("a result of shape %v and element type %s %w", shape, elem, err)
	}
	return int(n), nil
}

// reserveResults applies reserve to op's ranked, static tensor and vector
// result types (memrefs are views but for loop.alloc, which checks its
// own size).
func reserveResults(op *ir.Operation) error {
	for _, r := range op.Results() {
		var shape []int64
		switch t := r.Type().(type) {
		case *ir.TensorType:
			if !t.Ranked() {
				continue
			}
			shape = t.Shape()
		case *ir.VectorType:
			shape = t.Shape()
		default:
			continue
		}
		if len(shape) == 0 || slices.Contains(shape, ir.Dynamic) {
			continue
		}
		if _, err := reserve(ir.ElementTypeOf(r.Type()), shape); err != nil {
			return err
		}
	}
	return nil
}

// CheckSize reports an error when a tensor of elem elements and the static
// shape cannot be allocated: an element type the interpreter does not
// support, a negative size, more than 2^36 elements, or more bytes than
// CheckMemory allows.
func CheckSize(elem ir.Type, shape []int64) error {
	if err := CheckElemType(elem); err != nil {
		return err
	}
	_, err := numElements(elem, shape)
	return err
}

// physicalMemory and availableMemory return the machine's memory and the
// memory available now, in bytes (0: unknown); tests replace them.
var physicalMemory, availableMemory = physicalMemoryOS, availableMemoryOS

// largeAllocation is the size from which CheckMemory asks the system about
// its memory; smaller allocations are not checked.
const largeAllocation = 64 << 20

// CheckMemory reports an error ("needs 3.0 TiB, more than ...") when an
// allocation of n bytes, 64 MiB or more, cannot succeed: more than the
// machine's physical memory or than the memory available now (the
// kernel's estimate, within the cgroup's limit). Go ends the
// process when an allocation fails, so sizes that come from the input are
// checked before they are allocated.
func CheckMemory(n uint64) error {
	if n < largeAllocation {
		return nil
	}
	if total := physicalMemory(); total > 0 && n > total {
		return fmt.Errorf("needs %s, more than the %s of memory of this machine", formatBytes(n), formatBytes(total))
	}
	if avail := availableMemory(); avail > 0 && n > avail {
		return fmt.Errorf("needs %s, more than the %s of memory available", formatBytes(n), formatBytes(avail))
	}
	return nil
}

// storageBytes is the size of one element of elem in newStorage's slices.
func storageBytes(elem ir.Type) int {
	switch elem {
	case ir.F64:
		return 8
	case ir.F32:
		return 4
	case ir.F16, ir.BF16:
		return 2
	}
	if it, ok := elem.(*ir.IntegerType); ok && it.Signedness != ir.Unsigned {
		switch it.Width {
		case 1, 8:
			return 1
		case 16, 32:
			return it.Width / 8
		}
	}
	return 8
}

// formatBytes writes a byte count for messages: "512 bytes", "3.0 TiB".
func formatBytes(n uint64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}

// NewTensor returns a zero-filled tensor of the given element type and shape.
func NewTensor(elem ir.Type, shape []int64) (*Tensor, error) {
	if err := CheckElemType(elem); err != nil {
		return nil, err
	}
	n, err := numElements(elem, shape)
	if err != nil {
		return nil, err
	}
	return &Tensor{elem: elem, shape: slices.Clone(shape), data: newStorage(elem, n)}, nil
}

// FromData returns a tensor that takes ownership of data, which must be the
// storage slice type of elem with one element per entry of shape.
func FromData(elem ir.Type, shape []int64, data any) (*Tensor, error) {
	if err := CheckElemType(elem); err != nil {
		return nil, err
	}
	n, err := numElements(elem, shape)
	if err != nil {
		return nil, err
	}
	if want := newStorage(elem, 0); reflect.TypeOf(want) != reflect.TypeOf(data) {
		return nil, fmt.Errorf("%s elements are stored as %T, got %T", elem, want, data)
	}
	if storageLen(data) != n {
		return nil, fmt.Errorf("shape %v holds %d elements, data has %d", shape, n, storageLen(data))
	}
	return &Tensor{elem: elem, shape: slices.Clone(shape), data: data}, nil
}

// like returns a zero tensor with t's shape and element type elem.
func like(t *Tensor, elem ir.Type) *Tensor {
	return &Tensor{elem: elem, shape: t.shape, data: newStorage(elem, t.Len())}
}

// FromFloat64s returns a tensor of float type elem holding vs, each rounded
// to elem with round-to-nearest-even.
func FromFloat64s(elem ir.Type, shape []int64, vs []float64) (*Tensor, error) {
	t, err := NewTensor(elem, shape)
	if err != nil {
		return nil, err
	}
	if !ir.IsFloat(elem) || len(vs) != t.Len() {
		return nil, fmt.Errorf("cannot make a %s from %d floats", t, len(vs))
	}
	t.setFloats(vs)
	return t, nil
}

// FromInt64s returns a tensor of integer or index type elem holding vs,
// each wrapped to elem's width.
func FromInt64s(elem ir.Type, shape []int64, vs []int64) (*Tensor, error) {
	t, err := NewTensor(elem, shape)
	if err != nil {
		return nil, err
	}
	if !ir.IsIntOrIndex(elem) || len(vs) != t.Len() {
		return nil, fmt.Errorf("cannot make a %s from %d integers", t, len(vs))
	}
	t.setInts(vs)
	return t, nil
}

// ScalarFloat returns a rank-0 tensor holding v rounded to elem.
func ScalarFloat(elem *ir.FloatType, v float64) (*Tensor, error) {
	return FromFloat64s(elem, nil, []float64{v})
}

// ScalarInt returns a rank-0 tensor holding v wrapped to elem.
func ScalarInt(elem ir.Type, v int64) (*Tensor, error) { return FromInt64s(elem, nil, []int64{v}) }

// Float64s returns the elements of a float tensor as float64 values (exactly).
func (t *Tensor) Float64s() []float64 {
	out := make([]float64, t.Len())
	switch s := t.data.(type) {
	case []float64:
		copy(out, s)
	case []float32:
		for i, v := range s {
			out[i] = float64(v)
		}
	case []uint16:
		ft := t.elem.(*ir.FloatType)
		for i, v := range s {
			out[i] = ir.FloatFromBits(uint64(v), ft)
		}
	}
	return out
}

// setFloats stores vs (rounding each to the element type) into t's storage.
func (t *Tensor) setFloats(vs []float64) {
	switch s := t.data.(type) {
	case []float64:
		copy(s, vs)
	case []float32:
		for i, v := range vs {
			s[i] = float32(v)
		}
	case []uint16:
		ft := t.elem.(*ir.FloatType)
		for i, v := range vs {
			s[i] = uint16(ir.FloatToBits(v, ft))
		}
	}
}

// Int64s returns the elements of an integer or index tensor in ir.TruncInt's
// canonical form (i1 as 0 or 1).
func (t *Tensor) Int64s() []int64 {
	out := make([]int64, t.Len())
	switch s := t.data.(type) {
	case []int64:
		copy(out, s)
	case []int32:
		for i, v := range s {
			out[i] = int64(v)
		}
	case []int16:
		for i, v := range s {
			out[i] = int64(v)
		}
	case []int8:
		for i, v := range s {
			out[i] = int64(v)
		}
	case []bool:
		for i, v := range s {
			if v {
				out[i] = 1
			}
		}
	}
	return out
}

// setInts stores vs, wrapped to the element type, into t's storage.
func (t *Tensor) setInts(vs []int64) {
	switch s := t.data.(type) {
	case []int64:
		for i, v := range vs {
			s[i] = ir.TruncInt(v, t.elem)
		}
	case []int32:
		for i, v := range vs {
			s[i] = int32(v)
		}
	case []int16:
		for i, v := range vs {
			s[i] = int16(v)
		}
	case []int8:
		for i, v := range vs {
			s[i] = int8(v)
		}
	case []bool:
		for i, v := range vs {
			s[i] = v&1 != 0
		}
	}
}

// Bits returns each element's bit pattern: floats in their type's encoding,
// integers in ir.TruncInt's canonical form, as in ir.DenseAttr.
func (t *Tensor) Bits() []uint64 {
	out := make([]uint64, t.Len())
	switch s := t.data.(type) {
	case []float64:
		for i, v := range s {
			out[i] = math.Float64bits(v)
		}
	case []float32:
		for i, v := range s {
			out[i] = uint64(math.Float32bits(v))
		}
	case []uint16:
		for i, v := range s {
			out[i] = uint64(v)
		}
	default:
		for i, v := range t.Int64s() {
			out[i] = uint64(v)
		}
	}
	return out
}

// FromBits returns a tensor of element type elem whose elements have the bit
// patterns bits (see Bits); a single pattern is splatted over the shape.
func FromBits(elem ir.Type, shape []int64, bits []uint64) (*Tensor, error) {
	t, err := NewTensor(elem, shape)
	if err != nil {
		return nil, err
	}
	n := t.Len()
	if len(bits) != n && len(bits) != 1 {
		return nil, fmt.Errorf("%d bit patterns for %s", len(bits), t)
	}
	at := func(i int) uint64 {
		if len(bits) == 1 {
			return bits[0]
		}
		return bits[i]
	}
	switch s := t.data.(type) {
	case []float64:
		for i := range s {
			s[i] = math.Float64frombits(at(i))
		}
	case []float32:
		for i := range s {
			s[i] = math.Float32frombits(uint32(at(i)))
		}
	case []uint16:
		for i := range s {
			s[i] = uint16(at(i))
		}
	default:
		vs := make([]int64, n)
		for i := range vs {
			vs[i] = int64(at(i))
		}
		t.setInts(vs)
	}
	return t, nil
}

// Format renders t's elements, for debugging and test failure messages.
func (t *Tensor) Format() string {
	var b strings.Builder
	b.WriteString(t.String())
	b.WriteString(": ")
	if ir.IsFloat(t.elem) {
		fmt.Fprint(&b, t.Float64s())
	} else {
		fmt.Fprint(&b, t.Int64s())
	}
	return b.String()
}

// checkValue reports whether v can be passed where a value of type want is
// expected: the same element type, and a shape matching want's static dims.
func checkValue(v Value, want ir.Type) error {
	elem := ir.ElementTypeOf(want)
	var shape []int64
	ranked := true
	if st, ok := want.(ir.ShapedType); ok {
		shape, ranked = st.Shape(), st.Ranked()
	}
	// Memrefs hold buffers (see Buffer); every other type holds tensors.
	_, isBuf := v.(*Buffer)
	_, wantBuf := want.(*ir.MemRefType)
	ok := isBuf == wantBuf && v.ElemType() == elem
	if ok && ranked {
		got := v.Shape()
		ok = len(got) == len(shape)
		for i := 0; ok && i < len(shape); i++ {
			ok = shape[i] == ir.Dynamic || shape[i] == got[i]
		}
	}
	if !ok {
		return fmt.Errorf("expected %s, got %s", want, v)
	}
	return nil
}
