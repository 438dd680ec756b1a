package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// konst is a small tensor whose contents the importer knows: initializers
// and Constant nodes up to smallLimit elements, and everything computed from
// them and from shapes (Shape, Gather, Concat, Cast, arithmetic …), which is
// how shape computations fold at import. Integer elements are symbolic
// expressions, so the Shape of a tensor with a dynamic batch stays exact.
type konst struct {
	elem  ir.Type
	shape []int64
	f     []float64  // float element types
	i     []sym.Expr // integer and i1 element types
}

// smallLimit is the element count up to which an initializer or Constant is
// decoded into a konst (shape arguments, indices, scalars, norms).
const smallLimit = 4096

func (k *konst) isFloat() bool { return ir.IsFloat(k.elem) }

func (k *konst) len() int {
	if k.isFloat() {
		return len(k.f)
	}
	return len(k.i)
}

// concrete returns the integer elements as numbers, or false when one is
// symbolic.
func (k *konst) concrete() ([]int64, bool) {
	if k.isFloat() {
		out := make([]int64, len(k.f))
		for j, v := range k.f {
			out[j] = int64(v)
		}
		return out, true
	}
	out := make([]int64, len(k.i))
	for j, e := range k.i {
		c, ok := e.IsConst()
		if !ok {
			return nil, false
		}
		out[j] = c
	}
	return out, true
}

// floats returns the elements as float64 (integers converted).
func (k *konst) floats() ([]float64, bool) {
	if k.isFloat() {
		return k.f, true
	}
	vs, ok := k.concrete()
	if !ok {
		return nil, false
	}
	out := make([]float64, len(vs))
	for j, v := range vs {
		out[j] = float64(v)
	}
	return out, true
}

func (k *konst) dims() []sym.Expr {
	out := make([]sym.Expr, len(k.shape))
	for j, d := range k.shape {
		out[j] = sym.Const(d)
	}
	return out
}

// attr returns the dense attribute of k, or false when an element is
// symbolic.
func (k *konst) attr() (ir.DenseAttr, bool) {
	t := ir.TensorOf(k.shape, k.elem)
	if ft, ok := k.elem.(*ir.FloatType); ok {
		bits := make([]uint64, len(k.f))
		for j, v := range k.f {
			bits[j] = ir.FloatToBits(v, ft)
		}
		return ir.DenseAttr{Type: t, Bits: bits}, true
	}
	vs, ok := k.concrete()
	if !ok {
		return ir.DenseAttr{}, false
	}
	bits := make([]uint64, len(vs))
	for j, v := range vs {
		bits[j] = uint64(ir.TruncInt(v, k.elem))
	}
	return ir.DenseAttr{Type: t, Bits: bits}, true
}

func newIntKonst(elem ir.Type, shape []int64, vs []int64) *konst {
	k := &konst{elem: elem, shape: shape, i: make([]sym.Expr, len(vs))}
	for j, v := range vs {
		k.i[j] = sym.Const(v)
	}
	return k
}

// elemType maps an ONNX data type to the graph element type that holds it.
// Narrow integers widen to i32, unsigned 32/64-bit ones to i64 (constants
// only: see importer.inputType).
func elemType(dt int32) (ir.Type, error) {
	switch dt {
	case TypeFloat:
		return ir.F32, nil
	case TypeDouble:
		return ir.F64, nil
	case TypeFloat16:
		return ir.F16, nil
	case TypeBFloat16:
		return ir.BF16, nil
	case TypeInt64, TypeUint32, TypeUint64:
		return ir.I64, nil
	case TypeInt32, TypeInt8, TypeUint8, TypeInt16, TypeUint16:
		return ir.I32, nil
	case TypeBool:
		return ir.I1, nil
	}
	return nil, fmt.Errorf("unsupported ONNX data type %s", dataTypeName(dt))
}

func dataTypeName(dt int32) string {
	names := map[int32]string{1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64",
		8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
		15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2",
		20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1"}
	if n, ok := names[dt]; ok {
		return n
	}
	return fmt.Sprintf("data type %d", dt)
}

// storageBytes is the size of one element of ONNX type dt in raw_data.
func storageBytes(dt int32) int {
	switch dt {
	case TypeDouble, TypeInt64, TypeUint64:
		return 8
	case TypeFloat, TypeInt32, TypeUint32:
		return 4
	case TypeFloat16, TypeBFloat16, TypeInt16, TypeUint16:
		return 2
	case TypeInt8, TypeUint8, TypeBool:
		return 1
	}
	return 0
}

// rawElem decodes element j of raw little-endian data of type dt: floats as
// their value, integers as int64.
func rawElem(dt int32, raw []byte, j int) (float64, int64) {
	switch dt {
	case TypeFloat:
		f := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])))
		return f, 0
	case TypeDouble:
		return math.Float64frombits(binary.LittleEndian.Uint64(raw[8*j:])), 0
	case TypeFloat16:
		return ir.FloatFromBits(uint64(binary.LittleEndian.Uint16(raw[2*j:])), ir.F16), 0
	case TypeBFloat16:
		return ir.FloatFromBits(uint64(binary.LittleEndian.Uint16(raw[2*j:])), ir.BF16), 0
	case TypeInt64, TypeUint64:
		return 0, int64(binary.LittleEndian.Uint64(raw[8*j:]))
	case TypeInt32:
		return 0, int64(int32(binary.LittleEndian.Uint32(raw[4*j:])))
	case TypeUint32:
		return 0, int64(binary.LittleEndian.Uint32(raw[4*j:]))
	case TypeInt16:
		return 0, int64(int16(binary.LittleEndian.Uint16(raw[2*j:])))
	case TypeUint16:
		return 0, int64(binary.LittleEndian.Uint16(raw[2*j:]))
	case TypeInt8:
		return 0, int64(int8(raw[j]))
	case TypeUint8:
		return 0, int64(raw[j])
	case TypeBool:
		if raw[j] != 0 {
			return 0, 1
		}
		return 0, 0
	}
	return 0, 0
}

// typedElem decodes element j of the typed fields of t.
func typedElem(t *Tensor, j int) (float64, int64) {
	switch t.DataType {
	case TypeFloat:
		return float64(t.FloatData[j]), 0
	case TypeDouble:
		return t.DoubleData[j], 0
	case TypeFloat16:
		return ir.FloatFromBits(uint64(uint16(t.Int32Data[j])), ir.F16), 0
	case TypeBFloat16:
		return ir.FloatFromBits(uint64(uint16(t.Int32Data[j])), ir.BF16), 0
	case TypeInt64:
		return 0, t.Int64Data[j]
	case TypeUint32, TypeUint64:
		return 0, int64(t.Uint64Data[j])
	case TypeBool:
		if t.Int32Data[j] != 0 {
			return 0, 1
		}
		return 0, 0
	default:
		return 0, int64(t.Int32Data[j])
	}
}

// typedLen is the number of elements the typed fields of t hold.
func typedLen(t *Tensor) int {
	switch t.DataType {
	case TypeFloat:
		return len(t.FloatData)
	case TypeDouble:
		return len(t.DoubleData)
	case TypeInt64:
		return len(t.Int64Data)
	case TypeUint32, TypeUint64:
		return len(t.Uint64Data)
	}
	return len(t.Int32Data)
}

// checkTensorData checks that t's data (raw, or typed fields) holds its
// element count, given its raw bytes (nil unless raw or external).
func checkTensorData(t *Tensor, raw []byte, hasRaw bool) error {
	n := t.NumElements()
	if n < 0 {
		return fmt.Errorf("tensor %q has negative dims %v", t.Name, t.Dims)
	}
	if t.Segmented {
		return fmt.Errorf("tensor %q is segmented, which is not supported", t.Name)
	}
	if hasRaw {
		if sz := storageBytes(t.DataType); int64(len(raw)) != n*int64(sz) {
			return fmt.Errorf("tensor %q of %s %v holds %d bytes, want %d", t.Name, dataTypeName(t.DataType), t.Dims, len(raw), n*int64(sz))
		}
		return nil
	}
	if got := typedLen(t); int64(got) != n {
		return fmt.Errorf("tensor %q of %s %v holds %d elements, want %d", t.Name, dataTypeName(t.DataType), t.Dims, got, n)
	}
	return nil
}

// konstFromTensor decodes a tensor whose data is raw (when hasRaw) or in
// its typed fields.
func konstFromTensor(t *Tensor, raw []byte, hasRaw bool) (*konst, error) {
	elem, err := elemType(t.DataType)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if err := checkTensorData(t, raw, hasRaw); err != nil {
		return nil, err
	}
	n := int(t.NumElements())
	k := &konst{elem: elem, shape: slices.Clone(t.Dims)}
	if k.shape == nil {
		k.shape = []int64{}
	}
	if ir.IsFloat(elem) {
		k.f = make([]float64, n)
	} else {
		k.i = make([]sym.Expr, n)
	}
	for j := range n {
		var f float64
		var v int64
		if hasRaw {
			f, v = rawElem(t.DataType, raw, j)
		} else {
			f, v = typedElem(t, j)
		}
		if k.f != nil {
			k.f[j] = f
		} else {
			k.i[j] = sym.Const(v)
		}
	}
	return k, nil
}

// broadcastShapes is NumPy's broadcast of static shapes.
func broadcastShapes(a, b []int64) ([]int64, bool) {
	out, ok := graph.BroadcastShape(a, b)
	return out, ok
}

// kBinary applies f elementwise with broadcasting; f gets float or
// symbolic operands by the operands' element type, and the result takes
// elem.
func kBinary(a, b *konst, elem ir.Type, ff func(x, y float64) float64, fi func(x, y sym.Expr) (sym.Expr, bool)) (*konst, bool) {
	shape, ok := broadcastShapes(a.shape, b.shape)
	if !ok {
		return nil, false
	}
	ia, ib := graph.BroadcastIndex(shape, a.shape), graph.BroadcastIndex(shape, b.shape)
	out := &konst{elem: elem, shape: shape}
	n := len(ia)
	if a.isFloat() {
		if ff == nil {
			return nil, false
		}
		out.f = make([]float64, n)
		for j := range n {
			out.f[j] = ff(a.f[ia[j]], b.f[ib[j]])
		}
		if ft, ok := elem.(*ir.FloatType); ok {
			for j := range out.f {
				out.f[j] = ir.RoundToType(out.f[j], ft)
			}
		}
		return out, true
	}
	if fi == nil {
		return nil, false
	}
	out.i = make([]sym.Expr, n)
	for j := range n {
		v, ok := fi(a.i[ia[j]], b.i[ib[j]])
		if !ok {
			return nil, false
		}
		out.i[j] = v
	}
	return out, true
}

// kCompare compares elementwise; symbolic integers compare when equal or
// when both are constants, and a size (a non-negative symbolic
// expression) is never equal to a negative constant.
func kCompare(a, b *konst, pred string) (*konst, bool) {
	shape, ok := broadcastShapes(a.shape, b.shape)
	if !ok {
		return nil, false
	}
	ia, ib := graph.BroadcastIndex(shape, a.shape), graph.BroadcastIndex(shape, b.shape)
	out := &konst{elem: ir.I1, shape: shape, i: make([]sym.Expr, len(ia))}
	cf := graph.CmpFloatFunc(pred)
	ci := graph.CmpIntFunc(pred)
	for j := range ia {
		var r bool
		if a.isFloat() {
			r = cf(a.f[ia[j]], b.f[ib[j]])
		} else {
			x, y := a.i[ia[j]], b.i[ib[j]]
			xc, xok := x.IsConst()
			yc, yok := y.IsConst()
			switch {
			case xok && yok:
				r = ci(xc, yc)
			case x.Equal(y) && (pred == "eq" || pred == "le" || pred == "ge"):
				r = true
			case x.Equal(y) && pred == "ne":
				r = false
			case (xok && xc < 0 && !yok) || (yok && yc < 0 && !xok):
				switch pred {
				case "eq":
					r = false
				case "ne":
					r = true
				default:
					return nil, false
				}
			default:
				return nil, false
			}
		}
		out.i[j] = sym.Const(0)
		if r {
			out.i[j] = sym.Const(1)
		}
	}
	return out, true
}

// kCast converts k to elem.
func kCast(k *konst, elem ir.Type) (*konst, bool) {
	out := &konst{elem: elem, shape: k.shape}
	switch {
	case ir.IsFloat(elem):
		fs, ok := k.floats()
		if !ok {
			return nil, false
		}
		ft := elem.(*ir.FloatType)
		out.f = make([]float64, len(fs))
		for j, v := range fs {
			out.f[j] = ir.RoundToType(v, ft)
		}
	case k.isFloat():
		out.i = make([]sym.Expr, len(k.f))
		for j, v := range k.f {
			var c int64
			switch {
			case elem == ir.I1:
				if v != 0 {
					c = 1
				}
			case v != v:
				c = 0
			default:
				c = ir.TruncInt(int64(math.Trunc(v)), elem)
			}
			out.i[j] = sym.Const(c)
		}
	default:
		out.i = make([]sym.Expr, len(k.i))
		for j, e := range k.i {
			if c, ok := e.IsConst(); ok {
				if elem == ir.I1 {
					if c != 0 {
						c = 1
					}
				} else {
					c = ir.TruncInt(c, elem)
				}
				e = sym.Const(c)
			} else if elem == ir.I1 {
				return nil, false
			}
			out.i[j] = e
		}
	}
	return out, true
}

// kGather is numpy.take(k, idx, axis).
func kGather(k *konst, idx []int64, idxShape []int64, axis int) (*konst, bool) {
	n := k.shape[axis]
	outer := ir.NumElements(k.shape[:axis])
	inner := ir.NumElements(k.shape[axis+1:])
	out := &konst{elem: k.elem, shape: slices.Concat(k.shape[:axis], idxShape, k.shape[axis+1:])}
	for o := range outer {
		for _, v := range idx {
			if v < 0 {
				v += n
			}
			if v < 0 || v >= n {
				return nil, false
			}
			start := (o*n + v) * inner
			if k.isFloat() {
				out.f = append(out.f, k.f[start:start+inner]...)
			} else {
				out.i = append(out.i, k.i[start:start+inner]...)
			}
		}
	}
	if out.f == nil && k.isFloat() {
		out.f = []float64{}
	}
	return out, true
}

// kConcat joins konsts along axis.
func kConcat(ks []*konst, axis int) *konst {
	first := ks[0]
	outer := ir.NumElements(first.shape[:axis])
	out := &konst{elem: first.elem, shape: slices.Clone(first.shape)}
	out.shape[axis] = 0
	for _, k := range ks {
		out.shape[axis] += k.shape[axis]
	}
	for o := range outer {
		for _, k := range ks {
			inner := ir.NumElements(k.shape[axis:])
			if k.isFloat() {
				out.f = append(out.f, k.f[o*inner:(o+1)*inner]...)
			} else {
				out.i = append(out.i, k.i[o*inner:(o+1)*inner]...)
			}
		}
	}
	return out
}

// kSlice takes the elements at the given per-axis index lists.
func kSlice(k *konst, idx [][]int64) *konst {
	shape := make([]int64, len(idx))
	for d, l := range idx {
		shape[d] = int64(len(l))
	}
	out := &konst{elem: k.elem, shape: shape}
	strides := make([]int64, len(k.shape))
	s := int64(1)
	for d := len(k.shape) - 1; d >= 0; d-- {
		strides[d] = s
		s *= k.shape[d]
	}
	pos := make([]int64, len(shape))
	n := ir.NumElements(shape)
	for range n {
		var off int64
		for d, p := range pos {
			off += idx[d][p] * strides[d]
		}
		if k.isFloat() {
			out.f = append(out.f, k.f[off])
		} else {
			out.i = append(out.i, k.i[off])
		}
		for d := len(pos) - 1; d >= 0; d-- {
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
	}
	if k.isFloat() && out.f == nil {
		out.f = []float64{}
	}
	return out
}

// kTranspose permutes the axes of k.
func kTranspose(k *konst, perm []int64) *konst {
	idx := make([][]int64, len(k.shape))
	for d := range idx {
		idx[d] = iotaList(k.shape[d])
	}
	// Gather in the source order, then permute by index arithmetic.
	shape := make([]int64, len(perm))
	for j, p := range perm {
		shape[j] = k.shape[p]
	}
	out := &konst{elem: k.elem, shape: shape}
	srcStrides := make([]int64, len(k.shape))
	s := int64(1)
	for d := len(k.shape) - 1; d >= 0; d-- {
		srcStrides[d] = s
		s *= k.shape[d]
	}
	pos := make([]int64, len(shape))
	for range ir.NumElements(shape) {
		var off int64
		for j, p := range pos {
			off += p * srcStrides[perm[j]]
		}
		if k.isFloat() {
			out.f = append(out.f, k.f[off])
		} else {
			out.i = append(out.i, k.i[off])
		}
		for d := len(pos) - 1; d >= 0; d-- {
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
	}
	return out
}

func iotaList(n int64) []int64 {
	out := make([]int64, n)
	for j := range out {
		out[j] = int64(j)
	}
	return out
}

// kBroadcast broadcasts k to shape.
func kBroadcast(k *konst, shape []int64) *konst {
	idx := graph.BroadcastIndex(shape, k.shape)
	out := &konst{elem: k.elem, shape: shape}
	for _, j := range idx {
		if k.isFloat() {
			out.f = append(out.f, k.f[j])
		} else {
			out.i = append(out.i, k.i[j])
		}
	}
	if k.isFloat() && out.f == nil {
		out.f = []float64{}
	}
	return out
}
