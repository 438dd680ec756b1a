package gpu

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// Atomic reductions into device memory: gpu.atomic_add adds an f32 value
// (or two, to adjacent elements) to a global buffer that other threads
// and blocks add to as well (the flash-attention backward accumulates dQ
// so, one partial product a block of keys, as FlashAttention-2 does). It
// has no result, as PTX's red, so the hardware need not return the old
// value.
const AtomicAddOp = OpAtomicAdd

// Bulk reductions (sm_90): gpu.bulk_reduce_add has the tensor memory
// accelerator add a contiguous span of f32 in workgroup memory to one in
// global memory (PTX cp.reduce.async.bulk), whole cache lines rather
// than a thread's values at a time; gpu.bulk_wait waits until the
// thread's spans are read (their workgroup memory may be written again)
// or added.
const (
	BulkReduceAddOp = OpBulkReduceAdd
	BulkWaitOp      = OpBulkWait
)

// ReadAttr marks a gpu.bulk_wait that waits only for the sources' reads.
const ReadAttr = "read"

var atomicOps = []*ir.OpDef{atomicAddDef, bulkReduceAddDef, bulkWaitDef}

var atomicAddDef = &ir.OpDef{
	Name:    AtomicAddOp,
	Summary: "Adds f32 values to elements of a global buffer atomically",
	Description: "As PTX `red.global.add.f32`: adds `v0` to element `index` of the 1-D f32 " +
		"buffer in global memory, atomically (relaxed, at the device's scope) with respect to " +
		"every other gpu.atomic_add of that element, in no particular order: a sum of several " +
		"threads' or blocks' values may round differently from run to run. With a second value " +
		"`v1` (PTX `red.global.v2.f32.add`, one access: sm_90 and PTX ISA 8.1, which the kernels " +
		"of an sm_90a gpu.module get) it adds v1 to element `index` + 1 too; `index` must then be " +
		"even. There is no result. (The interpreter adds under a lock.)",
	Operands: []ir.ArgDoc{
		{Name: "mem, index", Doc: "1-D f32 memref in global memory and the first element's index"},
		{Name: "v0, v1", Doc: "f32: the value to add, and optionally the next element's"},
	},
	Example: `"gpu.atomic_add"(%acc, %i, %a, %b) : (memref<1024xf32>, index, f32, f32) -> ()`,
	Verify:  verifyAtomicAdd,
}

func verifyAtomicAdd(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	if (op.NumOperands() != 3 && op.NumOperands() != 4) || op.NumResults() != 0 {
		return fmt.Errorf("expects a memref, an index and 1 or 2 values and no results, not %d operands and %d results", op.NumOperands(), op.NumResults())
	}
	elem, err := workgroup1D(op.Operand(0), "operand #0", false)
	if err != nil {
		return err
	}
	if elem != ir.F32 {
		return fmt.Errorf("operand #0 must hold f32, not %s", elem)
	}
	if t := op.Operand(1).Type(); t != ir.Index {
		return fmt.Errorf("operand #1 must be index, not %s", t)
	}
	for i := 2; i < op.NumOperands(); i++ {
		if t := op.Operand(i).Type(); t != ir.F32 {
			return fmt.Errorf("operand #%d must be f32, not %s", i, t)
		}
	}
	return nil
}

// AtomicAdd inserts gpu.atomic_add of vs (one or two f32) to mem[index]
// and, with two, mem[index+1].
func AtomicAdd(b *ir.Builder, loc ir.Location, mem, index *ir.Value, vs ...*ir.Value) *ir.Operation {
	return b.Op(AtomicAddOp, loc, append([]*ir.Value{mem, index}, vs...), nil)
}

var bulkReduceAddDef = &ir.OpDef{
	Name:    BulkReduceAddOp,
	Summary: "Adds a workgroup-memory span of f32 to a global one, asynchronously (sm_90)",
	Description: "As PTX `cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32` followed by " +
		"`cp.async.bulk.commit_group`: starts adding the `bytes`/4 f32 elements of the workgroup " +
		"buffer `source` from `srcIndex` to those of the global buffer `dest` from `dstIndex`, " +
		"element by element, each addition atomic (relaxed, at the device's scope) with respect " +
		"to every other gpu.bulk_reduce_add and gpu.atomic_add of that element. Both spans start " +
		"16-byte aligned (indices multiples of 4 from 16-byte-aligned buffers) and `bytes` is a " +
		"positive multiple of 16. The reduction reads workgroup memory through the asynchronous " +
		"proxy: the thread's writes to the span (and those of other threads, after a barrier) must " +
		"be fenced with gpu.fence_proxy_async first. The op is one group of the thread's bulk " +
		"operations; the span must not be written again before a gpu.bulk_wait (read) leaves fewer " +
		"groups pending, and the block must not end before one with no group pending. (The " +
		"interpreter adds at once under the lock of gpu.atomic_add.)",
	Inherent: []string{BytesAttr},
	Operands: []ir.ArgDoc{
		{Name: "dest, dstIndex", Doc: "1-D f32 memref in global memory and the first element's index"},
		{Name: "source, srcIndex", Doc: "1-D f32 workgroup memref and the first element's index"},
	},
	Attrs:   []ir.ArgDoc{{Name: "bytes", Doc: "the span's size in bytes, a positive multiple of 16 (i64)"}},
	Example: `"gpu.bulk_reduce_add"(%acc, %i, %smem, %j) <{bytes = 512 : i64}> : (memref<?xf32>, index, memref<4096xf32, 3>, index) -> ()`,
	Verify:  verifyBulkReduceAdd,
}

var bulkWaitDef = &ir.OpDef{
	Name:    BulkWaitOp,
	Summary: "Waits for the thread's gpu.bulk_reduce_add groups",
	Description: "As PTX `cp.async.bulk.wait_group pending` (`.read` with `read`): waits until at most " +
		"`pending` of the thread's gpu.bulk_reduce_add groups are incomplete — with `read`, until the " +
		"others have read their workgroup spans, which may then be written again; without it, until " +
		"their additions are done.",
	Inherent: []string{PendingAttr, ReadAttr},
	Attrs: []ir.ArgDoc{
		{Name: "pending", Doc: "non-negative i64"},
		{Name: "read", Doc: "present to wait for the sources' reads only (UnitAttr)"},
	},
	Example: `"gpu.bulk_wait"() <{pending = 0 : i64, read}> : () -> ()`,
	Verify:  verifyCpAsyncWait,
}

func verifyBulkReduceAdd(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	if op.NumOperands() != 4 || op.NumResults() != 0 {
		return fmt.Errorf("expects a global memref, an index, a workgroup memref and an index and no results, not %d operands and %d results", op.NumOperands(), op.NumResults())
	}
	for i, shared := range []bool{false, true} {
		elem, err := workgroup1D(op.Operand(2*i), fmt.Sprintf("operand #%d", 2*i), shared)
		if err != nil {
			return err
		}
		if elem != ir.F32 {
			return fmt.Errorf("operand #%d must hold f32, not %s", 2*i, elem)
		}
		if t := op.Operand(2*i + 1).Type(); t != ir.Index {
			return fmt.Errorf("operand #%d must be index, not %s", 2*i+1, t)
		}
	}
	if n := IntProp(op, BytesAttr, 0); n <= 0 || n%16 != 0 {
		return fmt.Errorf("requires '%s' to be a positive multiple of 16, not %d", BytesAttr, n)
	}
	return nil
}

// BulkReduceAdd inserts gpu.bulk_reduce_add of the bytes/4 f32 of the
// workgroup buffer src from srcIndex to the global buffer dst from
// dstIndex.
func BulkReduceAdd(b *ir.Builder, loc ir.Location, dst, dstIndex, src, srcIndex *ir.Value, bytes int64) *ir.Operation {
	return b.Op(BulkReduceAddOp, loc, []*ir.Value{dst, dstIndex, src, srcIndex}, nil,
		ir.NamedAttr{Name: BytesAttr, Value: ir.Int(bytes, ir.I64)})
}

// BulkWait inserts gpu.bulk_wait for pending groups, with read for their
// sources' reads only.
func BulkWait(b *ir.Builder, loc ir.Location, pending int64, read bool) *ir.Operation {
	attrs := []ir.NamedAttr{{Name: PendingAttr, Value: ir.Int(pending, ir.I64)}}
	if read {
		attrs = append(attrs, ir.NamedAttr{Name: ReadAttr, Value: ir.UnitAttr{}})
	}
	return b.Op(BulkWaitOp, loc, nil, nil, attrs...)
}
