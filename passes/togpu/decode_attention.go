package togpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
)

// A decoding step's attention: one query a sequence (Lq = 1) against a
// cache of Lk keys of which an i1 mask keeps a prefix (the positions
// written so far). graph-attention-to-flash outlines it as a call of a
// declaration tagged DecodeAttr, which convert-loop-to-gpu replaces by
// one kernel, or two (split-K, "flash decoding") for caches of more than
// 32·decodeMaxWarps keys: each warp takes 32 keys, a block up to
// decodeMaxWarps warps; a warp whose 32 mask bits are all false reads
// nothing of K and V (the cache past the current position costs its mask
// bytes only), the others compute their keys' scores, the softmax's
// running maximum and sum and the product with V, and the block combines
// its warps' into the sequence's output row — or, split, leaves one
// partial (D sums, the maximum, the sum) in a buffer of f32 that a second
// kernel combines. cuBLASLt's batched products read every cached position
// (25 MB a layer at GPT-2's batch 8 and a cache of 1024).
const (
	// DecodeAttr is the dictionary {scale} on the declarations standing
	// for decode-attention kernels.
	DecodeAttr = "strata.decode_attention"
	// MappingDecode is the strata.launch mapping of their kernels.
	MappingDecode = "decode"
)

// decodeMaxWarps is the most warps a block of the scores kernel has (32
// keys each): a cache of up to 1024 keys needs no second kernel. (A
// variable: the tests split smaller caches.)
var decodeMaxWarps int64 = 32

// DecodeAttention is the shape of one decode attention: Batch sequences
// (q's batch dims flattened) of one query against Lk keys and values of
// head dim D in element type Elem, an i1 mask over the keys broadcast
// along the batch dims as MaskStrides say.
type DecodeAttention struct {
	Batch, Lk, D int64
	Elem         ir.Type
	Scale        float64
	// BatchDims are q's batch dims, MaskStrides the mask's element
	// stride along each (0 where the mask broadcasts), MaskLen the
	// mask's element count.
	BatchDims, MaskStrides []int64
	MaskLen                int64
}

// decodeOf returns the decode attention computing the graph.attention op,
// if any (see decodeShape).
func decodeOf(op *ir.Operation) (DecodeAttention, bool) {
	if op.NumOperands() != 4 || op.NumResults() != 1 {
		return DecodeAttention{}, false
	}
	if c, ok := op.Attr("causal").(ir.IntegerAttr); ok && c.Value != 0 {
		return DecodeAttention{}, false
	}
	ts := valueTypes(append(slices.Clone(op.Operands()), op.Result(0)))
	return decodeShape(ts, op.Attr("scale"))
}

// shaped is a ranked tensor or a memref type.
type shaped interface {
	Shape() []int64
	ElementType() ir.Type
}

// decodeShape returns the decode attention of operand and result types ts
// (q, k, v, the mask, the result; tensors or buffers) and scale (nil:
// 1/√D), if they are one: static bf16 or f16 q [..., 1, D], k and v
// [..., Lk, D] with q's batch dims, D a multiple of 8 that divides 256 (8
// to 128), an i1 mask whose last dim is Lk, whose next is 1 and whose
// others are 1 or q's (aligned from the right), and a finite nonzero
// scale.
func decodeShape(ts []ir.Type, scale ir.Attribute) (DecodeAttention, bool) {
	var shapes [5][]int64
	var elems [5]ir.Type
	for i, t := range ts {
		st, ok := t.(shaped)
		if tt, isTensor := t.(*ir.TensorType); !ok || isTensor && !tt.Ranked() || slices.Contains(st.Shape(), ir.Dynamic) {
			return DecodeAttention{}, false
		}
		shapes[i], elems[i] = st.Shape(), st.ElementType()
	}
	q, k, v, m, r := shapes[0], shapes[1], shapes[2], shapes[3], shapes[4]
	elem, rank := elems[0], len(q)
	if (elem != ir.BF16 && elem != ir.F16) || elems[1] != elem || elems[2] != elem || elems[4] != elem || elems[3] != ir.I1 ||
		rank < 2 || len(k) != rank || !slices.Equal(k, v) || !slices.Equal(q, r) {
		return DecodeAttention{}, false
	}
	nb := rank - 2
	a := DecodeAttention{Lk: k[nb], D: q[nb+1], Elem: elem, Scale: 1 / math.Sqrt(float64(q[nb+1])), BatchDims: slices.Clone(q[:nb]), Batch: 1}
	if q[nb] != 1 || !slices.Equal(q[:nb], k[:nb]) || k[nb+1] != a.D || a.Lk < 1 || a.D < 8 || a.D > 128 || a.D%8 != 0 || 32%(a.D/8) != 0 {
		return DecodeAttention{}, false
	}
	if s, ok := scale.(ir.FloatAttr); ok {
		a.Scale = s.Value()
	}
	if a.Scale == 0 || math.IsInf(a.Scale, 0) || math.IsNaN(a.Scale) {
		return DecodeAttention{}, false
	}
	if len(m) < 1 || len(m) > rank || m[len(m)-1] != a.Lk || (len(m) >= 2 && m[len(m)-2] != 1) {
		return DecodeAttention{}, false
	}
	a.MaskLen = 1
	for _, n := range m {
		a.MaskLen *= n
	}
	a.MaskStrides = make([]int64, nb)
	stride := a.Lk
	for d := nb - 1; d >= 0; d-- {
		a.Batch *= q[d]
		md := d - (rank - len(m)) // the mask's dim aligned with q's dim d
		if md < 0 || m[md] == 1 {
			continue
		}
		if m[md] != q[d] {
			return DecodeAttention{}, false
		}
		a.MaskStrides[d] = stride
		stride *= m[md]
	}
	return a, true
}

// warps is the warps of a block of the scores kernel (at least a thread
// per output element: the block's combination), splits its blocks a
// sequence.
func (a DecodeAttention) warps() int64 {
	return max(min(decodeMaxWarps, ceilDivInt(a.Lk, 32)), ceilDivInt(a.D, 32))
}
func (a DecodeAttention) splits() int64 { return ceilDivInt(a.Lk, 32*a.warps()) }

// offsetType is i32 when every offset fits, else index.
func (a DecodeAttention) offsetType() ir.Type {
	if a.Batch*max(a.Lk*a.D, a.splits()*(a.D+2)) >= 1<<31 || a.MaskLen >= 1<<31 {
		return ir.Index
	}
	return ir.I32
}

// partialType is the buffer of the blocks' partials: per sequence and
// block D sums, then the maximum (base 2) and the sum.
func (a DecodeAttention) partialType() *ir.MemRefType {
	return ir.MemRefOf([]int64{a.Batch * a.splits() * (a.D + 2)}, ir.F32)
}

// ScoresArgTypes are the scores kernel's parameters: q, k, v, the mask
// and the output (one block a sequence) or the partials, as 1-D buffers.
func (a DecodeAttention) ScoresArgTypes() []ir.Type {
	kv := ir.MemRefOf([]int64{a.Batch * a.Lk * a.D}, a.Elem)
	out := ir.Type(a.partialType())
	if a.splits() == 1 {
		out = a.outType()
	}
	return []ir.Type{a.outType(), kv, kv, ir.MemRefOf([]int64{a.MaskLen}, ir.I1), out}
}

// outType is q's and the output's 1-D buffer.
func (a DecodeAttention) outType() *ir.MemRefType {
	return ir.MemRefOf([]int64{a.Batch * a.D}, a.Elem)
}

// CombineArgTypes are the combining kernel's parameters: the partials and
// the output.
func (a DecodeAttention) CombineArgTypes() []ir.Type {
	return []ir.Type{a.partialType(), a.outType()}
}

// decodeGen builds one of the kernels' bodies.
type decodeGen struct {
	DecodeAttention
	b   *ir.Builder
	loc ir.Location
	x   ix
}

func (g *decodeGen) f32(b *ir.Builder, v float64) *ir.Value {
	return arith.ConstantFloat(b, g.loc, v, ir.F32)
}

// shuffle is gpu.shuffle of v in mode by off (an i32 value) over the warp.
func (g *decodeGen) shuffle(b *ir.Builder, mode string, v, off *ir.Value) *ir.Value {
	o, _ := gpu.Shuffle(b, g.loc, mode, v, off, arith.ConstantInt(b, g.loc, 32, ir.I32))
	return o
}

// xorReduce combines v with op over the lanes whose indices differ in
// the bits from..to-1 (powers of two).
func (g *decodeGen) xorReduce(b *ir.Builder, op string, v *ir.Value, from, to int64) *ir.Value {
	for off := from; off < to; off *= 2 {
		v = arith.Binary(b, op, g.loc, v, g.shuffle(b, "xor", v, arith.ConstantInt(b, g.loc, off, ir.I32)))
	}
	return v
}

// maskBase is the offset in the mask of sequence z's row.
func (g *decodeGen) maskBase(x ix, z *ir.Value) *ir.Value {
	base := x.c(0)
	rest := z
	for d := len(g.BatchDims) - 1; d >= 0; d-- {
		if slices.ContainsFunc(g.MaskStrides[:d+1], func(s int64) bool { return s != 0 }) {
			i := x.rem(rest, x.c(g.BatchDims[d]))
			if s := g.MaskStrides[d]; s != 0 {
				base = x.add(base, x.mulc(i, s))
			}
			rest = x.div(rest, x.c(g.BatchDims[d]))
		}
	}
	return base
}

// load8 loads the 8 elements of buf at base (an offset that is a
// multiple of 8) as f32: adjacent loads, one 16-byte access.
func (g *decodeGen) load8(b *ir.Builder, buf, base *ir.Value) []*ir.Value {
	at := g.x.at(b).index(base)
	raw := make([]*ir.Value, 8)
	for e := range raw {
		raw[e] = loop.Load(b, g.loc, buf, indexAdd(b, g.loc, at, int64(e)))
	}
	out := make([]*ir.Value, 8)
	for e, r := range raw {
		out[e] = arith.NewCast(b, arith.OpExtF, g.loc, r, ir.F32)
	}
	return out
}

// ScoresKernel inserts the scores kernel gpu.func name at b's insertion
// point (inside a gpu.module) and returns it.
func (a DecodeAttention) ScoresKernel(b *ir.Builder, loc ir.Location, name string) *ir.Operation {
	W := a.warps()
	kernel, entry := gpu.NewKernel(b, loc, name, a.ScoresArgTypes())
	kernel.SetAttr(LaunchAttr, decodeLaunch(32*W))
	// (ptxas then fits the registers to the block: 64 a thread at 1024.)
	kernel.SetAttr("nvvm.maxntid", ir.Int(32*W, ir.I64))
	kb := ir.NewBuilder(b.Ctx)
	kb.SetInsertionPointToEnd(entry)
	g := &decodeGen{DecodeAttention: a, b: kb, loc: loc, x: ix{kb, loc, a.offsetType()}}
	x := g.x
	args := entry.Arguments()
	q, k, v, mask, part := args[0], args[1], args[2], args[3], args[4]
	wm := gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(W, ir.F32))
	wl := gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(W, ir.F32))
	wacc := gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(W*a.D, ir.F32))
	S, lpr := a.splits(), a.D/8 // lanes a key row (8 elements each)
	rows := 32 / lpr            // key rows a warp-wide access
	tid, bid := x.from(gpu.ThreadID(kb, loc, "x")), x.from(gpu.BlockID(kb, loc, "x"))
	z, s := x.div(bid, x.c(S)), x.rem(bid, x.c(S))
	warp, lane := x.shr(tid, 5), x.and(tid, 31)
	grp, col := x.div(lane, x.c(lpr)), x.rem(lane, x.c(lpr))
	key0 := x.mulc(x.add(x.mulc(s, W), warp), 32)
	// The lane's key's mask bit (keys past Lk are not kept), then
	// whether the warp keeps any of its 32 keys.
	kl := x.add(key0, lane)
	in := x.lt(kl, x.c(a.Lk))
	at := arith.NewSelect(kb, loc, in, x.add(g.maskBase(x, z), kl), x.c(0))
	kept := x.both(in, loop.Load(kb, loc, mask, x.index(at)))
	keptI := arith.NewCast(kb, arith.OpExtUI, loc, kept, ir.I32)
	anyKept := arith.NewCmpI(kb, loc, arith.CmpINE, g.xorReduce(kb, arith.OpOrI, keptI, 1, 32), arith.ConstantInt(kb, loc, 0, ir.I32))
	results := make([]ir.Type, 10)
	for i := range results {
		results[i] = ir.F32
	}
	// log₂e folds into the scale: the softmax runs in base 2.
	scale := a.Scale * math.Log2E
	tile := loop.If(kb, loc, anyKept, results[:2+8], func(b *ir.Builder) []*ir.Value {
		x := x.at(b)
		qv := g.load8(b, q, x.add(x.mulc(z, a.D), x.mulc(col, 8)))
		last := x.c(a.Lk - 1)
		scores := make([]*ir.Value, lpr)
		vs := make([][]*ir.Value, lpr)
		for i := range lpr {
			local := x.addc(grp, i*rows) // the key's index in the warp's 32
			row := x.add(key0, local)
			if a.Lk%32 != 0 {
				row = arith.NewSelect(b, loc, x.lt(row, x.c(a.Lk)), row, last)
			}
			base := x.add(x.mulc(x.add(x.mulc(z, a.Lk), row), a.D), x.mulc(col, 8))
			kv := g.load8(b, k, base)
			vs[i] = g.load8(b, v, base)
			dot := arith.Binary(b, arith.OpMulF, loc, qv[0], kv[0])
			for e := 1; e < 8; e++ {
				dot = mathOp(b, loc, mathd.OpFMA, qv[e], kv[e], dot)
			}
			dot = g.xorReduce(b, arith.OpAddF, dot, 1, lpr)
			sc := arith.Binary(b, arith.OpMulF, loc, dot, g.f32(b, scale))
			keep := arith.NewCmpI(b, loc, arith.CmpINE, g.shuffle(b, "idx", keptI, x.i32(local)), arith.ConstantInt(b, loc, 0, ir.I32))
			scores[i] = arith.NewSelect(b, loc, keep, sc, g.f32(b, math.Inf(-1)))
		}
		m := tree(b, loc, arith.OpMaxNumF, slices.Clone(scores))
		m = g.xorReduce(b, arith.OpMaxNumF, m, lpr, 32)
		ps := make([]*ir.Value, lpr)
		for i, sc := range scores {
			ps[i] = approxExp2(b, loc, arith.Binary(b, arith.OpSubF, loc, sc, m))
		}
		l := g.xorReduce(b, arith.OpAddF, tree(b, loc, arith.OpAddF, slices.Clone(ps)), lpr, 32)
		out := []*ir.Value{m, l}
		for e := range 8 {
			acc := arith.Binary(b, arith.OpMulF, loc, ps[0], vs[0][e])
			for i := 1; i < int(lpr); i++ {
				acc = mathOp(b, loc, mathd.OpFMA, ps[i], vs[i][e], acc)
			}
			out = append(out, g.xorReduce(b, arith.OpAddF, acc, lpr, 32))
		}
		return out
	}, func(b *ir.Builder) []*ir.Value {
		out := []*ir.Value{g.f32(b, math.Inf(-1))}
		for range 9 {
			out = append(out, g.f32(b, 0))
		}
		return out
	})
	m, l, acc := tile.Result(0), tile.Result(1), tile.Results()[2:]
	// The warps' partials through workgroup memory (a warp's lanes of
	// group 0 hold its D sums, every lane its maximum and sum), then the
	// block's from its first D threads.
	loop.If(kb, loc, x.lt(grp, x.c(1)), nil, func(b *ir.Builder) []*ir.Value {
		x := x.at(b)
		at := x.index(x.add(x.mulc(warp, a.D), x.mulc(col, 8)))
		for e, v := range acc {
			loop.Store(b, loc, v, wacc, indexAdd(b, loc, at, int64(e)))
		}
		loop.If(b, loc, x.lt(lane, x.c(1)), nil, func(b *ir.Builder) []*ir.Value {
			w := x.at(b).index(warp)
			loop.Store(b, loc, m, wm, w)
			loop.Store(b, loc, l, wl, w)
			return nil
		}, nil)
		return nil
	}, nil)
	gpu.Barrier(kb, loc)
	loop.If(kb, loc, x.lt(tid, x.c(a.D)), nil, func(b *ir.Builder) []*ir.Value {
		x := x.at(b)
		ms, ls := make([]*ir.Value, W), make([]*ir.Value, W)
		for w := range int64(W) {
			ms[w] = loop.Load(b, loc, wm, arith.ConstantIndex(b, loc, w))
			ls[w] = loop.Load(b, loc, wl, arith.ConstantIndex(b, loc, w))
		}
		mx := tree(b, loc, arith.OpMaxNumF, slices.Clone(ms))
		var sum, dot *ir.Value
		t := x.index(tid)
		for w := range int64(W) {
			// (A warp that kept nothing has sum 0 and maximum −∞: its
			// weight would be NaN once the block's maximum is −∞ too.)
			has := arith.NewCmpF(b, loc, arith.CmpFOGT, ls[w], g.f32(b, 0))
			wt := arith.NewSelect(b, loc, has, approxExp2(b, loc, arith.Binary(b, arith.OpSubF, loc, ms[w], mx)), g.f32(b, 0))
			lw := arith.Binary(b, arith.OpMulF, loc, ls[w], wt)
			aw := arith.Binary(b, arith.OpMulF, loc, loop.Load(b, loc, wacc, indexAdd(b, loc, t, w*a.D)), wt)
			aw = arith.NewSelect(b, loc, has, aw, g.f32(b, 0))
			if sum == nil {
				sum, dot = lw, aw
				continue
			}
			sum, dot = arith.Binary(b, arith.OpAddF, loc, sum, lw), arith.Binary(b, arith.OpAddF, loc, dot, aw)
		}
		if S == 1 {
			o := arith.Binary(b, arith.OpDivF, loc, dot, sum)
			loop.Store(b, loc, arith.NewCast(b, arith.OpTruncF, loc, o, a.Elem), part, x.index(x.add(x.mulc(z, a.D), tid)))
			return nil
		}
		pb := x.mulc(x.add(x.mulc(z, S), s), a.D+2)
		loop.Store(b, loc, dot, part, x.index(x.add(pb, tid)))
		loop.If(b, loc, x.lt(tid, x.c(1)), nil, func(b *ir.Builder) []*ir.Value {
			at := x.at(b).index(pb)
			loop.Store(b, loc, mx, part, indexAdd(b, loc, at, a.D))
			loop.Store(b, loc, sum, part, indexAdd(b, loc, at, a.D+1))
			return nil
		}, nil)
		return nil
	}, nil)
	gpu.Return(kb, loc)
	return kernel
}

// CombineKernel inserts the combining kernel gpu.func name (a block of D
// threads a sequence) at b's insertion point and returns it.
func (a DecodeAttention) CombineKernel(b *ir.Builder, loc ir.Location, name string) *ir.Operation {
	kernel, entry := gpu.NewKernel(b, loc, name, a.CombineArgTypes())
	kernel.SetAttr(LaunchAttr, decodeLaunch(a.D))
	kb := ir.NewBuilder(b.Ctx)
	kb.SetInsertionPointToEnd(entry)
	g := &decodeGen{DecodeAttention: a, b: kb, loc: loc, x: ix{kb, loc, a.offsetType()}}
	x := g.x
	args := entry.Arguments()
	part, out := args[0], args[1]
	S := a.splits()
	tid, z := x.from(gpu.ThreadID(kb, loc, "x")), x.from(gpu.BlockID(kb, loc, "x"))
	zb := x.mulc(z, S*(a.D+2))
	c := func(b *ir.Builder, n int64) *ir.Value { return arith.ConstantIndex(b, loc, n) }
	// at is the partial of block s (an index) at offset off.
	at := func(b *ir.Builder, s *ir.Value, off *ir.Value) *ir.Value {
		x := x.at(b)
		return x.index(x.add(x.add(zb, x.mulc(x.from(s), a.D+2)), off))
	}
	mx := loop.For(kb, loc, c(kb, 0), c(kb, S), c(kb, 1), []*ir.Value{g.f32(kb, math.Inf(-1))}, func(b *ir.Builder, s *ir.Value, it []*ir.Value) []*ir.Value {
		return []*ir.Value{arith.Binary(b, arith.OpMaxNumF, loc, it[0], loop.Load(b, loc, part, at(b, s, x.at(b).c(a.D))))}
	}).Result(0)
	sums := loop.For(kb, loc, c(kb, 0), c(kb, S), c(kb, 1), []*ir.Value{g.f32(kb, 0), g.f32(kb, 0)}, func(b *ir.Builder, s *ir.Value, it []*ir.Value) []*ir.Value {
		xb := x.at(b)
		l := loop.Load(b, loc, part, at(b, s, xb.c(a.D+1)))
		has := arith.NewCmpF(b, loc, arith.CmpFOGT, l, g.f32(b, 0))
		w := approxExp2(b, loc, arith.Binary(b, arith.OpSubF, loc, loop.Load(b, loc, part, at(b, s, xb.c(a.D))), mx))
		w = arith.NewSelect(b, loc, has, w, g.f32(b, 0))
		acc := arith.NewSelect(b, loc, has, loop.Load(b, loc, part, at(b, s, tid)), g.f32(b, 0))
		return []*ir.Value{
			mathOp(b, loc, mathd.OpFMA, l, w, it[0]),
			mathOp(b, loc, mathd.OpFMA, acc, w, it[1]),
		}
	})
	o := arith.Binary(kb, arith.OpDivF, loc, sums.Result(1), sums.Result(0))
	loop.Store(kb, loc, arith.NewCast(kb, arith.OpTruncF, loc, o, a.Elem), out, x.index(x.add(x.mulc(z, a.D), tid)))
	gpu.Return(kb, loc)
	return kernel
}

// decodeLaunch is the strata.launch dictionary of a decode kernel of
// block threads.
func decodeLaunch(block int64) ir.DictAttr {
	return ir.Dict(
		ir.NamedAttr{Name: "block", Value: ir.Int(block, ir.I64)},
		ir.NamedAttr{Name: "vector", Value: ir.Int(1, ir.I64)},
		ir.NamedAttr{Name: "rows_per_block", Value: ir.Int(1, ir.I64)},
		ir.NamedAttr{Name: "mapping", Value: ir.Str(MappingDecode)},
	)
}

// Launch inserts at b the launches of the kernels (references scores
// and, split, combine) on q, k, v, mask (1-D buffers of ScoresArgTypes),
// part (split: a buffer of the partials, else nil) and out.
func (a DecodeAttention) Launch(b *ir.Builder, loc ir.Location, scores, combine ir.SymbolRefAttr, q, k, v, mask, part, out *ir.Value) {
	c := func(n int64) *ir.Value { return arith.ConstantIndex(b, loc, n) }
	block := [3]*ir.Value{c(32 * a.warps()), c(1), c(1)}
	if a.splits() == 1 {
		gpu.LaunchFunc(b, loc, scores, [3]*ir.Value{c(a.Batch), c(1), c(1)}, block, []*ir.Value{q, k, v, mask, out}, nil)
		return
	}
	gpu.LaunchFunc(b, loc, scores, [3]*ir.Value{c(a.Batch * a.splits()), c(1), c(1)}, block, []*ir.Value{q, k, v, mask, part}, nil)
	gpu.LaunchFunc(b, loc, combine, [3]*ir.Value{c(a.Batch), c(1), c(1)}, [3]*ir.Value{c(a.D), c(1), c(1)}, []*ir.Value{part, out}, nil)
}

// outlineDecode replaces the graph.attention op (which decodeOf takes) by
// a call of a new declaration before fn tagged DecodeAttr.
func outlineDecode(b *ir.Builder, module, fn, op *ir.Operation, a DecodeAttention) {
	b.SetInsertionPointBefore(fn)
	name := uniqueSymbol(module, symName(fn)+"_decode_attention")
	outs := []ir.Type{op.Result(0).Type()}
	decl := funcs.NewExternalFunc(b, name, ir.FunctionOf(valueTypes(op.Operands()), outs), op.Loc())
	decl.SetAttr(DecodeAttr, ir.Dict(ir.NamedAttr{Name: "scale", Value: ir.Float(a.Scale, ir.F64)}))
	b.SetInsertionPointBefore(op)
	call := funcs.Call(b, op.Loc(), name, outs, op.Operands()...)
	op.Result(0).ReplaceAllUsesWith(call.Result(0))
	op.Erase()
}

// lowerDecodeCall replaces call (q, k, v, mask on buffers) by the launches
// of the kernels, named name+"_scores" and name+"_combine" in gmod.
func lowerDecodeCall(b *ir.Builder, module, gmod, call *ir.Operation, name string) error {
	loc := call.Loc()
	callee := ir.LookupSymbol(module, call.Attr(funcs.CalleeAttr).(ir.SymbolRefAttr))
	spec, _ := callee.Attr(DecodeAttr).(ir.DictAttr)
	a, ok := decodeShape(valueTypes(append(slices.Clone(call.Operands()), call.Result(0))), spec.Get("scale"))
	if !ok {
		return ir.Errorf(loc, "%s: decode attention call on %s, %s, %s, %s: not a decode attention's buffers", PassName,
			call.Operand(0).Type(), call.Operand(1).Type(), call.Operand(2).Type(), call.Operand(3).Type())
	}
	gb := ir.NewBuilder(b.Ctx)
	gb.SetInsertionPointBefore(gmod.Region(0).Front().Last())
	a.ScoresKernel(gb, loc, name+"_scores")
	b.SetInsertionPointBefore(call)
	out := loop.Alloc(b, loc, call.Result(0).Type().(*ir.MemRefType))
	var part *ir.Value
	if a.splits() > 1 {
		a.CombineKernel(gb, loc, name+"_combine")
		part = loop.Alloc(b, loc, a.partialType())
	}
	st := a.ScoresArgTypes()
	args := flatViews(b, loc, append(slices.Clone(call.Operands()), out), append(st[:4:4], a.outType()))
	ref := func(k string) ir.SymbolRefAttr { return gpu.KernelRef(symName(gmod), k) }
	a.Launch(b, loc, ref(name+"_scores"), ref(name+"_combine"), args[0], args[1], args[2], args[3], part, args[4])
	call.Result(0).ReplaceAllUsesWith(out)
	call.Erase()
	return nil
}

// String describes the attention (for errors and logs).
func (a DecodeAttention) String() string {
	return fmt.Sprintf("decode attention %d×1×%d against %d keys (%s)", a.Batch, a.D, a.Lk, a.Elem)
}
