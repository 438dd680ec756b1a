package llvm

import (
	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"

	"github.com/strata-ir/strata/ir"
)

// atomicAdd translates gpu.atomic_add to inline PTX red.global.add.f32
// ($0 the element's global address, $1 the value): a reduction without
// the old value, which the native backend has no atomicrmw for.
func (k *kernelTranslator) atomicAdd(op *ir.Operation) error {
	p, _, err := k.address(op.Operand(0), op.Operand(1))
	if err != nil {
		return err
	}
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void, types.I64, types.Float)), "red.global.add.f32 [$0], $1;", "l,f")
	ia.SideEffect = true
	k.cur.NewCall(ia, k.cur.NewPtrToInt(p, types.I64), k.get(op.Operand(2)))
	return nil
}
