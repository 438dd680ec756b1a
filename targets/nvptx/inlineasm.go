package nvptx

import (
	"fmt"
	"strconv"
	"strings"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/value"
)

// inlineAsm emits a call of inline PTX (targets/llvm writes gpu.wgmma
// so): $N in the text is operand N, the outputs ("=r", "=f", "=l", one
// per register of the result) first, then the arguments ("r", "l", "f",
// or the number of an output they are tied to: that output's register,
// which gets the argument's value first). "$$" is a dollar sign.
func (e *emitter) inlineAsm(in *llir.InstCall, ia *llir.InlineAsm) error {
	cons := strings.Split(ia.Constraint, ",")
	if ia.Constraint == "" {
		cons = nil
	}
	outs := e.resultRegs(in)
	nOut := 0
	for nOut < len(cons) && strings.HasPrefix(cons[nOut], "=") {
		nOut++
	}
	if nOut != len(outs) {
		return fmt.Errorf("inline asm: %d output constraints for %d result registers", nOut, len(outs))
	}
	if len(cons) != nOut+len(in.Args) {
		return fmt.Errorf("inline asm: %d constraints for %d outputs and %d arguments", len(cons), nOut, len(in.Args))
	}
	ops := make([]string, 0, len(cons))
	for _, r := range outs {
		ops = append(ops, r.String())
	}
	for i, a := range in.Args {
		r, err := e.scalarOperand(a)
		if err != nil {
			return fmt.Errorf("inline asm argument %d: %w", i, err)
		}
		c := cons[nOut+i]
		if tied, err := strconv.Atoi(c); err == nil {
			if tied < 0 || tied >= nOut || outs[tied].class != r.class {
				return fmt.Errorf("inline asm argument %d is tied to output %d, which it does not match", i, tied)
			}
			d := outs[tied]
			if d != r { // (else tieInPlace gave the output the argument's register)
				e.inst("%s %s, %s;", classInfo[d.class].mov, d, r)
			}
			ops = append(ops, d.String())
			continue
		}
		if c != "r" && c != "l" && c != "f" && c != "d" && c != "h" {
			return fmt.Errorf("inline asm constraint %q is not supported", c)
		}
		ops = append(ops, r.String())
	}
	var text strings.Builder
	asm := ia.Asm
	for i := 0; i < len(asm); i++ {
		if asm[i] != '$' {
			text.WriteByte(asm[i])
			continue
		}
		if i+1 < len(asm) && asm[i+1] == '$' {
			text.WriteByte('$')
			i++
			continue
		}
		j := i + 1
		for j < len(asm) && asm[j] >= '0' && asm[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(asm[i+1 : j])
		if err != nil || n >= len(ops) {
			return fmt.Errorf("inline asm: bad operand reference %q", asm[i:j])
		}
		text.WriteString(ops[n])
		i = j - 1
	}
	for _, line := range strings.Split(text.String(), "\n") {
		e.inst("%s", strings.TrimSpace(line))
	}
	return nil
}

// operands is what llir instructions and terminators list their operands
// by.
type operands interface{ Operands() []*value.Value }

// tieInPlace gives a tied output of inline asm its argument's register
// when the argument dies there: an instruction result (a phi included)
// with registers of its own, used by nothing else, that no other value
// shares (not a copy, not the first of a repeated pure instruction). The
// asm then updates it in place, with no mov: gpu.wgmma's accumulators stay
// in one register block through a loop, instead of ptxas moving them in
// and out of the block of another product's accumulators. Called after
// allocation and before copies share registers.
func (e *emitter) tieInPlace(f *llir.Func) {
	uses := map[value.Value]int{}
	count := func(o any) {
		if ops, ok := o.(operands); ok {
			for _, op := range ops.Operands() {
				uses[*op]++
			}
		}
	}
	shared := map[value.Value]bool{}
	for _, b := range f.Blocks {
		for _, in := range b.Insts {
			count(in)
			if first := e.plan.same[in]; first != nil {
				shared[first.(value.Value)] = true
			}
		}
		count(b.Term)
	}
	for _, b := range f.Blocks {
		for _, in := range b.Insts {
			call, ok := in.(*llir.InstCall)
			if !ok {
				continue
			}
			ia, ok := call.Callee.(*llir.InlineAsm)
			outs := e.vals[call]
			if !ok || len(outs) == 0 {
				continue
			}
			cons := strings.Split(ia.Constraint, ",")
			if len(cons) != len(outs)+len(call.Args) {
				continue // (inlineAsm reports it)
			}
			for j, a := range call.Args {
				i, err := strconv.Atoi(cons[len(outs)+j])
				arg, isInst := a.(llir.Instruction)
				if err != nil || i < 0 || i >= len(outs) || !isInst || uses[a] != 1 || shared[a] || e.plan.isCopy(arg) {
					continue
				}
				if _, folded := e.plan.folded[a]; folded {
					continue
				}
				if rs := e.vals[a]; len(rs) == 1 && rs[0].class == outs[i].class {
					outs[i] = rs[0]
				}
			}
		}
	}
}
