package npy

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Array is an n-dimensional array as stored in a .npy file: elements of one
// DType in C (row-major) order, encoded little-endian in Data.
type Array struct {
	DType DType
	// Shape lists the dimension sizes; it is empty for a scalar (shape ()).
	Shape []int64
	// Data holds Len()*DType.Size() bytes. Bool elements are 0 or 1.
	Data []byte
}

// Float16Bits is the bit pattern of an IEEE 754 binary16 value, the Go element
// type of Float16 arrays.
type Float16Bits uint16

// Element is the set of Go types that hold the elements of a supported DType.
type Element interface {
	bool | int8 | uint8 | int16 | int32 | int64 | Float16Bits | float32 | float64
}

// DTypeOf returns the DType whose elements are held in Go type T.
func DTypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case bool:
		return Bool
	case int8:
		return Int8
	case uint8:
		return Uint8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case Float16Bits:
		return Float16
	case float32:
		return Float32
	default:
		return Float64
	}
}

// NumElements returns the number of elements of shape, or an error if a dim
// is negative or the count overflows.
func NumElements(shape []int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in shape %v", d, shape)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("shape %v has too many elements", shape)
		}
		n *= d
	}
	return n, nil
}

// Len returns the number of elements (1 for a scalar).
func (a *Array) Len() int64 {
	n, _ := NumElements(a.Shape)
	return n
}

// Validate checks that the dtype is supported and that Data holds exactly
// the elements the shape calls for.
func (a *Array) Validate() error {
	if !a.DType.Valid() {
		return fmt.Errorf("invalid dtype %v", a.DType)
	}
	n, err := NumElements(a.Shape)
	if err != nil {
		return err
	}
	if n > math.MaxInt64/int64(a.DType.Size()) || int64(len(a.Data)) != n*int64(a.DType.Size()) {
		return fmt.Errorf("%s array of shape %v needs %d elements of %d bytes, data holds %d bytes",
			a.DType, a.Shape, n, a.DType.Size(), len(a.Data))
	}
	return nil
}

// FromSlice returns an array of the given shape holding a copy of vs.
func FromSlice[T Element](shape []int64, vs []T) (*Array, error) {
	n, err := NumElements(shape)
	if err != nil {
		return nil, err
	}
	if n != int64(len(vs)) {
		return nil, fmt.Errorf("shape %v holds %d elements, got %d values", shape, n, len(vs))
	}
	dt := DTypeOf[T]()
	a := &Array{DType: dt, Shape: append([]int64{}, shape...), Data: make([]byte, len(vs)*dt.Size())}
	encode(a.Data, vs)
	return a, nil
}

// ToSlice returns a copy of a's elements as a []T; T must match a.DType.
func ToSlice[T Element](a *Array) ([]T, error) {
	if dt := DTypeOf[T](); dt != a.DType {
		return nil, fmt.Errorf("array has dtype %s, not %s", a.DType, dt)
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	vs := make([]T, a.Len())
	decode(vs, a.Data)
	return vs, nil
}

// encode writes vs into dst little-endian; dst has exactly the room needed.
func encode[T Element](dst []byte, vs []T) {
	le := binary.LittleEndian
	switch vs := any(vs).(type) {
	case []bool:
		for i, v := range vs {
			if v {
				dst[i] = 1
			}
		}
	case []int8:
		for i, v := range vs {
			dst[i] = byte(v)
		}
	case []uint8:
		copy(dst, vs)
	case []int16:
		for i, v := range vs {
			le.PutUint16(dst[2*i:], uint16(v))
		}
	case []Float16Bits:
		for i, v := range vs {
			le.PutUint16(dst[2*i:], uint16(v))
		}
	case []int32:
		for i, v := range vs {
			le.PutUint32(dst[4*i:], uint32(v))
		}
	case []float32:
		for i, v := range vs {
			le.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case []int64:
		for i, v := range vs {
			le.PutUint64(dst[8*i:], uint64(v))
		}
	case []float64:
		for i, v := range vs {
			le.PutUint64(dst[8*i:], math.Float64bits(v))
		}
	}
}

// decode fills vs from the little-endian bytes in src.
func decode[T Element](vs []T, src []byte) {
	le := binary.LittleEndian
	switch vs := any(vs).(type) {
	case []bool:
		for i := range vs {
			vs[i] = src[i] != 0
		}
	case []int8:
		for i := range vs {
			vs[i] = int8(src[i])
		}
	case []uint8:
		copy(vs, src)
	case []int16:
		for i := range vs {
			vs[i] = int16(le.Uint16(src[2*i:]))
		}
	case []Float16Bits:
		for i := range vs {
			vs[i] = Float16Bits(le.Uint16(src[2*i:]))
		}
	case []int32:
		for i := range vs {
			vs[i] = int32(le.Uint32(src[4*i:]))
		}
	case []float32:
		for i := range vs {
			vs[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case []int64:
		for i := range vs {
			vs[i] = int64(le.Uint64(src[8*i:]))
		}
	case []float64:
		for i := range vs {
			vs[i] = math.Float64frombits(le.Uint64(src[8*i:]))
		}
	}
}
