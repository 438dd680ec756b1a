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

// readByWGMMA reports whether a gpu.wgmma reads the workgroup buffer buf
// or a gpu.tma_load writes it (whose swizzle has the same period).
func readByWGMMA(buf *ir.Value) bool {
	for _, u := range buf.Users() {
		if u.Name() == gpu.WGMMAOp || u.Name() == gpu.TMALoadOp && u.Operand(0) == buf {
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

// wgmmaDesc is a 128-byte-swizzle matrix descriptor in parts: lo is its
// lower word (an i32: the start address field, bits 0–13, the shared
// address / 16, and the leading byte offset field), hi its upper word's
// constant fields.
type wgmmaDesc struct {
	lo llvmValue
	hi int64
}

// wgmmaDescriptor returns the descriptor of the matrix what (A or B) at
// offset off of workgroup buffer buf, with leading byte offset lbo and
// 8-row groups 1024 bytes apart. The buffer's own address field (with
// the leading offset's bits) and the offset's are added in 32 bits: the
// buffer is 1024-aligned and workgroup addresses are below 2^18, so the
// sum is the field of the element's address and never carries past its
// 14 bits. The buffer's part does not depend on off, so in a loop only
// the offset's shift and the add remain (the offset is a multiple of 16
// bytes: gpu.wgmma's verifier and the swizzle's alignment).
func (k *kernelTranslator) wgmmaDescriptor(buf, off *ir.Value, what string, lbo int64) (wgmmaDesc, error) {
	if !wgmmaAligned(k.get(buf)) {
		return wgmmaDesc{}, fmt.Errorf("%s must be a workgroup buffer aligned to %d bytes", what, wgmmaAlign)
	}
	mt, ok := buf.Type().(*ir.MemRefType)
	if !ok {
		return wgmmaDesc{}, fmt.Errorf("%s must be a workgroup memref, not %s", what, buf.Type())
	}
	var size int64
	switch t := mt.ElementType().(type) {
	case *ir.FloatType:
		size = int64(t.Width) / 8
	case *ir.IntegerType:
		size = max(int64(t.Width)/8, 1)
	}
	if size <= 0 || 16%size != 0 {
		return wgmmaDesc{}, fmt.Errorf("%s: elements of %d bytes do not divide a 16-byte descriptor unit", what, size)
	}
	bits := wgmmaDescriptorBits(lbo, 1024)
	addr := k.cur.NewTrunc(k.cur.NewPtrToInt(k.get(buf), types.I64), types.I32)
	base := k.cur.NewOr(k.cur.NewLShr(k.cur.NewAnd(addr, constant.NewInt(types.I32, 0x3FFFF)), constant.NewInt(types.I32, 4)),
		constant.NewInt(types.I32, bits&0xFFFFFFFF))
	var at llvmValue = k.get(off)
	if t, ok := at.Type().(*types.IntType); ok && t.BitSize > 32 {
		at = k.cur.NewTrunc(at, types.I32)
	}
	shift := int64(0)
	for 16>>shift > size {
		shift++
	}
	lo := k.cur.NewAdd(base, k.cur.NewLShr(at, constant.NewInt(types.I32, shift)))
	return wgmmaDesc{lo: lo, hi: bits >> 32}, nil
}

// wgmmaDescriptorAt is d's descriptor moved bytes on (a multiple of 16),
// added to the lower word (see wgmmaDescriptor: no carry).
func (k *kernelTranslator) wgmmaDescriptorAt(d wgmmaDesc, bytes int64) llvmValue {
	lo := d.lo
	if bytes != 0 {
		lo = k.cur.NewAdd(lo, constant.NewInt(types.I32, bytes>>4))
	}
	return k.cur.NewOr(k.cur.NewZExt(lo, types.I64), constant.NewInt(types.I64, d.hi<<32))
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
