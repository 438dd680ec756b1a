package cpu

import (
	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// Most indices of a nest are affine in its induction variables and in
// range by construction. An index computed from loaded data (graph.gather's
// indices) is not: a value out of range would read or write past the
// buffer. Such accesses are checked: out of range, a load gives zero and
// a store is skipped, and the kernel records the index, the dimension and
// its size in its fault words (a kernel parameter), which the runtime
// turns into an error after the call.

// FaultWords is the number of 64-bit words of a kernel's fault record:
// a flag (nonzero after a fault), the index, the dimension and its size.
const FaultWords = 4

// checkedAccess emits access (a load or a store at the given indices of
// mem) only where every index is within its dimension, and records a
// fault otherwise; it returns the loaded value (zero when out of range)
// for a load.
func (k *kt) checkedAccess(mem *ir.Value, idx []value.Value, elem types.Type, access func() value.Value) value.Value {
	sizes := k.dims[mem]
	b := k.cur
	var ok value.Value = constant.True
	for d, x := range idx {
		in := b.NewICmp(enum.IPredULT, x, sizes[d])
		ok = b.NewAnd(ok, in)
	}
	inside, outside, join := k.newBlock("inrange"), k.newBlock("outofrange"), k.newBlock("checked")
	b.NewCondBr(ok, inside, outside)
	k.cur = inside
	v := access()
	from := k.cur
	k.cur.NewBr(join)
	k.enter(outside)
	// The first index out of range, in dimension order.
	var bad, dim, size value.Value = idx[0], i64(0), sizes[0]
	for d := len(idx) - 1; d >= 0; d-- {
		in := k.cur.NewICmp(enum.IPredULT, idx[d], sizes[d])
		bad = k.cur.NewSelect(in, bad, idx[d])
		dim = k.cur.NewSelect(in, dim, i64(int64(d)))
		size = k.cur.NewSelect(in, size, sizes[d])
	}
	for w, x := range []value.Value{i64(1), bad, dim, size} {
		k.cur.NewStore(x, k.cur.NewGetElementPtr(types.I64, k.fault, i64(int64(w))))
	}
	k.cur.NewBr(join)
	k.enter(join)
	if v == nil {
		return nil
	}
	var zero value.Value
	switch t := elem.(type) {
	case *types.FloatType:
		zero = constant.NewFloat(t, 0)
	case *types.IntType:
		zero = constant.NewInt(t, 0)
	}
	return join.NewPhi(llir.NewIncoming(v, from), llir.NewIncoming(zero, outside))
}

// BoundCheck is a size relation the runtime checks before a kernel runs:
// an access of buffer Buf whose index in dimension Dim is a loop's
// induction variable (from Lb by Step below Ub, host values or constants)
// stays inside the buffer. The lowering derives such bounds from one
// operand's sizes; with dynamic shapes another operand may be smaller.
type BoundCheck struct {
	Buf          *ir.Value
	Dim          int
	Lb, Ub, Step *ir.Value
}

// boundChecks returns the checks of nest's unconditional accesses
// (those under a loop.if may be guarded by it, as concat's are).
func boundChecks(nest *ir.Operation) []BoundCheck {
	hostValue := func(v *ir.Value) bool {
		if def := v.DefiningOp(); def != nil && def.Name() == "arith.constant" {
			return true
		}
		return !inside(v, nest)
	}
	bounds := func(iv *ir.Value) (lb, ub, step *ir.Value, ok bool) {
		b := iv.ParentBlock()
		if b == nil {
			return nil, nil, nil, false
		}
		l := b.ParentOp()
		switch {
		case l == nil:
			return nil, nil, nil, false
		case l.Name() == loop.ForOp:
			if iv != b.Argument(0) {
				return nil, nil, nil, false
			}
			lb, ub, step = loop.ForBounds(l)
		case l.Name() == loop.ParallelOp:
			lbs, ubs, steps, _, err := loop.ParallelBounds(l)
			if err != nil || iv.Index() >= len(lbs) {
				return nil, nil, nil, false
			}
			lb, ub, step = lbs[iv.Index()], ubs[iv.Index()], steps[iv.Index()]
		default:
			return nil, nil, nil, false
		}
		if l != nest && !l.IsAncestor(nest) {
			return nil, nil, nil, false
		}
		return lb, ub, step, hostValue(lb) && hostValue(ub) && hostValue(step)
	}
	type key struct {
		buf        *ir.Value
		dim        int
		lb, ub, st *ir.Value
	}
	seen := map[key]bool{}
	var out []BoundCheck
	nest.Walk(func(op *ir.Operation) bool {
		first := 1
		switch op.Name() {
		case loop.IfOp:
			return false
		case loop.StoreOp:
			first = 2
		case loop.LoadOp:
		default:
			return true
		}
		buf := op.Operand(first - 1)
		if inside(buf, nest) {
			return true
		}
		for d, v := range op.Operands()[first:] {
			if !v.IsBlockArgument() {
				continue
			}
			lb, ub, step, ok := bounds(v)
			if !ok {
				continue
			}
			if k := (key{buf, d, lb, ub, step}); !seen[k] {
				seen[k] = true
				out = append(out, BoundCheck{Buf: buf, Dim: d, Lb: lb, Ub: ub, Step: step})
			}
		}
		return true
	})
	return out
}
