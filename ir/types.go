package ir

import (
	"strconv"
	"strings"
	"sync"
)

// Type is an MLIR type. Types are uniqued: constructors return the same Go
// value for the same type, so types compare with ==.
type Type interface {
	// String returns the type in MLIR's textual syntax.
	String() string
	isType()
}

// Dynamic marks a dimension whose size is not known statically (printed "?").
const Dynamic int64 = -1 << 63

var typeTable sync.Map // canonical text → Type

// intern returns the uniqued instance of t, keyed by its textual form.
func intern[T Type](t T) T {
	if old, ok := typeTable.Load(t.String()); ok {
		return old.(T)
	}
	old, _ := typeTable.LoadOrStore(t.String(), t)
	return old.(T)
}

// Signedness of an integer type.
type Signedness uint8

// The integer signedness semantics of MLIR.
const (
	Signless Signedness = iota
	Signed
	Unsigned
)

// IntegerType is iN, siN or uiN.
type IntegerType struct {
	Width      int
	Signedness Signedness
	text       string
}

func (*IntegerType) isType() {}

// String implements Type.
func (t *IntegerType) String() string { return t.text }

// IntegerOf returns the signless integer type of the given width.
func IntegerOf(width int) *IntegerType { return IntegerWithSign(width, Signless) }

// IntegerWithSign returns the integer type of the given width and signedness.
func IntegerWithSign(width int, s Signedness) *IntegerType {
	prefix := [...]string{"i", "si", "ui"}[s]
	return intern(&IntegerType{Width: width, Signedness: s, text: prefix + strconv.Itoa(width)})
}

// FloatType is one of MLIR's floating-point types.
type FloatType struct {
	Name     string // "f32", "bf16", ...
	Width    int    // storage width in bits
	Mantissa int    // significand precision in bits, including the implicit bit
}

func (*FloatType) isType() {}

// String implements Type.
func (t *FloatType) String() string { return t.Name }

// IndexType is the target-sized integer type used for sizes and indices.
type IndexType struct{}

func (*IndexType) isType() {}

// String implements Type.
func (*IndexType) String() string { return "index" }

// NoneType is the unit type "none".
type NoneType struct{}

func (*NoneType) isType() {}

// String implements Type.
func (*NoneType) String() string { return "none" }

// The builtin scalar types.
var (
	I1    = IntegerOf(1)
	I8    = IntegerOf(8)
	I16   = IntegerOf(16)
	I32   = IntegerOf(32)
	I64   = IntegerOf(64)
	F16   = intern(&FloatType{Name: "f16", Width: 16, Mantissa: 11})
	BF16  = intern(&FloatType{Name: "bf16", Width: 16, Mantissa: 8})
	F32   = intern(&FloatType{Name: "f32", Width: 32, Mantissa: 24})
	F64   = intern(&FloatType{Name: "f64", Width: 64, Mantissa: 53})
	TF32  = intern(&FloatType{Name: "tf32", Width: 19, Mantissa: 11})
	F80   = intern(&FloatType{Name: "f80", Width: 80, Mantissa: 64})
	F128  = intern(&FloatType{Name: "f128", Width: 128, Mantissa: 113})
	Index = intern(&IndexType{})
	None  = intern(&NoneType{})
)

// floatTypes maps the keyword of every float type the parser knows.
var floatTypes = map[string]*FloatType{}

func init() {
	for _, t := range []*FloatType{F16, BF16, F32, F64, TF32, F80, F128} {
		floatTypes[t.Name] = t
	}
	for _, n := range []string{"f8E5M2", "f8E4M3", "f8E4M3FN", "f8E5M2FNUZ", "f8E4M3FNUZ", "f8E4M3B11FNUZ"} {
		floatTypes[n] = intern(&FloatType{Name: n, Width: 8, Mantissa: 4})
	}
}

// FunctionType is (inputs) -> results.
type FunctionType struct {
	Inputs, Results []Type
	text            string
}

func (*FunctionType) isType() {}

// String implements Type.
func (t *FunctionType) String() string { return t.text }

// FunctionOf returns the function type from inputs to results.
func FunctionOf(inputs, results []Type) *FunctionType {
	var b strings.Builder
	b.WriteByte('(')
	writeTypeList(&b, inputs)
	b.WriteString(") -> ")
	writeResultTypes(&b, results)
	return intern(&FunctionType{Inputs: clone(inputs), Results: clone(results), text: b.String()})
}

// writeResultTypes writes a result list the way MLIR does: a lone non-function
// type bare, anything else in parentheses.
func writeResultTypes(b *strings.Builder, results []Type) {
	if len(results) == 1 {
		if _, isFn := results[0].(*FunctionType); !isFn {
			b.WriteString(results[0].String())
			return
		}
	}
	b.WriteByte('(')
	writeTypeList(b, results)
	b.WriteByte(')')
}

func writeTypeList(b *strings.Builder, ts []Type) {
	for i, t := range ts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.String())
	}
}

func clone[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append([]T(nil), s...)
}

// ShapedType is implemented by tensor, memref and vector types.
type ShapedType interface {
	Type
	// Shape returns the dimension sizes, Dynamic for "?"; nil when unranked.
	Shape() []int64
	// ElementType returns the element type.
	ElementType() Type
	// Ranked reports whether the rank is known.
	Ranked() bool
}

// NumElements returns the product of a static shape, or -1 if any dim is dynamic.
func NumElements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		if d == Dynamic {
			return -1
		}
		n *= d
	}
	return n
}

func writeShape(b *strings.Builder, shape []int64) {
	for _, d := range shape {
		if d == Dynamic {
			b.WriteByte('?')
		} else {
			b.WriteString(strconv.FormatInt(d, 10))
		}
		b.WriteByte('x')
	}
}

// TensorType is tensor<4x?xf32[, encoding]> or the unranked tensor<*xf32>.
type TensorType struct {
	shape    []int64
	elem     Type
	Encoding Attribute // nil when absent
	unranked bool
	text     string
}

func (*TensorType) isType() {}

// String implements Type.
func (t *TensorType) String() string { return t.text }

// Shape implements ShapedType.
func (t *TensorType) Shape() []int64 { return t.shape }

// ElementType implements ShapedType.
func (t *TensorType) ElementType() Type { return t.elem }

// Ranked implements ShapedType.
func (t *TensorType) Ranked() bool { return !t.unranked }

// TensorOf returns the ranked tensor type with the given shape and element type.
func TensorOf(shape []int64, elem Type) *TensorType { return TensorWithEncoding(shape, elem, nil) }

// TensorWithEncoding returns a ranked tensor type with an encoding attribute.
func TensorWithEncoding(shape []int64, elem Type, enc Attribute) *TensorType {
	var b strings.Builder
	b.WriteString("tensor<")
	writeShape(&b, shape)
	b.WriteString(elem.String())
	if enc != nil {
		b.WriteString(", ")
		b.WriteString(enc.String())
	}
	b.WriteByte('>')
	s := clone(shape)
	if s == nil {
		s = []int64{}
	}
	return intern(&TensorType{shape: s, elem: elem, Encoding: enc, text: b.String()})
}

// UnrankedTensorOf returns tensor<*xelem>.
func UnrankedTensorOf(elem Type) *TensorType {
	return intern(&TensorType{elem: elem, unranked: true, text: "tensor<*x" + elem.String() + ">"})
}

// MemRefType is memref<4x?xf32[, layout][, memory space]> or memref<*xf32[, space]>.
type MemRefType struct {
	shape       []int64
	elem        Type
	Layout      Attribute // nil for the identity layout
	MemorySpace Attribute // nil for the default space
	unranked    bool
	text        string
}

func (*MemRefType) isType() {}

// String implements Type.
func (t *MemRefType) String() string { return t.text }

// Shape implements ShapedType.
func (t *MemRefType) Shape() []int64 { return t.shape }

// ElementType implements ShapedType.
func (t *MemRefType) ElementType() Type { return t.elem }

// Ranked implements ShapedType.
func (t *MemRefType) Ranked() bool { return !t.unranked }

// MemRefOf returns a ranked memref type with identity layout in the default space.
func MemRefOf(shape []int64, elem Type) *MemRefType { return MemRefWith(shape, elem, nil, nil) }

// MemRefWith returns a ranked memref type with an optional layout and memory space.
func MemRefWith(shape []int64, elem Type, layout, space Attribute) *MemRefType {
	var b strings.Builder
	b.WriteString("memref<")
	writeShape(&b, shape)
	b.WriteString(elem.String())
	if layout != nil {
		b.WriteString(", " + layout.String())
	}
	if space != nil {
		b.WriteString(", " + elidedString(space))
	}
	b.WriteByte('>')
	s := clone(shape)
	if s == nil {
		s = []int64{}
	}
	return intern(&MemRefType{shape: s, elem: elem, Layout: layout, MemorySpace: space, text: b.String()})
}

// UnrankedMemRefOf returns memref<*xelem[, space]>.
func UnrankedMemRefOf(elem Type, space Attribute) *MemRefType {
	text := "memref<*x" + elem.String()
	if space != nil {
		text += ", " + elidedString(space)
	}
	return intern(&MemRefType{elem: elem, MemorySpace: space, unranked: true, text: text + ">"})
}

// VectorType is vector<4x[8]xf32>; scalable dims print in brackets.
type VectorType struct {
	shape    []int64
	Scalable []bool // nil when no dim is scalable
	elem     Type
	text     string
}

func (*VectorType) isType() {}

// String implements Type.
func (t *VectorType) String() string { return t.text }

// Shape implements ShapedType.
func (t *VectorType) Shape() []int64 { return t.shape }

// ElementType implements ShapedType.
func (t *VectorType) ElementType() Type { return t.elem }

// Ranked implements ShapedType.
func (t *VectorType) Ranked() bool { return true }

// VectorOf returns a fixed-size vector type.
func VectorOf(shape []int64, elem Type) *VectorType { return ScalableVectorOf(shape, nil, elem) }

// ScalableVectorOf returns a vector type whose dims marked in scalable are scalable.
func ScalableVectorOf(shape []int64, scalable []bool, elem Type) *VectorType {
	anyScalable := false
	for _, s := range scalable {
		anyScalable = anyScalable || s
	}
	if !anyScalable {
		scalable = nil
	}
	var b strings.Builder
	b.WriteString("vector<")
	for i, d := range shape {
		if scalable != nil && scalable[i] {
			b.WriteString("[" + strconv.FormatInt(d, 10) + "]x")
		} else {
			b.WriteString(strconv.FormatInt(d, 10) + "x")
		}
	}
	b.WriteString(elem.String())
	b.WriteByte('>')
	s := clone(shape)
	if s == nil {
		s = []int64{}
	}
	return intern(&VectorType{shape: s, Scalable: clone(scalable), elem: elem, text: b.String()})
}

// ComplexType is complex<f32>.
type ComplexType struct {
	Elem Type
	text string
}

func (*ComplexType) isType() {}

// String implements Type.
func (t *ComplexType) String() string { return t.text }

// ComplexOf returns complex<elem>.
func ComplexOf(elem Type) *ComplexType {
	return intern(&ComplexType{Elem: elem, text: "complex<" + elem.String() + ">"})
}

// TupleType is tuple<i32, f32>.
type TupleType struct {
	Elems []Type
	text  string
}

func (*TupleType) isType() {}

// String implements Type.
func (t *TupleType) String() string { return t.text }

// TupleOf returns tuple<elems...>.
func TupleOf(elems []Type) *TupleType {
	var b strings.Builder
	b.WriteString("tuple<")
	writeTypeList(&b, elems)
	b.WriteByte('>')
	return intern(&TupleType{Elems: clone(elems), text: b.String()})
}

// OpaqueType is a dialect type Strata does not model, kept as its text:
// !dialect.name or !dialect.name<body>.
type OpaqueType struct {
	Dialect, Name, Body string // Body includes its angle brackets, or is empty
	text                string
}

func (*OpaqueType) isType() {}

// String implements Type.
func (t *OpaqueType) String() string { return t.text }

// OpaqueTypeOf returns the dialect type !dialect.name<body>.
func OpaqueTypeOf(dialect, name, body string) *OpaqueType {
	// The interned type outlives the text it may be read from: copy.
	dialect, name, body = strings.Clone(dialect), strings.Clone(name), strings.Clone(body)
	text := "!" + dialect
	if name != "" {
		text += "." + name
	}
	return intern(&OpaqueType{Dialect: dialect, Name: name, Body: body, text: text + body})
}

// IsFloat reports whether t is a float type.
func IsFloat(t Type) bool { _, ok := t.(*FloatType); return ok }

// IsInteger reports whether t is an integer type (not index).
func IsInteger(t Type) bool { _, ok := t.(*IntegerType); return ok }

// IsIntOrIndex reports whether t is an integer or index type.
func IsIntOrIndex(t Type) bool { return IsInteger(t) || t == Index }

// ElementTypeOf returns the element type of a shaped type, or t itself.
func ElementTypeOf(t Type) Type {
	if s, ok := t.(ShapedType); ok {
		return s.ElementType()
	}
	return t
}

// IntWidth returns the bit width of an integer type, 64 for index, 0 otherwise.
func IntWidth(t Type) int {
	switch t := t.(type) {
	case *IntegerType:
		return t.Width
	case *IndexType:
		return 64
	}
	return 0
}
