package nvptx

import (
	"fmt"
	"strings"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// Registers are virtual and never written twice but for phis, whose
// copies sit on the edges into their block. A result that only copies
// registers (a lane of a vector load, a field of an mma fragment, a
// pointer cast, a freeze) may therefore share them instead of a mov:
// every path from the copy to a use of it passes through the copy again
// after any edge that rewrites a phi it shares (the phi's block dominates
// the copy, the copy dominates the use).

// isCopy reports whether an instruction's result may share its operands'
// registers (or those of an equal gep).
func (p *plan) isCopy(in llir.Instruction) bool {
	if p.same[in] != nil {
		return true
	}
	switch in := in.(type) {
	case *llir.InstExtractElement, *llir.InstExtractValue, *llir.InstInsertElement, *llir.InstFreeze:
		return true
	case *llir.InstBitCast:
		return sameRegisters(in.From.Type(), in.To)
	case *llir.InstPtrToInt:
		return sameRegisters(in.From.Type(), in.To)
	case *llir.InstIntToPtr:
		return sameRegisters(in.From.Type(), in.To)
	case *llir.InstAddrSpaceCast:
		return sameRegisters(in.From.Type(), in.To)
	case *llir.InstGetElementPtr:
		_, ok := gepOffset(in.ElemType, in.Indices)
		return ok || p.gepSame[in] != nil
	case *llir.InstCall:
		return isWaitAsm(in)
	}
	return false
}

// isWaitAsm reports whether call is inline asm whose outputs are its
// arguments (output i tied to argument i) and whose text names no operand
// (gpu.wgmma_wait's wgmma.wait_group): its results are its arguments'
// registers, and it is still emitted for its text.
func isWaitAsm(call *llir.InstCall) bool {
	ia, ok := call.Callee.(*llir.InlineAsm)
	if !ok || strings.Contains(ia.Asm, "$") || len(call.Args) == 0 {
		return false
	}
	cons := strings.Split(ia.Constraint, ",")
	if len(cons) != 2*len(call.Args) {
		return false
	}
	for i := range call.Args {
		if !strings.HasPrefix(cons[i], "=") || cons[len(call.Args)+i] != fmt.Sprint(i) {
			return false
		}
	}
	return true
}

// sameRegisters reports whether values of types a and b live in the same
// registers (same class and lanes, same address space for pointers).
func sameRegisters(a, b types.Type) bool {
	ka, la, err := shapeOf(a)
	if err != nil {
		return false
	}
	kb, lb, err := shapeOf(b)
	return err == nil && la == lb && ka.class == kb.class && ka.ptr == kb.ptr && ka.space == kb.space
}

// allocate gives an instruction's result fresh registers.
func (e *emitter) allocate(in llir.Instruction) error {
	v := in.(value.Value)
	rs, err := e.newRegs(v.Type())
	if err != nil {
		return fmt.Errorf("%s: %w", strings.TrimSpace(in.LLString()), err)
	}
	e.vals[v] = rs
	return nil
}

// shareRegisters gives each copy its operand's registers, in rounds
// (an operand may be a later copy), and fresh registers to the copies
// that cannot share: those of constants, or a gep that adds an offset.
func (e *emitter) shareRegisters(copies []llir.Instruction) error {
	for progress := true; progress; {
		progress = false
		rest := copies[:0]
		for _, in := range copies {
			rs, ok, wait := e.shared(in)
			switch {
			case ok:
				v := in.(value.Value)
				e.aliased[v] = true
				if rs != nil {
					e.vals[v] = rs
				}
				progress = true
			case wait:
				rest = append(rest, in)
			default:
				if err := e.allocate(in); err != nil {
					return err
				}
			}
		}
		copies = rest
	}
	for _, in := range copies {
		if err := e.allocate(in); err != nil {
			return err
		}
	}
	return nil
}

// shared returns the registers a copy shares (nil for a gep folded
// whole into its addresses); wait when its operand has no registers yet.
func (e *emitter) shared(in llir.Instruction) (rs []reg, ok, wait bool) {
	src := func(v value.Value) ([]reg, bool, bool) {
		if rs, ok := e.vals[v]; ok {
			return rs, true, false
		}
		if _, isInst := v.(llir.Instruction); isInst && !e.isConstant(v) {
			return nil, false, true
		}
		return nil, false, false // a constant, a symbol or a parameter not yet seen
	}
	if first := e.plan.same[in]; first != nil {
		return src(first.(value.Value))
	}
	switch in := in.(type) {
	case *llir.InstCall: // isWaitAsm: the arguments' registers
		var rs []reg
		for _, a := range in.Args {
			xs, ok, wait := src(a)
			if !ok || len(xs) != 1 {
				return nil, false, wait
			}
			rs = append(rs, xs[0])
		}
		return rs, true, false
	case *llir.InstExtractElement:
		xs, ok, wait := src(in.X)
		if !ok {
			return nil, false, wait
		}
		i, err := laneIndex(in.Index, len(xs))
		if err != nil {
			return nil, false, false
		}
		return xs[i : i+1], true, false
	case *llir.InstExtractValue:
		xs, ok, wait := src(in.X)
		if !ok || len(in.Indices) != 1 || in.Indices[0] >= uint64(len(xs)) {
			return nil, false, wait
		}
		return xs[in.Indices[0] : in.Indices[0]+1], true, false
	case *llir.InstInsertElement:
		el, ok, wait := src(in.Elem)
		if !ok || len(el) != 1 {
			return nil, false, wait
		}
		xs, ok, wait := src(in.X)
		switch in.X.(type) {
		case *constant.Undef, *constant.Poison:
			// Any value will do for the other lanes: the element's.
			xs, ok = make([]reg, 0, 4), true
			_, lanes, err := shapeOf(in.X.Type())
			if err != nil {
				return nil, false, false
			}
			for range lanes {
				xs = append(xs, el[0])
			}
		}
		if !ok {
			return nil, false, wait
		}
		i, err := laneIndex(in.Index, len(xs))
		if err != nil {
			return nil, false, false
		}
		out := append([]reg(nil), xs...)
		out[i] = el[0]
		return out, true, false
	case *llir.InstFreeze:
		return src(in.X)
	case *llir.InstBitCast:
		if _, folded := e.plan.memOff[in.From]; folded && isPointerCast(in) {
			return nil, true, false // the gep's address, at each use
		}
		return src(in.From)
	case *llir.InstPtrToInt:
		return src(in.From)
	case *llir.InstIntToPtr:
		return src(in.From)
	case *llir.InstAddrSpaceCast:
		return src(in.From)
	case *llir.InstGetElementPtr:
		if g := e.plan.gepSame[in]; g != nil {
			return src(g)
		}
		off, _ := gepOffset(in.ElemType, in.Indices)
		if _, folded := e.plan.memOff[in]; folded {
			return nil, true, false // [base+off] at each use
		}
		if off != 0 {
			return nil, false, false
		}
		return src(in.Src)
	}
	return nil, false, false
}

// isConstant reports whether v is a constant or a folded result.
func (e *emitter) isConstant(v value.Value) bool {
	if _, ok := v.(constant.Constant); ok {
		return true
	}
	_, ok := e.plan.folded[v]
	return ok
}
