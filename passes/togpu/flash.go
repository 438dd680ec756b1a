package togpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// Flash-attention kernel (issue 12): softmax(q·kᵀ·scale)·v for one graph
// attention in one kernel, without the score matrix in memory. A block of
// flashWarps warps takes flashRows query rows of one (batch, head); each
// warp owns 16 of them. The block walks the keys in tiles of flashKeys,
// K and V tiles double-buffered in workgroup memory by cp.async. Per tile
// each warp computes its 16 × flashKeys scores with mma.sync into f32
// registers, rounds them to the element type (the graph's product does),
// scales, masks (causal, and the keys past the end), and runs the online
// softmax: the running row maximum m and the row sum l, both f32, and the
// output accumulator rescaled by exp(m_old − m_new). The probabilities,
// rounded to the element type once, are the A fragments of O += P·V
// straight from the score registers (the m16n8 accumulator layout of two
// n8 tiles is the m16k16 A layout), so they never leave registers. At the
// end O / l is rounded to the element type and stored.
//
// The result differs from the decomposed graph only in rounding: the
// graph rounds the normalised probability exp(s − m)/l once, the kernel
// the unnormalised exp(s − m_running) once and divides by l after the
// product, and the sums run in another order.
const (
	flashRows    = 64 // query rows per block (16 per warp)
	flashKeys    = 64 // keys per tile
	flashWarps   = flashRows / 16
	flashThreads = 32 * flashWarps
	flashPad     = 8 // elements after each workgroup row: ldmatrix's 8 rows hit different banks
)

// MappingFlash is the strata.launch mapping of flash-attention kernels
// (fixed parameters: autotuning leaves them alone).
const MappingFlash = "flash"

// Flash is the shape of one flash-attention kernel: Batch independent
// attentions (the batch and head dims flattened) of Lq query rows against
// Lk keys, head dim D for q, k and v, in element type Elem.
type Flash struct {
	Batch, Lq, Lk, D int64
	// Causal masks key j for query i when j > i (top-left aligned).
	Causal bool
	// Scale multiplies the scores (1/√D by default in graph.attention).
	Scale float64
	// Elem is bf16 or f16.
	Elem ir.Type
}

// Check reports why the kernel cannot compute f, or nil.
func (f Flash) Check() error {
	switch {
	case f.Elem != ir.BF16 && f.Elem != ir.F16:
		return fmt.Errorf("flash attention: element type %s, want bf16 or f16", f.Elem)
	case f.D <= 0 || f.D%16 != 0 || f.D > 64:
		// 64 is the largest head dim whose tiles fit the 48 KB of static
		// workgroup memory (Q, two K and two V stages).
		return fmt.Errorf("flash attention: head dim %d, want a multiple of 16 up to 64", f.D)
	case f.Batch <= 0 || f.Lq <= 0 || f.Lk <= 0:
		return fmt.Errorf("flash attention: empty shape (batch %d, %d queries, %d keys)", f.Batch, f.Lq, f.Lk)
	}
	return nil
}

// Grid is the number of blocks of the launch (of FlashThreads threads).
func (f Flash) Grid() int64 { return f.Batch * ceilDivInt(f.Lq, flashRows) }

// FlashThreads is the block size of flash-attention kernels.
const FlashThreads = flashThreads

func ceilDivInt(a, b int64) int64 { return (a + b - 1) / b }

// memref is the 1-D global buffer type of n elements.
func (f Flash) memref(n int64) ir.Type { return ir.MemRefOf([]int64{n}, f.Elem) }

// ArgTypes are the kernel's arguments: q [Batch·Lq·D], k and v [Batch·Lk·D]
// and the output [Batch·Lq·D], row-major 1-D views.
func (f Flash) ArgTypes() []ir.Type {
	q, kv := f.memref(f.Batch*f.Lq*f.D), f.memref(f.Batch*f.Lk*f.D)
	return []ir.Type{q, kv, kv, q}
}

// Kernel inserts the kernel gpu.func name at b's insertion point (inside
// a gpu.module) and returns it.
func (f Flash) Kernel(b *ir.Builder, loc ir.Location, name string) (*ir.Operation, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	kernel, entry := gpu.NewKernel(b, loc, name, f.ArgTypes())
	kernel.SetAttr(LaunchAttr, ir.Dict(
		ir.NamedAttr{Name: "block", Value: ir.Int(flashThreads, ir.I64)},
		ir.NamedAttr{Name: "vector", Value: ir.Int(1, ir.I64)},
		ir.NamedAttr{Name: "rows_per_block", Value: ir.Int(flashRows, ir.I64)},
		ir.NamedAttr{Name: "mapping", Value: ir.Str(MappingFlash)},
	))
	kb := ir.NewBuilder(b.Ctx)
	kb.SetInsertionPointToEnd(entry)
	// Offsets in i32 when every one fits (fewer registers and integer
	// instructions than 64-bit index arithmetic).
	width := ir.Type(ir.I32)
	if f.Batch*max(f.Lq, f.Lk)*f.D+(flashRows+flashKeys)*f.D >= 1<<31 {
		width = ir.Index
	}
	g := &flashGen{Flash: f, b: kb, loc: loc, x: ix{kb, loc, width}}
	args := entry.Arguments()
	g.q, g.k, g.v, g.o = args[0], args[1], args[2], args[3]
	ld := f.D + flashPad
	g.sq = gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(flashRows*ld, f.Elem))
	g.sk = gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(2*flashKeys*ld, f.Elem))
	g.sv = gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(2*flashKeys*ld, f.Elem))
	g.emit()
	gpu.Return(kb, loc)
	return kernel, nil
}

// Launch inserts the launch of the kernel ref on the 1-D buffers q, k, v
// and out (of ArgTypes) at b.
func (f Flash) Launch(b *ir.Builder, loc ir.Location, ref ir.SymbolRefAttr, q, k, v, out *ir.Value) *ir.Operation {
	one := arith.ConstantIndex(b, loc, 1)
	grid := [3]*ir.Value{arith.ConstantIndex(b, loc, f.Grid()), one, one}
	block := [3]*ir.Value{arith.ConstantIndex(b, loc, flashThreads), one, one}
	return gpu.LaunchFunc(b, loc, ref, grid, block, []*ir.Value{q, k, v, out}, nil)
}

// flashGen builds one kernel body.
type flashGen struct {
	Flash
	b          *ir.Builder
	loc        ir.Location
	x          ix
	q, k, v, o *ir.Value // global 1-D buffers
	sq, sk, sv *ir.Value // workgroup tiles
}

func (g *flashGen) f32(v float64) *ir.Value { return arith.ConstantFloat(g.b, g.loc, v, ir.F32) }

// fop is a binary f32 op at b.
func fop(b *ir.Builder, loc ir.Location, name string, x, y *ir.Value) *ir.Value {
	return arith.Binary(b, name, loc, x, y)
}

// exp is math.exp of the f32 x.
func exp(b *ir.Builder, loc ir.Location, x *ir.Value) *ir.Value {
	return b.Op("math.exp", loc, []*ir.Value{x}, []ir.Type{ir.F32},
		ir.NamedAttr{Name: arith.FastMathAttr, Value: arith.FastMathNone}).Result(0)
}

// copyTile issues this thread's cp.async copies of rows rows of D
// elements from global offset src (row r at src + r·D) to the workgroup
// tile dst at offset at (row r at at + r·(D+pad)); rows at or past valid
// (an index) are zero filled.
func (g *flashGen) copyTile(b *ir.Builder, dst, at, src, first, valid, tid *ir.Value, rows int64) {
	x := g.x.at(b)
	chunks := g.D / 8 // 16-byte chunks per row
	ld := g.D + flashPad
	full, none := arith.ConstantInt(b, g.loc, 16, ir.I32), arith.ConstantInt(b, g.loc, 0, ir.I32)
	for i := range rows * chunks / flashThreads {
		c := x.addc(tid, i*flashThreads)
		r, col := x.div(c, x.c(chunks)), x.rem(c, x.c(chunks))
		ok := x.lt(x.add(first, r), valid)
		s := x.add(src, x.add(x.mulc(r, g.D), x.mulc(col, 8)))
		s = arith.NewSelect(b, g.loc, ok, s, x.c(0))
		n := arith.NewSelect(b, g.loc, ok, full, none)
		d := x.add(at, x.add(x.mulc(r, ld), x.mulc(col, 8)))
		gpu.CpAsync(b, g.loc, dst, x.index(d), g.gmemOf(dst), x.index(s), n, 16)
	}
}

// gmemOf maps a workgroup tile to the global buffer it is filled from.
func (g *flashGen) gmemOf(smem *ir.Value) *ir.Value {
	switch smem {
	case g.sq:
		return g.q
	case g.sk:
		return g.k
	}
	return g.v
}

// emit builds the kernel body.
func (g *flashGen) emit() {
	b, loc, x := g.b, g.loc, g.x
	ld := g.D + flashPad
	tilesM := ceilDivInt(g.Lq, flashRows)
	numK := ceilDivInt(g.Lk, flashKeys)
	tid, bid := x.from(gpu.ThreadID(b, loc, "x")), x.from(gpu.BlockID(b, loc, "x"))
	z, mt := x.div(bid, x.c(tilesM)), x.rem(bid, x.c(tilesM))
	rowBase := x.mulc(mt, flashRows)
	qBase := x.add(x.mulc(z, g.Lq*g.D), x.mulc(rowBase, g.D))
	kvBase := x.mulc(z, g.Lk*g.D)
	lq, lk := x.c(g.Lq), x.c(g.Lk)
	lane, warp := x.and(tid, 31), x.shr(tid, 5)
	gr, t2 := x.shr(lane, 2), x.mulc(x.and(lane, 3), 2)
	q8, r8 := x.shr(lane, 3), x.and(lane, 7) // ldmatrix: matrix and row of this lane
	lo, hi := x.and(q8, 1), x.shr(q8, 1)

	// The number of key tiles: causal blocks stop at their last row.
	tiles := x.c(numK)
	if g.Causal {
		last := x.div(x.addc(rowBase, flashRows+flashKeys-1), x.c(flashKeys))
		tiles = x.op("arith.minui", last, tiles)
	}
	// load issues key tile kt's K and V into stage kt % 2.
	load := func(b *ir.Builder, kt *ir.Value) {
		x := x.at(b)
		first := x.mulc(kt, flashKeys)
		at := x.mulc(x.and(kt, 1), flashKeys*ld)
		src := x.add(kvBase, x.mulc(first, g.D))
		g.copyTile(b, g.sk, at, src, first, lk, tid, flashKeys)
		g.copyTile(b, g.sv, at, src, first, lk, tid, flashKeys)
	}
	g.copyTile(b, g.sq, x.c(0), qBase, rowBase, lq, tid, flashRows)
	load(b, x.c(0))
	gpu.CpAsyncCommit(b, loc)
	gpu.CpAsyncWait(b, loc, 0)
	gpu.Barrier(b, loc)

	// The warp's Q fragments, one m16k16 A per 16 of D: matrix q8 of
	// ldmatrix.x4 is rows 8·(q8%2)…, columns 8·(q8/2)….
	qRow := x.add(x.mulc(warp, 16), x.add(x.mulc(lo, 8), r8))
	qOff := x.add(x.mulc(qRow, ld), x.mulc(hi, 8))
	qf := make([][]*ir.Value, g.D/16)
	for ks := range qf {
		qf[ks] = gpu.LdMatrix(b, loc, g.sq, x.index(x.addc(qOff, int64(ks)*16)), 4, false)
	}
	// K's B fragments (keys × D stored as K is): matrix q8 is keys
	// 8·(q8/2)…, columns 8·(q8%2)…; V's (keys × D, read transposed):
	// keys 8·(q8%2)…, columns 8·(q8/2)….
	kOff := x.add(x.mulc(x.add(x.mulc(hi, 8), r8), ld), x.mulc(lo, 8))
	vOff := x.add(x.mulc(x.add(x.mulc(lo, 8), r8), ld), x.mulc(hi, 8))
	// This lane's two rows (g and g+8 of the warp's 16).
	row0 := x.add(rowBase, x.add(x.mulc(warp, 16), gr))
	rows := [2]*ir.Value{row0, x.addc(row0, 8)}

	nO := int(g.D / 8) // n8 tiles of O
	negInf := g.f32(math.Inf(-1))
	inits := make([]*ir.Value, 0, 4*nO+4)
	for range 4 * nO {
		inits = append(inits, g.f32(0))
	}
	inits = append(inits, negInf, negInf, g.f32(0), g.f32(0)) // m, l per row
	one := arith.ConstantIndex(b, loc, 1)
	kl := loop.For(b, loc, arith.ConstantIndex(b, loc, 0), x.index(tiles), one, inits, func(b *ir.Builder, iv *ir.Value, it []*ir.Value) []*ir.Value {
		x := x.at(b)
		kt := x.from(iv)
		next := x.addc(kt, 1)
		loop.If(b, loc, x.lt(next, tiles), nil, func(b *ir.Builder) []*ir.Value {
			load(b, next)
			return nil
		}, nil)
		gpu.CpAsyncCommit(b, loc)
		gpu.CpAsyncWait(b, loc, 1)
		gpu.Barrier(b, loc)
		at := x.mulc(x.and(kt, 1), flashKeys*ld)
		s := g.scores(b, qf, x.add(at, kOff))
		g.mask(b, s, x.mulc(kt, flashKeys), t2, rows)
		o, m, l := it[:4*nO], it[4*nO:4*nO+2], it[4*nO+2:]
		out := g.softmaxStep(b, s, o, m, l)
		g.product(b, s, out[:4*nO], x.add(at, vOff))
		gpu.Barrier(b, loc) // the stage is refilled by the next iteration
		return out
	})
	gpu.CpAsyncWait(b, loc, 0)
	g.store(kl, nO, t2, rows)
}

// scores returns S = Q·Kᵀ for the warp's 16 rows and the tile's keys:
// s[j][r] is the m16n8 accumulator value r of key tile j.
func (g *flashGen) scores(b *ir.Builder, qf [][]*ir.Value, kAt *ir.Value) [][]*ir.Value {
	x := g.x.at(b)
	ld := g.D + flashPad
	zero := arith.ConstantFloat(b, g.loc, 0, ir.F32)
	s := make([][]*ir.Value, flashKeys/8)
	for j := range s {
		s[j] = []*ir.Value{zero, zero, zero, zero}
	}
	for ks := range qf {
		for np := range int64(flashKeys / 16) {
			r := gpu.LdMatrix(b, g.loc, g.sk, x.index(x.addc(kAt, np*16*ld+int64(ks)*16)), 4, false)
			// (Copies: mask and softmaxStep replace the values in place.)
			s[2*np] = slices.Clone(gpu.MMASync(b, g.loc, g.Elem, qf[ks], r[:2], s[2*np]))
			s[2*np+1] = slices.Clone(gpu.MMASync(b, g.loc, g.Elem, qf[ks], r[2:], s[2*np+1]))
		}
	}
	return s
}

// mask rounds each score to the element type (the graph's q·kᵀ is in
// it), scales it in f32 and replaces masked ones by −inf: keys past Lk
// and, when causal, keys after the row. Value r of n8 tile j is row
// rows[r/2], key first + 8j + t2 + r%2.
func (g *flashGen) mask(b *ir.Builder, s [][]*ir.Value, first, t2 *ir.Value, rows [2]*ir.Value) {
	x := g.x.at(b)
	loc := g.loc
	scale := arith.ConstantFloat(b, loc, float64(float32(g.Scale)), ir.F32)
	negInf := arith.ConstantFloat(b, loc, math.Inf(-1), ir.F32)
	keyTail := g.Lk%flashKeys != 0
	base := x.add(first, t2)
	for j := range s {
		for r := range 4 {
			v := arith.NewCast(b, "arith.truncf", loc, s[j][r], g.Elem)
			v = arith.NewCast(b, "arith.extf", loc, v, ir.F32)
			v = fop(b, loc, "arith.mulf", v, scale)
			key := x.addc(base, int64(8*j+r%2))
			var masked *ir.Value
			if keyTail {
				masked = arith.NewCmpI(b, loc, arith.CmpIUGE, key, x.c(g.Lk))
			}
			if g.Causal {
				after := arith.NewCmpI(b, loc, arith.CmpIUGT, key, rows[r/2])
				if masked == nil {
					masked = after
				} else {
					masked = arith.Binary(b, "arith.ori", loc, masked, after)
				}
			}
			if masked != nil {
				v = arith.NewSelect(b, loc, masked, negInf, v)
			}
			s[j][r] = v
		}
	}
}

// quadReduce combines v over the 4 lanes that share a row (lane bits 0
// and 1) with op.
func (g *flashGen) quadReduce(b *ir.Builder, op string, v *ir.Value) *ir.Value {
	width := arith.ConstantInt(b, g.loc, 32, ir.I32)
	for _, off := range []int64{1, 2} {
		o, _ := gpu.Shuffle(b, g.loc, "xor", v, arith.ConstantInt(b, g.loc, off, ir.I32), width)
		v = fop(b, g.loc, op, v, o)
	}
	return v
}

// softmaxStep updates the running maxima m and (this lane's partial)
// sums l with the tile's scores, replaces s by exp(s − m_new) and
// returns the rescaled accumulators followed by the new m and l.
func (g *flashGen) softmaxStep(b *ir.Builder, s [][]*ir.Value, o, m, l []*ir.Value) []*ir.Value {
	loc := g.loc
	var mNew, alpha, lNew [2]*ir.Value
	for h := range 2 {
		mx := m[h]
		for j := range s {
			for c := range 2 {
				mx = fop(b, loc, "arith.maximumf", mx, s[j][2*h+c])
			}
		}
		// (Lanes of a row all hold m[h], so the reduction may include it.)
		mNew[h] = g.quadReduce(b, "arith.maximumf", mx)
		// m_old = −inf only before the first tile, whose key 0 is never
		// masked: m_new is finite and alpha is exp(−inf) = 0.
		alpha[h] = exp(b, loc, fop(b, loc, "arith.subf", m[h], mNew[h]))
		lNew[h] = fop(b, loc, "arith.mulf", l[h], alpha[h])
	}
	for j := range s {
		for r := range 4 {
			h := r / 2
			p := exp(b, loc, fop(b, loc, "arith.subf", s[j][r], mNew[h]))
			s[j][r] = p
			lNew[h] = fop(b, loc, "arith.addf", lNew[h], p)
		}
	}
	out := make([]*ir.Value, 0, len(o)+4)
	for i, v := range o {
		out = append(out, fop(b, loc, "arith.mulf", v, alpha[(i%4)/2]))
	}
	return append(out, mNew[0], mNew[1], lNew[0], lNew[1])
}

// pack rounds two f32 to the element type and packs them in an i32, x in
// the lower half (a fragment register).
func (g *flashGen) pack(b *ir.Builder, x, y *ir.Value) *ir.Value {
	half := func(v *ir.Value) *ir.Value {
		v = arith.NewCast(b, "arith.truncf", g.loc, v, g.Elem)
		v = arith.NewCast(b, "arith.bitcast", g.loc, v, ir.I16)
		return arith.NewCast(b, "arith.extui", g.loc, v, ir.I32)
	}
	hi := arith.Binary(b, "arith.shli", g.loc, half(y), arith.ConstantInt(b, g.loc, 16, ir.I32))
	return arith.Binary(b, "arith.ori", g.loc, half(x), hi)
}

// product adds P·V to the accumulators o (in place): the probabilities
// of n8 tiles 2j and 2j+1 are the m16k16 A fragment of key step j.
func (g *flashGen) product(b *ir.Builder, p [][]*ir.Value, o []*ir.Value, vAt *ir.Value) {
	x := g.x.at(b)
	ld := g.D + flashPad
	for j := range int64(flashKeys / 16) {
		a := []*ir.Value{
			g.pack(b, p[2*j][0], p[2*j][1]), g.pack(b, p[2*j][2], p[2*j][3]),
			g.pack(b, p[2*j+1][0], p[2*j+1][1]), g.pack(b, p[2*j+1][2], p[2*j+1][3]),
		}
		for dp := range g.D / 16 {
			r := gpu.LdMatrix(b, g.loc, g.sv, x.index(x.addc(vAt, j*16*ld+dp*16)), 4, true)
			for h := range int64(2) {
				at := (2*dp + h) * 4
				copy(o[at:at+4], gpu.MMASync(b, g.loc, g.Elem, a, r[2*h:2*h+2], o[at:at+4]))
			}
		}
	}
}

// store writes O / l, rounded to the element type, for the lane's rows
// below Lq: accumulator value r of n8 tile j is row rows[r/2], column
// 8j + t2 + r%2.
func (g *flashGen) store(kl *ir.Operation, nO int, t2 *ir.Value, rows [2]*ir.Value) {
	b, loc, x := g.b, g.loc, g.x
	var inv [2]*ir.Value
	for h := range 2 {
		l := g.quadReduce(b, "arith.addf", kl.Result(4*nO+2+h))
		inv[h] = fop(b, loc, "arith.divf", g.f32(1), l)
	}
	for h := range 2 {
		emit := func(b *ir.Builder) []*ir.Value {
			x := x.at(b)
			rowOff := x.add(x.mulc(g.batchOf(b), g.Lq*g.D), x.mulc(rows[h], g.D))
			for j := range nO {
				for c := range 2 {
					r := 2*h + c
					v := fop(b, loc, "arith.mulf", kl.Result(4*j+r), inv[h])
					v = arith.NewCast(b, "arith.truncf", loc, v, g.Elem)
					loop.Store(b, loc, v, g.o, x.index(x.add(rowOff, x.addc(t2, int64(8*j+c)))))
				}
			}
			return nil
		}
		if g.Lq%flashRows == 0 {
			emit(b)
		} else {
			loop.If(b, loc, x.lt(rows[h], x.c(g.Lq)), nil, emit, nil)
		}
	}
}

// batchOf is the block's (batch, head) index.
func (g *flashGen) batchOf(b *ir.Builder) *ir.Value {
	x := g.x.at(b)
	return x.div(x.from(gpu.BlockID(b, g.loc, "x")), x.c(ceilDivInt(g.Lq, flashRows)))
}

// The graph-attention-to-flash pass and its other half in
// convert-loop-to-gpu. graph-decompose expands graph.attention into two
// products and a softmax before lowering, so the pass runs first, on the
// graph: each attention the kernel computes becomes a func.call of a
// private declaration tagged FlashAttr, which convert-graph-to-loop
// lowers like any call (buffers in, a buffer out) and convert-loop-to-gpu
// replaces by the kernel's launch (lowerFlashCalls). Without the pass
// nothing changes: it is off by default, enabled by naming it before
// lower-to-gpu.
const (
	// FlashPassName is the pass's pipeline name.
	FlashPassName = "graph-attention-to-flash"
	// FlashAttr is the dictionary {causal, scale} on the declarations
	// standing for flash kernels.
	FlashAttr = "strata.flash"
)

func init() {
	passes.Register(&passes.PassInfo{
		Name:    FlashPassName,
		Summary: "Run bf16/f16 graph.attention as one flash-attention kernel (before lower-to-gpu)",
		Description: "Each `graph.attention` without a mask operand, on static bf16 or f16 q, k, v with the " +
			"same batch dims (no broadcasting) and a head dim that is a multiple of 16 up to 64 for q, k " +
			"and v, becomes a `func.call` of a private declaration tagged `strata.flash = {causal, scale}`. " +
			"convert-loop-to-gpu replaces each such call by the launch of one kernel: 64 query rows per " +
			"block of 4 warps, K and V tiles of 64 keys double-buffered by cp.async, scores and P·V on " +
			"mma.sync with f32 accumulators, online softmax in f32 (the score matrix never reaches memory). " +
			"The results match graph.attention within bf16 rounding (the probabilities are rounded before " +
			"rather than after the division by the row sum). Other attentions are left to graph-decompose. " +
			"Use as `builtin.module(graph-attention-to-flash,lower-to-gpu)`.",
		Anchor: "builtin.module",
		New:    func(passes.Options) (passes.Pass, error) { return flashPass{}, nil },
	})
}

type flashPass struct{}

func (flashPass) Name() string { return FlashPassName }

// Run outlines every attention the kernel takes.
func (flashPass) Run(module *ir.Operation, st *passes.State) error {
	n := OutlineAttention(st.Ctx, module)
	st.Stat("flash-kernels", "attentions run as flash kernels").Add(int64(n))
	if n == 0 {
		st.MarkUnchanged()
	}
	return nil
}

// OutlineAttention replaces each graph.attention of module's functions that
// flashOf accepts by a call of a new declaration tagged FlashAttr, and
// returns how many it replaced.
func OutlineAttention(ctx *ir.Context, module *ir.Operation) int {
	body := module.Region(0).Front()
	if body == nil {
		return 0
	}
	b := ir.NewBuilder(ctx)
	n := 0
	for _, fn := range body.Ops() {
		if fn.Name() != funcs.FuncOp || funcs.IsExternal(fn) {
			continue
		}
		var atts []*ir.Operation
		fn.Walk(func(o *ir.Operation) bool {
			if o.Name() == "graph.attention" {
				if _, ok := flashOf(o); ok {
					atts = append(atts, o)
				}
			}
			return true
		})
		for _, a := range atts {
			f, _ := flashOf(a)
			b.SetInsertionPointBefore(fn)
			name := uniqueSymbol(module, symName(fn)+"_flash")
			ft := ir.FunctionOf([]ir.Type{a.Operand(0).Type(), a.Operand(1).Type(), a.Operand(2).Type()}, []ir.Type{a.Result(0).Type()})
			decl := funcs.NewExternalFunc(b, name, ft, a.Loc())
			decl.SetAttr(FlashAttr, ir.Dict(
				ir.NamedAttr{Name: "causal", Value: ir.Bool(f.Causal)},
				ir.NamedAttr{Name: "scale", Value: ir.Float(f.Scale, ir.F64)},
			))
			b.SetInsertionPointBefore(a)
			call := funcs.Call(b, a.Loc(), name, []ir.Type{a.Result(0).Type()}, a.Operands()...)
			a.Result(0).ReplaceAllUsesWith(call.Result(0))
			a.Erase()
			n++
		}
	}
	return n
}

// flashOf returns the kernel computing the graph.attention op, if any.
func flashOf(op *ir.Operation) (Flash, bool) {
	if op.NumOperands() != 3 || op.NumResults() != 1 {
		return Flash{}, false // (a mask operand)
	}
	var shapes [4][]int64
	var elem ir.Type
	for i, v := range append(op.Operands(), op.Result(0)) {
		t, ok := v.Type().(*ir.TensorType)
		if !ok || !t.Ranked() || len(t.Shape()) < 2 || slices.Contains(t.Shape(), ir.Dynamic) || (elem != nil && t.ElementType() != elem) {
			return Flash{}, false
		}
		elem, shapes[i] = t.ElementType(), t.Shape()
	}
	q, k, v, r := shapes[0], shapes[1], shapes[2], shapes[3]
	nb := len(q) - 2
	if len(k) != len(q) || !slices.Equal(k, v) || !slices.Equal(q, r) || !slices.Equal(q[:nb], k[:nb]) || q[nb+1] != k[nb+1] {
		return Flash{}, false
	}
	batch := int64(1)
	for _, d := range q[:nb] {
		batch *= d
	}
	f := Flash{Batch: batch, Lq: q[nb], Lk: k[nb], D: q[nb+1], Elem: elem, Scale: 1 / math.Sqrt(float64(q[nb+1]))}
	if s, ok := op.Attr("scale").(ir.FloatAttr); ok {
		f.Scale = s.Value()
	}
	if c, ok := op.Attr("causal").(ir.IntegerAttr); ok {
		f.Causal = c.Value != 0
	}
	return f, f.Check() == nil
}

// lowerFlashCalls replaces, in every function of module, each call of a
// declaration tagged FlashAttr (on buffers, after convert-graph-to-loop)
// by an output buffer and the flash kernel's launch, then erases the
// declarations.
func lowerFlashCalls(ctx *ir.Context, module *ir.Operation) error {
	body := module.Region(0).Front()
	if body == nil {
		return nil
	}
	var decls []*ir.Operation
	for _, fn := range body.Ops() {
		if fn.Name() == funcs.FuncOp && fn.Attr(FlashAttr) != nil {
			decls = append(decls, fn)
		}
	}
	if len(decls) == 0 {
		return nil
	}
	b := ir.NewBuilder(ctx)
	for _, fn := range body.Ops() {
		if fn.Name() != funcs.FuncOp || funcs.IsExternal(fn) {
			continue
		}
		var calls []*ir.Operation
		fn.Walk(func(o *ir.Operation) bool {
			if o.Name() == funcs.CallOp {
				if ref, ok := o.Attr(funcs.CalleeAttr).(ir.SymbolRefAttr); ok && slices.ContainsFunc(decls, func(d *ir.Operation) bool { return symName(d) == ref.Root }) {
					calls = append(calls, o)
				}
			}
			return true
		})
		if len(calls) == 0 {
			continue
		}
		gpu.MarkContainer(module)
		b.SetInsertionPointAfter(fn)
		gmod := gpu.NewModule(b, fn.Loc(), uniqueSymbol(module, symName(fn)+"_flash_kernels"))
		for i, call := range calls {
			if err := lowerFlashCall(b, module, gmod, call, fmt.Sprintf("flash_%d", i)); err != nil {
				return err
			}
		}
	}
	for _, d := range decls {
		d.Erase()
	}
	return nil
}

// lowerFlashCall replaces call by the launch of a new kernel name in gmod.
func lowerFlashCall(b *ir.Builder, module, gmod, call *ir.Operation, name string) error {
	loc := call.Loc()
	callee := ir.LookupSymbol(module, call.Attr(funcs.CalleeAttr).(ir.SymbolRefAttr))
	spec, _ := callee.Attr(FlashAttr).(ir.DictAttr)
	var shapes [4][]int64
	var elem ir.Type
	for i, v := range append(call.Operands(), call.Result(0)) {
		t, ok := v.Type().(*ir.MemRefType)
		if !ok {
			return ir.Errorf(loc, "%s: flash call operand %d is %s, want a static memref", PassName, i, v.Type())
		}
		elem, shapes[i] = t.ElementType(), t.Shape()
	}
	q, k := shapes[0], shapes[1]
	nb := len(q) - 2
	batch := int64(1)
	for _, d := range q[:nb] {
		batch *= d
	}
	f := Flash{Batch: batch, Lq: q[nb], Lk: k[nb], D: q[nb+1], Elem: elem}
	if c, ok := spec.Get("causal").(ir.IntegerAttr); ok {
		f.Causal = c.Value != 0
	}
	if s, ok := spec.Get("scale").(ir.FloatAttr); ok {
		f.Scale = s.Value()
	}
	gb := ir.NewBuilder(b.Ctx)
	gb.SetInsertionPointBefore(gmod.Region(0).Front().Last())
	if _, err := f.Kernel(gb, loc, name); err != nil {
		return ir.Errorf(loc, "%s: %v", PassName, err)
	}
	b.SetInsertionPointBefore(call)
	out := loop.Alloc(b, loc, call.Result(0).Type().(*ir.MemRefType))
	ts := f.ArgTypes()
	flat := func(v *ir.Value, t ir.Type) *ir.Value { return loop.View(b, loc, v, t.(*ir.MemRefType)) }
	f.Launch(b, loc, gpu.KernelRef(symName(gmod), name),
		flat(call.Operand(0), ts[0]), flat(call.Operand(1), ts[1]), flat(call.Operand(2), ts[2]), flat(out, ts[3]))
	call.Result(0).ReplaceAllUsesWith(out)
	call.Erase()
	return nil
}
