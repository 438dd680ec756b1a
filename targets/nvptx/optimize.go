package nvptx

import (
	"fmt"
	"reflect"
	"strings"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// The driver JIT-compiles PTX at module load, in time that grows with its
// length (bench/NOTES.md), so the native backend writes as few lines as
// it can.
// plan is what it learns about a kernel before selecting instructions:
// which instructions matter, which results are known constants, which
// are plain copies of an operand, and which addresses fold into a memory
// operand. Nothing here changes the llir module.
type plan struct {
	// live holds the instructions whose results something with an effect
	// (a store, a call with effects, a branch) depends on; the others
	// are not emitted.
	live map[llir.Instruction]bool
	// folded holds the results computed at compile time from constant
	// operands (the bf16 widening of a constant, a bitcast of one).
	folded map[value.Value]scalarConst
	// memOff holds the geps whose every use is the address of a load, a
	// store or a `[{i}]` intrinsic operand, with their constant byte
	// offset: the gep computes only the rest and the offset goes into the
	// address, as [%rd+16].
	memOff map[value.Value]int64
	// gepIndex holds the address-only geps whose one index is rewritten
	// (see rewriteIndex); their constant part is already in memOff.
	gepIndex map[*llir.InstGetElementPtr]value.Value
	// gepSame holds the address-only geps that compute the same register
	// part as an earlier one of their block (same base, element type and
	// index), with that gep: they share its register.
	gepSame map[*llir.InstGetElementPtr]*llir.InstGetElementPtr
	// same holds the pure instructions that repeat an earlier one of their
	// block (the same operation on the same operands), with that one:
	// they share its registers. targets/llvm widens a bf16 value at each
	// use, for one.
	same map[llir.Instruction]llir.Instruction
	// minmax holds the selects that are a NaN-propagating maximum or
	// minimum of f32 (see minMaxOf), as "max" or "min".
	minmax map[*llir.InstSelect]string
	// bf16Round holds the truncs that end targets/llvm's round of an f32
	// to bf16 bits (see bf16RoundOf), with the f32: cvt.rn.bf16.f32.
	bf16Round map[*llir.InstTrunc]value.Value
	// bf16Widen holds the bitcasts that end the widening of bf16 bits to
	// f32 (see bf16WidenOf), with the i16: cvt.f32.bf16 (sm_90).
	bf16Widen map[*llir.InstBitCast]value.Value
	// pack16 holds the ors that put two i16 values into the halves of an
	// i32 (see pack16Of), with the low and the high half: one mov.b32
	// from the pair, or one cvt.rn.bf16x2.f32 (cvt.rn.f16x2.f32) when
	// both halves are bf16Round's (f32s truncated to half: roundPair;
	// inputs then reads their f32s).
	pack16 map[*llir.InstOr][2]value.Value
	// bf16Snap holds the widenings to f32 (bf16WidenOf's form) of a
	// bf16Round, with the f32 it rounds: the f32 rounded to bf16
	// precision, one cvt.rn.bf16x2.f32 with a zero lower half.
	bf16Snap map[*llir.InstBitCast]value.Value
}

// scalarConst is a scalar constant known as the bits of its kind.
type scalarConst struct {
	k    scalarKind
	bits uint64
}

// operandsOf is implemented by every llir instruction and terminator.
type operandsOf interface{ Operands() []*value.Value }

// analyze builds the plan of f for a target.
func analyze(f *llir.Func, target string) *plan {
	// The live set holds most instructions: sized once, not grown.
	insts := 0
	for _, b := range f.Blocks {
		insts += len(b.Insts)
	}
	p := &plan{
		live:      make(map[llir.Instruction]bool, insts),
		folded:    map[value.Value]scalarConst{},
		memOff:    map[value.Value]int64{},
		gepIndex:  map[*llir.InstGetElementPtr]value.Value{},
		gepSame:   map[*llir.InstGetElementPtr]*llir.InstGetElementPtr{},
		same:      map[llir.Instruction]llir.Instruction{},
		minmax:    map[*llir.InstSelect]string{},
		bf16Round: map[*llir.InstTrunc]value.Value{},
		bf16Widen: map[*llir.InstBitCast]value.Value{},
		pack16:    map[*llir.InstOr][2]value.Value{},
		bf16Snap:  map[*llir.InstBitCast]value.Value{},
	}
	for _, b := range f.Blocks {
		for _, in := range b.Insts {
			switch in := in.(type) {
			case *llir.InstSelect:
				if m := minMaxOf(in); m != "" {
					p.minmax[in] = m
				}
			case *llir.InstTrunc:
				if x := bf16RoundOf(in); x != nil {
					p.bf16Round[in] = x
				}
			case *llir.InstOr:
				if lo, hi := pack16Of(in); lo != nil {
					p.pack16[in] = [2]value.Value{lo, hi}
				}
			case *llir.InstBitCast:
				// cvt.f32.bf16 is new in sm_90.
				if t := bf16WidenOf(in); t != nil && strings.HasPrefix(target, "sm_90") {
					p.bf16Widen[in] = t
				}
			}
		}
	}
	// (After the loop: a widening may come before its round in block
	// order.)
	for _, b := range f.Blocks {
		for _, in := range b.Insts {
			if w, ok := in.(*llir.InstBitCast); ok {
				if t, ok := bf16WidenOf(w).(*llir.InstTrunc); ok && p.bf16Round[t] != nil {
					p.bf16Snap[w] = p.bf16Round[t]
					delete(p.bf16Widen, w)
				}
			}
		}
	}
	p.markLive(f)
	p.findMemOffsets(f)
	p.rewriteIndices(f)
	// The rewritten geps no longer read the adds they skipped.
	clear(p.live)
	p.markLive(f)
	// Folding follows definitions; a result used before its definition
	// in block order (a loop) waits for the next round.
	for changed := true; changed; {
		changed = false
		for _, b := range f.Blocks {
			for _, in := range b.Insts {
				v, ok := in.(value.Value)
				if !ok || !p.live[in] {
					continue
				}
				if _, done := p.folded[v]; done {
					continue
				}
				if c, ok := p.fold(in); ok {
					p.folded[v] = c
					changed = true
				}
			}
		}
	}
	p.findRepeats(f)
	return p
}

// findRepeats fills same: local value numbering of the pure instructions
// of each block (geps are gepSame's, copies share registers anyway).
func (p *plan) findRepeats(f *llir.Func) {
	typeText := map[types.Type]string{} // texts of the result types
	consts := map[value.Value]string{}  // texts of constant operands
	seen := map[repeatKey]llir.Instruction{}
	for _, b := range f.Blocks {
		clear(seen)
		for _, in := range b.Insts {
			v, ok := in.(value.Value)
			if !ok || !p.live[in] || p.isCopy(in) {
				continue
			}
			if _, folded := p.folded[v]; folded {
				continue
			}
			key := repeatKey{kind: reflect.TypeOf(in)}
			switch in := in.(type) {
			case *llir.InstICmp:
				key.extra = in.Pred.String()
			case *llir.InstFCmp:
				key.extra = in.Pred.String()
			case *llir.InstSelect:
				key.extra = p.minmax[in]
			case *llir.InstTrunc:
				key.flags[0] = p.bf16Round[in] != nil
			case *llir.InstBitCast:
				key.flags = [2]bool{p.bf16Widen[in] != nil, p.bf16Snap[in] != nil}
			case *llir.InstOr:
				if _, key.flags[0] = p.pack16[in]; key.flags[0] {
					// (Its inputs may be the f32s of a rounded pair:
					// which rounding tells bf16 and f16 pairs apart.)
					_, _, key.extra = p.roundPair(in)
				}
			case *llir.InstCall:
				if hasEffects(in) {
					continue
				}
			case *llir.InstLoad, *llir.InstPhi, *llir.InstGetElementPtr, *llir.InstAlloca:
				continue
			}
			t := v.Type()
			text, ok := typeText[t]
			if !ok {
				text = t.String()
				typeText[t] = text
			}
			key.typ = text
			var more strings.Builder
			for i, x := range p.inputs(in) {
				arg := repeatArg{v: x}
				if _, isConst := x.(constant.Constant); isConst {
					c, ok := consts[x]
					if !ok {
						c = x.String()
						consts[x] = c
					}
					arg = repeatArg{c: c}
				}
				if i < len(key.args) {
					key.args[i] = arg
				} else {
					fmt.Fprintf(&more, " %p %q", arg.v, arg.c)
				}
				key.n++
			}
			key.more = more.String()
			if first, ok := seen[key]; ok {
				p.same[in] = first
			} else {
				seen[key] = in
			}
		}
	}
}

// repeatKey identifies a pure instruction for findRepeats: equal keys are
// the same operation (Go type, result type, predicate or flags) on the
// same operands (the same values, or constants of the same text).
type repeatKey struct {
	kind  reflect.Type
	typ   string
	extra string
	flags [2]bool
	n     int
	args  [3]repeatArg
	more  string // the operands past three
}

// repeatArg is an operand in a repeatKey: a value, or a constant's text.
type repeatArg struct {
	v value.Value
	c string
}

// inputs returns the values an instruction reads: for a select selected
// as max/min, only the two values.
func (p *plan) inputs(in operandsOf) []value.Value {
	if i, ok := in.(llir.Instruction); ok && p.same[i] != nil {
		return []value.Value{p.same[i].(value.Value)}
	}
	switch in := in.(type) {
	case *llir.InstSelect:
		if p.minmax[in] != "" {
			return []value.Value{in.ValueTrue, in.ValueFalse}
		}
	case *llir.InstTrunc:
		if x := p.bf16Round[in]; x != nil {
			return []value.Value{x}
		}
	case *llir.InstBitCast:
		if t := p.bf16Widen[in]; t != nil {
			return []value.Value{t}
		}
		if x := p.bf16Snap[in]; x != nil {
			return []value.Value{x}
		}
	case *llir.InstOr:
		if pair, ok := p.pack16[in]; ok {
			if lo, hi, _ := p.roundPair(in); lo != nil {
				return []value.Value{lo, hi}
			}
			return pair[:]
		}
	case *llir.InstGetElementPtr:
		if g := p.gepSame[in]; g != nil {
			return []value.Value{g}
		}
		if x := p.gepIndex[in]; x != nil {
			return []value.Value{in.Src, x}
		}
	}
	var vs []value.Value
	for _, op := range in.Operands() {
		vs = append(vs, *op)
	}
	return vs
}

// markLive marks, from the instructions with effects and the
// terminators, every instruction whose result is needed.
func (p *plan) markLive(f *llir.Func) {
	var work []llir.Instruction
	mark := func(in llir.Instruction) {
		if !p.live[in] {
			p.live[in] = true
			work = append(work, in)
		}
	}
	markValue := func(v value.Value) {
		if in, ok := v.(llir.Instruction); ok {
			mark(in)
		}
	}
	for _, b := range f.Blocks {
		for _, in := range b.Insts {
			if hasEffects(in) {
				mark(in)
			}
		}
		for _, v := range p.inputs(b.Term) {
			markValue(v)
		}
	}
	for len(work) > 0 {
		in := work[len(work)-1]
		work = work[:len(work)-1]
		for _, v := range p.inputs(in) {
			markValue(v)
		}
	}
}

// hasEffects reports whether an instruction must stay even when its
// result is unused: stores, volatile loads and calls of intrinsics that
// synchronize, move data or are not known to be pure.
func hasEffects(in llir.Instruction) bool {
	switch in := in.(type) {
	case *llir.InstStore:
		return true
	case *llir.InstLoad:
		return in.Volatile || in.Atomic
	case *llir.InstCall:
		f, ok := in.Callee.(*llir.Func)
		return !ok || !isPure(f.Name())
	}
	return false
}

// minMaxOf recognizes the NaN-propagating f32 maximum (minimum) that
// convert-graph-to-loop writes for reduce_max (reduce_min),
//
//	select(or(fcmp ogt (olt) x, y, fcmp uno x, x), x, y)
//
// which is max.NaN.f32 (min.NaN.f32) but for the sign of a zero result
// when x and y are zeros of opposite signs: the select keeps y, max.NaN
// orders -0 below +0. A reduction's zero sign already depends on the
// order the GPU combines partial results in.
func minMaxOf(s *llir.InstSelect) string {
	if !types.Equal(s.Typ, types.Float) {
		return ""
	}
	or, ok := s.Cond.(*llir.InstOr)
	if !ok {
		return ""
	}
	c, cok := or.X.(*llir.InstFCmp)
	n, nok := or.Y.(*llir.InstFCmp)
	x, y := s.ValueTrue, s.ValueFalse
	if !cok || !nok || n.Pred != enum.FPredUNO || n.X != x || n.Y != x || c.X != x || c.Y != y {
		return ""
	}
	switch c.Pred {
	case enum.FPredOGT:
		return "max"
	case enum.FPredOLT:
		return "min"
	}
	return ""
}

// constOf returns the scalar constant v is, if it is one.
func (p *plan) constOf(v value.Value) (scalarConst, bool) {
	if c, ok := p.folded[v]; ok {
		return c, true
	}
	if ci, ok := v.(*constant.Index); ok {
		v = ci.Constant
	}
	k, err := scalarOf(v.Type())
	if err != nil || k.ptr {
		return scalarConst{}, false
	}
	switch c := v.(type) {
	case *constant.Int:
		return scalarConst{k, intBits(c) & widthMask(k.bits)}, true
	case *constant.Float:
		bits, err := floatBits(c, k)
		return scalarConst{k, bits}, err == nil
	case *constant.ZeroInitializer:
		return scalarConst{k, 0}, true
	}
	return scalarConst{}, false
}

// widthMask keeps the low n bits.
func widthMask(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// signExtend reads the low n bits of x as a signed number.
func signExtend(x uint64, n int) uint64 {
	if n >= 64 {
		return x
	}
	s := 64 - n
	return uint64(int64(x<<s) >> s)
}

// fold computes an integer operation or a cast of constants.
func (p *plan) fold(in llir.Instruction) (scalarConst, bool) {
	v := in.(value.Value)
	k, err := scalarOf(v.Type())
	if err != nil || k.class == classPred || k.ptr {
		return scalarConst{}, false
	}
	ops := p.inputs(in)
	cs := make([]scalarConst, len(ops))
	for i, op := range ops {
		c, ok := p.constOf(op)
		if !ok {
			return scalarConst{}, false
		}
		cs[i] = c
	}
	res := func(bits uint64) (scalarConst, bool) { return scalarConst{k, bits & widthMask(k.bits)}, true }
	if b, ok := in.(*llir.InstBitCast); ok && p.bf16Widen[b] != nil {
		return res(cs[0].bits << 16)
	}
	if b, ok := in.(*llir.InstBitCast); ok && p.bf16Snap[b] != nil {
		return scalarConst{}, false // rounding a constant: left to cvt
	}
	if t, ok := in.(*llir.InstTrunc); ok && p.bf16Round[t] != nil {
		return scalarConst{}, false // rounding a constant: rare, left to cvt
	}
	if o, ok := in.(*llir.InstOr); ok {
		if _, pack := p.pack16[o]; pack {
			if lo, _, _ := p.roundPair(o); lo != nil {
				return scalarConst{}, false // two constants rounded: left to cvt
			}
			return res(cs[0].bits&0xffff | cs[1].bits<<16)
		}
	}
	switch in.(type) {
	case *llir.InstZExt, *llir.InstTrunc:
		return res(cs[0].bits)
	case *llir.InstSExt:
		return res(signExtend(cs[0].bits, cs[0].k.bits))
	case *llir.InstBitCast:
		if cs[0].k.bits == k.bits {
			return res(cs[0].bits)
		}
		return scalarConst{}, false
	}
	if k.float || len(cs) != 2 {
		return scalarConst{}, false
	}
	x, y := cs[0].bits, cs[1].bits
	switch in.(type) {
	case *llir.InstAdd:
		return res(x + y)
	case *llir.InstSub:
		return res(x - y)
	case *llir.InstMul:
		return res(x * y)
	case *llir.InstAnd:
		return res(x & y)
	case *llir.InstOr:
		return res(x | y)
	case *llir.InstXor:
		return res(x ^ y)
	}
	if y >= uint64(k.bits) {
		return scalarConst{}, false // poison in LLVM: leave it to the instruction
	}
	switch in.(type) {
	case *llir.InstShl:
		return res(x << y)
	case *llir.InstLShr:
		return res(x >> y)
	case *llir.InstAShr:
		return res(uint64(int64(signExtend(x, k.bits)) >> y))
	}
	return scalarConst{}, false
}

// gepOffset returns the constant byte offset of a gep whose indices are
// all constants.
func gepOffset(elem types.Type, indices []value.Value) (int64, bool) {
	var offset int64
	t := elem
	for i, x := range indices {
		if ci, ok := x.(*constant.Index); ok {
			x = ci.Constant
		}
		c, ok := x.(*constant.Int)
		if !ok || !c.X.IsInt64() {
			return 0, false
		}
		n := c.X.Int64()
		if i > 0 {
			switch tt := t.(type) {
			case *types.ArrayType:
				t = tt.ElemType
			case *types.VectorType:
				t = tt.ElemType
			case *types.StructType:
				if n < 0 || n >= int64(len(tt.Fields)) {
					return 0, false
				}
				_, off, err := structLayout(tt, int(n))
				if err != nil {
					return 0, false
				}
				offset += off
				t = tt.Fields[n]
				continue
			default:
				return 0, false
			}
		}
		size, err := sizeOf(t)
		if err != nil {
			return 0, false
		}
		offset += n * size
	}
	return offset, true
}

// findMemOffsets records the geps used only as memory addresses, with
// their constant part. A pointer bitcast (to a vector's pointer) is
// looked through: its uses count as the gep's.
func (p *plan) findMemOffsets(f *llir.Func) {
	type use struct {
		user      llir.Instruction
		asAddress bool
	}
	uses := map[value.Value][]use{}
	add := func(user llir.Instruction, v value.Value, asAddress bool) {
		uses[v] = append(uses[v], use{user, asAddress})
	}
	for _, b := range f.Blocks {
		for _, in := range b.Insts {
			if !p.live[in] {
				continue
			}
			switch in := in.(type) {
			case *llir.InstLoad:
				add(in, in.Src, true)
				continue
			case *llir.InstStore:
				add(in, in.Dst, true)
				add(in, in.Src, false)
				continue
			case *llir.InstCall:
				if f, ok := in.Callee.(*llir.Func); ok {
					for i, a := range in.Args {
						add(in, a, intrinsics[f.Name()].isAddress(i))
					}
					continue
				}
			}
			for _, v := range p.inputs(in) {
				add(in, v, false)
			}
		}
		for _, v := range p.inputs(b.Term) {
			add(nil, v, false)
		}
	}
	var addressOnly func(v value.Value) bool
	addressOnly = func(v value.Value) bool {
		for _, u := range uses[v] {
			if u.asAddress {
				continue
			}
			if c, ok := u.user.(*llir.InstBitCast); ok && isPointerCast(c) && addressOnly(c) {
				continue
			}
			return false
		}
		return true
	}
	for v := range uses {
		if g, ok := v.(*llir.InstGetElementPtr); ok && addressOnly(g) {
			p.memOff[v] = constPart(g)
		}
	}
}

// isPointerCast reports whether a bitcast only retypes a pointer (same
// address space): the address is the same register.
func isPointerCast(c *llir.InstBitCast) bool {
	from, fok := c.From.Type().(*types.PointerType)
	to, tok := c.To.(*types.PointerType)
	return fok && tok && from.AddrSpace == to.AddrSpace
}

// rewriteIndices moves the constants of address-only geps' indices into
// their offsets and lets geps of a block that compute the same register
// part share one. Unrolled loops index base + k: the loads of a row
// become [%rd+0], [%rd+4096], ... of one address.
func (p *plan) rewriteIndices(f *llir.Func) {
	// Where each add is, and the adds by operands.
	type place struct {
		b *llir.Block
		i int
	}
	at := map[value.Value]place{}
	adds := map[[2]value.Value][]*llir.InstAdd{}
	for _, b := range f.Blocks {
		for i, in := range b.Insts {
			if a, ok := in.(*llir.InstAdd); ok && p.live[in] {
				at[a] = place{b, i}
				adds[[2]value.Value{a.X, a.Y}] = append(adds[[2]value.Value{a.X, a.Y}], a)
				if a.X != a.Y {
					adds[[2]value.Value{a.Y, a.X}] = append(adds[[2]value.Value{a.Y, a.X}], a)
				}
			}
		}
	}
	// sumBefore finds y + z computed before idx in idx's block: it
	// dominates idx, so every use of idx.
	sumBefore := func(y, z value.Value, idx value.Value) value.Value {
		where := at[idx]
		for _, a := range adds[[2]value.Value{y, z}] {
			if w := at[a]; w.b == where.b && w.i < where.i {
				return a
			}
		}
		return nil
	}
	for _, b := range f.Blocks {
		type key struct {
			src, idx value.Value
			elem     string
		}
		first := map[key]*llir.InstGetElementPtr{}
		for _, in := range b.Insts {
			g, ok := in.(*llir.InstGetElementPtr)
			if !ok {
				continue
			}
			if _, ok := p.memOff[g]; !ok || len(g.Indices) != 1 || !types.Equal(g.Indices[0].Type(), types.I64) {
				continue
			}
			if _, ok := g.Indices[0].(constant.Constant); ok {
				continue
			}
			idx := g.Indices[0]
			if x, c, ok := rewriteIndex(idx, sumBefore); ok {
				size, err := sizeOf(g.ElemType)
				if err != nil {
					continue
				}
				p.gepIndex[g] = x
				p.memOff[g] += c * size
				idx = x
			}
			k := key{g.Src, idx, g.ElemType.String()}
			if prev := first[k]; prev != nil {
				p.gepSame[g] = prev
			} else {
				first[k] = g
			}
		}
	}
}

// rewriteIndex writes an i64 index as x + c, where x is an operand of the
// index (x + c itself), or y + z for an index y + (z + c) when sumBefore
// finds y + z. Adds wrap as addresses do, so the rewrite is exact.
func rewriteIndex(idx value.Value, sumBefore func(y, z, idx value.Value) value.Value) (value.Value, int64, bool) {
	split := func(v value.Value) (value.Value, int64, bool) {
		a, ok := v.(*llir.InstAdd)
		if !ok {
			return nil, 0, false
		}
		for _, o := range [][2]value.Value{{a.X, a.Y}, {a.Y, a.X}} {
			if c, ok := o[1].(*constant.Int); ok && c.X.IsInt64() {
				return o[0], c.X.Int64(), true
			}
		}
		return nil, 0, false
	}
	if x, c, ok := split(idx); ok {
		return x, c, true
	}
	a, ok := idx.(*llir.InstAdd)
	if !ok {
		return nil, 0, false
	}
	for _, o := range [][2]value.Value{{a.X, a.Y}, {a.Y, a.X}} {
		if z, c, ok := split(o[1]); ok {
			if sum := sumBefore(o[0], z, idx); sum != nil {
				return sum, c, true
			}
		}
	}
	return nil, 0, false
}

// constPart is the byte offset a gep's constant indices contribute, its
// variable indices taken as zero: the part that can move into an address.
func constPart(g *llir.InstGetElementPtr) int64 {
	idx := make([]value.Value, len(g.Indices))
	for i, x := range g.Indices {
		if ci, ok := x.(*constant.Index); ok {
			x = ci.Constant
		}
		if _, ok := x.(*constant.Int); !ok {
			x = constant.NewInt(types.I64, 0)
		}
		idx[i] = x
	}
	off, ok := gepOffset(g.ElemType, idx)
	if !ok {
		return 0
	}
	return off
}

// intBits returns an integer constant as two's-complement bits.
func intBits(c *constant.Int) uint64 {
	if c.X.IsInt64() {
		return uint64(c.X.Int64())
	}
	return c.X.Uint64()
}

// isInt reports whether v is the integer constant n.
func isInt(v value.Value, n int64) bool {
	c, ok := v.(*constant.Int)
	return ok && c.X.IsInt64() && c.X.Int64() == n
}

// bf16RoundOf recognizes the round to nearest even of an f32 x to bf16
// bits that targets/llvm writes (fromF32),
//
//	u = bitcast x to i32
//	rounded = (u + 0x7fff + ((u >> 16) & 1)) >> 16
//	nan = (u | 0x400000) >> 16
//	trunc (select (fcmp uno x, x), nan, rounded) to i16
//
// and returns x: the one cvt.rn.bf16.f32 (sm_80) gives the same bits but
// for a NaN's (it returns a canonical NaN).
func bf16RoundOf(t *llir.InstTrunc) value.Value {
	if !types.Equal(t.To, types.I16) {
		return nil
	}
	s, ok := t.From.(*llir.InstSelect)
	if !ok {
		return nil
	}
	c, ok := s.Cond.(*llir.InstFCmp)
	if !ok || c.Pred != enum.FPredUNO || c.X != c.Y || !types.Equal(c.X.Type(), types.Float) {
		return nil
	}
	x := c.X
	isU := func(v value.Value) bool {
		b, ok := v.(*llir.InstBitCast)
		return ok && b.From == x && types.Equal(b.To, types.I32)
	}
	nan, ok := s.ValueTrue.(*llir.InstLShr)
	if !ok || !isInt(nan.Y, 16) {
		return nil
	}
	or, ok := nan.X.(*llir.InstOr)
	if !ok || !isU(or.X) || !isInt(or.Y, 0x400000) {
		return nil
	}
	rounded, ok := s.ValueFalse.(*llir.InstLShr)
	if !ok || !isInt(rounded.Y, 16) {
		return nil
	}
	sum, ok := rounded.X.(*llir.InstAdd)
	if !ok {
		return nil
	}
	bias, ok := sum.X.(*llir.InstAdd)
	if !ok || !isU(bias.X) || !isInt(bias.Y, 0x7fff) {
		return nil
	}
	lsb, ok := sum.Y.(*llir.InstAnd)
	if !ok || !isInt(lsb.Y, 1) {
		return nil
	}
	hi, ok := lsb.X.(*llir.InstLShr)
	if !ok || !isU(hi.X) || !isInt(hi.Y, 16) {
		return nil
	}
	return x
}

// bf16WidenOf recognizes the widening of bf16 bits t to f32 that
// targets/llvm writes (toF32), bitcast (shl (zext t to i32), 16) to float,
// and returns t: one cvt.f32.bf16 (sm_90), exact as the shift is.
func bf16WidenOf(b *llir.InstBitCast) value.Value {
	if !types.Equal(b.To, types.Float) {
		return nil
	}
	shl, ok := b.From.(*llir.InstShl)
	if !ok || !isInt(shl.Y, 16) {
		return nil
	}
	z, ok := shl.X.(*llir.InstZExt)
	if !ok || !types.Equal(z.From.Type(), types.I16) || !types.Equal(z.To, types.I32) {
		return nil
	}
	return z.From
}

// pack16Of recognizes an i32 made of two i16 halves,
//
//	or (zext lo to i32), (shl (zext hi to i32), 16)
//
// (either operand order) and returns lo and hi: one mov.b32 from the
// pair of 16-bit registers.
func pack16Of(o *llir.InstOr) (lo, hi value.Value) {
	if !types.Equal(o.Typ, types.I32) {
		return nil, nil
	}
	half := func(v value.Value) value.Value {
		z, ok := v.(*llir.InstZExt)
		if !ok || !types.Equal(z.From.Type(), types.I16) || !types.Equal(z.To, types.I32) {
			return nil
		}
		return z.From
	}
	for _, xy := range [2][2]value.Value{{o.X, o.Y}, {o.Y, o.X}} {
		shl, ok := xy[1].(*llir.InstShl)
		if !ok || !isInt(shl.Y, 16) {
			continue
		}
		if l, h := half(xy[0]), half(shl.X); l != nil && h != nil {
			return l, h
		}
	}
	return nil, nil
}

// roundPair returns the f32 values a pack16 or rounds into its low and
// high halves, and the conversion that rounds and packs both at once:
// cvt.rn.bf16x2.f32 when both halves are bf16Round's, cvt.rn.f16x2.f32
// when both are the bits of f32s truncated to half.
func (p *plan) roundPair(o *llir.InstOr) (lo, hi value.Value, cvt string) {
	pair := p.pack16[o]
	tl, lok := pair[0].(*llir.InstTrunc)
	th, hok := pair[1].(*llir.InstTrunc)
	if lok && hok && p.bf16Round[tl] != nil && p.bf16Round[th] != nil {
		return p.bf16Round[tl], p.bf16Round[th], "cvt.rn.bf16x2.f32"
	}
	if l, h := f16BitsOf(pair[0]), f16BitsOf(pair[1]); l != nil && h != nil {
		return l, h, "cvt.rn.f16x2.f32"
	}
	return nil, nil, ""
}

// f16BitsOf returns the f32 x when v is bitcast(fptrunc x to half) to
// i16, else nil.
func f16BitsOf(v value.Value) value.Value {
	b, ok := v.(*llir.InstBitCast)
	if !ok || !types.Equal(b.To, types.I16) {
		return nil
	}
	t, ok := b.From.(*llir.InstFPTrunc)
	if !ok || !types.Equal(t.From.Type(), types.Float) || !types.Equal(t.To, types.Half) {
		return nil
	}
	return t.From
}
