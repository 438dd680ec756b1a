package togpu

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The TMA producer of the warp-specialized kernel (MMATile.TMA). A and B
// reach the kernel as tensor maps (gpu.TensorMapAttr: the runtime
// encodes them at launch) with the 128-byte swizzle, so that one
// gpu.tma_load writes a box in the very layout the consumers' gpu.wgmma
// descriptors read (gemm_wgmma.go): A's tile M rows × 64 k in one box;
// B's, stored [N, K], N rows × 64 k in one box, or, stored [K, N], one
// box of 64 k rows × 64 columns a panel. Boxes overhanging the matrices
// are zero-filled by the hardware, which makes the edges free. One thread
// of the producer warpgroup does all the copying: for each k tile it
// waits for the stage to be free (empty), expects the stage's bytes on
// full (its only arrival: full counts one a phase) and issues the
// copies, which complete full's phase as they land; the other 127
// threads of the warpgroup only give their registers away. A batched
// operand's map has the batch as a third, outermost dimension, so that a
// box never runs into the next matrix.

// tmaFits reports whether the TMA copies can read the nest's operands:
// 16-bit elements, rows a multiple of 16 bytes apart (the maps' strides),
// A stored with K last, and each operand a buffer of its own that the
// nest reads only in the product (a tensor-map argument is read by
// gpu.tma_load only). Otherwise the tile copies with cp.async.
func (p *mma) tmaFits(nest *ir.Operation) bool {
	if p.conv != nil || p.a.mem == p.b.mem || !p.a.kLast || (p.elem != ir.BF16 && p.elem != ir.F16) {
		return false
	}
	for _, o := range []*operand{&p.a, &p.b} {
		if o.vec != 8 {
			return false
		}
		uses := 0
		nest.Walk(func(op *ir.Operation) bool {
			for _, v := range op.Operands() {
				if v == o.mem {
					uses++
				}
			}
			return true
		})
		if uses != 1 {
			return false
		}
	}
	return true
}

// tmaOperand is one operand's tensor map and the copies of a k tile.
type tmaOperand struct {
	arg  *ir.Value // the kernel's tensor-map argument
	geom gpu.TensorMap
	o    *operand
	smem *ir.Value
	size int64 // elements of a stage
}

// tmaOperand marks o's kernel argument as a tensor map and returns it;
// outer is the tile's extent along o's outer dimension, share that of a
// copy (B's in a cluster: outer over the cluster's blocks).
func (p *mma) tmaOperand(k *kernelGen, o *operand, smem *ir.Value, outer, share int64) (tmaOperand, error) {
	arg := k.m[o.mem]
	if arg == nil || !arg.IsBlockArgument() || arg.ParentBlock() != k.entry {
		return tmaOperand{}, fmt.Errorf("%s: the tma tile's operand is not a kernel argument", PassName)
	}
	nb := len(p.batch)
	tk := p.tile.K
	g := gpu.TensorMap{Swizzle: 128, Box: []int64{tk, gpu.WGMMASwizzleRow}, Inner: []int64{o.shape[nb+1]}}
	if o.kLast {
		g.Box = []int64{share, tk}
	}
	if nb > 0 { // the matrices of the batch, outermost
		g.Box = append([]int64{1}, g.Box...)
		g.Inner = []int64{o.shape[nb], o.shape[nb+1]}
	}
	gpu.SetTensorMap(k.kernel, arg.Index(), g)
	return tmaOperand{arg: arg, geom: g, o: o, smem: smem, size: outer * tk}, nil
}

// tmaProducer emits the copying thread's loop over the block's tiles
// (overTiles) and their k tiles: claim waits for iteration it's stage to
// be free and returns it; the copies of k tile kt go to it, signalling
// its full barrier (the stage's index in bars).
func (p *mma) tmaProducer(k *kernelGen, b *ir.Builder, g gemmBlock, bars, rank *ir.Value, overTiles func(*ir.Builder, func(*ir.Builder, gemmBlock, *ir.Value)) *ir.Value,
	claim func(x ix, it *ir.Value) *ir.Value) error {
	loc, tl := k.loc, p.tile
	cluster := max(tl.Cluster, 1)
	ops := [2]tmaOperand{}
	var err error
	if ops[0], err = p.tmaOperand(k, &p.a, g.sa, tl.M, tl.M); err != nil {
		return err
	}
	if ops[1], err = p.tmaOperand(k, &p.b, g.sb, tl.N, tl.N/cluster); err != nil {
		return err
	}
	bytes := (tl.M + tl.N) * tl.K * mmaElemBytes
	overTiles(b, func(b *ir.Builder, gt gemmBlock, base *ir.Value) {
		loop.For(b, loc, arith.ConstantIndex(b, loc, 0), arith.ConstantIndex(b, loc, gt.numK), arith.ConstantIndex(b, loc, 1), nil,
			func(b *ir.Builder, kt *ir.Value, _ []*ir.Value) []*ir.Value {
				x := gt.x.at(b)
				it := arith.Binary(b, arith.OpAddI, loc, base, kt)
				s := claim(x, it)
				full := x.index(s)
				gpu.MbarrierExpectTx(b, loc, bars, full, arith.ConstantInt(b, loc, bytes, ir.I32))
				k0 := x.i32(x.mulc(x.from(kt), tl.K))
				for _, t := range ops {
					// This block's share of the tile: its outer
					// offset and its elements' in the stage (all of A's;
					// of B's in a cluster, rank's part, multicast).
					outerBase, at, mask, parts := gt.rowBase, x.mulc(s, t.size), int64(0), int64(1)
					if t.o == &p.b {
						outerBase, parts = gt.colBase, cluster
						if cluster > 1 {
							mask = 1<<cluster - 1
							share := tl.N / cluster
							outerBase = x.add(outerBase, x.mulc(rank, share))
							at = x.add(at, x.mulc(rank, share*tl.K))
						}
					}
					panels := int64(1)
					if !t.o.kLast {
						panels = t.o.tile / gpu.WGMMASwizzleRow / parts
					}
					for j := range panels {
						coords := []*ir.Value{x.i32(outerBase), k0}
						if !t.o.kLast {
							coords = []*ir.Value{k0, x.i32(x.addc(outerBase, j*gpu.WGMMASwizzleRow))}
						}
						if len(p.batch) > 0 {
							coords = append([]*ir.Value{x.i32(gt.z)}, coords...)
						}
						dst := x.index(x.addc(at, j*t.o.panel))
						if mask != 0 {
							gpu.TMALoadMulticast(b, loc, t.smem, dst, bars, full, t.arg, coords, mask)
						} else {
							gpu.TMALoad(b, loc, t.smem, dst, bars, full, t.arg, coords)
						}
					}
				}
				return nil
			})
	})
	return nil
}
