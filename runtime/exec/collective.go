package exec

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
)

// Communicator runs the collectives of launch plans (loop.collective) for
// a Runtime: runtime/nccl's Comm is one. Collective queues the collective
// kind on stream and returns (see nccl.Comm.Collective for the meaning of
// count).
type Communicator interface {
	Rank(group string) (rank, size int, err error)
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

// collective is loop.collective: the communicator queues it on the plan's
// stream, between the kernels around it (and into a CUDA graph when the
// plan is captured).
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
		if err := runCollective(r, spec, elem, src, dst); err != nil {
			return ir.Errorf(op.Loc(), "%s (%s): %v", loop.CollectiveOp, spec.Kind, err)
		}
		return nil
	}, nil
}

// runCollective checks the buffers' sizes against the group's and queues
// the collective.
func runCollective(r *runState, s loop.Collective, elem ir.Type, src, dst *devBuffer) error {
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
	if err := comm.Collective(s.Kind, s.Reduce, int(s.Root), elem, src.mem.ptr, dst.mem.ptr, int(count), r.stream); err != nil {
		return err
	}
	if s.Kind == "reduce_to" && int64(rank) != s.Root {
		// NCCL leaves the other ranks' buffers as they were: zeros, as
		// the op says.
		bytes := uint64(nd) * uint64(esize)
		if bytes%4 != 0 {
			return fmt.Errorf("reduce_to of %d %s elements: the zero fill needs a multiple of 4 bytes", nd, elem)
		}
		return r.rt.cuda.MemsetD32(dst.mem.ptr, 0, bytes/4, r.stream)
	}
	return nil
}
