package interp

import (
	"errors"
	"fmt"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// The warpgroup tensor-core ops. gpu.wgmma is warpgroup-collective: each
// thread parks at it with its operands, as at gpu.mma_sync, and when the
// 128 threads of its warpgroup (warps 4q to 4q+3) all wait at it, the
// block's scheduler computes every thread's results (completeWarpgroup).
// gpu.wgmma computes at once, so its results are complete whatever its
// pending count and gpu.wgmma_wait passes them on; gpu.fence_proxy_async
// orders memory for the tensor cores, which the interpreter's memory needs
// no help with.
func init() {
	registerAll(map[string]Rule{
		gpu.WGMMAOp:           collectiveRule,
		gpu.WGMMAWaitOp:       passOperands,
		gpu.FenceProxyAsyncOp: noResults,
	})
}

// warpgroupOps are the collectives of a whole warpgroup rather than a warp.
var warpgroupOps = map[string]func(op *ir.Operation, args [][]Value) ([][]Value, error){
	gpu.WGMMAOp: wgmmaLanes,
}

// completeWarpgroup runs op, at which every lane of warp w waits, when
// the other three warps of w's warpgroup wait at it too. b.mu is held.
func (b *blockState) completeWarpgroup(op *ir.Operation, w int) {
	first := w / 4 * gpu.WarpgroupSize
	if first+gpu.WarpgroupSize > len(b.thr) {
		b.fail(ir.Errorf(op.Loc(), "'%s' needs the %d threads of warpgroup %d, but the block has %d threads",
			op.Name(), gpu.WarpgroupSize, w/4, len(b.thr)))
		return
	}
	group := b.thr[first : first+gpu.WarpgroupSize]
	for _, t := range group {
		switch {
		case t.state == exited:
			b.fail(ir.Errorf(op.Loc(), "'%s' needs every thread of warpgroup %d; thread %d exited", op.Name(), w/4, t.id))
			return
		case t.state != atShuffle || t.waitOp != op:
			return // (a deadlock or a divergence, if never, is reported by progress)
		}
	}
	args := make([][]Value, len(group))
	for k, t := range group {
		args[k] = t.collective
	}
	res, err := warpgroupOps[op.Name()](op, args)
	if err != nil {
		b.fail(ir.Errorf(op.Loc(), "'%s': %v", op.Name(), err))
		return
	}
	for k, t := range group {
		t.collective = res[k]
		b.release(t)
	}
}

// wgmmaLanes computes D = A·B (+ C) of a gpu.wgmma from the operands of the
// 128 threads of a warpgroup (gpu.wgmma's description gives the layouts).
// Products of 16-bit floats are exact in float64; each k16 step's sum is
// rounded to f32 once, as each of the PTX instructions returns f32.
func wgmmaLanes(op *ir.Operation, args [][]Value) ([][]Value, error) {
	ft, ok := gpu.MMAElementType(op).(*ir.FloatType)
	if !ok {
		return nil, errors.New("has no element type")
	}
	s := gpu.WGMMAShapeOf(op)
	nA := int(s.NumA())
	bits, off, err := wgmmaShared(args, nA, "B")
	if err != nil {
		return nil, err
	}
	rows, cols := s.StoredRows(), s.StoredCols()
	if off < 0 || off%gpu.WGMMAAlign != 0 || off+(cols-1)/gpu.WGMMASwizzleRow*s.Panel+rows*gpu.WGMMASwizzleRow > int64(len(bits)) {
		return nil, fmt.Errorf("B at offset %d is not 1024-byte aligned inside its buffer of %d elements", off, len(bits))
	}
	K, N := 16*s.KSteps, s.N
	bAt := func(k, n int64) float64 {
		r, c := n, k
		if s.TransB {
			r, c = k, n
		}
		return ir.FloatFromBits(uint64(bits[off+gpu.SwizzledOffset(r, c, s.Panel)]), ft)
	}
	bm := make([][]float64, K)
	for k := range K {
		bm[k] = make([]float64, N)
		for n := range N {
			bm[k][n] = bAt(k, n)
		}
	}
	a := make([][]float64, 64)
	d := make([][]float64, 64)
	for i := range a {
		a[i], d[i] = make([]float64, K), make([]float64, N)
	}
	if s.AShared {
		aBits, aOff, err := wgmmaShared(args, 0, "A")
		if err != nil {
			return nil, err
		}
		if aOff < 0 || aOff%gpu.WGMMAAlign != 0 || aOff+64*gpu.WGMMASwizzleRow > int64(len(aBits)) {
			return nil, fmt.Errorf("A at offset %d is not 1024-byte aligned inside its buffer of %d elements", aOff, len(aBits))
		}
		for row := range int64(64) {
			for k := range K {
				a[row][k] = ir.FloatFromBits(uint64(aBits[aOff+gpu.SwizzledOffset(row, k, 0)]), ft)
			}
		}
	}
	for l, as := range args {
		w, g, t := l/gpu.WarpSize, l%gpu.WarpSize/4, l%4
		for i := range nA {
			if s.AShared {
				break
			}
			ks, r := i/4, i%4
			v, ok := as[i].(*Tensor)
			if !ok || v.elem != ir.I32 {
				return nil, fmt.Errorf("expected an i32 A register, got %s", as[i])
			}
			u := uint32(v.data.([]int32)[0])
			row, col := 16*w+g+8*(r%2), 16*ks+2*t+8*(r/2)
			a[row][col] = ir.FloatFromBits(uint64(u&0xffff), ft)
			a[row][col+1] = ir.FloatFromBits(uint64(u>>16), ft)
		}
		if s.Acc {
			for i := range N / 2 {
				v, ok := as[nA+2+int(i)].(*Tensor)
				if !ok || v.elem != ir.F32 {
					return nil, fmt.Errorf("expected an f32 accumulator, got %s", as[nA+2+int(i)])
				}
				row, col := accPosition(w, g, t, int(i))
				d[row][col] = float64(v.data.([]float32)[0])
			}
		}
	}
	for ks := range s.KSteps {
		for row := range 64 {
			for n := range N {
				sum := d[row][n]
				for k := 16 * ks; k < 16*ks+16; k++ {
					sum += a[row][k] * bm[k][n]
				}
				d[row][n] = float64(float32(sum))
			}
		}
	}
	out := make([][]Value, len(args))
	for l := range out {
		w, g, t := l/gpu.WarpSize, l%gpu.WarpSize/4, l%4
		out[l] = make([]Value, N/2)
		for i := range out[l] {
			row, col := accPosition(w, g, t, i)
			out[l][i] = &Tensor{elem: ir.F32, data: []float32{float32(d[row][col])}}
		}
	}
	return out, nil
}

// wgmmaShared returns the 16-bit buffer and the offset of a gpu.wgmma's
// workgroup operand what (A or B) at operand i, which every thread of the
// warpgroup must pass alike.
func wgmmaShared(args [][]Value, i int, what string) ([]uint16, int64, error) {
	buf, err := bufferArg(args[0][i])
	if err != nil {
		return nil, 0, err
	}
	off, err := indexValue(args[0][i+1])
	if err != nil {
		return nil, 0, err
	}
	for l, as := range args {
		ob, err := bufferArg(as[i])
		if err != nil {
			return nil, 0, err
		}
		o, err := indexValue(as[i+1])
		if err != nil {
			return nil, 0, err
		}
		if ob != buf || o != off {
			return nil, 0, fmt.Errorf("thread %d of the warpgroup reads %s at offset %d of %s, thread 0 at %d of %s", l, what, o, ob, off, buf)
		}
	}
	bits, ok := buf.data.([]uint16)
	if !ok {
		return nil, 0, fmt.Errorf("reads %s from %s, not a buffer of 16-bit floats", what, buf)
	}
	return bits, off, nil
}

// accPosition is the row and column of accumulator value i of lane (g,
// t) of warp w in a warpgroup.
func accPosition(w, g, t, i int) (int, int) {
	return 16*w + g + 8*(i%4/2), 8*(i/4) + 2*t + i%2
}
