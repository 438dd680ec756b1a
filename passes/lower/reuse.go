package lower

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

func init() {
	passes.Register(&passes.PassInfo{
		Name:    "loop-buffer-reuse",
		Summary: "Reuse dead loop.alloc buffers and free buffers after their last use",
		Description: "Memory planning within a function: each top-level `loop.alloc` with a static shape " +
			"takes the slot of a buffer of the same type whose last use is over (liveness over the " +
			"function's top-level ops), and every slot not returned or passed on is freed with " +
			"`loop.dealloc` right after its last use. With `print-plan` (or irc --print-memory-plan) it " +
			"prints each buffer's size, live range and slot, and the peak bytes before and after reuse.",
		Anchor: funcs.FuncOp,
		Options: []passes.OptionDef{
			{Name: "print-plan", Type: passes.Bool, Default: false, Doc: "print the memory plan of each function to stderr"},
		},
		After: []passes.Order{
			{Pass: "convert-graph-to-loop", Reason: "it plans the loop.alloc buffers convert-graph-to-loop makes"},
		},
		New: func(o passes.Options) (passes.Pass, error) {
			print := o.Bool("print-plan")
			return passes.FuncPass{PassName: "loop-buffer-reuse", Fn: func(op *ir.Operation, st *passes.State) error {
				plan := PlanBuffers(op)
				if err := plan.Check(); err != nil {
					return ir.Errorf(op.Loc(), "loop-buffer-reuse: %v", err)
				}
				plan.Apply(st.Ctx)
				st.Stat("num-reused", "Number of allocations replaced by a dead buffer").Add(int64(plan.Reused()))
				if w := planWriter(print); w != nil {
					planMu.Lock()
					defer planMu.Unlock()
					if _, err := io.WriteString(w, plan.String()); err != nil {
						return fmt.Errorf("loop-buffer-reuse: printing the plan: %w", err)
					}
				}
				return nil
			}}, nil
		},
	})
}

var (
	planMu  sync.Mutex
	planOut io.Writer
)

// SetPlanOutput makes every run of loop-buffer-reuse print its memory plan
// to w (nil stops it); irc --print-memory-plan sets it to stderr.
func SetPlanOutput(w io.Writer) {
	planMu.Lock()
	defer planMu.Unlock()
	planOut = w
}

func planWriter(option bool) io.Writer {
	planMu.Lock()
	defer planMu.Unlock()
	if planOut != nil {
		return planOut
	}
	if option {
		return os.Stderr
	}
	return nil
}

// Buffer is one loop.alloc of a memory plan.
type Buffer struct {
	Alloc *ir.Operation
	// Bytes is the buffer's size, or -1 when it is dynamic.
	Bytes int64
	// Def and Last are the positions, among the function's top-level ops,
	// of the allocation and of the last op that uses the buffer; Last is the
	// number of ops when the buffer escapes (returned or passed on).
	Def, Last int
	// Escapes reports a buffer returned or passed to an op other than the
	// loop dialect's accesses: it is never freed here.
	Escapes bool
	// Slot is the buffer whose memory this one uses (its own index when it
	// has its own memory).
	Slot int
}

// Plan is the memory plan of one function.
type Plan struct {
	Func    *ir.Operation
	Buffers []*Buffer
	numOps  int
	ops     []*ir.Operation
}

// PlanBuffers computes the plan of fn: liveness of each top-level
// loop.alloc, and a first-fit assignment of slots among buffers of the same
// static type whose live ranges do not overlap.
func PlanBuffers(fn *ir.Operation) *Plan {
	p := &Plan{Func: fn}
	body := funcs.Body(fn)
	if body == nil {
		return p
	}
	p.ops = body.Ops()
	p.numOps = len(p.ops)
	pos := make(map[*ir.Operation]int, len(p.ops))
	for i, op := range p.ops {
		pos[op] = i
	}
	for i, op := range p.ops {
		if op.Name() != loop.AllocOp {
			continue
		}
		b := &Buffer{Alloc: op, Def: i, Last: i, Bytes: bufferBytes(op.Result(0).Type())}
		// A loop.view aliases the buffer: its uses are the buffer's.
		var visit func(v *ir.Value)
		visit = func(v *ir.Value) {
			for _, user := range v.Users() {
				top := user
				for top.Block() != body {
					top = top.ParentOp()
				}
				switch user.Name() {
				case loop.LoadOp, loop.StoreOp, loop.DimOp:
				case loop.ViewOp:
					visit(user.Result(0))
				default:
					b.Escapes = true
				}
				b.Last = max(b.Last, pos[top])
			}
		}
		visit(op.Result(0))
		if b.Escapes {
			b.Last = p.numOps
		}
		b.Slot = len(p.Buffers)
		p.Buffers = append(p.Buffers, b)
	}
	// First fit: a slot is free for b when its latest occupant's last use is
	// before b's allocation.
	end := map[int]int{} // slot → last use of its latest occupant
	for i, b := range p.Buffers {
		if b.Bytes >= 0 && !b.Escapes {
			for j := range i {
				s := p.Buffers[j]
				if s.Slot == j && s.Alloc.Result(0).Type() == b.Alloc.Result(0).Type() && end[j] < b.Def {
					b.Slot = j
					break
				}
			}
		}
		end[b.Slot] = max(end[b.Slot], b.Last)
	}
	return p
}

// bufferBytes is the size of a memref type, or -1 if it is dynamic.
func bufferBytes(t ir.Type) int64 {
	mt, ok := t.(*ir.MemRefType)
	if !ok {
		return -1
	}
	n := ir.NumElements(mt.Shape())
	if n < 0 {
		return -1
	}
	return n * elemBytes(mt.ElementType())
}

func elemBytes(t ir.Type) int64 {
	if ir.IsFloat(t) {
		return int64(floatWidth(t) / 8)
	}
	if t == ir.Index {
		return 8
	}
	return int64(max(1, (ir.IntWidth(t)+7)/8))
}

// Check verifies that no two buffers sharing a slot are live at once.
func (p *Plan) Check() error {
	for i, a := range p.Buffers {
		for _, b := range p.Buffers[i+1:] {
			if a.Slot == b.Slot && a.Def <= b.Last && b.Def <= a.Last {
				return fmt.Errorf("buffers allocated at ops %d and %d share slot %d while both are live", a.Def, b.Def, a.Slot)
			}
		}
	}
	return nil
}

// Reused counts the buffers that take another's slot.
func (p *Plan) Reused() int {
	n := 0
	for i, b := range p.Buffers {
		if b.Slot != i {
			n++
		}
	}
	return n
}

// Apply rewrites the function: buffers in another's slot use that buffer
// (their loop.alloc goes), and each slot not escaping is freed after the
// last use of its last occupant.
func (p *Plan) Apply(ctx *ir.Context) {
	last := map[int]int{}
	escapes := map[int]bool{}
	for _, b := range p.Buffers {
		last[b.Slot] = max(last[b.Slot], b.Last)
		escapes[b.Slot] = escapes[b.Slot] || b.Escapes
	}
	for i, b := range p.Buffers {
		if b.Slot != i {
			b.Alloc.Result(0).ReplaceAllUsesWith(p.Buffers[b.Slot].Alloc.Result(0))
		}
	}
	for i, b := range p.Buffers {
		if b.Slot != i {
			b.Alloc.Erase()
			continue
		}
		if escapes[i] || last[i] >= p.numOps {
			continue
		}
		after := p.ops[last[i]]
		if after.HasTrait(ir.Terminator) {
			continue
		}
		bld := ir.NewBuilder(ctx)
		bld.SetInsertionPointAfter(after)
		loop.Dealloc(bld, b.Alloc.Loc(), b.Alloc.Result(0))
	}
}

// Peak returns the most bytes live at once without reuse (every buffer its
// own memory) and with the plan's slots; dynamic buffers count 0.
func (p *Plan) Peak() (before, after int64) {
	for t := 0; t <= p.numOps; t++ {
		var sum int64
		slots := map[int]bool{}
		var slotSum int64
		for _, b := range p.Buffers {
			if b.Def <= t && t <= b.Last && b.Bytes > 0 {
				sum += b.Bytes
				if !slots[b.Slot] {
					slots[b.Slot] = true
					slotSum += p.Buffers[b.Slot].Bytes
				}
			}
		}
		before, after = max(before, sum), max(after, slotSum)
	}
	return before, after
}

// String prints the plan: one line per buffer and the peaks.
func (p *Plan) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "memory plan of @%s:\n", ir.SymbolName(p.Func))
	for i, b := range p.Buffers {
		size := fmt.Sprintf("%d bytes", b.Bytes)
		if b.Bytes < 0 {
			size = "dynamic size"
		}
		end := fmt.Sprint(b.Last)
		if b.Escapes {
			end = "end (escapes)"
		}
		fmt.Fprintf(&sb, "  buffer %d: %s, %s, live ops %d..%s, slot %d\n", i, b.Alloc.Result(0).Type(), size, b.Def, end, b.Slot)
	}
	before, after := p.Peak()
	fmt.Fprintf(&sb, "  peak: %d bytes without reuse, %d bytes with reuse\n", before, after)
	return sb.String()
}
