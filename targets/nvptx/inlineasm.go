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

// asmArgs returns the arguments of f's calls of inline asm and, for an
// argument that extracts a field of a call's results, that call.
func asmArgs(f *llir.Func) map[value.Value]bool {
	var args map[value.Value]bool
	for _, b := range f.Blocks {
		for _, in := range b.Insts {
			call, ok := in.(*llir.InstCall)
			if !ok {
				continue
			}
			if _, ok := call.Callee.(*llir.InlineAsm); !ok {
				continue
			}
			if args == nil {
				args = map[value.Value]bool{}
			}
			for _, a := range call.Args {
				args[a] = true
				if ev, ok := a.(*llir.InstExtractValue); ok {
					args[ev.X] = true
				}
			}
		}
	}
	return args
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
// and out of the block of another product's accumulators. A loop header's
// phi whose other uses follow the loop (its result) dies at the asm too:
// no path from the asm reaches them but through the header, which gives
// the phi its next value (the asm's, in the same registers) first; a
// product in flight across iterations then stays in its registers, which
// ptxas requires of a pipelined wgmma (a mov of them serializes it).
// So does a field of another asm's results (a gpu.wgmma in flight
// accumulated into by the next) that nothing else reads: the output takes
// that asm's register, which the field's copy shares.
// Called after allocation and before copies share registers.
func (e *emitter) tieInPlace(f *llir.Func) {
	// The values asked about below: the arguments of inline asm, and the
	// asm whose field an argument copies. Most kernels have none.
	cand := asmArgs(f)
	if len(cand) == 0 {
		return
	}
	uses := map[value.Value]int{}
	// at lists the blocks where each value is used: a phi's incoming
	// value at the end of its predecessor, where the edge copies it.
	at := map[value.Value][]*llir.Block{}
	count := func(o any, b *llir.Block) {
		if ops, ok := o.(operands); ok {
			for _, op := range ops.Operands() {
				if cand[*op] {
					uses[*op]++
					at[*op] = append(at[*op], b)
				}
			}
		}
		if p, ok := o.(*llir.InstPhi); ok {
			for _, inc := range p.Incs {
				if pred, ok := inc.Pred.(*llir.Block); ok && cand[inc.X] {
					at[inc.X] = append(at[inc.X], pred)
				}
			}
		}
	}
	shared := map[value.Value]bool{}
	// fields counts the copies of each field of an inline asm's results,
	// and extracts the copies of any of its fields.
	type field struct {
		call  *llir.InstCall
		index uint64
	}
	fields, extracts := map[field]int{}, map[*llir.InstCall]int{}
	block := map[llir.Instruction]*llir.Block{}
	for _, b := range f.Blocks {
		for _, in := range b.Insts {
			count(in, b)
			if first := e.plan.same[in]; first != nil {
				shared[first.(value.Value)] = true
			}
			if ev, ok := in.(*llir.InstExtractValue); ok && len(ev.Indices) == 1 {
				if call, ok := ev.X.(*llir.InstCall); ok {
					fields[field{call, ev.Indices[0]}]++
					extracts[call]++
				}
			}
			if v, ok := in.(value.Value); ok && cand[v] {
				block[in] = b
			}
		}
		count(b.Term, b)
	}
	// asmField returns the register of an asm result's field that a
	// copies and that dies at its one use, in block b: the asm, the copy
	// and the use in one block (not a value from outside a loop, which
	// each iteration would read again).
	asmField := func(a value.Value, b *llir.Block) (reg, bool) {
		ev, ok := a.(*llir.InstExtractValue)
		if !ok || len(ev.Indices) != 1 || uses[a] != 1 || shared[a] || block[ev] != b {
			return reg{}, false
		}
		call, ok := ev.X.(*llir.InstCall)
		if !ok || block[call] != b || uses[call] != extracts[call] || fields[field{call, ev.Indices[0]}] != 1 {
			return reg{}, false
		}
		if _, ok := call.Callee.(*llir.InlineAsm); !ok || isWaitAsm(call) {
			return reg{}, false
		}
		rs := e.vals[call]
		if ev.Indices[0] >= uint64(len(rs)) {
			return reg{}, false
		}
		return rs[ev.Indices[0]], true
	}
	// dies reports whether the argument a of call (in block b) dies there.
	dies := func(a value.Value, call *llir.InstCall, b *llir.Block) bool {
		if uses[a] == 1 {
			return true
		}
		phi, ok := a.(*llir.InstPhi)
		if !ok || block[phi] == b {
			return false
		}
		// The blocks reached from the asm's without passing the phi's.
		reach := map[*llir.Block]bool{}
		work := []*llir.Block{b}
		for len(work) > 0 {
			x := work[len(work)-1]
			work = work[:len(work)-1]
			for _, s := range x.Term.Succs() {
				if s != block[phi] && !reach[s] {
					reach[s] = true
					work = append(work, s)
				}
			}
		}
		if reach[b] {
			return false // (the asm is in a loop of its own: it would see its own update)
		}
		seen := 0
		for _, u := range at[a] {
			if u == b {
				seen++ // the call itself, or another use in its block
				continue
			}
			if reach[u] {
				return false
			}
		}
		return seen == 1
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
				if r, ok := asmField(a, b); ok && err == nil && i >= 0 && i < len(outs) && r.class == outs[i].class {
					outs[i] = r
					continue
				}
				arg, isInst := a.(llir.Instruction)
				if err != nil || i < 0 || i >= len(outs) || !isInst || shared[a] || e.plan.isCopy(arg) || !dies(a, call, b) {
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
