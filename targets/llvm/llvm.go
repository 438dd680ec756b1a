// Package llvm translates the kernels of a gpu.module into an LLVM IR
// module for NVPTX, built in memory with github.com/llir/llvm (typed
// pointers, as LLVM up to 14 prints them and LLVM 19 still reads).
//
// The translation follows the kernel ABI of docs/lowering.md: every
// gpu.func kernel becomes a function marked as a kernel in
// !nvvm.annotations whose parameters are, in order, `T addrspace(1)*` for
// each global memref, i64 for index and the integer or float of each
// scalar (bf16 travels as its i16 bits). Workgroup buffers become
// addrspace(3) globals, or, in a kernel whose buffers exceed the 48 KiB
// of static shared memory, slices of the external zero-length array
// DynamicShared (dynamic shared memory, sized by the launch). Structured loop.for and loop.if become basic blocks
// with phis; math ops become sequences of NVVM intrinsics that both PTX
// backends of targets/nvptx select (docs/ptx-math.md gives their error).
package llvm

import (
	"fmt"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// DataLayout is the NVPTX 64-bit data layout.
const DataLayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"

// Triple is the NVPTX target triple.
const Triple = "nvptx64-nvidia-cuda"

// Translate returns the LLVM IR module of a gpu.module's kernels. Anything
// it cannot translate is a located diagnostic.
func Translate(gpuModule *ir.Operation) (*llir.Module, error) {
	return TranslateAll([]*ir.Operation{gpuModule})
}

// TranslateAll returns one LLVM IR module holding the kernels of every
// gpu.module given, so that one PTX file serves a whole program. Kernel
// names must be unique across the modules.
func TranslateAll(gpuModules []*ir.Operation) (*llir.Module, error) {
	m := llir.NewModule()
	m.DataLayout = DataLayout
	m.TargetTriple = Triple
	t := &translator{m: m, decls: map[string]*llir.Func{}}
	defined := map[string]*ir.Operation{}
	for _, gpuModule := range gpuModules {
		if gpuModule.Name() != gpu.ModuleOp {
			return nil, ir.Errorf(gpuModule.Loc(), "expected a %s, got %s", gpu.ModuleOp, gpuModule.Name())
		}
		body := gpu.Body(gpuModule)
		if body == nil {
			continue
		}
		for _, op := range body.Ops() {
			switch {
			case op.Name() == gpu.ModuleEndOp:
			case gpu.IsKernel(op):
				if prev, dup := defined[ir.SymbolName(op)]; dup {
					return nil, ir.Errorf(op.Loc(), "kernel @%s is defined in two gpu.modules", ir.SymbolName(op)).
						Note(prev.Loc(), "first defined here")
				}
				defined[ir.SymbolName(op)] = op
				if err := t.kernel(op); err != nil {
					return nil, err
				}
			case op.Name() == gpu.FuncOp:
				return nil, ir.Errorf(op.Loc(), "gpu.func @%s is not a kernel: device functions are not supported", ir.SymbolName(op))
			default:
				return nil, ir.Errorf(op.Loc(), "'%s' is not supported in a gpu.module", op.Name())
			}
		}
	}
	return m, nil
}

// GPUModules returns the gpu.module ops nested in op, in order.
func GPUModules(op *ir.Operation) []*ir.Operation {
	var mods []*ir.Operation
	op.Walk(func(o *ir.Operation) bool {
		if o.Name() == gpu.ModuleOp {
			mods = append(mods, o)
			return false
		}
		return true
	})
	return mods
}

// translator holds the module being built.
type translator struct {
	m       *llir.Module
	decls   map[string]*llir.Func // intrinsic declarations, by name
	dynamic *llir.Global          // DynamicShared, once a kernel uses it
}

// intrinsic returns the declaration of an intrinsic, adding it once.
func (t *translator) intrinsic(name string, ret types.Type, params ...types.Type) *llir.Func {
	if f, ok := t.decls[name]; ok {
		return f
	}
	ps := make([]*llir.Param, len(params))
	for i, p := range params {
		ps[i] = llir.NewParam("", p)
	}
	f := t.m.NewFunc(name, ret, ps...)
	t.decls[name] = f
	return f
}

// Launch bounds a gpu.func kernel may carry, as integer attributes: the
// most threads of its (1-D) blocks and the fewest blocks an SM should
// hold at once. They become the !nvvm.annotations "maxntidx" and
// "minctasm" of the kernel (PTX .maxntid and .minnctapersm), which let
// ptxas fit the registers to that many blocks.
const (
	MaxThreadsAttr = "nvvm.maxntid"
	MinBlocksAttr  = "nvvm.minctasm"
)

// launchBounds annotates f with fn's launch bounds.
func (t *translator) launchBounds(fn *ir.Operation, f *llir.Func) error {
	for _, a := range []struct{ attr, key string }{{MaxThreadsAttr, "maxntidx"}, {MinBlocksAttr, "minctasm"}} {
		v := fn.Attr(a.attr)
		if v == nil {
			continue
		}
		n, ok := v.(ir.IntegerAttr)
		if !ok || n.Value <= 0 || n.Value > 1<<16 {
			return ir.Errorf(fn.Loc(), "kernel @%s: %s is %v, want a positive integer up to 65536", ir.SymbolName(fn), a.attr, v)
		}
		t.annotate(f, a.key, n.Value)
	}
	if n := gpu.ClusterSize(fn); n > 1 {
		t.annotate(f, ClusterDimX, n)
	}
	return nil
}

// ClusterDimX is the !nvvm.annotations key of a kernel's cluster size
// along x (gpu.ClusterSizeAttr), which targets/nvptx writes as PTX's
// `.reqnctapercluster n, 1, 1` (LLVM 19's llc ignores it; the nvptx
// package adds the directive to llc's output too).
const ClusterDimX = "cluster_dim_x"

// LoopMetadata is the name of the loop metadata attachment on a loop's
// latch branch, and NoUnroll the property that disables unrolling
// (loop.no_unroll), which targets/nvptx's native backend reads too.
const (
	LoopMetadata = "llvm.loop"
	NoUnroll     = "llvm.loop.unroll.disable"
)

// noUnroll returns a new distinct loop identifier node, !{self,
// !{"llvm.loop.unroll.disable"}}: LLVM's loop metadata names each loop
// by a self-referencing distinct node.
func (t *translator) noUnroll() *metadata.Tuple {
	prop := &metadata.Tuple{MetadataID: -1, Fields: []metadata.Field{&metadata.String{Value: NoUnroll}}}
	id := &metadata.Tuple{MetadataID: -1, Distinct: true}
	id.Fields = []metadata.Field{id, prop}
	t.m.MetadataDefs = append(t.m.MetadataDefs, id, prop)
	return id
}

// markKernel adds f to !nvvm.annotations as a kernel.
func (t *translator) markKernel(f *llir.Func) { t.annotate(f, "kernel", 1) }

// annotate adds the entry {f, key, value} to !nvvm.annotations.
func (t *translator) annotate(f *llir.Func, key string, value int64) {
	node := &metadata.Tuple{MetadataID: -1, Fields: []metadata.Field{f, &metadata.String{Value: key}, constant.NewInt(types.I32, value)}}
	def, ok := t.m.NamedMetadataDefs["nvvm.annotations"]
	if !ok {
		def = &metadata.NamedDef{Name: "nvvm.annotations"}
		t.m.NamedMetadataDefs["nvvm.annotations"] = def
	}
	def.Nodes = append(def.Nodes, node)
	t.m.MetadataDefs = append(t.m.MetadataDefs, node)
}

// memSpace returns a memref's address space: 1 (global) by default, 3
// for workgroup memory, 5 for private memory.
func memSpace(mt *ir.MemRefType) (types.AddrSpace, error) {
	switch s := mt.MemorySpace.(type) {
	case nil:
		return 1, nil
	case ir.IntegerAttr:
		switch s.Value {
		case 0, 1:
			return 1, nil
		case gpu.WorkgroupMemorySpace:
			return 3, nil
		case gpu.PrivateMemorySpace:
			return gpu.PrivateMemorySpace, nil
		}
	}
	return 0, fmt.Errorf("memory space of %s is not supported", mt)
}

// pointerTo returns `T addrspace(n)*`.
func pointerTo(elem types.Type, space types.AddrSpace) *types.PointerType {
	p := types.NewPointer(elem)
	p.AddrSpace = space
	return p
}

// kernel translates one gpu.func kernel.
func (t *translator) kernel(fn *ir.Operation) error {
	ft := gpu.FuncType(fn)
	entry := gpu.Body(fn)
	if ft == nil || entry == nil {
		return ir.Errorf(fn.Loc(), "kernel @%s has no signature or body", ir.SymbolName(fn))
	}
	if len(ft.Results) > 0 {
		return ir.Errorf(fn.Loc(), "kernel @%s returns values", ir.SymbolName(fn))
	}
	if len(fn.Region(0).Blocks()) != 1 {
		return ir.Errorf(fn.Loc(), "kernel @%s has more than one block (only structured control flow is supported)", ir.SymbolName(fn))
	}
	name := ir.SymbolName(fn)
	params := make([]*llir.Param, len(ft.Inputs))
	var maps []int
	for i, in := range ft.Inputs {
		if _, ok, _ := gpu.TensorMapArg(fn, i); ok {
			params[i] = tensorMapParam(i)
			maps = append(maps, i)
			continue
		}
		var pt types.Type
		var err error
		if mt, ok := in.(*ir.MemRefType); ok {
			pt, err = memrefPointer(mt)
			if err == nil && pt.(*types.PointerType).AddrSpace != 1 {
				err = fmt.Errorf("a kernel parameter cannot be workgroup memory")
			}
		} else {
			pt, err = ScalarType(in)
		}
		if err != nil {
			return ir.Errorf(fn.Loc(), "kernel @%s, parameter %d: %v", name, i, err)
		}
		params[i] = llir.NewParam(fmt.Sprintf("arg%d", i), pt)
	}
	f := t.m.NewFunc(name, types.Void, params...)
	t.markKernel(f)
	t.annotateGridConstants(f, maps)
	if err := t.launchBounds(fn, f); err != nil {
		return err
	}
	k := &kernelTranslator{t: t, f: f, vals: map[*ir.Value]llvmValue{}, pending: map[*ir.Operation][]*ir.Operation{}}
	for i, p := range params {
		k.vals[entry.Argument(i)] = p
	}
	dynamic, err := gpu.DynamicSharedBytes(fn)
	if err != nil {
		return ir.Errorf(fn.Loc(), "kernel @%s: %v", name, err)
	}
	if dynamic > 0 {
		if err := k.dynamicBuffers(fn, name); err != nil {
			return err
		}
	} else {
		for i, buf := range gpu.WorkgroupBuffers(fn) {
			if err := k.workgroupBuffer(fn, name, i, buf); err != nil {
				return err
			}
		}
	}
	k.cur = f.NewBlock("entry")
	for i, buf := range gpu.PrivateBuffers(fn) {
		if err := k.privateBuffer(fn, name, i, buf); err != nil {
			return err
		}
	}
	if err := k.block(entry); err != nil {
		return err
	}
	return nil
}

// memrefPointer is the pointer type a 1-D memref becomes.
func memrefPointer(mt *ir.MemRefType) (types.Type, error) {
	if len(mt.Shape()) != 1 || mt.Layout != nil {
		return nil, fmt.Errorf("kernels take 1-D identity-layout memrefs, not %s", mt)
	}
	elem, err := MemType(mt.ElementType())
	if err != nil {
		return nil, err
	}
	space, err := memSpace(mt)
	if err != nil {
		return nil, err
	}
	return pointerTo(elem, space), nil
}

// workgroupBuffer declares a workgroup attribution as an addrspace(3)
// global, addressed through a pointer to its first element.
func (k *kernelTranslator) workgroupBuffer(fn *ir.Operation, kernel string, i int, buf *ir.Value) error {
	mt, ok := buf.Type().(*ir.MemRefType)
	if !ok || len(mt.Shape()) != 1 || mt.Shape()[0] < 0 {
		return ir.Errorf(fn.Loc(), "workgroup buffer %d of @%s must be a static 1-D memref, not %s", i, kernel, buf.Type())
	}
	elem, err := MemType(mt.ElementType())
	if err != nil {
		return ir.Errorf(fn.Loc(), "workgroup buffer %d of @%s: %v", i, kernel, err)
	}
	arr := types.NewArray(uint64(mt.Shape()[0]), elem)
	g := llir.NewGlobalDef(fmt.Sprintf("%s_wg%d", kernel, i), constant.NewUndef(arr))
	g.AddrSpace = 3
	g.Typ = nil // llir caches the pointer type; recompute it in addrspace(3)
	g.Align = 16
	if readByWGMMA(buf) {
		g.Align = wgmmaAlign
	}
	k.t.m.Globals = append(k.t.m.Globals, g)
	k.vals[buf] = constant.NewBitCast(g, pointerTo(elem, 3))
	return nil
}

// privateBuffer allocates a private attribution of fn on the thread's
// stack (PTX local memory) and addresses it as addrspace(5), the memory
// space of its memref type.
func (k *kernelTranslator) privateBuffer(fn *ir.Operation, kernel string, i int, buf *ir.Value) error {
	mt, ok := buf.Type().(*ir.MemRefType)
	if !ok || len(mt.Shape()) != 1 || mt.Shape()[0] < 0 {
		return ir.Errorf(fn.Loc(), "private buffer %d of @%s must be a static 1-D memref, not %s", i, kernel, buf.Type())
	}
	elem, err := MemType(mt.ElementType())
	if err != nil {
		return ir.Errorf(fn.Loc(), "private buffer %d of @%s: %v", i, kernel, err)
	}
	a := k.cur.NewAlloca(types.NewArray(uint64(mt.Shape()[0]), elem))
	a.Align = 16
	k.vals[buf] = k.cur.NewAddrSpaceCast(k.cur.NewBitCast(a, types.NewPointer(elem)), pointerTo(elem, gpu.PrivateMemorySpace))
	return nil
}

// DynamicShared is the name of the external addrspace(3) array of a
// module's dynamic shared memory, `@strata_dynamic_shared = external
// addrspace(3) global [0 x i8], align 16`, which PTX declares as
// `.extern .shared .align 16 .b8 strata_dynamic_shared[];`. Every kernel
// of the module that uses dynamic shared memory sees its block's share
// at that address.
const DynamicShared = "strata_dynamic_shared"

// dynamicShared returns the module's DynamicShared array, declared once.
func (t *translator) dynamicShared() *llir.Global {
	if t.dynamic == nil {
		g := llir.NewGlobal(DynamicShared, types.NewArray(0, types.I8))
		g.Linkage = enum.LinkageExternal
		g.AddrSpace = 3
		g.Typ = nil // llir caches the pointer type; recompute it in addrspace(3)
		g.Align = gpu.SharedAlign
		t.m.Globals = append(t.m.Globals, g)
		t.dynamic = g
	}
	return t.dynamic
}

// dynamicBuffers addresses each workgroup buffer of fn at its offset in
// dynamic shared memory (gpu.SharedLayout).
func (k *kernelTranslator) dynamicBuffers(fn *ir.Operation, kernel string) error {
	offsets, _, err := gpu.SharedLayout(fn)
	if err != nil {
		return ir.Errorf(fn.Loc(), "kernel @%s: %v", kernel, err)
	}
	g := k.t.dynamicShared()
	for i, buf := range gpu.WorkgroupBuffers(fn) {
		mt := buf.Type().(*ir.MemRefType) // (SharedLayout checked it)
		if len(mt.Shape()) != 1 {
			return ir.Errorf(fn.Loc(), "workgroup buffer %d of @%s must be a static 1-D memref, not %s", i, kernel, buf.Type())
		}
		elem, err := MemType(mt.ElementType())
		if err != nil {
			return ir.Errorf(fn.Loc(), "workgroup buffer %d of @%s: %v", i, kernel, err)
		}
		if readByWGMMA(buf) {
			if offsets[i]%wgmmaAlign != 0 {
				return ir.Errorf(fn.Loc(), "workgroup buffer %d of @%s: a gpu.wgmma reads it, but its dynamic shared offset %d is not a multiple of %d", i, kernel, offsets[i], wgmmaAlign)
			}
			g.Align = max(g.Align, wgmmaAlign)
		}
		at := constant.NewGetElementPtr(g.ContentType, g, constant.NewInt(types.I64, 0), constant.NewInt(types.I64, offsets[i]))
		k.vals[buf] = constant.NewBitCast(at, pointerTo(elem, 3))
	}
	return nil
}
