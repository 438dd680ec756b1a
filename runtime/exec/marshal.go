package exec

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
)

// DevicePtr is a device address (cuda.DevicePtr).
type DevicePtr = cuda.DevicePtr

// argKind is how a value crosses the kernel ABI of docs/lowering.md: the
// Go type handed to cuda.Launch for each kernel parameter.
type argKind uint8

const (
	argPtr  argKind = iota // memref: DevicePtr
	argI64                 // index, i64: int64
	argI32                 // i32: int32
	argI16                 // i16: int16
	argI8                  // i8: int8
	argBool                // i1: bool (.u8)
	argB16                 // f16, bf16: uint16 bits
	argF32                 // f32: float32
	argF64                 // f64: float64
)

var argKindNames = [...]string{"ptr", "i64", "i32", "i16", "i8", "i1", "b16", "f32", "f64"}

func (k argKind) String() string { return argKindNames[k] }

// kindOf returns the ABI kind of a kernel parameter or host value type.
func kindOf(t ir.Type) (argKind, error) {
	switch t := t.(type) {
	case *ir.MemRefType:
		return argPtr, nil
	case *ir.IndexType:
		return argI64, nil
	case *ir.IntegerType:
		switch t.Width {
		case 1:
			return argBool, nil
		case 8:
			return argI8, nil
		case 16:
			return argI16, nil
		case 32:
			return argI32, nil
		case 64:
			return argI64, nil
		}
	case *ir.FloatType:
		switch t {
		case ir.F16, ir.BF16:
			return argB16, nil
		case ir.F32:
			return argF32, nil
		case ir.F64:
			return argF64, nil
		}
	}
	return 0, fmt.Errorf("type %s does not cross the kernel ABI (memrefs, index, i1/i8/i16/i32/i64, f16, bf16, f32, f64)", t)
}

// marshal converts a host value of type t to the Go value cuda.Launch
// passes for it.
func marshal(k argKind, t ir.Type, v slotValue) any {
	switch k {
	case argPtr:
		return v.b.mem.ptr
	case argI64:
		return v.i
	case argI32:
		return int32(v.i)
	case argI16:
		return int16(v.i)
	case argI8:
		return int8(v.i)
	case argBool:
		return v.i != 0
	case argB16:
		return uint16(ir.FloatToBits(v.f, t.(*ir.FloatType)))
	case argF32:
		return float32(v.f)
	}
	return v.f
}

// storageBytes is the device storage of a tensor of elem and shape.
func storageBytes(elem ir.Type, shape []int64) (uint64, error) {
	size, err := elemSize(elem)
	if err != nil {
		return 0, err
	}
	n, err := elementCount(shape)
	if err != nil {
		return 0, err
	}
	return uint64(n) * uint64(size), nil
}

// elemSize returns the bytes one element of type t takes in device
// memory: i1 one byte, f16 and bf16 two, index eight.
func elemSize(t ir.Type) (int, error) {
	k, err := kindOf(t)
	if err != nil || k == argPtr {
		return 0, fmt.Errorf("element type %s has no device storage", t)
	}
	return [...]int{argI64: 8, argI32: 4, argI16: 2, argI8: 1, argBool: 1, argB16: 2, argF32: 4, argF64: 8}[k], nil
}

// encode writes a tensor's elements as device storage: little-endian,
// elemSize bytes each.
func encode(t *interp.Tensor) ([]byte, error) {
	size, err := elemSize(t.ElemType())
	if err != nil {
		return nil, err
	}
	if raw := rawBytes(t.Data(), size); raw != nil {
		return slices.Clone(raw), nil
	}
	bits := t.Bits()
	out := make([]byte, len(bits)*size)
	var buf [8]byte
	for i, b := range bits {
		if size == 1 && ir.IntWidth(t.ElemType()) == 1 {
			b &= 1
		}
		binary.LittleEndian.PutUint64(buf[:], b)
		copy(out[i*size:], buf[:size])
	}
	return out, nil
}

// encodeView is encode without the copy when the tensor's storage already
// is the device form: for an upload, which the driver stages before
// returning (the tensor is immutable, and not kept).
func encodeView(t *interp.Tensor) ([]byte, error) {
	size, err := elemSize(t.ElemType())
	if err != nil {
		return nil, err
	}
	if raw := rawBytes(t.Data(), size); raw != nil {
		return raw, nil
	}
	return encode(t)
}

// decode reads device storage into a tensor of elem and shape. Integers
// are sign-extended from their width.
func decode(elem ir.Type, shape []int64, data []byte) (*interp.Tensor, error) {
	size, err := elemSize(elem)
	if err != nil {
		return nil, err
	}
	n, err := elementCount(shape)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != n*int64(size) {
		return nil, fmt.Errorf("%d bytes for %d elements of %s", len(data), n, elem)
	}
	if t, err := interp.NewTensor(elem, shape); err == nil {
		// A fresh tensor whose storage is the device form is filled by one copy.
		if raw := rawBytes(t.Data(), size); raw != nil {
			copy(raw, data)
			return t, nil
		}
	}
	bits := make([]uint64, n)
	var buf [8]byte
	w := ir.IntWidth(elem)
	for i := range bits {
		copy(buf[:], data[i*size:(i+1)*size])
		b := binary.LittleEndian.Uint64(buf[:])
		if w > 1 && w < 64 {
			b = uint64(ir.TruncInt(int64(b), elem))
		} else if w == 1 {
			b &= 1
		}
		bits[i] = b
	}
	return interp.FromBits(elem, slices.Clone(shape), bits)
}

// scalarValue reads a rank-0 tensor argument into a slot.
func scalarValue(v interp.Value, t ir.Type) (slotValue, error) {
	tv, ok := v.(*interp.Tensor)
	if !ok || len(tv.Shape()) != 0 || tv.ElemType() != t {
		return slotValue{}, fmt.Errorf("expected a %s scalar, got %s", t, v)
	}
	if ir.IsFloat(t) {
		return slotValue{f: tv.Float64s()[0]}, nil
	}
	return slotValue{i: tv.Int64s()[0]}, nil
}

// scalarResult makes the interpreter's value of a scalar slot.
func scalarResult(v slotValue, t ir.Type) (interp.Value, error) {
	if ft, ok := t.(*ir.FloatType); ok {
		return interp.ScalarFloat(ft, v.f)
	}
	return interp.ScalarInt(t, v.i)
}

// hostTensor returns the elements of a host value: a Tensor itself, or a
// Buffer's contents; ok is false for any other value.
func hostTensor(v interp.Value) (t *interp.Tensor, ok bool, err error) {
	switch v := v.(type) {
	case *interp.Tensor:
		return v, true, nil
	case *interp.Buffer:
		t, err := v.Tensor()
		return t, err == nil, err
	}
	return nil, false, nil
}

// tensorOf returns the elements of a memref argument, given as a Buffer
// or a Tensor, checking them against the parameter type mt.
func tensorOf(v interp.Value, mt *ir.MemRefType) (*interp.Tensor, error) {
	t, ok, err := hostTensor(v)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("expected a buffer of type %s, got %s", mt, v)
	}
	shape := mt.Shape()
	ok = t.ElemType() == mt.ElementType() && len(t.Shape()) == len(shape)
	for i := 0; ok && i < len(shape); i++ {
		ok = shape[i] == ir.Dynamic || shape[i] == t.Shape()[i]
	}
	if !ok {
		return nil, fmt.Errorf("expected %s, got %s", mt, v)
	}
	return t, nil
}

// fill copies a tensor's elements into a buffer of the same type and
// shape, for writing results back into caller buffers.
func fill(dst *interp.Buffer, src *interp.Tensor) error {
	switch d := dst.Data().(type) {
	case []float64:
		copy(d, interp.Elems[float64](src))
	case []float32:
		copy(d, interp.Elems[float32](src))
	case []uint16:
		copy(d, interp.Elems[uint16](src))
	case []int64:
		copy(d, interp.Elems[int64](src))
	case []int32:
		copy(d, interp.Elems[int32](src))
	case []int16:
		copy(d, interp.Elems[int16](src))
	case []int8:
		copy(d, interp.Elems[int8](src))
	case []bool:
		copy(d, interp.Elems[bool](src))
	default:
		return fmt.Errorf("cannot write into %s", dst)
	}
	return nil
}

// littleEndian reports whether this machine stores numbers as the device does.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// rawBytes returns the memory of a tensor storage slice when it already is
// the device form of elements of size bytes (little-endian, one Go value per
// element of that size), or nil. Copies then move whole buffers at memory
// speed instead of element by element.
func rawBytes(data any, size int) []byte {
	if !littleEndian {
		return nil
	}
	var p unsafe.Pointer
	var n, width int
	switch s := data.(type) {
	case []float32:
		p, n, width = unsafe.Pointer(unsafe.SliceData(s)), len(s), 4
	case []float64:
		p, n, width = unsafe.Pointer(unsafe.SliceData(s)), len(s), 8
	case []int64:
		p, n, width = unsafe.Pointer(unsafe.SliceData(s)), len(s), 8
	case []int32:
		p, n, width = unsafe.Pointer(unsafe.SliceData(s)), len(s), 4
	case []int16:
		p, n, width = unsafe.Pointer(unsafe.SliceData(s)), len(s), 2
	case []uint16:
		p, n, width = unsafe.Pointer(unsafe.SliceData(s)), len(s), 2
	case []int8:
		p, n, width = unsafe.Pointer(unsafe.SliceData(s)), len(s), 1
	case []bool: // Go stores false and true as the bytes 0 and 1
		p, n, width = unsafe.Pointer(unsafe.SliceData(s)), len(s), 1
	default:
		return nil
	}
	if width != size || n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), n*width)
}
