package togpu

import (
	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The warp-specialized wgmma GEMM kernel (MMATile.Specialized): the
// block's first M/64 warpgroups only multiply (consumers), its last one
// only copies (the producer), and they hand the stages over through
// mbarriers instead of a block-wide barrier every k tile. Stage s has
// two barriers: full[s] completes when the producer's 128 threads have
// written k tile kt into it (each thread's copies complete, then
// fence.proxy.async so that gpu.wgmma sees them, then its arrival), and
// empty[s] when the consumers' warps are done with it (lane 0 of each
// arrives once the product that read it is complete: one arrival a
// warp, not a thread, as 256 atomics a k tile on one word would queue
// with the products' reads of shared memory). Round kt/Stages of stage
// kt%Stages waits for full's phase of parity (kt/Stages)%2 and empty's
// of parity (kt/Stages+1)%2: a fresh barrier counts its phase before the
// first as complete, so the producer's first round passes at once.
//
// The producer issues k tile kt's copies, then waits for tile kt−1's
// (its own group before the newest) and arrives at its full barrier, so
// that two tiles' copies are in flight a thread. A consumer issues k
// tile kt's product with the tile before still in flight (gpu.wgmma
// pending 1, which completes the one before), then frees the stage of
// tile kt−1; at kt = 0 it arrives at a spare barrier nobody waits for,
// which keeps the loop free of branches around the products in flight.
// That the pipeline cannot stall for good needs at least 3 stages: the
// producer waits for tile kt−Stages's stage, freed once the consumers
// have issued tile kt−Stages+1, whose full barrier the producer
// completed after issuing tile kt−Stages+2 ≤ kt−1.
//
// With clusters (MMATile.Cluster, TMA only), the blocks of a cluster
// compute vertically adjacent tiles that share B's: each producer copies
// its A and its share of B, multicast to every block of the cluster, and
// expects the whole stage's bytes on its own full barrier (the others'
// shares count them down too); each consumer warp frees a stage at the
// empty barrier of every block of the cluster, so that no producer
// overwrites a stage some block still reads. The cluster meets after the
// barriers' initialization and before exiting (the last arrivals are
// remote): a consumer arrives at the cluster's barrier right after its
// block's last remote arrival (before the epilogue, whose stores the
// arrival's release would wait for; after the last tile when
// persistent), the producer after its copies, and all wait at the end.
//
// The producer lowers its registers to wsProducerRegs and the consumers
// raise theirs to wsConsumerRegs (gpu.setmaxnreg; the block's size caps
// them at entry: setup's nvvm.maxntid); the epilogue is the other wgmma
// kernels', each consumer warp storing its 16 rows.

// The registers a thread of the producer and of the consumers: together
// at most the 64 Ki of an SM (128·40 + 256·232 = 64512).
const (
	wsProducerRegs = 40
	wsConsumerRegs = 232
)

// wsBarriers is the number of mbarriers of a specialized kernel: full
// and empty for each stage, and the spare.
func wsBarriers(stages int64) int64 { return 2*stages + 1 }

// emitWS builds the warp-specialized kernel's body (see above).
func (p *mma) emitWS(k *kernelGen, b *ir.Builder, g gemmBlock, aWG *ir.Value, shape gpu.WGMMAShape, stageOf func(ix, *ir.Value) *ir.Value) error {
	loc, x, tl := k.loc, g.x, p.tile
	stages, numK := tl.Stages, g.numK
	consumers := tl.threads() - tl.copyThreads()
	// full[s] at s, empty[s] at stages + s, the spare at 2·stages.
	bars := gpu.AddWorkgroupBuffer(k.kernel, gpu.WorkgroupMemRef(wsBarriers(stages), ir.I64))
	// The staged epilogue's buffer, where the nest fits it.
	var stg *ir.Value
	st := p.stagedStore(k)
	if tl.Staged && st != nil {
		elem := ir.ElementTypeOf(st.Operand(1).Type())
		stg = gpu.AddWorkgroupBuffer(k.kernel, gpu.WorkgroupMemRef(tl.stagedBytes()/mmaElemBytes, elem))
	}
	idx := func(b *ir.Builder, v int64) *ir.Value { return arith.ConstantIndex(b, loc, v) }
	i32 := func(b *ir.Builder, v int64) *ir.Value { return arith.ConstantInt(b, loc, v, ir.I32) }
	tid := gpu.ThreadID(b, loc, "x")
	// With clusters, a stage is free once the consumers of every block
	// of the cluster are done with it (its copies write to all).
	cluster := max(tl.Cluster, 1)
	frees := cluster * consumers / gpu.WarpSize
	loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIEQ, tid, idx(b, 0)), nil, func(b *ir.Builder) []*ir.Value {
		// (With TMA, one arrival fills a stage: its expected bytes.)
		fills := tl.copyThreads()
		if tl.TMA {
			fills = 1
		}
		for s := range stages {
			gpu.MbarrierInit(b, loc, bars, idx(b, s), i32(b, fills))
			gpu.MbarrierInit(b, loc, bars, idx(b, stages+s), i32(b, frees))
		}
		gpu.MbarrierInit(b, loc, bars, idx(b, 2*stages), i32(b, frees))
		if tl.TMA { // the barriers visible to the copies' async proxy
			gpu.FenceProxyAsync(b, loc)
		}
		return nil
	}, nil)
	if cluster > 1 {
		// Every block's barriers initialized before the others signal
		// them.
		k.kernel.SetAttr(gpu.ClusterSizeAttr, ir.Int(cluster, ir.I64))
		gpu.ClusterArrive(b, loc)
		gpu.ClusterWait(b, loc)
	} else {
		gpu.Barrier(b, loc)
	}
	// The block's tiles: bid, bid + grid, … below g.tiles (one, bid,
	// unless the grid is capped: Persistent).
	bid := gpu.BlockID(b, loc, "x")
	grid := gpu.GridDim(b, loc, "x")
	// The block's rank in its cluster (its share of B, the other blocks).
	var rank *ir.Value
	if cluster > 1 {
		rank = x.and(x.from(bid), cluster-1)
	}
	tiles := x.index(g.tiles)
	// overTiles runs body for each of the block's tiles with its setup
	// and the k iteration of its first k tile (j·numK for the block's
	// j-th tile), an index, and returns the block's k iterations. The
	// iteration is carried through the loop, not computed as (t −
	// bid)/grid: a 64-bit division by a variable is a subroutine call,
	// and the driver's ptxas (CUDA 13) serializes every gpu.wgmma of a
	// kernel with a call (session 13's ncu: a wait after each one).
	overTiles := func(b *ir.Builder, body func(b *ir.Builder, gt gemmBlock, base *ir.Value)) *ir.Value {
		return loop.For(b, loc, bid, tiles, grid, []*ir.Value{idx(b, 0)}, func(b *ir.Builder, t *ir.Value, base []*ir.Value) []*ir.Value {
			body(b, p.setupTile(k, b, g.sa, g.sb, x.at(b).from(t)), base[0])
			return []*ir.Value{arith.Binary(b, arith.OpAddI, loc, base[0], idx(b, numK))}
		}).Result(0)
	}
	// parity is the i32 parity of iteration it's round it/stages, plus
	// one for empty.
	parity := func(x ix, it *ir.Value, plus int64) *ir.Value {
		return x.i32(x.and(x.addc(x.div(x.from(it), x.c(stages)), plus), 1))
	}
	// bar is the index of iteration it's stage plus off (its barrier).
	bar := func(x ix, it *ir.Value, off int64) *ir.Value { return x.index(x.addc(stageOf(x, x.from(it)), off)) }
	// ready waits for the copies of iteration it (the thread's groups but
	// pending), makes them visible to the tensor cores and arrives at its
	// full barrier.
	ready := func(b *ir.Builder, it *ir.Value, pending int64) {
		gpu.CpAsyncWait(b, loc, pending)
		gpu.FenceProxyAsync(b, loc)
		gpu.MbarrierArrive(b, loc, bars, bar(x.at(b), it, 0))
	}
	// free arrives at the empty barrier i for the thread's warp (lane 0;
	// the warp's gpu.wgmma wait covers the whole product's reads).
	free := func(b *ir.Builder, i *ir.Value) {
		x := x.at(b)
		lane0 := arith.NewCmpI(b, loc, arith.CmpIEQ, g.lane, x.c(0))
		loop.If(b, loc, lane0, nil, func(b *ir.Builder) []*ir.Value {
			gpu.MbarrierArrive(b, loc, bars, i)
			for d := range cluster - 1 { // the other blocks' (cluster: a power of two)
				x := x.at(b)
				other := x.i32(x.xorc(rank, d+1))
				gpu.MbarrierArriveCluster(b, loc, bars, i, other)
			}
			return nil
		}, nil)
	}
	producer := arith.NewCmpI(b, loc, arith.CmpIUGE, tid, idx(b, consumers))
	var tmaErr error
	loop.If(b, loc, producer, nil, func(b *ir.Builder) []*ir.Value {
		gpu.SetMaxNReg(b, loc, wsProducerRegs, false)
		if tl.TMA {
			// One thread copies.
			first := arith.NewCmpI(b, loc, arith.CmpIEQ, tid, idx(b, consumers))
			loop.If(b, loc, first, nil, func(b *ir.Builder) []*ir.Value {
				tmaErr = p.tmaProducer(k, b, g, bars, rank, overTiles, func(x ix, it *ir.Value) *ir.Value {
					gpu.MbarrierWait(x.b, loc, bars, bar(x, it, stages), parity(x, it, 1))
					return stageOf(x, x.from(it))
				})
				return nil
			}, nil)
			if cluster > 1 {
				gpu.ClusterArrive(b, loc)
			}
			return nil
		}
		n := overTiles(b, func(b *ir.Builder, gt gemmBlock, base *ir.Value) {
			loop.For(b, loc, idx(b, 0), idx(b, numK), idx(b, 1), nil, func(b *ir.Builder, kt *ir.Value, _ []*ir.Value) []*ir.Value {
				x := x.at(b)
				it := arith.Binary(b, arith.OpAddI, loc, base, kt)
				gpu.MbarrierWait(b, loc, bars, bar(x, it, stages), parity(x, it, 1))
				gt.load(b, kt, func(x ix) *ir.Value { return stageOf(x, x.from(it)) }, loadExisting)
				// The iteration before, this tile's or the last one's.
				loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpINE, it, idx(b, 0)), nil, func(b *ir.Builder) []*ir.Value {
					ready(b, arith.Binary(b, arith.OpSubI, loc, it, idx(b, 1)), 1)
					return nil
				}, nil)
				return nil
			})
		})
		// The block's last iteration (none without tiles: bid ≥ tiles).
		loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpINE, n, idx(b, 0)), nil, func(b *ir.Builder) []*ir.Value {
			ready(b, arith.Binary(b, arith.OpSubI, loc, n, idx(b, 1)), 0)
			return nil
		}, nil)
		return nil
	}, func(b *ir.Builder) []*ir.Value {
		gpu.SetMaxNReg(b, loc, wsConsumerRegs, true)
		overTiles(b, func(b *ir.Builder, gt gemmBlock, base *ir.Value) {
			zf := arith.ConstantFloat(b, loc, 0, ir.F32)
			accs := make([]*ir.Value, tl.N/2)
			for i := range accs {
				accs[i] = zf
			}
			accs = loop.For(b, loc, idx(b, 0), idx(b, numK), idx(b, 1), accs,
				func(b *ir.Builder, kt *ir.Value, accs []*ir.Value) []*ir.Value {
					x := x.at(b)
					it := arith.Binary(b, arith.OpAddI, loc, base, kt)
					gpu.MbarrierWait(b, loc, bars, bar(x, it, 0), parity(x, it, 0))
					s := stageOf(x, x.from(it))
					aAt := x.index(x.add(x.mulc(s, tl.M*tl.K), aWG))
					bAt := x.index(x.mulc(s, tl.K*tl.N))
					d := gpu.WGMMA(b, loc, p.elem, shape, []*ir.Value{g.sa, aAt}, g.sb, bAt, accs)
					// The tile's k tile kt−1's product is complete: free
					// its stage (the spare barrier at kt = 0).
					prev := x.index(x.addc(stageOf(x, x.addc(x.from(it), stages-1)), stages))
					first := arith.NewCmpI(b, loc, arith.CmpIEQ, kt, idx(b, 0))
					free(b, arith.NewSelect(b, loc, first, idx(b, 2*stages), prev))
					return d
				}).Results()
			done := gpu.WGMMAWait(b, loc, 0, accs)
			// The tile's last k tile is complete too.
			x := x.at(b)
			last := arith.Binary(b, arith.OpAddI, loc, base, idx(b, numK-1))
			free(b, bar(x, last, stages))
			if cluster > 1 && tl.Persistent == 0 {
				// The block's last remote arrival: arrive at the
				// cluster's barrier before the epilogue's stores, which
				// its release would otherwise wait for.
				gpu.ClusterArrive(b, loc)
			}
			if stg != nil {
				p.stagedEpilogue(k, x, done, gt, stg, st)
			} else {
				p.epilogue(k, x, done, gt, x.mulc(gt.warp, 16), x.c(0), 1, tl.N/8)
			}
		})
		switch {
		case cluster > 1 && tl.Persistent > 0: // after all its tiles
			gpu.ClusterArrive(b, loc)
		case cluster > 1: // a block without a tile (there are none)
			loop.If(b, loc, arith.NewCmpI(b, loc, arith.CmpIUGE, bid, tiles), nil, func(b *ir.Builder) []*ir.Value {
				gpu.ClusterArrive(b, loc)
				return nil
			}, nil)
		}
		return nil
	})
	if cluster > 1 {
		// No block exits while another may still arrive at its barriers.
		gpu.ClusterWait(b, loc)
	}
	k.moduleTarget = gpu.WGMMATarget // the gpu.module's, set when placed
	return tmaErr
}
