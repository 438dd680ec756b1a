package llvm

import (
	"fmt"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// The tensor-core ops become the NVVM intrinsics that llc-19 lowers and the
// native backend selects: mma.sync, ldmatrix and cp.async.

// tensorCoreOps translates gpu.mma_sync, gpu.ldmatrix and the cp.async ops.
var tensorCoreOps = map[string]func(k *kernelTranslator, op *ir.Operation) error{
	gpu.MMASyncOp:               (*kernelTranslator).mmaSync,
	gpu.LdMatrixOp:              (*kernelTranslator).ldMatrix,
	gpu.CpAsyncOp:               (*kernelTranslator).cpAsync,
	gpu.WGMMAOp:                 (*kernelTranslator).wgmma,
	gpu.WGMMAWaitOp:             (*kernelTranslator).wgmmaWait,
	gpu.MbarrierInitOp:          (*kernelTranslator).mbarrier,
	gpu.MbarrierArriveOp:        (*kernelTranslator).mbarrier,
	gpu.MbarrierWaitOp:          (*kernelTranslator).mbarrier,
	gpu.MbarrierExpectTxOp:      (*kernelTranslator).mbarrier,
	gpu.TMALoadOp:               (*kernelTranslator).tmaLoad,
	gpu.MbarrierArriveClusterOp: (*kernelTranslator).mbarrier,
	gpu.ClusterArriveOp:         func(k *kernelTranslator, _ *ir.Operation) error { return k.plainAsm(clusterArriveAsm) },
	gpu.ClusterWaitOp:           func(k *kernelTranslator, _ *ir.Operation) error { return k.plainAsm(clusterWaitAsm) },
	gpu.SetMaxNRegOp:            (*kernelTranslator).setMaxNReg,
	gpu.AtomicAddOp:             (*kernelTranslator).atomicAdd,
	gpu.WarpSyncOp:              func(k *kernelTranslator, _ *ir.Operation) error { return k.plainAsm("bar.warp.sync -1;") },
	gpu.FenceProxyAsyncOp: func(k *kernelTranslator, _ *ir.Operation) error {
		ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void)), "fence.proxy.async.shared::cta;", "")
		ia.SideEffect = true
		k.cur.NewCall(ia)
		return nil
	},
	gpu.CpAsyncCommitOp: func(k *kernelTranslator, _ *ir.Operation) error {
		k.cur.NewCall(k.t.intrinsic("llvm.nvvm.cp.async.commit.group", types.Void))
		return nil
	},
	gpu.CpAsyncWaitOp: func(k *kernelTranslator, op *ir.Operation) error {
		n := gpu.IntProp(op, gpu.PendingAttr, 0)
		k.cur.NewCall(k.t.intrinsic("llvm.nvvm.cp.async.wait.group", types.Void, types.I32), constant.NewInt(types.I32, n))
		return nil
	},
}

// fragment is the struct type {T, T, …} of n registers that the matrix
// intrinsics return.
func fragment(t types.Type, n int) types.Type {
	if n == 1 {
		return t
	}
	fs := make([]types.Type, n)
	for i := range fs {
		fs[i] = t
	}
	return types.NewStruct(fs...)
}

// unpack records the n registers of a fragment value as op's results.
func (k *kernelTranslator) unpack(op *ir.Operation, v llvmValue, n int) {
	if n == 1 {
		k.set(op, v)
		return
	}
	for i := range n {
		k.vals[op.Result(i)] = k.cur.NewExtractValue(v, uint64(i))
	}
}

// mmaSync calls llvm.nvvm.mma.m16n8k16.row.col.bf16 (f32 accumulators) or,
// for f16, the .f32.f32 form, whose A and B registers are <2 x half>.
func (k *kernelTranslator) mmaSync(op *ir.Operation) error {
	name, reg := "llvm.nvvm.mma.m16n8k16.row.col.bf16", types.Type(types.I32)
	switch gpu.MMAElementType(op) {
	case ir.BF16:
	case ir.F16:
		name, reg = "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", types.NewVector(2, types.Half)
	default:
		return fmt.Errorf("unsupported element type")
	}
	params := make([]types.Type, op.NumOperands())
	args := make([]llvmValue, op.NumOperands())
	for i, v := range op.Operands() {
		params[i], args[i] = types.Float, k.get(v)
		if i < gpu.MMARegsA+gpu.MMARegsB {
			params[i] = reg
			if !types.Equal(reg, types.I32) {
				args[i] = k.cur.NewBitCast(args[i], reg)
			}
		}
	}
	r := k.cur.NewCall(k.t.intrinsic(name, fragment(types.Float, gpu.MMARegsC), params...), args...)
	k.unpack(op, r, gpu.MMARegsC)
	return nil
}

// bytePointer returns the i8 pointer to element idx of a 1-D memref.
func (k *kernelTranslator) bytePointer(mem, idx *ir.Value) (llvmValue, error) {
	p, _, err := k.address(mem, idx)
	if err != nil {
		return nil, err
	}
	space := p.Type().(*types.PointerType).AddrSpace
	return k.cur.NewBitCast(p, pointerTo(types.I8, space)), nil
}

// ldMatrix calls llvm.nvvm.ldmatrix.sync.aligned.m8n8.x<num>[.trans].b16.
func (k *kernelTranslator) ldMatrix(op *ir.Operation) error {
	n := int(gpu.IntProp(op, gpu.NumAttr, 0))
	p, err := k.bytePointer(op.Operand(0), op.Operand(1))
	if err != nil {
		return err
	}
	trans := ""
	if gpu.IsTransposed(op) {
		trans = "trans."
	}
	name := fmt.Sprintf("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d.%sb16", n, trans)
	r := k.cur.NewCall(k.t.intrinsic(name, fragment(types.I32, n), pointerTo(types.I8, 3)), p)
	k.unpack(op, r, n)
	return nil
}

// cpAsync calls llvm.nvvm.cp.async.{cg,ca}.shared.global.<bytes>.s, the
// form with a source size that zero-fills the rest (cg, which bypasses
// L1, exists only for 16 bytes).
func (k *kernelTranslator) cpAsync(op *ir.Operation) error {
	n := gpu.IntProp(op, gpu.BytesAttr, 0)
	dst, err := k.bytePointer(op.Operand(0), op.Operand(1))
	if err != nil {
		return err
	}
	src, err := k.bytePointer(op.Operand(2), op.Operand(3))
	if err != nil {
		return err
	}
	cache := "ca"
	if n == 16 {
		cache = "cg"
	}
	name := fmt.Sprintf("llvm.nvvm.cp.async.%s.shared.global.%d.s", cache, n)
	k.cur.NewCall(k.t.intrinsic(name, types.Void, pointerTo(types.I8, 3), pointerTo(types.I8, 1), types.I32), dst, src, k.get(op.Operand(4)))
	return nil
}
