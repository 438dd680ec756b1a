package gpu

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// Warpgroup tensor-core ops (sm_90a): gpu.wgmma multiplies a register A
// by a B tile in workgroup memory on the tensor cores of Hopper GPUs, as a
// warpgroup of 4 consecutive warps (128 threads starting at a thread id
// divisible by 128). PTX's wgmma.mma_async is asynchronous; gpu.wgmma is
// one whole fenced, committed and awaited group of them (fence, the
// k-steps, commit, wait 0), so its results are ordinary values and the
// interpreter can run it at once. gpu.fence_proxy_async orders a thread's
// ordinary and cp.async writes to workgroup memory before the tensor
// cores' reads of it (after a barrier).
const (
	WGMMAOp           = OpWGMMA
	WGMMAWaitOp       = OpWGMMAWait
	FenceProxyAsyncOp = OpFenceProxyAsync
)

// Properties of gpu.wgmma (besides ab_type, shared with gpu.mma_sync).
const (
	// WGMMANAttr is the N of the m64nNk16 shape: a multiple of 8 from 8
	// to 256.
	WGMMANAttr = "n"
	// KStepsAttr is the number of k16 steps: K = 16·k_steps.
	KStepsAttr = "k_steps"
	// TransBAttr marks a B stored MN-major (N contiguous; a unit attribute).
	TransBAttr = "trans_b"
	// PanelAttr is the element distance between the 64-element-wide panels
	// of B (see gpu.wgmma's description); required when B spans several.
	PanelAttr = "panel"
	// ASharedAttr marks an A read from workgroup memory (a buffer and an
	// offset instead of registers; a unit attribute).
	ASharedAttr = "a_shared"
)

// PTXTargetAttr, on a gpu.module, names the PTX target its kernels need
// when the default one will not do (WGMMATarget for gpu.wgmma); the GPU
// runtime compiles that module for it.
const PTXTargetAttr = "strata.ptx_target"

// WGMMATarget is the PTX target of kernels with gpu.wgmma.
const WGMMATarget = "sm_90a"

// loopYieldOp is loop.yield, which may carry gpu.wgmma results in flight
// to a loop's next iteration (the loop dialect is not imported here).
const loopYieldOp = "loop.yield"

// WarpgroupSize is the number of threads that execute a gpu.wgmma together.
const WarpgroupSize = 4 * WarpSize

// WGMMASwizzleRow is the row length in elements of gpu.wgmma's B layout:
// 128 bytes of 16-bit elements, the span of the 128-byte swizzle.
const WGMMASwizzleRow = 64

// WGMMAAlign is the alignment, in elements of 16 bits, of gpu.wgmma's B
// offset: the 1024 bytes over which the 128-byte swizzle repeats.
const WGMMAAlign = 512

var wgmmaOps = []*ir.OpDef{wgmmaDef, wgmmaWaitDef, fenceProxyAsyncDef}

var wgmmaDef = &ir.OpDef{
	Name:    WGMMAOp,
	Summary: "Warpgroup matrix multiply-accumulate on Hopper tensor cores (m64nNk16, sm_90a)",
	Description: "The 128 threads of a warpgroup (warps 4q to 4q+3) together compute D = A·B + C " +
		"(D = A·B without C operands) for a 64×K A in registers, a K×N B in workgroup memory and " +
		"a 64×N f32 C, K = 16·k_steps, as PTX `wgmma.fence`, k_steps " +
		"`wgmma.mma_async.sync.aligned.m64n<n>k16.f32.<ab_type>.<ab_type>` (A from registers, B " +
		"by a 128-byte-swizzle matrix descriptor), `wgmma.commit_group` and `wgmma.wait_group 0`. " +
		"Warp w of the group owns rows 16w to 16w+15 of A, C and D; with g = lane / 4 and t = " +
		"lane % 4, A register 4s+r (k-step s) holds row g + 8·(r%2), columns 16s + 2t + 8·(r/2) " +
		"and the next (two elements in an i32, the lower column first), as gpu.mma_sync's A; C " +
		"and D value i hold row g + 8·((i%4)/2), column 8·(i/4) + 2t + i%2. B is read from the " +
		"workgroup buffer at element offset `offset` (a multiple of 512: 1024 bytes) in the " +
		"128-byte swizzle: element (row, col) of the stored matrix is at offset + (col/64)·panel " +
		"+ 64·row + 8·((col%64/8) xor (row%8)) + col%8, the stored matrix being B's N×K " +
		"transpose (K-major: B(k, n) is element (n, k)) or, with trans_b, B itself (MN-major: " +
		"B(k, n) is element (k, n)). Every thread of the warpgroup must execute it with the same " +
		"buffer and offset. With `pending` N > 0 the op waits only until N groups are pending " +
		"(`wgmma.wait_group N`): its results may still be in flight, and only a gpu.wgmma_wait, a later " +
		"gpu.wgmma of the warpgroup accumulating into them (as its C: the tensor cores run a warpgroup's " +
		"groups in order) or a loop.yield carrying them to the next iteration (whose block argument is then " +
		"in flight too, for the same uses) may use them; its A registers and B tile must not change until " +
		"one with fewer pending groups. With " +
		"a_shared, A is read from workgroup memory instead (by a matrix descriptor): the A operands are " +
		"a workgroup buffer of ab_type and the index of A's first element (a multiple of 512), element " +
		"(m, k) of the 64×K A being at that offset + 64·m + 8·((k/8) xor (m%8)) + k%8 (K-major in the " +
		"128-byte swizzle, K at most 64), the same for every thread of the warpgroup. The " +
		"kernel needs the sm_90a target.",
	Inherent: []string{ABTypeAttr, WGMMANAttr, KStepsAttr, TransBAttr, PanelAttr, PendingAttr, ASharedAttr},
	Operands: []ir.ArgDoc{
		{Name: "a0..", Doc: "4·k_steps i32: the thread's A fragments (with a_shared: a 1-D workgroup memref of ab_type and an index)"},
		{Name: "b, offset", Doc: "1-D workgroup memref of ab_type and the index of B's first element"},
		{Name: "c0..", Doc: "n/2 f32 (optional): the thread's accumulator fragment"},
	},
	Results: []ir.ArgDoc{{Name: "d0..", Doc: "n/2 f32: the thread's result fragment"}},
	Attrs: []ir.ArgDoc{
		{Name: "ab_type", Doc: "bf16 or f16 (TypeAttr)"},
		{Name: "n", Doc: "N: a multiple of 8 from 8 to 256 (i64)"},
		{Name: "k_steps", Doc: "K/16, at least 1 (i64)"},
		{Name: "trans_b", Doc: "present when B is stored MN-major (UnitAttr)"},
		{Name: "panel", Doc: "element distance between B's 64-column panels, a multiple of 512; needed when the stored matrix is wider than 64 (i64)"},
		{Name: "pending", Doc: "groups left in flight at the end, 0 when absent (i64)"},
		{Name: "a_shared", Doc: "present when A is read from workgroup memory (UnitAttr)"},
	},
	Example: `%d:8 = "gpu.wgmma"(%a0, %a1, %a2, %a3, %smem, %off) <{ab_type = bf16, k_steps = 1 : i64, n = 16 : i64}> : ` +
		`(i32, i32, i32, i32, memref<8192xbf16, 3>, index) -> (f32, f32, f32, f32, f32, f32, f32, f32)`,
	Verify: verifyWGMMA,
}

var wgmmaWaitDef = &ir.OpDef{
	Name:    WGMMAWaitOp,
	Summary: "Waits for the warpgroup's gpu.wgmma groups and returns their results",
	Description: "As PTX `wgmma.wait_group pending`: waits until at most `pending` of the warpgroup's " +
		"committed gpu.wgmma groups are incomplete, then returns its operands (results of gpu.wgmma ops " +
		"with a nonzero `pending`, now complete: the newest `pending` groups excepted) unchanged. Every " +
		"thread of the warpgroup must execute it.",
	Inherent: []string{PendingAttr},
	Operands: []ir.ArgDoc{{Name: "v0..", Doc: "f32: results of gpu.wgmma"}},
	Results:  []ir.ArgDoc{{Name: "r0..", Doc: "f32: the same values, complete"}},
	Attrs:    []ir.ArgDoc{{Name: "pending", Doc: "non-negative i64"}},
	Example:  `%r:2 = "gpu.wgmma_wait"(%d0, %d1) <{pending = 0 : i64}> : (f32, f32) -> (f32, f32)`,
	Verify:   verifyWGMMAWait,
}

var fenceProxyAsyncDef = &ir.OpDef{
	Name:    FenceProxyAsyncOp,
	Summary: "Orders the thread's workgroup-memory writes before the tensor cores' reads",
	Description: "As PTX `fence.proxy.async.shared::cta`: the thread's earlier writes to workgroup " +
		"memory (stores, completed gpu.cp_async copies) become visible to asynchronous-proxy " +
		"reads such as gpu.wgmma's B, once a barrier follows. (The interpreter runs it as a no-op.)",
	Example: `"gpu.fence_proxy_async"() : () -> ()`,
	Verify:  inKernel,
}

// WGMMAShape is the shape of one gpu.wgmma.
type WGMMAShape struct {
	// N is the columns of B, C and D; KSteps the k16 steps.
	N, KSteps int64
	// TransB says B is stored MN-major.
	TransB bool
	// Panel is the element distance between 64-column panels (0: one panel).
	Panel int64
	// Acc says the op takes C operands.
	Acc bool
	// Pending is the number of groups left in flight at the op's end.
	Pending int64
	// AShared says A is read from workgroup memory (a buffer and an
	// offset) rather than registers.
	AShared bool
}

// NumA is the number of A operands: 4·KSteps registers, or a buffer and
// an offset with AShared.
func (s WGMMAShape) NumA() int64 {
	if s.AShared {
		return 2
	}
	return 4 * s.KSteps
}

// StoredRows is the number of rows of the stored B: N, or K with TransB.
func (s WGMMAShape) StoredRows() int64 {
	if s.TransB {
		return 16 * s.KSteps
	}
	return s.N
}

// StoredCols is the number of columns of the stored B: K, or N with TransB.
func (s WGMMAShape) StoredCols() int64 {
	if s.TransB {
		return s.N
	}
	return 16 * s.KSteps
}

// SwizzledOffset is the element offset, from B's offset, of element (row,
// col) of the stored B in the 128-byte swizzle with panels panel apart.
func SwizzledOffset(row, col, panel int64) int64 {
	c := col % WGMMASwizzleRow
	return col/WGMMASwizzleRow*panel + WGMMASwizzleRow*row + 8*((c/8)^(row%8)) + c%8
}

// WGMMA inserts gpu.wgmma of shape s: a holds 4·s.KSteps i32 (with
// s.AShared a workgroup buffer and an offset), c (when s.Acc) s.N/2 f32; B is buffer b from element offset off. It returns D's
// s.N/2 f32.
func WGMMA(b *ir.Builder, loc ir.Location, abType ir.Type, s WGMMAShape, a []*ir.Value, buf, off *ir.Value, c []*ir.Value) []*ir.Value {
	ops := append(append(append([]*ir.Value{}, a...), buf, off), c...)
	rs := make([]ir.Type, s.N/2)
	for i := range rs {
		rs[i] = ir.F32
	}
	props := []ir.NamedAttr{
		{Name: ABTypeAttr, Value: ir.TypeAttr{Type: abType}},
		{Name: WGMMANAttr, Value: ir.Int(s.N, ir.I64)},
		{Name: KStepsAttr, Value: ir.Int(s.KSteps, ir.I64)},
	}
	if s.TransB {
		props = append(props, ir.NamedAttr{Name: TransBAttr, Value: ir.UnitAttr{}})
	}
	if s.Panel != 0 {
		props = append(props, ir.NamedAttr{Name: PanelAttr, Value: ir.Int(s.Panel, ir.I64)})
	}
	if s.Pending != 0 {
		props = append(props, ir.NamedAttr{Name: PendingAttr, Value: ir.Int(s.Pending, ir.I64)})
	}
	if s.AShared {
		props = append(props, ir.NamedAttr{Name: ASharedAttr, Value: ir.UnitAttr{}})
	}
	return b.Op(WGMMAOp, loc, ops, rs, props...).Results()
}

// WGMMAWait inserts gpu.wgmma_wait of vs leaving pending groups in flight
// and returns the values, complete.
func WGMMAWait(b *ir.Builder, loc ir.Location, pending int64, vs []*ir.Value) []*ir.Value {
	rs := make([]ir.Type, len(vs))
	for i, v := range vs {
		rs[i] = v.Type()
	}
	return b.Op(WGMMAWaitOp, loc, vs, rs, ir.NamedAttr{Name: PendingAttr, Value: ir.Int(pending, ir.I64)}).Results()
}

// FenceProxyAsync inserts gpu.fence_proxy_async.
func FenceProxyAsync(b *ir.Builder, loc ir.Location) *ir.Operation {
	return b.Op(FenceProxyAsyncOp, loc, nil, nil)
}

// WGMMAShapeOf returns the shape of a gpu.wgmma from its attributes and
// operand count (not verified: see verifyWGMMA).
func WGMMAShapeOf(op *ir.Operation) WGMMAShape {
	s := WGMMAShape{N: IntProp(op, WGMMANAttr, 0), KSteps: IntProp(op, KStepsAttr, 0), Panel: IntProp(op, PanelAttr, 0),
		Pending: IntProp(op, PendingAttr, 0)}
	_, s.TransB = op.Attr(TransBAttr).(ir.UnitAttr)
	_, s.AShared = op.Attr(ASharedAttr).(ir.UnitAttr)
	s.Acc = int64(op.NumOperands()) > s.NumA()+2
	return s
}

func verifyWGMMA(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	elem := MMAElementType(op)
	if elem != ir.BF16 && elem != ir.F16 {
		return fmt.Errorf("requires '%s' to be bf16 or f16", ABTypeAttr)
	}
	s := WGMMAShapeOf(op)
	if s.N < 8 || s.N > 256 || s.N%8 != 0 {
		return fmt.Errorf("requires '%s' to be a multiple of 8 from 8 to 256, not %d", WGMMANAttr, s.N)
	}
	if s.KSteps < 1 {
		return fmt.Errorf("requires '%s' to be at least 1", KStepsAttr)
	}
	if s.Pending < 0 {
		return fmt.Errorf("requires '%s' to be non-negative", PendingAttr)
	}
	if s.Pending > 0 {
		for _, r := range op.Results() {
			for _, u := range r.Users() {
				if u.Name() != WGMMAWaitOp && u.Name() != WGMMAOp && u.Name() != loopYieldOp {
					return fmt.Errorf("result #%d is in flight ('%s' %d) but used by '%s', not '%s', a '%s' accumulator or '%s'",
						r.Index(), PendingAttr, s.Pending, u.Name(), WGMMAWaitOp, WGMMAOp, loopYieldOp)
				}
			}
		}
	}
	nA := s.NumA()
	if n := int64(op.NumOperands()); n != nA+2 && n != nA+2+s.N/2 {
		a := fmt.Sprintf("%d i32 A registers", nA)
		if s.AShared {
			a = "A's workgroup buffer and index"
		}
		return fmt.Errorf("expects %s, a workgroup buffer, an index and optionally %d f32 accumulators; got %d operands",
			a, s.N/2, n)
	}
	if s.AShared {
		if 16*s.KSteps > WGMMASwizzleRow {
			return fmt.Errorf("an A in workgroup memory is at most %d elements wide (k_steps ≤ %d), not k_steps %d",
				WGMMASwizzleRow, WGMMASwizzleRow/16, s.KSteps)
		}
		ae, err := workgroup1D(op.Operand(0), "A", true)
		if err != nil {
			return err
		}
		if ae != elem {
			return fmt.Errorf("A's elements are %s, not the ab_type %s", ae, elem)
		}
		if mt := op.Operand(0).Type().(*ir.MemRefType); 64*WGMMASwizzleRow > mt.Shape()[0] {
			return fmt.Errorf("A (64 rows of %d elements) does not fit in %s", WGMMASwizzleRow, mt)
		}
	}
	for i, v := range op.Operands() {
		want := ir.Type(ir.I32)
		switch {
		case s.AShared && i == 0:
			continue
		case s.AShared && i == 1:
			want = ir.Index
		case int64(i) == nA:
			continue
		case int64(i) == nA+1:
			want = ir.Index
		case int64(i) > nA+1:
			want = ir.F32
		}
		if v.Type() != want {
			return fmt.Errorf("operand #%d must be %s, not %s", i, want, v.Type())
		}
	}
	be, err := workgroup1D(op.Operand(int(nA)), "B", true)
	if err != nil {
		return err
	}
	if be != elem {
		return fmt.Errorf("B's elements are %s, not the ab_type %s", be, elem)
	}
	if int64(op.NumResults()) != s.N/2 {
		return fmt.Errorf("expects %d f32 results, not %d", s.N/2, op.NumResults())
	}
	for i, r := range op.Results() {
		if r.Type() != ir.F32 {
			return fmt.Errorf("result #%d must be f32, not %s", i, r.Type())
		}
	}
	rows, cols := s.StoredRows(), s.StoredCols()
	switch {
	case cols > WGMMASwizzleRow && s.Panel == 0:
		return fmt.Errorf("B's stored rows are %d elements wide, more than one 64-element panel: requires '%s'", cols, PanelAttr)
	case s.Panel < 0 || s.Panel%WGMMAAlign != 0:
		return fmt.Errorf("requires '%s' to be a non-negative multiple of %d, not %d", PanelAttr, WGMMAAlign, s.Panel)
	case cols > WGMMASwizzleRow && s.Panel < rows*WGMMASwizzleRow:
		return fmt.Errorf("'%s' %d overlaps the %d rows of a panel (%d elements)", PanelAttr, s.Panel, rows, rows*WGMMASwizzleRow)
	case s.TransB && s.N%WGMMASwizzleRow != 0 && s.N > WGMMASwizzleRow:
		return fmt.Errorf("an MN-major B wider than 64 needs n a multiple of 64, not %d", s.N)
	}
	// (The swizzle may move any chunk of the last row to its end.)
	if mt := op.Operand(int(nA)).Type().(*ir.MemRefType); (cols-1)/WGMMASwizzleRow*s.Panel+rows*WGMMASwizzleRow > mt.Shape()[0] {
		return fmt.Errorf("B (%d×%d stored) does not fit in %s", rows, cols, mt)
	}
	return nil
}

func verifyWGMMAWait(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	if IntProp(op, PendingAttr, -1) < 0 {
		return fmt.Errorf("requires '%s' to be a non-negative integer", PendingAttr)
	}
	if op.NumOperands() == 0 || op.NumOperands() != op.NumResults() {
		return fmt.Errorf("expects as many results as operands, at least one")
	}
	for i, v := range op.Operands() {
		if v.Type() != ir.F32 || op.Result(i).Type() != ir.F32 {
			return fmt.Errorf("operand and result #%d must be f32", i)
		}
	}
	return nil
}
