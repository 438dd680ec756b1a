package fusion

import (
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// Recomputing values instead of storing them (after planning).
//
// A value a group computes and another group reads crosses memory: the
// producer's kernel writes it, each reader's kernel loads it. When the
// value is a short pointwise function of what the producer itself loads
// (its cone: the pointwise ops of the producer's group it depends on,
// back to values from outside the group), a reader can compute it from
// those instead, and the bytes it loads are the cone's inputs that it
// does not load anyway. Batch norm in mixed precision is the case: its
// centred input x − mean is float32 (4 bytes an element) but a function
// of the bf16 input (2 bytes) and a per-channel mean; the gradient of
// its input, a float32 chain of the bf16 input, the bf16 gradient and
// per-channel sums. Stored, each such value costs a float32 write and a
// float32 load per reader; recomputed, a bf16 load or nothing.
// TorchInductor inlines pointwise nodes into their readers the same way.

// maxRematOps bounds the ops of a cone recomputed in a reader.
const maxRematOps = 24

// A small value (at most smallRemat elements, such as a batch norm's
// per-channel scale and shift computed from its running statistics) that
// groups over larger spaces read (through the views that broadcast it)
// is recomputed in each of them when its cone has at most
// maxSmallRematOps ops, reads only the function's arguments and nothing
// else needs it stored: the producer's kernel, a launch
// for a few thousand elements, then disappears. ResNet-50's inference
// ran 53 such kernels, one per batch norm, each costing a launch and
// the host's time to issue it (call 2 of session 12: 0.95 ms of the
// 5.95 ms profiled were the device idle between ops). Not when the cone
// holds a special function (costlyAtEachPoint): the values are kept in
// one kernel per space instead (argumentCopies), 6 for those 53.
const (
	smallRemat       = 1 << 14
	maxSmallRematOps = 8
)

// broadcasts reports whether a reader over space reads r, a small
// floating-point value (smallRemat), as a broadcast: space is static and
// larger. (Readers that reduce are left out: resnet50_train's backward
// pass, its batch norms' per-channel values recomputed in the row
// kernels of their gradients, regrouped into 19 more kernels.) Integer
// values are left stored: a gather's computed indices
// (autodiff's flips of convolution windows, n-1 - iota) recomputed in
// the gather's kernel would keep its index arithmetic in 64 bits
// (TestTinyResNetMixedIndices32).
func broadcasts(r *ir.Value, space []int64) bool {
	n, m := ir.NumElements(shapeOf(r)), ir.NumElements(space)
	return n >= 0 && n <= smallRemat && m > n && ir.IsFloat(ir.ElementTypeOf(r.Type()))
}

// costlyAtEachPoint reports whether op, in the cone of a small value,
// costs more at each point of a broadcast reader than the value's own
// kernel does once: the special functions and divisions, a multi-
// instruction sequence or a quarter-rate unit per element. ResNet-50's
// inference recomputed each batch norm's scale γ·rsqrt(var + ε) and
// shift at every element of its activations: ~60 of the 150
// instructions a vector of four took in its BN+ReLU kernels, which ran
// slower than the bandwidth allows; stored once per channel space, the
// kernels load them instead.
func costlyAtEachPoint(op *ir.Operation) bool { return costlyOps[op.Name()] }

var costlyOps = map[string]bool{
	graph.OpRsqrt: true, graph.OpSqrt: true, graph.OpExp: true, graph.OpLog: true, graph.OpTanh: true,
	graph.OpSigmoid: true, graph.OpGELU: true, graph.OpErf: true, graph.OpSin: true, graph.OpCos: true,
	graph.OpReciprocal: true, graph.OpDiv: true, graph.OpPow: true,
}

// rematReader is one group that reads a value of another group, and the
// ops of that group that read it (directly or through views).
type rematReader struct {
	g     *group
	users []*ir.Operation
}

// rematerialize recomputes, in the groups that read it, each pointwise
// value of a group whose cone loads fewer bytes than the value (see
// rematReaders), and then drops the ops nothing reads any more. It
// repeats until nothing changes: a value recomputed in a reader may make
// that reader's own results cheap to recompute in turn. Then siblings
// merge again (horizontal, pointwise and row reductions): readers that
// recompute a value from the same input now read that input.
func (p *planner) rematerialize() {
	again := false
	for round := 0; round < 8; round++ {
		changed := false
		for _, g := range slices.Clone(p.groups) {
			if p.groupOf[g.ops[0]] != g {
				continue
			}
			for _, op := range slices.Clone(g.ops) {
				if classify(op) != pointwise || p.groupOf[op] != g {
					continue
				}
				for _, r := range op.Results() {
					if p.rematValue(g, r) {
						changed = true
					}
				}
			}
		}
		if !changed {
			break
		}
		p.dropDeadGrouped()
		again = true
	}
	if again && p.opts.Horizontal {
		// Readers that now load the same producer's inputs (the sum
		// and the sum of squares of batch norm's centred input, each
		// recomputing it from the convolution's result) merge.
		for _, g := range p.groups {
			g.users = g.users[:0]
			for _, op := range g.ops {
				for _, u := range p.usersOf(op) {
					if p.groupOf[u] != g && !slices.Contains(g.users, u) {
						g.users = append(g.users, u)
					}
				}
			}
		}
		p.depth = nil // recomputing readers read other nodes now
		p.horizontal(rowWise)
	}
}

// rowWise reports whether g is a pointwise group or reduces rows of
// innermost axes: the siblings rematerialize merges again. Column
// reductions (a layer norm's weight gradient summed over the tokens, a
// thread a column) are left apart: merged, each thread of the kernel
// loops over all their rows with a few loads in flight (GPT-2's training
// step on the H200: three such sums that recompute x̂ took 0.49 ms in one
// kernel, 550 GB/s).
func rowWise(g *group) bool { return g.kind == Pointwise || g.inner >= 0 }

// rematValue recomputes r, a result of a pointwise op of group g, in the
// groups that read it where that loads fewer bytes than reading r, and
// reports whether it did.
func (p *planner) rematValue(g *group, r *ir.Value) bool {
	size := bytesOf(r)
	if size <= 0 {
		return false
	}
	readers, stored := p.rematReaders(g, r)
	if len(readers) == 0 {
		return false
	}
	broadcast := !sameSpaceReaders(readers, shapeOf(r))
	// Two cones: back to g's inputs, or cut at the values g stores
	// anyway (a bf16 gradient that the weight gradient's convolution
	// reads too, rather than the residual chain that computed it); the
	// one that loads fewer bytes. Broadcast readers take only the first:
	// a cut cone leaves g's kernel running, and all that recomputing a
	// small value then saves is its few cached bytes, paid for with the
	// cone's ops at every point of every reader.
	cuts := []bool{false, true}
	if broadcast {
		cuts = cuts[:1]
	}
	var cone []*ir.Operation
	var inputs []*ir.Value // the cone's leaves
	var marginal []int64
	var total int64
	for _, cut := range cuts {
		c, leaves, ok := p.cone(g, r, cut)
		if !ok {
			continue
		}
		m := make([]int64, len(readers))
		var t int64
		for i, rd := range readers {
			m[i] = p.newLoads(rd.g, leaves)
			t += m[i]
		}
		if cone == nil || t < total {
			cone, inputs, marginal, total = c, leaves, m, t
		}
	}
	if cone == nil {
		return false
	}
	if broadcast {
		if op := slices.IndexFunc(cone, costlyAtEachPoint); op >= 0 {
			p.logf("keep %s stored: its broadcast readers would compute %s at each of their points", described{r.DefiningOp()}, described{cone[op]})
			return false
		}
	}
	// Not stored anyway: recomputing in every reader also saves the
	// producer's write (and a small value's launch, whatever the bytes).
	all := !stored && (total < int64(len(readers)+1)*size ||
		broadcast && len(cone) <= maxSmallRematOps && !slices.ContainsFunc(inputs, computed))
	if broadcast && !all {
		return false // the broadcast readers of a small value take all of it or none
	}
	done := false
	for i, rd := range readers {
		switch {
		case !all && marginal[i] >= size:
			p.logf("keep %s stored for %s: recomputing it loads %d bytes, reading it %d", described{r.DefiningOp()}, rd.g, marginal[i], size)
			continue
		case p.opts.MaxGroupOps > 0 && len(rd.g.ops)+len(cone) > p.opts.MaxGroupOps:
			p.logf("keep %s stored for %s: recomputing its %d ops would exceed max-group-ops=%d", described{r.DefiningOp()}, rd.g, len(cone), p.opts.MaxGroupOps)
			continue
		}
		p.recompute(rd, r, cone)
		p.logf("recompute %s (%d ops) in %s: loads %d bytes instead of %d", described{r.DefiningOp()}, len(cone), rd.g, marginal[i], size)
		done = true
	}
	return done
}

// rematReaders returns the groups other than g that read r (through
// views) over r's own space with a kind that can compute it (pointwise or
// reduction), and whether r is stored anyway: something else reads it (a
// template, a copy, a function result, a non-graph op, a group over
// another space).
func (p *planner) rematReaders(g *group, r *ir.Value) ([]rematReader, bool) {
	var readers []rematReader
	stored := false
	space := shapeOf(r)
	p.forUsers(r, func(u *ir.Operation) {
		h := p.groupOf[u]
		switch {
		case h == g:
			return
		case h == nil || !(h.kind == Pointwise || h.kind.reduces() || h.kind.template() && classify(u) == pointwise) ||
			!(sameSpace(space, h.space) || broadcasts(r, h.space) && !h.kind.reduces()) || ir.NumElements(space) < 0:
			stored = true
			return
		}
		for i := range readers {
			if readers[i].g == h {
				if !slices.Contains(readers[i].users, u) {
					readers[i].users = append(readers[i].users, u)
				}
				return
			}
		}
		readers = append(readers, rematReader{g: h, users: []*ir.Operation{u}})
	})
	return readers, stored
}

// computed reports whether v is computed in the function (not one of
// its arguments): a small value recomputed in broadcast readers is a
// function of the arguments only, as a batch norm's scale of its running
// statistics.
func computed(v *ir.Value) bool { return v.DefiningOp() != nil }

// sameSpaceReaders reports whether every reader runs over space.
func sameSpaceReaders(readers []rematReader, space []int64) bool {
	return !slices.ContainsFunc(readers, func(rd rematReader) bool { return !sameSpace(space, rd.g.space) })
}

// cone returns the pointwise ops of g that r depends on within g and the
// views between them, in program order, and the values from outside them
// that they read (looking through views, which readers clone; constants
// are free), or false when it has more than maxRematOps pointwise ops or
// reads a non-pointwise op of g other than a template over more than a
// sixteenth of r's bytes (a reduction's rows: only small reduced values,
// such as a row's maximum, are read instead). With cut, values of g that
// something outside g reads (stored anyway) are leaves too.
func (p *planner) cone(g *group, r *ir.Value, cut bool) ([]*ir.Operation, []*ir.Value, bool) {
	var ops, views []*ir.Operation
	var leaves []*ir.Value
	seen := map[*ir.Operation]bool{}
	ok := true
	var visit func(v *ir.Value)
	visit = func(v *ir.Value) {
		if !ok {
			return
		}
		def := p.top(v.DefiningOp())
		switch {
		case def == nil:
		case p.groupOf[def] == nil && classify(def) == constant:
			return
		case p.groupOf[def] == nil && classify(def) == view && p.staged[def] == 0:
			if !seen[def] {
				seen[def] = true
				views = append(views, def)
				for _, o := range def.Operands() {
					visit(o)
				}
			}
			return
		case p.groupOf[def] == g && classify(def) == pointwise && !(cut && v != r && p.usedOutside(v, g)):
			if seen[def] {
				return
			}
			seen[def] = true
			ops = append(ops, def)
			if len(ops) > maxRematOps {
				ok = false
				return
			}
			for _, o := range def.Operands() {
				visit(o)
			}
			return
		case p.groupOf[def] == g && classify(def) != template && !(cut && p.usedOutside(v, g)) && bytesOf(v)*16 > bytesOf(r):
			ok = false
			return
		}
		if !slices.Contains(leaves, v) {
			leaves = append(leaves, v)
		}
	}
	visit(r)
	if !ok {
		return nil, nil, false
	}
	for _, v := range views {
		if slices.ContainsFunc(v.Operands(), func(o *ir.Value) bool { return seen[p.top(o.DefiningOp())] }) {
			ops = append(ops, v) // a view of a cone value: cloned with the cone
		}
	}
	slices.SortFunc(ops, func(a, b *ir.Operation) int { return p.pos[a] - p.pos[b] })
	return ops, leaves, true
}

// newLoads returns the bytes of leaves that group h does not load or
// compute already.
func (p *planner) newLoads(h *group, leaves []*ir.Value) int64 {
	read := map[*ir.Value]bool{}
	for _, op := range h.ops {
		for _, r := range op.Results() {
			read[r] = true
		}
		for _, o := range op.Operands() {
			p.loadsOf(o, func(v *ir.Value) { read[v] = true })
		}
	}
	var n int64
	for _, v := range leaves {
		if !read[v] {
			n += bytesOf(v)
		}
	}
	return n
}

// loadsOf calls f with v and, through the views that define v (cloned
// into the readers), the values they read.
func (p *planner) loadsOf(v *ir.Value, f func(*ir.Value)) {
	f(v)
	def := p.top(v.DefiningOp())
	if def != nil && p.groupOf[def] == nil && classify(def) == view && p.staged[def] == 0 {
		for _, o := range def.Operands() {
			p.loadsOf(o, f)
		}
	}
}

// recompute clones cone (computing r) into reader rd's group, before its
// first op that reads r, and makes rd's users read the clone (through
// clones of the views between r and them); others, such as the template
// of the group, still read r.
func (p *planner) recompute(rd rematReader, r *ir.Value, cone []*ir.Operation) {
	h := rd.g
	first := rd.users[0]
	for _, u := range rd.users[1:] {
		if p.pos[u] < p.pos[first] {
			first = u
		}
	}
	m := map[*ir.Value]*ir.Value{}
	for _, op := range cone {
		c := op.Clone(m)
		p.block.InsertBefore(c, first)
		if classify(op) != view {
			p.groupOf[c] = h
			h.ops = append(h.ops, c)
		}
	}
	// The uses of r by rd's users, directly or through ungrouped views,
	// are redirected: each view on the way is cloned to read the clone.
	var redirect func(v, nv *ir.Value)
	redirect = func(v, nv *ir.Value) {
		var uses []*ir.OpOperand
		for u := range v.Uses() {
			uses = append(uses, u)
		}
		for _, use := range uses {
			u := p.top(use.Owner())
			switch {
			case u == nil:
			case slices.Contains(rd.users, u):
				use.Set(nv)
			case p.groupOf[u] == nil && classify(u) == view && p.staged[u] == 0 && p.readBy(u.Result(0), rd.users):
				c := u.Clone(map[*ir.Value]*ir.Value{v: nv})
				p.block.InsertBefore(c, first)
				redirect(u.Result(0), c.Result(0))
			}
		}
	}
	redirect(r, m[r])
	p.renumber()
	slices.SortFunc(h.ops, func(a, b *ir.Operation) int { return p.pos[a] - p.pos[b] })
}

// readBy reports whether one of users reads v (through views).
func (p *planner) readBy(v *ir.Value, users []*ir.Operation) bool {
	hit := false
	p.forUsers(v, func(u *ir.Operation) { hit = hit || slices.Contains(users, u) })
	return hit
}

// dropDeadGrouped erases the grouped ops whose results nothing reads any
// more (their readers recompute them), the views left unread, and the
// groups left empty.
func (p *planner) dropDeadGrouped() {
	ops := p.block.Ops()
	for i := len(ops) - 1; i >= 0; i-- {
		op := ops[i]
		g := p.groupOf[op]
		c := classify(op)
		if (g == nil && c != view) || op.NumResults() == 0 || slices.ContainsFunc(op.Results(), (*ir.Value).HasUses) {
			continue
		}
		if g != nil {
			g.ops = slices.DeleteFunc(g.ops, func(x *ir.Operation) bool { return x == op })
			delete(p.groupOf, op)
			p.logf("drop %s: its readers recompute it", described{op})
		}
		op.Erase()
		delete(p.pos, op)
	}
	p.groups = slices.DeleteFunc(p.groups, func(g *group) bool { return len(g.ops) == 0 })
	p.renumber()
}
