package gpu

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// Atomic reductions into device memory: gpu.atomic_add adds an f32 value
// to an element of a global buffer that other threads and blocks add to
// as well (the flash-attention backward accumulates dQ so, one partial
// product a block of keys, as FlashAttention-2 does). It has no result,
// as PTX's red, so the hardware need not return the old value.
const AtomicAddOp = OpAtomicAdd

var atomicOps = []*ir.OpDef{atomicAddDef}

var atomicAddDef = &ir.OpDef{
	Name:    AtomicAddOp,
	Summary: "Adds an f32 value to an element of a global buffer atomically",
	Description: "As PTX `red.global.add.f32`: adds `value` to element `index` of the 1-D f32 " +
		"buffer in global memory, atomically (relaxed, at the device's scope) with respect to " +
		"every other gpu.atomic_add of that element, in no particular order: a sum of several " +
		"threads' or blocks' values may round differently from run to run. There is no result. " +
		"(The interpreter adds under a lock.)",
	Operands: []ir.ArgDoc{
		{Name: "mem, index", Doc: "1-D f32 memref in global memory and the element's index"},
		{Name: "value", Doc: "f32: the value to add"},
	},
	Example: `"gpu.atomic_add"(%acc, %i, %v) : (memref<1024xf32>, index, f32) -> ()`,
	Verify:  verifyAtomicAdd,
}

func verifyAtomicAdd(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	if op.NumOperands() != 3 || op.NumResults() != 0 {
		return fmt.Errorf("expects 3 operands (memref, index, value) and no results, not %d and %d", op.NumOperands(), op.NumResults())
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
	if t := op.Operand(2).Type(); t != ir.F32 {
		return fmt.Errorf("operand #2 must be f32, not %s", t)
	}
	return nil
}

// AtomicAdd inserts gpu.atomic_add of v (f32) to mem[index].
func AtomicAdd(b *ir.Builder, loc ir.Location, mem, index, v *ir.Value) *ir.Operation {
	return b.Op(AtomicAddOp, loc, []*ir.Value{mem, index, v}, nil)
}
