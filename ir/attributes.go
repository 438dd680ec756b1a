package ir

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Attribute is a compile-time constant value attached to an operation.
// Attributes are immutable; compare them with AttrEqual.
type Attribute interface {
	// String returns the attribute in MLIR's textual syntax.
	String() string
	isAttr()
}

// AttrEqual reports whether two attributes are the same value.
func AttrEqual(a, b Attribute) bool {
	if a == nil || b == nil {
		return a == b
	}
	// Equal scalar attributes print the same: no need to print them. (Types
	// are uniqued pointers, so these structs compare without panicking.)
	switch a := a.(type) {
	case IntegerAttr, FloatAttr, StringAttr, OpaqueAttr, TypeAttr, UnitAttr, WideAttr:
		if a == b {
			return true
		}
	case ArrayAttr:
		// Arrays of equal integers (shapes, permutations, slice bounds)
		// are equal without printing them: a traced op compared with a
		// recorded one takes this path for most of its attributes.
		if b, ok := b.(ArrayAttr); ok && sameInts(a, b) {
			return true
		}
	}
	return a.String() == b.String()
}

// sameInts reports whether a and b are arrays of the same IntegerAttrs.
func sameInts(a, b ArrayAttr) bool {
	if len(a) != len(b) {
		return false
	}
	for i, x := range a {
		xi, ok1 := x.(IntegerAttr)
		yi, ok2 := b[i].(IntegerAttr)
		if !ok1 || !ok2 || xi != yi {
			return false
		}
	}
	return true
}

// IntegerAttr is an integer or index constant ("5 : i32"). Value holds the
// number sign-extended from the type's width (zero-extended for unsigned types).
// An IntegerAttr of type i1 prints as true or false.
type IntegerAttr struct {
	Value int64
	Type  Type
}

func (IntegerAttr) isAttr() {}

// String implements Attribute.
func (a IntegerAttr) String() string {
	if a.Type == I1 {
		return strconv.FormatBool(a.Value != 0)
	}
	return a.valueString() + " : " + a.Type.String()
}

func (a IntegerAttr) valueString() string {
	if t, ok := a.Type.(*IntegerType); ok && t.Signedness == Unsigned {
		return strconv.FormatUint(uint64(a.Value), 10)
	}
	return strconv.FormatInt(a.Value, 10)
}

// Int returns an IntegerAttr of type t, truncating v to t's width.
func Int(v int64, t Type) IntegerAttr { return IntegerAttr{Value: TruncInt(v, t), Type: t} }

// Bool returns the i1 attribute true or false.
func Bool(b bool) IntegerAttr {
	if b {
		return IntegerAttr{Value: 1, Type: I1}
	}
	return IntegerAttr{Value: 0, Type: I1}
}

// TruncInt wraps v to the width of integer type t (index is 64 bits wide):
// sign-extended for signless and signed types, zero-extended for unsigned ones.
func TruncInt(v int64, t Type) int64 {
	w := IntWidth(t)
	if w == 0 || w >= 64 {
		return v
	}
	if it, ok := t.(*IntegerType); ok && it.Signedness == Unsigned {
		return int64(uint64(v) & (1<<w - 1))
	}
	if w == 1 && t == I1 { // i1 is a boolean: 0 or 1, never -1 (si1 is 0 or -1).
		return v & 1
	}
	shift := 64 - w
	return v << shift >> shift
}

// FloatAttr is a floating-point constant ("1.500000e+00 : f32"). Bits holds the
// value's encoding in its own type (IEEE half, bfloat16, single or double).
type FloatAttr struct {
	Bits uint64
	Type *FloatType
}

func (FloatAttr) isAttr() {}

// String implements Attribute.
func (a FloatAttr) String() string { return FormatFloat(a.Bits, a.Type) + " : " + a.Type.Name }

// Value returns the constant as a float64 (exact for types up to f64).
func (a FloatAttr) Value() float64 { return FloatFromBits(a.Bits, a.Type) }

// Float returns the FloatAttr of type t nearest to v.
func Float(v float64, t *FloatType) FloatAttr { return FloatAttr{Bits: FloatToBits(v, t), Type: t} }

// UnitAttr is the attribute "unit": its presence is its meaning.
type UnitAttr struct{}

func (UnitAttr) isAttr() {}

// String implements Attribute.
func (UnitAttr) String() string { return "unit" }

// StringAttr is a string constant, optionally typed ("abc" : i32).
type StringAttr struct {
	Value string
	Type  Type // nil when untyped
}

func (StringAttr) isAttr() {}

// String implements Attribute.
func (a StringAttr) String() string {
	if a.Type != nil {
		return QuoteString(a.Value) + " : " + a.Type.String()
	}
	return QuoteString(a.Value)
}

// Str returns an untyped StringAttr.
func Str(s string) StringAttr { return StringAttr{Value: s} }

// QuoteString quotes s as MLIR does: printable ASCII stays, '\\' doubles, and
// '"' and every other byte become \XX with two uppercase hex digits.
func QuoteString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	writeQuoted(&b, s)
	return b.String()
}

// textWriter is what the IR's text is written into: a strings.Builder, or
// the printer's bytes.Buffer.
type textWriter interface {
	WriteString(s string) (int, error)
	WriteByte(c byte) error
}

// writeQuoted writes QuoteString(s) to b.
func writeQuoted(b textWriter, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c >= 0x20 && c < 0x7f && c != '"':
			b.WriteByte(c)
		default:
			b.WriteByte('\\')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&15])
		}
	}
	b.WriteByte('"')
}

// TypeAttr wraps a type as an attribute.
type TypeAttr struct{ Type Type }

func (TypeAttr) isAttr() {}

// String implements Attribute.
func (a TypeAttr) String() string { return a.Type.String() }

// ArrayAttr is a list of attributes: [a, b, c].
type ArrayAttr []Attribute

func (ArrayAttr) isAttr() {}

// String implements Attribute. Elements of type i64 and f64 print without
// their type, as MLIR elides them inside arrays (except hex floats).
func (a ArrayAttr) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, e := range a {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(elidedString(e))
	}
	b.WriteByte(']')
	return b.String()
}

func elidedString(a Attribute) string {
	switch a := a.(type) {
	case IntegerAttr:
		if a.Type == I64 {
			return a.valueString()
		}
	case FloatAttr:
		// A hex literal keeps its type: bare, it would read back as an i64.
		if s := FormatFloat(a.Bits, a.Type); a.Type == F64 && !strings.HasPrefix(s, "0x") {
			return s
		}
	}
	return a.String()
}

// NamedAttr is a name = value pair.
type NamedAttr struct {
	Name  string
	Value Attribute
}

// DictAttr is a dictionary of attributes, sorted by name: {a = 1 : i32, b}.
type DictAttr []NamedAttr

func (DictAttr) isAttr() {}

// String implements Attribute.
func (d DictAttr) String() string {
	var b strings.Builder
	b.WriteByte('{')
	d.writeEntries(&b)
	b.WriteByte('}')
	return b.String()
}

func (d DictAttr) writeEntries(b textWriter) {
	for i, na := range d {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(attrName(na.Name))
		if _, unit := na.Value.(UnitAttr); !unit {
			b.WriteString(" = ")
			b.WriteString(na.Value.String())
		}
	}
}

// attrName prints a dictionary key bare when it is an identifier, quoted otherwise.
func attrName(s string) string {
	if isBareIdent(s) {
		return s
	}
	return QuoteString(s)
}

func isBareIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z')
		if i == 0 && !letter {
			return false
		}
		if !letter && !(c >= '0' && c <= '9') && c != '$' && c != '.' {
			return false
		}
	}
	return true
}

// Equal reports whether d and e hold the same names with equal values.
func (d DictAttr) Equal(e DictAttr) bool {
	return slices.EqualFunc(d, e, func(a, b NamedAttr) bool { return a.Name == b.Name && AttrEqual(a.Value, b.Value) })
}

// Get returns the value named name, or nil.
func (d DictAttr) Get(name string) Attribute {
	i, ok := slices.BinarySearchFunc(d, name, func(na NamedAttr, n string) int { return strings.Compare(na.Name, n) })
	if !ok {
		return nil
	}
	return d[i].Value
}

// With returns a copy of d with name set to v (removed when v is nil).
func (d DictAttr) With(name string, v Attribute) DictAttr {
	i, ok := slices.BinarySearchFunc(d, name, func(na NamedAttr, n string) int { return strings.Compare(na.Name, n) })
	out := slices.Clone(d)
	switch {
	case ok && v == nil:
		out = slices.Delete(out, i, i+1)
	case ok:
		out[i].Value = v
	case v != nil:
		out = slices.Insert(out, i, NamedAttr{name, v})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Dict builds a sorted DictAttr; a later duplicate name replaces an earlier one.
func Dict(entries ...NamedAttr) DictAttr {
	// Builders mostly pass a few entries already in order: one copy then.
	sorted := len(entries) > 0
	for i, e := range entries {
		if e.Value == nil || i > 0 && entries[i-1].Name >= e.Name {
			sorted = false
			break
		}
	}
	if sorted {
		return slices.Clone(entries)
	}
	var d DictAttr
	for _, e := range entries {
		d = d.With(e.Name, e.Value)
	}
	return d
}

// DenseArrayAttr is array<i64: 1, 2> (also i1, i8, i16, i32, f32, f64 elements).
type DenseArrayAttr struct {
	Elem   Type
	Values []int64   // for integer element types
	Floats []float64 // for float element types
}

func (DenseArrayAttr) isAttr() {}

// String implements Attribute.
func (a DenseArrayAttr) String() string {
	var b strings.Builder
	b.WriteString("array<" + a.Elem.String())
	if ft, ok := a.Elem.(*FloatType); ok {
		for i, f := range a.Floats {
			b.WriteString(sepAt(i))
			b.WriteString(FormatFloat(FloatToBits(f, ft), ft))
		}
	} else {
		for i, v := range a.Values {
			b.WriteString(sepAt(i))
			if a.Elem == I1 {
				b.WriteString(strconv.FormatBool(v != 0))
			} else {
				b.WriteString(strconv.FormatInt(v, 10))
			}
		}
	}
	b.WriteByte('>')
	return b.String()
}

func sepAt(i int) string {
	if i == 0 {
		return ": "
	}
	return ", "
}

// I64Array returns array<i64: vs...>.
func I64Array(vs ...int64) DenseArrayAttr {
	return DenseArrayAttr{Elem: I64, Values: append([]int64{}, vs...)}
}

// SymbolRefAttr is @root or @root::@nested::@leaf.
type SymbolRefAttr struct {
	Root   string
	Nested []string
}

func (SymbolRefAttr) isAttr() {}

// String implements Attribute.
func (a SymbolRefAttr) String() string {
	s := symbolName(a.Root)
	for _, n := range a.Nested {
		s += "::" + symbolName(n)
	}
	return s
}

// SymbolRef returns the flat reference @name.
func SymbolRef(name string) SymbolRefAttr { return SymbolRefAttr{Root: name} }

func symbolName(s string) string {
	if isBareIdent(s) {
		return "@" + s
	}
	return "@" + QuoteString(s)
}

// OpaqueAttr is an attribute Strata does not model, kept as its exact text:
// a dialect attribute (#dialect.name<...>) or a builtin form such as
// affine_map<...>, strided<...>, dense_resource<...> or distinct[...]<...>.
type OpaqueAttr struct{ Text string }

func (OpaqueAttr) isAttr() {}

// String implements Attribute.
func (a OpaqueAttr) String() string { return a.Text }

// DenseAttr is dense<...> : tensor/vector type. Elements are stored as bit
// patterns in row-major order: integers sign-extended (i1 as 0/1), floats in
// their type's encoding, complex numbers as (real, imag) pairs.
type DenseAttr struct {
	Type ShapedType
	Bits []uint64 // one element when Splat
	// Splat reports that every element equals Bits[0] (or Bits[0:2] for complex).
	Splat bool
}

func (DenseAttr) isAttr() {}

// denseHexLimit is the element count above which MLIR prints dense data as hex.
const denseHexLimit = 100

// String implements Attribute.
func (a DenseAttr) String() string {
	var b strings.Builder
	b.WriteString("dense<")
	a.writeBody(&b)
	b.WriteString("> : ")
	b.WriteString(a.Type.String())
	return b.String()
}

func (a DenseAttr) scalarsPerElem() int {
	if _, ok := a.Type.ElementType().(*ComplexType); ok {
		return 2
	}
	return 1
}

func (a DenseAttr) scalarType() Type {
	if c, ok := a.Type.ElementType().(*ComplexType); ok {
		return c.Elem
	}
	return a.Type.ElementType()
}

func (a DenseAttr) writeBody(b *strings.Builder) {
	n := NumElements(a.Type.Shape())
	if n == 0 {
		return
	}
	k := a.scalarsPerElem()
	splat := a.Splat || a.allEqual()
	if splat {
		a.writeElem(b, 0)
		return
	}
	if n > denseHexLimit {
		b.WriteString(`"0x`)
		b.WriteString(strings.ToUpper(hex.EncodeToString(a.RawData())))
		b.WriteByte('"')
		return
	}
	writeNested(b, a.Type.Shape(), func(i int64) { a.writeElem(b, int(i)*k) })
}

// writeNested writes the elements of a row-major array of the given shape as
// nested lists, [[a, b], [c, d]], with elem writing element i.
func writeNested(b *strings.Builder, shape []int64, elem func(i int64)) {
	var rec func(dim int, off int64)
	rec = func(dim int, off int64) {
		if dim == len(shape) {
			elem(off)
			return
		}
		stride := NumElements(shape[dim+1:])
		b.WriteByte('[')
		for i := int64(0); i < shape[dim]; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			rec(dim+1, off+i*stride)
		}
		b.WriteByte(']')
	}
	rec(0, 0)
}

func (a DenseAttr) allEqual() bool {
	k := a.scalarsPerElem()
	for i := k; i < len(a.Bits); i++ {
		if a.Bits[i] != a.Bits[i%k] {
			return false
		}
	}
	return true
}

func (a DenseAttr) writeElem(b *strings.Builder, i int) {
	st := a.scalarType()
	one := func(bits uint64) string {
		switch t := st.(type) {
		case *FloatType:
			return FormatFloat(bits, t)
		case *IntegerType:
			if t.Width == 1 {
				return strconv.FormatBool(bits != 0)
			}
			return IntegerAttr{Value: int64(bits), Type: t}.valueString()
		}
		return strconv.FormatInt(int64(bits), 10)
	}
	if a.scalarsPerElem() == 2 {
		b.WriteString("(" + one(a.Bits[i]) + "," + one(a.Bits[i+1]) + ")")
		return
	}
	b.WriteString(one(a.Bits[i]))
}

// Len returns the number of elements.
func (a DenseAttr) Len() int64 { return NumElements(a.Type.Shape()) }

// At returns the bits of element i (the real part for complex elements).
func (a DenseAttr) At(i int64) uint64 {
	k := int64(a.scalarsPerElem())
	if a.Splat {
		return a.Bits[0]
	}
	return a.Bits[i*k]
}

// Float returns element i as a float64 (float element types only).
func (a DenseAttr) Float(i int64) float64 {
	ft, _ := a.scalarType().(*FloatType)
	return FloatFromBits(a.At(i), ft)
}

// Int returns element i as an int64 (integer element types only).
func (a DenseAttr) Int(i int64) int64 { return int64(a.At(i)) }

// scalarBytes is the storage size of one scalar in the hex form.
func scalarBytes(t Type) int {
	switch t := t.(type) {
	case *FloatType:
		return (t.Width + 7) / 8
	case *IntegerType:
		return (t.Width + 7) / 8
	}
	return 8
}

// RawData returns the little-endian bytes of every element, as in dense<"0x...">.
// Elements of type i1 are packed eight to a byte, least significant bit first.
func (a DenseAttr) RawData() []byte {
	n := NumElements(a.Type.Shape()) * int64(a.scalarsPerElem())
	if a.scalarType() == I1 && a.scalarsPerElem() == 1 {
		out := make([]byte, (n+7)/8)
		for i := int64(0); i < n; i++ {
			out[i/8] |= byte(a.At(i)&1) << (i % 8)
		}
		return out
	}
	sz := scalarBytes(a.scalarType())
	out := make([]byte, 0, int(n)*sz)
	for i := int64(0); i < n; i++ {
		bits := a.Bits[0]
		if !a.Splat {
			bits = a.Bits[i]
		} else if a.scalarsPerElem() == 2 {
			bits = a.Bits[i%2]
		}
		for j := 0; j < sz; j++ {
			out = append(out, byte(bits>>(8*j)))
		}
	}
	return out
}

// DenseSplat returns a splat dense attribute of type t whose every element is v.
func DenseSplat(t ShapedType, v Attribute) (DenseAttr, error) {
	switch v := v.(type) {
	case IntegerAttr:
		return DenseAttr{Type: t, Bits: []uint64{uint64(v.Value)}, Splat: true}, nil
	case FloatAttr:
		return DenseAttr{Type: t, Bits: []uint64{v.Bits}, Splat: true}, nil
	}
	return DenseAttr{}, fmt.Errorf("cannot splat %s", v)
}

// DenseFloats returns a dense attribute of type t holding vs (rounded to the element type).
func DenseFloats(t ShapedType, vs []float64) DenseAttr {
	ft := t.ElementType().(*FloatType)
	bits := make([]uint64, len(vs))
	for i, v := range vs {
		bits[i] = FloatToBits(v, ft)
	}
	return DenseAttr{Type: t, Bits: bits}
}

// DenseInts returns a dense attribute of type t holding vs (wrapped to the element width).
func DenseInts(t ShapedType, vs []int64) DenseAttr {
	bits := make([]uint64, len(vs))
	for i, v := range vs {
		bits[i] = uint64(TruncInt(v, t.ElementType()))
	}
	return DenseAttr{Type: t, Bits: bits}
}

// DenseStringAttr is dense<["a", "b"]> : tensor<2x!dialect.string>.
type DenseStringAttr struct {
	Type   ShapedType
	Values []string
}

func (DenseStringAttr) isAttr() {}

// String implements Attribute.
func (a DenseStringAttr) String() string {
	var b strings.Builder
	b.WriteString("dense<")
	if len(a.Values) == 1 {
		b.WriteString(QuoteString(a.Values[0]))
	} else if len(a.Values) > 1 {
		writeNested(&b, a.Type.Shape(), func(i int64) { b.WriteString(QuoteString(a.Values[i])) })
	}
	b.WriteString("> : " + a.Type.String())
	return b.String()
}

// FloatFromBits decodes bits in t's encoding into a float64.
func FloatFromBits(bits uint64, t *FloatType) float64 {
	switch t {
	case F64:
		return math.Float64frombits(bits)
	case F32:
		return float64(math.Float32frombits(uint32(bits)))
	case F16:
		return halfToFloat(uint16(bits))
	case BF16:
		return float64(math.Float32frombits(uint32(bits) << 16))
	}
	return math.Float64frombits(bits)
}

// FloatToBits encodes v in t's format, rounding to nearest even.
func FloatToBits(v float64, t *FloatType) uint64 {
	switch t {
	case F64:
		return math.Float64bits(v)
	case F32:
		return uint64(math.Float32bits(float32(v)))
	case F16:
		return uint64(floatToHalf(v))
	case BF16:
		return uint64(floatToBF16(v))
	}
	if r, ok := roundNarrow(v, t); ok {
		v = r
	}
	return math.Float64bits(v)
}

// RoundToType rounds v to the nearest value representable in t.
func RoundToType(v float64, t *FloatType) float64 { return FloatFromBits(FloatToBits(v, t), t) }

func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac == 0 {
			return math.Inf(int(sign))
		}
		// Keep the payload: widen the half NaN into a double NaN.
		return math.Float64frombits(uint64(h&0x8000)<<48 | 0x7ff0000000000000 | uint64(h&0x3ff)<<42)
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

func floatToHalf(v float64) uint16 {
	bits := math.Float64bits(v)
	sign := uint16(bits>>48) & 0x8000
	if math.IsNaN(v) {
		payload := uint16(bits>>42) & 0x3ff
		if payload == 0 {
			payload = 0x200
		}
		return sign | 0x7c00 | payload
	}
	a := math.Abs(v)
	if a >= 65520 { // rounds to infinity
		return sign | 0x7c00
	}
	if a < math.Ldexp(1, -14) { // subnormal: multiples of 2^-24
		return sign | uint16(math.RoundToEven(a*(1<<24)))
	}
	frac, exp := math.Frexp(a)         // a = frac * 2^exp, frac in [0.5, 1)
	m := math.RoundToEven(frac * 2048) // 11 significant bits
	if m == 2048 {
		m = 1024
		exp++
	}
	return sign | uint16(exp+14)<<10 | (uint16(m) & 0x3ff)
}

func floatToBF16(v float64) uint16 {
	f := float32(v)
	if float64(f) != v && !math.IsNaN(v) && !math.IsInf(v, 0) {
		// Round directly from the double to avoid double rounding.
		return bf16FromDouble(v)
	}
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

func bf16FromDouble(v float64) uint16 {
	bits := math.Float64bits(v)
	sign := uint16(bits>>48) & 0x8000
	a := math.Abs(v)
	if a >= float64(math.Float32frombits(0x7f7f8000)) { // halfway above bf16 max → inf
		return sign | 0x7f80
	}
	if a < math.Ldexp(1, -126) {
		return sign | uint16(math.RoundToEven(a*math.Ldexp(1, 133)))
	}
	frac, exp := math.Frexp(a)
	m := math.RoundToEven(frac * 256)
	if m == 256 {
		m = 128
		exp++
	}
	return sign | uint16(exp+126)<<7 | (uint16(m) & 0x7f)
}
