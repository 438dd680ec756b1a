package llvm

import (
	"fmt"
	"strings"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// The warpgroup tensor-core ops (sm_90a). LLVM 19 has no intrinsic for
// wgmma.mma_async, so gpu.wgmma becomes inline assembly, which llc passes
// through and the native backend substitutes (targets/nvptx): the fence,
// one wgmma.mma_async per k16 step, the commit and the wait, with the
// accumulators tied to the outputs. Its B descriptors are computed here
// from B's shared-memory address.

// wgmmaAlign is the alignment in bytes of a workgroup buffer that a
// gpu.wgmma reads: the 128-byte swizzle repeats every 1024 bytes, and the
// descriptors' base offset field is left 0.
const wgmmaAlign = 1024

// readByWGMMA reports whether a gpu.wgmma reads the workgroup buffer buf.
func readByWGMMA(buf *ir.Value) bool {
	for _, u := range buf.Users() {
		if u.Name() == gpu.WGMMAOp {
			return true
		}
	}
	return false
}

// wgmmaDescriptorBits are the constant fields of a 128-byte-swizzle
// matrix descriptor: the leading dimension byte offset lbo and stride
// dimension byte offset sbo (encoded as bytes >> 4) and the swizzle mode.
func wgmmaDescriptorBits(lbo, sbo int64) int64 {
	return (lbo>>4)<<16 | (sbo>>4)<<32 | 1<<62
}

// wgmma translates gpu.wgmma to inline PTX.
func (k *kernelTranslator) wgmma(op *ir.Operation) error {
	s := gpu.WGMMAShapeOf(op)
	abType := "bf16"
	if gpu.MMAElementType(op) == ir.F16 {
		abType = "f16"
	}
	nA, nD := int(s.NumA()), int(s.N/2)
	// K-major: 8-row groups 1024 bytes apart, the leading offset unused
	// (1); MN-major: the same groups along K, panels along N.
	lbo := int64(16)
	if s.TransB && s.Panel > 0 {
		lbo = 2 * s.Panel
	}
	desc, err := k.wgmmaDescriptor(op.Operand(nA), op.Operand(nA+1), "B", lbo)
	if err != nil {
		return err
	}
	var aDesc wgmmaDesc
	if s.AShared {
		// A is K-major, one panel.
		if aDesc, err = k.wgmmaDescriptor(op.Operand(0), op.Operand(1), "A", 16); err != nil {
			return err
		}
	}

	var asm strings.Builder
	var cons []string
	dregs := make([]string, nD)
	for i := range dregs {
		dregs[i] = fmt.Sprintf("$%d", i)
		cons = append(cons, "=f")
	}
	args := make([]llvmValue, 0, nA+2*int(s.KSteps)+nD)
	params := make([]types.Type, 0, cap(args))
	// The A operands: 4 registers a k-step, or a k-step's descriptor
	// (16 columns on: 32 bytes).
	aRegs := make([]string, s.KSteps)
	for ks := range s.KSteps {
		if s.AShared {
			d := k.wgmmaDescriptorAt(aDesc, 2*16*ks)
			aRegs[ks] = fmt.Sprintf("$%d", nD+len(args))
			args, params = append(args, d), append(params, types.I64)
			cons = append(cons, "l")
			continue
		}
		a := make([]string, 4)
		for r := range a {
			a[r] = fmt.Sprintf("$%d", nD+len(args))
			args, params = append(args, k.get(op.Operand(int(4*ks)+r))), append(params, types.I32)
			cons = append(cons, "r")
		}
		aRegs[ks] = "{" + strings.Join(a, ", ") + "}"
	}
	firstB := nD + len(args)
	for ks := range s.KSteps {
		// The step's first element: K-major, 16 columns on (in its
		// panel); MN-major, 16 rows on.
		var bytes int64
		if s.TransB {
			bytes = 2 * 16 * ks * gpu.WGMMASwizzleRow
		} else {
			col := 16 * ks
			bytes = 2 * (col/gpu.WGMMASwizzleRow*s.Panel + col%gpu.WGMMASwizzleRow)
		}
		d := k.wgmmaDescriptorAt(desc, bytes)
		args, params = append(args, d), append(params, types.I64)
		cons = append(cons, "l")
	}
	if s.Acc {
		for i := range nD {
			args, params = append(args, k.get(op.Operand(nA+2+i))), append(params, types.Float)
			cons = append(cons, fmt.Sprint(i))
		}
	}
	trans := 0
	if s.TransB {
		trans = 1
	}
	asm.WriteString("wgmma.fence.sync.aligned;\n")
	transA := ""
	if s.AShared {
		transA = "0, " // (A K-major)
	}
	for ks := range int(s.KSteps) {
		scaleD := 1
		if ks == 0 && !s.Acc {
			scaleD = 0
		}
		fmt.Fprintf(&asm, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, %s, $%d, %d, 1, 1, %s%d;\n",
			s.N, abType, abType, strings.Join(dregs, ", "), aRegs[ks], firstB+ks, scaleD, transA, trans)
	}
	fmt.Fprintf(&asm, "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned %d;", s.Pending)
	ret := fragment(types.Float, nD)
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(ret, params...)), asm.String(), strings.Join(cons, ","))
	ia.SideEffect = true
	r := k.cur.NewCall(ia, args...)
	k.unpack(op, r, nD)
	return nil
}

// wgmmaDesc is a 128-byte-swizzle matrix descriptor in parts: enc is
// its start address field (bits 0–13: the shared address / 16, an i32),
// bits its constant fields.
type wgmmaDesc struct {
	enc  llvmValue
	bits int64
}

// wgmmaDescriptor returns the descriptor of the matrix what (A or B) at
// offset off of workgroup buffer buf, with leading byte offset lbo and
// 8-row groups 1024 bytes apart.
func (k *kernelTranslator) wgmmaDescriptor(buf, off *ir.Value, what string, lbo int64) (wgmmaDesc, error) {
	if !wgmmaAligned(k.get(buf)) {
		return wgmmaDesc{}, fmt.Errorf("%s must be a workgroup buffer aligned to %d bytes", what, wgmmaAlign)
	}
	p, err := k.bytePointer(buf, off)
	if err != nil {
		return wgmmaDesc{}, err
	}
	addr := k.cur.NewTrunc(k.cur.NewPtrToInt(p, types.I64), types.I32)
	enc := k.cur.NewLShr(k.cur.NewAnd(addr, constant.NewInt(types.I32, 0x3FFFF)), constant.NewInt(types.I32, 4))
	return wgmmaDesc{enc: enc, bits: wgmmaDescriptorBits(lbo, 1024)}, nil
}

// wgmmaDescriptorAt is d's descriptor moved bytes on (a multiple of 16).
// The start address field is added to in 32 bits: workgroup addresses
// are below 2^18, so the field (address / 16) never carries past its 14
// bits, and the upper word is the constant fields alone.
func (k *kernelTranslator) wgmmaDescriptorAt(d wgmmaDesc, bytes int64) llvmValue {
	enc := d.enc
	if bytes != 0 {
		enc = k.cur.NewAdd(enc, constant.NewInt(types.I32, bytes>>4))
	}
	return k.cur.NewOr(k.cur.NewZExt(enc, types.I64), constant.NewInt(types.I64, d.bits))
}

// wgmmaAligned reports whether v addresses a workgroup buffer aligned to
// wgmmaAlign: a static one (workgroupBuffer aligns those a gpu.wgmma
// reads) or one in dynamic shared memory (dynamicBuffers checked its
// offset and aligned the array).
func wgmmaAligned(v llvmValue) bool {
	bc, ok := v.(*constant.ExprBitCast)
	if !ok {
		return false
	}
	from := bc.From
	if gep, ok := from.(*constant.ExprGetElementPtr); ok {
		from = gep.Src
	}
	g, ok := from.(*llir.Global)
	return ok && g.Align >= wgmmaAlign
}

// wgmmaWait translates gpu.wgmma_wait to inline PTX whose outputs are its
// operands (tied) and whose text only waits: the native backend gives the
// outputs the operands' registers.
func (k *kernelTranslator) wgmmaWait(op *ir.Operation) error {
	n := op.NumOperands()
	cons := make([]string, 0, 2*n)
	params := make([]types.Type, n)
	args := make([]llvmValue, n)
	for range n {
		cons = append(cons, "=f")
	}
	for i, v := range op.Operands() {
		params[i], args[i] = types.Float, k.get(v)
		cons = append(cons, fmt.Sprint(i))
	}
	ret := fragment(types.Float, n)
	text := fmt.Sprintf("wgmma.wait_group.sync.aligned %d;", gpu.IntProp(op, gpu.PendingAttr, 0))
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(ret, params...)), text, strings.Join(cons, ","))
	ia.SideEffect = true
	r := k.cur.NewCall(ia, args...)
	k.unpack(op, r, n)
	return nil
}
