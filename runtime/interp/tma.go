package interp

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// The Tensor Memory Accelerator. gpu.tma_load reads its box from global
// memory when it is issued (elements outside the tensor read as zero),
// takes the box's bytes from the transaction bytes of its mbarrier's
// current phase, and leaves the box to land in workgroup memory, at the
// swizzled offsets gpu.wgmma's descriptors read, when that phase
// completes: a thread that reads the box without waiting for the phase
// reads the stage's old contents, and a phase whose expected bytes
// (gpu.mbarrier_expect_tx) differ from the bytes its copies bring never
// completes, so its waiters are reported as a deadlock at their
// gpu.mbarrier_wait. A multicast copy (gpu.tma_load's mask) does all this
// in each block of the cluster it names, at the same buffer and barrier.
func init() {
	registerAll(map[string]Rule{
		gpu.TMALoadOp:          tmaLoadRule,
		gpu.MbarrierExpectTxOp: mbarrierExpectTxRule,
	})
}

// maxTx bounds an mbarrier phase's transaction bytes, as PTX's tx-count.
const maxTx = 1<<20 - 1

func mbarrierExpectTxRule(f *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	return nil, signalMbar(f, args, func(s *mbarState, bytes int64) error {
		if bytes < 0 || bytes > maxTx {
			return fmt.Errorf("%d transaction bytes is not in [0, 2^20)", bytes)
		}
		if s.tx += bytes; s.tx > maxTx {
			return fmt.Errorf("the phase's %d transaction bytes exceed 2^20 − 1", s.tx)
		}
		s.pending--
		return nil
	})
}

func tmaLoadRule(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	o := gpu.TMALoadOf(op)
	m, _, err := gpu.TensorMapOf(o.Map)
	if err != nil {
		return nil, err
	}
	dst, err := bufferArg(args[0])
	if err != nil {
		return nil, err
	}
	src, err := bufferArg(args[4])
	if err != nil {
		return nil, err
	}
	ints, err := indexValues(append([]Value{args[1]}, args[5:]...))
	if err != nil {
		return nil, err
	}
	di, coords := ints[0], ints[1:]
	sizes, err := m.Sizes(src.shape[0])
	if err != nil {
		return nil, fmt.Errorf("tensor map of %s: %w", src, err)
	}
	size := int64(elemBytes(dst.elem))
	n := m.BoxElements()
	if di < 0 || di*size%m.DestAlign() != 0 || di+n > dst.shape[0] {
		return nil, fmt.Errorf("destination %d is not a %d-byte aligned box of %d elements inside %s", di, m.DestAlign(), n, dst)
	}
	// The box, row-major: element j's position in each dimension.
	zero := dst.load(0)
	zero.data = newStorage(dst.elem, 1)
	box := make([]*Tensor, n)
	pos := make([]int64, len(sizes))
	for j := range n {
		rest, off, in := j, int64(0), true
		for d := len(sizes) - 1; d >= 0; d-- {
			pos[d] = coords[d] + rest%m.Box[d]
			rest /= m.Box[d]
			in = in && pos[d] >= 0 && pos[d] < sizes[d]
		}
		box[j] = zero
		if in {
			for d := range sizes {
				off = off*sizes[d] + pos[d]
			}
			box[j] = src.load(int(off))
		}
	}
	// land is the copy into the block whose buffer dst is, signalling
	// its mbarrier.
	land := func(dst *Buffer) func(s *mbarState, _ int64) error {
		return func(s *mbarState, _ int64) error {
			s.landing = append(s.landing, func() error {
				for j, v := range box {
					at := di + m.SwizzleOffset(int64(j)*size)/size
					if err := dst.store(int(at), v); err != nil {
						return fmt.Errorf("%s at %s: %w", gpu.TMALoadOp, op.Loc(), err)
					}
				}
				return nil
			})
			s.tx -= n * size
			return nil
		}
	}
	mask := gpu.Multicast(op)
	if mask == 0 {
		return nil, signalMbar(f, args[2:4], land(dst))
	}
	// Multicast: the same buffer and barrier of each block in mask.
	t, key, _, err := mbarOf(f, args[2:4])
	if err != nil {
		return nil, err
	}
	b := t.blk
	b.mu.Lock()
	defer b.mu.Unlock()
	if mask>>len(b.blocks) != 0 {
		return nil, fmt.Errorf("multicast mask %#x names blocks outside the cluster of %d", mask, len(b.blocks))
	}
	for r := range int64(len(b.blocks)) {
		if mask>>r&1 == 0 {
			continue
		}
		o, to, err := b.peer(r, dst)
		if err != nil {
			return nil, fmt.Errorf("multicast mask %#x: %w", mask, err)
		}
		_, bars, err := b.peer(r, key.buf)
		if err != nil {
			return nil, err
		}
		if err := o.signal(mbarKey{bars, key.i}, 0, land(to)); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
