package togpu

import (
	"slices"

	funcs "github.com/strata-ir/strata/dialects/func"
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
func mergeRowLoops(ctx *ir.Context, body *ir.Block) int { return mergeLoops(ctx, body, false) }

// mergeStoreLoops is mergeRowLoops for the body of a nest each thread runs
// whole (the pointwise mapping), where the later loop may also store: a
// column sum fused with the pointwise values it sums, both over a run of
// rows (GPT-2's bias gradients: Σ over 64 tokens of gelu'(x)·g next to the
// stored gelu'(x)·g, and of the q, k, v gradients next to their stored
// concatenation), computed the inputs once and loaded them once instead of
// twice. A store may move: the later loop's stores then run interleaved
// with the earlier loop's loads and before the ops between that stay, so
// the buffers it stores may be none that the earlier loop or an op between
// reads or writes (mayAlias: distinct allocations, or a view's own
// allocation).
func mergeStoreLoops(ctx *ir.Context, body *ir.Block) int { return mergeLoops(ctx, body, true) }

// mergeLoops merges the loops of body as mergeRowLoops, the later loop of
// a pair storing too when stores is set (mergeStoreLoops).
func mergeLoops(ctx *ir.Context, body *ir.Block, stores bool) int {
	n := 0
	for first := body.First(); first != nil; first = first.Next() {
		for first.Name() == loop.ForOp && len(buffers(first, loop.StoreOp)) == 0 {
			second, movable := mergeableAfter(first, stores)
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
// mergeLoops may merge into first, or nil, and the ops between them
// that move before first: those without regions, pure or loads of a buffer
// nothing between stores, that read nothing defined from first on by an
// op that stays. With stores, the loop may store buffers that neither
// first nor an op between accesses.
func mergeableAfter(first *ir.Operation, stores bool) (*ir.Operation, []*ir.Operation) {
	defined := map[*ir.Value]bool{}
	stored := map[*ir.Value]bool{}
	accessed := buffers(first, loop.LoadOp)
	var movable []*ir.Operation
	for op := first; op != nil && !op.HasTrait(ir.Terminator); op = op.Next() {
		if op != first && op.Name() == loop.ForOp && sameRange(first, op) && !readsAny(op, defined) {
			writes := buffers(op, loop.StoreOp)
			if len(writes) == 0 && !overlaps(stored, buffers(op, loop.LoadOp)) {
				return op, movable
			}
			if stores && !mayAliasAny(stored, buffers(op, loop.LoadOp)) && !mayAliasAny(writes, accessed) {
				return op, movable
			}
		}
		if op != first {
			for mem := range buffers(op, loop.LoadOp) {
				accessed[mem] = true
			}
			for mem := range buffers(op, loop.StoreOp) {
				accessed[mem] = true
			}
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

// mayAliasAny reports whether a buffer of a may share memory with one of b.
func mayAliasAny(a, b map[*ir.Value]bool) bool {
	for x := range a {
		for y := range b {
			if mayAlias(x, y) {
				return true
			}
		}
	}
	return false
}

// mayAlias reports whether buffers a and b may share memory: they do
// unless their allocations (through loop.view) are two distinct
// loop.alloc results, or a loop.alloc and an argument of the function
// (which the caller allocated before). Two arguments may be one buffer.
func mayAlias(a, b *ir.Value) bool {
	a, b = viewRoot(a), viewRoot(b)
	if a == b {
		return true
	}
	isAlloc := func(v *ir.Value) bool { return v.DefiningOp() != nil && v.DefiningOp().Name() == loop.AllocOp }
	isArg := func(v *ir.Value) bool {
		fn := v.ParentBlock().ParentOp()
		return v.IsBlockArgument() && fn != nil && fn.Name() == funcs.OpFunc
	}
	return !(isAlloc(a) && (isAlloc(b) || isArg(b)) || isArg(a) && isAlloc(b))
}

// viewRoot follows loop.view to the buffer v views.
func viewRoot(v *ir.Value) *ir.Value {
	for v.DefiningOp() != nil && v.DefiningOp().Name() == loop.ViewOp {
		v = v.DefiningOp().Operand(0)
	}
	return v
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
// carries both loops' values, and returns it. In the merged body the
// second loop's pure ops that compute what an earlier op computes (its
// index arithmetic, and with it its loads of the same elements) reuse that
// op, and a load of an element loaded before reuses that load unless a
// store that may write its buffer came between.
func mergeFor(ctx *ir.Context, first, second *ir.Operation) *ir.Operation {
	lb, ub, step := loop.ForBounds(first)
	inits := slices.Concat(loop.ForInits(first), loop.ForInits(second))
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(first)
	merged := loop.For(b, first.Loc(), lb, ub, step, inits, func(b *ir.Builder, iv *ir.Value, iters []*ir.Value) []*ir.Value {
		loads := map[loadKey]*ir.Value{}
		pure := map[string][]*ir.Operation{}
		var ifs []*ir.Operation // loop.ifs that only load, no store since that may write what they load
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
				twin := pureTwin(pure, op, mapValues(m, op.Operands()))
				if twin == nil {
					twin = ifTwin(ifs, op, m)
				}
				if twin != nil {
					for r, v := range op.Results() {
						m[v] = twin.Result(r)
					}
					continue
				}
				c := b.Insert(op.Clone(m))
				if op.HasTrait(ir.Pure) && op.NumRegions() == 0 {
					pure[op.Name()] = append(pure[op.Name()], c)
				}
				if c.Name() == loop.IfOp && len(buffers(c, loop.StoreOp)) == 0 {
					ifs = append(ifs, c)
				}
				if stored := buffers(c, loop.StoreOp); len(stored) > 0 {
					for key := range loads {
						if mayAliasAny(stored, map[*ir.Value]bool{key.mem: true}) {
							delete(loads, key)
						}
					}
					ifs = slices.DeleteFunc(ifs, func(f *ir.Operation) bool { return mayAliasAny(stored, buffers(f, loop.LoadOp)) })
				}
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

// ifTwin returns a loop.if of ifs that computes what op (a loop.if of a
// merged loop's body, its outer operands mapped by m) computes: the same
// condition and branches of the same ops on the same values, or nil. The
// branches may load (ifs holds only loop.ifs without stores, none of
// whose buffers a store since may have written): the q, k, v gradients'
// concatenation loads each element in a branch, once for the column sum
// and once for the stored copy.
func ifTwin(ifs []*ir.Operation, op *ir.Operation, m map[*ir.Value]*ir.Value) *ir.Operation {
	if op.Name() != loop.IfOp || len(buffers(op, loop.StoreOp)) > 0 {
		return nil
	}
	for _, f := range ifs {
		if sameOp(f, op, m, map[*ir.Value]*ir.Value{}) {
			return f
		}
	}
	return nil
}

// sameOp reports whether op a computes what op b does, b's operands
// defined outside it mapped by m and those defined in its regions by env
// (which it extends with b's values inside a's regions): same name,
// properties, attributes, result types, operands and region structure.
func sameOp(a, b *ir.Operation, m, env map[*ir.Value]*ir.Value) bool {
	if a.Name() != b.Name() || a.NumOperands() != b.NumOperands() || a.NumResults() != b.NumResults() ||
		a.NumRegions() != b.NumRegions() || !a.Properties().Equal(b.Properties()) || !a.Attributes().Equal(b.Attributes()) {
		return false
	}
	for i, v := range b.Operands() {
		w, ok := env[v]
		if !ok {
			w = laneValue(m, v)
		}
		if a.Operand(i) != w {
			return false
		}
	}
	for i, r := range b.Results() {
		if r.Type() != a.Result(i).Type() && r.Type().String() != a.Result(i).Type().String() {
			return false
		}
	}
	for i := range b.NumRegions() {
		ra, rb := a.Region(i), b.Region(i)
		if ra.Empty() != rb.Empty() {
			return false
		}
		if rb.Empty() {
			continue
		}
		ba, bb := ra.Blocks(), rb.Blocks()
		if len(ba) != 1 || len(bb) != 1 || ba[0].NumArguments() != bb[0].NumArguments() {
			return false
		}
		for k := range bb[0].NumArguments() {
			env[bb[0].Argument(k)] = ba[0].Argument(k)
		}
		oa, ob := ba[0].Ops(), bb[0].Ops()
		if len(oa) != len(ob) {
			return false
		}
		for k := range ob {
			if !sameOp(oa[k], ob[k], m, env) {
				return false
			}
			for r, v := range ob[k].Results() {
				env[v] = oa[k].Result(r)
			}
		}
	}
	for r, v := range b.Results() {
		env[v] = a.Result(r)
	}
	return true
}

// pureTwin returns an op of seen (by name) that computes what the pure,
// region-free op computes from operands, or nil.
func pureTwin(seen map[string][]*ir.Operation, op *ir.Operation, operands []*ir.Value) *ir.Operation {
	if !op.HasTrait(ir.Pure) || op.NumRegions() > 0 {
		return nil
	}
	for _, prev := range seen[op.Name()] {
		if slices.Equal(prev.Operands(), operands) && slices.EqualFunc(prev.Results(), op.Results(),
			func(a, b *ir.Value) bool { return a.Type() == b.Type() || a.Type().String() == b.Type().String() }) &&
			prev.Properties().Equal(op.Properties()) && prev.Attributes().Equal(op.Attributes()) {
			return prev
		}
	}
	return nil
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
