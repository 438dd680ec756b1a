package lower

import (
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// ScatterNest is the loop.nest kind of a scatter_add group's nest: a
// loop.parallel over the result's dims but its axis (a, b) whose body is
// two loop.for nests, the first storing zeros along the axis, the second
// walking the indices i in order and adding updates[a, i, b] to the
// element out[a, index[i], b] (load, add, store). Each parallel point owns
// its column out[a, :, b], so the nest is correct on every backend and
// sums in the interpreter's order; convert-loop-to-gpu runs the f32 form
// with atomic adds over (a, i, b) instead (passes/togpu, scatter.go).
const ScatterNest = "scatter"

// buildScatter emits the nest of a scatter group (ScatterNest) and returns
// the result's buffer.
func (k *kernel) buildScatter(outs []*ir.Value) ([]*ir.Value, error) {
	if len(outs) != 1 {
		return nil, errorf(k.loc, "a scatter group yields its scatter_add's result alone, not %d values", len(outs))
	}
	op := k.resolve(outs[0]).DefiningOp()
	if op == nil || op.Name() != graph.OpScatterAdd {
		return nil, errorf(k.loc, "a scatter group must yield a graph.scatter_add's result")
	}
	upd, indices := op.Operand(0), op.Operand(1)
	us, is := shapeOf(k.resolve(upd)), shapeOf(k.resolve(indices))
	rs := shapeOf(op.Result(0))
	r := len(is)
	axis := int(graph.Axis(op))
	if axis < 0 {
		axis += len(rs)
	}
	if axis < 0 || axis >= len(rs) || len(us) != len(rs)-1+r {
		return nil, errorf(k.loc, "scatter_add of %v at indices %v into %v: axis %d is out of range", us, is, rs, axis)
	}
	// The sizes: the result's dims but the axis are the updates' dims
	// around the indices' (static or read at run time), the axis is size.
	sizeOf := func(d int) (*ir.Value, error) {
		switch {
		case d == axis:
			return arith.ConstantIndex(k.c.at, k.loc, rs[axis]), nil
		case d < axis:
			return k.size(upd, d)
		}
		return k.size(upd, d+r-1)
	}
	var dyn, ubs []*ir.Value
	for d := range rs {
		s, err := sizeOf(d)
		if err != nil {
			return nil, err
		}
		if rs[d] == ir.Dynamic {
			dyn = append(dyn, s)
		}
		if d != axis {
			ubs = append(ubs, s)
		}
	}
	tt, ok := op.Result(0).Type().(*ir.TensorType)
	if !ok || !tt.Ranked() {
		return nil, errorf(k.loc, "scatter_add's result is not a ranked tensor")
	}
	buf := loopAlloc(k.c.at, k.loc, bufferType(tt).(*ir.MemRefType), dyn)
	if rs[axis] == 0 || slices.Contains(rs, 0) {
		return []*ir.Value{buf}, nil // nothing to store (indices must be empty)
	}
	iubs := make([]*ir.Value, r)
	for d := range r {
		s, err := k.size(indices, d)
		if err != nil {
			return nil, err
		}
		iubs[d] = s
	}
	rank0 := len(ubs) == 0
	if rank0 {
		ubs = []*ir.Value{arith.ConstantIndex(k.c.at, k.loc, 1)}
	}
	lbs, steps := make([]*ir.Value, len(ubs)), make([]*ir.Value, len(ubs))
	zero, one := arith.ConstantIndex(k.c.at, k.loc, 0), arith.ConstantIndex(k.c.at, k.loc, 1)
	for i := range ubs {
		lbs[i], steps[i] = zero, one
	}
	elem := elemOf(op.Result(0))
	var err error
	loop.Parallel(k.c.at, k.loc, lbs, ubs, steps, nil, func(b *ir.Builder, ivs []*ir.Value) []*ir.Value {
		blk := b.InsertionBlock()
		k.par = blk.ParentOp()
		k.scopes = []*scope{{blk: blk}}
		if rank0 {
			ivs = nil
		}
		at := func(j *ir.Value) []*ir.Value { return slices.Concat(ivs[:axis], []*ir.Value{j}, ivs[axis:]) }
		_, err = k.forLoop(0, k.index(0), k.index(rs[axis]), nil, func(j *ir.Value, _ []*ir.Value) ([]*ir.Value, error) {
			z := k.zero(elem) // before place: making it moves the builder
			loop.Store(k.place(len(k.scopes)-1), k.loc, z, buf, at(j)...)
			return nil, nil
		})
		if err != nil {
			return nil
		}
		_, err = k.loops(0, iubs, nil, func(iv, _ []*ir.Value) ([]*ir.Value, error) {
			x, err := k.value(indices, iv)
			if err != nil {
				return nil, err
			}
			j := k.cast(arith.OpIndexCast, x, ir.Index)
			j = k.sel(k.cmpi(arith.CmpISLT, j, k.index(0)), k.indexOp(arith.OpAddI, j, k.index(rs[axis])), j)
			u, err := k.value(upd, slices.Concat(ivs[:axis], iv, ivs[axis:]))
			if err != nil {
				return nil, err
			}
			// The load of the sum so far sits in the innermost loop, not
			// memoized nor hoisted: out[a, j, b] changes at every index
			// (j may be the same for all, constant indices).
			dst, l := at(j), len(k.scopes)-1
			old := loop.Load(k.place(l), k.loc, buf, dst...)
			k.level[old] = l
			sum := k.binary(arith.OpAddF, old, u)
			loop.Store(k.place(l), k.loc, sum, buf, dst...)
			return nil, nil
		})
		return nil
	})
	if k.par != nil {
		k.par.SetAttr(loop.NestKindAttr, ir.Str(ScatterNest))
	}
	k.c.kernels++
	return []*ir.Value{buf}, err
}
