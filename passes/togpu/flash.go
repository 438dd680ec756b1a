package togpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// Flash-attention kernel (issue 12): softmax(q·kᵀ·scale)·v for one graph
// attention in one kernel, without the score matrix in memory. A block
// of Rows/Warp warps takes Rows query rows of one (batch, head); each warp
// owns Warp of them (one or two m16 tiles). The block walks the keys in
// tiles of Keys, K and V tiles double-buffered in workgroup memory by
// cp.async: one barrier per tile, after which the next tile's copies are
// issued, so they overlap this tile's arithmetic. Per tile each warp
// computes its Warp × Keys scores with mma.sync into f32 registers, masks
// them (causal, and the keys past the end; only in the tiles that need
// it) and runs the online softmax on them in f32 (graph.attention's
// scores are never rounded to the element type): the running row
// maximum m and the row sum l, both f32, and the output accumulator
// rescaled by exp(m_old − m_new) when m moves (lazily, see softmaxStep).
// The scale is folded into the exponent: exp((s − m)·scale) = ex2(s·c −
// m·c) with c = scale·log₂e, one fma and one ex2 per score, m the extreme
// of the unscaled scores (the maximum for a positive scale, the minimum
// for a negative one). The probabilities, rounded to the element type
// once (one cvt.rn.bf16x2.f32 a pair), are the A fragments of O += P·V
// straight from the score registers (the m16n8 accumulator layout of two
// n8 tiles is the m16k16 A layout), so they never leave registers. At the
// end O / l is rounded to the element type and stored.
//
// The result differs from the decomposed graph only in rounding: the
// graph rounds the normalised probability exp(s − m)/l once, the kernel
// the unnormalised exp(s − m_running) once and divides by l after the
// product, the sums run in another order, and the exponent s·c − m·c is
// rounded once rather than twice.
const (
	flashPad  = 8   // elements after each workgroup row: ldmatrix's 8 rows hit different banks
	flashMaxD = 128 // the largest head dim (its O and Q fragments take 96 registers a thread)
	// flashRescale is how far (log₂) a row's probabilities may grow before
	// its running extreme moves and its accumulators are rescaled.
	flashRescale = 8
	// flashOnes is the elements of the matrix of ones that the wgmma
	// kernel's SumMMA multiplies P by: 8 rows of 128 keys, two panels.
	flashOnes = 2 * 8 * wgPanel
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
	// Dynamic: the queries and the keys are one length known at run time
	// (a graph compiled for every sequence length), which Lq and Lk then
	// hold as ir.Dynamic. The kernel takes the length as its last
	// argument (Launch reads it off q's buffer) and masks the row and key
	// tails whatever it is.
	Dynamic bool
	// Scale multiplies the scores (1/√D by default in graph.attention).
	Scale float64
	// Elem is bf16 or f16.
	Elem ir.Type
	// Tile is one of FlashTiles; the zero value picks the measured best
	// for the shape (see tile).
	Tile FlashTile
	// LSE adds an f32 output [Batch·Lq]: each row's log₂-sum-exp of its
	// scaled scores, m·c + log₂ l with c = Scale·log₂e (the row's
	// probabilities are then ex2(s·c − lse)), which the backward kernels
	// (FlashGrad) read instead of recomputing the softmax's statistics.
	LSE bool
}

// tile is f's tiling.
func (f Flash) tile() FlashTile {
	if f.Tile != (FlashTile{}) {
		return f.Tile
	}
	switch {
	case f.D > 64:
		// (Two m16 tiles a warp, or launch bounds for 4 blocks, would
		// spill: 64x64f takes 168 registers at d128.)
		return FlashTiles[2]
	case f.Causal:
		return FlashTiles[1] // the finer diagonal of 64-row blocks
	}
	return FlashTiles[0]
}

// Tiling is the tiling f's kernel uses: Tile, or the default for f's
// shape when Tile is the zero value.
func (f Flash) Tiling() FlashTile { return f.tile() }

// Threads is the block size of f's launch.
func (f Flash) Threads() int64 { return f.consumers() + f.producers() }

// consumers is the threads of the block that compute (all of them but
// with Specialized).
func (f Flash) consumers() int64 { t := f.tile(); return 32 * t.Rows / t.warpRows() }

// producers is the threads of Specialized's producer warpgroup, or 0.
func (f Flash) producers() int64 {
	if f.tile().Specialized {
		return gpu.WarpgroupSize
	}
	return 0
}

// shared is the number of workgroup elements: two stages of a K and a V
// tile, and the Q tile (staged in the second stage before the loop when
// it fits there, else after the stages). Beyond
// gpu.MaxStaticSharedBytes the kernel's workgroup memory is dynamic.
func (f Flash) shared() int64 {
	t := f.tile()
	if t.WGMMA {
		kv := 4 * t.Keys * f.D
		switch {
		case t.PrefetchV || t.Specialized:
			kv += t.Keys * f.D // (a third V stage)
		case t.OneK:
			kv -= t.Keys * f.D
		}
		n := kv + t.Rows*f.D // (Q after the stages)
		if t.PrefetchQ {
			n += t.Rows * f.D // (the next row block's)
		}
		if t.SumMMA {
			n += flashOnes // (the ones after Q)
		}
		return n
	}
	n := 4 * t.Keys * (f.D + flashPad)
	if t.Rows > 2*t.Keys {
		n += t.Rows * (f.D + flashPad)
	}
	return n
}

// qStage is the workgroup offset the Q tile is staged at.
func (f Flash) qStage() int64 {
	t := f.tile()
	if t.Rows <= 2*t.Keys {
		return 2 * t.Keys * (f.D + flashPad)
	}
	return 4 * t.Keys * (f.D + flashPad)
}

// Check reports why the kernel cannot compute f, or nil.
func (f Flash) Check() error {
	t := f.tile()
	switch {
	case f.Elem != ir.BF16 && f.Elem != ir.F16:
		return fmt.Errorf("flash attention: element type %s, want bf16 or f16", f.Elem)
	case t.Specialized && (!t.Pipe || !t.QShared || t.PrefetchV || t.OneK):
		return fmt.Errorf("flash attention: tile %s: Specialized needs the pipelined kernel with QShared, without PrefetchV and OneK", t)
	case t.PingPong && (!t.Specialized || t.Rows != 2*64):
		return fmt.Errorf("flash attention: tile %s: PingPong needs Specialized and two consumer warpgroups (128 rows)", t)
	case t.Pipe && t.Rows > 64 && !t.PrefetchV && !t.Specialized:
		return fmt.Errorf("flash attention: tile %s pipelines several warpgroups without PrefetchV (a V stage would be copied while read)", t)
	case t.OneK && (!t.Pipe || t.Rows > 64 || t.PrefetchV):
		return fmt.Errorf("flash attention: tile %s: OneK needs the pipelined kernel with one warpgroup a block and without PrefetchV", t)
	case t.TMA && (!t.Pipe || !t.QShared || t.PrefetchV || t.Rows != 64 && !t.Specialized):
		return fmt.Errorf("flash attention: tile %s: TMA needs the pipelined kernel with QShared, without PrefetchV, and one warpgroup a block or Specialized", t)
	case t.Cluster != 0 && (t.Cluster != 2 || !t.TMA || t.Specialized):
		return fmt.Errorf("flash attention: tile %s: Cluster is 2, with TMA and without Specialized", t)
	case t.WGMMA && t.SumMMA && (!t.Pipe || t.Specialized):
		// (With a producer, its rows of ones are never written: NaN sums,
		// found on the device in session 23.)
		return fmt.Errorf("flash attention: tile %s: SumMMA with WGMMA needs the pipelined kernel without Specialized", t)
	case (t.Unroll || t.LatePack) && !t.Pipe:
		return fmt.Errorf("flash attention: tile %s: Unroll and LatePack need the pipelined kernel", t)
	case t.Staged && !t.Pipe:
		return fmt.Errorf("flash attention: tile %s: Staged needs the pipelined kernel", t)
	case t.Persistent < 0 || t.Persistent > 0 && !(t.Pipe && (t.Specialized || t.Rows == 64 && !t.TMA)):
		return fmt.Errorf("flash attention: tile %s: Persistent needs the pipelined kernel with one warpgroup a block and without TMA, or Specialized", t)
	case t.PrefetchQ && (!t.Specialized || t.Persistent == 0):
		return fmt.Errorf("flash attention: tile %s: PrefetchQ needs Specialized and Persistent", t)
	case !slices.ContainsFunc(FlashTiles, func(ft FlashTile) bool { return ft.nonPersistent() == t.nonPersistent() }):
		return fmt.Errorf("flash attention: tile %s is not one of FlashTiles (but for Persistent)", t)
	case t.TMA && f.Dynamic:
		return fmt.Errorf("flash attention: tile %s (TMA) needs a static length: its tensor maps hold the key count", t)
	case t.Cluster > 1 && ceilDivInt(f.Lq, t.Rows)%t.Cluster != 0:
		return fmt.Errorf("flash attention: tile %s groups %d row blocks of a head, which has %d", t, t.Cluster, ceilDivInt(f.Lq, t.Rows))
	case f.D <= 0 || f.D%16 != 0 || f.D > flashMaxD:
		return fmt.Errorf("flash attention: head dim %d, want a multiple of 16 up to %d", f.D, flashMaxD)
	case t.WGMMA && f.D != wgPanel && !(t.QShared && f.D == 2*wgPanel):
		if t.QShared {
			return fmt.Errorf("flash attention: tile %s (wgmma) takes head dims %d and %d only, not %d", t, wgPanel, 2*wgPanel, f.D)
		}
		return fmt.Errorf("flash attention: tile %s (wgmma) takes head dim %d only, not %d", t, wgPanel, f.D)
	case f.Dynamic && (f.Lq != ir.Dynamic || f.Lk != ir.Dynamic):
		return fmt.Errorf("flash attention: a dynamic length with %d queries and %d keys, want both dynamic", f.Lq, f.Lk)
	case f.Batch <= 0 || !f.Dynamic && (f.Lq <= 0 || f.Lk <= 0):
		return fmt.Errorf("flash attention: empty shape (batch %d, %d queries, %d keys)", f.Batch, f.Lq, f.Lk)
	case 2*f.shared() > gpu.MaxSharedBytes:
		// (Before the module is built: 192 rows at head dim 128 need 256 KiB.)
		return fmt.Errorf("flash attention: tile %s at head dim %d needs %d bytes of shared memory, more than the %d a block may have", t, f.D, 2*f.shared(), gpu.MaxSharedBytes)
	case f.Scale == 0 || math.IsInf(f.Scale, 0) || math.IsNaN(f.Scale) || float32(f.Scale) == 0:
		// The scale is folded into the exponent's fma, which needs the
		// masked scores' ±inf times it to be −inf.
		return fmt.Errorf("flash attention: scale %g, want a finite nonzero f32", f.Scale)
	}
	return nil
}

// Grid is the number of blocks of the launch (of Threads threads); 0
// with Dynamic (Launch computes it at run time).
func (f Flash) Grid() int64 {
	if f.Dynamic {
		return 0
	}
	n := f.Batch * ceilDivInt(f.Lq, f.tile().Rows)
	if p := f.tile().Persistent; p > 0 {
		return min(n, p)
	}
	return n
}

func ceilDivInt(a, b int64) int64 { return (a + b - 1) / b }

// memref is the 1-D global buffer type of n elements (of a dynamic size
// with Dynamic).
func (f Flash) memref(n int64) ir.Type {
	if f.Dynamic {
		n = ir.Dynamic
	}
	return ir.MemRefOf([]int64{n}, f.Elem)
}

// ArgTypes are the kernel's arguments: q [Batch·Lq·D], k and v [Batch·Lk·D]
// and the output [Batch·Lq·D], row-major 1-D views, then with LSE the
// rows' log-sum-exp [Batch·Lq] in f32, and with Dynamic the length
// (index).
func (f Flash) ArgTypes() []ir.Type {
	q, kv := f.memref(f.Batch*f.Lq*f.D), f.memref(f.Batch*f.Lk*f.D)
	ts := []ir.Type{q, kv, kv, q}
	if f.LSE {
		n := f.Batch * f.Lq
		if f.Dynamic {
			n = ir.Dynamic
		}
		ts = append(ts, ir.MemRefOf([]int64{n}, ir.F32))
	}
	if f.Dynamic {
		ts = append(ts, ir.Index)
	}
	return ts
}

// Kernel inserts the kernel gpu.func name at b's insertion point (inside
// a gpu.module) and returns it.
func (f Flash) Kernel(b *ir.Builder, loc ir.Location, name string) (*ir.Operation, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	f.Tile = f.tile()
	kernel, entry := gpu.NewKernel(b, loc, name, f.ArgTypes())
	kernel.SetAttr(LaunchAttr, ir.Dict(
		ir.NamedAttr{Name: "block", Value: ir.Int(f.Threads(), ir.I64)},
		ir.NamedAttr{Name: "vector", Value: ir.Int(1, ir.I64)},
		ir.NamedAttr{Name: "rows_per_block", Value: ir.Int(f.Tile.Rows, ir.I64)},
		ir.NamedAttr{Name: "mapping", Value: ir.Str(MappingFlash)},
	))
	if f.Tile.Specialized {
		// (gpu.setmaxnreg's counts are within what the block's size
		// leaves a thread. ptxas honours them only with the registers at
		// entry capped, which the launch bounds' one block an SM does:
		// with the block size alone it ignored them wherever the kernel
		// needed fewer than the cap, as at head dim 64 — warning C7508.)
		kernel.SetAttr("nvvm.maxntid", ir.Int(f.Threads(), ir.I64))
		kernel.SetAttr("nvvm.minctasm", ir.Int(1, ir.I64))
	}
	if f.Tile.MinBlocks > 0 {
		// targets/llvm's MaxThreadsAttr and MinBlocksAttr.
		kernel.SetAttr("nvvm.maxntid", ir.Int(f.Threads(), ir.I64))
		kernel.SetAttr("nvvm.minctasm", ir.Int(f.Tile.MinBlocks, ir.I64))
	}
	kb := ir.NewBuilder(b.Ctx)
	kb.SetInsertionPointToEnd(entry)
	// Offsets in i32 when every one fits (fewer registers and integer
	// instructions than 64-bit index arithmetic).
	// (A dynamic length has no bound: index.)
	width := ir.Type(ir.I32)
	if f.Dynamic || f.Batch*max(f.Lq, f.Lk)*f.D+(f.Tile.Rows+f.Tile.Keys)*f.D >= 1<<31 {
		width = ir.Index
	}
	g := &flashGen{Flash: f, b: kb, loc: loc, x: ix{kb, loc, width}, ld: f.D + flashPad, lastFirst: f.Causal}
	args := entry.Arguments()
	g.q, g.k, g.v, g.o = args[0], args[1], args[2], args[3]
	if f.LSE {
		g.lse = args[4]
	}
	if f.Dynamic {
		g.seq = g.x.from(args[len(args)-1])
	}
	g.smem = gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(f.shared(), f.Elem))
	emit := func() {
		switch {
		case f.Tile.Pipe:
			g.emitWGMMAPipe()
		case f.Tile.WGMMA:
			g.emitWGMMA()
		default:
			g.emit()
		}
	}
	switch {
	case f.Tile.Persistent > 0 && f.Tile.Specialized:
		g.emitPersistentWS()
	case f.Tile.Persistent > 0:
		x := g.x
		bid := gpu.BlockID(kb, loc, "x")
		grid := gpu.GridDim(kb, loc, "x")
		items := x.index(x.mul(g.rowBlocks(x), x.c(f.Batch)))
		g.itemLoop(kb, nil, func(b *ir.Builder, it, item *ir.Value, _ []*ir.Value) []*ir.Value {
			g.b, g.x = b, x.at(b)
			g.item = g.x.from(item)
			// (The next round's row block, which prefetches takes
			// only without the causal turns.)
			next := arith.Binary(b, arith.OpAddI, loc, it, grid)
			g.next = g.x.from(next)
			g.hasNext = arith.NewCmpI(b, loc, arith.CmpIULT, next, items)
			g.first = arith.NewCmpI(b, loc, arith.CmpIEQ, it, bid)
			emit()
			// (The next row block's copies overwrite the stages.)
			gpu.Barrier(b, loc)
			return nil
		})
		g.b, g.x, g.item, g.next, g.hasNext, g.first = kb, x, nil, nil, nil, nil
	default:
		emit()
	}
	gpu.Return(kb, loc)
	return kernel, nil
}

// Launch inserts the launch of kernel (which Kernel made; ref names it)
// on the 1-D buffers q, k, v and out (of ArgTypes) at b, and with LSE the
// log-sum-exp buffer lse[0].
func (f Flash) Launch(b *ir.Builder, loc ir.Location, kernel *ir.Operation, ref ir.SymbolRefAttr, q, k, v, out *ir.Value, lse ...*ir.Value) (*ir.Operation, error) {
	args := append([]*ir.Value{q, k, v, out}, lse...)
	if f.Dynamic {
		args = append(args, nil) // (the length, below)
	}
	if len(args) != len(f.ArgTypes()) {
		return nil, fmt.Errorf("flash attention: %d launch arguments for %d kernel parameters", len(args), len(f.ArgTypes()))
	}
	shared, err := gpu.DynamicSharedSize(b, loc, kernel)
	if err != nil {
		return nil, fmt.Errorf("flash attention: %w", err)
	}
	one := arith.ConstantIndex(b, loc, 1)
	grid := [3]*ir.Value{nil, one, one}
	if f.Dynamic {
		// The length is q's size over Batch·D; the blocks Batch times
		// its row tiles.
		c := func(n int64) *ir.Value { return arith.ConstantIndex(b, loc, n) }
		n := arith.Binary(b, arith.OpDivUI, loc, loop.Dim(b, loc, q, 0), c(f.Batch*f.D))
		rows := arith.Binary(b, arith.OpDivUI, loc, arith.Binary(b, arith.OpAddI, loc, n, c(f.tile().Rows-1)), c(f.tile().Rows))
		grid[0] = arith.Binary(b, arith.OpMulI, loc, rows, c(f.Batch))
		if p := f.tile().Persistent; p > 0 {
			grid[0] = arith.Binary(b, arith.OpMinUI, loc, grid[0], c(p))
		}
		args[len(args)-1] = n
	} else {
		grid[0] = arith.ConstantIndex(b, loc, f.Grid())
	}
	block := [3]*ir.Value{arith.ConstantIndex(b, loc, f.Threads()), one, one}
	return gpu.LaunchFunc(b, loc, ref, grid, block, args, shared), nil
}
