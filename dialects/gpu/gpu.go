// Package gpu defines Strata's gpu dialect: kernels grouped in gpu.module
// symbol tables, the thread, block and grid indices they read, barriers,
// warp shuffles, workgroup (shared) memory and the host-side gpu.launch_func.
// Its ops mirror upstream MLIR 19's gpu dialect where they overlap: the same
// names, properties, custom syntax and generic form, so mlir-opt reads what
// Strata prints and the other way round (docs/lowering.md, "The gpu level").
package gpu

import (
	"github.com/strata-ir/strata/ir"
)

// Op names.
const (
	ModuleOp     = OpModule
	ModuleEndOp  = OpModuleEnd
	FuncOp       = OpFunc
	ReturnOp     = OpReturn
	ThreadIDOp   = OpThreadID
	BlockIDOp    = OpBlockID
	BlockDimOp   = OpBlockDim
	GridDimOp    = OpGridDim
	BarrierOp    = OpBarrier
	ShuffleOp    = OpShuffle
	WarpSyncOp   = OpWarpSync
	LaunchFuncOp = OpLaunchFunc
)

// Attribute and property names.
const (
	// ContainerModuleAttr marks a builtin.module holding gpu.module ops
	// (a unit attribute).
	ContainerModuleAttr = "gpu.container_module"
	// KernelAttr marks a gpu.func as a kernel (a unit attribute).
	KernelAttr = "gpu.kernel"
	// FunctionTypeAttr is gpu.func's signature, without its attributions.
	FunctionTypeAttr = "function_type"
	// WorkgroupAttributionsAttr counts gpu.func's workgroup buffers, the
	// entry block arguments after the function's inputs (an i64).
	WorkgroupAttributionsAttr = "workgroup_attributions"
	// DimensionAttr is the x, y or z of the id and size ops (#gpu<dim x>).
	DimensionAttr = "dimension"
	// TargetsAttr is gpu.module's optional array of target attributes.
	TargetsAttr = "targets"
	// UpperBoundAttr is the optional index attribute of the id ops: the
	// result is below it (a larger one is undefined behaviour; the
	// interpreter reports it).
	UpperBoundAttr = "upper_bound"
	// ModeAttr is gpu.shuffle's mode (#gpu<shuffle_mode xor>).
	ModeAttr = "mode"
	// KernelRefAttr is gpu.launch_func's kernel, @module::@func.
	KernelRefAttr = "kernel"
	// SegmentsAttr gives the size of each of gpu.launch_func's operand groups.
	SegmentsAttr = "operandSegmentSizes"
)

// WorkgroupMemorySpace is the memref memory space of workgroup (shared)
// memory, as in NVVM's address space 3.
const WorkgroupMemorySpace = 3

// PrivateMemorySpace is the memref memory space of private attributions:
// buffers each thread has for itself (NVVM's local memory).
const PrivateMemorySpace = 5

// WarpSize is the number of lanes gpu.shuffle exchanges values among.
const WarpSize = 32

// Dialect is the gpu dialect.
var Dialect = &ir.Dialect{
	Name:    "gpu",
	Summary: "GPU kernels, thread indices, barriers, shuffles and kernel launches.",
	Description: "The gpu dialect is the level between loops and LLVM IR: kernels " +
		"(`gpu.func` with the `kernel` keyword) live in `gpu.module` symbol tables inside " +
		"a builtin.module marked `gpu.container_module`, read their position with " +
		"`gpu.thread_id`, `gpu.block_id`, `gpu.block_dim` and `gpu.grid_dim`, synchronize " +
		"with `gpu.barrier`, exchange values within a warp of 32 lanes with `gpu.shuffle` " +
		"and share per-block workgroup memory (memrefs in memory space 3) declared as " +
		"workgroup attributions. Host code starts kernels with `gpu.launch_func`. The ops " +
		"mirror upstream MLIR 19's gpu dialect (same syntax and generic form); kernel " +
		"bodies see only 1-D memrefs (docs/lowering.md).",
	Ops: append([]*ir.OpDef{
		moduleDef, moduleEndDef, funcDef, returnDef,
		idDef(ThreadIDOp, "Thread index within its block", "thread_id"),
		idDef(BlockIDOp, "Block index within the grid", "block_id"),
		idDef(BlockDimOp, "Number of threads per block", "block_dim"),
		idDef(GridDimOp, "Number of blocks per grid", "grid_dim"),
		barrierDef, warpSyncDef, shuffleDef, launchFuncDef,
	}, append(append(append(append(mmaOps, wgmmaOps...), mbarrierOps...), append(tmaOps, clusterOps...)...), append(atomicOps, libraryOps...)...)...),
}

var moduleDef = &ir.OpDef{
	Name:    ModuleOp,
	Summary: "A top level compilation unit containing code to be run on a GPU",
	Description: "Holds gpu.func kernels and helpers in its single block, which ends " +
		"with an implicit `gpu.module_end` (left out of the custom syntax). It is a " +
		"symbol named `sym_name`, referred to by gpu.launch_func as `@module::@kernel`.",
	Traits:   ir.IsolatedFromAbove | ir.SymbolTable | ir.Symbol | ir.SingleBlock,
	Inherent: []string{ir.SymNameAttr, TargetsAttr},
	Attrs: []ir.ArgDoc{
		{Name: "sym_name", Doc: "the module's name (StringAttr)"},
		{Name: "targets", Doc: "optional non-empty array of target attributes, written after the name " +
			"(`gpu.module @m [#nvvm.target<chip = \"sm_90\">]`); kept and printed, not used: " +
			"Strata picks its PTX target itself (strata.ptx_target, --ptx-target)"},
	},
	Example: "gpu.module @kernels {\n" +
		"  gpu.func @k(%arg0: memref<?xf32>) kernel {\n    gpu.return\n  }\n}",
	Verify: verifyModule,
	Parse:  parseModule,
	Print:  printModule,
}

var moduleEndDef = &ir.OpDef{
	Name:        ModuleEndOp,
	Summary:     "A pseudo op that marks the end of a gpu.module",
	Description: "The implicit terminator of a gpu.module's block; the custom syntax leaves it out.",
	Traits:      ir.Pure | ir.Terminator,
	Example:     `"gpu.module_end"() : () -> ()`,
	Verify:      parentIs(ModuleOp),
}

var funcDef = &ir.OpDef{
	Name:    FuncOp,
	Summary: "Function executable on a GPU",
	Description: "A function in a gpu.module. With the `kernel` keyword (the unit " +
		"attribute `gpu.kernel`) it is a kernel: an entry point gpu.launch_func starts, " +
		"which returns nothing. The entry block takes the inputs of `function_type` " +
		"followed by the workgroup attributions, `workgroup(%buf : memref<256xf32, 3>)`: " +
		"buffers in workgroup memory (memory space 3) that every block of a launch gets " +
		"afresh and all its threads share; `workgroup_attributions` counts them. The " +
		"private attributions, `private(%p : memref<4xf32, 5>)`, come last: buffers in " +
		"private memory (memory space 5) that every thread gets afresh. As " +
		"upstream, `sym_name` and `workgroup_attributions` are discardable attributes and " +
		"`function_type` a property.",
	Traits:   ir.IsolatedFromAbove | ir.Symbol,
	Inherent: funcInherent,
	Attrs: []ir.ArgDoc{
		{Name: "sym_name", Doc: "the function's name (StringAttr)"},
		{Name: "function_type", Doc: "the signature without the attributions (TypeAttr of a function type)"},
		{Name: "workgroup_attributions", Doc: "the number of workgroup buffers (i64)"},
		{Name: "gpu.kernel", Doc: "present on kernels (UnitAttr)"},
		{Name: "arg_attrs", Doc: "optional array with one dictionary of attributes per argument"},
		{Name: "res_attrs", Doc: "optional array with one dictionary of attributes per result"},
	},
	Example: "gpu.func @sum(%arg0: memref<?xf32>, %arg1: index) workgroup(%arg2 : memref<256xf32, 3>) kernel {\n" +
		"  %0 = gpu.thread_id  x\n  gpu.barrier\n  gpu.return\n}",
	Verify: verifyFunc,
	Parse:  parseFunc,
	Print:  printFunc,
}

var returnDef = &ir.OpDef{
	Name:        ReturnOp,
	Summary:     "Terminator for GPU functions",
	Description: "Ends a gpu.func, returning its operands, which match the function's results.",
	Traits:      ir.Pure | ir.Terminator | ir.ReturnLike,
	Operands:    []ir.ArgDoc{{Name: "operands", Doc: "the values returned"}},
	Example:     "gpu.return %0 : f32",
	Verify:      verifyReturn,
	Parse:       ir.ParseReturnLike,
	Print:       ir.PrintReturnLike,
}

// idDef defines one of the four index ops, which differ only in name.
func idDef(name, summary, word string) *ir.OpDef {
	return &ir.OpDef{
		Name:    name,
		Summary: summary,
		Description: "Returns the " + word + " along `dimension` (x, y or z) as an `index`. " +
			"It is meaningful only inside a gpu.func.",
		Traits:   ir.Pure,
		Inherent: []string{DimensionAttr, UpperBoundAttr},
		Results:  []ir.ArgDoc{{Name: "result", Doc: "index"}},
		Attrs: []ir.ArgDoc{
			{Name: "dimension", Doc: "`#gpu<dim x>`, `y` or `z`"},
			{Name: "upper_bound", Doc: "optional index: the result is below it (`x upper_bound 64`)"},
		},
		Example: "%0 = " + name + "  x",
		Verify:  verifyID,
		Parse:   parseID,
		Print:   printID,
	}
}

var barrierDef = &ir.OpDef{
	Name:    BarrierOp,
	Summary: "Synchronizes all work items of a workgroup",
	Description: "Waits until every thread of the block has reached it; workgroup memory " +
		"written before it is visible to every thread of the block after it. All threads " +
		"of a block must reach the same barrier (the interpreter reports divergent " +
		"barriers as errors).",
	Example: OpBarrier,
	Verify:  inKernel,
	Parse:   parseAttrDictOnly,
	Print:   printAttrDictOnly,
}

var warpSyncDef = &ir.OpDef{
	Name:    WarpSyncOp,
	Summary: "Synchronizes the 32 lanes of a warp",
	Description: "As PTX `bar.warp.sync` with every lane: waits until each lane of the " +
		"thread's warp (32 consecutive threads of the block) has reached it; workgroup " +
		"memory a lane wrote before it is visible to the warp's other lanes after it. " +
		"Every lane of the warp must reach the same op (the interpreter reports a lane " +
		"that exited or waits elsewhere as an error).",
	Example: `"gpu.warp_sync"() : () -> ()`,
	Verify:  inKernel,
}

var shuffleDef = &ir.OpDef{
	Name:    ShuffleOp,
	Summary: "Shuffles values within a subgroup",
	Description: "Each lane of a warp (32 consecutive threads of a block) reads `value` " +
		"from another lane, chosen by `mode` among the first `width` lanes: `xor` reads " +
		"lane `id ^ offset`, `down` `id + offset`, `up` `id - offset` and `idx` lane " +
		"`offset`. A source lane outside `[0, width)` gives back the lane's own value " +
		"with the second result `false`.",
	Traits:   ir.Pure,
	Inherent: []string{ModeAttr},
	Operands: []ir.ArgDoc{
		{Name: "value", Doc: "i32, i64, f32 or f64"},
		{Name: "offset", Doc: "i32"},
		{Name: "width", Doc: "i32, at most 32"},
	},
	Results: []ir.ArgDoc{
		{Name: "shuffleResult", Doc: "the value read, of value's type"},
		{Name: "valid", Doc: "i1: whether the source lane was in range"},
	},
	Attrs:   []ir.ArgDoc{{Name: "mode", Doc: "`#gpu<shuffle_mode xor>`, `down`, `up` or `idx`"}},
	Example: "%0, %1 = gpu.shuffle  xor %v, %offset, %width : f32",
	Verify:  verifyShuffle,
	Parse:   parseShuffle,
	Print:   printShuffle,
}

var launchFuncDef = &ir.OpDef{
	Name:    LaunchFuncOp,
	Summary: "Launches a function as a GPU kernel",
	Description: "Runs the kernel `@module::@func` on a grid of `blocks in (x, y, z)` " +
		"blocks of `threads in (x, y, z)` threads each, passing the `args`, whose number " +
		"and types match the kernel's inputs. Sizes are `index` (or all `i32`/`i64`, " +
		"written `: i32` after the threads). `dynamic_shared_memory_size` (i32) is the " +
		"number of bytes of dynamic shared memory. The enclosing module must carry " +
		"`gpu.container_module`. Async tokens and clusters are not supported.",
	Inherent: []string{KernelRefAttr, SegmentsAttr},
	Operands: []ir.ArgDoc{
		{Name: "gridSizeX, gridSizeY, gridSizeZ", Doc: "number of blocks"},
		{Name: "blockSizeX, blockSizeY, blockSizeZ", Doc: "threads per block"},
		{Name: "dynamicSharedMemorySize", Doc: "optional i32"},
		{Name: "kernelOperands", Doc: "the kernel's arguments"},
	},
	Attrs: []ir.ArgDoc{
		{Name: "kernel", Doc: "the kernel, @module::@func (SymbolRefAttr)"},
		{Name: "operandSegmentSizes", Doc: "array<i32> of 13 group sizes, as upstream (async dependencies, grid, block, cluster, shared size, kernel operands, async object)"},
	},
	Example: "gpu.launch_func  @kernels::@k blocks in (%gx, %c1, %c1) threads in (%c256, %c1, %c1)  args(%arg0 : memref<?xf32>, %n : index)",
	Verify:  verifyLaunchFunc,
	Parse:   parseLaunchFunc,
	Print:   printLaunchFunc,
}
