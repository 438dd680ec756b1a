// Package irgen generates random well-formed IR for property tests: modules
// of unregistered ops over random builtin types and attributes, with nested
// regions, multi-block regions with successors and multi-result ops.
//
// The generators are built on pgregory.net/rapid, so failures shrink to
// small modules. Every module they produce is well formed: operands are
// defined before use in the same block or in an enclosing one, successors
// name blocks of the same region, and each block of a multi-block region
// ends in a terminator-like op.
package irgen

import (
	"math"
	"strconv"

	"github.com/strata-ir/strata/ir"
	"pgregory.net/rapid"
)

// Limits keep generated modules small enough to shrink quickly.
const (
	maxDepth      = 2 // region nesting
	maxTypeDepth  = 2
	maxAttrDepth  = 2
	maxOpsInBlock = 4
	maxBlocks     = 3
)

// Module returns a generator of builtin.module ops holding random
// unregistered ops. ctx is only used to create the ops; it need not allow
// unregistered dialects, but parsing the printed module back does.
func Module(ctx *ir.Context) *rapid.Generator[*ir.Operation] {
	return rapid.Custom(func(t *rapid.T) *ir.Operation {
		g := &gen{t: t, ctx: ctx}
		body := ir.NewBlock()
		g.fillBlock(body, nil, 0)
		r := ir.NewRegion()
		r.Append(body)
		return ir.NewOperation(ctx, ir.OperationState{Name: "builtin.module", Regions: []*ir.Region{r}, Loc: g.loc(0)})
	})
}

// Type returns a generator of random builtin and dialect types.
func Type() *rapid.Generator[ir.Type] {
	return rapid.Custom(func(t *rapid.T) ir.Type { return (&gen{t: t}).typ(0) })
}

// Attribute returns a generator of random attributes of every kind.
func Attribute() *rapid.Generator[ir.Attribute] {
	return rapid.Custom(func(t *rapid.T) ir.Attribute { return (&gen{t: t}).attr(0) })
}

// Location returns a generator of random locations.
func Location() *rapid.Generator[ir.Location] {
	return rapid.Custom(func(t *rapid.T) ir.Location { return (&gen{t: t}).loc(0) })
}

type gen struct {
	t   *rapid.T
	ctx *ir.Context
}

func (g *gen) intn(lo, hi int, label string) int { return rapid.IntRange(lo, hi).Draw(g.t, label) }

func (g *gen) bool(label string) bool { return rapid.Bool().Draw(g.t, label) }

func pick[T any](g *gen, label string, xs ...T) T {
	return rapid.SampledFrom(xs).Draw(g.t, label)
}

// --- ops, blocks and regions ---

// fillBlock appends random ops to b. visible holds the values defined in
// enclosing blocks before b's parent op; b's own arguments and the results
// of its ops join them as they are made.
func (g *gen) fillBlock(b *ir.Block, visible []*ir.Value, depth int) []*ir.Value {
	visible = append(visible[:len(visible):len(visible)], b.Arguments()...)
	for range g.intn(0, maxOpsInBlock, "ops") {
		op := g.op(visible, depth)
		b.Append(op)
		visible = append(visible, op.Results()...)
	}
	return visible
}

// op makes one op using values from visible.
func (g *gen) op(visible []*ir.Value, depth int) *ir.Operation {
	st := ir.OperationState{
		Name: pick(g, "name", "test.op", "test.compute", "foo.bar", "graph.thing", "a.b.c", "test.$odd_name", "x.y-z"),
		Loc:  g.loc(0),
	}
	if len(visible) > 0 {
		for range g.intn(0, 4, "operands") {
			st.Operands = append(st.Operands, visible[g.intn(0, len(visible)-1, "operand")])
		}
	}
	for range g.intn(0, 3, "results") {
		st.ResultTypes = append(st.ResultTypes, g.typ(0))
	}
	st.Attributes = g.dict(1)
	if g.bool("props") {
		st.Properties = g.dict(1)
	}
	if depth < maxDepth {
		for range g.intn(0, 2, "regions") {
			st.Regions = append(st.Regions, g.region(visible, depth+1))
		}
	}
	return ir.NewOperation(g.ctx, st)
}

// region makes an empty region, a single block, or several blocks that
// branch to each other through terminator ops with successors.
func (g *gen) region(visible []*ir.Value, depth int) *ir.Region {
	r := ir.NewRegion()
	n := g.intn(0, maxBlocks, "blocks")
	blocks := make([]*ir.Block, n)
	for i := range blocks {
		blocks[i] = ir.NewBlock()
		for range g.intn(0, 2, "args") {
			a := blocks[i].AddArgument(g.typ(0))
			if g.bool("argloc") {
				a.SetArgLoc(g.loc(0))
			}
		}
		r.Append(blocks[i])
	}
	for _, b := range blocks {
		avail := g.fillBlock(b, visible, depth)
		if n == 1 && g.bool("no terminator") {
			continue
		}
		// A terminator that may branch to any block but the entry.
		st := ir.OperationState{Name: pick(g, "term", "test.br", "test.return", "cf.switchish"), Loc: g.loc(0)}
		if n > 1 {
			for range g.intn(0, 3, "successors") {
				st.Successors = append(st.Successors, blocks[g.intn(1, n-1, "successor")])
			}
		}
		if len(avail) > 0 {
			for range g.intn(0, 2, "term operands") {
				st.Operands = append(st.Operands, avail[g.intn(0, len(avail)-1, "term operand")])
			}
		}
		b.Append(ir.NewOperation(g.ctx, st))
	}
	return r
}

// --- types ---

var scalarTypes = []ir.Type{
	ir.I1, ir.I8, ir.I16, ir.I32, ir.I64, ir.IntegerOf(3), ir.IntegerOf(0),
	ir.IntegerWithSign(8, ir.Signed), ir.IntegerWithSign(32, ir.Unsigned),
	ir.F16, ir.BF16, ir.F32, ir.F64, ir.TF32, ir.F80, ir.F128, ir.Index, ir.None,
}

func (g *gen) scalar() ir.Type { return pick(g, "scalar", scalarTypes...) }

func (g *gen) shape(allowDynamic bool) []int64 {
	shape := make([]int64, g.intn(0, 3, "rank"))
	for i := range shape {
		if allowDynamic && g.intn(0, 3, "dynamic") == 0 {
			shape[i] = ir.Dynamic
		} else {
			shape[i] = int64(g.intn(0, 8, "dim"))
		}
	}
	return shape
}

func (g *gen) typ(depth int) ir.Type {
	kind := "scalar"
	if depth < maxTypeDepth {
		kind = pick(g, "type kind", "scalar", "scalar", "tensor", "unranked tensor", "memref", "unranked memref",
			"vector", "complex", "tuple", "function", "opaque")
	}
	switch kind {
	case "tensor":
		var enc ir.Attribute
		if g.intn(0, 4, "encoding") == 0 {
			enc = pick[ir.Attribute](g, "enc", ir.Str("enc"), ir.OpaqueAttr{Text: "#foo.enc<1>"}, ir.Dict(ir.NamedAttr{Name: "k", Value: ir.UnitAttr{}}))
		}
		return ir.TensorWithEncoding(g.shape(true), g.elemType(depth), enc)
	case "unranked tensor":
		return ir.UnrankedTensorOf(g.elemType(depth))
	case "memref":
		var layout, space ir.Attribute
		shape := g.shape(true)
		if g.bool("layout") {
			layout = g.stridedLayout(len(shape))
		}
		if g.bool("space") {
			space = g.memorySpace()
		}
		return ir.MemRefWith(shape, g.elemType(depth), layout, space)
	case "unranked memref":
		var space ir.Attribute
		if g.bool("space") {
			space = g.memorySpace()
		}
		return ir.UnrankedMemRefOf(g.elemType(depth), space)
	case "vector":
		shape := g.shape(false)
		if len(shape) == 0 {
			shape = []int64{4}
		}
		scalable := make([]bool, len(shape))
		for i := range shape {
			if shape[i] == 0 {
				shape[i] = 1 // vectors have no empty dims
			}
			scalable[i] = g.intn(0, 3, "scalable") == 0
		}
		return ir.ScalableVectorOf(shape, scalable, pick[ir.Type](g, "vector elem", ir.F32, ir.I8, ir.I1, ir.Index, ir.BF16))
	case "complex":
		return ir.ComplexOf(pick[ir.Type](g, "complex elem", ir.F32, ir.F64, ir.I32))
	case "tuple":
		elems := make([]ir.Type, g.intn(0, 3, "tuple len"))
		for i := range elems {
			elems[i] = g.typ(depth + 1)
		}
		return ir.TupleOf(elems)
	case "function":
		in := make([]ir.Type, g.intn(0, 2, "inputs"))
		for i := range in {
			in[i] = g.typ(depth + 1)
		}
		out := make([]ir.Type, g.intn(0, 2, "outputs"))
		for i := range out {
			out[i] = g.typ(depth + 1)
		}
		return ir.FunctionOf(in, out)
	case "opaque":
		return pick(g, "opaque type", ir.OpaqueTypeOf("foo", "bar", ""), ir.OpaqueTypeOf("foo", "bar", `<"x", 1>`), ir.OpaqueTypeOf("foo", "", `<"raw">`))
	}
	return g.scalar()
}

// elemType is an element type for tensors and memrefs.
func (g *gen) elemType(depth int) ir.Type {
	if g.intn(0, 5, "nested elem") == 0 {
		return pick[ir.Type](g, "elem", ir.ComplexOf(ir.F32), ir.VectorOf([]int64{4}, ir.F32), ir.OpaqueTypeOf("foo", "t", ""))
	}
	if t := g.scalar(); t != ir.None { // none is no element type
		return t
	}
	return ir.F32
}

func (g *gen) stridedLayout(rank int) ir.Attribute {
	text := "strided<["
	for i := range rank {
		if i > 0 {
			text += ", "
		}
		text += g.dimText("stride")
	}
	text += "]"
	if g.bool("offset") {
		text += ", offset: " + g.dimText("offset")
	}
	return ir.OpaqueAttr{Text: text + ">"}
}

func (g *gen) dimText(label string) string {
	if g.intn(0, 3, label) == 0 {
		return "?"
	}
	return strconv.Itoa(g.intn(1, 64, label))
}

func (g *gen) memorySpace() ir.Attribute {
	return pick[ir.Attribute](g, "space", ir.Int(int64(g.intn(1, 5, "space int")), ir.I64), ir.Str("gpu"), ir.OpaqueAttr{Text: "#gpu.address_space<workgroup>"})
}

// --- attributes ---

func (g *gen) dict(depth int) ir.DictAttr {
	var entries []ir.NamedAttr
	for range g.intn(0, 2, "entries") {
		entries = append(entries, ir.NamedAttr{Name: g.attrName(), Value: g.attr(depth)})
	}
	return ir.Dict(entries...)
}

func (g *gen) attrName() string {
	return pick(g, "attr name", "a", "b", "value", "sym_name", "x.y", "_z9", "$d", "with space", "0lead", "é")
}

func (g *gen) attr(depth int) ir.Attribute {
	kinds := []string{"int", "bool", "float", "string", "unit", "type", "symbol", "dense", "dense array", "opaque", "dense string"}
	if depth < maxAttrDepth {
		kinds = append(kinds, "array", "dict")
	}
	switch pick(g, "attr kind", kinds...) {
	case "int":
		t := pick[ir.Type](g, "int type", ir.I8, ir.I16, ir.I32, ir.I64, ir.Index, ir.IntegerOf(3), ir.IntegerWithSign(8, ir.Signed), ir.IntegerWithSign(16, ir.Unsigned))
		return ir.Int(rapid.Int64().Draw(g.t, "int"), t)
	case "bool":
		return ir.Bool(g.bool("bool value"))
	case "float":
		t := pick(g, "float type", ir.F16, ir.BF16, ir.F32, ir.F64)
		return ir.FloatAttr{Bits: g.floatBits(t), Type: t}
	case "string":
		return ir.Str(rapid.String().Draw(g.t, "string"))
	case "unit":
		return ir.UnitAttr{}
	case "type":
		return ir.TypeAttr{Type: g.typ(0)}
	case "symbol":
		ref := ir.SymbolRefAttr{Root: pick(g, "symbol", "f", "main", "with space", "a.b")}
		for range g.intn(0, 2, "nested") {
			ref.Nested = append(ref.Nested, pick(g, "nested symbol", "g", "x y", "h_1"))
		}
		return ref
	case "dense":
		return g.dense()
	case "dense array":
		return g.denseArray()
	case "dense string":
		shape := []int64{int64(g.intn(1, 3, "strings"))}
		vals := make([]string, shape[0])
		for i := range vals {
			vals[i] = rapid.StringN(0, 5, -1).Draw(g.t, "dense string")
		}
		return ir.DenseStringAttr{Type: ir.TensorOf(shape, ir.OpaqueTypeOf("foo", "string", "")), Values: vals}
	case "opaque":
		return pick[ir.Attribute](g, "opaque attr",
			ir.OpaqueAttr{Text: "affine_map<(d0, d1)[s0] -> (d0 + s0, d1 floordiv 2)>"},
			ir.OpaqueAttr{Text: "affine_set<(d0) : (d0 - 10 >= 0)>"},
			ir.OpaqueAttr{Text: "strided<[?, 1], offset: ?>"},
			ir.OpaqueAttr{Text: `#foo.bar<"baz" [1, 2] {x}>`},
			ir.OpaqueAttr{Text: "#foo.simple"},
			ir.OpaqueAttr{Text: `loc("a.mlir":1:2)`})
	case "array":
		arr := ir.ArrayAttr{}
		for range g.intn(0, 3, "array len") {
			arr = append(arr, g.attr(depth+1))
		}
		return arr
	case "dict":
		d := g.dict(depth + 1)
		if d == nil {
			d = ir.DictAttr{}
		}
		return d
	}
	panic("unreachable")
}

// floatBits draws a float of type t as bits: specials, round values, or any
// bit pattern at all (NaN payloads and denormals included).
func (g *gen) floatBits(t *ir.FloatType) uint64 {
	switch pick(g, "float kind", "special", "value", "bits") {
	case "special":
		v := pick(g, "special", 0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 0.1, 1e-40, 65504, 1.5)
		return ir.FloatToBits(v, t)
	case "value":
		return ir.FloatToBits(rapid.Float64().Draw(g.t, "float"), t)
	}
	bits := rapid.Uint64().Draw(g.t, "float bits")
	if t.Width < 64 {
		bits &= 1<<uint(t.Width) - 1
	}
	return bits
}

func (g *gen) dense() ir.Attribute {
	shape := g.shape(false)
	if g.intn(0, 8, "large") == 0 {
		shape = []int64{int64(g.intn(101, 130, "large len"))} // printed as hex
	}
	elem := pick[ir.Type](g, "dense elem", ir.I1, ir.I8, ir.I32, ir.I64, ir.Index, ir.F16, ir.BF16, ir.F32, ir.F64,
		ir.ComplexOf(ir.F32), ir.ComplexOf(ir.I16))
	t := ir.TensorOf(shape, elem)
	_, isComplex := elem.(*ir.ComplexType) // vectors hold no complex numbers
	if g.intn(0, 4, "vector") == 0 && len(shape) > 0 && ir.NumElements(shape) > 0 && !isComplex {
		t2 := ir.VectorOf(shape, elem)
		return g.denseOf(t2)
	}
	return g.denseOf(t)
}

func (g *gen) denseOf(t ir.ShapedType) ir.Attribute {
	scalar := t.ElementType()
	k := int64(1)
	if c, ok := scalar.(*ir.ComplexType); ok {
		scalar, k = c.Elem, 2
	}
	draw := func() uint64 {
		if ft, ok := scalar.(*ir.FloatType); ok {
			return g.floatBits(ft)
		}
		return uint64(ir.TruncInt(rapid.Int64Range(-300, 300).Draw(g.t, "elem"), scalar))
	}
	n := ir.NumElements(t.Shape())
	if n > 0 && g.bool("splat") {
		bits := make([]uint64, k)
		for i := range bits {
			bits[i] = draw()
		}
		return ir.DenseAttr{Type: t, Bits: bits, Splat: true}
	}
	bits := make([]uint64, n*k)
	for i := range bits {
		bits[i] = draw()
	}
	return ir.DenseAttr{Type: t, Bits: bits}
}

func (g *gen) denseArray() ir.Attribute {
	elem := pick[ir.Type](g, "array elem", ir.I1, ir.I8, ir.I16, ir.I32, ir.I64, ir.F32, ir.F64)
	a := ir.DenseArrayAttr{Elem: elem}
	for range g.intn(0, 5, "array len") {
		if ft, ok := elem.(*ir.FloatType); ok {
			a.Floats = append(a.Floats, ir.FloatFromBits(g.floatBits(ft), ft))
		} else {
			a.Values = append(a.Values, ir.TruncInt(rapid.Int64().Draw(g.t, "array int"), elem))
		}
	}
	return a
}

// --- locations ---

func (g *gen) loc(depth int) ir.Location {
	kinds := []string{"unknown", "file", "name"}
	if depth < 2 {
		kinds = append(kinds, "callsite", "fused", "named child")
	}
	switch pick(g, "loc kind", kinds...) {
	case "file":
		return ir.FileLineColLoc{File: pick(g, "file", "a.mlir", "dir/b.mlir", "with \"quote\""), Line: g.intn(0, 100, "line"), Col: g.intn(0, 100, "col")}
	case "name":
		return ir.NameLoc{Name: pick(g, "loc name", "x", "y z")}
	case "named child":
		return ir.NameLoc{Name: "outer", Child: g.loc(depth + 1)}
	case "callsite":
		return ir.CallSiteLoc{Callee: g.loc(depth + 1), Caller: g.loc(depth + 1)}
	case "fused":
		locs := make([]ir.Location, g.intn(1, 3, "fused"))
		for i := range locs {
			locs[i] = g.loc(depth + 1)
		}
		return ir.FusedLoc{Locs: locs}
	}
	return ir.UnknownLoc{}
}
