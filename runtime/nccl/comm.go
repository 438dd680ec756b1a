package nccl

import (
	"fmt"

	"github.com/ebitengine/purego"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
)

// Comm is one rank's NCCL communicator, on one device. Its methods queue
// work on the stream they are given and return; they are safe to call from
// any goroutine (each makes the device's context current on its thread),
// but the collectives of a communicator must be issued in the same order
// on every rank.
type Comm struct {
	l          *lib
	dev        *cuda.Device
	comm       uintptr
	rank, size int
}

// InitRank joins the communicator of id as rank of size ranks, on dev. It
// blocks until every rank has joined.
func InitRank(dev *cuda.Device, id UniqueID, size, rank int) (*Comm, error) {
	if size < 1 {
		return nil, fmt.Errorf("nccl: the world size must be at least 1, got %d", size)
	}
	if rank < 0 || rank >= size {
		return nil, fmt.Errorf("nccl: rank %d is not in a world of %d ranks", rank, size)
	}
	l, err := load()
	if err != nil {
		return nil, err
	}
	c := &Comm{l: l, dev: dev, rank: rank, size: size}
	err = dev.WithContext(func() error {
		if r := l.ncclCommInitRank(&c.comm, int32(size), id, int32(rank)); r != Success {
			return l.errorFor(fmt.Sprintf("ncclCommInitRank (rank %d of %d)", rank, size), r, 0)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var n, me int32
	if r := l.ncclCommCount(c.comm, &n); r != Success {
		return nil, l.errorFor("ncclCommCount", r, c.comm)
	}
	if r := l.ncclCommUserRank(c.comm, &me); r != Success {
		return nil, l.errorFor("ncclCommUserRank", r, c.comm)
	}
	if int(n) != size || int(me) != rank {
		return nil, fmt.Errorf("nccl: the communicator has rank %d of %d, asked for %d of %d", me, n, rank, size)
	}
	return c, nil
}

// Close destroys the communicator after its queued work.
func (c *Comm) Close() error {
	if c == nil || c.comm == 0 {
		return nil
	}
	return c.dev.WithContext(func() error {
		r := c.l.ncclCommDestroy(c.comm)
		c.comm = 0
		if r != Success {
			return c.l.errorFor("ncclCommDestroy", r, 0)
		}
		return nil
	})
}

// Size returns the number of ranks, RankOf this process's rank.
func (c *Comm) Size() int { return c.size }

// RankOf returns this process's rank.
func (c *Comm) RankOf() int { return c.rank }

// Rank implements the runtime's communicator (runtime/exec): the rank and
// size of group, of which only "world" exists.
func (c *Comm) Rank(group string) (rank, size int, err error) {
	if group != graph.WorldGroup {
		return 0, 0, fmt.Errorf("nccl: unknown process group %q (this communicator is %q)", group, graph.WorldGroup)
	}
	return c.rank, c.size, nil
}

// dataTypes maps Strata's element types to NCCL's.
var dataTypes = map[ir.Type]DataType{
	ir.F64: Float64, ir.F32: Float32, ir.F16: Float16, ir.BF16: BFloat16, ir.I64: Int64, ir.I32: Int32,
}

// DataTypeOf returns NCCL's type for elem.
func DataTypeOf(elem ir.Type) (DataType, error) {
	if t, ok := dataTypes[elem]; ok {
		return t, nil
	}
	if elem == ir.I1 {
		return Uint8, nil // bytes: broadcast and gather only
	}
	return 0, fmt.Errorf("nccl: no NCCL type for %s", elem)
}

var redOps = map[string]RedOp{"sum": Sum, "max": Max, "avg": Avg}

// Collective queues the collective kind (all_reduce, all_gather,
// reduce_scatter, broadcast, reduce_to) of elem elements from send into
// recv on stream: count is the element count of send (of recv for
// reduce_scatter, whose send holds size·count). reduce is sum, max or avg;
// root the root rank of broadcast and reduce_to. reduce_to leaves recv
// untouched on the other ranks; the caller clears it.
func (c *Comm) Collective(kind, reduce string, root int, elem ir.Type, send, recv cuda.DevicePtr, count int, stream *cuda.Stream) error {
	dt, err := DataTypeOf(elem)
	if err != nil {
		return err
	}
	op, ok := redOps[reduce]
	if !ok {
		return fmt.Errorf("nccl: unknown reduction %q", reduce)
	}
	if (elem == ir.I1) && (kind == "all_reduce" || kind == "reduce_scatter" || kind == "reduce_to") {
		return fmt.Errorf("nccl: %s of i1 is not supported", kind)
	}
	if root < 0 || root >= c.size {
		return fmt.Errorf("nccl: root %d is not a rank of %d", root, c.size)
	}
	s := stream.Handle()
	var addr uintptr
	var args []uintptr
	n := uintptr(count)
	switch kind {
	case "all_reduce":
		addr, args = c.l.allReduce, []uintptr{uintptr(send), uintptr(recv), n, uintptr(dt), uintptr(op), c.comm, s}
	case "broadcast":
		addr, args = c.l.broadcast, []uintptr{uintptr(send), uintptr(recv), n, uintptr(dt), uintptr(root), c.comm, s}
	case "reduce_to":
		addr, args = c.l.reduce, []uintptr{uintptr(send), uintptr(recv), n, uintptr(dt), uintptr(Sum), uintptr(root), c.comm, s}
	case "all_gather":
		addr, args = c.l.allGather, []uintptr{uintptr(send), uintptr(recv), n, uintptr(dt), c.comm, s}
	case "reduce_scatter":
		addr, args = c.l.reduceScatter, []uintptr{uintptr(send), uintptr(recv), n, uintptr(dt), uintptr(op), c.comm, s}
	default:
		return fmt.Errorf("nccl: unknown collective %q", kind)
	}
	return c.dev.WithContext(func() error {
		r1, _, _ := purego.SyscallN(addr, args...)
		if r := Result(int32(r1)); r != Success {
			return c.l.errorFor("nccl "+kind, r, c.comm)
		}
		return nil
	})
}
