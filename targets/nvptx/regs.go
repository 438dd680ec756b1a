package nvptx

import (
	"fmt"
	"strconv"

	"github.com/llir/llvm/ir/types"
)

// regClass is a kind of PTX virtual register. Registers are virtual:
// ptxas allocates the physical ones, so every value gets its own.
type regClass uint8

const (
	classPred regClass = iota // i1
	classB16                  // i8, i16, half (and bf16 bits)
	classB32                  // i32
	classB64                  // i64 and pointers
	classF32                  // float
	classF64                  // double
	numClasses
)

// classInfo gives each class its register prefix, its `.reg` type and the
// type suffix of a plain move.
var classInfo = [numClasses]struct{ prefix, decl, mov string }{
	classPred: {"%p", ".pred", "mov.pred"},
	classB16:  {"%rs", ".b16", "mov.b16"},
	classB32:  {"%r", ".b32", "mov.b32"},
	classB64:  {"%rd", ".b64", "mov.b64"},
	classF32:  {"%f", ".f32", "mov.f32"},
	classF64:  {"%fd", ".f64", "mov.f64"},
}

// reg is one virtual register.
type reg struct {
	class regClass
	n     int
}

func (r reg) String() string { return classInfo[r.class].prefix + strconv.Itoa(r.n) }

// scalarKind describes how a scalar LLVM type lives in PTX.
type scalarKind struct {
	class regClass
	bits  int  // the LLVM width: 1, 8, 16, 32, 64
	float bool // a floating-point type
	ptr   bool // a pointer
	space types.AddrSpace
}

// intSuffix is the PTX type suffix of an integer operation on the
// register, with kind "s", "u" or "b". i8 lives in a 16-bit register.
func (k scalarKind) intSuffix(kind string) string {
	bits := k.bits
	if bits == 8 {
		bits = 16
	}
	return fmt.Sprintf(".%s%d", kind, bits)
}

// floatSuffix is ".f16", ".f32" or ".f64".
func (k scalarKind) floatSuffix() string { return fmt.Sprintf(".f%d", k.bits) }

// memSuffix is the type suffix of a load or store of the scalar: i1 is a
// byte in memory, half moves as bits.
func (k scalarKind) memSuffix() string {
	switch {
	case k.float && k.bits == 16:
		return ".b16"
	case k.float:
		return k.floatSuffix()
	case k.bits == 1:
		return ".u8"
	default:
		return fmt.Sprintf(".u%d", k.bits)
	}
}

// scalarOf classifies a scalar type.
func scalarOf(t types.Type) (scalarKind, error) {
	switch t := t.(type) {
	case *types.IntType:
		switch t.BitSize {
		case 1:
			return scalarKind{class: classPred, bits: 1}, nil
		case 8, 16:
			return scalarKind{class: classB16, bits: int(t.BitSize)}, nil
		case 32:
			return scalarKind{class: classB32, bits: 32}, nil
		case 64:
			return scalarKind{class: classB64, bits: 64}, nil
		}
	case *types.FloatType:
		switch t.Kind {
		case types.FloatKindHalf:
			return scalarKind{class: classB16, bits: 16, float: true}, nil
		case types.FloatKindFloat:
			return scalarKind{class: classF32, bits: 32, float: true}, nil
		case types.FloatKindDouble:
			return scalarKind{class: classF64, bits: 64, float: true}, nil
		}
	case *types.PointerType:
		return scalarKind{class: classB64, bits: 64, ptr: true, space: t.AddrSpace}, nil
	}
	return scalarKind{}, fmt.Errorf("type %s is not supported", t)
}

// shapeOf classifies a value type: a scalar, or a vector of 2 or 4 lanes
// (what 8- and 16-byte vector loads and stores carry), or a flat struct of
// up to 8 fields of one scalar type (the matrix intrinsics' fragments).
func shapeOf(t types.Type) (k scalarKind, lanes int, err error) {
	if v, ok := t.(*types.VectorType); ok {
		if v.Scalable || (v.Len != 2 && v.Len != 4 && v.Len != 8) {
			return k, 0, fmt.Errorf("vector type %s is not supported (want 2, 4 or 8 lanes)", t)
		}
		k, err = scalarOf(v.ElemType)
		if err == nil && (k.class == classPred || k.bits == 8 || (v.Len == 8 && k.bits != 16)) {
			err = fmt.Errorf("vector type %s is not supported", t)
		}
		return k, int(v.Len), err
	}
	if s, ok := t.(*types.StructType); ok {
		// A flat struct of one scalar type: a fragment of registers.
		if len(s.Fields) == 0 || len(s.Fields) > 128 || s.Packed { // (up to wgmma n256's)
			return k, 0, fmt.Errorf("struct type %s is not supported", t)
		}
		for _, f := range s.Fields {
			if !types.Equal(f, s.Fields[0]) {
				return k, 0, fmt.Errorf("struct type %s with mixed fields is not supported", t)
			}
		}
		k, err = scalarOf(s.Fields[0])
		return k, len(s.Fields), err
	}
	k, err = scalarOf(t)
	return k, 1, err
}

// sizeOf returns the store size of t in bytes under the NVPTX data layout.
func sizeOf(t types.Type) (int64, error) {
	switch t := t.(type) {
	case *types.ArrayType:
		n, err := sizeOf(t.ElemType)
		return n * int64(t.Len), err
	case *types.VectorType:
		n, err := sizeOf(t.ElemType)
		return n * int64(t.Len), err
	case *types.StructType:
		off, _, err := structLayout(t, -1)
		return off, err
	}
	k, err := scalarOf(t)
	if err != nil {
		return 0, err
	}
	if k.bits == 1 {
		return 1, nil
	}
	return int64(k.bits / 8), nil
}

// alignOf returns the ABI alignment of t in bytes.
func alignOf(t types.Type) (int64, error) {
	switch t := t.(type) {
	case *types.ArrayType:
		return alignOf(t.ElemType)
	case *types.VectorType:
		return sizeOf(t)
	case *types.StructType:
		a := int64(1)
		for _, f := range t.Fields {
			fa, err := alignOf(f)
			if err != nil {
				return 0, err
			}
			a = max(a, fa)
		}
		return a, nil
	}
	return sizeOf(t)
}

// structLayout returns the size of t and the offset of field i (i < 0:
// only the size).
func structLayout(t *types.StructType, i int) (size, offset int64, err error) {
	if t.Packed {
		return 0, 0, fmt.Errorf("packed struct %s is not supported", t)
	}
	var off, align int64 = 0, 1
	for j, f := range t.Fields {
		fs, err := sizeOf(f)
		if err != nil {
			return 0, 0, err
		}
		fa, _ := alignOf(f)
		off = (off + fa - 1) / fa * fa
		if j == i {
			offset = off
		}
		off += fs
		align = max(align, fa)
	}
	return (off + align - 1) / align * align, offset, nil
}
