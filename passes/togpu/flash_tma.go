package togpu

import (
	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The pipelined wgmma kernel's K and V tiles by TMA (FlashTile.TMA; with
// Specialized, the producer's copies use tensorMaps and tmaBoxes from
// here and the specialized kernel's own barriers: wsSplit). k and
// v are tensor maps of three dimensions (batch, key, head dim) with the
// 128-byte swizzle, so that a box of Keys keys × 64 columns lands in the
// very panel layout the kernel's gpu.wgmma descriptors read (head dim 128
// is two boxes, one a panel) and the boxes past a batch's last key are
// zero-filled. Thread 0 issues the copies; each stage of K (two, or one
// with OneK) and of V (two) has a full mbarrier (thread 0's expected bytes, counted down by
// the copies) and an empty one (an arrival from each warp of the cluster
// once the product that read the stage has completed). With Cluster, each
// block copies its share of the tile's keys and multicasts it to every
// block of the cluster, expecting the whole tile on its own full barrier,
// and frees a stage at every block's empty barrier, so that no block
// overwrites a stage another still reads.
//
// The schedule (emitWGMMAPipe): K(0), K(1) and V(0) before the key loop;
// at the top of key tile kt ≥ 1, K(kt+1) (its stage held K(kt−1), freed
// once S(kt−1) completed) and V(kt) (its stage held V(kt−2), freed once
// P·V(kt−2) completed), both freed a tile before, where no product is in
// flight. V(kt) is read by P·V(kt), issued a tile later. With OneK, K(kt+1)
// follows S(kt)'s completion in every block of the cluster instead (its
// one stage's only reader), while P·V(kt−1) is in flight.

// flashTMA is the TMA state of one kernel.
type flashTMA struct {
	g          *flashGen
	kAt, vAt   func(x ix, kt *ir.Value) *ir.Value // the stages' workgroup offsets
	bars       *ir.Value                          // the mbarriers (see bar)
	kMap, vMap *ir.Value                          // the tensor-map arguments
	z          *ir.Value                          // the block's batch, i32
	rank       *ir.Value                          // the block's rank in its cluster (offset type), nil without
}

// TMA barrier kinds: full and empty for K's and V's two stages each.
const (
	tmaFullK int64 = iota
	tmaEmptyK
	tmaFullV
	tmaEmptyV
	tmaKinds
)

// tmaStages is the most stages of each of K and V (the barriers of a
// kind are tmaStages apart).
const tmaStages = 2

// stages is the number of stages of kind's tiles: two, or one of K with
// OneK.
func (t *flashTMA) stages(kind int64) int64 {
	if kind < tmaFullV && t.g.Tile.OneK {
		return 1
	}
	return tmaStages
}

// bar is the index of kind's barrier of key tile kt's stage.
func (t *flashTMA) bar(x ix, kind int64, kt *ir.Value) *ir.Value {
	return x.index(x.addc(x.and(kt, t.stages(kind)-1), kind*tmaStages))
}

// parity is the i32 parity of the phase of key tile kt's round in its
// stage of kind, plus one for the wait for an empty stage (a fresh
// barrier's phase before the first counts as complete).
func (t *flashTMA) parity(x ix, kind int64, kt *ir.Value, plus int64) *ir.Value {
	return x.i32(x.and(x.addc(x.shr(kt, t.stages(kind)/2), plus), 1))
}

// cluster is the kernel's cluster size (1 without Cluster).
func (t *flashTMA) cluster() int64 { return max(t.g.Tile.Cluster, 1) }

// setupTMA marks k and v as tensor maps, adds the mbarriers and has
// thread 0 initialize them (the block's or the cluster's barrier the
// caller places next publishes them); z is the block's batch, kAt and vAt
// the workgroup offsets of key tile kt's K and V stages.
func (g *flashGen) setupTMA(z *ir.Value, kAt, vAt func(x ix, kt *ir.Value) *ir.Value) *flashTMA {
	b, loc, x := g.b, g.loc, g.x
	kernel := g.tensorMaps()
	t := &flashTMA{g: g, kAt: kAt, vAt: vAt, kMap: g.k, vMap: g.v}
	t.z = x.i32(z)
	if t.cluster() > 1 {
		kernel.SetAttr(gpu.ClusterSizeAttr, ir.Int(t.cluster(), ir.I64))
		t.rank = x.and(x.from(gpu.BlockID(b, loc, "x")), t.cluster()-1)
	}
	t.bars = gpu.AddWorkgroupBuffer(kernel, gpu.WorkgroupMemRef(tmaKinds*tmaStages, ir.I64))
	frees := t.cluster() * g.consumers() / gpu.WarpSize
	loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIEQ, g.tid, x.c(0)), nil, func(b *ir.Builder) []*ir.Value {
		x := x.at(b)
		for kind := range tmaKinds {
			n := int64(1) // (full: thread 0's arrival with the expected bytes)
			if kind == tmaEmptyK || kind == tmaEmptyV {
				n = frees
			}
			for s := range t.stages(kind) {
				gpu.MbarrierInit(b, loc, t.bars, x.index(x.c(kind*tmaStages+s)), arith.ConstantInt(b, loc, n, ir.I32))
			}
		}
		gpu.FenceProxyAsync(b, loc) // (the barriers visible to the copies)
		return nil
	}, nil)
	return t
}

// issue has thread 0 copy, for each (kind, key tile) of loads whose tile
// is below the block's last, the tile into its stage once the stage is
// free: kind is tmaFullK or tmaFullV.
func (t *flashTMA) issue(b *ir.Builder, loads ...tmaLoad) {
	g, loc := t.g, t.g.loc
	x := g.x.at(b)
	loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIEQ, g.tid, x.c(0)), nil, func(b *ir.Builder) []*ir.Value {
		for _, l := range loads {
			loop.If(b, loc, x.at(b).lt(l.kt, g.tiles), nil, func(b *ir.Builder) []*ir.Value {
				t.copyTile(b, l.kind, l.kt)
				return nil
			}, nil)
		}
		return nil
	}, nil)
}

// tmaLoad is one tile copy of issue.
type tmaLoad struct {
	kind int64
	kt   *ir.Value
}

// copyTile waits for key tile kt's stage of kind (full K or V) to be
// free, expects the tile's bytes on its full barrier and issues the
// copies: a box a panel, with Cluster the block's share of the keys,
// multicast.
func (t *flashTMA) copyTile(b *ir.Builder, kind int64, kt *ir.Value) {
	g, loc := t.g, t.g.loc
	x := g.x.at(b)
	K := g.Tile.Keys
	gpu.MbarrierWait(b, loc, t.bars, t.bar(x, kind+1, kt), t.parity(x, kind, kt, 1))
	full := t.bar(x, kind, kt)
	gpu.MbarrierExpectTx(b, loc, t.bars, full, arith.ConstantInt(b, loc, K*g.D*2, ir.I32)) // (bf16 or f16)
	src, stage := t.kMap, t.kAt(x, kt)
	if kind == tmaFullV {
		src, stage = t.vMap, t.vAt(x, kt)
	}
	first := x.mulc(kt, K)
	share := K / t.cluster()
	if t.rank != nil {
		first = x.add(first, x.mulc(t.rank, share))
		stage = x.add(stage, x.mulc(t.rank, share*wgPanel))
	}
	mask := int64(0)
	if t.rank != nil {
		mask = 1<<t.cluster() - 1
	}
	g.tmaBoxes(b, src, t.z, first, stage, t.bars, full, mask)
}

// tensorMaps marks the kernel's k and v as tensor maps of three
// dimensions (batch, key, head dim) with boxes of Keys keys (a share of
// them with Cluster) × 64 columns in the 128-byte swizzle, and returns the
// kernel.
func (g *flashGen) tensorMaps() *ir.Operation {
	kernel := g.k.ParentBlock().ParentOp()
	geom := gpu.TensorMap{Inner: []int64{g.Lk, g.D}, Box: []int64{1, g.Tile.Keys / max(g.Tile.Cluster, 1), wgPanel}, Swizzle: 128}
	gpu.SetTensorMap(kernel, g.k.Index(), geom)
	gpu.SetTensorMap(kernel, g.v.Index(), geom)
	return kernel
}

// tmaBoxes issues the copies of a tile of src (k or v) from key first
// (offset type) of batch z (i32) to workgroup offset stage, one box a
// 64-column panel, signalling bars[full]; with a multicast mask, to every
// block of the cluster it names.
func (g *flashGen) tmaBoxes(b *ir.Builder, src, z, first, stage *ir.Value, bars, full *ir.Value, mask int64) {
	x, loc := g.x.at(b), g.loc
	for p := range g.D / wgPanel {
		coords := []*ir.Value{z, x.i32(first), arith.ConstantInt(b, loc, p*wgPanel, ir.I32)}
		dst := x.index(x.addc(stage, p*g.Tile.Keys*wgPanel))
		if mask != 0 {
			gpu.TMALoadMulticast(b, loc, g.smem, dst, bars, full, src, coords, mask)
		} else {
			gpu.TMALoad(b, loc, g.smem, dst, bars, full, src, coords)
		}
	}
}

// wait waits for key tile kt's stage of kind (full K or V) to hold it.
func (t *flashTMA) wait(b *ir.Builder, kind int64, kt *ir.Value) {
	x := t.g.x.at(b)
	gpu.MbarrierWait(b, t.g.loc, t.bars, t.bar(x, kind, kt), t.parity(x, kind, kt, 0))
}

// release frees key tile kt's stage of kind (full K or V) once the
// product that read it has completed: lane 0 of each warp arrives at
// the stage's empty barrier in every block of the cluster (the warp's
// gpu.wgmma wait covers the whole product's reads).
func (t *flashTMA) release(b *ir.Builder, kind int64, kt *ir.Value) {
	g, loc := t.g, t.g.loc
	x := g.x.at(b)
	empty := t.bar(x, kind+1, kt)
	loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIEQ, x.and(g.tid, gpu.WarpSize-1), x.c(0)), nil, func(b *ir.Builder) []*ir.Value {
		gpu.MbarrierArrive(b, loc, t.bars, empty)
		for d := range t.cluster() - 1 {
			x := x.at(b)
			gpu.MbarrierArriveCluster(b, loc, t.bars, empty, x.i32(x.xorc(t.rank, d+1)))
		}
		return nil
	}, nil)
}
