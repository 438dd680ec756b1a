package gpu

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/ir"
)

// parentIs returns a verifier requiring the op's parent to be named name.
func parentIs(name string) func(*ir.Operation) error {
	return func(op *ir.Operation) error {
		if p := op.ParentOp(); p == nil || p.Name() != name {
			return fmt.Errorf("expects parent op '%s'", name)
		}
		return nil
	}
}

// inKernel requires op to be nested in a gpu.func: outside one, thread and
// block indices have no meaning in Strata (upstream also allows them in
// gpu.launch, which Strata does not have).
func inKernel(op *ir.Operation) error {
	if op.ParentOfType(FuncOp) == nil {
		return fmt.Errorf("must be nested in a '%s'", FuncOp)
	}
	return nil
}

func verifyModule(op *ir.Operation) error {
	if _, ok := op.Attr(ir.SymNameAttr).(ir.StringAttr); !ok {
		return fmt.Errorf("requires attribute 'sym_name'")
	}
	if t := op.Properties().Get(TargetsAttr); t != nil {
		if a, ok := t.(ir.ArrayAttr); !ok || len(a) == 0 {
			return fmt.Errorf("attribute '%s' failed to satisfy constraint: array of GPU target attributes with at least 1 elements", TargetsAttr)
		}
	}
	if op.NumRegions() != 1 || op.Region(0).Empty() {
		return fmt.Errorf("requires one region with one block")
	}
	if t := op.Region(0).Front().Terminator(); t == nil || t.Name() != ModuleEndOp {
		return fmt.Errorf("expects its block to end with '%s'", ModuleEndOp)
	}
	return nil
}

func verifyFunc(op *ir.Operation) error {
	if op.Attr(FunctionTypeAttr) == nil {
		return fmt.Errorf("requires attribute 'function_type'")
	}
	ft := FuncType(op)
	if ft == nil {
		return fmt.Errorf("attribute 'function_type' failed to satisfy constraint: type attribute of function type")
	}
	if _, ok := op.Attr(ir.SymNameAttr).(ir.StringAttr); !ok {
		return fmt.Errorf("requires attribute 'sym_name'")
	}
	if a := op.Attr(KernelAttr); a != nil {
		if _, ok := a.(ir.UnitAttr); !ok {
			return fmt.Errorf("attribute '%s' must be a unit attribute", KernelAttr)
		}
	}
	if p := op.ParentOp(); p == nil || p.Name() != ModuleOp {
		return fmt.Errorf("expects parent op '%s'", ModuleOp)
	}
	if IsKernel(op) && len(ft.Results) != 0 {
		return fmt.Errorf("expected void return type for kernel function")
	}
	nwg := NumWorkgroupAttributions(op)
	if a := op.Attr(WorkgroupAttributionsAttr); a != nil {
		if ia, ok := a.(ir.IntegerAttr); !ok || ia.Value < 0 {
			return fmt.Errorf("attribute '%s' must be a non-negative integer", WorkgroupAttributionsAttr)
		}
	}
	if op.NumRegions() != 1 || op.Region(0).Empty() {
		return fmt.Errorf("expected body with at least one block")
	}
	entry := op.Region(0).Front()
	if entry.NumArguments() < len(ft.Inputs)+nwg {
		return fmt.Errorf("expected at least %d arguments to body region", len(ft.Inputs)+nwg)
	}
	for i, t := range ft.Inputs {
		if entry.Argument(i).Type() != t {
			return fmt.Errorf("expected body region argument #%d to be of type %s, got %s", i, t, entry.Argument(i).Type())
		}
	}
	if err := verifyTensorMaps(op, entry); err != nil {
		return err
	}
	if err := verifyClusterSize(op); err != nil {
		return err
	}
	for _, v := range WorkgroupBuffers(op) {
		if !inMemorySpace(v.Type(), WorkgroupMemorySpace, "workgroup") {
			return fmt.Errorf("expected memref type in address space %d in workgroup attribution, got %s", WorkgroupMemorySpace, v.Type())
		}
	}
	for _, v := range PrivateBuffers(op) {
		if !inMemorySpace(v.Type(), PrivateMemorySpace, "private") {
			return fmt.Errorf("expected memref type in address space %d in private attribution, got %s", PrivateMemorySpace, v.Type())
		}
	}
	return nil
}

// inMemorySpace reports whether t is a memref in memory space n, written
// as the integer or as #gpu.address_space<name>.
func inMemorySpace(t ir.Type, n int64, name string) bool {
	m, ok := t.(*ir.MemRefType)
	if !ok {
		return false
	}
	switch s := m.MemorySpace.(type) {
	case ir.IntegerAttr:
		return s.Value == n
	case ir.OpaqueAttr:
		return s.Text == "#gpu.address_space<"+name+">"
	}
	return false
}

func verifyReturn(op *ir.Operation) error {
	fn := op.ParentOp()
	if fn == nil || fn.Name() != FuncOp {
		return fmt.Errorf("expects parent op '%s'", FuncOp)
	}
	ft := FuncType(fn)
	if ft == nil {
		return nil // the function's verifier reports it
	}
	if op.NumOperands() != len(ft.Results) {
		d := ir.Errorf(op.Loc(), "'%s' op expected %d result operands", ReturnOp, len(ft.Results))
		d.Note(fn.Loc(), "return type declared here")
		return d
	}
	for i, v := range op.Operands() {
		if v.Type() != ft.Results[i] {
			return fmt.Errorf("unexpected type `'%s'' for operand #%d", v.Type(), i)
		}
	}
	return nil
}

func verifyID(op *ir.Operation) error {
	if Dimension(op) == "" {
		return fmt.Errorf("requires attribute 'dimension' (#gpu<dim x>, y or z)")
	}
	if op.NumResults() != 1 || op.Result(0).Type() != ir.Index {
		return fmt.Errorf("requires one result of type index")
	}
	if b := op.Properties().Get(UpperBoundAttr); b != nil {
		if ib, ok := b.(ir.IntegerAttr); !ok || ib.Type != ir.Index {
			return fmt.Errorf("attribute '%s' failed to satisfy constraint: index attribute", UpperBoundAttr)
		}
	}
	return inKernel(op)
}

func verifyShuffle(op *ir.Operation) error {
	if ShuffleMode(op) == "" {
		return fmt.Errorf("requires attribute 'mode' (#gpu<shuffle_mode xor>, up, down or idx)")
	}
	if op.NumOperands() != 3 || op.NumResults() != 2 {
		return fmt.Errorf("requires 3 operands (value, offset, width) and 2 results")
	}
	t := op.Operand(0).Type()
	switch t {
	case ir.I32, ir.I64, ir.F32, ir.F64:
	default:
		return fmt.Errorf("operand #0 must be i32, i64, f32 or f64, but got '%s'", t)
	}
	for i := 1; i < 3; i++ {
		if ot := op.Operand(i).Type(); ot != ir.I32 {
			return fmt.Errorf("operand #%d must be 32-bit signless integer, but got '%s'", i, ot)
		}
	}
	if op.Result(0).Type() != t {
		return fmt.Errorf("failed to verify that all of {value, shuffleResult} have same type")
	}
	if op.Result(1).Type() != ir.I1 {
		return fmt.Errorf("result #1 must be 1-bit signless integer, but got '%s'", op.Result(1).Type())
	}
	return inKernel(op)
}

func verifyLaunchFunc(op *ir.Operation) error {
	seg, ok := segments(op)
	if !ok {
		return fmt.Errorf("'%s' must be array<i32> of %d non-negative sizes adding up to the number of operands", SegmentsAttr, numSegments)
	}
	for i, n := range seg {
		want := int64(0)
		switch {
		case i >= segGrid && i < segCluster:
			want = 1
		case i == segShared || i == segArgs:
			continue
		}
		if n != want {
			return fmt.Errorf("operand group %d has %d operands, expected %d (async tokens and clusters are not supported)", i, n, want)
		}
	}
	if seg[segShared] > 1 {
		return fmt.Errorf("expects at most one dynamic_shared_memory_size operand")
	}
	l, _ := LaunchOf(op)
	sizeType := l.Grid[0].Type()
	if sizeType != ir.Index && sizeType != ir.I32 && sizeType != ir.I64 {
		return fmt.Errorf("grid and block sizes must be index, i32 or i64, got '%s'", sizeType)
	}
	for i := range 3 {
		if l.Grid[i].Type() != sizeType || l.Block[i].Type() != sizeType {
			return fmt.Errorf("grid and block sizes must all have one type")
		}
	}
	if l.DynamicSharedBytes != nil && l.DynamicSharedBytes.Type() != ir.I32 {
		return fmt.Errorf("dynamic_shared_memory_size must be i32, got '%s'", l.DynamicSharedBytes.Type())
	}
	if _, ok := op.Attr(KernelRefAttr).(ir.SymbolRefAttr); !ok {
		return fmt.Errorf("requires attribute 'kernel'")
	}
	if len(l.Kernel.Nested) != 1 {
		return fmt.Errorf("expected a symbol reference with a nested kernel, @module::@kernel, got %s", l.Kernel)
	}
	// The container module is the builtin.module around the launch.
	container := op.ParentOfType("builtin.module")
	if container == nil || container.Attr(ContainerModuleAttr) == nil {
		return fmt.Errorf("expected the closest surrounding module to have the '%s' attribute", ContainerModuleAttr)
	}
	mod := ir.LookupSymbol(op, ir.SymbolRef(l.Kernel.Root))
	if mod == nil || mod.Name() != ModuleOp {
		return fmt.Errorf("kernel container '%s' is undefined", l.Kernel.Root)
	}
	fn := ir.LookupSymbol(mod, ir.SymbolRef(l.Kernel.Nested[0]))
	if fn == nil || fn.Name() != FuncOp {
		return fmt.Errorf("kernel function '%s' is undefined", l.Kernel)
	}
	if !IsKernel(fn) {
		return fmt.Errorf("kernel function is missing the '%s' attribute", KernelAttr)
	}
	ft := FuncType(fn)
	if ft == nil {
		return nil // the kernel's verifier reports it
	}
	if len(l.Args) != len(ft.Inputs) {
		return fmt.Errorf("got %d kernel operands but expected %d", len(l.Args), len(ft.Inputs))
	}
	for i, a := range l.Args {
		if a.Type() != ft.Inputs[i] {
			return fmt.Errorf("type of function argument %d does not match", i)
		}
	}
	return verifyLaunchShared(l, fn)
}

// verifyLaunchShared checks that a launch passes the dynamic shared memory
// its kernel's workgroup buffers need (a size computed at run time is
// trusted): without it the kernel would address past its block's share.
func verifyLaunchShared(l Launch, fn *ir.Operation) error {
	need, err := DynamicSharedBytes(fn)
	if err != nil || need == 0 {
		return nil // the kernel's own problem, reported by the backends
	}
	if l.DynamicSharedBytes == nil {
		return fmt.Errorf("kernel %s keeps its %d bytes of workgroup memory in dynamic shared memory (more than %d): the launch must pass dynamic_shared_memory_size", l.Kernel, need, MaxStaticSharedBytes)
	}
	if c := l.DynamicSharedBytes.DefiningOp(); c != nil && c.Name() == arith.OpConstant {
		if v, ok := c.Attr("value").(ir.IntegerAttr); ok && v.Value < need {
			return fmt.Errorf("dynamic_shared_memory_size %d is less than the %d bytes of kernel %s's workgroup memory", v.Value, need, l.Kernel)
		}
	}
	return nil
}
