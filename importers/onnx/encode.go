package onnx

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Marshal encodes the model as a ModelProto, so that Go programs and tests
// can write ONNX files. Repeated numbers are packed, as protoc does.
func (m *Model) Marshal() []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(m.IRVersion))
	if m.ProducerName != "" {
		b = appendString(b, 2, m.ProducerName)
	}
	if m.Graph != nil {
		b = appendMessage(b, 7, m.Graph.marshal())
	}
	for _, o := range m.Opsets {
		var ob []byte
		if o.Domain != "" {
			ob = appendString(ob, 1, o.Domain)
		}
		ob = protowire.AppendTag(ob, 2, protowire.VarintType)
		ob = protowire.AppendVarint(ob, uint64(o.Version))
		b = appendMessage(b, 8, ob)
	}
	return b
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func appendInts(b []byte, num protowire.Number, vs []int64) []byte {
	if len(vs) == 0 {
		return b
	}
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, uint64(v))
	}
	return appendMessage(b, num, p)
}

func (g *Graph) marshal() []byte {
	var b []byte
	for _, n := range g.Nodes {
		b = appendMessage(b, 1, n.marshal())
	}
	if g.Name != "" {
		b = appendString(b, 2, g.Name)
	}
	for _, t := range g.Initializers {
		b = appendMessage(b, 5, t.marshal())
	}
	for _, vi := range g.Inputs {
		b = appendMessage(b, 11, vi.marshal())
	}
	for _, vi := range g.Outputs {
		b = appendMessage(b, 12, vi.marshal())
	}
	for _, vi := range g.ValueInfo {
		b = appendMessage(b, 13, vi.marshal())
	}
	return b
}

func (n *Node) marshal() []byte {
	var b []byte
	for _, s := range n.Inputs {
		b = appendString(b, 1, s)
	}
	for _, s := range n.Outputs {
		b = appendString(b, 2, s)
	}
	if n.Name != "" {
		b = appendString(b, 3, n.Name)
	}
	b = appendString(b, 4, n.OpType)
	for _, a := range n.Attrs {
		b = appendMessage(b, 5, a.marshal())
	}
	if n.Domain != "" {
		b = appendString(b, 7, n.Domain)
	}
	return b
}

func (a *Attribute) marshal() []byte {
	var b []byte
	b = appendString(b, 1, a.Name)
	switch a.Type {
	case AttrFloat:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.F))
	case AttrInt:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(a.I))
	case AttrString:
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, a.S)
	case AttrTensor:
		b = appendMessage(b, 5, a.T.marshal())
	case AttrGraph:
		b = appendMessage(b, 6, a.G.marshal())
	case AttrFloats:
		var p []byte
		for _, f := range a.Floats {
			p = protowire.AppendFixed32(p, math.Float32bits(f))
		}
		b = appendMessage(b, 7, p)
	case AttrInts:
		b = appendInts(b, 8, a.Ints)
	case AttrStrings:
		for _, s := range a.Strings {
			b = protowire.AppendTag(b, 9, protowire.BytesType)
			b = protowire.AppendBytes(b, s)
		}
	}
	b = protowire.AppendTag(b, 20, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(a.Type))
}

func (vi *ValueInfo) marshal() []byte {
	var b []byte
	b = appendString(b, 1, vi.Name)
	if vi.ElemType == 0 {
		return b
	}
	var tt []byte
	tt = protowire.AppendTag(tt, 1, protowire.VarintType)
	tt = protowire.AppendVarint(tt, uint64(vi.ElemType))
	if vi.HasShape {
		var sh []byte
		for _, d := range vi.Dims {
			var db []byte
			switch {
			case d.HasValue:
				db = protowire.AppendTag(db, 1, protowire.VarintType)
				db = protowire.AppendVarint(db, uint64(d.Value))
			case d.Param != "":
				db = appendString(db, 2, d.Param)
			}
			sh = appendMessage(sh, 1, db)
		}
		tt = appendMessage(tt, 2, sh)
	}
	var ty []byte
	ty = appendMessage(ty, 1, tt)
	return appendMessage(b, 2, ty)
}

func (t *Tensor) marshal() []byte {
	var b []byte
	b = appendInts(b, 1, t.Dims)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(t.DataType))
	if len(t.FloatData) > 0 {
		var p []byte
		for _, f := range t.FloatData {
			p = protowire.AppendFixed32(p, math.Float32bits(f))
		}
		b = appendMessage(b, 4, p)
	}
	if len(t.Int32Data) > 0 {
		var p []byte
		for _, v := range t.Int32Data {
			p = protowire.AppendVarint(p, uint64(int64(v)))
		}
		b = appendMessage(b, 5, p)
	}
	b = appendInts(b, 7, t.Int64Data)
	if t.Name != "" {
		b = appendString(b, 8, t.Name)
	}
	if t.HasRaw || len(t.RawData) > 0 {
		b = protowire.AppendTag(b, 9, protowire.BytesType)
		b = protowire.AppendBytes(b, t.RawData)
	}
	if len(t.DoubleData) > 0 {
		var p []byte
		for _, f := range t.DoubleData {
			p = protowire.AppendFixed64(p, math.Float64bits(f))
		}
		b = appendMessage(b, 10, p)
	}
	if t.External != nil {
		for _, k := range []string{"location", "offset", "length"} {
			if v, ok := t.External[k]; ok {
				var e []byte
				e = appendString(e, 1, k)
				e = appendString(e, 2, v)
				b = appendMessage(b, 13, e)
			}
		}
		b = protowire.AppendTag(b, 14, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	return b
}
