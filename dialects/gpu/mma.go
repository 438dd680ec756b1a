package gpu

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// Tensor-core ops: warp-level matrix multiply-accumulate, the shared-memory
// matrix loads that feed it, and asynchronous global-to-shared copies. They
// follow upstream's nvgpu.mma.sync, nvgpu.ldmatrix and
// nvgpu.device_async_copy, with fragments as scalar operands and results
// (Strata has no vector types): a fragment register is an i32 holding two
// 16-bit elements, the lower one first.
const (
	MMASyncOp       = OpMMASync
	LdMatrixOp      = OpLdMatrix
	CpAsyncOp       = OpCpAsync
	CpAsyncCommitOp = OpCpAsyncCommit
	CpAsyncWaitOp   = OpCpAsyncWait
)

// Properties of the tensor-core ops.
const (
	// ABTypeAttr is gpu.mma_sync's element type of A and B: bf16 or f16.
	ABTypeAttr = "ab_type"
	// NumAttr is the number of 8×8 matrices gpu.ldmatrix loads: 1, 2 or 4.
	NumAttr = "num"
	// TransAttr marks a transposing gpu.ldmatrix (a unit attribute).
	TransAttr = "trans"
	// BytesAttr is the size of one gpu.cp_async copy: 4, 8 or 16.
	BytesAttr = "bytes"
	// PendingAttr is the number of copy groups gpu.cp_async_wait leaves
	// in flight.
	PendingAttr = "pending"
)

// The m16n8k16 fragment sizes, in registers per lane.
const (
	MMARegsA = 4 // 16×16 A: four i32, each two elements
	MMARegsB = 2 // 16×8 B: two i32
	MMARegsC = 4 // 16×8 C and D: four f32
)

var mmaOps = []*ir.OpDef{mmaSyncDef, ldMatrixDef, cpAsyncDef, cpAsyncCommitDef, cpAsyncWaitDef}

var mmaSyncDef = &ir.OpDef{
	Name:    MMASyncOp,
	Summary: "Warp-level matrix multiply-accumulate on tensor cores (m16n8k16)",
	Description: "The 32 lanes of a warp together compute D = A·B + C for a 16×16 A " +
		"(row-major), a 16×16 B (column-major, i.e. 8 columns of 16) and a 16×8 C, as " +
		"PTX `mma.sync.aligned.m16n8k16.row.col.f32.<ab_type>.<ab_type>.f32`. Each lane " +
		"passes its fragment registers: four i32 of A, two i32 of B (each i32 two " +
		"`ab_type` elements, the lower half first) and four f32 of C, and gets four f32 " +
		"of D. With g = lane / 4 and t = lane % 4: A register r holds row g + 8·(r%2), " +
		"columns 2t + 8·(r/2) and the next; B register r holds rows 2t + 8r and the next " +
		"of column g; C and D value r hold row g + 8·(r/2), column 2t + r%2. Every lane " +
		"of the warp must execute it (a warp-collective op), as upstream's nvgpu.mma.sync.",
	Inherent: []string{ABTypeAttr},
	Operands: []ir.ArgDoc{
		{Name: "a0..a3", Doc: "i32: the lane's A fragment"},
		{Name: "b0, b1", Doc: "i32: the lane's B fragment"},
		{Name: "c0..c3", Doc: "f32: the lane's accumulator fragment"},
	},
	Results: []ir.ArgDoc{{Name: "d0..d3", Doc: "f32: the lane's result fragment"}},
	Attrs:   []ir.ArgDoc{{Name: "ab_type", Doc: "bf16 or f16 (TypeAttr)"}},
	Example: `%d:4 = "gpu.mma_sync"(%a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, %c2, %c3) <{ab_type = bf16}> : ` +
		`(i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> (f32, f32, f32, f32)`,
	Verify: verifyMMASync,
}

var ldMatrixDef = &ir.OpDef{
	Name:    LdMatrixOp,
	Summary: "Warp-level load of 8×8 matrices of 16-bit elements from workgroup memory",
	Description: "As PTX `ldmatrix.sync.aligned.m8n8.x<num>[.trans].shared.b16`: lanes " +
		"8i to 8i+7 give, in `index`, the element offset in the workgroup buffer of rows " +
		"0 to 7 of matrix i (8 consecutive elements each, 16-byte aligned), and every " +
		"lane gets result i: the two elements of matrix i at row lane/4, columns 2·(lane%4) " +
		"and the next, packed in an i32 (the lower column first). With `trans` the matrix " +
		"is read transposed (row and column swapped). Every lane of the warp must execute it.",
	Inherent: []string{NumAttr, TransAttr},
	Operands: []ir.ArgDoc{
		{Name: "source", Doc: "1-D workgroup memref of a 16-bit element type"},
		{Name: "index", Doc: "index: this lane's row start"},
	},
	Results: []ir.ArgDoc{{Name: "r0..", Doc: "num i32 registers"}},
	Attrs: []ir.ArgDoc{
		{Name: "num", Doc: "1, 2 or 4 (i64)"},
		{Name: "trans", Doc: "present to transpose (UnitAttr)"},
	},
	Example: `%r:4 = "gpu.ldmatrix"(%smem, %i) <{num = 4 : i64}> : (memref<4096xbf16, 3>, index) -> (i32, i32, i32, i32)`,
	Verify:  verifyLdMatrix,
}

var cpAsyncDef = &ir.OpDef{
	Name:    CpAsyncOp,
	Summary: "Asynchronous copy from global to workgroup memory",
	Description: "Starts copying `bytes` bytes from `source[srcIndex]` (global memory) to " +
		"`dest[dstIndex]` (workgroup memory), as PTX `cp.async.cg.shared.global` (16 bytes) " +
		"or `cp.async.ca.shared.global` (4, 8): both addresses must be aligned to `bytes`. " +
		"Only the first `srcBytes` bytes are read; the rest of the destination is zero " +
		"filled (out-of-range tiles). The copy joins the thread's current group; it is " +
		"complete, and visible to the thread, after a gpu.cp_async_wait that leaves fewer " +
		"groups pending than were committed after it (and to the block after a barrier).",
	Inherent: []string{BytesAttr},
	Operands: []ir.ArgDoc{
		{Name: "dest, dstIndex", Doc: "1-D workgroup memref and element index"},
		{Name: "source, srcIndex", Doc: "1-D global memref of the same element type and element index"},
		{Name: "srcBytes", Doc: "i32: bytes to read, at most `bytes`"},
	},
	Attrs:   []ir.ArgDoc{{Name: "bytes", Doc: "4, 8 or 16 (i64)"}},
	Example: `"gpu.cp_async"(%smem, %i, %a, %j, %n) <{bytes = 16 : i64}> : (memref<4096xbf16, 3>, index, memref<?xbf16>, index, i32) -> ()`,
	Verify:  verifyCpAsync,
}

var cpAsyncCommitDef = &ir.OpDef{
	Name:        CpAsyncCommitOp,
	Summary:     "Closes the thread's current group of asynchronous copies",
	Description: "As PTX `cp.async.commit_group`: the gpu.cp_async ops issued since the last commit form one group.",
	Example:     `"gpu.cp_async_commit"() : () -> ()`,
	Verify:      inKernel,
}

var cpAsyncWaitDef = &ir.OpDef{
	Name:    CpAsyncWaitOp,
	Summary: "Waits for the thread's asynchronous copy groups",
	Description: "As PTX `cp.async.wait_group pending`: waits until at most `pending` of the " +
		"thread's committed groups are incomplete.",
	Inherent: []string{PendingAttr},
	Attrs:    []ir.ArgDoc{{Name: "pending", Doc: "non-negative i64"}},
	Example:  `"gpu.cp_async_wait"() <{pending = 1 : i64}> : () -> ()`,
	Verify:   verifyCpAsyncWait,
}

// MMASync inserts gpu.mma_sync of the fragments a (4 i32), b (2 i32) and
// c (4 f32), A and B holding elements of abType, and returns D's four f32.
func MMASync(b *ir.Builder, loc ir.Location, abType ir.Type, a, bf, c []*ir.Value) []*ir.Value {
	ops := append(append(append([]*ir.Value{}, a...), bf...), c...)
	op := b.Op(MMASyncOp, loc, ops, []ir.Type{ir.F32, ir.F32, ir.F32, ir.F32},
		ir.NamedAttr{Name: ABTypeAttr, Value: ir.TypeAttr{Type: abType}})
	return op.Results()
}

// LdMatrix inserts gpu.ldmatrix of num matrices (transposed when trans)
// from the workgroup buffer src, this lane's row starting at index.
func LdMatrix(b *ir.Builder, loc ir.Location, src, index *ir.Value, num int, trans bool) []*ir.Value {
	rs := make([]ir.Type, num)
	for i := range rs {
		rs[i] = ir.I32
	}
	props := []ir.NamedAttr{{Name: NumAttr, Value: ir.Int(int64(num), ir.I64)}}
	if trans {
		props = append(props, ir.NamedAttr{Name: TransAttr, Value: ir.UnitAttr{}})
	}
	return b.Op(LdMatrixOp, loc, []*ir.Value{src, index}, rs, props...).Results()
}

// CpAsync inserts gpu.cp_async of bytes bytes from src[srcIdx] to
// dst[dstIdx], reading srcBytes (an i32) of them.
func CpAsync(b *ir.Builder, loc ir.Location, dst, dstIdx, src, srcIdx, srcBytes *ir.Value, bytes int64) *ir.Operation {
	return b.Op(CpAsyncOp, loc, []*ir.Value{dst, dstIdx, src, srcIdx, srcBytes}, nil,
		ir.NamedAttr{Name: BytesAttr, Value: ir.Int(bytes, ir.I64)})
}

// CpAsyncCommit inserts gpu.cp_async_commit.
func CpAsyncCommit(b *ir.Builder, loc ir.Location) *ir.Operation {
	return b.Op(CpAsyncCommitOp, loc, nil, nil)
}

// CpAsyncWait inserts gpu.cp_async_wait leaving pending groups in flight.
func CpAsyncWait(b *ir.Builder, loc ir.Location, pending int64) *ir.Operation {
	return b.Op(CpAsyncWaitOp, loc, nil, nil, ir.NamedAttr{Name: PendingAttr, Value: ir.Int(pending, ir.I64)})
}

// IntProp returns the integer property name of op, or def when absent.
func IntProp(op *ir.Operation, name string, def int64) int64 {
	if a, ok := op.Attr(name).(ir.IntegerAttr); ok {
		return a.Value
	}
	return def
}

// MMAElementType returns gpu.mma_sync's ab_type, nil when missing.
func MMAElementType(op *ir.Operation) ir.Type {
	if a, ok := op.Attr(ABTypeAttr).(ir.TypeAttr); ok {
		return a.Type
	}
	return nil
}

// IsTransposed reports whether a gpu.ldmatrix has the trans attribute.
func IsTransposed(op *ir.Operation) bool {
	_, ok := op.Attr(TransAttr).(ir.UnitAttr)
	return ok
}

func verifyMMASync(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	if t := MMAElementType(op); t != ir.BF16 && t != ir.F16 {
		return fmt.Errorf("requires '%s' to be bf16 or f16", ABTypeAttr)
	}
	if op.NumOperands() != MMARegsA+MMARegsB+MMARegsC || op.NumResults() != MMARegsC {
		return fmt.Errorf("expects 10 operands (4 i32 of A, 2 i32 of B, 4 f32 of C) and 4 f32 results")
	}
	for i, v := range op.Operands() {
		want := ir.Type(ir.I32)
		if i >= MMARegsA+MMARegsB {
			want = ir.F32
		}
		if v.Type() != want {
			return fmt.Errorf("operand #%d must be %s, not %s", i, want, v.Type())
		}
	}
	for i, r := range op.Results() {
		if r.Type() != ir.F32 {
			return fmt.Errorf("result #%d must be f32, not %s", i, r.Type())
		}
	}
	return nil
}

// workgroup1D returns the element type of a 1-D memref in workgroup
// memory, or an error naming what.
func workgroup1D(v *ir.Value, what string, shared bool) (ir.Type, error) {
	mt, ok := v.Type().(*ir.MemRefType)
	if !ok || !mt.Ranked() || len(mt.Shape()) != 1 {
		return nil, fmt.Errorf("%s must be a 1-D memref, not %s", what, v.Type())
	}
	inShared := false
	if a, ok := mt.MemorySpace.(ir.IntegerAttr); ok && a.Value == WorkgroupMemorySpace {
		inShared = true
	}
	if inShared != shared {
		where := "global"
		if shared {
			where = "workgroup (3)"
		}
		return nil, fmt.Errorf("%s must be in %s memory, not %s", what, where, v.Type())
	}
	return mt.ElementType(), nil
}

func verifyLdMatrix(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	n := IntProp(op, NumAttr, 0)
	if n != 1 && n != 2 && n != 4 {
		return fmt.Errorf("requires '%s' to be 1, 2 or 4", NumAttr)
	}
	if op.NumOperands() != 2 || op.Operand(1).Type() != ir.Index {
		return fmt.Errorf("expects a workgroup buffer and an index")
	}
	elem, err := workgroup1D(op.Operand(0), "source", true)
	if err != nil {
		return err
	}
	if bitWidth(elem) != 16 {
		return fmt.Errorf("source elements must be 16 bits wide, not %s", elem)
	}
	if op.NumResults() != int(n) {
		return fmt.Errorf("expects %d results, one per matrix", n)
	}
	for _, r := range op.Results() {
		if r.Type() != ir.I32 {
			return fmt.Errorf("results must be i32, not %s", r.Type())
		}
	}
	return nil
}

func verifyCpAsync(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	n := IntProp(op, BytesAttr, 0)
	if n != 4 && n != 8 && n != 16 {
		return fmt.Errorf("requires '%s' to be 4, 8 or 16", BytesAttr)
	}
	if op.NumOperands() != 5 || op.Operand(1).Type() != ir.Index || op.Operand(3).Type() != ir.Index || op.Operand(4).Type() != ir.I32 {
		return fmt.Errorf("expects (workgroup buffer, index, global buffer, index, i32)")
	}
	de, err := workgroup1D(op.Operand(0), "dest", true)
	if err != nil {
		return err
	}
	se, err := workgroup1D(op.Operand(2), "source", false)
	if err != nil {
		return err
	}
	if de != se {
		return fmt.Errorf("source and dest element types differ (%s, %s)", se, de)
	}
	if w := bitWidth(de); w < 8 || n*8%int64(w) != 0 {
		return fmt.Errorf("%d bytes is not a whole number of %s elements", n, de)
	}
	return nil
}

func verifyCpAsyncWait(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	if IntProp(op, PendingAttr, -1) < 0 {
		return fmt.Errorf("requires '%s' to be a non-negative integer", PendingAttr)
	}
	return nil
}

// bitWidth is the width of an integer or float element type, 0 for others.
func bitWidth(t ir.Type) int {
	switch t := t.(type) {
	case *ir.IntegerType:
		return t.Width
	case *ir.FloatType:
		return t.Width
	}
	return 0
}
