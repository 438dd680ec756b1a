package togpu

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
)

// The values of convert-loop-to-gpu's matmul option.
const (
	// MatmulMMA runs matmul nests as Strata's own kernels with their
	// epilogue fused (the mma mapping, or SIMT).
	MatmulMMA = "mma"
	// MatmulCuBLASLt runs each matmul nest as a gpu.library_matmul that
	// cuBLASLt computes, followed by the nest's epilogue as an ordinary
	// kernel reading the product (unfused).
	MatmulCuBLASLt = "cublaslt"
)

// matmulOptions are the values of the matmul option, the default first.
var matmulOptions = []string{MatmulMMA, MatmulCuBLASLt}

// libraryMatmul is a matmul nest (see matmulNest) over bf16 or f16
// operands whose extents are the nest's, all static but perhaps M: one
// gpu.library_matmul computes its product.
type libraryMatmul struct {
	nest, kloop    *ir.Operation
	a, b           *ir.Value
	transA, transB bool // stored [K, M] and [N, K]: the library's transposes of row-major A [M, K] and B [K, N]
	elem           ir.Type
	shape          []int64 // of the product: [b…, M, N]
	// m is the nest's bound of a dynamic M, nil when M is static. The
	// library reads M off A at run time, and fails a call whose C has
	// another: mOfA says m is A's size (loop.dim), so that the library may
	// write the nest's own output, as it may when m is that output's size;
	// otherwise it writes a product buffer of m rows.
	m    *ir.Value
	mOfA bool
}

// libraryPlan recognizes a nest that gpu.library_matmul can compute. It
// returns nil and why not for a matmul nest the library cannot take, and
// nil and "" for a nest that is no matmul. The op's extents come from its
// operands, so they must be the nest's bounds: static ones, or a dynamic
// M (a graph compiled for every sequence length), which the library reads
// off A and checks against C at run time.
func libraryPlan(nest *ir.Operation) (*libraryMatmul, string) {
	mm := matchMatmul(nest)
	if mm == nil {
		return nil, ""
	}
	nb := mm.batch()
	m, n := mm.extents[nb], mm.extents[nb+1]
	var mBound *ir.Value
	mOfA := false
	if m == ir.Dynamic {
		_, ubs, _, _, _ := loop.ParallelBounds(nest)
		mBound = ubs[nb]
		mDim := nb // A [b…, M, K], or [b…, K, M] transposed
		if !mm.a.kLast {
			mDim = nb + 1
		}
		mOfA = isDimOf(mBound, mm.a.mem, mDim)
	}
	switch {
	case mm.elem != ir.BF16 && mm.elem != ir.F16:
		return nil, fmt.Sprintf("%s operands (the library takes bf16 and f16)", mm.elem)
	case slices.ContainsFunc(mm.extents, func(e int64) bool { return e < 1 && e != ir.Dynamic }):
		return nil, "an empty product"
	case n == ir.Dynamic:
		return nil, "a dynamic N (the library plan takes a dynamic M only)"
	}
	p := &libraryMatmul{nest: nest, kloop: mm.kloop, a: mm.a.mem, b: mm.b.mem, transA: !mm.a.kLast, transB: mm.b.kLast,
		elem: mm.elem, shape: mm.extents, m: mBound, mOfA: mOfA}
	// The operands' shapes must be the ones the indices imply.
	for _, f := range []struct {
		factor
		outer int64
	}{{mm.a, m}, {mm.b, n}} {
		want := []int64{mm.k, f.outer}
		if f.kLast {
			want = []int64{f.outer, mm.k}
		}
		mt, _ := f.mem.Type().(*ir.MemRefType)
		if mt == nil || !slices.Equal(mt.Shape(), append(slices.Clone(mm.extents[:nb]), want...)) {
			return nil, fmt.Sprintf("an operand of type %s read as a part of a larger buffer", f.mem.Type())
		}
	}
	return p, ""
}

// isSizeOf reports whether v is buffer m's size along d: loop.dim of it,
// or the size its loop.alloc was given.
func isSizeOf(v, m *ir.Value, d int) bool {
	if isDimOf(v, m, d) {
		return true
	}
	alloc := m.DefiningOp()
	mt, ok := m.Type().(*ir.MemRefType)
	if alloc == nil || alloc.Name() != loop.AllocOp || !ok || mt.Shape()[d] != ir.Dynamic {
		return false
	}
	// (The alloc's operands are the dynamic sizes, in order.)
	i := 0
	for _, n := range mt.Shape()[:d] {
		if n == ir.Dynamic {
			i++
		}
	}
	return i < alloc.NumOperands() && sameIndex(alloc.Operand(i), v, 8)
}

// sameIndex reports whether a and b are the same index computation: one
// value, or ops of one kind (index constants, loop.dim, arith's integer
// operations) on operands that are, up to depth ops deep. (The lowering
// computes a size once for a buffer and again for a nest's bound.)
func sameIndex(a, b *ir.Value, depth int) bool {
	if a == b {
		return true
	}
	da, db := a.DefiningOp(), b.DefiningOp()
	if depth == 0 || da == nil || db == nil || da.Name() != db.Name() || da.NumOperands() != db.NumOperands() || a.Type() != b.Type() {
		return false
	}
	switch da.Name() {
	case arith.OpConstant:
		x, ok1 := staticInt(a)
		y, ok2 := staticInt(b)
		return ok1 && ok2 && x == y
	case loop.DimOp:
		x, _ := da.Attr(loop.IndexAttr).(ir.IntegerAttr)
		y, _ := db.Attr(loop.IndexAttr).(ir.IntegerAttr)
		return x.Value == y.Value && da.Operand(0) == db.Operand(0)
	case arith.OpAddI, arith.OpMulI, arith.OpSubI, arith.OpDivUI, arith.OpRemUI, arith.OpMaxUI, arith.OpMinUI:
		for i := range da.NumOperands() {
			if !sameIndex(da.Operand(i), db.Operand(i), depth-1) {
				return false
			}
		}
		// (Flags such as overflow ones must agree too.)
		return fmt.Sprint(da.Properties(), da.Attributes()) == fmt.Sprint(db.Properties(), db.Attributes())
	}
	return false
}

// isDimOf reports whether v is loop.dim of buffer m along d.
func isDimOf(v, m *ir.Value, d int) bool {
	op := v.DefiningOp()
	if op == nil || op.Name() != loop.DimOp || op.Operand(0) != m {
		return false
	}
	i, _ := op.Attr(loop.IndexAttr).(ir.IntegerAttr)
	return i.Value == int64(d)
}

// perfHints is the log topic of the nests left on Strata's kernels under
// matmul=cublaslt or conv=cudnn (runtime/exec logs its own hints under the
// same one).
const perfHints = "perf_hints"

// perfHint logs under perfHints a remark on nest, which prints its
// location as diagnostics do (file:line:col).
func perfHint(nest *ir.Operation, msg string) {
	logs.Printf(perfHints, "%s", (&ir.Diagnostic{Loc: nest.Loc(), Severity: ir.SevRemark, Message: msg}).Error())
}

// lowerLibraryMatmuls replaces every library-computable matmul nest of fn
// by a gpu.library_matmul into a product buffer and the nest's epilogue
// reading it. When the product is only rounded to its element type (a
// bare matmul) into a buffer of that shape, the library writes that
// buffer and the nest disappears; otherwise the product buffer holds the
// rounded product when the epilogue starts by rounding it (as graph's
// matmul does), the f32 sum when it does not, and is freed after the
// nest. A matmul nest the library cannot take stays on Strata's kernels,
// with the reason under STRATA_LOGS=perf_hints.
func lowerLibraryMatmuls(ctx *ir.Context, fn *ir.Operation) {
	for _, nest := range topLevelNests(fn) {
		p, why := libraryPlan(nest)
		if p != nil {
			p.lower(ctx)
		} else if why != "" {
			perfHint(nest, "matmul nest stays on Strata's kernels, not cuBLASLt: "+why)
		}
	}
}

func (p *libraryMatmul) lower(ctx *ir.Context) {
	loc := p.nest.Loc()
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(p.nest)
	sum := p.kloop.Result(0)
	// A bias added to the sum before its rounding (graph.matmul's bias)
	// is the library's bias epilogue: one rounding, as the nest does.
	bias := p.biasAdd(sum)
	rounded := sum
	if bias != nil {
		rounded = bias.add.Result(0)
	}
	// round is the epilogue's rounding of the sum to the operands' type.
	var round *ir.Operation
	if rounded.HasOneUse() {
		if u := rounded.Users()[0]; u.Name() == arith.OpTruncF && u.Result(0).Type() == p.elem {
			round = u
		}
	}
	if round == nil {
		bias = nil // the library rounds whatever it adds: the nest adds the bias to the f32 sum itself
	}
	var biasMem *ir.Value
	if bias != nil {
		biasMem = bias.mem
	}
	// (A dynamic M that is neither A's nor the output's size: C is the
	// product buffer of the nest's M, which the library checks A against.)
	if out := p.directStore(round, bias); out != nil && (p.m == nil || p.mOfA || isSizeOf(p.m, out, len(p.shape)-2)) {
		gpu.LibraryMatmul(b, loc, p.a, p.b, out, biasMem, p.transA, p.transB)
		p.nest.Erase()
		return
	}
	elem, replaced := ir.Type(ir.F32), sum
	if round != nil {
		elem, replaced = p.elem, round.Result(0)
	}
	var sizes []*ir.Value
	if p.m != nil {
		sizes = append(sizes, p.m)
	}
	prod := loop.Alloc(b, loc, ir.MemRefOf(p.shape, elem), sizes...)
	gpu.LibraryMatmul(b, loc, p.a, p.b, prod, biasMem, p.transA, p.transB)
	body := loop.Body(p.nest)
	in := ir.NewBuilder(ctx)
	in.SetInsertionPointBefore(p.kloop)
	replaced.ReplaceAllUsesWith(loop.Load(in, loc, prod, body.Arguments()...))
	if round != nil {
		round.Erase()
	}
	if bias != nil {
		bias.erase()
	}
	p.kloop.Erase()
	b.SetInsertionPointAfter(p.nest)
	loop.Dealloc(b, loc, prod)
}

// nestBias is a matmul nest's addition of bias[j] to the f32 sum:
// addf(sum, extf(load bias[j])).
type nestBias struct {
	add, ext, load *ir.Operation
	mem            *ir.Value // the bias [N], of the operands' type, from outside the nest
}

// biasAdd returns the nest's addition of a bias [N] to sum, its only use,
// or nil.
func (p *libraryMatmul) biasAdd(sum *ir.Value) *nestBias {
	if !sum.HasOneUse() {
		return nil
	}
	add := sum.Users()[0]
	if add.Name() != arith.OpAddF || add.NumOperands() != 2 {
		return nil
	}
	other := add.Operand(1)
	if other == sum {
		other = add.Operand(0)
	}
	ext := other.DefiningOp()
	if ext == nil || ext.Name() != arith.OpExtF || ext.Operand(0).Type() != p.elem {
		return nil
	}
	ld := ext.Operand(0).DefiningOp()
	if ld == nil || ld.Name() != loop.LoadOp || ld.NumOperands() != 2 || definedIn(ld.Operand(0), p.nest) {
		return nil
	}
	n := p.shape[len(p.shape)-1]
	mt, _ := ld.Operand(0).Type().(*ir.MemRefType)
	if mt == nil || mt.ElementType() != p.elem || !slices.Equal(mt.Shape(), []int64{n}) || mt.Layout != nil || mt.MemorySpace != nil ||
		!indexes(ld.Operand(1), loop.Body(p.nest).Argument(len(p.shape)-1), n) {
		return nil
	}
	return &nestBias{add: add, ext: ext, load: ld, mem: ld.Operand(0)}
}

// erase removes the bias's addition (its result unused) and the load and
// extension that only it read.
func (nb *nestBias) erase() {
	nb.add.Erase()
	for _, o := range []*ir.Operation{nb.ext, nb.load} {
		if !o.Result(0).HasUses() {
			o.Erase()
		}
	}
}

// storeOf returns the store that is r's only use, storing r at the nest's
// variables into a buffer from outside the nest of the given shape and
// element type, and that buffer; or nils.
func storeOf(nest *ir.Operation, r *ir.Value, shape []int64, elem ir.Type) (*ir.Operation, *ir.Value) {
	if !r.HasOneUse() {
		return nil, nil
	}
	st := r.Users()[0]
	if st.Name() != loop.StoreOp || st.Operand(0) != r || definedIn(st.Operand(1), nest) ||
		!slices.Equal(st.Operands()[2:], loop.Body(nest).Arguments()) {
		return nil, nil
	}
	out := st.Operand(1)
	if mt, _ := out.Type().(*ir.MemRefType); mt == nil || !slices.Equal(mt.Shape(), shape) || mt.ElementType() != elem {
		return nil, nil
	}
	return st, out
}

// directStore returns the buffer the nest stores the rounded product
// (plus bias, when not nil) into at [b…, i, j] when that is all the nest
// does besides constants, or nil.
func (p *libraryMatmul) directStore(round *ir.Operation, bias *nestBias) *ir.Value {
	if round == nil {
		return nil
	}
	st, out := storeOf(p.nest, round.Result(0), p.shape, p.elem)
	if st == nil {
		return nil
	}
	for _, o := range loop.Body(p.nest).Ops() {
		if o == p.kloop || o == round || o == st || o.HasTrait(ir.Terminator) || o.Name() == arith.OpConstant {
			continue
		}
		if bias == nil || (o != bias.add && o != bias.ext && o != bias.load) {
			return nil
		}
	}
	return out
}
