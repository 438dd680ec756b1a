package llvm

import (
	"fmt"
	"maps"
	"strings"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// Vector accesses. convert-loop-to-gpu's vectorized pointwise mapping
// clones the V points of a chunk op-major, so the V loads (stores) of one
// buffer are adjacent ops at indices base, base+1, …, base+V-1 with base =
// x·c and V dividing c. Such a run becomes one `<V x T>` access: with the
// buffer's base pointer 16-byte aligned (kernel ABI), base·sizeof(T) is a
// multiple of V·sizeof(T), so the vector access is naturally aligned.
// Merging adjacent accesses of one buffer never reorders a load with a
// store, so it is correct wherever the pattern appears.

// maxVectorBytes is the widest access (ld.global.v4.f32, 16 bytes): four
// lanes of 4 bytes, two of 8, or eight of 2 (which PTX moves as four
// 32-bit words).
const maxVectorBytes = 16

// vectorRun returns the accesses of the vector run starting at ops[i]
// (nil when it does not start one). Between the accesses there may be
// ops without memory effects (arith, math: the index arithmetic that
// flattening N-D accesses puts before each access); a load run is
// translated at its first load, a store run at its last store.
func vectorRun(ops []*ir.Operation, i int) []*ir.Operation {
	first := ops[i]
	name := first.Name()
	if (name != loop.LoadOp || first.NumOperands() != 2) && (name != loop.StoreOp || first.NumOperands() != 3) {
		return nil
	}
	mem, idx := accessOf(first)
	mt, ok := mem.Type().(*ir.MemRefType)
	if !ok {
		return nil
	}
	size := elemBytes(mt.ElementType())
	if size == 0 {
		return nil
	}
	base := linear(idx)
	run := []*ir.Operation{first}
	for j := i + 1; j < len(ops) && int64(len(run)+1)*size <= maxVectorBytes; j++ {
		o := ops[j]
		if pure(o) {
			continue
		}
		if o.Name() != name || o.NumOperands() != first.NumOperands() {
			break
		}
		m, x := accessOf(o)
		if m != mem || !linear(x).follows(base, int64(len(run))) {
			break
		}
		run = append(run, o)
	}
	align := base.multiple()
	v := 1
	for v*2 <= len(run) && align%int64(v*2) == 0 {
		v *= 2
	}
	if v < 2 {
		return nil
	}
	return run[:v]
}

// pure reports whether an op has no memory effects and no regions, so
// that accesses may move across it.
func pure(o *ir.Operation) bool {
	if o.NumRegions() > 0 {
		return false
	}
	d := o.Name()
	return strings.HasPrefix(d, "arith.") || strings.HasPrefix(d, "math.")
}

// affine is an index as a sum of terms (values that are not arith.addi or
// constants) plus a constant.
type affine struct {
	terms map[*ir.Value]int // term → how many times it is added
	off   int64
}

// linear flattens the arith.addi tree of an index.
func linear(v *ir.Value) affine {
	a := affine{terms: map[*ir.Value]int{}}
	var walk func(v *ir.Value, depth int)
	walk = func(v *ir.Value, depth int) {
		if c, ok := constIndex(v); ok {
			a.off += c
			return
		}
		if d := v.DefiningOp(); d != nil && d.Name() == arith.OpAddI && depth < 8 {
			walk(d.Operand(0), depth+1)
			walk(d.Operand(1), depth+1)
			return
		}
		a.terms[v]++
	}
	walk(v, 0)
	return a
}

// follows reports whether a is base + off.
func (a affine) follows(base affine, off int64) bool {
	return a.off == base.off+off && maps.Equal(a.terms, base.terms)
}

// multiple returns a number the index is known to be a multiple of.
func (a affine) multiple() int64 {
	g := abs(a.off)
	for t := range a.terms {
		g = gcd(g, loop.KnownMultiple(t))
	}
	if g == 0 {
		return 1 // the index is the constant 0 (or its terms are): aligned
	}
	return g
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func abs(x int64) int64 { return max(x, -x) }

// accessOf returns the buffer and index of a 1-D load or store.
func accessOf(o *ir.Operation) (mem, idx *ir.Value) {
	if o.Name() == loop.StoreOp {
		return o.Operand(1), o.Operand(2)
	}
	return o.Operand(0), o.Operand(1)
}

// elemBytes is the in-memory size of the element types vector accesses
// take (0 for i1, stored as bytes, and other types).
func elemBytes(t ir.Type) int64 {
	switch t := t.(type) {
	case *ir.FloatType:
		switch t {
		case ir.F16, ir.BF16:
			return 2
		case ir.F32:
			return 4
		case ir.F64:
			return 8
		}
	case *ir.IntegerType:
		switch t.Width {
		case 16, 32, 64:
			return int64(t.Width / 8)
		}
	}
	return 0
}

// constIndex returns the value of an integer or index arith.constant.
func constIndex(v *ir.Value) (int64, bool) {
	d := v.DefiningOp()
	if d == nil || d.Name() != arith.OpConstant {
		return 0, false
	}
	a, ok := d.Attr("value").(ir.IntegerAttr)
	return a.Value, ok
}

// vectorAccess translates a run as one vector load or store at the first
// access's index.
func (k *kernelTranslator) vectorAccess(run []*ir.Operation) error {
	first := run[0]
	mem, base := accessOf(first)
	p, elem, err := k.address(mem, base)
	if err != nil {
		return err
	}
	v := len(run)
	vt := types.NewVector(uint64(v), elem)
	space := p.Type().(*types.PointerType).AddrSpace
	vp := k.cur.NewBitCast(p, pointerTo(vt, space))
	align := llir.Align(int64(v) * elemBytes(mem.Type().(*ir.MemRefType).ElementType()))
	if first.Name() == loop.LoadOp {
		if suffix, con, ok := evictLastLoad(run, elem, space); ok {
			k.evictLastLoad(run, p, elem, suffix, con)
			return nil
		}
		ld := k.cur.NewLoad(vt, vp)
		ld.Align = align
		for j, o := range run {
			k.set(o, k.cur.NewExtractElement(ld, constant.NewInt(types.I32, int64(j))))
		}
		return nil
	}
	var vec llvmValue = constant.NewUndef(vt)
	for j, o := range run {
		vec = k.cur.NewInsertElement(vec, k.get(o.Operand(0)), constant.NewInt(types.I32, int64(j)))
	}
	st := k.cur.NewStore(vec, vp)
	st.Align = align
	return nil
}

// evictLastLoad reports whether a load run carries loop.evict_last on
// every load and reads a vector of 32-bit elements of global memory, with
// the PTX type suffix and inline-asm constraint of its elements.
func evictLastLoad(run []*ir.Operation, elem types.Type, space types.AddrSpace) (suffix, con string, ok bool) {
	if space != 1 {
		return "", "", false
	}
	for _, o := range run {
		if o.Attr(loop.EvictLastAttr) == nil {
			return "", "", false
		}
	}
	switch {
	case elem.Equal(types.Float):
		return "f32", "=f", true
	case elem.Equal(types.I32):
		return "b32", "=r", true
	}
	return "", "", false
}

// evictLastLoad translates a load run as inline PTX: an L2::evict_last
// cache policy, then ld.global.L1::evict_last.L2::cache_hint of the
// run's lanes (bench/NOTES.md, session 4: the layer norm's rows ran 3%
// faster so, as Triton loads them).
func (k *kernelTranslator) evictLastLoad(run []*ir.Operation, p llvmValue, elem types.Type, suffix, con string) {
	v := len(run)
	regs, cons := make([]string, v), make([]string, v)
	for j := range v {
		regs[j], cons[j] = fmt.Sprintf("$%d", j), con
	}
	cons = append(cons, "l")
	asm := fmt.Sprintf("{\n.reg .b64 %%evl;\ncreatepolicy.fractional.L2::evict_last.b64 %%evl, 1.0;\n"+
		"ld.global.L1::evict_last.L2::cache_hint.v%d.%s {%s}, [$%d], %%evl;\n}", v, suffix, strings.Join(regs, ", "), v)
	ret := fragment(elem, v)
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(ret, types.I64)), asm, strings.Join(cons, ","))
	ia.SideEffect = true // a load: not moved across stores, not merged
	r := k.cur.NewCall(ia, k.cur.NewPtrToInt(p, types.I64))
	for j, o := range run {
		k.set(o, k.cur.NewExtractValue(r, uint64(j)))
	}
}
