package fusion

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
)

// Kind is what a fusion group becomes: the value of graph.fusion's kind
// attribute (graph.FusionKinds).
type Kind string

// The kinds of fusion group.
const (
	Pointwise     Kind = "pointwise"      // one loop nest over the output
	Reduction     Kind = "reduction"      // a reduction with its prologue and reduced-space epilogue
	PersistentRow Kind = "persistent_row" // whole rows reduced and reused in one kernel
	Matmul        Kind = "matmul"         // a matmul template with its epilogue
	Conv2D        Kind = "conv2d"         // a conv2d template with its epilogue
	Scatter       Kind = "scatter"        // a scatter_add, alone: its result is whole only after its kernel
	Composite     Kind = "composite"      // an undecomposed composite, alone
	Copy          Kind = "copy"           // a view materialized because it leaves the function
)

func (k Kind) reduces() bool  { return k == Reduction || k == PersistentRow }
func (k Kind) template() bool { return k == Matmul || k == Conv2D }

// group is one future kernel.
type group struct {
	id   int
	kind Kind
	ops  []*ir.Operation // members, in program order
	// space is the iteration space: the output of a pointwise group or a
	// template, the input (rows × reduced extent) of a reduction group.
	space []int64
	// out is the reduced space of a reduction group, else space.
	out []int64
	// inner is the per-row extent of a reduction over static innermost
	// axes, else -1.
	inner int64
	// users are the ops outside the group (as forUsers sees them) that
	// read its members' results, each once. Kept across merges so that
	// reaches costs the group's boundary, not its size.
	users []*ir.Operation
}

func (g *group) last() *ir.Operation { return g.ops[len(g.ops)-1] }

// planner groups the ops of one block.
type planner struct {
	opts    Options
	block   *ir.Block
	pos     map[*ir.Operation]int
	groupOf map[*ir.Operation]*group
	// staged are the views given a copy group for a matmul to read
	// (stageOperands), with the copy group's id: groups made after it
	// read the copy; those made before clone the view, as any group
	// does (reading the copy could make a cycle through their producer).
	staged map[*ir.Operation]int
	// widened are the widening casts whose readers widen as they load
	// (copyWidenings).
	widened map[*ir.Operation]bool
	groups  []*group // live groups, in creation order
	nextID  int
	// spanning is set once the program-order pass is over: from then on
	// a group may read values made after its first op (an early and a
	// late sibling merged), so that a path can lead back before a
	// group's first op through it, and reaches prunes by depth instead.
	spanning bool
	// depth numbers the nodes (groups and ungrouped ops) that reaches has
	// seen while spanning so that every edge leads to a smaller number:
	// computed on demand, kept up by merge, cleared when new nodes or
	// edges appear (nil).
	depth map[any]int
	// reachSeen and reachWork are reaches' scratch space.
	reachSeen            map[any]bool
	reachWork, reachSucc []any
	logging              bool // decisions are wanted (Options.Log or the topic is on)
	log                  strings.Builder
	stats                Stats
}

func newPlanner(block *ir.Block, opts Options) *planner {
	p := &planner{opts: opts, block: block, pos: map[*ir.Operation]int{}, groupOf: map[*ir.Operation]*group{}, staged: map[*ir.Operation]int{},
		widened: map[*ir.Operation]bool{}, logging: opts.Log != nil || logs.Enabled(Topic)}
	p.renumber()
	return p
}

// renumber sets the positions of the block's ops after ops were inserted
// or moved, walking the block rather than copying its op list (a
// rematerialization renumbers the block each time: the copies were a
// fifth of the pass's time on ResNet-50's backward pass).
func (p *planner) renumber() {
	i := 0
	for op := p.block.First(); op != nil; op = op.Next() {
		p.pos[op] = i
		i++
	}
}

// Arguments that describe ops and groups are fmt.Stringers (described,
// *group), formatted only when logging.
func (p *planner) logf(format string, args ...any) {
	if !p.logging {
		return // formatting the decisions is most of the pass's time
	}
	fmt.Fprintf(&p.log, format+"\n", args...)
}

// top returns the op of the planned block that holds op (op itself or an
// ancestor), or nil.
func (p *planner) top(op *ir.Operation) *ir.Operation {
	for op != nil {
		if _, ok := p.pos[op]; ok {
			return op
		}
		op = op.ParentOp()
	}
	return nil
}

// forUsers calls f with each op of the block that reads v, looking through
// views: a view is index remapping, cloned into its readers, so its
// readers read v.
func (p *planner) forUsers(v *ir.Value, f func(*ir.Operation)) {
	for use := range v.Uses() {
		u := p.top(use.Owner())
		switch {
		case u == nil:
		case classify(u) == view && p.groupOf[u] == nil:
			p.forUsers(u.Result(0), f)
		default:
			f(u)
		}
	}
}

// sources calls f with the op of the block that produces v, looking
// through views; not at all for function arguments.
func (p *planner) sources(v *ir.Value, f func(*ir.Operation)) {
	def := p.top(v.DefiningOp())
	if def == nil {
		return
	}
	if classify(def) == view && p.staged[def] == 0 {
		p.sources(def.Operand(0), f)
		return
	}
	f(def)
}

// dropDead erases graph ops whose results nobody reads. They are pure, so
// this changes nothing observable, and it keeps the invariant that every
// fusion result is used.
func (p *planner) dropDead() {
	ops := p.block.Ops()
	for i := len(ops) - 1; i >= 0; i-- {
		op := ops[i]
		if classify(op) == other || op.NumResults() == 0 || slices.ContainsFunc(op.Results(), (*ir.Value).HasUses) {
			continue
		}
		if computes(op) {
			p.logf("drop %s: its result is never read", described{op})
			p.stats.Dropped++
		}
		op.Erase()
		delete(p.pos, op)
	}
}

// newGroup makes op a group of its own.
func (p *planner) newGroup(op *ir.Operation) *group {
	p.nextID++
	g := &group{id: p.nextID, ops: []*ir.Operation{op}, inner: -1}
	res := shapeOf(op.Result(0))
	g.space, g.out = res, res
	switch classify(op) {
	case pointwise:
		g.kind = Pointwise
	case reduction:
		g.kind = Reduction
		g.space = shapeOf(op.Operand(0))
		g.inner = innerExtent(op)
	case template:
		g.kind = Matmul
		if strings.HasSuffix(op.Name(), ".conv2d") {
			g.kind = Conv2D
		}
	case scatter:
		g.kind = Scatter
		g.space = shapeOf(op.Operand(0))
	case composite:
		g.kind = Composite
	case view:
		g.kind = Copy
	}
	p.groups = append(p.groups, g)
	p.groupOf[op] = g
	g.users = slices.DeleteFunc(p.usersOf(op), func(u *ir.Operation) bool { return u == op })
	p.depth = nil // a view that was looked through becomes a node
	return g
}

// String describes a consumer group in the log: its op when it has one.
func (g *group) String() string {
	if len(g.ops) == 1 {
		return describe(g.ops[0])
	}
	return fmt.Sprintf("group %d (%d ops)", g.id, len(g.ops))
}

// fits reports whether a row of inner elements fits one kernel, so a
// persistent row reduction can keep it (row-limit).
func (p *planner) fits(inner int64) (bool, string) {
	switch {
	case inner < 0:
		return false, "the reduced axes are not the innermost static ones"
	case inner > p.opts.RowLimit:
		return false, fmt.Sprintf("a row of %d elements exceeds row-limit=%d", inner, p.opts.RowLimit)
	}
	return true, ""
}

// vertical decides whether consumer group c may join producer group pr:
// the kind of the merged group and why, or why not.
func (p *planner) vertical(pr, c *group) (Kind, string, bool) {
	switch {
	case pr.kind == Composite || c.kind == Composite:
		return "", "a composite keeps a group of its own (run graph-decompose first)", false
	case pr.kind == Scatter || c.kind == Scatter:
		return "", "a scatter_add keeps a group of its own: its sums are whole only after its kernel", false
	case c.kind.template():
		return "", fmt.Sprintf("%s starts its own group: producers are not fused into a template", c.kind), false
	case pr.kind.template():
		switch {
		case !p.opts.Epilogue:
			return "", "epilogue fusion is off", false
		case pr.kind == Matmul && p.libraryGroup(pr):
			return "", "the matmul runs on a library (matmul-library): its epilogue would be a kernel of its own, so its consumers take it", false
		case pr.kind == Conv2D && p.libraryGroup(pr):
			return "", "the convolution runs on a library (conv-library): its epilogue would be a kernel of its own, so its consumers take it", false
		case p.wideRead(pr, c):
			return "", fmt.Sprintf("the %s result is stored anyway: its readers widen it as they load", pr.kind), false
		case c.kind != Pointwise:
			return "", fmt.Sprintf("only pointwise consumers form a %s epilogue, not a %s group", pr.kind, c.kind), false
		case !sameSpace(c.space, pr.out):
			return "", fmt.Sprintf("the epilogue's space %v differs from the %s output %v", c.space, pr.kind, pr.out), false
		case pr.kind == Conv2D && !slices.Equal(c.space, pr.out):
			// The conv kernels compute one output element a point of the
			// output's own shape (a transposed epilogue, such as the weight
			// gradient's, would iterate another).
			return "", fmt.Sprintf("the epilogue's shape %v is not the conv2d output's %v", c.space, pr.out), false
		}
		return pr.kind, fmt.Sprintf("epilogue (pointwise consumer of the %s of group %d)", pr.kind, pr.id), true
	case pr.kind == Pointwise && c.kind == Pointwise:
		if sameSpace(pr.space, c.space) {
			return Pointwise, fmt.Sprintf("vertical (pointwise consumer of group %d)", pr.id), true
		}
		return p.inline(pr, c)
	case pr.kind == Pointwise && c.kind.reduces():
		if sameSpace(pr.space, c.space) {
			return c.kind, fmt.Sprintf("prologue (group %d feeds the reduction)", pr.id), true
		}
		return p.inline(pr, c)
	case pr.kind.reduces() && c.kind == Pointwise:
		if sameSpace(c.space, pr.out) {
			return pr.kind, fmt.Sprintf("epilogue in the reduced space of group %d", pr.id), true
		}
		if !sameSpace(c.space, pr.space) {
			return "", fmt.Sprintf("space %v is neither the rows %v nor the reduced space %v of group %d", c.space, pr.space, pr.out, pr.id), false
		}
		if pr.kind == Reduction && p.readsPrologueOnly(pr, c) {
			// The kernel walks the input space anyway (to store the
			// prologue values it yields): the consumer is computed there,
			// and a value only it read (a gradient kept in f32 for its
			// bias's sum and cast to bf16 for a product) is never stored.
			return Reduction, fmt.Sprintf("prologue-space consumer (reads only the unreduced values of group %d)", pr.id), true
		}
		if ok, why := p.fits(pr.inner); !ok {
			return "", "cannot broadcast the reduced value back in one kernel: " + why, false
		}
		if !trailing(c.space, pr.inner) {
			return "", fmt.Sprintf("space %v does not walk rows of %d elements", c.space, pr.inner), false
		}
		return PersistentRow, fmt.Sprintf("persistent row (walks the rows of group %d, %d elements each, in one kernel)", pr.id, pr.inner), true
	case pr.kind.reduces() && c.kind.reduces():
		if !sameSpace(pr.space, c.space) || !sameSpace(pr.out, c.out) || pr.inner != c.inner {
			return "", fmt.Sprintf("reduces %v to %v, group %d reduces %v to %v", c.space, c.out, pr.id, pr.space, pr.out), false
		}
		if ok, why := p.fits(pr.inner); !ok {
			// Reductions over the same axes, not the innermost (columns,
			// a thread a kept element), share the walk of the input when
			// c reduces values of pr's prologue only: batch norm's Σd and
			// Σd² over N, H and W of a channels-last tensor read it once.
			if pr.kind == Reduction && c.kind == Reduction && sameAxes(pr, c) && p.readsPrologueOnly(pr, c) {
				return Reduction, fmt.Sprintf("sibling reduction (the same axes over the prologue of group %d)", pr.id), true
			}
			// Or when c's reductions read nothing of pr, and c reads
			// pr's reduced values only after them (its epilogue): the
			// second halves of a split batch-norm statistic, each
			// [P, C] → [C], where the variance's reads the mean.
			if pr.kind == Reduction && c.kind == Reduction && sameAxes(pr, c) && p.readsReducedAfter(pr, c) {
				return Reduction, fmt.Sprintf("sibling reduction (the same axes, reading the reduced values of group %d in its epilogue)", pr.id), true
			}
			return "", "rows cannot stay in one kernel: " + why, false
		}
		return PersistentRow, fmt.Sprintf("persistent row (reduces the same rows as group %d)", pr.id), true
	}
	return "", fmt.Sprintf("no rule fuses a %s group into a %s group", c.kind, pr.kind), false
}

// sameAxes reports whether every reduction of groups a and b folds the
// same axes of its input, its kept dims kept alike.
func sameAxes(a, b *group) bool {
	var axes []int64
	var keep bool
	for _, g := range []*group{a, b} {
		for _, op := range g.ops {
			if classify(op) != reduction {
				continue
			}
			ax, ok := graph.IntList(op.Attr("axes"))
			if !ok {
				return false
			}
			k := graph.KeepDims(op)
			if axes == nil {
				axes, keep = ax, k
			} else if !slices.Equal(axes, ax) || keep != k {
				return false
			}
		}
	}
	return axes != nil
}

// readsPrologueOnly reports whether consumer c reads from reduction group
// pr only values over pr's input space (its prologue), none that a
// reduction made: then c can be computed in pr's kernel, at the points
// where the prologue is. A reduction that keeps every element (the
// reduced extent 1) leaves the spaces indistinguishable and is refused.
func (p *planner) readsPrologueOnly(pr, c *group) bool {
	if sameSpace(pr.space, pr.out) {
		return false
	}
	ok := true
	for _, op := range c.ops {
		for _, v := range op.Operands() {
			p.sources(v, func(def *ir.Operation) {
				if p.groupOf[def] == pr && (classify(def) == reduction || !sameSpace(shapeOf(def.Result(0)), pr.space)) {
					ok = false
				}
			})
		}
	}
	return ok
}

// readsReducedAfter reports whether consumer c reads from reduction group
// pr only values over pr's reduced space, and none of them reaches the
// input of a reduction of c: then c's reductions are independent of pr
// and one kernel runs pr's, then c's, each kept element's epilogues after
// its sums.
func (p *planner) readsReducedAfter(pr, c *group) bool {
	if sameSpace(pr.space, pr.out) {
		return false
	}
	inC := map[*ir.Operation]bool{}
	for _, op := range c.ops {
		inC[op] = true
	}
	ok := true
	reaches := map[*ir.Operation]bool{} // c's ops that read a value of pr
	for _, op := range c.ops {
		for _, v := range op.Operands() {
			p.sources(v, func(def *ir.Operation) {
				switch {
				case p.groupOf[def] == pr:
					if !sameSpace(shapeOf(def.Result(0)), pr.out) {
						ok = false
					}
					reaches[op] = true
				case inC[def] && reaches[def]:
					reaches[op] = true
				}
			})
		}
		if reaches[op] && classify(op) == reduction {
			ok = false
		}
	}
	return ok
}

// inline allows a small pointwise producer over a smaller (broadcast)
// space into its consumer, recomputing it per consumer element, when it
// is cheap and nothing else reads it: Inductor inlines such producers too.
//
// A producer over a larger space that reads no more bytes than it stores
// (a widening cast and a bias add) is inlined too: its consumer loads the
// producer's inputs where it loaded its result, so nothing is read twice
// that was not already (GPT-2's qkv bias, added in f32 and cut into the
// heads by one kernel, was stored in f32 for it).
func (p *planner) inline(pr, c *group) (Kind, string, bool) {
	narrow := !smaller(pr.space, c.space) && p.storesNoLess(pr)
	if !smaller(pr.space, c.space) && !narrow {
		return "", fmt.Sprintf("space %v differs from group %d's %v", c.space, pr.id, pr.space), false
	}
	factor := ir.NumElements(c.space) / max(ir.NumElements(pr.space), 1)
	switch {
	case narrow && len(pr.ops) > maxNarrowInlineOps:
		return "", fmt.Sprintf("group %d is read at its consumer's points but has %d ops (> %d to recompute)", pr.id, len(pr.ops), maxNarrowInlineOps), false
	case !narrow && factor >= 2 && len(pr.ops) > maxInlineOps:
		// (A consumer space less than twice the producer's, a pad's,
		// computes each element about once, however many ops.)
		return "", fmt.Sprintf("group %d broadcasts into it but has %d ops (> %d to recompute)", pr.id, len(pr.ops), maxInlineOps), false
	}
	for _, op := range pr.ops {
		for _, r := range op.Results() {
			outside := false
			p.forUsers(r, func(u *ir.Operation) {
				if g := p.groupOf[u]; g != pr && g != c {
					outside = true
				}
			})
			if outside {
				return "", fmt.Sprintf("group %d broadcasts into it but is also read elsewhere (would compute twice)", pr.id), false
			}
		}
	}
	if narrow {
		return c.kind, fmt.Sprintf("inlined producer group %d (it reads no more bytes than it stores)", pr.id), true
	}
	return c.kind, fmt.Sprintf("inlined broadcast producer group %d (recomputed %d times)", pr.id, factor), true
}

// storesNoLess reports whether group g's inputs (the values its members
// read from outside it) take at most the bytes of its members' results,
// all of them known.
func (p *planner) storesNoLess(g *group) bool {
	var in, out int64
	seen := map[*ir.Value]bool{}
	for _, op := range g.ops {
		for _, v := range op.Operands() {
			if seen[v] {
				continue
			}
			seen[v] = true
			if def := p.top(v.DefiningOp()); def == nil || p.groupOf[def] != g {
				if n := ir.NumElements(shapeOf(v)); n > 0 && 8*n <= ir.NumElements(g.space) {
					continue // broadcast (a batch norm's scale, through its reshape): read again from cache
				}
				if d := v.DefiningOp(); d != nil && classify(d) == view || bytesOf(v) == 0 && len(shapeOf(v)) > 0 {
					return false // through a view, or of unknown size
				}
				if smaller(shapeOf(v), g.space) {
					continue // broadcast (a bias): read again from cache
				}
				in += bytesOf(v)
			}
		}
		if computes(op) {
			for _, r := range op.Results() {
				if bytesOf(r) == 0 {
					return false
				}
				out = max(out, bytesOf(r))
			}
		}
	}
	return in <= out
}

// maxInlineOps bounds the pointwise ops recomputed by inlining a
// broadcast producer.
const maxInlineOps = 4

// maxNarrowInlineOps bounds the pointwise ops of a producer over a larger
// space computed inside its consumer at each point the consumer reads
// (a max pool's nine window taps read each element 2.25 times): the
// kernels are memory-bound, and ResNet's stem batch norm, ReLU and the
// pool's padding are 7 ops (the scale and shift join later).
const maxNarrowInlineOps = 16

// sibling decides whether two groups reading the same input may merge;
// the reason of a refusal is formatted only when logging (horizontal
// fusion weighs thousands of pairs of a training step's backward pass).
func (p *planner) sibling(a, b *group) (Kind, string, bool) {
	why := func(format string, args ...any) string {
		if !p.logging {
			return ""
		}
		return fmt.Sprintf(format, args...)
	}
	switch {
	case a.kind == Pointwise && b.kind == Pointwise:
		if sameSpace(a.space, b.space) {
			return Pointwise, "", true
		}
		return "", why("spaces %v and %v differ", a.space, b.space), false
	case copiesOnly(a) && copiesOnly(b) && (a.kind == Copy || b.kind == Copy):
		// One kernel stores both views, each element read once.
		if slices.Equal(a.space, b.space) {
			return Pointwise, "", true
		}
		return "", why("copies over %v and %v", a.space, b.space), false
	case a.kind.reduces() && b.kind.reduces():
		if !sameSpace(a.space, b.space) || !sameSpace(a.out, b.out) || a.inner != b.inner {
			return "", why("reductions %v→%v and %v→%v differ", a.space, a.out, b.space, b.out), false
		}
		if a.kind == PersistentRow || b.kind == PersistentRow {
			return PersistentRow, "", true
		}
		return Reduction, "", true
	}
	return "", why("a %s and a %s group do not share a kernel", a.kind, b.kind), false
}

// copiesOnly reports whether group g materializes views and computes
// nothing: a copy group, or copies merged by horizontal fusion.
func copiesOnly(g *group) bool {
	if g.kind == Copy {
		return true
	}
	return g.kind == Pointwise && !slices.ContainsFunc(g.ops, func(op *ir.Operation) bool { return classify(op) != view })
}

// reaches reports whether a path of at least one intermediate node (a
// group or an ungrouped op) leads from group a to group b: merging a and b
// would then put that node both before and after the merged group.
func (p *planner) reaches(a, b *group) bool {
	// Skipped: nodes that cannot reach b. In the program-order pass
	// every group ends at or before the op being placed, so nothing that
	// starts after b's last op (ungrouped ops, reading only later ones)
	// feeds b; after it, nothing whose depth is not above b's.
	limit := p.pos[b.last()]
	if p.spanning {
		limit = p.depthOf(b)
	}
	skip := func(n any) bool {
		if p.spanning {
			d := p.depthOf(n)
			return limit >= 0 && d >= 0 && d <= limit
		}
		if g, ok := n.(*group); ok {
			return p.pos[g.ops[0]] > limit
		}
		return p.pos[n.(*ir.Operation)] > limit
	}
	// The search's set and lists are the planner's, reused: horizontal
	// fusion asks thousands of times.
	if p.reachSeen == nil {
		p.reachSeen = map[any]bool{}
	}
	seen, work, succ := p.reachSeen, p.reachWork[:0], p.reachSucc[:0]
	defer func() {
		clear(seen)
		p.reachWork, p.reachSucc = work[:0], succ[:0]
	}()
	for _, n := range p.appendSuccs(succ, a) {
		if n != b {
			work = append(work, n)
		}
	}
	for len(work) > 0 {
		n := work[len(work)-1]
		work = work[:len(work)-1]
		if seen[n] || skip(n) {
			continue
		}
		seen[n] = true
		succ = p.appendSuccs(succ[:0], n)
		for _, m := range succ {
			switch m {
			case b:
				return true
			case a:
			default:
				work = append(work, m)
			}
		}
	}
	return false
}

// node returns the node op belongs to: its group, or op when ungrouped.
func (p *planner) node(op *ir.Operation) any {
	if g := p.groupOf[op]; g != nil {
		return g
	}
	return op
}

// succs returns the nodes that read n's results, n itself left out
// (through a view of its own value), each as often as it reads.
func (p *planner) succs(n any) []any { return p.appendSuccs(nil, n) }

// appendSuccs appends succs(n) to out (reaches reuses one buffer).
func (p *planner) appendSuccs(out []any, n any) []any {
	var add func(u *ir.Operation)
	add = func(u *ir.Operation) {
		switch {
		case p.groupOf[u] == nil && classify(u) == view:
			// A user list kept from when the view was a copy group.
			p.forUsers(u.Result(0), add)
		case p.node(u) != n:
			out = append(out, p.node(u))
		}
	}
	if g, ok := n.(*group); ok {
		for _, u := range g.users {
			add(u)
		}
	} else {
		for _, u := range p.usersOf(n.(*ir.Operation)) {
			add(u)
		}
	}
	return out
}

// preds calls f with each node whose results n's ops (or ops nested in
// them) read, looking through ungrouped views as forUsers does; n's own
// ops are skipped, and a node may come more than once.
func (p *planner) preds(n any, f func(any)) {
	var from func(v *ir.Value)
	from = func(v *ir.Value) {
		def := p.top(v.DefiningOp())
		switch {
		case def == nil || p.node(def) == n:
		case p.groupOf[def] == nil && classify(def) == view:
			for _, w := range def.Operands() {
				from(w)
			}
		default:
			f(p.node(def))
		}
	}
	ops := []*ir.Operation{}
	if g, ok := n.(*group); ok {
		ops = g.ops
	} else {
		ops = append(ops, n.(*ir.Operation))
	}
	for _, op := range ops {
		op.Walk(func(o *ir.Operation) bool {
			for _, v := range o.Operands() {
				from(v)
			}
			return true
		})
	}
}

// depthOf returns n's depth: one more than the largest of its
// successors', 0 without any (a bound, not the exact longest path, once
// merges have raised it); or -1, unknown, when a cycle lies below n: a
// copy group of a view that its producer's group reads too, until
// absorbCopies merges the two.
func (p *planner) depthOf(n any) int {
	if p.depth == nil {
		p.depth = map[any]int{}
	}
	if d, ok := p.depth[n]; ok {
		return d
	}
	p.depth[n] = -1 // while its successors are numbered
	d := 0
	for _, m := range p.succs(n) {
		dm := p.depthOf(m)
		if dm < 0 {
			d = -1
			break
		}
		d = max(d, dm+1)
	}
	p.depth[n] = d
	return d
}

// mergedDepth keeps depth up after group c merged into g: g takes the
// larger depth of the two, and the nodes that feed it and were numbered
// rise above it, and so on up. Where a depth was unknown, all are
// numbered again.
func (p *planner) mergedDepth(g, c *group) {
	dc, okc := p.depth[c]
	dg, okg := p.depth[g]
	delete(p.depth, c)
	if !okc && !okg {
		return // nothing numbered depends on either
	}
	delete(p.depth, g)
	d := p.depthOf(g)
	if d < 0 || dc < 0 || dg < 0 {
		p.depth = nil
		return
	}
	d = max(d, dc, dg)
	p.depth[g] = d
	var raise func(n any, above int)
	raise = func(n any, above int) {
		p.preds(n, func(x any) {
			if dx, ok := p.depth[x]; ok && dx >= 0 && dx <= above {
				p.depth[x] = above + 1
				raise(x, above+1)
			}
		})
	}
	raise(g, d)
}

// usersOf returns the ops that read op's results, as forUsers sees them.
func (p *planner) usersOf(op *ir.Operation) []*ir.Operation {
	var out []*ir.Operation
	for _, r := range op.Results() {
		p.forUsers(r, func(u *ir.Operation) {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		})
	}
	return out
}

// feeds reports whether a result of group a is read by group b.
func (p *planner) feeds(a, b *group) bool {
	hit := false
	for _, op := range a.ops {
		for _, r := range op.Results() {
			p.forUsers(r, func(u *ir.Operation) { hit = hit || p.groupOf[u] == b })
		}
	}
	return hit
}

// merge moves c's ops into g as kind k.
func (p *planner) merge(g, c *group, k Kind) {
	after := p.pos[c.ops[0]] > p.pos[g.last()] // the common case: a consumer joins
	g.ops = append(g.ops, c.ops...)
	if !after {
		slices.SortFunc(g.ops, func(x, y *ir.Operation) int { return cmp.Compare(p.pos[x], p.pos[y]) })
	}
	for _, op := range c.ops {
		p.groupOf[op] = g
	}
	// The merged group's users: both lists, without its members, once.
	users := g.users[:0:0]
	for _, u := range slices.Concat(g.users, c.users) {
		if p.groupOf[u] != g && !slices.Contains(users, u) {
			users = append(users, u)
		}
	}
	g.users = users
	switch {
	case k.reduces() && !g.kind.reduces():
		g.space, g.out, g.inner = c.space, c.out, c.inner
	case k == Pointwise && !sameSpace(g.space, c.space):
		// An inlined producer: the kernel walks the consumer's space.
		g.space, g.out = c.space, c.out
	}
	g.kind = k
	p.groups = slices.DeleteFunc(p.groups, func(x *group) bool { return x == c })
	if p.depth != nil {
		p.mergedDepth(g, c)
	}
}

// try merges c into g when rule allows it, the size bound holds and no
// path between them goes through another node; it logs the decision.
func (p *planner) try(g, c *group, k Kind, why string, ok bool, twoWay bool) bool {
	switch {
	case !ok:
	case p.opts.MaxGroupOps > 0 && len(g.ops)+len(c.ops) > maxOps(p.opts.MaxGroupOps, g, c, k):
		ok, why = false, fmt.Sprintf("the group would have %d ops (max-group-ops=%d, at most %d here)", len(g.ops)+len(c.ops), p.opts.MaxGroupOps, maxOps(p.opts.MaxGroupOps, g, c, k))
	case p.reaches(g, c) || twoWay && p.reaches(c, g):
		ok, why = false, "a path between them goes through another kernel (fusing would make a cycle)"
	}
	if !ok {
		p.logf("refuse %s into group %d: %s", c, g.id, why)
		p.stats.Refusals++
		return false
	}
	p.logf("group %d <- %s: %s", g.id, c, why)
	p.merge(g, c, k)
	return true
}

// smallSpace is the most points of a pointwise group over a static space
// that may hold smallSpaceGroupOps times max-group-ops ops.
const smallSpace = 1 << 16

// smallSpaceGroupOps is the factor by which a pointwise group over at most
// smallSpace points may exceed max-group-ops.
const smallSpaceGroupOps = 4

// maxOps is the most ops the group merging c into g as kind k may have:
// limit (max-group-ops), or smallSpaceGroupOps times it when both walk
// one static pointwise space of at most smallSpace points. Such a kernel
// is launch-bound, a few microseconds of work, whatever it computes: an
// optimizer's updates of a model's small parameters (GPT-2's 98 biases
// and layer-norm weights of 768 to 3072 elements, 16 ops each) ran four
// to a kernel, 25 launches of about 10 µs; a bound four times as large
// keeps about a quarter of them.
func maxOps(limit int, g, c *group, k Kind) int {
	if k == Pointwise && g.kind == Pointwise && c.kind == Pointwise && sameSpace(g.space, c.space) {
		if n := ir.NumElements(g.space); n >= 0 && n <= smallSpace {
			return smallSpaceGroupOps * limit
		}
	}
	return limit
}

// libraryMatmulOp reports whether op is a graph.matmul whose product a
// library computes under matmul-library: a bf16 or f16 result of static
// shape (convert-loop-to-gpu's library plan keeps the others on Strata's
// kernels, which fuse the epilogue).
func libraryMatmulOp(op *ir.Operation) bool {
	if op.Name() != graph.OpMatmul {
		return false
	}
	e := ir.ElementTypeOf(op.Result(0).Type())
	s, a := shapeOf(op.Result(0)), shapeOf(op.Operand(0))
	// (The library plan takes a dynamic M, not a dynamic batch, N or K.)
	return (e == ir.BF16 || e == ir.F16) && len(s) >= 2 && len(a) >= 1 && !slices.Contains(s[:len(s)-2], ir.Dynamic) &&
		s[len(s)-1] != ir.Dynamic && a[len(a)-1] != ir.Dynamic
}

// libraryConvOp reports whether op is a graph.conv2d that cuDNN computes
// under conv-library: bf16 or f16 operands of static shape, one group, no
// bias (added before the one rounding, which cuDNN does not do) and the
// padding alike on both sides of each dimension, as convert-loop-to-gpu's
// library plans take them (the others stay Strata's kernels, which fuse
// the epilogue).
func libraryConvOp(op *ir.Operation) bool {
	if op.Name() != graph.OpConv2D || op.NumOperands() != 2 {
		return false
	}
	prm, err := graph.Conv2DParamsOf(op)
	e := ir.ElementTypeOf(op.Result(0).Type())
	static := func(v *ir.Value) bool {
		s := shapeOf(v)
		return len(s) == 4 && !slices.Contains(s, ir.Dynamic)
	}
	return err == nil && (e == ir.BF16 || e == ir.F16) && prm.Groups == 1 && prm.Padding[0] == prm.Padding[2] &&
		prm.Padding[1] == prm.Padding[3] && static(op.Operand(0)) && static(op.Operand(1)) && static(op.Result(0))
}

// libraryOp reports whether template op's result is a library's, stored
// whatever reads it (matmul-library, conv-library).
func (p *planner) libraryOp(op *ir.Operation) bool {
	return p.opts.MatmulLibrary && libraryMatmulOp(op) || p.opts.ConvLibrary && libraryConvOp(op)
}

// libraryGroup reports whether template group g's template op is a
// library's (libraryOp).
func (p *planner) libraryGroup(g *group) bool {
	for _, op := range g.ops {
		if classify(op) == template {
			return p.libraryOp(op)
		}
	}
	return false
}

// widening reports whether op is a graph.cast from a float type to a wider
// one (bf16 to f32): storing its result costs more than its input.
func widening(op *ir.Operation) bool {
	if op.Name() != graph.OpCast || op.NumOperands() != 1 {
		return false
	}
	from, ok1 := ir.ElementTypeOf(op.Operand(0).Type()).(*ir.FloatType)
	to, ok2 := ir.ElementTypeOf(op.Result(0).Type()).(*ir.FloatType)
	return ok1 && ok2 && to.Width > from.Width
}

// storedAnyway reports whether the template result v is written to memory
// whatever its epilogue: the function returns it, or an op that cannot
// join a template's epilogue (a reduction, a template) reads it.
func (p *planner) storedAnyway(v *ir.Value) bool {
	stored := false
	p.forUsers(v, func(u *ir.Operation) {
		stored = stored || classify(u) != pointwise
	})
	return stored
}

// wideRead reports whether c is one of the widening casts copyWidenings
// gave to the readers of template group pr's result: its reader should
// load the narrow result and widen it itself rather than have the
// template store a wide copy too.
func (p *planner) wideRead(pr, c *group) bool {
	if len(c.ops) != 1 || !p.widened[c.ops[0]] {
		return false
	}
	from := false
	p.sources(c.ops[0].Operand(0), func(def *ir.Operation) { from = p.groupOf[def] == pr })
	return from
}

// copyWidenings gives each reader of a widening cast of a template's
// result that is stored anyway a copy of the cast of its own, when the
// cast has several readers or a reader that cannot join the template's
// epilogue (a reduction), and marks the casts (widened): each reader's
// kernel then widens as it loads (a prologue, or a pointwise chain)
// instead of the template's epilogue storing the widened tensor for all
// of them. GPT-2's training loss reads the bf16 logits, which the backward
// pass keeps, three times in float32 (a maximum, a sum of exponentials
// and the label's logit): storing them widened cost 1.6 GB a step, and
// each pointwise chain between the cast and a reduction another 1.6 GB.
// A cast with one pointwise reader (a bias and GELU) stays an epilogue.
func (p *planner) copyWidenings() {
	copied := false
	for _, op := range p.block.Ops() {
		if !widening(op) {
			continue
		}
		def := p.top(op.Operand(0).DefiningOp())
		for def != nil && classify(def) == view {
			def = p.top(def.Operand(0).DefiningOp())
		}
		// A library's product is stored whatever reads it.
		if def == nil || classify(def) != template || !p.storedAnyway(def.Result(0)) && !p.libraryOp(def) {
			continue
		}
		var uses []*ir.OpOperand
		for u := range op.Result(0).Uses() {
			uses = append(uses, u)
		}
		if len(uses) == 1 && !p.storedAnyway(op.Result(0)) {
			continue
		}
		p.widened[op] = true
		for _, u := range uses[min(1, len(uses)):] {
			c := op.Clone(nil)
			p.block.InsertBefore(c, op)
			u.Set(c.Result(0))
			p.widened[c] = true
		}
		p.logf("copy %s for each of its %d readers: it widens a %s result that is stored anyway", described{op}, len(uses), def.Name())
		copied = true
	}
	if copied {
		p.renumber()
	}
}

// plan groups the block's computing ops.
func (p *planner) plan() {
	p.copyWidenings()
	p.dropDead()
	for _, op := range p.block.Ops() {
		if !computes(op) {
			continue
		}
		p.stageOperands(op)
		c := p.newGroup(op)
		p.logf("group %d = %s: %s", c.id, described{op}, c.kind)
		if c.kind == Composite || c.kind == Scatter {
			p.logf("group %d: a %s keeps a group of its own", c.id, c.kind)
			continue
		}
		// Producers in order of the bytes that fusing with them keeps out of
		// memory, as XLA's priority fusion ranks candidates, templates last.
		saved := map[*group]int64{}
		var producers []*group
		for _, v := range op.Operands() {
			p.sources(v, func(def *ir.Operation) {
				if g := p.groupOf[def]; g != nil && g != c {
					if _, seen := saved[g]; !seen {
						producers = append(producers, g)
					}
					saved[g] += bytesOf(v)
				}
			})
		}
		slices.SortStableFunc(producers, func(a, b *group) int {
			return cmp.Or(cmp.Compare(rank(a.kind), rank(b.kind)), cmp.Compare(saved[b], saved[a]))
		})
		for _, pr := range producers {
			if p.groupOf[pr.ops[0]] != pr {
				continue // merged into an earlier candidate
			}
			cur := p.groupOf[op]
			if pr == cur {
				continue
			}
			k, why, ok := p.vertical(pr, cur)
			p.try(pr, cur, k, why, ok, false)
		}
	}
	p.spanning = true
	if p.opts.Horizontal {
		p.horizontal(nil)
		p.inlineSiblings()
	}
	p.copies()
	p.absorbCopies()
	if p.opts.Horizontal {
		// Copies of views of one value over one space (the q, k and v
		// heads cut from a library product) are siblings too.
		p.horizontal(copiesOnly)
		p.argumentCopies()
	}
	p.rematerialize()
}

// argumentCopies merges the groups that read only the function's
// arguments and walk one space into one kernel, at the first one's
// place: copies read only as convolutions' weights (the channels-last
// copies of a network's weights of one shape; ResNet-50 inference: 13
// transposes of 3×3 weights in 4 shapes, a few microseconds of launch
// each for at most 5 MB; copies of at most smallArgumentCopy bytes), and
// small pointwise groups read only as broadcasts (each batch norm's
// scale and shift computed from its running statistics: ResNet-50's 53
// batch norms have 6 channel counts, so 6 kernels). The later groups'
// ops move up to just after the first group's last op; reading only
// arguments, they may run anywhere, and the merged kernel then precedes
// every reader of each.
func (p *planner) argumentCopies() {
	var keys []string
	buckets := map[string][]*group{}
	for _, g := range p.groups {
		if p.groupOf[g.ops[0]] != g || !p.readsArgumentsOnly(g) {
			continue
		}
		var key string
		switch {
		case copiesOnly(g) && p.weightsOnly(g) && bytesOf(g.last().Result(0)) <= smallArgumentCopy:
			key = fmt.Sprint("copy ", g.space, ir.ElementTypeOf(g.last().Result(0).Type()))
		case g.kind == Pointwise && !copiesOnly(g) && p.broadcastOnly(g):
			key = fmt.Sprint("broadcast ", g.space)
		default:
			continue
		}
		if buckets[key] == nil {
			keys = append(keys, key)
		}
		buckets[key] = append(buckets[key], g)
	}
	moved := false
	for _, key := range keys {
		gs := buckets[key]
		slices.SortFunc(gs, func(a, b *group) int { return cmp.Compare(p.pos[a.ops[0]], p.pos[b.ops[0]]) })
		first := gs[0]
		for _, c := range gs[1:] {
			at := first.last()
			for _, op := range c.ops {
				op.MoveAfter(at)
				at = op
			}
			p.renumber()
			moved = true
			if !p.try(first, c, first.kind, "groups reading only arguments over one space (one kernel computes them all)", true, true) {
				first = c // (max-group-ops) the next ones join c
			}
		}
	}
	if moved {
		p.renumber()
	}
}

// broadcastOnly reports whether group g walks a small static space
// (smallRemat points) and every reader of its results outside it is a
// group over a larger space (through the views that broadcast them).
func (p *planner) broadcastOnly(g *group) bool {
	if n := ir.NumElements(g.space); n < 0 || n > smallRemat {
		return false
	}
	ok, read := true, false
	for _, op := range g.ops {
		for _, r := range op.Results() {
			p.forUsers(r, func(u *ir.Operation) {
				switch h := p.groupOf[u]; {
				case h == g:
				case h == nil || !smaller(g.space, h.space):
					ok = false
				default:
					read = true
				}
			})
		}
	}
	return ok && read
}

// smallArgumentCopy is the most bytes of a copy argumentCopies merges:
// such a copy's time is its launch's. Larger ones (a backward pass's
// transposes of saved activations) are bandwidth-bound, and moving them
// up would only keep their results alive longer.
const smallArgumentCopy = 8 << 20

// weightsOnly reports whether every reader of group g's results is a
// convolution reading it as its weight. (The transposed copies of
// activations and gradients that a filter gradient reads stay apart:
// convert-loop-to-gpu's library plan reads their sources and drops each
// copy's own nest, which a merged kernel would keep.)
func (p *planner) weightsOnly(g *group) bool {
	ok := true
	for _, op := range g.ops {
		for _, r := range op.Results() {
			p.forUsers(r, func(u *ir.Operation) {
				if p.groupOf[u] != g && (u.Name() != graph.OpConv2D || u.NumOperands() < 2 || u.Operand(1) != r) {
					ok = false
				}
			})
		}
	}
	return ok
}

// readsArgumentsOnly reports whether every value group g reads from
// outside it is an argument of the function, a constant (cloned into
// the kernel) or a view of them.
func (p *planner) readsArgumentsOnly(g *group) bool {
	var fromArguments func(v *ir.Value) bool
	fromArguments = func(v *ir.Value) bool {
		d := v.DefiningOp()
		switch {
		case d == nil || p.groupOf[d] == g:
			return true
		case p.groupOf[d] != nil:
			return false
		case classify(d) == constant:
			return true
		case classify(d) == view && p.staged[d] == 0:
			return !slices.ContainsFunc(d.Operands(), func(o *ir.Value) bool { return !fromArguments(o) })
		}
		return false
	}
	for _, op := range g.ops {
		if slices.ContainsFunc(op.Operands(), func(v *ir.Value) bool { return !fromArguments(v) }) {
			return false
		}
	}
	return true
}

// absorbCopies moves the copy groups that materialize views of a cheap
// pointwise group into it when they are all that read it and walk one
// space: one kernel computes the group at the views' points and stores
// only the views (GPT-2's qkv bias add and the three head-split copies of
// its result become one kernel).
func (p *planner) absorbCopies() {
	for _, pr := range slices.Clone(p.groups) {
		if pr.kind != Pointwise || p.groupOf[pr.ops[0]] != pr || len(pr.ops) > maxInlineOps || !p.storesNoLess(pr) {
			continue
		}
		var copies []*group
		only := true
		for _, op := range pr.ops {
			for _, r := range op.Results() {
				p.forUsers(r, func(u *ir.Operation) {
					switch g := p.groupOf[u]; {
					case g == pr:
					case g == nil || g.kind != Copy || len(copies) > 0 && !slices.Equal(g.space, copies[0].space):
						only = false
					case !slices.Contains(copies, g):
						copies = append(copies, g)
					}
				})
			}
		}
		// A group that reads a copied view reads the view's source through
		// it (views are remapping): the source must stay a result then.
		for _, c := range copies {
			for _, u := range p.usersOf(c.ops[0]) {
				only = only && p.groupOf[u] == nil
			}
		}
		if !only || len(copies) == 0 {
			continue
		}
		for _, c := range copies {
			p.try(pr, c, Pointwise, fmt.Sprintf("copy of a view of group %d, which only its copies read, computed in place", pr.id), true, false)
		}
	}
}

// inlineSiblings retries the inlining of pointwise producers into the
// groups that horizontal fusion made: a producer read by several
// siblings (the q, k and v slices of one projection) is read by one group
// once they merge.
func (p *planner) inlineSiblings() {
	for changed := true; changed; {
		changed = false
		for _, c := range slices.Clone(p.groups) {
			if p.groupOf[c.ops[0]] != c || c.kind != Pointwise && !c.kind.reduces() {
				continue
			}
			var producers []*group
			for _, op := range c.ops {
				for _, v := range op.Operands() {
					p.sources(v, func(def *ir.Operation) {
						if g := p.groupOf[def]; g != nil && g != c && g.kind == Pointwise && !slices.Contains(producers, g) {
							producers = append(producers, g)
						}
					})
				}
			}
			for _, pr := range producers {
				if sameSpace(pr.space, c.space) || smaller(pr.space, c.space) {
					continue // the vertical rules had their say
				}
				if k, why, ok := p.inline(pr, c); ok && p.try(pr, c, k, why, ok, false) {
					changed = true
					break
				}
			}
		}
	}
}

// rank orders producer kinds: a consumer tries templates last, because an
// op taken as a matmul epilogue can no longer join the reduction it also
// reads (the max of softmax(q·kᵀ)), which saves more than the epilogue.
func rank(k Kind) int {
	if k.template() {
		return 1
	}
	return 0
}

// horizontal merges sibling groups that read the same input and iterate
// over the same space: one kernel reads the input once. Only groups that
// eligible accepts take part (nil: all).
func (p *planner) horizontal(eligible func(*group) bool) {
	var inputs []*ir.Value
	inputs = append(inputs, p.block.Arguments()...)
	for _, op := range p.block.Ops() {
		if classify(op) != view {
			inputs = append(inputs, op.Results()...)
		}
	}
	for _, v := range inputs {
		var readers []*group
		p.forUsers(v, func(u *ir.Operation) {
			if g := p.groupOf[u]; g != nil && !slices.Contains(readers, g) && p.groupOf[v.DefiningOp()] != g && (eligible == nil || eligible(g)) {
				readers = append(readers, g)
			}
		})
		for i := 0; i < len(readers); i++ {
			for j := i + 1; j < len(readers); j++ {
				a, b := readers[i], readers[j]
				if p.groupOf[a.ops[0]] != a || p.groupOf[b.ops[0]] != b {
					continue
				}
				k, why, ok := p.sibling(a, b)
				switch {
				case ok && (p.feeds(a, b) || p.feeds(b, a)):
					k, why, ok = "", "one feeds the other (only vertical rules may merge them)", false
				case ok && p.logging:
					why = fmt.Sprintf("horizontal (siblings reading %s)", valueName(v))
				}
				p.try(a, b, k, why, ok, true)
			}
		}
	}
}

// valueName names a value for the log.
func valueName(v *ir.Value) string {
	if def := v.DefiningOp(); def != nil {
		return "the result of " + describe(def)
	}
	return fmt.Sprintf("argument #%d", v.Index())
}

// copies gives a group of its own to each view whose value leaves the
// groups (a function result, or an operand of a non-graph op): only there
// is a view materialized, as a copy.
func (p *planner) copies() {
	for _, op := range p.block.Ops() {
		if classify(op) != view || p.groupOf[op] != nil {
			continue
		}
		for _, u := range op.Result(0).Users() {
			if convFactor(op.Result(0), u) {
				g := p.newGroup(op)
				p.logf("group %d = %s: copy (a factor of %s, which reads buffers)", g.id, described{op}, described{u})
				p.stats.Copies++
				break
			}
			u = p.top(u)
			if u == nil || classify(u) == view || p.groupOf[u] != nil {
				continue
			}
			g := p.newGroup(op)
			p.logf("group %d = %s: copy (the view is read by %s, so it is materialized)", g.id, described{op}, described{u})
			p.stats.Copies++
			break
		}
	}
}

// convFactor reports whether v is the input or the weight of u, a
// graph.conv2d in the block: a convolution reads each element of its
// factors many times, and its tensor-core kernel gathers them from
// buffers (not through a view's index arithmetic), so a view there is
// materialized once (the weight gradient's transposed input and output
// gradient, the data gradient's transposed weight).
//
// A reshape of a buffer (an argument, or a value a kernel stores) is not
// copied: convert-graph-to-loop reads it through a view of the buffer, its
// elements in their order (a strided 1×1 convolution's weight [O, C, 1, 1]
// read as [O, 1, 1, C] channels last).
func convFactor(v *ir.Value, u *ir.Operation) bool {
	if !strings.HasSuffix(u.Name(), ".conv2d") || u.Operand(0) != v && u.Operand(1) != v {
		return false
	}
	for d := v.DefiningOp(); d != nil && d.Name() == graph.OpReshape; d = d.Operand(0).DefiningOp() {
		if src := d.Operand(0).DefiningOp(); src == nil || classify(src) != view {
			return false
		}
	}
	return true
}
