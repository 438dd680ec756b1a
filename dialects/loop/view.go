package loop

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// ViewOp reinterprets a buffer with another shape of the same element
// count. convert-loop-to-gpu uses it on the host to pass N-D buffers to
// kernels, which see only 1-D memrefs (docs/lowering.md).
const ViewOp = OpView

var viewDef = &ir.OpDef{
	Name:    ViewOp,
	Summary: "Views a buffer with another shape",
	Description: "Returns a buffer that aliases the operand's elements (row-major, in " +
		"order) under the result type's shape: no copy, stores through either are " +
		"seen through both. The element type and memory space stay the same and both " +
		"layouts are the identity. The result type has at most one dynamic dimension, " +
		"whose size is the operand's element count divided by the product of the " +
		"static ones; the counts must agree (checked statically when both shapes are " +
		"static, at run time otherwise). `convert-loop-to-gpu` flattens kernel " +
		"arguments with it: `memref<4x?xf32>` to `memref<?xf32>`.",
	Traits:   ir.Pure,
	Operands: []ir.ArgDoc{{Name: "source", Doc: "the buffer, a ranked memref"}},
	Results:  []ir.ArgDoc{{Name: "result", Doc: "the same elements, of a memref type with at most one dynamic dim"}},
	Example:  "%flat = \"loop.view\"(%m) : (memref<4x?xf32>) -> memref<?xf32>",
	Verify:   verifyView,
}

// View inserts loop.view of m as type t and returns the view.
func View(b *ir.Builder, loc ir.Location, m *ir.Value, t *ir.MemRefType) *ir.Value {
	return b.Op(ViewOp, loc, []*ir.Value{m}, []ir.Type{t}).Result(0)
}

func verifyView(op *ir.Operation) error {
	if op.NumOperands() != 1 || op.NumResults() != 1 {
		return fmt.Errorf("requires one operand and one result, but found %d operands and %d results", op.NumOperands(), op.NumResults())
	}
	src, err := rankedMemRef(op.Operand(0).Type(), "operand #0")
	if err != nil {
		return err
	}
	dst, err := rankedMemRef(op.Result(0).Type(), "result")
	if err != nil {
		return err
	}
	switch {
	case src.ElementType() != dst.ElementType():
		return fmt.Errorf("element types of '%s' and '%s' differ", src, dst)
	case src.Layout != nil || dst.Layout != nil:
		return fmt.Errorf("requires identity layouts, but got '%s' and '%s'", src, dst)
	case !ir.AttrEqual(src.MemorySpace, dst.MemorySpace):
		return fmt.Errorf("memory spaces of '%s' and '%s' differ", src, dst)
	case numDynamic(dst) > 1:
		return fmt.Errorf("result '%s' has more than one dynamic dimension", dst)
	}
	if n, m := ir.NumElements(src.Shape()), ir.NumElements(dst.Shape()); n >= 0 && m >= 0 && n != m {
		return fmt.Errorf("element counts differ: '%s' has %d, '%s' has %d", src, n, dst, m)
	}
	return nil
}
