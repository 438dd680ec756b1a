package exec

import (
	"errors"
	"fmt"
	"slices"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
)

// Communicator runs the collectives of launch plans (loop.collective) for
// a Runtime: runtime/nccl's Comm is one. Collective queues the collective
// kind on stream and returns (see nccl.Comm.Collective for the meaning of
// count).
type Communicator interface {
	// Rank returns this process's rank in group and the group's size.
	Rank(group string) (rank, size int, err error)
	// Collective queues collective kind from send into recv on stream;
	// count is as nccl.Comm.Collective reads it.
	Collective(kind, reduce string, root int, elem ir.Type, send, recv cuda.DevicePtr, count int, stream *cuda.Stream) error
}

func init() {
	hostOps[loop.CollectiveOp] = (*planner).collective
	// NCCL's collectives are stream-ordered device work, recorded by a
	// capture as kernels are.
	captureSafe[loop.CollectiveOp] = true
}

// SetCommunicator makes c run the runtime's collectives. Without one the
// runtime is a world of one rank: each collective copies its source to its
// destination, as the interpreter's world of one does.
func (rt *Runtime) SetCommunicator(c Communicator) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.comm = c
}

func (rt *Runtime) communicator() Communicator {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.comm
}

// collective is loop.collective: the communicator queues it on the
// runtime's communication stream, ordered after the plan's earlier steps by
// an event (runCollective); without a communicator it is a copy on the
// plan's stream. Either way a CUDA-graph capture records it.
func (c *planner) collective(op *ir.Operation) (stepFunc, error) {
	if op.NumOperands() != 2 || op.NumResults() != 0 {
		return nil, ir.Errorf(op.Loc(), "%s must have two operands and no results", loop.CollectiveOp)
	}
	var elem ir.Type
	for _, v := range op.Operands() {
		mt, err := globalMemRef(op, v.Type())
		if err != nil {
			return nil, err
		}
		elem = mt.ElementType()
	}
	in, err := c.uses(op)
	if err != nil {
		return nil, err
	}
	spec := loop.CollectiveOf(op)
	return func(r *runState) error {
		src, dst := r.slots[in[0]].b, r.slots[in[1]].b
		if src.mem.freed || dst.mem.freed {
			return ir.Errorf(op.Loc(), "%s of a deallocated buffer", loop.CollectiveOp)
		}
		if err := runCollective(r, op, spec, elem, src, dst); err != nil {
			return ir.Errorf(op.Loc(), "%s (%s): %v", loop.CollectiveOp, spec.Kind, err)
		}
		return nil
	}, nil
}

// runCollective checks the buffers' sizes against the group's and queues
// the collective.
func runCollective(r *runState, op *ir.Operation, s loop.Collective, elem ir.Type, src, dst *devBuffer) error {
	comm := r.rt.communicator()
	rank, size := 0, 1
	if comm != nil {
		var err error
		if rank, size, err = comm.Rank(s.Group); err != nil {
			return err
		}
	} else if s.Group != "world" {
		return fmt.Errorf("unknown process group %q (a runtime without a communicator has only \"world\", of one rank)", s.Group)
	}
	ns, err := elementCount(src.shape)
	if err != nil {
		return err
	}
	nd, err := elementCount(dst.shape)
	if err != nil {
		return err
	}
	count, want := ns, ns
	switch s.Kind {
	case "all_gather":
		want = ns * int64(size)
	case "reduce_scatter":
		count, want = nd, ns/int64(size)
	}
	if nd != want || s.Kind == "reduce_scatter" && ns%int64(size) != 0 {
		return fmt.Errorf("%s of %d elements over %d ranks into %d elements (compiled for another number of ranks?)", s.Kind, ns, size, nd)
	}
	if (s.Kind == "all_gather" || s.Kind == "reduce_scatter") && size > 1 {
		if outer, _ := elementCount(src.shape[:s.Axis]); outer != 1 {
			return fmt.Errorf("%s along axis %d of %v: NCCL concatenates whole buffers, so the dims before the axis must be 1", s.Kind, s.Axis, src.shape)
		}
	}
	if (s.Kind == "broadcast" || s.Kind == "reduce_to") && s.Root >= int64(size) {
		return fmt.Errorf("root %d is not a rank of group %q, which has %d", s.Root, s.Group, size)
	}
	if count == 0 {
		return nil
	}
	esize, err := elemSize(elem)
	if err != nil {
		return err
	}
	if comm == nil {
		// A world of one rank: every collective gives the source back.
		return r.rt.cuda.CopyDtoDAsync(dst.mem.ptr, src.mem.ptr, uint64(ns)*uint64(esize), r.stream)
	}
	// The collective runs on the communication stream, after the work
	// queued so far on the plan's; the plan's stream waits for it only
	// where a later step touches its buffers (joinCollectives).
	stream, ev, err := r.rt.collectiveStream(op)
	if err != nil {
		return err
	}
	if err := ev.issued.Record(r.stream); err != nil {
		return err
	}
	if err := r.rt.cuda.WaitEvent(stream, ev.issued); err != nil {
		return err
	}
	if err := comm.Collective(s.Kind, s.Reduce, int(s.Root), elem, src.mem.ptr, dst.mem.ptr, int(count), stream); err != nil {
		return err
	}
	if s.Kind == "reduce_to" && int64(rank) != s.Root {
		// NCCL leaves the other ranks' buffers as they were: zeros, as
		// the op says.
		bytes := uint64(nd) * uint64(esize)
		if bytes%4 != 0 {
			return fmt.Errorf("reduce_to of %d %s elements: the zero fill needs a multiple of 4 bytes", nd, elem)
		}
		if err := r.rt.cuda.MemsetD32(dst.mem.ptr, 0, bytes/4, stream); err != nil {
			return err
		}
	}
	return ev.done.Record(stream)
}

// collEvents are the two events of one loop.collective: issued, recorded
// on the plan's stream before it, and done, on the communication stream
// after it.
type collEvents struct{ issued, done *cuda.Event }

// collectiveStream returns the runtime's communication stream (made on
// first use: a non-blocking stream, so that the legacy default stream of
// the plans does not wait for it implicitly) and op's events.
func (rt *Runtime) collectiveStream(op *ir.Operation) (*cuda.Stream, *collEvents, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.commStream == nil {
		s, err := rt.cuda.NewNonBlockingStream()
		if err != nil {
			return nil, nil, err
		}
		rt.commStream = s
	}
	if rt.collEvents == nil {
		rt.collEvents = map[*ir.Operation]*collEvents{}
	}
	ev := rt.collEvents[op]
	if ev == nil {
		a, err := rt.cuda.NewSyncEvent()
		if err != nil {
			return nil, nil, err
		}
		b, err := rt.cuda.NewSyncEvent()
		if err != nil {
			return nil, nil, err
		}
		ev = &collEvents{issued: a, done: b}
		rt.collEvents[op] = ev
	}
	return rt.commStream, ev, nil
}

// closeCollectivesLocked waits for the communication stream and destroys
// it and the collectives' events; rt.mu is held.
func (rt *Runtime) closeCollectivesLocked() error {
	var errs []error
	if rt.commStream != nil {
		errs = append(errs, rt.commStream.Synchronize(), rt.commStream.Destroy())
		rt.commStream = nil
	}
	for op, ev := range rt.collEvents {
		errs = append(errs, ev.issued.Destroy(), ev.done.Destroy())
		delete(rt.collEvents, op)
	}
	return errors.Join(errs...)
}

// join makes the plan's stream wait for op's collective.
func (r *runState) join(op *ir.Operation) error {
	r.rt.mu.Lock()
	ev := r.rt.collEvents[op]
	r.rt.mu.Unlock()
	if ev == nil {
		return nil // never issued on the communication stream
	}
	return r.rt.cuda.WaitEvent(r.stream, ev.done)
}

// collectiveJoins maps the index of each op of the host block b that must
// wait for collectives to those collectives: the first op after each that
// reads or frees its source or result (through any loop.view), else the
// last op.
func collectiveJoins(b *ir.Block) map[int][]*ir.Operation {
	ops := b.Ops()
	root := func(v *ir.Value) *ir.Value {
		for {
			d := v.DefiningOp()
			if d == nil || d.Name() != loop.ViewOp {
				return v
			}
			v = d.Operand(0)
		}
	}
	joins := map[int][]*ir.Operation{}
	for i, op := range ops {
		if op.Name() != loop.CollectiveOp {
			continue
		}
		mine := map[*ir.Value]bool{root(op.Operand(0)): true, root(op.Operand(1)): true}
		at := len(ops) - 1
		for j := i + 1; j < len(ops); j++ {
			if slices.ContainsFunc(ops[j].Operands(), func(v *ir.Value) bool { return mine[root(v)] }) {
				at = j
				break
			}
		}
		joins[at] = append(joins[at], op)
	}
	return joins
}

// joinCollectives makes each step that first touches a collective's
// buffers after it (a kernel reading the result, the source's dealloc, the
// return; through any loop.view of them) wait for the collective first,
// and the last step wait for the ones nothing touches: a collective
// overlaps the kernels in between.
func (c *planner) joinCollectives(b *ir.Block) {
	joins := collectiveJoins(b)
	for j, waits := range joins {
		run := c.p.steps[j]
		c.p.steps[j] = func(r *runState) error {
			for _, op := range waits {
				if err := r.join(op); err != nil {
					return ir.Errorf(op.Loc(), "%s: waiting for it: %v", loop.CollectiveOp, err)
				}
			}
			return run(r)
		}
	}
}
