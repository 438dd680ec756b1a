package interp

import (
	"errors"
	"fmt"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// The tensor-core ops. gpu.ldmatrix and gpu.mma_sync are warp-collective:
// each lane parks at the op with its operands, as at a gpu.shuffle, and when
// the 32 lanes of the warp have arrived the block's scheduler computes every
// lane's results (completeCollective). gpu.cp_async copies at once: a
// finished copy is one the hardware may also have finished, so the
// interpreter checks programs that wait correctly but does not catch a read
// before gpu.cp_async_wait.
func init() {
	registerAll(map[string]Rule{
		gpu.LdMatrixOp:      collectiveRule,
		gpu.WarpSyncOp:      collectiveRule,
		gpu.MMASyncOp:       collectiveRule,
		gpu.CpAsyncOp:       cpAsyncRule,
		gpu.CpAsyncCommitOp: noResults,
		gpu.CpAsyncWaitOp:   noResults,
	})
}

func noResults(*Frame, *ir.Operation, []Value) ([]Value, error) { return nil, nil }

// collectives compute the results of every lane of a warp from the
// operands of every lane.
var collectives = map[string]func(op *ir.Operation, args [][]Value) ([][]Value, error){
	gpu.LdMatrixOp: ldMatrixLanes,
	gpu.MMASyncOp:  mmaLanes,
	// (gpu.warp_sync: the lanes only meet, as the collective's wait.)
	gpu.WarpSyncOp: func(_ *ir.Operation, args [][]Value) ([][]Value, error) { return make([][]Value, len(args)), nil },
}

// collectiveRule parks the lane at op with its operands until the warp's
// results are computed.
func collectiveRule(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	t, err := threadOf(f)
	if err != nil {
		return nil, err
	}
	b := t.blk
	b.mu.Lock()
	t.collective = append([]Value{}, args...) // (non-nil: the lane is here)
	if err := t.wait(atShuffle, op); err != nil {
		return nil, err
	}
	b.mu.Lock()
	res := t.collective
	b.mu.Unlock()
	return res, nil
}

// completeCollective runs op for the lanes of one warp, all waiting at it.
// b.mu is held.
func (b *blockState) completeCollective(op *ir.Operation, lanes []*gpuThread) {
	args := make([][]Value, gpu.WarpSize)
	for k, t := range lanes {
		if t.state == atShuffle {
			args[k] = t.collective
		}
	}
	for k := range args {
		if args[k] == nil {
			b.fail(ir.Errorf(op.Loc(), "'%s' needs all %d lanes of warp %d; lane %d is not active (exited or beyond the block)",
				op.Name(), gpu.WarpSize, lanes[0].id/gpu.WarpSize, k))
			return
		}
	}
	res, err := collectives[op.Name()](op, args)
	if err != nil {
		b.fail(ir.Errorf(op.Loc(), "'%s': %v", op.Name(), err))
		return
	}
	for k, t := range lanes {
		t.collective = res[k]
		b.release(t)
	}
}

func i32Scalar(v uint32) *Tensor { return &Tensor{elem: ir.I32, data: []int32{int32(v)}} }

// ldMatrixLanes loads num 8×8 matrices: lane 8i+r gives the offset of row
// r of matrix i; lane l gets, for each matrix, the pair at row l/4 and
// columns 2(l%4), 2(l%4)+1 (of the transpose with trans).
func ldMatrixLanes(op *ir.Operation, args [][]Value) ([][]Value, error) {
	num := int(gpu.IntProp(op, gpu.NumAttr, 0))
	trans := gpu.IsTransposed(op)
	buf, err := bufferArg(args[0][0])
	if err != nil {
		return nil, err
	}
	bits, ok := buf.data.([]uint16)
	if !ok {
		return nil, fmt.Errorf("reads %s, not a buffer of 16-bit floats", buf)
	}
	// rows[i][r] is the offset of row r of matrix i.
	rows := make([][8]int64, num)
	for i := range num {
		for r := range 8 {
			off, err := indexValue(args[8*i+r][1])
			if err != nil {
				return nil, err
			}
			if off < 0 || off%8 != 0 || off+8 > int64(len(bits)) {
				return nil, fmt.Errorf("lane %d's row offset %d is not a 16-byte aligned row inside %s", 8*i+r, off, buf)
			}
			rows[i][r] = off
		}
	}
	at := func(i, r, c int) uint32 {
		if trans {
			r, c = c, r
		}
		return uint32(bits[rows[i][r]+int64(c)])
	}
	out := make([][]Value, gpu.WarpSize)
	for l := range out {
		g, t := l/4, l%4
		out[l] = make([]Value, num)
		for i := range num {
			out[l][i] = i32Scalar(at(i, g, 2*t) | at(i, g, 2*t+1)<<16)
		}
	}
	return out, nil
}

// mmaLanes computes D = A·B + C for m16n8k16 from the lanes' fragments
// (gpu.mma_sync's description gives the layout). Products of 16-bit
// floats are exact in float64; the sum is rounded to f32 once, as the
// tensor cores' wide accumulation nearly does.
func mmaLanes(op *ir.Operation, args [][]Value) ([][]Value, error) {
	ft, ok := gpu.MMAElementType(op).(*ir.FloatType)
	if !ok {
		return nil, errors.New("has no element type")
	}
	var a [16][16]float64
	var bm [16][8]float64
	var c [16][8]float64
	half := func(v Value, hi bool) (float64, error) {
		t, ok := v.(*Tensor)
		if !ok || t.elem != ir.I32 {
			return 0, fmt.Errorf("expected an i32 fragment register, got %s", v)
		}
		w := uint32(t.data.([]int32)[0])
		if hi {
			w >>= 16
		}
		return ir.FloatFromBits(uint64(w&0xffff), ft), nil
	}
	for l, as := range args {
		g, t := l/4, l%4
		for r := range gpu.MMARegsA {
			row, col := g+8*(r%2), 2*t+8*(r/2)
			for h := range 2 {
				v, err := half(as[r], h == 1)
				if err != nil {
					return nil, err
				}
				a[row][col+h] = v
			}
		}
		for r := range gpu.MMARegsB {
			for h := range 2 {
				v, err := half(as[gpu.MMARegsA+r], h == 1)
				if err != nil {
					return nil, err
				}
				bm[2*t+8*r+h][g] = v
			}
		}
		for r := range gpu.MMARegsC {
			v, ok := as[gpu.MMARegsA+gpu.MMARegsB+r].(*Tensor)
			if !ok || v.elem != ir.F32 {
				return nil, fmt.Errorf("expected an f32 accumulator, got %s", as[gpu.MMARegsA+gpu.MMARegsB+r])
			}
			c[g+8*(r/2)][2*t+r%2] = float64(v.data.([]float32)[0])
		}
	}
	out := make([][]Value, gpu.WarpSize)
	for l := range out {
		g, t := l/4, l%4
		out[l] = make([]Value, gpu.MMARegsC)
		for r := range gpu.MMARegsC {
			row, col := g+8*(r/2), 2*t+r%2
			s := c[row][col]
			for k := range 16 {
				s += a[row][k] * bm[k][col]
			}
			out[l][r] = &Tensor{elem: ir.F32, data: []float32{float32(s)}}
		}
	}
	return out, nil
}

// cpAsyncRule copies min(srcBytes, bytes) bytes and zero-fills the rest of
// the bytes-long destination.
func cpAsyncRule(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	dst, err := bufferArg(args[0])
	if err != nil {
		return nil, err
	}
	src, err := bufferArg(args[2])
	if err != nil {
		return nil, err
	}
	ints, err := indexValues([]Value{args[1], args[3], args[4]})
	if err != nil {
		return nil, err
	}
	di, si, srcBytes := ints[0], ints[1], ints[2]
	bytes := gpu.IntProp(op, gpu.BytesAttr, 0)
	width := int64(elemBytes(dst.elem))
	n := bytes / width
	if srcBytes < 0 || srcBytes > bytes || srcBytes%width != 0 {
		return nil, fmt.Errorf("source size %d is not a multiple of %d bytes in [0, %d]", srcBytes, width, bytes)
	}
	if di < 0 || di%n != 0 || di+n > dst.shape[0] {
		return nil, fmt.Errorf("destination %d is not %d-byte aligned inside %s", di, bytes, dst)
	}
	m := srcBytes / width
	if m > 0 && (si < 0 || si%n != 0 || si+m > src.shape[0]) {
		return nil, fmt.Errorf("source %d is not %d-byte aligned inside %s", si, bytes, src)
	}
	zero := dst.load(0)
	zero.data = newStorage(dst.elem, 1)
	for j := range n {
		v := zero
		if j < m {
			v = src.load(int(si + j))
		}
		if err := dst.store(int(di+j), v); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// elemBytes is the size in device memory of an element type (i1 is a byte).
func elemBytes(t ir.Type) int {
	switch t := t.(type) {
	case *ir.FloatType:
		return t.Width / 8
	case *ir.IntegerType:
		return max(1, t.Width/8)
	}
	return 8
}
