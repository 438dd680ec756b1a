package interp

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// The asynchronous barriers. An mbarrier's state (arrivals a phase,
// arrivals still missing, the phase) lives in the block, keyed by its
// workgroup buffer and index, not in the i64 word itself, which the
// kernel does not read. gpu.mbarrier_wait parks its thread until the
// phase of its parity completes; the arrival that completes a phase
// releases the threads waiting for it. A block whose threads all wait
// (at barriers of either kind) is reported as a deadlock, as at
// gpu.barrier. A phase also waits for its transaction bytes (tma.go).
// gpu.mbarrier_arrive_cluster arrives at the barrier of the same buffer
// and index in another block of the cluster, under the cluster's lock.
// gpu.setmaxnreg is a warpgroup collective with no effect:
// running it checks that the whole warpgroup executes it together.
func init() {
	registerAll(map[string]Rule{
		gpu.MbarrierInitOp:          mbarrierInitRule,
		gpu.MbarrierArriveOp:        mbarrierArriveRule,
		gpu.MbarrierArriveClusterOp: mbarrierArriveClusterRule,
		gpu.MbarrierWaitOp:          mbarrierWaitRule,
		gpu.SetMaxNRegOp:            collectiveRule,
	})
	warpgroupOps[gpu.SetMaxNRegOp] = func(_ *ir.Operation, args [][]Value) ([][]Value, error) {
		return make([][]Value, len(args)), nil
	}
}

// mbarKey names an mbarrier: its workgroup buffer and index.
type mbarKey struct {
	buf *Buffer
	i   int64
}

// mbarState is an mbarrier's state.
type mbarState struct {
	expected, pending int64
	phase             int64
	// tx is the transaction bytes the phase still waits for: added by
	// gpu.mbarrier_expect_tx, taken by each gpu.tma_load that signals
	// the barrier (it may go below zero before the expectation comes).
	tx int64
	// landing writes the boxes of the copies signalling the phase into
	// workgroup memory, when the phase completes.
	landing []func() error
}

// mbarOf returns the thread, the key of the mbarrier its op addresses
// with args[0] and args[1], and the i32 operand args[2] when present.
func mbarOf(f *Frame, args []Value) (*gpuThread, mbarKey, int64, error) {
	t, err := threadOf(f)
	if err != nil {
		return nil, mbarKey{}, 0, err
	}
	buf, err := bufferArg(args[0])
	if err != nil {
		return nil, mbarKey{}, 0, err
	}
	ints, err := indexValues(args[1:])
	if err != nil {
		return nil, mbarKey{}, 0, err
	}
	if n := buf.shape[0]; ints[0] < 0 || ints[0] >= n {
		return nil, mbarKey{}, 0, fmt.Errorf("barrier index %d is outside the %d barriers of %s", ints[0], n, buf)
	}
	var x int64
	if len(ints) > 1 {
		x = ints[1]
	}
	return t, mbarKey{buf, ints[0]}, x, nil
}

func mbarrierInitRule(f *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	t, key, count, err := mbarOf(f, args)
	if err != nil {
		return nil, err
	}
	if count < 1 || count >= 1<<20 {
		return nil, fmt.Errorf("count %d is not in [1, 2^20)", count)
	}
	b := t.blk
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.thr {
		if w.state == atMbarrier && w.mbar == key {
			return nil, fmt.Errorf("initializes barrier %d while thread %d waits at it", key.i, w.id)
		}
	}
	if b.mbars == nil {
		b.mbars = map[mbarKey]*mbarState{}
	}
	b.mbars[key] = &mbarState{expected: count, pending: count}
	return nil, nil
}

// state returns the initialized mbarrier key. b.mu is held.
func (b *blockState) state(key mbarKey) (*mbarState, error) {
	s := b.mbars[key]
	if s == nil {
		return nil, fmt.Errorf("barrier %d of %s is used before gpu.mbarrier_init", key.i, key.buf)
	}
	return s, nil
}

// signalMbar applies signal to the current phase of the mbarrier args
// address (under its block's lock, with the op's extra operand, 0 if
// none), then completes the phase if that was its last arrival or byte:
// the one path of every op that counts towards a phase.
func signalMbar(f *Frame, args []Value, signal func(s *mbarState, x int64) error) error {
	t, key, x, err := mbarOf(f, args)
	if err != nil {
		return err
	}
	b := t.blk
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.signal(key, x, signal)
}

// signal is signalMbar's part under the lock, on the mbarrier key of b.
func (b *blockState) signal(key mbarKey, x int64, signal func(s *mbarState, x int64) error) error {
	s, err := b.state(key)
	if err != nil {
		return err
	}
	if err := signal(s, x); err != nil {
		return err
	}
	return b.maybeComplete(key, s)
}

// peer returns the block of rank r of b's cluster and its counterpart of
// b's workgroup buffer buf (the same attribution). The lock is held.
func (b *blockState) peer(r int64, buf *Buffer) (*blockState, *Buffer, error) {
	if r < 0 || r >= int64(len(b.blocks)) {
		return nil, nil, fmt.Errorf("rank %d is outside the cluster of %d blocks", r, len(b.blocks))
	}
	o := b.blocks[r]
	for i, w := range b.wg {
		if w == buf {
			return o, o.wg[i], nil
		}
	}
	return nil, nil, fmt.Errorf("%s is not a workgroup buffer of the block", buf)
}

func mbarrierArriveRule(f *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	return nil, signalMbar(f, args, func(s *mbarState, _ int64) error {
		s.pending--
		return nil
	})
}

// mbarrierArriveClusterRule arrives at the barrier of the block of rank
// args[2] of the cluster.
func mbarrierArriveClusterRule(f *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	t, key, r, err := mbarOf(f, args)
	if err != nil {
		return nil, err
	}
	b := t.blk
	b.mu.Lock()
	defer b.mu.Unlock()
	o, buf, err := b.peer(r, key.buf)
	if err != nil {
		return nil, err
	}
	return nil, o.signal(mbarKey{buf, key.i}, 0, func(s *mbarState, _ int64) error {
		s.pending--
		return nil
	})
}

// maybeComplete completes the current phase of the mbarrier key once its
// arrivals and its transaction bytes are all in: the copies signalling it
// land in workgroup memory, the phase advances and the threads waiting
// for it run on. b.mu is held.
func (b *blockState) maybeComplete(key mbarKey, s *mbarState) error {
	if s.pending > 0 || s.tx != 0 {
		return nil
	}
	landing := s.landing
	s.landing = nil
	for _, land := range landing {
		if err := land(); err != nil {
			return err
		}
	}
	s.phase++
	s.pending = s.expected
	for _, w := range b.thr {
		if w.state == atMbarrier && w.mbar == key && s.phase&1 != w.mbarParity {
			b.release(w)
		}
	}
	return nil
}

func mbarrierWaitRule(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	t, key, parity, err := mbarOf(f, args)
	if err != nil {
		return nil, err
	}
	if parity != 0 && parity != 1 {
		return nil, fmt.Errorf("parity %d is not 0 or 1", parity)
	}
	b := t.blk
	b.mu.Lock()
	s, err := b.state(key)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	if s.phase&1 != parity {
		b.mu.Unlock()
		return nil, nil
	}
	t.mbar, t.mbarParity = key, parity
	return nil, t.wait(atMbarrier, op)
}
