package interp

import (
	"fmt"
	"math/rand/v2"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/npy"
)

// npyDType returns the .npy dtype that holds elements of type elem exactly.
// NumPy has no bfloat16, so bf16 travels as float32 (exact when widening;
// rounded to nearest even when read back).
func npyDType(elem ir.Type) (npy.DType, bool) {
	switch elem {
	case ir.F64:
		return npy.Float64, true
	case ir.F32, ir.BF16:
		return npy.Float32, true
	case ir.F16:
		return npy.Float16, true
	case ir.I1:
		return npy.Bool, true
	case ir.I8:
		return npy.Int8, true
	case ir.I16:
		return npy.Int16, true
	case ir.I32:
		return npy.Int32, true
	case ir.I64, ir.Index:
		return npy.Int64, true
	case ir.IntegerWithSign(8, ir.Unsigned):
		return npy.Uint8, true
	}
	return 0, false
}

// FromNPY converts a .npy array into a value to be passed where a value of
// type want is expected (a function argument type, say). The dtype must
// hold want's element type (float32 for bf16, int64 for index) and the shape
// must match want's static dims.
func FromNPY(arr *npy.Array, want ir.Type) (Value, error) {
	elem := ir.ElementTypeOf(want)
	dt, ok := npyDType(elem)
	if !ok {
		return nil, fmt.Errorf("no .npy dtype holds %s elements", elem)
	}
	if err := arr.Validate(); err != nil {
		return nil, err
	}
	if arr.DType != dt {
		return nil, fmt.Errorf("expected %s (a %s array), got a %s array of shape %v", want, dt, arr.DType, arr.Shape)
	}
	// Some element types are widened on the way (ui8 to int64, bf16 through
	// float64): check what that costs before allocating.
	if _, err := reserve(elem, arr.Shape); err != nil {
		return nil, err
	}
	var (
		t   *Tensor
		err error
	)
	switch elem {
	case ir.F64:
		t, err = fromSlice[float64](elem, arr)
	case ir.F32:
		t, err = fromSlice[float32](elem, arr)
	case ir.BF16:
		var vs []float32
		if vs, err = npy.ToSlice[float32](arr); err == nil {
			fs := make([]float64, len(vs))
			for i, v := range vs {
				fs[i] = float64(v)
			}
			t, err = FromFloat64s(elem, arr.Shape, fs)
		}
	case ir.F16:
		var vs []npy.Float16Bits
		if vs, err = npy.ToSlice[npy.Float16Bits](arr); err == nil {
			data := make([]uint16, len(vs))
			for i, v := range vs {
				data[i] = uint16(v)
			}
			t, err = FromData(elem, arr.Shape, data)
		}
	case ir.I1:
		t, err = fromSlice[bool](elem, arr)
	case ir.I8:
		t, err = fromSlice[int8](elem, arr)
	case ir.I16:
		t, err = fromSlice[int16](elem, arr)
	case ir.I32:
		t, err = fromSlice[int32](elem, arr)
	case ir.I64, ir.Index:
		t, err = fromSlice[int64](elem, arr)
	default: // ui8
		var vs []uint8
		if vs, err = npy.ToSlice[uint8](arr); err == nil {
			is := make([]int64, len(vs))
			for i, v := range vs {
				is[i] = int64(v)
			}
			t, err = FromInt64s(elem, arr.Shape, is)
		}
	}
	if err != nil {
		return nil, err
	}
	var v Value = t
	if _, mem := want.(*ir.MemRefType); mem {
		v = &Buffer{elem: t.elem, shape: t.shape, data: t.data} // t is not shared
	}
	if err := checkValue(v, want); err != nil {
		return nil, fmt.Errorf("expected %s, got a %s array of shape %v", want, arr.DType, arr.Shape)
	}
	return v, nil
}

// fromSlice makes a tensor from an array whose dtype's Go type is T.
func fromSlice[T npy.Element](elem ir.Type, arr *npy.Array) (*Tensor, error) {
	vs, err := npy.ToSlice[T](arr)
	if err != nil {
		return nil, err
	}
	return FromData(elem, arr.Shape, vs)
}

// ToNPY converts a value into a .npy array (bf16 widened to float32, index to int64).
func ToNPY(v Value) (*npy.Array, error) {
	if b, ok := v.(*Buffer); ok {
		if b.freed {
			return nil, fmt.Errorf("cannot write %s as .npy", v)
		}
		v = &Tensor{elem: b.elem, shape: b.shape, data: b.data} // read only below
	}
	t, ok := v.(*Tensor)
	if !ok {
		return nil, fmt.Errorf("cannot write %s as .npy", v)
	}
	dt, ok := npyDType(t.elem)
	if !ok {
		return nil, fmt.Errorf("no .npy dtype holds %s elements", t.elem)
	}
	switch dt {
	case npy.Float64:
		return npy.FromSlice(t.shape, Elems[float64](t))
	case npy.Float32:
		if s := Elems[float32](t); s != nil {
			return npy.FromSlice(t.shape, s)
		}
		fs := t.Float64s() // bf16
		vs := make([]float32, len(fs))
		for i, f := range fs {
			vs[i] = float32(f)
		}
		return npy.FromSlice(t.shape, vs)
	case npy.Float16:
		s := Elems[uint16](t)
		vs := make([]npy.Float16Bits, len(s))
		for i, v := range s {
			vs[i] = npy.Float16Bits(v)
		}
		return npy.FromSlice(t.shape, vs)
	case npy.Bool:
		return npy.FromSlice(t.shape, Elems[bool](t))
	case npy.Int8:
		return npy.FromSlice(t.shape, Elems[int8](t))
	case npy.Int16:
		return npy.FromSlice(t.shape, Elems[int16](t))
	case npy.Int32:
		return npy.FromSlice(t.shape, Elems[int32](t))
	case npy.Int64:
		return npy.FromSlice(t.shape, Elems[int64](t))
	}
	is := t.Int64s() // ui8
	vs := make([]uint8, len(is))
	for i, v := range is {
		vs[i] = uint8(v)
	}
	return npy.FromSlice(t.shape, vs)
}

// RandomInputs returns reproducible random arguments for a function of type
// ft: the same seed gives the same values on every run and platform. Floats
// are uniform in [-1, 1); signless and signed integers uniform in [-8, 8),
// unsigned ones and index in [0, 8); i1 is true or false with equal odds.
// Memref arguments get fresh buffers. Arguments with dynamic dims are an
// error: their sizes must be given.
func RandomInputs(ft *ir.FunctionType, seed int64) ([]Value, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5354524154413031)) // "STRATA01"
	vals := make([]Value, len(ft.Inputs))
	for i, typ := range ft.Inputs {
		var shape []int64
		if st, ok := typ.(ir.ShapedType); ok {
			if !st.Ranked() {
				return nil, fmt.Errorf("argument %d has unranked type %s: give its value", i, typ)
			}
			shape = st.Shape()
			for _, d := range shape {
				if d == ir.Dynamic {
					return nil, fmt.Errorf("argument %d has dynamic type %s: give its value", i, typ)
				}
			}
		}
		t, err := NewTensor(ir.ElementTypeOf(typ), shape)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		if ir.IsFloat(t.elem) {
			fs := make([]float64, t.Len())
			for j := range fs {
				fs[j] = 2*rng.Float64() - 1
			}
			t.setFloats(fs)
		} else {
			lo, span := int64(-8), int64(16)
			if it, ok := t.elem.(*ir.IntegerType); !ok || it.Signedness == ir.Unsigned {
				lo, span = 0, 8
			} else if it.Width == 1 {
				lo, span = 0, 2
			} else if it.Width < 5 {
				lo, span = -1<<(it.Width-1), 1<<it.Width
			}
			is := make([]int64, t.Len())
			for j := range is {
				is[j] = lo + rng.Int64N(span)
			}
			t.setInts(is)
		}
		vals[i] = t
		if _, mem := typ.(*ir.MemRefType); mem {
			vals[i] = &Buffer{elem: t.elem, shape: t.shape, data: t.data}
		}
	}
	return vals, nil
}
