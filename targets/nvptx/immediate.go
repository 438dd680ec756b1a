package nvptx

import (
	"fmt"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/value"
)

// immClasses are the register classes whose constants PTX arithmetic,
// comparisons, selp and mov take as immediates. Predicates and 16-bit
// values keep registers: i8 needs extending and half is converted.
var immClasses = map[regClass]bool{classB32: true, classB64: true, classF32: true, classF64: true}

// immediates returns the PTX immediate of each lane of v when v is a
// constant (or a result folded to one) of an immediate class.
func (e *emitter) immediates(v value.Value) ([]string, bool) {
	if vec, ok := v.(*constant.Vector); ok {
		var out []string
		for _, el := range vec.Elems {
			lane, ok := e.immediates(el)
			if !ok {
				return nil, false
			}
			out = append(out, lane...)
		}
		return out, true
	}
	c, ok := e.plan.constOf(v)
	if !ok {
		switch v.(type) {
		case *constant.Undef, *constant.Poison:
			// Any value will do: zero.
			k, err := scalarOf(v.Type())
			if err != nil || k.ptr {
				return nil, false
			}
			c = scalarConst{k: k}
		default:
			return nil, false
		}
	}
	if !immClasses[c.k.class] {
		return nil, false
	}
	return []string{immText(c)}, true
}

// immText writes a constant as an operand: integers in signed decimal of
// their width, floats as bits (0f/0d), as llc writes them.
func immText(c scalarConst) string {
	switch c.k.class {
	case classB32:
		return fmt.Sprint(int32(uint32(c.bits)))
	case classB64:
		return fmt.Sprint(int64(c.bits))
	}
	return immediate(c.k, c.bits)
}

// sources returns the operand text of each lane of v: immediates for a
// constant, else its registers.
func (e *emitter) sources(v value.Value) ([]string, error) {
	if imm, ok := e.immediates(v); ok {
		return imm, nil
	}
	rs, err := e.operand(v)
	if err != nil {
		return nil, err
	}
	return regNames(rs), nil
}

// sourcePair is sources for the two operands of one instruction; at most
// one of them is an immediate.
func (e *emitter) sourcePair(x, y value.Value) ([]string, []string, error) {
	ys, err := e.sources(y)
	if err != nil {
		return nil, nil, err
	}
	var xs []string
	if _, yImm := e.immediates(y); yImm {
		rs, err := e.operand(x)
		if err != nil {
			return nil, nil, err
		}
		xs = regNames(rs)
	} else if xs, err = e.sources(x); err != nil {
		return nil, nil, err
	}
	return xs, ys, nil
}

func regNames(rs []reg) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// address returns the text inside the brackets of a memory operand for
// the pointer v: a register or a shared symbol, plus the constant offset
// of a gep used only as an address ([%rd4+16], [wg0+8]).
func (e *emitter) address(v value.Value) (string, error) {
	base, off, err := e.addressParts(v)
	if err != nil || off == 0 {
		return base, err
	}
	return fmt.Sprintf("%s+%d", base, off), nil
}

// addressParts splits an address into a register or symbol and a
// constant byte offset.
func (e *emitter) addressParts(v value.Value) (string, int64, error) {
	if name, ok := e.names[v]; ok {
		return name, 0, nil
	}
	switch c := v.(type) {
	case *constant.ExprBitCast:
		if sameRegisters(c.From.Type(), c.To) {
			return e.addressParts(c.From)
		}
	case *constant.ExprGetElementPtr:
		idx := make([]value.Value, len(c.Indices))
		for i, x := range c.Indices {
			idx[i] = x
		}
		if off, ok := gepOffset(c.ElemType, idx); ok {
			base, boff, err := e.addressParts(c.Src)
			return base, boff + off, err
		}
	case *llir.InstBitCast:
		if isPointerCast(c) {
			if _, ok := e.plan.memOff[c.From]; ok {
				return e.addressParts(c.From) // the gep's offset is not in its register
			}
		}
	case *llir.InstGetElementPtr:
		if off, ok := e.plan.memOff[v]; ok {
			if rs, ok := e.vals[v]; ok {
				return rs[0].String(), off, nil // the gep's register part
			}
			base, boff, err := e.addressParts(c.Src)
			return base, boff + off, err
		}
	}
	r, err := e.scalarOperand(v)
	return r.String(), 0, err
}
