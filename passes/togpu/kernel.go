package togpu

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// kernelOps are the ops (other than arith and math ones) a nest may hold:
// what the kernel translation understands once loads and stores are 1-D
// and inner parallel loops are sequential.
var kernelOps = map[string]bool{
	loop.LoadOp: true, loop.StoreOp: true, loop.DimOp: true, loop.ForOp: true,
	loop.ParallelOp: true, loop.ReduceOp: true, loop.IfOp: true, loop.YieldOp: true,
}

// check reports why a nest cannot become a kernel, or nil.
func check(nest *ir.Operation) error {
	_, _, _, inits, err := loop.ParallelBounds(nest)
	if err != nil {
		return err
	}
	if len(inits) > 0 {
		return fmt.Errorf("it reduces into %d value(s) returned to the host; a kernel can only write buffers", len(inits))
	}
	var bad error
	nest.Walk(func(o *ir.Operation) bool {
		if bad != nil || o == nest {
			return bad == nil
		}
		name := o.Name()
		if !kernelOps[name] && !strings.HasPrefix(name, "arith.") && !strings.HasPrefix(name, "math.") {
			bad = ir.Errorf(o.Loc(), "'%s' cannot run inside a kernel", name)
			return false
		}
		for _, v := range o.Operands() {
			if definedIn(v, nest) {
				continue
			}
			if err := checkCapture(v); err != nil {
				bad = ir.Errorf(o.Loc(), "'%s' uses a value defined outside the nest: %v", name, err)
				return false
			}
		}
		return true
	})
	return bad
}

// checkCapture says whether a value defined outside a nest can be passed to
// its kernel.
func checkCapture(v *ir.Value) error {
	switch t := v.Type().(type) {
	case *ir.MemRefType:
		if !t.Ranked() || t.Layout != nil || t.MemorySpace != nil {
			return fmt.Errorf("buffer of type %s is not a ranked identity-layout memref in global memory", t)
		}
		return nil
	case *ir.IndexType, *ir.FloatType:
		return nil
	case *ir.IntegerType:
		switch t.Width {
		case 1, 8, 16, 32, 64:
			return nil
		}
	}
	return fmt.Errorf("values of type %s cannot be kernel arguments", v.Type())
}

// definedIn reports whether v is defined inside op (in one of its regions).
func definedIn(v *ir.Value, op *ir.Operation) bool {
	blk := v.ParentBlock()
	if blk == nil {
		return false
	}
	for p := blk.ParentOp(); p != nil; p = p.ParentOp() {
		if p == op {
			return true
		}
	}
	return false
}

// kernelGen builds one kernel and its launch.
type kernelGen struct {
	ctx  *ir.Context
	cfg  Config
	nest *ir.Operation
	name string
	loc  ir.Location

	kernel *ir.Operation
	entry  *ir.Block
	// m maps host values (and values of the nest) to kernel values.
	m map[*ir.Value]*ir.Value
	// sizes holds, for each kernel memref argument, the sizes of the N-D
	// buffer it views (kernel index values).
	sizes map[*ir.Value][]*ir.Value
	// hostArgs are the host values passed to the launch, in kernel argument
	// order; memrefs among them are viewed as 1-D by the launch.
	hostArgs []hostArg
	// mapping is the nest's plan (kernelGen.plan).
	mapping mapping
	// moduleTarget, when set, is the PTX target the kernel needs of its
	// gpu.module (gpu.PTXTargetAttr: wgmma's sm_90a), which place sets.
	moduleTarget string
	// guards, when set, are the bounds on the host's size symbols that
	// the kernel's 32-bit indices rely on (narrowIndices), which place
	// adds to the host function's guards.
	guards *hostBounds
}

// hostArg is one kernel argument as the host computes it.
type hostArg struct {
	v   *ir.Value // a host value
	dim int       // >= 0: the size of dimension dim of v, read by loop.dim
	t   ir.Type   // the kernel parameter type
}

// captures returns the values the nest (its bounds included) uses but does
// not define, in order of first use.
func captures(nest *ir.Operation) []*ir.Value {
	seen := map[*ir.Value]bool{}
	var out []*ir.Value
	add := func(v *ir.Value) {
		if !seen[v] && !definedIn(v, nest) {
			seen[v] = true
			out = append(out, v)
		}
	}
	nest.Walk(func(o *ir.Operation) bool {
		for _, v := range o.Operands() {
			add(v)
		}
		return true
	})
	return out
}

// flatType is the 1-D kernel parameter type of a buffer of type t.
func flatType(t *ir.MemRefType) *ir.MemRefType {
	n := ir.NumElements(t.Shape())
	if n < 0 {
		n = ir.Dynamic
	}
	return ir.MemRefOf([]int64{n}, t.ElementType())
}

// isConstant reports whether v is the result of arith.constant, which the
// kernel recomputes rather than receives.
func isConstant(v *ir.Value) bool {
	d := v.DefiningOp()
	return d != nil && d.Name() == arith.OpConstant
}

// plan picks the nest's mapping (analyze). It changes the nest (sibling
// loops merge), so the plans of a function's nests are made one after
// another.
func (k *kernelGen) plan() error {
	k.loc = k.nest.Loc()
	plan, err := analyze(k.ctx, k.nest, k.cfg)
	if err != nil {
		return ir.Errorf(k.loc, "%s: cannot map loop.parallel nest %s: %v", PassName, k.name, err)
	}
	k.mapping = plan
	return nil
}

// build creates the kernel of the planned nest, outside any gpu.module
// (place inserts it). It reads the host function and changes none of it,
// not even the use lists of its values: the kernels of a function's nests
// are built at once (convertFunc).
func (k *kernelGen) build() error {
	plan := k.mapping
	caps := captures(k.nest)
	isCap := map[*ir.Value]bool{}
	for _, v := range caps {
		isCap[v] = true
	}
	// The dynamic sizes the kernel receives: those linearization needs
	// (all dims but the first), those loop.dim reads inside the nest, and
	// those the host read with loop.dim before the nest (passed once).
	type dimRef struct {
		m *ir.Value
		d int64
	}
	need := map[dimRef]bool{}
	aliases := map[*ir.Value]dimRef{}
	dimOf := func(o *ir.Operation) (dimRef, bool) {
		if o == nil || o.Name() != loop.DimOp || !isCap[o.Operand(0)] {
			return dimRef{}, false
		}
		d, _ := o.Attr(loop.IndexAttr).(ir.IntegerAttr)
		return dimRef{o.Operand(0), d.Value}, true
	}
	for _, v := range caps {
		if r, ok := dimOf(v.DefiningOp()); ok {
			aliases[v], need[r] = r, true
		}
	}
	k.nest.Walk(func(o *ir.Operation) bool {
		if r, ok := dimOf(o); ok {
			need[r] = true
		}
		return true
	})
	// An access indexed by loaded data is checked against every size of
	// its buffer (guardAccess).
	accesses, _ := loop.DataIndexed(k.nest)
	for o := range accesses {
		at := 0
		if o.Name() == loop.StoreOp {
			at = 1
		}
		if mem := o.Operand(at); isCap[mem] {
			for d := range o.NumOperands() - at - 1 {
				need[dimRef{mem, int64(d)}] = true
			}
		}
	}
	for _, v := range caps {
		switch t := v.Type().(type) {
		case *ir.MemRefType:
			k.hostArgs = append(k.hostArgs, hostArg{v: v, dim: -1, t: flatType(t)})
			for d, n := range t.Shape() {
				if n == ir.Dynamic && (d > 0 || need[dimRef{v, int64(d)}]) {
					k.hostArgs = append(k.hostArgs, hostArg{v: v, dim: d, t: ir.Index})
				}
			}
		default:
			if _, ok := aliases[v]; !ok && !isConstant(v) {
				k.hostArgs = append(k.hostArgs, hostArg{v: v, dim: -1, t: v.Type()})
			}
		}
	}
	types := make([]ir.Type, len(k.hostArgs))
	for i, a := range k.hostArgs {
		types[i] = a.t
	}
	b := ir.NewBuilder(k.ctx) // no insertion point: the kernel stays detached
	k.kernel, k.entry = gpu.NewKernel(b, k.loc, k.name, types)
	k.m = map[*ir.Value]*ir.Value{}
	k.sizes = map[*ir.Value][]*ir.Value{}
	b.SetInsertionPointToEnd(k.entry)
	// Bind the arguments, then constants and buffer sizes.
	for i, a := range k.hostArgs {
		if a.dim < 0 {
			k.m[a.v] = k.entry.Argument(i)
		}
	}
	for _, v := range caps {
		if _, ok := k.m[v]; !ok && isConstant(v) {
			k.m[v] = b.Insert(v.DefiningOp().Clone(nil)).Result(0)
		}
	}
	for _, v := range caps {
		t, ok := v.Type().(*ir.MemRefType)
		if !ok {
			continue
		}
		sizes := make([]*ir.Value, len(t.Shape()))
		for d, n := range t.Shape() {
			if n != ir.Dynamic {
				sizes[d] = arith.ConstantIndex(b, k.loc, n)
			}
		}
		for i, a := range k.hostArgs {
			if a.v == v && a.dim >= 0 {
				sizes[a.dim] = k.entry.Argument(i)
			}
		}
		k.sizes[k.m[v]] = sizes
	}
	for v, r := range aliases {
		k.m[v] = k.sizes[k.m[r.m]][r.d]
	}
	if err := plan.emit(k, b); err != nil {
		return ir.Errorf(k.loc, "%s: cannot map loop.parallel nest %s: %v", PassName, k.name, err)
	}
	gpu.Return(b, k.loc)
	k.kernel.SetAttr(LaunchAttr, ir.Dict(
		ir.NamedAttr{Name: "block", Value: ir.Int(plan.block(k.cfg), ir.I64)},
		ir.NamedAttr{Name: "mapping", Value: ir.Str(plan.mapping())},
		ir.NamedAttr{Name: "rows_per_block", Value: ir.Int(plan.rowsPerBlock(), ir.I64)},
		ir.NamedAttr{Name: "vector", Value: ir.Int(plan.vector(), ir.I64)},
	))
	// Above 256 threads a block cannot launch with the default register
	// cap (255 a thread, of 65536): its size must bound the registers a
	// thread may take (1024 threads: 64), as the GEMM template's does.
	// Without it the driver's first tier (JIT level 0) gave a 1024-thread
	// column kernel of resnet50_train more, and its launch failed with
	// CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (session 17 call 2).
	if n := plan.block(k.cfg); n > 256 && k.kernel.Attr("nvvm.maxntid") == nil {
		k.kernel.SetAttr("nvvm.maxntid", ir.Int(n, ir.I64))
	}
	if err := k.lower(); err != nil {
		return err
	}
	if k.cfg.IndexBits == 32 {
		k.narrowIndices(plan)
	}
	reducePowerOfTwoDivisions(k.ctx, k.kernel)
	if r, ok := plan.(*row); ok && k.cfg.RowEvictLast && r.writesRows() {
		markEvictLast(k.kernel)
	}
	return nil
}

// place appends the built kernel to gmod (with the PTX target it needs),
// adds the guards its 32-bit indices rely on to the host function and
// replaces the nest by the kernel's launch: the changes outside the
// kernel, made one kernel at a time.
func (k *kernelGen) place(gmod *ir.Operation) error {
	gpu.Body(gmod).InsertBefore(k.kernel, gpu.Body(gmod).Terminator())
	if k.moduleTarget != "" {
		gmod.SetAttr(gpu.PTXTargetAttr, ir.Str(k.moduleTarget))
	}
	if k.guards != nil {
		k.guards.guard()
	}
	return k.launch(gmod, k.mapping)
}

// markEvictLast puts loop.evict_last on the kernel's loads of global
// buffers (Config.RowEvictLast): the kernels of rows with a write loop.
func markEvictLast(kernel *ir.Operation) {
	kernel.Walk(func(o *ir.Operation) bool {
		if o.Name() == loop.LoadOp {
			if mt, ok := o.Operand(0).Type().(*ir.MemRefType); ok && mt.MemorySpace == nil {
				o.SetAttr(loop.EvictLastAttr, ir.UnitAttr{})
			}
		}
		return true
	})
}

// reducePowerOfTwoDivisions rewrites the unsigned divisions and
// remainders of kernel by a constant power of two 2^s as arith.shrui by s
// and arith.andi with 2^s - 1, exact for every unsigned operand at any
// width. The coordinates of an N-D point (delinearize) and the lane and
// warp of a thread divide by such extents. ptxas strength-reduces 32-bit
// division by a constant but compiles div.u64 and rem.u64 into calls of
// a ≈ 40-instruction subroutine even for an immediate power of two (seen
// in the SASS of the cuBLASLt epilogue kernel: two calls a thread, about
// a fifth of its instructions). Runs after narrowIndices, whose range
// analysis reads divisions and remainders.
func reducePowerOfTwoDivisions(ctx *ir.Context, kernel *ir.Operation) {
	var ops []*ir.Operation
	kernel.Walk(func(o *ir.Operation) bool {
		if o.Name() == arith.OpDivUI || o.Name() == arith.OpRemUI {
			ops = append(ops, o)
		}
		return true
	})
	b := ir.NewBuilder(ctx)
	for _, o := range ops {
		t := o.Result(0).Type()
		switch t.(type) {
		case *ir.IndexType, *ir.IntegerType:
		default:
			continue // vectors of integers: not made by the mappings
		}
		c, ok := foldedInt(o.Operand(1), 0)
		if !ok || c < 2 || c&(c-1) != 0 {
			continue
		}
		b.SetInsertionPointBefore(o)
		var r *ir.Value
		if o.Name() == arith.OpDivUI {
			r = arith.Binary(b, arith.OpShRUI, o.Loc(), o.Operand(0), arith.ConstantInt(b, o.Loc(), int64(bits.TrailingZeros64(uint64(c))), t))
		} else {
			r = arith.Binary(b, arith.OpAndI, o.Loc(), o.Operand(0), arith.ConstantInt(b, o.Loc(), c-1, t))
		}
		o.Result(0).ReplaceAllUsesWith(r)
		o.Erase()
	}
}

// foldedInt returns the value of v when it is an integer constant or a
// tree of binary integer arith ops over constants (a static extent as
// extents computes it), as the folders will compute it.
func foldedInt(v *ir.Value, depth int) (int64, bool) {
	if c, ok := staticInt(v); ok {
		return c, true
	}
	d := v.DefiningOp()
	if d == nil || depth > 8 || d.NumOperands() != 2 || d.NumResults() != 1 || !arith.IsIntBinary(d.Name()) {
		return 0, false
	}
	x, ok1 := foldedInt(d.Operand(0), depth+1)
	y, ok2 := foldedInt(d.Operand(1), depth+1)
	if !ok1 || !ok2 {
		return 0, false
	}
	return arith.EvalInt(d.Name(), v.Type(), x, y)
}

// launch replaces the nest by the host computation of the grid and the
// gpu.launch_func, which passes the kernel's dynamic shared memory when
// its workgroup buffers need it.
func (k *kernelGen) launch(gmod *ir.Operation, plan mapping) error {
	b := ir.NewBuilder(k.ctx)
	b.SetInsertionPointBefore(k.nest)
	lbs, ubs, steps, _, _ := loop.ParallelBounds(k.nest)
	grid := plan.grid(b, k.loc, extents(b, k.loc, lbs, ubs, steps), k.cfg)
	one := arith.ConstantIndex(b, k.loc, 1)
	block := arith.ConstantIndex(b, k.loc, plan.block(k.cfg))
	args := make([]*ir.Value, len(k.hostArgs))
	for i, a := range k.hostArgs {
		switch {
		case a.dim >= 0:
			args[i] = loop.Dim(b, k.loc, a.v, a.dim)
		case a.v.Type() != a.t:
			args[i] = loop.View(b, k.loc, a.v, a.t.(*ir.MemRefType))
		default:
			args[i] = a.v
		}
	}
	shared, err := gpu.DynamicSharedSize(b, k.loc, k.kernel)
	if err != nil {
		return ir.Errorf(k.loc, "%s: kernel %s: %v", PassName, k.name, err)
	}
	gpu.LaunchFunc(b, k.loc, gpu.KernelRef(symName(gmod), k.name),
		[3]*ir.Value{grid, one, one}, [3]*ir.Value{block, one, one}, args, shared)
	k.nest.Erase()
	return nil
}

// extents returns the trip count of each dimension of a nest:
// ceil(max(ub - lb, 0) / step).
func extents(b *ir.Builder, loc ir.Location, lbs, ubs, steps []*ir.Value) []*ir.Value {
	zero := arith.ConstantIndex(b, loc, 0)
	one := arith.ConstantIndex(b, loc, 1)
	out := make([]*ir.Value, len(lbs))
	for d := range lbs {
		span := arith.Binary(b, arith.OpMaxSI, loc, arith.Binary(b, arith.OpSubI, loc, ubs[d], lbs[d]), zero)
		out[d] = ceilDiv(b, loc, span, steps[d], one)
	}
	return out
}

// ceilDiv returns ceil(x / y) for x >= 0, y > 0.
func ceilDiv(b *ir.Builder, loc ir.Location, x, y, one *ir.Value) *ir.Value {
	return arith.Binary(b, arith.OpDivUI, loc,
		arith.Binary(b, arith.OpAddI, loc, x, arith.Binary(b, arith.OpSubI, loc, y, one)), y)
}

// product returns the product of vs (1 for none).
func product(b *ir.Builder, loc ir.Location, vs []*ir.Value) *ir.Value {
	p := arith.ConstantIndex(b, loc, 1)
	for _, v := range vs {
		p = arith.Binary(b, arith.OpMulI, loc, p, v)
	}
	return p
}

// delinearize splits lin (< the product of exts) into row-major
// coordinates and returns lb + coordinate*step for each dimension.
func delinearize(b *ir.Builder, loc ir.Location, lin *ir.Value, lbs, steps, exts []*ir.Value) []*ir.Value {
	n := len(exts)
	ivs := make([]*ir.Value, n)
	rem := lin
	for d := n - 1; d >= 0; d-- {
		q := rem
		if d > 0 {
			q = arith.Binary(b, arith.OpRemUI, loc, rem, exts[d])
			rem = arith.Binary(b, arith.OpDivUI, loc, rem, exts[d])
		}
		ivs[d] = arith.Binary(b, arith.OpAddI, loc, lbs[d], arith.Binary(b, arith.OpMulI, loc, q, steps[d]))
	}
	return ivs
}

// cloneOps clones the ops of blk except its terminator at b, mapping
// values through m, and returns the terminator (not cloned).
func cloneOps(b *ir.Builder, blk *ir.Block, m map[*ir.Value]*ir.Value) *ir.Operation {
	for op := blk.First(); op != nil; op = op.Next() {
		if op.HasTrait(ir.Terminator) {
			return op
		}
		b.Insert(op.Clone(m))
	}
	return nil
}

// mapped returns the kernel values of vs.
func mapped(m map[*ir.Value]*ir.Value, vs []*ir.Value) []*ir.Value {
	out := make([]*ir.Value, len(vs))
	for i, v := range vs {
		out[i] = v
		if w, ok := m[v]; ok {
			out[i] = w
		}
	}
	return out
}

// lower finishes the kernel body: inner loop.parallel ops become
// sequential loop.for nests, loop.dim reads the sizes passed in, accesses
// indexed by loaded data are guarded (guardAccess), and loads and stores
// of N-D buffers become loads and stores of their 1-D views.
func (k *kernelGen) lower() error {
	var pars []*ir.Operation
	k.kernel.WalkPost(func(o *ir.Operation) {
		if o.Name() == loop.ParallelOp {
			pars = append(pars, o)
		}
	})
	// Post-order: inner nests first, so each one sequentialized holds none.
	for _, p := range pars {
		sequentialize(k.ctx, p)
	}
	var accesses, dims []*ir.Operation
	k.kernel.Walk(func(o *ir.Operation) bool {
		switch o.Name() {
		case loop.LoadOp, loop.StoreOp:
			accesses = append(accesses, o)
		case loop.DimOp:
			dims = append(dims, o)
		}
		return true
	})
	guarded, tainted := loop.DataIndexed(k.kernel)
	b := ir.NewBuilder(k.ctx)
	for _, o := range dims {
		sizes, ok := k.sizes[o.Operand(0)]
		d, _ := o.Attr(loop.IndexAttr).(ir.IntegerAttr)
		if !ok || d.Value < 0 || int(d.Value) >= len(sizes) {
			return ir.Errorf(o.Loc(), "%s: loop.dim of a buffer the kernel does not receive", PassName)
		}
		o.Result(0).ReplaceAllUsesWith(sizes[d.Value])
		o.Erase()
	}
	for _, o := range accesses {
		at := 0
		if o.Name() == loop.StoreOp {
			at = 1
		}
		mem := o.Operand(at)
		sizes, ok := k.sizes[mem]
		if !ok {
			continue // workgroup memory, already 1-D
		}
		idx := o.Operands()[at+1:]
		if guarded[o] {
			var err error
			if o, idx, err = guardAccess(b, o, at, idx, sizes, tainted); err != nil {
				return err
			}
			if o == nil {
				continue // a buffer of no elements: nothing accessed
			}
		}
		if len(idx) == 1 {
			continue
		}
		b.SetInsertionPointBefore(o)
		lin := linearize(b, o.Loc(), idx, sizes)
		o.SetOperands(append(append([]*ir.Value(nil), o.Operands()[:at+1]...), lin))
	}
	return nil
}

// linearize returns the row-major offset of idx in a buffer of the given
// sizes.
func linearize(b *ir.Builder, loc ir.Location, idx, sizes []*ir.Value) *ir.Value {
	if len(idx) == 0 {
		return arith.ConstantIndex(b, loc, 0)
	}
	lin := idx[0]
	for d := 1; d < len(idx); d++ {
		lin = arith.Binary(b, arith.OpAddI, loc, arith.Binary(b, arith.OpMulI, loc, lin, sizes[d]), idx[d])
	}
	return lin
}

// sequentialize replaces a loop.parallel (inside a kernel, run by one
// thread) by a loop.for nest carrying its reductions, combined in the
// parallel's iteration order.
func sequentialize(ctx *ir.Context, par *ir.Operation) {
	lbs, ubs, steps, inits, _ := loop.ParallelBounds(par)
	body := loop.Body(par)
	red := body.Terminator()
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(par)
	loc := par.Loc()
	var level func(b *ir.Builder, d int, ivs, accs []*ir.Value) []*ir.Value
	level = func(b *ir.Builder, d int, ivs, accs []*ir.Value) []*ir.Value {
		if d == len(lbs) {
			m := map[*ir.Value]*ir.Value{}
			for i, iv := range ivs {
				m[body.Argument(i)] = iv
			}
			cloneOps(b, body, m)
			vals := mapped(m, red.Operands())
			out := make([]*ir.Value, len(accs))
			for i := range accs {
				out[i] = inlineCombiner(b, red.Region(i).Front(), accs[i], vals[i])
			}
			return out
		}
		f := loop.For(b, loc, lbs[d], ubs[d], steps[d], accs, func(nb *ir.Builder, iv *ir.Value, iters []*ir.Value) []*ir.Value {
			return level(nb, d+1, append(append([]*ir.Value(nil), ivs...), iv), iters)
		})
		return f.Results()
	}
	res := level(b, 0, nil, inits)
	for i, r := range par.Results() {
		r.ReplaceAllUsesWith(res[i])
	}
	par.Erase()
}

// inlineCombiner clones a combiner block ^bb0(%lhs, %rhs) at b on x and y
// and returns the value it yields.
func inlineCombiner(b *ir.Builder, blk *ir.Block, x, y *ir.Value) *ir.Value {
	m := map[*ir.Value]*ir.Value{blk.Argument(0): x, blk.Argument(1): y}
	y0 := cloneOps(b, blk, m)
	return mapped(m, y0.Operands())[0]
}
