package exec

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/symbolize"
	"github.com/strata-ir/strata/sym"
)

// slotValue is what one SSA value of a host function holds while its plan
// runs: integers and index in ir.TruncInt's form (i1 as 0 or 1), floats as
// float64 holding a value of their type, memrefs as device buffers.
type slotValue struct {
	i int64
	f float64
	b *devBuffer
}

// allocation is one block of device memory a run uses: an argument
// uploaded by Prepare, or a loop.alloc.
type allocation struct {
	ptr   DevicePtr
	bytes uint64
	// owned is true for loop.alloc blocks, which the plan may deallocate
	// and which go back to the allocator when no longer used.
	owned bool
	freed bool
	// result marks, during a Launch, an allocation its results use;
	// held, one of the Bound's held allocations (Bound.held: this
	// launch's own, until its results are taken or released).
	result, held bool
}

// devBuffer is a memref value: a view (element type and shape) of an
// allocation. loop.view makes new devBuffers of the same allocation.
type devBuffer struct {
	mem   *allocation
	elem  ir.Type
	shape []int64
}

// stepFunc runs one host op.
type stepFunc func(r *runState) error

// plan is a host function made ready to run: every SSA value has a slot,
// every op a step, and every launch its kernel and argument marshalling.
type plan struct {
	fn       *ir.Operation
	name     string
	params   []ir.Type
	args     []int // the slot of each parameter
	nslots   int
	steps    []stepFunc
	launches []*launch // in program order; launch.index is the position
	guards   sym.Guards
	// hasGuards is true when the function carries graph guards.
	hasGuards bool
	// updates[i] reports whether the function writes memref argument i
	// in place (loop.UpdatesArgsAttr): a run gives it a copy unless the
	// caller gave the argument up (Bound.writable).
	updates []bool
	// libCalls are the library ops with static operand shapes, in
	// program order (WarmLibraryCalls).
	libCalls []libCall
}

// launch is one gpu.launch_func of a plan.
type launch struct {
	op             *ir.Operation
	index          int
	module, kernel string
	grid, block    [3]int
	shared         int // slot, or -1 without dynamic shared memory
	args           []int
	kinds          []argKind
	types          []ir.Type // of the kernel arguments, for marshal
	// maps holds, for each argument passed as a tensor map
	// (gpu.TensorMapAttr), its element type and geometry; nil otherwise.
	maps []*tensorMap
}

// planner builds a plan.
type planner struct {
	prog  *Program
	p     *plan
	slots map[*ir.Value]int
}

// hostOp builds the step of one host op.
type hostOp func(c *planner, op *ir.Operation) (stepFunc, error)

// hostOps are the host ops with their own step builders; arith's integer
// and float operations are recognised through arith.IsIntBinary and
// arith.IsFloatOp.
var hostOps = map[string]hostOp{
	arith.OpConstant:    (*planner).constant,
	arith.OpCmpI:        (*planner).cmpi,
	arith.OpCmpF:        (*planner).cmpf,
	arith.OpSelect:      (*planner).sel,
	loop.AllocOp:        (*planner).alloc,
	loop.DeallocOp:      (*planner).dealloc,
	loop.DimOp:          (*planner).dim,
	loop.ViewOp:         (*planner).view,
	gpu.LaunchFuncOp:    (*planner).launch,
	gpu.LibraryMatmulOp: (*planner).libraryMatmul,
	gpu.LibraryConv2DOp: (*planner).libraryConv2D,
	funcs.OpReturn:      (*planner).ret,
	arith.OpExtSI:       (*planner).cast,
	arith.OpExtUI:       (*planner).cast,
	arith.OpTruncI:      (*planner).cast,
	arith.OpIndexCast:   (*planner).cast,
	arith.OpExtF:        (*planner).cast,
	arith.OpTruncF:      (*planner).cast,
	arith.OpSIToFP:      (*planner).cast,
	arith.OpUIToFP:      (*planner).cast,
	arith.OpFPToSI:      (*planner).cast,
	arith.OpFPToUI:      (*planner).cast,
	arith.OpBitcast:     (*planner).cast,
	arith.OpIndexCastUI: (*planner).cast,
}

// supportedOps lists the host ops for error messages.
func supportedOps() string {
	names := make([]string, 0, len(hostOps))
	for n := range hostOps {
		if !strings.HasPrefix(n, "arith.") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ") + " and arith ops on scalars"
}

// buildPlan checks host function fn and makes its plan.
func buildPlan(prog *Program, fn *ir.Operation) (*plan, error) {
	name := ir.SymbolName(fn)
	ft, ok := fn.Attr("function_type").(ir.TypeAttr)
	fty, _ := ft.Type.(*ir.FunctionType)
	if !ok || fty == nil {
		return nil, ir.Errorf(fn.Loc(), "@%s has no function type", name)
	}
	if fn.NumRegions() == 0 || fn.Region(0).Front() == nil {
		return nil, ir.Errorf(fn.Loc(), "@%s has no body", name)
	}
	blocks := fn.Region(0).Blocks()
	if len(blocks) != 1 {
		return nil, ir.Errorf(fn.Loc(), "@%s has %d blocks: a launch plan is one block", name, len(blocks))
	}
	c := &planner{prog: prog, p: &plan{fn: fn, name: name, params: fty.Inputs}, slots: map[*ir.Value]int{}}
	var err error
	for _, a := range blocks[0].Arguments() {
		if _, err := kindOf(a.Type()); err != nil {
			return nil, ir.Errorf(fn.Loc(), "@%s argument %d: %v", name, len(c.p.args), err)
		}
		c.p.args = append(c.p.args, c.define(a))
	}
	if c.p.updates, err = updatedArgs(fn, fty.Inputs); err != nil {
		return nil, err
	}
	for _, op := range blocks[0].Ops() {
		build, ok := hostOps[op.Name()]
		switch {
		case ok:
		case arith.IsIntBinary(op.Name()):
			build = (*planner).intBinary
		case arith.IsFloatOp(op.Name()):
			build = (*planner).floatOp
		default:
			return nil, ir.Errorf(op.Loc(), "'%s' cannot run on the host of a launch plan (the nvptx executor runs %s)", op.Name(), supportedOps())
		}
		step, err := build(c, op)
		if err != nil {
			return nil, err
		}
		c.p.steps = append(c.p.steps, step)
	}
	c.joinCollectives(blocks[0]) // collective.go
	gs, has, err := symbolize.Guards(fn)
	if err != nil {
		return nil, ir.Errorf(fn.Loc(), "@%s: %v", name, err)
	}
	c.p.guards, c.p.hasGuards = gs, has
	c.p.nslots = len(c.slots)
	return c.p, nil
}

// updatedArgs returns, per parameter of fn (of types params), whether fn
// writes it in place (loop.UpdatesArgsAttr); nil when it writes none.
func updatedArgs(fn *ir.Operation, params []ir.Type) ([]bool, error) {
	a := fn.Attr(loop.UpdatesArgsAttr)
	if a == nil {
		return nil, nil
	}
	idx, ok := a.(ir.DenseArrayAttr)
	if !ok {
		return nil, ir.Errorf(fn.Loc(), "@%s: %s is %v, want an array of argument indices", ir.SymbolName(fn), loop.UpdatesArgsAttr, a)
	}
	out := make([]bool, len(params))
	for _, i := range idx.Values {
		if i < 0 || i >= int64(len(params)) {
			return nil, ir.Errorf(fn.Loc(), "@%s: %s names argument %d of %d", ir.SymbolName(fn), loop.UpdatesArgsAttr, i, len(params))
		}
		if _, ok := params[i].(*ir.MemRefType); !ok {
			return nil, ir.Errorf(fn.Loc(), "@%s: %s names argument %d, a %s: only memrefs are written in place", ir.SymbolName(fn), loop.UpdatesArgsAttr, i, params[i])
		}
		out[i] = true
	}
	return out, nil
}

// define gives v a slot.
func (c *planner) define(v *ir.Value) int {
	n := len(c.slots)
	c.slots[v] = n
	return n
}

// use returns the slot of an operand.
func (c *planner) use(op *ir.Operation, v *ir.Value) (int, error) {
	s, ok := c.slots[v]
	if !ok {
		return 0, ir.Errorf(op.Loc(), "'%s' uses a value defined outside the host function", op.Name())
	}
	return s, nil
}

// uses returns the slots of op's operands.
func (c *planner) uses(op *ir.Operation) ([]int, error) {
	out := make([]int, op.NumOperands())
	for i, v := range op.Operands() {
		var err error
		if out[i], err = c.use(op, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scalarOp checks that op has n scalar operands and one scalar result of a
// supported type, and returns the operand slots and the result slot.
func (c *planner) scalarOp(op *ir.Operation, n int) ([]int, int, error) {
	if op.NumOperands() != n || op.NumResults() != 1 {
		return nil, 0, ir.Errorf(op.Loc(), "'%s' must have %d operands and one result", op.Name(), n)
	}
	for _, v := range append(slices.Clone(op.Operands()), op.Result(0)) {
		if k, err := kindOf(v.Type()); err != nil || k == argPtr {
			return nil, 0, ir.Errorf(op.Loc(), "'%s' on %s: the host evaluates only scalars", op.Name(), v.Type())
		}
	}
	in, err := c.uses(op)
	if err != nil {
		return nil, 0, err
	}
	return in, c.define(op.Result(0)), nil
}

func (c *planner) constant(op *ir.Operation) (stepFunc, error) {
	_, d, err := c.scalarOp(op, 0)
	if err != nil {
		return nil, err
	}
	var v slotValue
	switch a := op.Attr("value").(type) {
	case ir.IntegerAttr:
		v.i = ir.TruncInt(a.Value, op.Result(0).Type())
	case ir.FloatAttr:
		v.f = ir.FloatFromBits(a.Bits, a.Type)
	default:
		return nil, ir.Errorf(op.Loc(), "arith.constant with value %v cannot run on the host", op.Attr("value"))
	}
	return func(r *runState) error { r.slots[d] = v; return nil }, nil
}

func (c *planner) intBinary(op *ir.Operation) (stepFunc, error) {
	in, d, err := c.scalarOp(op, 2)
	if err != nil {
		return nil, err
	}
	name, t, x, y := op.Name(), op.Result(0).Type(), in[0], in[1]
	return func(r *runState) error {
		v, ok := arith.EvalInt(name, t, r.slots[x].i, r.slots[y].i)
		if !ok {
			return ir.Errorf(op.Loc(), "%s of %d and %d is undefined", name, r.slots[x].i, r.slots[y].i)
		}
		r.slots[d].i = v
		return nil
	}, nil
}

func (c *planner) floatOp(op *ir.Operation) (stepFunc, error) {
	in, d, err := c.scalarOp(op, op.NumOperands())
	if err != nil {
		return nil, err
	}
	name := op.Name()
	t, ok := op.Result(0).Type().(*ir.FloatType)
	if !ok || len(in) == 0 || len(in) > 2 {
		return nil, ir.Errorf(op.Loc(), "'%s' must take one or two floats", name)
	}
	x, y := in[0], in[len(in)-1]
	return func(r *runState) error {
		v, ok := arith.EvalFloat(name, t, r.slots[x].f, r.slots[y].f)
		if !ok {
			return ir.Errorf(op.Loc(), "%s on %s cannot be evaluated", name, t)
		}
		r.slots[d].f = v
		return nil
	}, nil
}

func (c *planner) cmpi(op *ir.Operation) (stepFunc, error) {
	in, d, err := c.scalarOp(op, 2)
	if err != nil {
		return nil, err
	}
	p, ok := op.Attr("predicate").(ir.IntegerAttr)
	if !ok || !arith.CmpIPredicate(p.Value).Valid() {
		return nil, ir.Errorf(op.Loc(), "arith.cmpi has no valid predicate")
	}
	pred, t, x, y := arith.CmpIPredicate(p.Value), op.Operand(0).Type(), in[0], in[1]
	return func(r *runState) error {
		r.slots[d].i = boolInt(arith.CmpI(pred, t, r.slots[x].i, r.slots[y].i))
		return nil
	}, nil
}

func (c *planner) cmpf(op *ir.Operation) (stepFunc, error) {
	in, d, err := c.scalarOp(op, 2)
	if err != nil {
		return nil, err
	}
	p, ok := op.Attr("predicate").(ir.IntegerAttr)
	if !ok || !arith.CmpFPredicate(p.Value).Valid() {
		return nil, ir.Errorf(op.Loc(), "arith.cmpf has no valid predicate")
	}
	pred, x, y := arith.CmpFPredicate(p.Value), in[0], in[1]
	return func(r *runState) error {
		r.slots[d].i = boolInt(arith.CmpF(pred, r.slots[x].f, r.slots[y].f))
		return nil
	}, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// sel is arith.select of scalars or of buffers.
func (c *planner) sel(op *ir.Operation) (stepFunc, error) {
	if op.NumOperands() != 3 || op.NumResults() != 1 {
		return nil, ir.Errorf(op.Loc(), "arith.select must have 3 operands and one result")
	}
	in, err := c.uses(op)
	if err != nil {
		return nil, err
	}
	d := c.define(op.Result(0))
	return func(r *runState) error {
		if r.slots[in[0]].i != 0 {
			r.slots[d] = r.slots[in[1]]
		} else {
			r.slots[d] = r.slots[in[2]]
		}
		return nil
	}, nil
}

func (c *planner) cast(op *ir.Operation) (stepFunc, error) {
	in, d, err := c.scalarOp(op, 1)
	if err != nil {
		return nil, err
	}
	name, from, to, x := op.Name(), op.Operand(0).Type(), op.Result(0).Type(), in[0]
	ff, fromFloat := from.(*ir.FloatType)
	ft, toFloat := to.(*ir.FloatType)
	return func(r *runState) error {
		bits := uint64(r.slots[x].i)
		if fromFloat {
			bits = ir.FloatToBits(r.slots[x].f, ff)
		}
		out, ok := arith.Cast(name, from, to, bits)
		if !ok {
			return ir.Errorf(op.Loc(), "%s from %s to %s is undefined for this value", name, from, to)
		}
		if toFloat {
			r.slots[d].f = ir.FloatFromBits(out, ft)
		} else {
			r.slots[d].i = int64(out)
		}
		return nil
	}, nil
}

// globalMemRef returns t as a ranked memref of the default memory space.
func globalMemRef(op *ir.Operation, t ir.Type) (*ir.MemRefType, error) {
	mt, ok := t.(*ir.MemRefType)
	if !ok || !mt.Ranked() || mt.MemorySpace != nil || mt.Layout != nil {
		return nil, ir.Errorf(op.Loc(), "'%s' on %s: the host handles ranked memrefs of the global space with the identity layout", op.Name(), t)
	}
	if _, err := elemSize(mt.ElementType()); err != nil {
		return nil, ir.Errorf(op.Loc(), "'%s': %v", op.Name(), err)
	}
	return mt, nil
}

// shapeOf returns a step that fills in a memref type's dynamic sizes from
// slots.
func shapeOf(mt *ir.MemRefType, dyn []int) func(r *runState) []int64 {
	static := mt.Shape()
	return func(r *runState) []int64 {
		shape := slices.Clone(static)
		k := 0
		for i, d := range shape {
			if d == ir.Dynamic {
				shape[i] = r.slots[dyn[k]].i
				k++
			}
		}
		return shape
	}
}

// numDynamic counts the dynamic sizes of a shape.
func numDynamic(shape []int64) int {
	n := 0
	for _, d := range shape {
		if d == ir.Dynamic {
			n++
		}
	}
	return n
}

// elementCount multiplies a shape's sizes, refusing negative sizes and
// overflow.
func elementCount(shape []int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative size %d in shape %v", d, shape)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("shape %v has too many elements", shape)
		}
		n *= d
	}
	return n, nil
}

func (c *planner) alloc(op *ir.Operation) (stepFunc, error) {
	if op.NumResults() != 1 {
		return nil, ir.Errorf(op.Loc(), "loop.alloc must have one result")
	}
	mt, err := globalMemRef(op, op.Result(0).Type())
	if err != nil {
		return nil, err
	}
	dyn, err := c.uses(op)
	if err != nil {
		return nil, err
	}
	if len(dyn) != numDynamic(mt.Shape()) {
		return nil, ir.Errorf(op.Loc(), "loop.alloc of %s has %d size operands", mt, len(dyn))
	}
	d := c.define(op.Result(0))
	shape, elem := shapeOf(mt, dyn), mt.ElementType()
	size, _ := elemSize(elem)
	return func(r *runState) error {
		s := shape(r)
		n, err := elementCount(s)
		if err == nil && n > math.MaxInt64/int64(size) {
			err = fmt.Errorf("shape %v has too many bytes", s)
		}
		if err != nil {
			return ir.Errorf(op.Loc(), "loop.alloc: %v", err)
		}
		m, err := r.alloc(uint64(n) * uint64(size))
		if err != nil {
			return &AllocError{Diag: ir.Errorf(op.Loc(), "loop.alloc of %s %v: %v", elem, s, err), Err: err}
		}
		r.slots[d].b = &devBuffer{mem: m, elem: elem, shape: s}
		return nil
	}, nil
}

// AllocError is a device allocation of a program that failed (a batch
// too large), located at its loop.alloc. Err is the allocator's error: a
// *cuda.OutOfMemoryError says how much was asked for and how much was
// free.
type AllocError struct {
	Diag *ir.Diagnostic
	Err  error
}

// Error prints the located diagnostic.
func (e *AllocError) Error() string { return e.Diag.Error() }

// Unwrap returns the allocator's error.
func (e *AllocError) Unwrap() error { return e.Err }

func (c *planner) dealloc(op *ir.Operation) (stepFunc, error) {
	in, err := c.uses(op)
	if err != nil {
		return nil, err
	}
	if len(in) != 1 {
		return nil, ir.Errorf(op.Loc(), "loop.dealloc must have one operand")
	}
	if _, err := globalMemRef(op, op.Operand(0).Type()); err != nil {
		return nil, err
	}
	return func(r *runState) error {
		m := r.slots[in[0]].b.mem
		switch {
		case !m.owned:
			return ir.Errorf(op.Loc(), "loop.dealloc of a function argument")
		case m.freed:
			return ir.Errorf(op.Loc(), "loop.dealloc of a buffer already deallocated")
		}
		if err := r.free(m); err != nil {
			return ir.Errorf(op.Loc(), "loop.dealloc: %v", err)
		}
		return nil
	}, nil
}

func (c *planner) dim(op *ir.Operation) (stepFunc, error) {
	in, err := c.uses(op)
	if err != nil {
		return nil, err
	}
	if len(in) != 1 || op.NumResults() != 1 {
		return nil, ir.Errorf(op.Loc(), "loop.dim must have one operand and one result")
	}
	mt, err := globalMemRef(op, op.Operand(0).Type())
	if err != nil {
		return nil, err
	}
	a, ok := op.Attr(loop.IndexAttr).(ir.IntegerAttr)
	if !ok || a.Value < 0 || a.Value >= int64(len(mt.Shape())) {
		return nil, ir.Errorf(op.Loc(), "loop.dim: index %v out of range for %s", op.Attr(loop.IndexAttr), mt)
	}
	d, k := c.define(op.Result(0)), int(a.Value)
	return func(r *runState) error {
		r.slots[d].i = r.slots[in[0]].b.shape[k]
		return nil
	}, nil
}

// view is loop.view: the result aliases the source's allocation; its one
// dynamic size, if any, is the element count over the static sizes.
func (c *planner) view(op *ir.Operation) (stepFunc, error) {
	in, err := c.uses(op)
	if err != nil {
		return nil, err
	}
	if len(in) != 1 || op.NumResults() != 1 {
		return nil, ir.Errorf(op.Loc(), "loop.view must have one operand and one result")
	}
	src, err := globalMemRef(op, op.Operand(0).Type())
	if err != nil {
		return nil, err
	}
	mt, err := globalMemRef(op, op.Result(0).Type())
	if err != nil {
		return nil, err
	}
	if src.ElementType() != mt.ElementType() || numDynamic(mt.Shape()) > 1 {
		return nil, ir.Errorf(op.Loc(), "loop.view from %s to %s is not supported", src, mt)
	}
	d, static := c.define(op.Result(0)), mt.Shape()
	dyn := slices.Index(static, ir.Dynamic)
	return func(r *runState) error {
		b := r.slots[in[0]].b
		want, _ := elementCount(b.shape)
		s := slices.Clone(static)
		if dyn >= 0 {
			s[dyn] = 1
			rest, _ := elementCount(s)
			if rest == 0 || want%rest != 0 {
				return ir.Errorf(op.Loc(), "loop.view of shape %v as %s: the element counts differ", b.shape, mt)
			}
			s[dyn] = want / rest
		}
		if n, err := elementCount(s); err != nil || n != want {
			return ir.Errorf(op.Loc(), "loop.view of shape %v as %v: the element counts differ", b.shape, s)
		}
		r.slots[d].b = &devBuffer{mem: b.mem, elem: b.elem, shape: s}
		return nil
	}, nil
}

func (c *planner) launch(op *ir.Operation) (stepFunc, error) {
	mod, kernel, fn, err := kernelOf(op)
	if err != nil {
		return nil, err
	}
	if _, ok := c.prog.ptx[mod]; !ok {
		return nil, ir.Errorf(op.Loc(), "gpu.launch_func: no PTX for gpu.module @%s", mod)
	}
	l, _ := gpu.LaunchOf(op)
	ft := gpu.FuncType(fn)
	if ft == nil || len(ft.Inputs) != len(l.Args) {
		return nil, ir.Errorf(op.Loc(), "gpu.launch_func passes %d arguments to %s", len(l.Args), l.Kernel)
	}
	la := &launch{op: op, index: len(c.p.launches), module: mod, kernel: kernel, shared: -1}
	for i := range 3 {
		if la.grid[i], err = c.use(op, l.Grid[i]); err != nil {
			return nil, err
		}
		if la.block[i], err = c.use(op, l.Block[i]); err != nil {
			return nil, err
		}
	}
	if l.DynamicSharedBytes != nil {
		if la.shared, err = c.use(op, l.DynamicSharedBytes); err != nil {
			return nil, err
		}
	}
	for i, a := range l.Args {
		k, err := kindOf(ft.Inputs[i])
		if err != nil {
			return nil, ir.Errorf(op.Loc(), "gpu.launch_func argument %d of %s: %v", i, l.Kernel, err)
		}
		if k == argPtr {
			if _, err := globalMemRef(op, ft.Inputs[i]); err != nil {
				return nil, err
			}
		}
		tm, err := tensorMapOf(fn, i)
		if err != nil {
			return nil, ir.Errorf(op.Loc(), "gpu.launch_func argument %d of %s: %v", i, l.Kernel, err)
		}
		s, err := c.use(op, a)
		if err != nil {
			return nil, err
		}
		la.args, la.kinds, la.types = append(la.args, s), append(la.kinds, k), append(la.types, a.Type())
		la.maps = append(la.maps, tm)
	}
	c.p.launches = append(c.p.launches, la)
	return func(r *runState) error { return r.launch(la) }, nil
}

func (c *planner) ret(op *ir.Operation) (stepFunc, error) {
	in, err := c.uses(op)
	if err != nil {
		return nil, err
	}
	for _, v := range op.Operands() {
		if _, err := kindOf(v.Type()); err != nil {
			return nil, ir.Errorf(op.Loc(), "func.return: %v", err)
		}
	}
	return func(r *runState) error {
		r.results = r.results[:0]
		for _, s := range in {
			r.results = append(r.results, r.slots[s])
		}
		return nil
	}, nil
}
