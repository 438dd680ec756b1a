package togpu

import (
	"slices"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// mergeRowLoops merges, in the body of a row nest, each loop.for over the
// same range as an earlier loop.for of the body into that loop, when
// neither stores and the later one reads nothing the earlier one, or an op
// between them that depends on it, computes: one loop carries both
// reductions, and a load both make of the same element is made once.
// Batch norm's statistics (Σd and Σd² over a row) and the sums of its
// backward pass (Σdy, Σdy·d) read each row once instead of once a sum:
// scalar loads, one a thread in flight, are what such rows cost (rows of
// 784 bf16 ran at 455 GB/s on the H200, bench/NOTES.md, session 11); the
// cross-entropy's row maximum and its one-hot pick of the label's logit
// (the label loaded between them) read the 50304 logits of a row once,
// not twice. The merged loop takes the earlier loop's place; the ops
// between that do not depend on the earlier loop (constants, index
// arithmetic, loads of buffers nothing between stores) move before it, the
// others keep their order after it. It returns the number of merges.
func mergeRowLoops(ctx *ir.Context, body *ir.Block) int {
	n := 0
	for first := body.First(); first != nil; first = first.Next() {
		if first.Name() != loop.ForOp || len(buffers(first, loop.StoreOp)) > 0 {
			continue
		}
		for {
			second, movable := mergeableAfter(first)
			if second == nil {
				break
			}
			for _, op := range movable {
				op.Remove()
				body.InsertBefore(op, first)
			}
			first = mergeFor(ctx, first, second)
			n++
		}
	}
	return n
}

// mergeableAfter returns a loop.for after first in its block that
// mergeRowLoops may merge into first, or nil, and the ops between them
// that move before first: those without regions, pure or loads of a buffer
// nothing between stores, that read nothing defined from first on by an
// op that stays.
func mergeableAfter(first *ir.Operation) (*ir.Operation, []*ir.Operation) {
	defined := map[*ir.Value]bool{}
	stored := map[*ir.Value]bool{}
	var movable []*ir.Operation
	for op := first; op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
		if op != first && op.Name() == loop.ForOp && sameRange(first, op) && len(buffers(op, loop.StoreOp)) == 0 &&
			!overlaps(stored, buffers(op, loop.LoadOp)) && !readsAny(op, defined) {
			return op, movable
		}
		if op != first && op.NumRegions() == 0 && !readsAny(op, defined) &&
			(op.HasTrait(ir.Pure) || op.Name() == loop.LoadOp && !overlaps(stored, buffers(op, loop.LoadOp))) {
			movable = append(movable, op)
			continue
		}
		for _, r := range op.Results() {
			defined[r] = true
		}
		for mem := range buffers(op, loop.StoreOp) {
			stored[mem] = true
		}
	}
	return nil, nil
}

// sameRange reports whether two loop.for ops have the same bounds and step
// (the same values, or equal constants).
func sameRange(a, b *ir.Operation) bool {
	alb, aub, astep := loop.ForBounds(a)
	blb, bub, bstep := loop.ForBounds(b)
	same := func(x, y *ir.Value) bool {
		if x == y {
			return true
		}
		cx, ok1 := staticInt(x)
		cy, ok2 := staticInt(y)
		return ok1 && ok2 && cx == cy
	}
	return same(alb, blb) && same(aub, bub) && same(astep, bstep)
}

// readsAny reports whether op, or an op inside it, reads one of values.
func readsAny(op *ir.Operation, values map[*ir.Value]bool) bool {
	hit := false
	op.Walk(func(o *ir.Operation) bool {
		hit = hit || slices.ContainsFunc(o.Operands(), func(v *ir.Value) bool { return values[v] })
		return !hit
	})
	return hit
}

// mergeFor replaces loops first and second (over the same range, second
// reading nothing defined from first on) by one loop at first's place that
// carries both loops' values, and returns it.
func mergeFor(ctx *ir.Context, first, second *ir.Operation) *ir.Operation {
	lb, ub, step := loop.ForBounds(first)
	inits := slices.Concat(loop.ForInits(first), loop.ForInits(second))
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(first)
	merged := loop.For(b, first.Loc(), lb, ub, step, inits, func(b *ir.Builder, iv *ir.Value, iters []*ir.Value) []*ir.Value {
		loads := map[loadKey]*ir.Value{}
		var next []*ir.Value
		for i, l := range []*ir.Operation{first, second} {
			body := loop.Body(l)
			m := map[*ir.Value]*ir.Value{body.Argument(0): iv}
			off := 0
			if i == 1 {
				off = len(loop.ForInits(first))
			}
			for j := range body.NumArguments() - 1 {
				m[body.Argument(1+j)] = iters[off+j]
			}
			for op := body.First(); op != nil; op = op.Next() {
				if op.HasTrait(ir.Terminator) {
					next = append(next, mapValues(m, op.Operands())...)
					break
				}
				if key, ok := loadKeyOf(op, m); ok {
					if v, seen := loads[key]; seen {
						m[op.Result(0)] = v
						continue
					}
					loads[key] = b.Insert(op.Clone(m)).Result(0)
					continue
				}
				b.Insert(op.Clone(m))
			}
		}
		return next
	})
	n1 := first.NumResults()
	for i, r := range first.Results() {
		r.ReplaceAllUsesWith(merged.Result(i))
	}
	for i, r := range second.Results() {
		r.ReplaceAllUsesWith(merged.Result(n1 + i))
	}
	first.Erase()
	second.Erase()
	return merged
}

// mapValues maps vs through m (values not in m map to themselves).
func mapValues(m map[*ir.Value]*ir.Value, vs []*ir.Value) []*ir.Value {
	out := make([]*ir.Value, len(vs))
	for i, v := range vs {
		if w, ok := m[v]; ok {
			out[i] = w
		} else {
			out[i] = v
		}
	}
	return out
}

// loadKeyOf returns the key of load op's buffer and indices mapped
// through m, or false when op is not a load or has more than maxLoadRank
// indices.
func loadKeyOf(op *ir.Operation, m map[*ir.Value]*ir.Value) (loadKey, bool) {
	if op.Name() != loop.LoadOp || op.NumOperands() > 1+maxLoadRank {
		return loadKey{}, false
	}
	vs := mapValues(m, op.Operands())
	k := loadKey{mem: vs[0]}
	copy(k.idx[:], vs[1:])
	return k, true
}
