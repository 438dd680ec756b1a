package gpu

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// Atomic reductions into device memory: gpu.atomic_add adds an f32 value
// (or two, to adjacent elements) to a global buffer that other threads
// and blocks add to as well (graph.scatter_add's kernels accumulate so).
// It has no result, as PTX's red, so the hardware need not return the
// old value.
const AtomicAddOp = OpAtomicAdd

var atomicOps = []*ir.OpDef{atomicAddDef}

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
