package llvm

import (
	"fmt"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"

	"github.com/strata-ir/strata/dialects/gpu"
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

// bulkReduceAddAsm is gpu.bulk_reduce_add's PTX (the span's byte count
// formatted in), one group of its own.
const bulkReduceAddAsm = "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], %d;\n\tcp.async.bulk.commit_group;"

// bulkReduceAdd translates gpu.bulk_reduce_add to inline PTX.
func (k *kernelTranslator) bulkReduceAdd(op *ir.Operation) error {
	p, _, err := k.address(op.Operand(0), op.Operand(1))
	if err != nil {
		return err
	}
	src, err := k.sharedAddress(op.Operand(2), op.Operand(3))
	if err != nil {
		return err
	}
	text := fmt.Sprintf(bulkReduceAddAsm, gpu.IntProp(op, gpu.BytesAttr, 0))
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void, types.I64, types.I32)), text, "l,r")
	ia.SideEffect = true
	k.cur.NewCall(ia, k.cur.NewPtrToInt(p, types.I64), src)
	return nil
}

// bulkWait translates gpu.bulk_wait to cp.async.bulk.wait_group[.read].
func (k *kernelTranslator) bulkWait(op *ir.Operation) error {
	read := ""
	if _, ok := op.Attr(gpu.ReadAttr).(ir.UnitAttr); ok {
		read = ".read"
	}
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void)), fmt.Sprintf("cp.async.bulk.wait_group%s %d;", read, gpu.IntProp(op, gpu.PendingAttr, 0)), "")
	ia.SideEffect = true
	k.cur.NewCall(ia)
	return nil
}
