package cpu

import (
	"fmt"
	"os"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/targets/llvm"
)

// DataLayout and Triple are those of x86-64 Linux (System V ABI).
const (
	DataLayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
	Triple     = "x86_64-pc-linux-gnu"
)

// Module is a program translated for the host: the LLVM IR of its kernels
// and, per function, what the runtime needs to execute its host side.
type Module struct {
	// LLVM holds every kernel of every function.
	LLVM *llir.Module
	// Funcs are the translated functions by name.
	Funcs map[string]*Func
}

// Func is one func.func at the loop level: its host ops stay IR (Op's
// body), and each top-level loop.parallel is a kernel.
type Func struct {
	Name string
	Op   *ir.Operation
	// Kernels maps each top-level loop.parallel of Op to its kernel.
	Kernels map[*ir.Operation]*Kernel
}

// Kernel is the compiled form of one top-level loop.parallel nest.
type Kernel struct {
	// Name is the symbol of the typed entry; Name+"_packed" takes the
	// arguments as an array of 64-bit words.
	Name string
	Nest *ir.Operation
	// Args are the host values the kernel takes, in parameter order.
	Args []Arg
	// Lbs, Ubs and Steps are the nest's bounds (host values); Dims is
	// their number.
	Lbs, Ubs, Steps []*ir.Value
	Dims            int
	// Flat is set when the outer range covers every dimension but the
	// rows (Dims−2), the last one too, and the rows are a loop inside each
	// point: a product kept on the generic path as one dot product along
	// k per element of C (see MatmulDotRows), whose few rows would
	// otherwise leave the outer range too short to share among the cores
	// (one row: one range, one core), and whose rows then read the
	// point's row of B from the cache rather than memory. Otherwise the
	// outer range is the first Dims−1 dimensions and the last is a loop
	// inside each point.
	Flat bool
	// Chunk, when positive, splits the last dimension into chunks of
	// Chunk iterations, each a point of the outer range (the first Dims−1
	// dimensions times the chunks), for a pointwise nest whose last
	// dimension is long and static: a tensor<1x16777216xf32> would
	// otherwise be one point, on one core.
	Chunk int64
	// Matmul is set when the nest became a register-blocked matrix
	// product C[b…, i, j] = epilogue(Σk A[…]·B[…]), A indexed [b…, i, k]
	// or [b…, k, i], B [b…, k, j] or [b…, j, k], each with all the batch
	// indices b… (the first MatmulBatch dims of the nest) or none. With
	// MatmulFold (B without batch indices) the batches fold into A's rows:
	// one product of Π batch · M rows. Its outer range then counts (batch,
	// panel of MatmulCols columns, block of MatmulRows rows) triples (one
	// batch when folded): batch-major; within a batch, the row blocks in
	// groups of G (the second word of the arguments; the last group may
	// be smaller), group-major, then panel-major, so that a worker's
	// contiguous range covers the A blocks of one group and a run of
	// panels, each reused from cache (G = R: panel-major over all rows).
	// The first word is a scratch buffer of batches · (P·MatmulCols +
	// R·MatmulRows)·K elements of MatmulElemBytes bytes (P panels, R row
	// blocks, a batch's share contiguous), which Name+"_pack" fills before
	// Name runs (its range: for each batch, ⌈K / MatmulPackK⌉ blocks of
	// steps of k, each of every panel and row block; with at most
	// MatmulDirectBlocks row blocks a batch and B indexed [b…, k, j]
	// unwidened, of the partial panel only: the kernel reads B's full
	// panels in place); when K exceeds KC (the third
	// word, at least 1: the k block, see MatmulKC and DefaultKC), followed by
	// MatmulRows·MatmulCols elements for each item of the range (its
	// partial sums between k blocks).
	// MatmulK is the reduction's trip count (a constant or a host value);
	// MatmulA and MatmulB are the operands' buffers, whose dimensions
	// MatmulAK and MatmulBK must hold K elements.
	Matmul             bool
	MatmulBatch        int
	MatmulFold         bool
	MatmulK            *ir.Value
	MatmulA, MatmulB   *ir.Value
	MatmulAK, MatmulBK int
	MatmulCols         int
	MatmulRows         int
	MatmulElemBytes    int
	// Checked is set when the nest has loads or stores at indices
	// computed from data: the kernel then takes, after the scratch words
	// (if any), a pointer to FaultWords words, zero on entry, which hold
	// the first out-of-range access it skipped (flag, index, dimension,
	// size).
	Checked bool
	// Bounds are the accesses whose range the runtime checks against
	// the buffers' sizes before the kernel runs.
	Bounds []BoundCheck
	// Work estimates the instructions one point of the outer range runs
	// (static trip counts of inner loops multiplied out, 64 for a dynamic
	// one), for the runtime's choice of how many cores to use.
	Work int64
}

// Arg is one host value passed to a kernel: a buffer (a pointer word,
// then one word per dynamic dimension, in DynDims order) or a scalar (one
// word holding its bits: integers sign-extended, floats as their IEEE
// bits).
type Arg struct {
	Value   *ir.Value
	DynDims []int
}

// Words returns how many 64-bit words the argument takes in the packed
// array.
func (a Arg) Words() int {
	if _, ok := a.Value.Type().(*ir.MemRefType); ok {
		return 1 + len(a.DynDims)
	}
	return 1
}

// HostOps are the ops a function may hold outside its kernels; the
// runtime executes them.
var HostOps = map[string]bool{
	"arith.constant": true, "arith.addi": true, "arith.subi": true, "arith.muli": true,
	"arith.divsi": true, "arith.divui": true, "arith.remsi": true, "arith.remui": true,
	"arith.ceildivsi": true, "arith.floordivsi": true, "arith.maxsi": true, "arith.minsi": true,
	"arith.maxui": true, "arith.minui": true, "arith.cmpi": true, "arith.select": true,
	"arith.index_cast": true, "arith.index_castui": true, "arith.andi": true, "arith.ori": true,
	"arith.xori": true, "arith.extsi": true, "arith.extui": true, "arith.trunci": true,
	loop.AllocOp: true, loop.DeallocOp: true, loop.DimOp: true, loop.ViewOp: true,
	loop.StoreOp: true, loop.ParallelOp: true, "func.return": true,
}

// Translate returns the host translation of every func.func with a body
// in module, which must be at the loop level (lower-to-loop). Anything it
// cannot translate is a located diagnostic.
func Translate(module *ir.Operation) (*Module, error) {
	return TranslateFor(module, HostCPU())
}

// TranslateFor is Translate for the CPU named as llc's -mcpu names it
// (its vector width sets the matmul kernels' register blocks).
func TranslateFor(module *ir.Operation, cpu string) (*Module, error) {
	m := llir.NewModule()
	m.DataLayout = DataLayout
	m.TargetTriple = Triple
	t := &translator{m: m, decls: map[string]*llir.Func{}, vectorBytes: VectorBytes(cpu)}
	var err error
	if t.mr, t.nv, err = blockFromEnv(t.vectorBytes); err != nil {
		return nil, err
	}
	t.blockSet = os.Getenv(MatmulBlockEnv) != ""
	out := &Module{LLVM: m, Funcs: map[string]*Func{}}
	module.Walk(func(op *ir.Operation) bool {
		if err != nil {
			return false
		}
		if op.Name() != "func.func" {
			return true
		}
		if op.NumRegions() == 0 || op.Region(0).Empty() {
			return false
		}
		var f *Func
		if f, err = t.function(op); err == nil {
			out.Funcs[f.Name] = f
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// translator holds the module being built.
type translator struct {
	m     *llir.Module
	decls map[string]*llir.Func
	// vectorBytes is the width of the target's vector registers.
	vectorBytes int
	// mr × nv is the matmul kernels' register block (see blockFromEnv);
	// blockSet says $STRATA_CPU_MATMUL_BLOCK chose it (for every product).
	mr, nv   int
	blockSet bool
}

func (t *translator) function(fn *ir.Operation) (*Func, error) {
	name := ir.SymbolName(fn)
	if len(fn.Region(0).Blocks()) != 1 {
		return nil, ir.Errorf(fn.Loc(), "@%s has more than one block (only structured control flow is supported)", name)
	}
	if ft := funcs.Type(fn); ft != nil {
		for i, in := range append(append([]ir.Type{}, ft.Inputs...), ft.Results...) {
			if err := hostType(in); err != nil {
				return nil, ir.Errorf(fn.Loc(), "@%s: type %d: %v", name, i, err)
			}
		}
	}
	f := &Func{Name: name, Op: fn, Kernels: map[*ir.Operation]*Kernel{}}
	for _, op := range fn.Region(0).Front().Ops() {
		if !HostOps[op.Name()] {
			return nil, ir.Errorf(op.Loc(), "'%s' is not supported at the top level of a function by the cpu target (run lower-to-loop first)", op.Name())
		}
		if op.Name() != loop.ParallelOp {
			continue
		}
		k, err := t.kernel(fmt.Sprintf("%s_kernel_%d", name, len(f.Kernels)), op)
		if err != nil {
			return nil, err
		}
		f.Kernels[op] = k
	}
	return f, nil
}

// hostType checks a function's parameter or result type.
func hostType(ty ir.Type) error {
	if mt, ok := ty.(*ir.MemRefType); ok {
		if mt.Layout != nil || mt.MemorySpace != nil {
			return fmt.Errorf("only identity-layout memrefs in the default memory space are supported, not %s", ty)
		}
		_, err := llvm.MemType(mt.ElementType())
		return err
	}
	_, err := llvm.ScalarType(ty)
	return err
}

// intrinsic returns the declaration of an intrinsic or library function,
// adding it once.
func (t *translator) intrinsic(name string, ret types.Type, params ...types.Type) *llir.Func {
	if f, ok := t.decls[name]; ok {
		return f
	}
	ps := make([]*llir.Param, len(params))
	for i, p := range params {
		ps[i] = llir.NewParam("", p)
	}
	f := t.m.NewFunc(name, ret, ps...)
	f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrNoUnwind)
	t.decls[name] = f
	return f
}

// loopHint returns a new loop identifier with one property, such as
// !{self, !{"llvm.loop.vectorize.enable", i1 true}}.
func (t *translator) loopHint(key string, v int64, ty *types.IntType) *metadata.Tuple {
	prop := &metadata.Tuple{MetadataID: -1, Fields: []metadata.Field{&metadata.String{Value: key}, constant.NewInt(ty, v)}}
	id := &metadata.Tuple{MetadataID: -1, Distinct: true}
	id.Fields = []metadata.Field{id, prop}
	t.m.MetadataDefs = append(t.m.MetadataDefs, id, prop)
	return id
}

// inside reports whether v is defined within nest (by an op nested in it
// or as an argument of one of its blocks).
func inside(v *ir.Value, nest *ir.Operation) bool {
	if op := v.DefiningOp(); op != nil {
		return op.IsAncestor(nest) && op != nest
	}
	b := v.ParentBlock()
	if b == nil {
		return false
	}
	owner := b.ParentOp()
	return owner != nil && owner.IsAncestor(nest)
}

// captured returns the host values nest uses, in order of first use.
func captured(nest *ir.Operation) []*ir.Value {
	var out []*ir.Value
	seen := map[*ir.Value]bool{}
	nest.Walk(func(op *ir.Operation) bool {
		for _, v := range op.Operands() {
			if !seen[v] && !inside(v, nest) {
				seen[v] = true
				out = append(out, v)
			}
		}
		return true
	})
	return out
}

// kernel translates one top-level loop.parallel into the kernel name and
// its packed entry.
func (t *translator) kernel(name string, nest *ir.Operation) (*Kernel, error) {
	lbs, ubs, steps, inits, err := loop.ParallelBounds(nest)
	if err != nil {
		return nil, ir.Errorf(nest.Loc(), "%v", err)
	}
	if len(inits) > 0 {
		return nil, ir.Errorf(nest.Loc(), "a top-level loop.parallel that reduces into values for the host is not supported by the cpu target")
	}
	kern := &Kernel{Name: name, Nest: nest, Lbs: lbs, Ubs: ubs, Steps: steps, Dims: len(lbs)}
	k := &kt{t: t, vals: map[*ir.Value]value.Value{}, dims: map[*ir.Value][]value.Value{}, kern: kern}
	var consts []*ir.Operation
	for _, v := range captured(nest) {
		if def := v.DefiningOp(); def != nil && def.Name() == "arith.constant" {
			consts = append(consts, def)
			continue
		}
		a := Arg{Value: v}
		if mt, ok := v.Type().(*ir.MemRefType); ok {
			if err := hostType(mt); err != nil {
				return nil, ir.Errorf(nest.Loc(), "kernel @%s: %v", name, err)
			}
			for d, n := range mt.Shape() {
				if n == ir.Dynamic {
					a.DynDims = append(a.DynDims, d)
				}
			}
		} else if _, err := llvm.ScalarType(v.Type()); err != nil {
			return nil, ir.Errorf(nest.Loc(), "kernel @%s: %v", name, err)
		}
		kern.Args = append(kern.Args, a)
	}
	k.checked, _ = loop.DataIndexed(nest)
	kern.Checked = len(k.checked) > 0
	kern.Bounds = boundChecks(nest)
	mm := t.matchMatmul(nest)
	if mm != nil && mm.dot {
		kern.Flat, mm = true, nil
	}
	if !kern.Flat && mm == nil && len(lbs) > 1 && !hasLoops(loop.Body(nest)) &&
		staticTrip(lbs[len(lbs)-1], ubs[len(ubs)-1], steps[len(steps)-1]) >= 2*ChunkIterations {
		kern.Chunk = ChunkIterations
	}
	kern.Work = work(nest, kern.Flat, kern.Chunk)
	var scratch types.Type
	if mm != nil {
		kern.Matmul = true
		_, kern.MatmulK, _ = loop.ForBounds(mm.forOp)
		kern.MatmulA, kern.MatmulB = mm.a, mm.b
		kern.MatmulBatch, kern.MatmulFold = len(mm.batch), mm.fold
		kern.MatmulAK, kern.MatmulBK = len(mm.aIdx)-1, len(mm.bIdx)-2
		if mm.aTrans {
			kern.MatmulAK--
		}
		if mm.bTrans {
			kern.MatmulBK++
		}
		kern.MatmulCols = mm.cols()
		kern.MatmulRows = mm.mr
		kern.MatmulElemBytes = int(elemBytes(mm.elem))
		scratch = types.NewPointer(mm.elem)
	}
	f, lo, hi, err := k.begin(name, scratch, consts)
	if err != nil {
		return nil, err
	}
	if mm != nil {
		err = k.matmul(mm, f.Params[0], f.Params[1], f.Params[2], lo, hi)
	} else {
		err = k.outer(nest, lo, hi)
	}
	if err != nil {
		return nil, err
	}
	k.cur.NewRet(nil)
	t.packed(f, name)
	if mm != nil {
		f, lo, hi, err := k.begin(name+"_pack", scratch, consts)
		if err != nil {
			return nil, err
		}
		if err := k.pack(mm, f.Params[0], lo, hi); err != nil {
			return nil, err
		}
		k.cur.NewRet(nil)
		t.packed(f, name+"_pack")
	}
	return kern, nil
}

// begin starts the function name of the kernel: its parameters (scratch,
// the matmul's row-block group and its k block, when scratch is not nil; the fault
// words of a checked kernel; then the kernel's arguments, then lo and hi)
// and its entry
// block, where the nest's captured constants are materialised.
func (k *kt) begin(name string, scratch types.Type, consts []*ir.Operation) (f *llir.Func, lo, hi *llir.Param, err error) {
	var params []*llir.Param
	if scratch != nil {
		p := llir.NewParam("scratch", scratch)
		p.Attrs = append(p.Attrs, enum.ParamAttrNoAlias)
		params = append(params, p, llir.NewParam("group", types.I64), llir.NewParam("kc", types.I64))
	}
	if k.kern.Checked {
		p := llir.NewParam("fault", types.NewPointer(types.I64))
		p.Attrs = append(p.Attrs, enum.ParamAttrNoAlias)
		params = append(params, p)
		k.fault = p
	}
	k.vals = map[*ir.Value]value.Value{}
	k.dims = map[*ir.Value][]value.Value{}
	k.reuseStore, k.reuseLoad = map[*ir.Operation][]*reused{}, map[*ir.Operation]*reused{}
	k.moments = map[*ir.Operation]*moments{}
	for i, a := range k.kern.Args {
		v := a.Value
		if mt, ok := v.Type().(*ir.MemRefType); ok {
			elem, _ := llvm.MemType(mt.ElementType())
			p := llir.NewParam(fmt.Sprintf("a%d", i), types.NewPointer(elem))
			p.Attrs = append(p.Attrs, enum.ParamAttrNoAlias)
			params = append(params, p)
			k.vals[v] = p
			sizes := make([]value.Value, len(mt.Shape()))
			for d, n := range mt.Shape() {
				if n == ir.Dynamic {
					dp := llir.NewParam(fmt.Sprintf("a%d_d%d", i, d), types.I64)
					params = append(params, dp)
					sizes[d] = dp
				} else {
					sizes[d] = constant.NewInt(types.I64, n)
				}
			}
			k.dims[v] = sizes
			continue
		}
		st, _ := llvm.ScalarType(v.Type())
		p := llir.NewParam(fmt.Sprintf("a%d", i), st)
		params = append(params, p)
		k.vals[v] = p
	}
	lo, hi = llir.NewParam("lo", types.I64), llir.NewParam("hi", types.I64)
	params = append(params, lo, hi)
	f = k.t.m.NewFunc(name, types.Void, params...)
	f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrNoUnwind)
	k.f = f
	k.blocks = 0
	k.cur = f.NewBlock("entry")
	for _, c := range consts {
		if err := k.constant(c); err != nil {
			return nil, nil, nil, ir.Errorf(c.Loc(), "'%s': %v", c.Name(), err)
		}
	}
	return f, lo, hi, nil
}

// packed adds name_packed(i64* args, i64 lo, i64 hi), which reads the
// kernel's arguments from the array and calls it.
func (t *translator) packed(f *llir.Func, name string) {
	args := llir.NewParam("args", types.NewPointer(types.I64))
	lo, hi := llir.NewParam("lo", types.I64), llir.NewParam("hi", types.I64)
	p := t.m.NewFunc(name+"_packed", types.Void, args, lo, hi)
	p.FuncAttrs = append(p.FuncAttrs, enum.FuncAttrNoUnwind)
	b := p.NewBlock("entry")
	var vals []value.Value
	word := int64(0)
	next := func() value.Value {
		ptr := b.NewGetElementPtr(types.I64, args, constant.NewInt(types.I64, word))
		word++
		return b.NewLoad(types.I64, ptr)
	}
	for _, prm := range f.Params[:len(f.Params)-2] {
		w := next()
		switch pt := prm.Typ.(type) {
		case *types.PointerType:
			vals = append(vals, b.NewIntToPtr(w, pt))
		case *types.IntType:
			if pt.BitSize == 64 {
				vals = append(vals, w)
			} else {
				vals = append(vals, b.NewTrunc(w, pt))
			}
		case *types.FloatType:
			bits := map[types.FloatKind]uint64{types.FloatKindHalf: 16, types.FloatKindFloat: 32, types.FloatKindDouble: 64}[pt.Kind]
			var x value.Value = w
			if bits < 64 {
				x = b.NewTrunc(w, types.NewInt(bits))
			}
			vals = append(vals, b.NewBitCast(x, pt))
		}
	}
	vals = append(vals, lo, hi)
	b.NewCall(f, vals...)
	b.NewRet(nil)
}

// work estimates the instructions of one point of the nest's outer range.
func work(nest *ir.Operation, flat bool, chunk int64) int64 {
	var count func(b *ir.Block) int64
	count = func(b *ir.Block) int64 {
		var n int64
		for _, op := range b.Ops() {
			n++
			for _, r := range op.Regions() {
				if r.Empty() {
					continue
				}
				inner := count(r.Front())
				trip := int64(1)
				switch op.Name() {
				case loop.ForOp:
					trip = staticTrip(op.Operand(0), op.Operand(1), op.Operand(2))
				case loop.ParallelOp:
					lbs, ubs, steps, _, _ := loop.ParallelBounds(op)
					for i := range lbs {
						trip *= staticTrip(lbs[i], ubs[i], steps[i])
					}
				}
				n = min(n+satMul(trip, inner), workCap)
			}
		}
		return n
	}
	n := count(loop.Body(nest))
	lbs, ubs, steps, _, _ := loop.ParallelBounds(nest)
	if len(lbs) > 1 && !flat {
		last := staticTrip(lbs[len(lbs)-1], ubs[len(ubs)-1], steps[len(steps)-1])
		if chunk > 0 {
			last = min(last, chunk)
		}
		n = satMul(n, last)
	} else if len(lbs) > 1 {
		n = satMul(n, staticTrip(lbs[len(lbs)-2], ubs[len(ubs)-2], steps[len(steps)-2]))
	}
	return max(n, 1)
}

// ChunkIterations is the length of a chunk of a long last dimension
// (Kernel.Chunk); nests whose static last dimension is shorter than two
// chunks keep it whole.
const ChunkIterations = 4096

// workCap bounds the work estimate (it only chooses how many cores run).
const workCap = 1 << 40

// satMul is a·b for non-negative a and b, at most workCap.
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > workCap/b {
		return workCap
	}
	return a * b
}

// staticTrip is a loop's trip count when its bounds are constants, 64
// otherwise.
func staticTrip(lb, ub, step *ir.Value) int64 {
	c := func(v *ir.Value) (int64, bool) {
		if def := v.DefiningOp(); def != nil && def.Name() == "arith.constant" {
			if a, ok := def.Attr("value").(ir.IntegerAttr); ok {
				return a.Value, true
			}
		}
		return 0, false
	}
	l, ok1 := c(lb)
	u, ok2 := c(ub)
	s, ok3 := c(step)
	if !ok1 || !ok2 || !ok3 || s <= 0 {
		return 64
	}
	return max(0, (u-l+s-1)/s)
}

// kt translates one kernel.
type kt struct {
	t    *translator
	f    *llir.Func
	cur  *llir.Block
	vals map[*ir.Value]value.Value
	// dims holds each buffer's sizes (constants or parameters).
	dims   map[*ir.Value][]value.Value
	blocks int
	kern   *Kernel
	// reductions are the ops that combine a loop's accumulator with a new
	// value: their float operations may be reassociated.
	reductions map[*ir.Operation]bool
	// maxmin maps a select that is a NaN-propagating max or min of an
	// accumulator to the intrinsic that computes it.
	maxmin map[*ir.Operation]string
	// reuseStore and reuseLoad are the values an earlier row loop stores
	// for a later one to load (reuse.go).
	reuseStore map[*ir.Operation][]*reused
	reuseLoad  map[*ir.Operation]*reused
	// moments are the sum and sum-of-squares loops computed in one pass
	// (moments.go), by both loops.
	moments map[*ir.Operation]*moments
	// checked are the loads and stores with data-dependent indices, and
	// fault the kernel's fault words (checked.go).
	checked map[*ir.Operation]bool
	fault   value.Value
}

func (k *kt) newBlock(hint string) *llir.Block {
	k.blocks++
	return k.f.NewBlock(fmt.Sprintf("%s%d", hint, k.blocks))
}

func (k *kt) get(v *ir.Value) value.Value { return k.vals[v] }

func (k *kt) set(op *ir.Operation, vs ...value.Value) {
	for i, v := range vs {
		k.vals[op.Result(i)] = v
	}
}

func i64(v int64) *constant.Int { return constant.NewInt(types.I64, v) }

// loopBody is called with a loop's induction value and iteration values
// and returns the next iteration values.
type loopBody func(iv value.Value, iters []value.Value) ([]value.Value, error)

// vecHint is what a loop asks of LLVM's loop vectorizer.
type vecHint int

const (
	// vecAny leaves the choice to the vectorizer's cost model.
	vecAny vecHint = iota
	// vecOn asks for the loop to be vectorized.
	vecOn
	// vecOff keeps the loop scalar (where the cost model would choose
	// gathers that are slower than scalar loads).
	vecOff
)

// vecIf returns vecOn when b holds, else vecAny.
func vecIf(b bool) vecHint {
	if b {
		return vecOn
	}
	return vecAny
}

// loop emits `for iv = lb; iv < ub; iv += step` carrying inits and
// returns the final iteration values; hint says whether LLVM should
// vectorize it.
func (k *kt) loop(lb, ub, step value.Value, inits []value.Value, hint vecHint, body loopBody) ([]value.Value, error) {
	pre := k.cur
	header, entry, exit := k.newBlock("loop"), k.newBlock("body"), k.newBlock("exit")
	pre.NewBr(header)
	iv := header.NewPhi(llir.NewIncoming(lb, pre))
	phis := make([]*llir.InstPhi, len(inits))
	iters := make([]value.Value, len(inits))
	for i, in := range inits {
		phis[i] = header.NewPhi(llir.NewIncoming(in, pre))
		iters[i] = phis[i]
	}
	header.NewCondBr(header.NewICmp(enum.IPredSLT, iv, ub), entry, exit)
	k.cur = entry
	next, err := body(iv, iters)
	if err != nil {
		return nil, err
	}
	latch := k.cur
	inc := latch.NewAdd(iv, step)
	inc.OverflowFlags = []enum.OverflowFlag{enum.OverflowFlagNSW}
	iv.Incs = append(iv.Incs, llir.NewIncoming(inc, latch))
	for i, p := range phis {
		p.Incs = append(p.Incs, llir.NewIncoming(next[i], latch))
	}
	br := latch.NewBr(header)
	switch hint {
	case vecOn:
		br.Metadata = append(br.Metadata, &metadata.Attachment{Name: "llvm.loop", Node: k.t.loopHint("llvm.loop.vectorize.enable", 1, types.I1)})
	case vecOff:
		br.Metadata = append(br.Metadata, &metadata.Attachment{Name: "llvm.loop", Node: k.t.loopHint("llvm.loop.vectorize.width", 1, types.I32)})
	}
	k.enter(exit)
	return iters, nil
}

// enter makes b the block the translation writes to, moving it after
// every block created so far so that blocks print in a readable order.
func (k *kt) enter(b *llir.Block) {
	k.cur = b
	bs := k.f.Blocks
	for i, x := range bs {
		if x == b {
			copy(bs[i:], bs[i+1:])
			bs[len(bs)-1] = b
			return
		}
	}
}

// hasLoops reports whether b holds a loop.
func hasLoops(b *ir.Block) bool {
	found := false
	for _, op := range b.Ops() {
		op.Walk(func(o *ir.Operation) bool {
			if o.Name() == loop.ForOp || o.Name() == loop.ParallelOp {
				found = true
			}
			return !found
		})
	}
	return found
}

// trip returns max(0, ceil((ub - lb) / step)) for a positive step.
func (k *kt) trip(lb, ub, step value.Value) value.Value {
	b := k.cur
	n := b.NewSDiv(b.NewAdd(b.NewSub(ub, lb), b.NewSub(step, i64(1))), step)
	return b.NewSelect(b.NewICmp(enum.IPredSLT, n, i64(0)), i64(0), n)
}

// outer emits the kernel's loops over [lo, hi) of the outer range and the
// last dimension, around the nest's body.
func (k *kt) outer(nest *ir.Operation, lo, hi value.Value) error {
	body := loop.Body(nest)
	n := k.kern.Dims
	lbs := make([]value.Value, n)
	ubs := make([]value.Value, n)
	steps := make([]value.Value, n)
	for d := range n {
		lbs[d], ubs[d], steps[d] = k.get(k.kern.Lbs[d]), k.get(k.kern.Ubs[d]), k.get(k.kern.Steps[d])
	}
	innermost := !hasLoops(body)
	k.findReuse(nest, body)
	k.findMoments(nest, body)
	run := func() error {
		_, err := k.region(body)
		return err
	}
	if n == 1 {
		_, err := k.loop(lo, hi, i64(1), nil, vecIf(innermost), func(t value.Value, _ []value.Value) ([]value.Value, error) {
			m := k.cur.NewMul(t, steps[0])
			m.OverflowFlags = []enum.OverflowFlag{enum.OverflowFlagNSW}
			iv := k.cur.NewAdd(lbs[0], m)
			iv.OverflowFlags = []enum.OverflowFlag{enum.OverflowFlagNSW}
			k.vals[body.Argument(0)] = iv
			return nil, run()
		})
		return err
	}
	if k.kern.Flat {
		// Every dimension but the rows (n−2) in the outer range; the
		// rows inside each point, so that their dot products read the
		// point's row of B from the cache.
		outer := make([]int, 0, n-1)
		for d := range n {
			if d != n-2 {
				outer = append(outer, d)
			}
		}
		trips := make([]value.Value, n)
		for _, d := range outer {
			trips[d] = k.trip(lbs[d], ubs[d], steps[d])
		}
		_, err := k.loop(lo, hi, i64(1), nil, vecAny, func(t value.Value, _ []value.Value) ([]value.Value, error) {
			rem := t
			for x := len(outer) - 1; x >= 0; x-- {
				d := outer[x]
				var td value.Value = rem
				if x > 0 {
					td = k.cur.NewSRem(rem, trips[d])
					rem = k.cur.NewSDiv(rem, trips[d])
				}
				k.vals[body.Argument(d)] = k.cur.NewAdd(lbs[d], k.cur.NewMul(td, steps[d]))
			}
			_, err := k.loop(lbs[n-2], ubs[n-2], steps[n-2], nil, vecAny, func(iv value.Value, _ []value.Value) ([]value.Value, error) {
				k.vals[body.Argument(n-2)] = iv
				return nil, run()
			})
			return nil, err
		})
		return err
	}
	trips := make([]value.Value, n-1)
	for d := range n - 1 {
		trips[d] = k.trip(lbs[d], ubs[d], steps[d])
	}
	if c := k.kern.Chunk; c > 0 {
		// The last dimension in chunks of c iterations, the chunk the
		// fastest-varying part of the point.
		last := k.trip(lbs[n-1], ubs[n-1], steps[n-1])
		chunks := k.cur.NewSDiv(k.cur.NewAdd(last, i64(c-1)), i64(c))
		_, err := k.loop(lo, hi, i64(1), nil, vecAny, func(t value.Value, _ []value.Value) ([]value.Value, error) {
			chunk := k.cur.NewSRem(t, chunks)
			rem := k.cur.NewSDiv(t, chunks)
			for d := n - 2; d >= 0; d-- {
				var td value.Value = rem
				if d > 0 {
					td = k.cur.NewSRem(rem, trips[d])
					rem = k.cur.NewSDiv(rem, trips[d])
				}
				k.vals[body.Argument(d)] = k.cur.NewAdd(lbs[d], k.cur.NewMul(td, steps[d]))
			}
			first := k.cur.NewMul(chunk, i64(c))
			var end value.Value = k.cur.NewAdd(first, i64(c))
			end = k.cur.NewSelect(k.cur.NewICmp(enum.IPredSLT, end, last), end, last)
			_, err := k.loop(first, end, i64(1), nil, vecIf(innermost), func(x value.Value, _ []value.Value) ([]value.Value, error) {
				k.vals[body.Argument(n-1)] = k.cur.NewAdd(lbs[n-1], k.cur.NewMul(x, steps[n-1]))
				return nil, run()
			})
			return nil, err
		})
		return err
	}
	_, err := k.loop(lo, hi, i64(1), nil, vecAny, func(t value.Value, _ []value.Value) ([]value.Value, error) {
		rem := t
		for d := n - 2; d >= 0; d-- {
			var td value.Value = rem
			if d > 0 {
				td = k.cur.NewSRem(rem, trips[d])
				rem = k.cur.NewSDiv(rem, trips[d])
			}
			iv := k.cur.NewAdd(lbs[d], k.cur.NewMul(td, steps[d]))
			k.vals[body.Argument(d)] = iv
		}
		_, err := k.loop(lbs[n-1], ubs[n-1], steps[n-1], nil, vecIf(innermost), func(iv value.Value, _ []value.Value) ([]value.Value, error) {
			k.vals[body.Argument(n-1)] = iv
			return nil, run()
		})
		return nil, err
	})
	return err
}

// region translates the ops of b into k.cur and returns the values of
// its terminator (loop.yield or loop.reduce).
func (k *kt) region(b *ir.Block) ([]value.Value, error) {
	for _, op := range b.Ops() {
		for _, in := range op.Operands() {
			if _, ok := k.vals[in]; !ok {
				return nil, ir.Errorf(op.Loc(), "'%s': operand not available in the kernel", op.Name())
			}
		}
		switch op.Name() {
		case loop.YieldOp, loop.ReduceOp:
			out := make([]value.Value, op.NumOperands())
			for i, v := range op.Operands() {
				out[i] = k.get(v)
			}
			return out, nil
		}
		var err error
		if mo := k.moments[op]; mo != nil && op == mo.sum {
			err = k.sumPass(mo)
		} else if mo != nil && op == mo.mean {
			k.meanPass(mo)
		} else if mo != nil {
			err = k.squaresPass(mo)
		} else if r := k.reuseLoad[op]; r != nil {
			err = k.loadReused(op, r)
		} else if err = k.op(op); err == nil && k.reuseStore[op] != nil {
			err = k.storeReused(op)
		}
		if err != nil {
			if _, ok := err.(*ir.Diagnostic); ok {
				return nil, err
			}
			return nil, ir.Errorf(op.Loc(), "'%s': %v", op.Name(), err)
		}
	}
	return nil, nil
}

// markReductions records the combining ops of a loop whose block
// arguments iters are carried to the values yield returns: an addf or
// mulf of the accumulator, or a NaN-propagating max/min select.
func (k *kt) markReductions(iters []*ir.Value, yield *ir.Operation) {
	if k.reductions == nil {
		k.reductions = map[*ir.Operation]bool{}
		k.maxmin = map[*ir.Operation]string{}
	}
	for i, acc := range iters {
		if yield == nil || i >= yield.NumOperands() {
			return
		}
		def := yield.Operand(i).DefiningOp()
		if def == nil {
			continue
		}
		switch def.Name() {
		case "arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf":
			if def.Operand(0) == acc || def.Operand(1) == acc {
				k.reductions[def] = true
			}
		case "arith.select":
			if kind := maxMinSelect(def, acc); kind != "" {
				k.maxmin[def] = kind
			}
		}
	}
}
