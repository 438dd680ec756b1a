package llvm

import (
	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"

	"github.com/strata-ir/strata/ir"
)

// atomicAdd translates gpu.atomic_add to inline PTX red.global.add.f32
// or, with two values, red.global.v2.f32.add ($0 the first element's
// global address, then the values): a reduction without the old value,
// which the native backend has no atomicrmw for.
func (k *kernelTranslator) atomicAdd(op *ir.Operation) error {
	p, _, err := k.address(op.Operand(0), op.Operand(1))
	if err != nil {
		return err
	}
	text, cons := "red.global.add.f32 [$0], $1;", "l,f"
	params := []types.Type{types.I64, types.Float}
	args := []llvmValue{k.cur.NewPtrToInt(p, types.I64), k.get(op.Operand(2))}
	if op.NumOperands() == 4 {
		text, cons = "red.global.v2.f32.add [$0], {$1, $2};", "l,f,f"
		params, args = append(params, types.Float), append(args, k.get(op.Operand(3)))
	}
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void, params...)), text, cons)
	ia.SideEffect = true
	k.cur.NewCall(ia, args...)
	return nil
}
