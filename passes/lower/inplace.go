package lower

import (
	"slices"
	"strings"

	"github.com/strata-ir/strata/dialects/arith"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// UpdateInPlacePassName is the pass that writes a selective update of an
// argument into the argument itself.
const UpdateInPlacePassName = "loop-update-in-place"

func init() {
	passes.Register(&passes.PassInfo{
		Name:    UpdateInPlacePassName,
		Summary: "Write a masked update of an argument into the argument (KV caches, running statistics)",
		Description: "A top-level nest that stores `select(c, x, A[i])` at every point i of a new buffer B, " +
			"where A is an argument of the function read nowhere else and B is a returned `loop.alloc` of A's " +
			"type, computes A updated where c holds: a decoding step's KV cache written at one position. " +
			"The pass stores x into A where c holds (`loop.if`) and returns A in place of B, so the nest " +
			"writes only the updated elements instead of copying all of A into B; the function records " +
			"the argument in `" + loop.UpdatesArgsAttr + "`. Only an executor that honours the attribute " +
			"(runtime/exec: the argument is copied first unless the caller donated it) may run the result; " +
			"the GPU pipelines run the pass.",
		Anchor: funcs.FuncOp,
		After: []passes.Order{
			{Pass: "loop-buffer-reuse", Reason: "it rewrites the nests and buffers of the finished memory plan"},
		},
		New: func(passes.Options) (passes.Pass, error) {
			return passes.FuncPass{PassName: UpdateInPlacePassName, Fn: func(fn *ir.Operation, st *passes.State) error {
				n := UpdateInPlace(st.Ctx, fn)
				st.Stat("num-updated", "Number of argument updates written in place").Add(int64(n))
				return nil
			}}, nil
		},
	})
}

// UpdateInPlace rewrites each masked update of an argument of fn into an
// update in place (the pass's description) and returns how many it
// rewrote.
func UpdateInPlace(ctx *ir.Context, fn *ir.Operation) int {
	if fn.NumRegions() == 0 || fn.Region(0).Front() == nil || len(fn.Region(0).Blocks()) != 1 {
		return 0
	}
	body := fn.Region(0).Front()
	ret := body.Last()
	if ret == nil || ret.Name() != funcs.OpReturn {
		return 0
	}
	var updated []int64
	if a, ok := fn.Attr(loop.UpdatesArgsAttr).(ir.DenseArrayAttr); ok {
		updated = slices.Clone(a.Values)
	}
	n := 0
	for _, nest := range body.Ops() {
		if nest.Name() != loop.ParallelOp {
			continue
		}
		var ifs []*ir.Operation
		for _, u := range maskedUpdates(nest, body, ret) {
			ifs = append(ifs, u.rewrite(ctx))
			n++
			if i := int64(u.arg.Index()); !slices.Contains(updated, i) {
				updated = append(updated, i)
			}
		}
		if len(ifs) > 0 && writesOnlyArgs(nest, ret) {
			for _, ifOp := range ifs {
				sinkInto(ifOp)
			}
		}
	}
	if n > 0 {
		slices.Sort(updated)
		fn.SetAttr(loop.UpdatesArgsAttr, ir.DenseArrayAttr{Elem: ir.I64, Values: updated})
	}
	return n
}

// maskedUpdate is one store of a nest that UpdateInPlace rewrites:
// store(select(cond, x, load(arg, ivs)), buf, ivs).
type maskedUpdate struct {
	arg, buf *ir.Value
	load     *ir.Operation // loop.load of arg
	sel      *ir.Operation // arith.select
	store    *ir.Operation // loop.store into buf
}

// maskedUpdates returns the masked updates of nest, a top-level
// loop.parallel of the function body ending in ret.
func maskedUpdates(nest *ir.Operation, body *ir.Block, ret *ir.Operation) []maskedUpdate {
	lbs, ubs, steps, inits, err := loop.ParallelBounds(nest)
	if err != nil || len(inits) != 0 {
		return nil
	}
	blk := loop.Body(nest)
	if blk == nil {
		return nil
	}
	ivs := blk.Arguments()
	var out []maskedUpdate
	for _, st := range blk.Ops() {
		if st.Name() != loop.StoreOp || !sameValues(st.Operands()[2:], ivs) {
			continue
		}
		sel := st.Operand(0).DefiningOp()
		if sel == nil || sel.Name() != arith.OpSelect || sel.Block() != blk || !sel.Result(0).HasOneUse() {
			continue
		}
		ld := sel.Operand(2).DefiningOp()
		if ld == nil || ld.Name() != loop.LoadOp || ld.Block() != blk || !ld.Result(0).HasOneUse() || !sameValues(ld.Operands()[1:], ivs) {
			continue
		}
		u := maskedUpdate{arg: ld.Operand(0), buf: st.Operand(1), load: ld, sel: sel, store: st}
		if !u.covers(lbs, ubs, steps) || !u.argOnlyHere() || !u.bufFresh(nest, body, ret) {
			continue
		}
		out = append(out, u)
	}
	return out
}

// covers reports whether the nest's bounds visit every element of the
// argument once: from 0 to its static sizes by 1, so that every element
// the nest does not update keeps its value.
func (u maskedUpdate) covers(lbs, ubs, steps []*ir.Value) bool {
	mt, ok := u.arg.Type().(*ir.MemRefType)
	if !ok || !mt.Ranked() || len(mt.Shape()) != len(ubs) || u.buf.Type() != u.arg.Type() {
		return false
	}
	for d, size := range mt.Shape() {
		lb, ok1 := constIndex(lbs[d])
		ub, ok2 := constIndex(ubs[d])
		step, ok3 := constIndex(steps[d])
		if !ok1 || !ok2 || !ok3 || lb != 0 || step != 1 || size == ir.Dynamic || ub != size {
			return false
		}
	}
	return true
}

// argOnlyHere reports whether arg is an argument of the function whose
// one use is the update's load: nothing else reads the old value, so
// writing the argument changes no other result.
func (u maskedUpdate) argOnlyHere() bool {
	if !u.arg.IsBlockArgument() || !u.arg.HasOneUse() {
		return false
	}
	owner := u.arg.ParentBlock().ParentOp()
	return owner != nil && owner.Name() == funcs.OpFunc
}

// bufFresh reports whether buf is a loop.alloc of the function body that
// the function returns, that nothing uses before the nest, and that the
// nest only writes by the update's store: its value is the argument's
// update, and any later use reads that value.
func (u maskedUpdate) bufFresh(nest *ir.Operation, body *ir.Block, ret *ir.Operation) bool {
	alloc := u.buf.DefiningOp()
	if alloc == nil || alloc.Name() != loop.AllocOp || alloc.Block() != body || alloc.NumOperands() != 0 {
		return false
	}
	returned := false
	for use := range u.buf.Uses() {
		user := use.Owner()
		switch {
		case user == u.store:
		case user == ret:
			returned = true
		case user.Name() == loop.DeallocOp:
			return false
		default:
			// A use inside the nest other than the store, or before the
			// nest, would see the buffer before the update.
			top := user
			for top != nil && top.Block() != body {
				top = top.ParentOp()
			}
			if top == nil || top == nest || top.IsBeforeInBlock(nest) {
				return false
			}
		}
	}
	return returned
}

// rewrite stores x into the argument where the condition holds and
// replaces the buffer by the argument; it returns the loop.if.
func (u maskedUpdate) rewrite(ctx *ir.Context) *ir.Operation {
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(u.store)
	cond, x, loc := u.sel.Operand(0), u.sel.Operand(1), u.store.Loc()
	idx := slices.Clone(u.store.Operands()[2:])
	ifOp := loop.If(b, loc, cond, nil, func(b *ir.Builder) []*ir.Value {
		loop.Store(b, loc, x, u.arg, idx...)
		return nil
	}, nil)
	u.store.Erase()
	u.sel.Erase()
	u.load.Erase()
	alloc := u.buf.DefiningOp()
	u.buf.ReplaceAllUsesWith(u.arg)
	alloc.Erase()
	return ifOp
}

// writesOnlyArgs reports whether every store of nest writes a function
// argument (as the rewritten updates do) that no load of the nest reads:
// a load of the nest then reads memory the nest does not write, and may
// move past its stores. (The executor never lets an argument it writes
// alias another: runtime/exec copies one passed twice.)
func writesOnlyArgs(nest, ret *ir.Operation) bool {
	written := map[*ir.Value]bool{}
	ok := true
	nest.Walk(func(op *ir.Operation) bool {
		if op.Name() == loop.StoreOp {
			m := op.Operand(1)
			ok = ok && m.IsBlockArgument() && m.ParentBlock() == ret.Block()
			written[m] = true
		}
		return ok
	})
	nest.Walk(func(op *ir.Operation) bool {
		if op.Name() == loop.LoadOp && written[op.Operand(0)] {
			ok = false
		}
		return ok
	})
	return ok
}

// sinkInto moves into the then block of ifOp the ops before it that
// compute only what the block uses (the update's value: loads of the new
// key and their indices), so that a point the mask leaves alone loads
// nothing. Only arith ops and loads move; the caller checked that the
// nest's stores write no memory a load reads.
func sinkInto(ifOp *ir.Operation) {
	then := ifOp.Region(0).Front()
	for op := ifOp.Prev(); op != nil; {
		prev := op.Prev()
		if sinkable(op) && op.NumResults() > 0 && usedOnlyIn(op, ifOp) {
			op.MoveBefore(then.First())
		}
		op = prev
	}
}

// sinkable reports whether op may run later and only on some points: a
// pure arith op, or a load.
func sinkable(op *ir.Operation) bool {
	if op.NumRegions() > 0 {
		return false
	}
	return op.Name() == loop.LoadOp || strings.HasPrefix(op.Name(), "arith.")
}

// usedOnlyIn reports whether every use of op's results is inside anc's
// regions (not anc's own operands).
func usedOnlyIn(op, anc *ir.Operation) bool {
	for _, r := range op.Results() {
		for _, user := range r.Users() {
			if user == anc || !user.IsAncestor(anc) {
				return false
			}
		}
	}
	return true
}

// sameValues reports whether a and b are the same values in order.
func sameValues(a, b []*ir.Value) bool { return slices.Equal(a, b) }
