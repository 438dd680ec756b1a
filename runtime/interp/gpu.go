package interp

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// The gpu dialect. gpu.launch_func simulates a launch faithfully on the
// CPU: blocks run one after another (the blocks of a cluster,
// gpu.cluster_size, together), and the threads of a block run
// concurrently, one goroutine each, so that gpu.barrier really waits for
// every thread of the block and gpu.shuffle exchanges values among the 32
// lanes of a warp. Every thread has its own Frame; kernel memref arguments
// are the caller's Buffers (shared by reference, as device memory is), and
// each block gets fresh zeroed workgroup Buffers, each thread fresh zeroed
// private Buffers.
//
// A barrier or shuffle that not all threads reach (divergence), or that
// leaves every thread of a block waiting for one another, is reported as a
// located error instead of hanging.
func init() {
	registerAll(map[string]Rule{
		gpu.LaunchFuncOp:    launchRule,
		gpu.ReturnOp:        passOperands,
		gpu.ThreadIDOp:      idRule(func(t *gpuThread) [3]int64 { return t.tid }),
		gpu.BlockIDOp:       idRule(func(t *gpuThread) [3]int64 { return t.blk.bid }),
		gpu.BlockDimOp:      idRule(func(t *gpuThread) [3]int64 { return t.blk.launch.block }),
		gpu.GridDimOp:       idRule(func(t *gpuThread) [3]int64 { return t.blk.launch.grid }),
		gpu.BarrierOp:       barrierRule,
		gpu.ClusterArriveOp: clusterArriveRule,
		gpu.ClusterWaitOp:   clusterWaitRule,
		gpu.ShuffleOp:       shuffleRule,
	})
}

// MaxThreadsPerBlock is the largest block a launch may have, as on CUDA devices.
const MaxThreadsPerBlock = 1024

// threads maps the Frame of each running kernel thread to its state. Rules
// see only their Frame, and Frame has no room for the thread's position;
// entries live as long as the thread runs.
var threads sync.Map // *Frame → *gpuThread

// launchState is what every block of one launch shares.
type launchState struct {
	op, kernel  *ir.Operation
	grid, block [3]int64
	args        []Value
	workgroup   []*ir.MemRefType
	private     []*ir.MemRefType
}

func launchRule(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	l, ok := gpu.LaunchOf(op)
	if !ok {
		return nil, errors.New("has malformed operand segments")
	}
	kernel := gpu.LookupKernel(op)
	if kernel == nil {
		return nil, fmt.Errorf("launches %s, which is not a gpu.func in a gpu.module", l.Kernel)
	}
	ft := gpu.FuncType(kernel)
	if ft == nil || gpu.Body(kernel) == nil {
		return nil, fmt.Errorf("kernel %s has no type or no body", l.Kernel)
	}
	ls := &launchState{op: op, kernel: kernel, args: args[len(args)-len(l.Args):]}
	sizes, err := indexValues(args[:6])
	if err != nil {
		return nil, err
	}
	threadsPerBlock := int64(1)
	for i := range 3 {
		ls.grid[i], ls.block[i] = sizes[i], sizes[3+i]
		if ls.grid[i] <= 0 || ls.block[i] <= 0 {
			return nil, fmt.Errorf("grid (%d, %d, %d) and block (%d, %d, %d) sizes must be positive",
				sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5])
		}
		threadsPerBlock *= ls.block[i]
		if threadsPerBlock > MaxThreadsPerBlock {
			return nil, fmt.Errorf("block of (%d, %d, %d) threads exceeds %d threads", sizes[3], sizes[4], sizes[5], MaxThreadsPerBlock)
		}
	}
	if len(ls.args) != len(ft.Inputs) {
		return nil, fmt.Errorf("passes %d arguments to %s, which takes %d", len(ls.args), l.Kernel, len(ft.Inputs))
	}
	for i, a := range ls.args {
		if err := checkValue(a, ft.Inputs[i]); err != nil {
			return nil, fmt.Errorf("kernel argument %d: %w", i, err)
		}
	}
	for _, v := range gpu.WorkgroupBuffers(kernel) {
		mt, ok := v.Type().(*ir.MemRefType)
		if !ok || !mt.Ranked() || ir.NumElements(mt.Shape()) < 0 {
			return nil, ir.Errorf(kernel.Loc(), "workgroup buffer of type %s must be a memref of static shape", v.Type())
		}
		ls.workgroup = append(ls.workgroup, mt)
	}
	for _, v := range gpu.PrivateBuffers(kernel) {
		mt, ok := v.Type().(*ir.MemRefType)
		if !ok || !mt.Ranked() || ir.NumElements(mt.Shape()) < 0 {
			return nil, ir.Errorf(kernel.Loc(), "private buffer of type %s must be a memref of static shape", v.Type())
		}
		ls.private = append(ls.private, mt)
	}
	cs := gpu.ClusterSize(kernel)
	if ls.grid[0]%cs != 0 {
		return nil, fmt.Errorf("a grid of %d blocks along x is not whole clusters of %d (%s of %s)", ls.grid[0], cs, gpu.ClusterSizeAttr, l.Kernel)
	}
	for z := range ls.grid[2] {
		for y := range ls.grid[1] {
			for x := int64(0); x < ls.grid[0]; x += cs {
				if err := runCluster(f, ls, [3]int64{x, y, z}, cs); err != nil {
					var d *ir.Diagnostic
					if errors.As(err, &d) {
						if cs == 1 {
							d.Note(op.Loc(), "in block (%d, %d, %d) of the launch here", x, y, z)
						} else {
							d.Note(op.Loc(), "in the cluster of blocks (%d to %d, %d, %d) of the launch here", x, x+cs-1, y, z)
						}
					}
					return nil, err
				}
			}
		}
	}
	return nil, nil
}

// Thread states, as the block's scheduler sees them.
const (
	running = iota
	atBarrier
	atShuffle
	atMbarrier
	atCluster // gpu.cluster_wait
	exited
)

// gpuThread is one simulated thread.
type gpuThread struct {
	blk  *blockState
	tid  [3]int64
	id   int // linear id in the block: x fastest
	wake chan struct{}

	// Guarded by blk.mu.
	state  int
	waitOp *ir.Operation
	// The shuffle operands given and the results received.
	shufValue         Value
	shufOffset, width int64
	shufResult        Value
	shufValid         bool
	// The operands given to, then the results of, a warp-collective op
	// other than gpu.shuffle (mma.go).
	collective []Value
	// The mbarrier and the parity of the phase the thread waits for.
	mbar       mbarKey
	mbarParity int64
	// Whether the thread arrived at the cluster barrier and has not
	// waited yet, and the phase it arrived at.
	clusterArrived bool
	clusterPhase   int64
}

// clusterState is what the blocks of one cluster share: the lock that
// guards the synchronization state of all of them (a block's threads
// signal the others' mbarriers) and the first error, which aborts them
// all. Without gpu.cluster_size a cluster is one block.
type clusterState struct {
	mu      sync.Mutex
	err     error
	abort   chan struct{} // closed on the first error
	aborted bool
	blocks  []*blockState // by rank
	// The cluster barrier: its phase and the arrivals at it so far, of
	// threads in all (gpu.cluster_arrive).
	phase, arrived, threads int64
}

// blockState is one block of threads and the synchronization among them.
type blockState struct {
	*clusterState
	launch *launchState
	bid    [3]int64
	thr    []*gpuThread
	wg     []*Buffer // the workgroup buffers, in the kernel's order

	counts [exited + 1]int // threads per state
	mbars  map[mbarKey]*mbarState
}

// errAborted ends a thread whose block failed elsewhere.
var errAborted = errors.New("block aborted")

// runCluster runs the cs blocks from bid along x together.
func runCluster(f *Frame, ls *launchState, bid [3]int64, cs int64) error {
	cl := &clusterState{abort: make(chan struct{})}
	var run []func()
	for r := range cs {
		b := &blockState{clusterState: cl, launch: ls, bid: [3]int64{bid[0] + r, bid[1], bid[2]}}
		cl.blocks = append(cl.blocks, b)
		cl.threads += ls.block[0] * ls.block[1] * ls.block[2]
		start, err := b.prepare(f)
		if err != nil {
			// The caller's note names the cluster; say which of its
			// blocks could not start (none of them ran).
			var d *ir.Diagnostic
			if cs > 1 && errors.As(err, &d) {
				d.Message = fmt.Sprintf("block (%d, %d, %d), rank %d of its cluster: %s", b.bid[0], b.bid[1], b.bid[2], r, d.Message)
			}
			return err
		}
		run = append(run, start...)
	}
	var wg sync.WaitGroup
	for _, r := range run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r()
		}()
	}
	wg.Wait()
	return cl.err
}

// prepare makes b's buffers and threads and returns each thread's run.
func (b *blockState) prepare(f *Frame) ([]func(), error) {
	ls := b.launch
	n := int(ls.block[0] * ls.block[1] * ls.block[2])
	bufs := make([]Value, len(ls.workgroup))
	for i, mt := range ls.workgroup {
		buf, err := NewBuffer(mt.ElementType(), mt.Shape())
		if err != nil {
			return nil, ir.Errorf(ls.kernel.Loc(), "workgroup buffer %d: %v", i, err)
		}
		bufs[i] = buf
		b.wg = append(b.wg, buf)
	}
	kargs := append(append(make([]Value, 0, len(ls.args)+len(bufs)), ls.args...), bufs...)
	threadArgs := make([][]Value, n)
	for i := range threadArgs {
		threadArgs[i] = kargs
		if len(ls.private) == 0 {
			continue
		}
		threadArgs[i] = slices.Clip(slices.Clone(kargs))
		for j, mt := range ls.private {
			buf, err := NewBuffer(mt.ElementType(), mt.Shape())
			if err != nil {
				return nil, ir.Errorf(ls.kernel.Loc(), "private buffer %d: %v", j, err)
			}
			threadArgs[i] = append(threadArgs[i], buf)
		}
	}
	b.thr = make([]*gpuThread, n)
	for i := range b.thr {
		b.thr[i] = &gpuThread{
			blk:  b,
			id:   i,
			tid:  [3]int64{int64(i) % ls.block[0], int64(i) / ls.block[0] % ls.block[1], int64(i) / (ls.block[0] * ls.block[1])},
			wake: make(chan struct{}, 1),
		}
	}
	b.counts[running] = n
	run := make([]func(), len(b.thr))
	for i, t := range b.thr {
		run[i] = func() {
			fr := &Frame{in: f.in, values: map[*ir.Value]Value{}, depth: f.depth + 1}
			threads.Store(fr, t)
			_, err := fr.RunRegion(ls.kernel.Region(0), threadArgs[t.id])
			threads.Delete(fr)
			t.exit(err)
		}
	}
	return run, nil
}

// exit records that t finished, with err if it failed.
func (t *gpuThread) exit(err error) {
	b := t.blk
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil && !errors.Is(err, errAborted) {
		b.fail(err)
	}
	b.setState(t, exited, nil)
	b.progress(t)
}

// fail records the block's first error and wakes every waiting thread.
// b.mu is held.
func (b *blockState) fail(err error) {
	if b.aborted {
		return
	}
	b.aborted, b.err = true, err
	close(b.abort)
}

func (b *blockState) setState(t *gpuThread, s int, op *ir.Operation) {
	b.counts[t.state]--
	b.counts[s]++
	t.state, t.waitOp = s, op
}

// wait parks t at op in state s until the scheduler releases it. b.mu is
// held on entry and released on return.
func (t *gpuThread) wait(s int, op *ir.Operation) error {
	b := t.blk
	b.setState(t, s, op)
	b.progress(t)
	b.mu.Unlock()
	select {
	case <-t.wake:
		return nil
	case <-b.abort:
		return errAborted
	}
}

// release lets a waiting thread run on. b.mu is held.
func (b *blockState) release(t *gpuThread) {
	b.setState(t, running, nil)
	t.wake <- struct{}{}
}

// progress completes the shuffle of t's warp and the block's barrier when
// everyone they wait for has arrived, and reports a deadlock when every
// thread waits and neither can complete. b.mu is held.
func (b *blockState) progress(t *gpuThread) {
	if b.aborted {
		return
	}
	b.completeShuffle(t.id / gpu.WarpSize)
	if b.aborted {
		return
	}
	live := len(b.thr) - b.counts[exited]
	if n := b.counts[atBarrier]; n > 0 && n == live {
		b.completeBarrier()
		return
	}
	// A deadlock of the cluster: a block whose threads all wait may still
	// be released by another block's (an mbarrier's, the cluster's
	// barrier).
	run, live := 0, 0
	for _, o := range b.blocks {
		run += o.counts[running]
		live += len(o.thr) - o.counts[exited]
	}
	if run == 0 && live > 0 {
		for _, o := range b.blocks {
			if len(o.thr) > o.counts[exited] {
				b.fail(o.deadlock())
				return
			}
		}
	}
}

// clusterArriveRule counts the thread's arrival at the cluster barrier;
// the last of the cluster's completes the phase and releases the threads
// waiting for it.
func clusterArriveRule(f *Frame, _ *ir.Operation, _ []Value) ([]Value, error) {
	t, err := threadOf(f)
	if err != nil {
		return nil, err
	}
	cl := t.blk.clusterState
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if t.clusterArrived {
		return nil, fmt.Errorf("arrives at the cluster barrier again before waiting for it (%s)", gpu.ClusterWaitOp)
	}
	t.clusterArrived, t.clusterPhase = true, cl.phase
	if cl.arrived++; cl.arrived < cl.threads {
		return nil, nil
	}
	cl.phase++
	cl.arrived = 0
	for _, b := range cl.blocks {
		for _, w := range b.thr {
			if w.state == atCluster {
				w.clusterArrived = false
				b.release(w)
			}
		}
	}
	return nil, nil
}

// clusterWaitRule parks the thread until the phase it arrived at
// completes.
func clusterWaitRule(f *Frame, op *ir.Operation, _ []Value) ([]Value, error) {
	t, err := threadOf(f)
	if err != nil {
		return nil, err
	}
	cl := t.blk.clusterState
	cl.mu.Lock()
	if !t.clusterArrived {
		cl.mu.Unlock()
		return nil, fmt.Errorf("waits at the cluster barrier without arriving first (%s)", gpu.ClusterArriveOp)
	}
	if cl.phase > t.clusterPhase {
		t.clusterArrived = false
		cl.mu.Unlock()
		return nil, nil
	}
	return nil, t.wait(atCluster, op)
}

// completeBarrier releases the threads waiting at the barrier, all live
// threads of the block, if they all wait at the same one and none exited.
func (b *blockState) completeBarrier() {
	var op *ir.Operation
	for _, t := range b.thr {
		if t.state != atBarrier {
			continue
		}
		if op == nil {
			op = t.waitOp
		} else if t.waitOp != op {
			b.fail(b.divergence(op, t))
			return
		}
	}
	if b.counts[exited] > 0 {
		b.fail(ir.Errorf(op.Loc(), "divergent barrier: %d of the %d threads of the block exited without reaching it (threads %s)",
			b.counts[exited], len(b.thr), b.idsIn(exited, nil)))
		return
	}
	for _, t := range b.thr {
		b.release(t)
	}
}

// completeShuffle performs the shuffle of warp w when all its live lanes
// wait at it.
func (b *blockState) completeShuffle(w int) {
	lanes := b.thr[w*gpu.WarpSize : min((w+1)*gpu.WarpSize, len(b.thr))]
	var op *ir.Operation
	for _, t := range lanes {
		switch {
		case t.state == exited:
		case t.state != atShuffle:
			return
		case op == nil:
			op = t.waitOp
		case t.waitOp != op:
			b.fail(b.divergence(op, t))
			return
		}
	}
	if op == nil {
		return
	}
	if _, ok := warpgroupOps[op.Name()]; ok {
		b.completeWarpgroup(op, w)
		return
	}
	if op.Name() != gpu.ShuffleOp {
		b.completeCollective(op, lanes)
		return
	}
	mode := gpu.ShuffleMode(op)
	for k, t := range lanes {
		if t.state != atShuffle {
			continue
		}
		src := int64(k)
		switch mode {
		case "xor":
			src ^= t.shufOffset
		case "down":
			src += t.shufOffset
		case "up":
			src -= t.shufOffset
		case "idx":
			src = t.shufOffset
		}
		t.shufResult, t.shufValid = t.shufValue, false
		if src >= 0 && src < t.width {
			if src >= int64(len(lanes)) || lanes[src].state != atShuffle {
				b.fail(ir.Errorf(op.Loc(), "lane %d of warp %d (thread %d) reads lane %d, which is not active (exited or beyond the block)",
					k, w, t.id, src))
				return
			}
			t.shufResult, t.shufValid = lanes[src].shufValue, true
		}
	}
	for _, t := range lanes {
		if t.state == atShuffle {
			b.release(t)
		}
	}
}

// divergence describes threads waiting at two different sync ops.
func (b *blockState) divergence(op *ir.Operation, other *gpuThread) error {
	d := ir.Errorf(op.Loc(), "divergent '%s': threads of the block wait at different synchronization points (threads %s here)",
		op.Name(), b.idsIn(-1, op))
	d.Note(other.waitOp.Loc(), "while threads %s wait here", b.idsIn(-1, other.waitOp))
	return d
}

// deadlock describes a block whose threads all wait and none can proceed.
func (b *blockState) deadlock() error {
	var first *gpuThread
	for _, t := range b.thr {
		if t.state == atBarrier || t.state == atShuffle || t.state == atMbarrier || t.state == atCluster {
			first = t
			break
		}
	}
	what := "the block"
	if len(b.blocks) > 1 {
		what = fmt.Sprintf("the cluster (block (%d, %d, %d) shown)", b.bid[0], b.bid[1], b.bid[2])
	}
	d := ir.Errorf(first.waitOp.Loc(), "deadlock: every thread of %s waits and none can proceed; threads %s wait at this '%s'",
		what, b.idsIn(-1, first.waitOp), first.waitOp.Name())
	seen := map[*ir.Operation]bool{first.waitOp: true}
	for _, t := range b.thr {
		if t.waitOp != nil && !seen[t.waitOp] {
			seen[t.waitOp] = true
			d.Note(t.waitOp.Loc(), "threads %s wait at this '%s'", b.idsIn(-1, t.waitOp), t.waitOp.Name())
		}
	}
	if n := b.counts[exited]; n > 0 {
		d.Note(b.launch.kernel.Loc(), "threads %s exited", b.idsIn(exited, nil))
	}
	return d
}

// idsIn lists, as ranges, the linear ids of the threads in state s (s >= 0)
// or waiting at op.
func (b *blockState) idsIn(s int, op *ir.Operation) string {
	var parts []string
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		if end-1 == start {
			parts = append(parts, fmt.Sprint(start))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", start, end-1))
		}
		start = -1
	}
	for i, t := range b.thr {
		in := (s >= 0 && t.state == s) || (op != nil && t.waitOp == op)
		if in && start < 0 {
			start = i
		} else if !in {
			flush(i)
		}
	}
	flush(len(b.thr))
	return strings.Join(parts, ", ")
}

// threadOf returns the simulated thread running in f.
func threadOf(f *Frame) (*gpuThread, error) {
	if t, ok := threads.Load(f); ok {
		return t.(*gpuThread), nil
	}
	return nil, errors.New("runs outside a kernel launched by gpu.launch_func")
}

// idRule returns the rule of an id or size op, which reads dimension
// DimIndex of the triple get returns.
func idRule(get func(*gpuThread) [3]int64) Rule {
	return func(f *Frame, op *ir.Operation, _ []Value) ([]Value, error) {
		t, err := threadOf(f)
		if err != nil {
			return nil, err
		}
		d := gpu.DimIndex(op)
		if d < 0 {
			return nil, errors.New("has no dimension")
		}
		v := get(t)[d]
		if b, ok := op.Properties().Get(gpu.UpperBoundAttr).(ir.IntegerAttr); ok && v >= b.Value {
			return nil, fmt.Errorf("is %d, not below its upper_bound %d (undefined behaviour)", v, b.Value)
		}
		return []Value{indexScalar(v)}, nil
	}
}

func barrierRule(f *Frame, op *ir.Operation, _ []Value) ([]Value, error) {
	t, err := threadOf(f)
	if err != nil {
		return nil, err
	}
	t.blk.mu.Lock()
	return nil, t.wait(atBarrier, op)
}

func shuffleRule(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	t, err := threadOf(f)
	if err != nil {
		return nil, err
	}
	ints, err := indexValues(args[1:])
	if err != nil {
		return nil, err
	}
	offset, width := ints[0], ints[1]
	if width <= 0 || width > gpu.WarpSize {
		return nil, fmt.Errorf("width %d is not in [1, %d]", width, gpu.WarpSize)
	}
	b := t.blk
	b.mu.Lock()
	t.shufValue, t.shufOffset, t.width = args[0], offset, width
	if err := t.wait(atShuffle, op); err != nil {
		return nil, err
	}
	// The scheduler wrote the results before releasing t.
	b.mu.Lock()
	res, valid := t.shufResult, t.shufValid
	b.mu.Unlock()
	return []Value{res, &Tensor{elem: ir.I1, data: []bool{valid}}}, nil
}
