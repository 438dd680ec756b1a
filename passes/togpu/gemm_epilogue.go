package togpu

import (
	"maps"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The staged epilogue (MMATile.Staged) stores the output tile through
// workgroup memory. A thread's accumulators are pairs of columns of rows
// g and g+8 (the m16n8 layout): stored directly (mma.epilogue), a warp's
// store writes 8 rows × 16 bytes, eight partial lines for the L1 to
// handle while the tensor cores wait for the next tile. Instead each
// warp computes the nest's epilogue body for its 16 rows 64 columns at a
// time (a pass) and writes the results, bf16 or f16, to its own 16 × 64
// slice of a staging buffer; after gpu.warp_sync each lane reads 16
// bytes (8 columns) of one row, and the warp's store covers 4 whole
// 128-byte row segments. In the slice, row r's 16-byte chunk c lives at
// chunk c xor (r mod 8), so that both the pair writes (8 rows, one
// chunk) and the row reads hit 32 distinct banks. A second gpu.warp_sync
// ends the pass before the next one overwrites the slice.
//
// It takes a nest whose body ends in one store of a 2-byte element at the
// nest's own indices (the product's element, after bias, activation,
// casts) into a buffer the body does not read, with N a static multiple
// of 8: a 16-byte chunk is then wholly inside or outside the output, and
// row starts are 16-byte aligned. Other nests keep mma.epilogue.

// stagedRows and stagedCols are a warp's slice of the staging buffer: its
// 16 rows of the tile (one m16 tile of a warpgroup's 64) by the 64
// columns of a pass (128 bytes of 2-byte elements, eight n8 tiles).
const (
	stagedRows = 16
	stagedCols = 64
)

// stagedBytes is the staging buffer of a tile: a slice for each consumer
// warp.
func (t MMATile) stagedBytes() int64 {
	return 4 * t.M / wgmmaTileM * stagedRows * stagedCols * mmaElemBytes
}

// stagedStore returns the body's store the staged epilogue takes over, or
// nil when the nest does not fit it (see above).
func (p *mma) stagedStore(k *kernelGen) *ir.Operation {
	if p.conv != nil || p.n == ir.Dynamic || p.n%8 != 0 {
		return nil
	}
	body := loop.Body(k.nest)
	nb := len(p.batch)
	var st *ir.Operation
	for op := body.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
		switch {
		case op == p.kloop:
		case op.NumRegions() > 0:
			return nil
		case op.Name() == loop.StoreOp:
			if st != nil {
				return nil
			}
			st = op
		}
	}
	if st == nil || st.NumOperands() != 2+nb+2 {
		return nil
	}
	mt, ok := st.Operand(1).Type().(*ir.MemRefType)
	if !ok || (mt.ElementType() != ir.BF16 && mt.ElementType() != ir.F16) || len(mt.Shape()) != nb+2 || mt.Shape()[nb+1] != p.n {
		return nil
	}
	for d := range nb + 2 {
		if st.Operand(2+d) != body.Argument(d) {
			return nil
		}
	}
	read := false
	k.nest.Walk(func(op *ir.Operation) bool {
		read = read || (op.Name() == loop.LoadOp && op.Operand(0) == st.Operand(1))
		return true
	})
	if read {
		return nil
	}
	return st
}

// batchIndices returns k.m with the nest's batch arguments bound to the
// indices of matrix z, row-major over the batch extents.
func (p *mma) batchIndices(k *kernelGen, x ix, z *ir.Value) map[*ir.Value]*ir.Value {
	body := loop.Body(k.nest)
	m := maps.Clone(k.m)
	inner := int64(1)
	for d := len(p.batch) - 1; d >= 0; d-- {
		m[body.Argument(d)] = x.index(x.rem(x.div(z, x.c(inner)), x.c(p.batch[d])))
		inner *= p.batch[d]
	}
	return m
}

// stagedEpilogue stores a consumer warp's accumulators, results (the
// tile's N/8 n8 tiles of the warp's 16 rows, 4 f32 a tile), through
// stg, the warp's slice at warp·16·64, with st the body's store (see
// above).
func (p *mma) stagedEpilogue(k *kernelGen, x ix, results []*ir.Value, blk gemmBlock, stg *ir.Value, st *ir.Operation) {
	b, loc := x.b, x.loc
	body := loop.Body(k.nest)
	nb := len(p.batch)
	m := p.batchIndices(k, x, blk.z)
	rowArg, colArg := body.Argument(nb), body.Argument(nb+1)
	lane := blk.lane
	g, t2 := x.shr(lane, 2), x.mulc(x.and(lane, 3), 2)
	slice := x.mulc(blk.warp, stagedRows*stagedCols)
	warpRow := x.add(blk.rowBase, x.mulc(blk.warp, stagedRows))
	// A lane's part of the copy-out: row lane/8 (+4, +8, +12), chunk lane%8.
	cr, cc := x.shr(lane, 3), x.and(lane, 7)
	// inBounds is the guard of an element at row and col (nil: none).
	inBounds := func(x ix, row, col *ir.Value) *ir.Value {
		var ok *ir.Value
		if blk.rowTail {
			ok = x.lt(row, blk.mRows)
		}
		if blk.colTail {
			ok = x.both2(ok, x.lt(col, blk.nCols))
		}
		return ok
	}
	guarded := func(b *ir.Builder, ok *ir.Value, body func(b *ir.Builder)) {
		if ok == nil {
			body(b)
			return
		}
		loop.If(b, loc, ok, nil, func(b *ir.Builder) []*ir.Value { body(b); return nil }, nil)
	}
	for pass := range p.tile.N / stagedCols {
		// The pairs: n8 tile f = 8·pass + j, rows g and g + 8.
		for j := range int64(stagedCols / 8) {
			f := pass*stagedCols/8 + j
			for h := range int64(2) {
				row := x.addc(x.add(warpRow, g), 8*h)
				col := x.addc(x.add(blk.colBase, t2), 8*f)
				accs := results[f*4+2*h : f*4+2*h+2]
				// Row g + 8h of the slice, chunk j xor g (g < 8).
				at := x.add(x.add(x.addc(x.add(slice, x.mulc(g, stagedCols)), 8*h*stagedCols), x.mulc(x.xorc(g, j), 8)), t2)
				guarded(b, inBounds(x, row, col), func(b *ir.Builder) {
					x := x.at(b)
					cols := p.cols(x, body, col, true)
					vals := make([]*ir.Value, 2)
					for e := range vals {
						me := maps.Clone(m)
						maps.Copy(me, cols[e])
						me[rowArg] = x.index(row)
						me[p.kloop.Result(0)] = accs[e]
						for op := body.First(); op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
							if op != p.kloop && op != st {
								b.Insert(op.Clone(me))
							}
						}
						vals[e] = me[st.Operand(0)]
					}
					base := x.index(at)
					for e, v := range vals {
						loop.Store(b, loc, v, stg, arith.Binary(b, arith.OpAddI, loc, base, arith.ConstantIndex(b, loc, int64(e))))
					}
				})
			}
		}
		gpu.WarpSync(b, loc)
		// The copy-out: 16 bytes of row cr + 4i a lane.
		for i := range int64(stagedRows / 4) {
			r := x.addc(cr, 4*i)
			at := x.index(x.add(x.add(slice, x.mulc(r, stagedCols)), x.mulc(x.xor(cc, x.and(r, 7)), 8)))
			vals := make([]*ir.Value, 8)
			for e := range vals {
				vals[e] = loop.Load(b, loc, stg, arith.Binary(b, arith.OpAddI, loc, at, arith.ConstantIndex(b, loc, int64(e))))
			}
			row := x.add(warpRow, r)
			col := x.add(x.addc(blk.colBase, pass*stagedCols), x.mulc(cc, 8))
			guarded(b, inBounds(x, row, col), func(b *ir.Builder) {
				x := x.at(b)
				// The chunk's first column, written so that its alignment
				// to 8 shows (targets/llvm makes the 8 stores one).
				c0 := arith.Binary(b, arith.OpMulI, loc, x.index(x.shr(col, 3)), arith.ConstantIndex(b, loc, 8))
				for e, v := range vals {
					me := maps.Clone(m)
					me[rowArg] = x.index(row)
					me[colArg] = arith.Binary(b, arith.OpAddI, loc, c0, arith.ConstantIndex(b, loc, int64(e)))
					me[st.Operand(0)] = v
					b.Insert(st.Clone(me))
				}
			})
		}
		gpu.WarpSync(b, loc)
	}
}
