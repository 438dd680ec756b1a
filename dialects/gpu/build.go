package gpu

import (
	"strings"

	"github.com/strata-ir/strata/ir"
)

// Indices into gpu.launch_func's operandSegmentSizes, upstream's 13 groups.
const (
	segAsyncDeps = 0
	segGrid      = 1 // three groups: x, y, z
	segBlock     = 4 // three groups: x, y, z
	segCluster   = 7 // three groups: x, y, z
	segShared    = 10
	segArgs      = 11
	segAsyncObj  = 12
	numSegments  = 13
)

// Dims are the dimension keywords, in order.
var Dims = [3]string{"x", "y", "z"}

// ShuffleModes are gpu.shuffle's mode keywords.
var ShuffleModes = []string{"xor", "up", "down", "idx"}

// DimAttr returns the attribute #gpu<dim d> for d in x, y, z.
func DimAttr(d string) ir.Attribute { return ir.OpaqueAttr{Text: "#gpu<dim " + d + ">"} }

// ShuffleModeAttr returns the attribute #gpu<shuffle_mode m>.
func ShuffleModeAttr(m string) ir.Attribute {
	return ir.OpaqueAttr{Text: "#gpu<shuffle_mode " + m + ">"}
}

// enumKeyword returns the keyword of an attribute #gpu<kind keyword>, or ""
// when a is not one.
func enumKeyword(a ir.Attribute, kind string) string {
	o, ok := a.(ir.OpaqueAttr)
	if !ok {
		return ""
	}
	body, ok := strings.CutPrefix(o.Text, "#gpu<")
	if !ok {
		return ""
	}
	body, ok = strings.CutSuffix(body, ">")
	if !ok {
		return ""
	}
	f := strings.Fields(body)
	if len(f) != 2 || f[0] != kind {
		return ""
	}
	return f[1]
}

// Dimension returns the x, y or z of an id or size op, "" if it has none.
func Dimension(op *ir.Operation) string {
	d := enumKeyword(op.Attr(DimensionAttr), "dim")
	if dimIndex(d) < 0 {
		return ""
	}
	return d
}

// DimIndex returns 0, 1 or 2 for the dimension of an id or size op, -1 if
// it has none.
func DimIndex(op *ir.Operation) int { return dimIndex(Dimension(op)) }

func dimIndex(d string) int {
	for i, k := range Dims {
		if k == d {
			return i
		}
	}
	return -1
}

// ShuffleMode returns the mode keyword of a gpu.shuffle, "" if it has none.
func ShuffleMode(op *ir.Operation) string {
	m := enumKeyword(op.Attr(ModeAttr), "shuffle_mode")
	for _, k := range ShuffleModes {
		if k == m {
			return m
		}
	}
	return ""
}

// IsKernel reports whether op is a gpu.func marked as a kernel.
func IsKernel(op *ir.Operation) bool {
	_, ok := op.Attr(KernelAttr).(ir.UnitAttr)
	return op.Name() == FuncOp && ok
}

// FuncType returns the function_type of a gpu.func, or nil.
func FuncType(op *ir.Operation) *ir.FunctionType {
	if ta, ok := op.Attr(FunctionTypeAttr).(ir.TypeAttr); ok {
		ft, _ := ta.Type.(*ir.FunctionType)
		return ft
	}
	return nil
}

// NumWorkgroupAttributions returns the number of workgroup buffers of a gpu.func.
func NumWorkgroupAttributions(op *ir.Operation) int {
	if a, ok := op.Attr(WorkgroupAttributionsAttr).(ir.IntegerAttr); ok {
		return int(a.Value)
	}
	return 0
}

// Body returns the entry block of a gpu.module or gpu.func, nil if it has none.
func Body(op *ir.Operation) *ir.Block {
	if op.NumRegions() == 0 {
		return nil
	}
	return op.Region(0).Front()
}

// WorkgroupBuffers returns the entry block arguments of a gpu.func that are
// its workgroup buffers.
func WorkgroupBuffers(fn *ir.Operation) []*ir.Value {
	ft, entry := FuncType(fn), Body(fn)
	if ft == nil || entry == nil {
		return nil
	}
	n := len(ft.Inputs)
	end := min(n+NumWorkgroupAttributions(fn), entry.NumArguments())
	if n > end {
		return nil
	}
	return entry.Arguments()[n:end]
}

// PrivateBuffers returns the entry block arguments of a gpu.func that are
// its private buffers: those after the inputs and workgroup buffers.
func PrivateBuffers(fn *ir.Operation) []*ir.Value {
	ft, entry := FuncType(fn), Body(fn)
	if ft == nil || entry == nil {
		return nil
	}
	start := len(ft.Inputs) + NumWorkgroupAttributions(fn)
	if start > entry.NumArguments() {
		return nil
	}
	return entry.Arguments()[start:]
}

// MarkContainer sets gpu.container_module on module, the builtin.module that
// holds (or will hold) gpu.module ops and gpu.launch_func ops.
func MarkContainer(module *ir.Operation) { module.SetAttr(ContainerModuleAttr, ir.UnitAttr{}) }

// NewModule inserts an empty gpu.module named name (ending with its implicit
// gpu.module_end) at b's insertion point. Insert into it with
// b.SetInsertionPointBefore(gpu.Body(m).Terminator()).
func NewModule(b *ir.Builder, loc ir.Location, name string) *ir.Operation {
	blk := ir.NewBlock()
	r := ir.NewRegion()
	r.Append(blk)
	blk.Append(ir.NewBuilder(b.Ctx).Create(ir.OperationState{Name: ModuleEndOp, Loc: loc}))
	return b.Create(ir.OperationState{
		Name:       ModuleOp,
		Loc:        loc,
		Properties: ir.Dict(ir.NamedAttr{Name: ir.SymNameAttr, Value: ir.Str(name)}),
		Regions:    []*ir.Region{r},
	})
}

// NewKernel inserts a kernel gpu.func named name taking argTypes, with no
// workgroup buffers, at b's insertion point (inside a gpu.module), and
// returns it with its entry block, which the caller fills and ends with
// gpu.Return.
func NewKernel(b *ir.Builder, loc ir.Location, name string, argTypes []ir.Type) (*ir.Operation, *ir.Block) {
	entry := ir.NewBlock(argTypes...)
	r := ir.NewRegion()
	r.Append(entry)
	op := b.Create(ir.OperationState{
		Name:       FuncOp,
		Loc:        loc,
		Properties: ir.Dict(ir.NamedAttr{Name: FunctionTypeAttr, Value: ir.TypeAttr{Type: ir.FunctionOf(argTypes, nil)}}),
		Attributes: ir.Dict(
			ir.NamedAttr{Name: KernelAttr, Value: ir.UnitAttr{}},
			ir.NamedAttr{Name: ir.SymNameAttr, Value: ir.Str(name)},
			ir.NamedAttr{Name: WorkgroupAttributionsAttr, Value: ir.Int(0, ir.I64)},
		),
		Regions: []*ir.Region{r},
	})
	return op, entry
}

// AddWorkgroupBuffer adds a workgroup attribution of type t (a memref in
// memory space 3, such as memref<256xf32, 3>) to the gpu.func kernel and
// returns the entry block argument that holds it.
func AddWorkgroupBuffer(kernel *ir.Operation, t ir.Type) *ir.Value {
	n := NumWorkgroupAttributions(kernel)
	kernel.SetAttr(WorkgroupAttributionsAttr, ir.Int(int64(n+1), ir.I64))
	return Body(kernel).AddArgument(t)
}

// WorkgroupMemRef returns the 1-D workgroup memref type memref<n x elem, 3>.
func WorkgroupMemRef(n int64, elem ir.Type) *ir.MemRefType {
	return ir.MemRefWith([]int64{n}, elem, nil, ir.Int(WorkgroupMemorySpace, ir.I64))
}

// Return inserts gpu.return of vals.
func Return(b *ir.Builder, loc ir.Location, vals ...*ir.Value) *ir.Operation {
	return b.Op(ReturnOp, loc, vals, nil)
}

func idOp(name string, b *ir.Builder, loc ir.Location, dim string) *ir.Value {
	return b.Op(name, loc, nil, []ir.Type{ir.Index}, ir.NamedAttr{Name: DimensionAttr, Value: DimAttr(dim)}).Result(0)
}

// ThreadID inserts gpu.thread_id for dim ("x", "y" or "z") and returns it.
func ThreadID(b *ir.Builder, loc ir.Location, dim string) *ir.Value {
	return idOp(ThreadIDOp, b, loc, dim)
}

// BlockID inserts gpu.block_id for dim and returns it.
func BlockID(b *ir.Builder, loc ir.Location, dim string) *ir.Value {
	return idOp(BlockIDOp, b, loc, dim)
}

// BlockDim inserts gpu.block_dim for dim and returns it.
func BlockDim(b *ir.Builder, loc ir.Location, dim string) *ir.Value {
	return idOp(BlockDimOp, b, loc, dim)
}

// GridDim inserts gpu.grid_dim for dim and returns it.
func GridDim(b *ir.Builder, loc ir.Location, dim string) *ir.Value {
	return idOp(GridDimOp, b, loc, dim)
}

// Barrier inserts gpu.barrier.
func Barrier(b *ir.Builder, loc ir.Location) *ir.Operation {
	return b.Op(BarrierOp, loc, nil, nil)
}

// WarpSync inserts gpu.warp_sync.
func WarpSync(b *ir.Builder, loc ir.Location) *ir.Operation {
	return b.Op(WarpSyncOp, loc, nil, nil)
}

// Shuffle inserts gpu.shuffle of v in mode ("xor", "down", "up" or "idx")
// with offset and width (i32 values) and returns the value read and the i1
// that says whether the source lane was in range.
func Shuffle(b *ir.Builder, loc ir.Location, mode string, v, offset, width *ir.Value) (val, valid *ir.Value) {
	op := b.Op(ShuffleOp, loc, []*ir.Value{v, offset, width}, []ir.Type{v.Type(), ir.I1},
		ir.NamedAttr{Name: ModeAttr, Value: ShuffleModeAttr(mode)})
	return op.Result(0), op.Result(1)
}

// KernelRef returns the reference @module::@name to a kernel.
func KernelRef(module, name string) ir.SymbolRefAttr {
	return ir.SymbolRefAttr{Root: module, Nested: []string{name}}
}

// LaunchFunc inserts gpu.launch_func of the kernel kernelRef (see
// KernelRef) on a grid of grid blocks of block threads (index values),
// passing args; dynamicSharedBytes, an i32, may be nil.
func LaunchFunc(b *ir.Builder, loc ir.Location, kernelRef ir.SymbolRefAttr, grid, block [3]*ir.Value, args []*ir.Value, dynamicSharedBytes *ir.Value) *ir.Operation {
	seg := make([]int64, numSegments)
	operands := make([]*ir.Value, 0, 7+len(args))
	for i := range 3 {
		seg[segGrid+i], seg[segBlock+i] = 1, 1
		operands = append(operands, grid[i])
	}
	operands = append(operands, block[:]...)
	if dynamicSharedBytes != nil {
		seg[segShared] = 1
		operands = append(operands, dynamicSharedBytes)
	}
	seg[segArgs] = int64(len(args))
	operands = append(operands, args...)
	return b.Op(LaunchFuncOp, loc, operands, nil,
		ir.NamedAttr{Name: KernelRefAttr, Value: kernelRef},
		ir.NamedAttr{Name: SegmentsAttr, Value: ir.DenseArrayAttr{Elem: ir.I32, Values: seg}})
}

// Launch is a gpu.launch_func's operands, by role.
type Launch struct {
	Kernel ir.SymbolRefAttr
	Grid   [3]*ir.Value
	Block  [3]*ir.Value
	// DynamicSharedBytes is nil when absent.
	DynamicSharedBytes *ir.Value
	Args               []*ir.Value
}

// LaunchOf splits the operands of a verified gpu.launch_func by role.
func LaunchOf(op *ir.Operation) (Launch, bool) {
	seg, ok := segments(op)
	if !ok || op.Name() != LaunchFuncOp {
		return Launch{}, false
	}
	var l Launch
	l.Kernel, _ = op.Attr(KernelRefAttr).(ir.SymbolRefAttr)
	ops := op.Operands()
	start := make([]int, numSegments+1)
	for i, n := range seg {
		start[i+1] = start[i] + int(n)
	}
	for i := range 3 {
		if seg[segGrid+i] != 1 || seg[segBlock+i] != 1 {
			return Launch{}, false
		}
		l.Grid[i], l.Block[i] = ops[start[segGrid+i]], ops[start[segBlock+i]]
	}
	if seg[segShared] == 1 {
		l.DynamicSharedBytes = ops[start[segShared]]
	}
	l.Args = ops[start[segArgs]:start[segArgs+1]]
	return l, true
}

// segments returns operandSegmentSizes when it is well formed: 13 counts
// that add up to the number of operands.
func segments(op *ir.Operation) ([]int64, bool) {
	a, ok := op.Attr(SegmentsAttr).(ir.DenseArrayAttr)
	if !ok || a.Elem != ir.I32 || len(a.Values) != numSegments {
		return nil, false
	}
	total := 0
	for _, n := range a.Values {
		if n < 0 {
			return nil, false
		}
		total += int(n)
	}
	return a.Values, total == op.NumOperands()
}

// LookupKernel returns the gpu.func a gpu.launch_func launches, or nil.
func LookupKernel(launch *ir.Operation) *ir.Operation {
	ref, ok := launch.Attr(KernelRefAttr).(ir.SymbolRefAttr)
	if !ok || len(ref.Nested) != 1 {
		return nil
	}
	mod := ir.LookupSymbol(launch, ir.SymbolRef(ref.Root))
	if mod == nil || mod.Name() != ModuleOp {
		return nil
	}
	fn := ir.LookupSymbol(mod, ir.SymbolRef(ref.Nested[0]))
	if fn == nil || fn.Name() != FuncOp {
		return nil
	}
	return fn
}
