package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The ONNX protobuf messages this importer reads, decoded with protowire by
// the field numbers of onnx.proto. Fields the importer has no use for are
// skipped. Byte fields (raw_data) alias the decoded buffer: no copy.

// Model is ModelProto.
type Model struct {
	IRVersion    int64
	Opsets       []OpsetID
	ProducerName string
	Graph        *Graph
	Functions    int // number of FunctionProtos (model-local functions)
}

// OpsetID is OperatorSetIdProto.
type OpsetID struct {
	Domain  string
	Version int64
}

// Graph is GraphProto.
type Graph struct {
	Name         string
	Nodes        []*Node
	Initializers []*Tensor
	Inputs       []*ValueInfo
	Outputs      []*ValueInfo
	ValueInfo    []*ValueInfo
	Sparse       int // number of sparse initializers (unsupported)
}

// Node is NodeProto.
type Node struct {
	Inputs  []string
	Outputs []string
	Name    string
	OpType  string
	Domain  string
	Attrs   []*Attribute
}

// Attribute types (AttributeProto.AttributeType).
const (
	AttrFloat   = 1
	AttrInt     = 2
	AttrString  = 3
	AttrTensor  = 4
	AttrGraph   = 5
	AttrFloats  = 6
	AttrInts    = 7
	AttrStrings = 8
)

// Attribute is AttributeProto.
type Attribute struct {
	Name    string
	Type    int
	F       float32
	I       int64
	S       []byte
	T       *Tensor
	G       *Graph
	Floats  []float32
	Ints    []int64
	Strings [][]byte
	RefName string // ref_attr_name (inside functions only)
}

// ValueInfo is ValueInfoProto with a tensor type.
type ValueInfo struct {
	Name      string
	ElemType  int32 // 0 when the type is absent or not a tensor
	HasShape  bool
	Dims      []Dim
	NotTensor bool // a sequence, map, optional or sparse type
}

// Dim is TensorShapeProto.Dimension: a value, a parameter name, or neither
// (unknown).
type Dim struct {
	Value    int64
	Param    string
	HasValue bool
}

// Tensor data types (TensorProto.DataType).
const (
	TypeFloat    = 1
	TypeUint8    = 2
	TypeInt8     = 3
	TypeUint16   = 4
	TypeInt16    = 5
	TypeInt32    = 6
	TypeInt64    = 7
	TypeString   = 8
	TypeBool     = 9
	TypeFloat16  = 10
	TypeDouble   = 11
	TypeUint32   = 12
	TypeUint64   = 13
	TypeBFloat16 = 16
)

// Tensor is TensorProto. Exactly one of the data fields is set; RawData
// aliases the model's buffer.
type Tensor struct {
	Name       string
	Dims       []int64
	DataType   int32
	FloatData  []float32
	Int32Data  []int32
	Int64Data  []int64
	DoubleData []float64
	Uint64Data []uint64
	RawData    []byte
	HasRaw     bool
	External   map[string]string // external_data entries (location, offset, length)
	Segmented  bool
}

// IsExternal reports whether the tensor's data lives in another file.
func (t *Tensor) IsExternal() bool { return t.External != nil }

// NumElements is the product of the dims.
func (t *Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// decoder walks one message.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) next() (protowire.Number, protowire.Type, bool) {
	if d.err != nil || len(d.b) == 0 {
		return 0, 0, false
	}
	num, typ, n := protowire.ConsumeTag(d.b)
	if n < 0 {
		d.err = protowire.ParseError(n)
		return 0, 0, false
	}
	d.b = d.b[n:]
	return num, typ, true
}

func (d *decoder) fail(n int) {
	if d.err == nil {
		d.err = protowire.ParseError(n)
	}
}

func (d *decoder) skip(num protowire.Number, typ protowire.Type) {
	n := protowire.ConsumeFieldValue(num, typ, d.b)
	if n < 0 {
		d.fail(n)
		return
	}
	d.b = d.b[n:]
}

// consume reads one value of wire type want with read (a protowire
// Consume function), or records why it cannot: a field of another wire
// type, or a truncated or malformed value.
func consume[T any](d *decoder, typ, want protowire.Type, what string, read func([]byte) (T, int)) T {
	var zero T
	if typ != want {
		d.err = fmt.Errorf("wire type %d where a %s was expected", typ, what)
		return zero
	}
	v, n := read(d.b)
	if n < 0 {
		d.fail(n)
		return zero
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(typ protowire.Type) []byte {
	return consume(d, typ, protowire.BytesType, "length-delimited field", protowire.ConsumeBytes)
}

func (d *decoder) str(typ protowire.Type) string { return string(d.bytes(typ)) }

func (d *decoder) varint(typ protowire.Type) uint64 {
	return consume(d, typ, protowire.VarintType, "varint", protowire.ConsumeVarint)
}

func (d *decoder) fixed32(typ protowire.Type) uint32 {
	return consume(d, typ, protowire.Fixed32Type, "fixed32", protowire.ConsumeFixed32)
}

func (d *decoder) fixed64(typ protowire.Type) uint64 {
	return consume(d, typ, protowire.Fixed64Type, "fixed64", protowire.ConsumeFixed64)
}

// varints appends a repeated varint field, packed or not.
func (d *decoder) varints(typ protowire.Type, dst []uint64) []uint64 {
	if typ == protowire.VarintType {
		return append(dst, d.varint(typ))
	}
	b := d.bytes(typ)
	for len(b) > 0 && d.err == nil {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			d.fail(n)
			break
		}
		dst = append(dst, v)
		b = b[n:]
	}
	return dst
}

func (d *decoder) fixed32s(typ protowire.Type, dst []uint32) []uint32 {
	if typ == protowire.Fixed32Type {
		return append(dst, d.fixed32(typ))
	}
	b := d.bytes(typ)
	if len(b)%4 != 0 {
		d.err = errors.New("packed fixed32 field of odd length")
		return dst
	}
	for i := 0; i < len(b); i += 4 {
		dst = append(dst, binary.LittleEndian.Uint32(b[i:]))
	}
	return dst
}

func (d *decoder) fixed64s(typ protowire.Type, dst []uint64) []uint64 {
	if typ == protowire.Fixed64Type {
		return append(dst, d.fixed64(typ))
	}
	b := d.bytes(typ)
	if len(b)%8 != 0 {
		d.err = errors.New("packed fixed64 field of odd length")
		return dst
	}
	for i := 0; i < len(b); i += 8 {
		dst = append(dst, binary.LittleEndian.Uint64(b[i:]))
	}
	return dst
}

// maxDepth bounds the nesting of graphs (attributes holding graphs).
const maxDepth = 64

// DecodeModel decodes a ModelProto. The result aliases buf.
func DecodeModel(buf []byte) (*Model, error) {
	m := &Model{}
	d := &decoder{b: buf}
	for {
		num, typ, ok := d.next()
		if !ok {
			break
		}
		switch num {
		case 1:
			m.IRVersion = int64(d.varint(typ))
		case 2:
			m.ProducerName = d.str(typ)
		case 7:
			g, err := decodeGraph(d.bytes(typ), 0)
			if err != nil {
				return nil, fmt.Errorf("graph: %w", err)
			}
			m.Graph = g
		case 8:
			op, err := decodeOpset(d.bytes(typ))
			if err != nil {
				return nil, fmt.Errorf("opset_import: %w", err)
			}
			m.Opsets = append(m.Opsets, op)
		case 25:
			d.bytes(typ)
			m.Functions++
		default:
			d.skip(num, typ)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("not an ONNX model: %w", d.err)
	}
	if m.Graph == nil {
		return nil, errors.New("not an ONNX model: no graph")
	}
	return m, nil
}

func decodeOpset(b []byte) (OpsetID, error) {
	var o OpsetID
	d := &decoder{b: b}
	for {
		num, typ, ok := d.next()
		if !ok {
			break
		}
		switch num {
		case 1:
			o.Domain = d.str(typ)
		case 2:
			o.Version = int64(d.varint(typ))
		default:
			d.skip(num, typ)
		}
	}
	return o, d.err
}

func decodeGraph(b []byte, depth int) (*Graph, error) {
	if depth > maxDepth {
		return nil, errors.New("graphs nested too deeply")
	}
	g := &Graph{}
	d := &decoder{b: b}
	for {
		num, typ, ok := d.next()
		if !ok {
			break
		}
		switch num {
		case 1:
			n, err := decodeNode(d.bytes(typ), depth)
			if err != nil {
				return nil, fmt.Errorf("node %d: %w", len(g.Nodes), err)
			}
			g.Nodes = append(g.Nodes, n)
		case 2:
			g.Name = d.str(typ)
		case 5:
			t, err := decodeTensor(d.bytes(typ))
			if err != nil {
				return nil, fmt.Errorf("initializer %d: %w", len(g.Initializers), err)
			}
			g.Initializers = append(g.Initializers, t)
		case 15:
			d.bytes(typ)
			g.Sparse++
		case 11, 12, 13:
			vi, err := decodeValueInfo(d.bytes(typ))
			if err != nil {
				return nil, fmt.Errorf("value info: %w", err)
			}
			switch num {
			case 11:
				g.Inputs = append(g.Inputs, vi)
			case 12:
				g.Outputs = append(g.Outputs, vi)
			default:
				g.ValueInfo = append(g.ValueInfo, vi)
			}
		default:
			d.skip(num, typ)
		}
	}
	return g, d.err
}

func decodeNode(b []byte, depth int) (*Node, error) {
	n := &Node{}
	d := &decoder{b: b}
	for {
		num, typ, ok := d.next()
		if !ok {
			break
		}
		switch num {
		case 1:
			n.Inputs = append(n.Inputs, d.str(typ))
		case 2:
			n.Outputs = append(n.Outputs, d.str(typ))
		case 3:
			n.Name = d.str(typ)
		case 4:
			n.OpType = d.str(typ)
		case 7:
			n.Domain = d.str(typ)
		case 5:
			a, err := decodeAttribute(d.bytes(typ), depth)
			if err != nil {
				return nil, fmt.Errorf("attribute %d: %w", len(n.Attrs), err)
			}
			n.Attrs = append(n.Attrs, a)
		default:
			d.skip(num, typ)
		}
	}
	return n, d.err
}

func decodeAttribute(b []byte, depth int) (*Attribute, error) {
	a := &Attribute{}
	d := &decoder{b: b}
	var ints []uint64
	var floats []uint32
	for {
		num, typ, ok := d.next()
		if !ok {
			break
		}
		switch num {
		case 1:
			a.Name = d.str(typ)
		case 20:
			a.Type = int(d.varint(typ))
		case 21:
			a.RefName = d.str(typ)
		case 2:
			a.F = math.Float32frombits(d.fixed32(typ))
		case 3:
			a.I = int64(d.varint(typ))
		case 4:
			a.S = d.bytes(typ)
		case 5:
			t, err := decodeTensor(d.bytes(typ))
			if err != nil {
				return nil, err
			}
			a.T = t
		case 6:
			g, err := decodeGraph(d.bytes(typ), depth+1)
			if err != nil {
				return nil, err
			}
			a.G = g
		case 7:
			floats = d.fixed32s(typ, floats)
		case 8:
			ints = d.varints(typ, ints)
		case 9:
			a.Strings = append(a.Strings, d.bytes(typ))
		default:
			d.skip(num, typ)
		}
	}
	for _, v := range ints {
		a.Ints = append(a.Ints, int64(v))
	}
	for _, v := range floats {
		a.Floats = append(a.Floats, math.Float32frombits(v))
	}
	return a, d.err
}

func decodeValueInfo(b []byte) (*ValueInfo, error) {
	vi := &ValueInfo{}
	d := &decoder{b: b}
	for {
		num, typ, ok := d.next()
		if !ok {
			break
		}
		switch num {
		case 1:
			vi.Name = d.str(typ)
		case 2:
			if err := decodeType(d.bytes(typ), vi); err != nil {
				return nil, err
			}
		default:
			d.skip(num, typ)
		}
	}
	return vi, d.err
}

func decodeType(b []byte, vi *ValueInfo) error {
	d := &decoder{b: b}
	for {
		num, typ, ok := d.next()
		if !ok {
			break
		}
		switch num {
		case 1: // tensor_type
			td := &decoder{b: d.bytes(typ)}
			for {
				n2, t2, ok := td.next()
				if !ok {
					break
				}
				switch n2 {
				case 1:
					vi.ElemType = int32(td.varint(t2))
				case 2:
					vi.HasShape = true
					sd := &decoder{b: td.bytes(t2)}
					for {
						n3, t3, ok := sd.next()
						if !ok {
							break
						}
						if n3 != 1 {
							sd.skip(n3, t3)
							continue
						}
						dim, err := decodeDim(sd.bytes(t3))
						if err != nil {
							return err
						}
						vi.Dims = append(vi.Dims, dim)
					}
					if sd.err != nil {
						return sd.err
					}
				default:
					td.skip(n2, t2)
				}
			}
			if td.err != nil {
				return td.err
			}
		case 4, 5, 8, 9:
			d.bytes(typ)
			vi.NotTensor = true
		default:
			d.skip(num, typ)
		}
	}
	return d.err
}

func decodeDim(b []byte) (Dim, error) {
	var dim Dim
	d := &decoder{b: b}
	for {
		num, typ, ok := d.next()
		if !ok {
			break
		}
		switch num {
		case 1:
			dim.Value, dim.HasValue = int64(d.varint(typ)), true
		case 2:
			dim.Param = d.str(typ)
		default:
			d.skip(num, typ)
		}
	}
	return dim, d.err
}

func decodeTensor(b []byte) (*Tensor, error) {
	t := &Tensor{}
	d := &decoder{b: b}
	var dims, i32, i64, u64 []uint64
	var f32 []uint32
	var f64 []uint64
	external := false
	for {
		num, typ, ok := d.next()
		if !ok {
			break
		}
		switch num {
		case 1:
			dims = d.varints(typ, dims)
		case 2:
			t.DataType = int32(d.varint(typ))
		case 3:
			d.bytes(typ)
			t.Segmented = true
		case 4:
			f32 = d.fixed32s(typ, f32)
		case 5:
			i32 = d.varints(typ, i32)
		case 7:
			i64 = d.varints(typ, i64)
		case 8:
			t.Name = d.str(typ)
		case 9:
			t.RawData, t.HasRaw = d.bytes(typ), true
		case 10:
			f64 = d.fixed64s(typ, f64)
		case 11:
			u64 = d.varints(typ, u64)
		case 13:
			k, v, err := decodeEntry(d.bytes(typ))
			if err != nil {
				return nil, err
			}
			if t.External == nil {
				t.External = map[string]string{}
			}
			t.External[k] = v
		case 14:
			external = d.varint(typ) == 1
		default:
			d.skip(num, typ)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	for _, v := range dims {
		t.Dims = append(t.Dims, int64(v))
	}
	for _, v := range f32 {
		t.FloatData = append(t.FloatData, math.Float32frombits(v))
	}
	for _, v := range i32 {
		t.Int32Data = append(t.Int32Data, int32(v))
	}
	for _, v := range i64 {
		t.Int64Data = append(t.Int64Data, int64(v))
	}
	for _, v := range f64 {
		t.DoubleData = append(t.DoubleData, math.Float64frombits(v))
	}
	t.Uint64Data = u64
	if external && t.External == nil {
		return nil, fmt.Errorf("tensor %q: data_location is EXTERNAL but there is no external_data", t.Name)
	}
	if !external && t.External != nil {
		t.External = nil
	}
	return t, nil
}

func decodeEntry(b []byte) (string, string, error) {
	var k, v string
	d := &decoder{b: b}
	for {
		num, typ, ok := d.next()
		if !ok {
			break
		}
		switch num {
		case 1:
			k = d.str(typ)
		case 2:
			v = d.str(typ)
		default:
			d.skip(num, typ)
		}
	}
	return k, v, d.err
}
