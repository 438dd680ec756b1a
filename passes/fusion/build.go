package fusion

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// usedOutside reports whether v is read by anything but g's ops (through
// views, which g clones when it reads them).
func (p *planner) usedOutside(v *ir.Value, g *group) bool {
	out := false
	p.forUsers(v, func(u *ir.Operation) { out = out || p.groupOf[u] != g })
	return out
}

// build creates g's graph.fusion before g's last op: block arguments are
// the values g reads from outside, in first-use order; views and small
// constants it reads are cloned in; it yields, in program order, the
// results read outside it. It returns the fusion and the values it
// replaces.
func (p *planner) build(ctx *ir.Context, g *group) (*ir.Operation, []*ir.Value) {
	body := ir.NewBlock()
	m := map[*ir.Value]*ir.Value{}
	var inputs []*ir.Value
	input := func(v *ir.Value) *ir.Value {
		if w, ok := m[v]; ok {
			return w
		}
		arg := body.AddArgument(v.Type())
		inputs = append(inputs, v)
		m[v] = arg
		return arg
	}
	var resolve func(v *ir.Value) *ir.Value
	resolve = func(v *ir.Value) *ir.Value {
		if w, ok := m[v]; ok {
			return w
		}
		def := v.DefiningOp()
		if def != nil && p.groupOf[def] != g && p.top(def) == def && (p.staged[def] == 0 || g.id < p.staged[def]) &&
			(classify(def) == view || classify(def) == constant && cloneable(def)) {
			for _, o := range def.Operands() {
				resolve(o)
			}
			body.Append(def.Clone(m))
			return m[v]
		}
		return input(v)
	}
	var results []*ir.Value
	for _, op := range g.ops {
		for _, o := range op.Operands() {
			if def := o.DefiningOp(); def != nil && convFactor(o, op) && p.groupOf[def] != nil && p.groupOf[def] != g {
				input(o) // the view copies made for it (copies)
				continue
			}
			resolve(o)
		}
		body.Append(op.Clone(m))
		for _, r := range op.Results() {
			if p.usedOutside(r, g) {
				results = append(results, r)
			}
		}
	}
	yielded := make([]*ir.Value, len(results))
	types := make([]ir.Type, len(results))
	for i, r := range results {
		yielded[i], types[i] = m[r], r.Type()
	}
	body.Append(ir.NewOperation(ctx, ir.OperationState{Name: graph.OpYield, Operands: yielded, Loc: g.last().Loc()}))
	region := ir.NewRegion()
	region.Append(body)
	f := ir.NewOperation(ctx, ir.OperationState{
		Name:        graph.OpFusion,
		Operands:    inputs,
		ResultTypes: types,
		Properties:  ir.Dict(ir.NamedAttr{Name: "kind", Value: ir.StringAttr{Value: string(g.kind)}}),
		Regions:     []*ir.Region{region},
		Loc:         g.ops[0].Loc(),
	})
	p.block.InsertBefore(f, g.last())
	return f, results
}

// rewrite replaces every group by its fusion, erases the grouped ops and
// the views and constants left unread, and restores a topological order.
func (p *planner) rewrite(ctx *ir.Context) error {
	type built struct {
		g       *group
		f       *ir.Operation
		results []*ir.Value
	}
	var all []built
	for _, g := range p.groups {
		f, results := p.build(ctx, g)
		all = append(all, built{g, f, results})
	}
	for _, b := range all {
		for i, r := range b.results {
			var uses []*ir.OpOperand
			for u := range r.Uses() {
				uses = append(uses, u)
			}
			for _, u := range uses {
				if p.groupOf[p.top(u.Owner())] != b.g {
					u.Set(b.f.Result(i))
				}
			}
		}
	}
	// Erased last to first, an op's readers go before it, except a loose
	// view that a grouped op placed before it reads (the block is not in
	// topological order until reorder): such a view stays until the next
	// sweep, and so do the grouped ops it reads. A grouped op still read
	// after a sweep that erased nothing is an error.
	for {
		var left *ir.Operation // a grouped op still read
		erased := false
		ops := p.block.Ops()
		for i := len(ops) - 1; i >= 0; i-- {
			op := ops[i]
			grouped := p.groupOf[op] != nil
			loose := (classify(op) == view || classify(op) == constant) && !op.Result(0).HasUses()
			if !grouped && !loose {
				continue
			}
			if slices.ContainsFunc(op.Results(), (*ir.Value).HasUses) {
				left = op
				continue
			}
			op.Erase()
			erased = true
		}
		if left == nil {
			break
		}
		if !erased {
			return ir.Errorf(left.Loc(), "graph-fuse: internal error: '%s' is still read after fusion", left.Name())
		}
	}
	return p.reorder()
}

// reorder sorts the block topologically, keeping the program order among
// ops that do not depend on each other: a fusion sits where its last op
// was, but a result it yields early may be read by an op placed before.
func (p *planner) reorder() error {
	ops := p.block.Ops()
	var term *ir.Operation
	if n := len(ops); n > 0 && ops[n-1].HasTrait(ir.Terminator) {
		term, ops = ops[n-1], ops[:n-1]
	}
	index := map[*ir.Operation]int{}
	for i, op := range ops {
		index[op] = i
	}
	deps := make([][]int, len(ops)) // deps[i]: ops that must follow i
	indeg := make([]int, len(ops))
	sorted := true
	for i, op := range ops {
		op.Walk(func(o *ir.Operation) bool {
			for _, v := range o.Operands() {
				d := v.DefiningOp()
				for d != nil {
					if j, ok := index[d]; ok {
						if j != i {
							deps[j] = append(deps[j], i)
							indeg[i]++
							sorted = sorted && j < i
						}
						break
					}
					d = d.ParentOp()
				}
			}
			return true
		})
	}
	if sorted {
		return nil
	}
	// Kahn's algorithm, always taking the ready op that came first.
	ready := &intHeap{}
	for i := range ops {
		if indeg[i] == 0 {
			ready.push(i)
		}
	}
	var order []*ir.Operation
	for ready.len() > 0 {
		i := ready.pop()
		order = append(order, ops[i])
		for _, j := range deps[i] {
			if indeg[j]--; indeg[j] == 0 {
				ready.push(j)
			}
		}
	}
	if len(order) != len(ops) {
		return fmt.Errorf("graph-fuse: internal error: the fused groups form a cycle")
	}
	for _, op := range order {
		op.Remove()
		if term != nil {
			p.block.InsertBefore(op, term)
		} else {
			p.block.Append(op)
		}
	}
	return nil
}

// intHeap is a min-heap of op indices.
type intHeap struct{ a []int }

func (h *intHeap) len() int { return len(h.a) }

func (h *intHeap) push(x int) {
	h.a = append(h.a, x)
	for i := len(h.a) - 1; i > 0; {
		parent := (i - 1) / 2
		if h.a[parent] <= h.a[i] {
			break
		}
		h.a[parent], h.a[i] = h.a[i], h.a[parent]
		i = parent
	}
}

func (h *intHeap) pop() int {
	top := h.a[0]
	n := len(h.a) - 1
	h.a[0] = h.a[n]
	h.a = h.a[:n]
	for i := 0; ; {
		l, r, small := 2*i+1, 2*i+2, i
		if l < n && h.a[l] < h.a[small] {
			small = l
		}
		if r < n && h.a[r] < h.a[small] {
			small = r
		}
		if small == i {
			return top
		}
		h.a[i], h.a[small] = h.a[small], h.a[i]
		i = small
	}
}
