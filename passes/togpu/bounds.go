package togpu

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// Most indices of a nest are affine in its induction variables and in
// range by construction. An index computed from loaded data (graph.gather's
// indices: an embedding's ids) is not, and nothing on the device stops one
// at or past its dimension's size (or negative) from reading or writing
// outside the buffer. A kernel's accesses with such an index are guarded:
// out of range, a load gives zero and a store is skipped. The values are
// those of the CPU backend's checked accesses (targets/cpu/checked.go),
// which also report the index as an error, as the interpreter does; the
// device does not report it (the frontend checks the indices the host
// holds before a call: frontend.Tensor.Gather).

// guardAccess makes the access o (a loop.load or loop.store of a global
// buffer of the given sizes at idx, its indices from operand at+1 on)
// safe for the indices computed from loaded data (tainted) that are out
// of range, and returns the op that now accesses the buffer (nil if none
// does) and its indices: a load reads at index 0 in those dimensions
// where one is out of range, and its value is replaced by zero there; a
// store moves into a loop.if. The other indices are in range by
// construction and stay. A buffer whose data-indexed dimension may be
// empty (a dynamic size) is read under a loop.if, since index 0 is then
// outside it; one whose such dimension is statically empty is never
// accessed.
func guardAccess(b *ir.Builder, o *ir.Operation, at int, idx, sizes []*ir.Value, tainted map[*ir.Value]bool) (*ir.Operation, []*ir.Value, error) {
	loc := o.Loc()
	b.SetInsertionPointBefore(o)
	var in *ir.Value
	empty, maybeEmpty := false, false
	for d, i := range idx {
		if !tainted[i] {
			continue
		}
		if d >= len(sizes) || sizes[d] == nil {
			return nil, nil, ir.Errorf(loc, "%s: the size of dimension %d of a buffer indexed by loaded data is not passed to the kernel", PassName, d)
		}
		if n, ok := foldedInt(sizes[d], 0); !ok {
			maybeEmpty = true
		} else if n == 0 {
			empty = true
		}
		// Unsigned: a negative index is past every size.
		c := arith.NewCmpI(b, loc, arith.CmpIULT, i, sizes[d])
		if in == nil {
			in = c
		} else {
			in = arith.Binary(b, arith.OpAndI, loc, in, c)
		}
	}
	if in == nil {
		return o, idx, nil // no index from loaded data: nothing to guard
	}
	if o.Name() == loop.StoreOp {
		if empty {
			o.Erase()
			return nil, nil, nil
		}
		var moved *ir.Operation
		loop.If(b, loc, in, nil, func(nb *ir.Builder) []*ir.Value {
			moved = nb.Insert(o.Clone(nil))
			return nil
		}, nil)
		o.Erase()
		return moved, idx, nil
	}
	v := o.Result(0)
	zero, err := zeroOf(b, loc, v.Type())
	if err != nil {
		return nil, nil, ir.Errorf(loc, "%s: %v", PassName, err)
	}
	if empty {
		v.ReplaceAllUsesWith(zero)
		o.Erase()
		return nil, nil, nil
	}
	if maybeEmpty {
		var moved *ir.Operation
		r := loop.If(b, loc, in, []ir.Type{v.Type()}, func(nb *ir.Builder) []*ir.Value {
			moved = nb.Insert(o.Clone(nil))
			return []*ir.Value{moved.Result(0)}
		}, func(*ir.Builder) []*ir.Value { return []*ir.Value{zero} })
		v.ReplaceAllUsesWith(r.Result(0))
		o.Erase()
		return moved, idx, nil
	}
	z := arith.ConstantIndex(b, loc, 0)
	safe := make([]*ir.Value, len(idx))
	for d, i := range idx {
		safe[d] = i
		if tainted[i] {
			safe[d] = arith.NewSelect(b, loc, in, i, z)
		}
	}
	o.SetOperands(append([]*ir.Value{o.Operand(0)}, safe...))
	b.SetInsertionPointAfter(o)
	sel := arith.NewSelect(b, loc, in, v, zero)
	var uses []*ir.OpOperand
	for u := range v.Uses() {
		if u.Owner() != sel.DefiningOp() {
			uses = append(uses, u)
		}
	}
	for _, u := range uses {
		u.Set(sel)
	}
	return o, safe, nil
}

// zeroOf inserts the zero of scalar type t.
func zeroOf(b *ir.Builder, loc ir.Location, t ir.Type) (*ir.Value, error) {
	switch {
	case ir.IsFloat(t):
		return arith.ConstantFloat(b, loc, 0, t), nil
	case ir.IsInteger(t) || t == ir.Index:
		return arith.ConstantInt(b, loc, 0, t), nil
	}
	return nil, fmt.Errorf("a load of %s indexed by loaded data", t)
}
