package llvm

import (
	"fmt"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// The asynchronous-barrier ops and gpu.setmaxnreg become inline PTX
// (LLVM 19 has no intrinsic for mbarrier.try_wait.parity or setmaxnreg),
// which llc passes through and the native backend substitutes. The
// barrier's address is its 32-bit workgroup address ("r"); the wait is a
// loop over try_wait in a scope of its own, so that its label and
// predicate may repeat in a kernel.

// mbarrierAsm is the text of each mbarrier op: $0 is the barrier's
// workgroup address, $1 the count or parity.
var mbarrierAsm = map[string]string{
	gpu.MbarrierInitOp:   "mbarrier.init.shared::cta.b64 [$0], $1;",
	gpu.MbarrierArriveOp: "{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [$0];\n}",
	// (tma.go)
	gpu.MbarrierExpectTxOp: "{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [$0], $1;\n}",
	// (cluster.go) $1 is the block's rank in the cluster; the arrival's
	// release is the default, at the block's scope, as for a local one.
	gpu.MbarrierArriveClusterOp: "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, $0, $1;\n" +
		"mbarrier.arrive.shared::cluster.b64 _, [ra];\n}",
	gpu.MbarrierWaitOp: "{\n.reg .pred done;\nwait:\nmbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n" +
		"@!done bra wait;\n}",
}

// mbarrier translates an mbarrier op to inline PTX.
func (k *kernelTranslator) mbarrier(op *ir.Operation) error {
	p, err := k.bytePointer(op.Operand(0), op.Operand(1))
	if err != nil {
		return err
	}
	addr := k.cur.NewTrunc(k.cur.NewPtrToInt(p, types.I64), types.I32)
	args := []llvmValue{addr}
	params := []types.Type{types.I32}
	cons := "r"
	if op.NumOperands() == 3 {
		args, params, cons = append(args, k.get(op.Operand(2))), append(params, types.I32), "r,r"
	}
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void, params...)), mbarrierAsm[op.Name()], cons)
	ia.SideEffect = true
	k.cur.NewCall(ia, args...)
	return nil
}

// setMaxNReg translates gpu.setmaxnreg to inline PTX.
func (k *kernelTranslator) setMaxNReg(op *ir.Operation) error {
	dir := "dec"
	if gpu.Increases(op) {
		dir = "inc"
	}
	text := fmt.Sprintf("setmaxnreg.%s.sync.aligned.u32 %d;", dir, gpu.IntProp(op, gpu.RegsAttr, 0))
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void)), text, "")
	ia.SideEffect = true
	k.cur.NewCall(ia)
	return nil
}
