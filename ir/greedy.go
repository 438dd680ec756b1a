package ir

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// ErrNotConverged is wrapped by the error ApplyPatternsGreedily returns when
// the IR still changed in its last allowed iteration (or the rewrite budget
// ran out). The IR is valid then, only not at a fixpoint, so callers such as
// canonicalize may ignore it.
var ErrNotConverged = errors.New("greedy rewriter did not converge")

// GreedyConfig tunes ApplyPatternsGreedily. Start from DefaultGreedyConfig.
type GreedyConfig struct {
	// Context creates the ops that patterns and folding build. When nil, a
	// context holding the dialects of the ops found under the root is used.
	Context *Context
	// MaxIterations bounds the sweeps over the IR; 0 means 10.
	MaxIterations int
	// MaxNumRewrites bounds the folds and pattern applications in all; -1
	// means no limit (0 is taken as no limit too).
	MaxNumRewrites int
	// TopDown visits ops in pre-order (parents and definitions first). The
	// default is post-order (bottom-up), as in MLIR.
	TopDown bool
	// EnableFolding runs OpDef.Fold on each op before its patterns.
	EnableFolding bool
	// RegionSimplification removes unreachable blocks after each sweep.
	RegionSimplification bool
	// Log, when set, receives one line per fold and per pattern applied
	// (irc --debug-rewrites).
	Log io.Writer
}

// DefaultGreedyConfig returns MLIR's defaults: 10 iterations, no rewrite
// limit, bottom-up, folding and region simplification on.
func DefaultGreedyConfig() GreedyConfig {
	return GreedyConfig{MaxIterations: 10, MaxNumRewrites: -1, EnableFolding: true, RegionSimplification: true}
}

// ApplyPatternsGreedily rewrites the ops nested in root (not root itself)
// until nothing changes: each op is folded, erased when trivially dead, or
// rewritten by the first matching pattern (highest Benefit first, then the
// order of patterns), and every op a change touches is revisited. Folded
// constants are materialized, deduplicated, at the start of the entry block
// of the nearest region isolated from above. It reports whether the IR
// changed; the error wraps ErrNotConverged when the fixpoint was not reached
// within cfg.MaxIterations.
func ApplyPatternsGreedily(root *Operation, patterns []*Pattern, cfg GreedyConfig) (changed bool, err error) {
	if cfg.MaxIterations <= 0 {
		cfg.MaxIterations = 10
	}
	ctx := cfg.Context
	if ctx == nil {
		ctx = contextOf(root)
	}
	d := &greedyDriver{
		root:      root,
		cfg:       cfg,
		ctx:       ctx,
		patterns:  patterns,
		byRoot:    map[string][]*Pattern{},
		index:     map[*Operation]int{},
		constants: map[constKey]*Operation{},
		cached:    map[*Operation]constKey{},
		erased:    map[*Operation]bool{},
	}
	d.rw = NewRewriter(ctx)
	d.rw.Listener = d
	for iter := 0; ; iter++ {
		if iter == cfg.MaxIterations {
			return changed, fmt.Errorf("%w within %d iterations", ErrNotConverged, cfg.MaxIterations)
		}
		d.changed = false
		d.fillWorklist()
		if !d.drain() {
			return true, fmt.Errorf("%w: more than %d rewrites", ErrNotConverged, cfg.MaxNumRewrites)
		}
		if cfg.RegionSimplification && d.simplifyRegions() {
			d.changed = true
		}
		changed = changed || d.changed
		if !d.changed {
			return changed, nil
		}
	}
}

// contextOf builds a context from the dialects of the registered ops in root.
func contextOf(root *Operation) *Context {
	ctx := NewContext()
	root.Walk(func(o *Operation) bool {
		if d := o.def; d != nil && d.dialect != nil && ctx.Dialect(d.dialect.Name) == nil {
			ctx.Load(d.dialect)
		}
		return true
	})
	return ctx
}

// CanonicalizationPatterns returns the canonicalization patterns of every
// loaded op, dialects in name order and ops in registration order.
func (c *Context) CanonicalizationPatterns() []*Pattern {
	var ps []*Pattern
	for _, d := range c.Dialects() {
		for _, op := range d.Ops {
			ps = append(ps, op.Canonicalize...)
		}
	}
	return ps
}

// constKey identifies a materialized constant: where it lives and what it is.
type constKey struct {
	region  *Region
	dialect *Dialect
	attr    any // attrKey of the value attribute
	typ     Type
}

// attrKey returns a comparable key of attribute a, equal for two
// attributes exactly when their texts are: integer and float attributes
// are their own keys (their types are uniqued, their values normalized;
// an i1 prints only its truth), others are their text. It spares the
// printing of every constant the canonicalizer meets.
func attrKey(a Attribute) any {
	switch a := a.(type) {
	case IntegerAttr:
		if a.Type == I1 {
			return IntegerAttr{Value: boolBit(a.Value != 0), Type: I1}
		}
		return a
	case FloatAttr:
		return a
	}
	return a.String()
}

// boolBit is 1 for true.
func boolBit(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// greedyDriver is the state of one ApplyPatternsGreedily call. It is the
// rewriter's listener, which keeps the worklist and constant cache current.
type greedyDriver struct {
	root     *Operation
	cfg      GreedyConfig
	ctx      *Context
	rw       *Rewriter
	patterns []*Pattern
	byRoot   map[string][]*Pattern

	// worklist is a stack, and removed ops leave nil holes. index maps the
	// ops on it to their slots; entries of ops popped since go stale rather
	// than being deleted (see queued), which saves a map deletion per op.
	worklist []*Operation
	index    map[*Operation]int

	// constants maps a constant to the op that holds it at the start of
	// its insertion region; cached is the reverse map.
	constants map[constKey]*Operation
	cached    map[*Operation]constKey
	// erased holds the ops erased so far, which must never be queued again.
	erased map[*Operation]bool

	changed     bool
	numRewrites int
}

// fillWorklist queues every op under root so that they pop in post-order
// (or pre-order when TopDown).
//
// The walk meets each op once and no erased one, so the ops go straight
// onto the worklist, with no copy of them to push one by one; only the ops
// left on it (by simplifyRegions) are skipped.
func (d *greedyDriver) fillWorklist() {
	base := len(d.worklist)
	ops := d.worklist
	for _, r := range d.root.Regions() {
		for b := r.first; b != nil; b = b.next {
			for o := b.first; o != nil; o = o.next {
				if d.cfg.TopDown {
					o.Walk(func(n *Operation) bool { ops = append(ops, n); return true })
				} else {
					o.WalkPost(func(n *Operation) { ops = append(ops, n) })
				}
			}
		}
	}
	slices.Reverse(ops[base:])
	if len(d.index) == 0 {
		d.index = make(map[*Operation]int, len(ops))
	}
	n := base
	for _, o := range ops[base:] {
		if _, ok := d.queued(o); !ok {
			d.index[o] = n
			ops[n] = o
			n++
		}
	}
	clear(ops[n:])
	d.worklist = ops[:n]
}

// queued returns op's slot on the worklist, if it is there.
func (d *greedyDriver) queued(op *Operation) (int, bool) {
	i, ok := d.index[op]
	return i, ok && i < len(d.worklist) && d.worklist[i] == op
}

func (d *greedyDriver) push(op *Operation) {
	if op == nil || op == d.root || d.erased[op] {
		return
	}
	if _, ok := d.queued(op); ok {
		return
	}
	d.index[op] = len(d.worklist)
	d.worklist = append(d.worklist, op)
}

func (d *greedyDriver) remove(op *Operation) {
	if i, ok := d.queued(op); ok {
		d.worklist[i] = nil
	}
}

func (d *greedyDriver) pop() *Operation {
	for len(d.worklist) > 0 {
		op := d.worklist[len(d.worklist)-1]
		d.worklist = d.worklist[:len(d.worklist)-1]
		if op != nil {
			return op
		}
	}
	return nil
}

// drain processes the worklist; it returns false when the rewrite budget
// ran out first.
func (d *greedyDriver) drain() bool {
	for op := d.pop(); op != nil; op = d.pop() {
		if d.cfg.MaxNumRewrites > 0 && d.numRewrites >= d.cfg.MaxNumRewrites {
			d.worklist = d.worklist[:0]
			return false
		}
		if op.block != nil { // a pattern may have detached it
			d.process(op)
		}
	}
	return true
}

func (d *greedyDriver) process(op *Operation) {
	if isTriviallyDead(op) {
		d.rw.EraseOp(op)
		d.changed = true
		return
	}
	if d.cfg.EnableFolding {
		if op.HasTrait(ConstantLike) {
			if d.insertKnownConstant(op) {
				return
			}
		} else if d.fold(op) {
			d.numRewrites++
			d.changed = true
			if d.cfg.Log != nil {
				d.logf("fold: '%s' at %s", op.Name(), locText(op.Loc()))
			}
			return
		}
	}
	for _, p := range d.patternsFor(op.Name()) {
		d.rw.SetInsertionPointBefore(op)
		if p.Rewrite(d.rw, op) {
			d.numRewrites++
			d.changed = true
			if d.cfg.Log != nil {
				d.logf("rewrite: %s on '%s' at %s", p.Name, op.Name(), locText(op.Loc()))
			}
			return
		}
	}
}

// isTriviallyDead reports whether op can go: a registered Pure op, not a
// terminator, none of whose results is used.
func isTriviallyDead(op *Operation) bool {
	if !op.HasTrait(Pure) || op.HasTrait(Terminator) || op.block == nil {
		return false
	}
	for _, r := range op.results {
		if r.HasUses() {
			return false
		}
	}
	return true
}

// patternsFor returns the patterns that may match an op named name, by
// decreasing benefit, ties in the given order.
func (d *greedyDriver) patternsFor(name string) []*Pattern {
	if ps, ok := d.byRoot[name]; ok {
		return ps
	}
	var ps []*Pattern
	for _, p := range d.patterns {
		if p.Root == "" || p.Root == name {
			ps = append(ps, p)
		}
	}
	slices.SortStableFunc(ps, func(a, b *Pattern) int { return b.Benefit - a.Benefit })
	d.byRoot[name] = ps
	return ps
}

func (d *greedyDriver) logf(format string, args ...any) {
	if d.cfg.Log != nil {
		fmt.Fprintf(d.cfg.Log, format+"\n", args...)
	}
}

// locText renders a location for logs: its Position when it has one.
func locText(l Location) string {
	if pos := Position(l); pos != "" {
		return pos
	}
	if l == nil {
		return "unknown"
	}
	return l.String()
}

// fold runs op's folder with the constant values of its operands and
// applies the result. It reports whether the IR changed.
func (d *greedyDriver) fold(op *Operation) bool {
	def := op.def
	if def == nil || def.Fold == nil || op.NumResults() == 0 {
		return false
	}
	operands := make([]Attribute, len(op.operands))
	for i, o := range op.operands {
		if c := o.value.DefiningOp(); c != nil && c.HasTrait(ConstantLike) {
			operands[i] = c.Attr("value")
		}
	}
	res := def.Fold(op, operands)
	if len(res) != op.NumResults() {
		return false
	}
	// A folder that returns the op's own results changed it in place.
	inPlace := true
	for i, r := range res {
		if r.Value != op.results[i] || r.Attr != nil {
			inPlace = false
		}
	}
	if inPlace {
		d.rw.ModifyInPlace(op, func() {})
		return true
	}
	vals := make([]*Value, len(res))
	var made []*Operation
	for i, r := range res {
		switch {
		case r.Value != nil:
			vals[i] = r.Value
		case r.Attr != nil:
			c, fresh := d.materialize(op, r.Attr, op.results[i].typ)
			if c == nil {
				for _, m := range made {
					if !m.results[0].HasUses() {
						d.forgetConstant(m)
						d.rw.EraseOp(m)
					}
				}
				return false
			}
			if fresh {
				made = append(made, c)
			}
			vals[i] = c.results[0]
		default:
			return false
		}
	}
	d.rw.ReplaceOp(op, vals)
	return true
}

// insertionRegion returns the region folded constants of op go to: the
// nearest enclosing region whose op is isolated from above, or might be
// (an unregistered op), or is root.
func (d *greedyDriver) insertionRegion(op *Operation) *Region {
	r := op.ParentRegion()
	for r != nil {
		p := r.parent
		if p == nil || p == d.root || !p.Registered() || p.HasTrait(IsolatedFromAbove) || p.ParentRegion() == nil {
			return r
		}
		r = p.ParentRegion()
	}
	return nil
}

// materialize returns a constant op for a of type t at the start of op's
// insertion region, reusing an existing one. fresh says it was just built.
func (d *greedyDriver) materialize(op *Operation, a Attribute, t Type) (c *Operation, fresh bool) {
	region := d.insertionRegion(op)
	if region == nil || region.first == nil {
		return nil, false
	}
	dialects := []*Dialect{op.def.dialect, d.ctx.Dialect("arith")}
	for _, dl := range dialects {
		if dl == nil || dl.MaterializeConstant == nil {
			continue
		}
		key := constKey{region: region, dialect: dl, attr: attrKey(a), typ: t}
		if c := d.constants[key]; c != nil {
			return c, false
		}
		entry := region.first
		d.rw.SetInsertionPointToStart(entry)
		c := dl.MaterializeConstant(&d.rw.Builder, a, t, op.Loc())
		if c == nil {
			continue
		}
		if c.block == nil {
			d.rw.Insert(c)
		}
		if c.NumResults() != 1 || c.results[0].typ != t {
			d.rw.EraseOp(c)
			continue
		}
		if c.HasTrait(ConstantLike) {
			d.constants[key] = c
			d.cached[c] = key
		}
		return c, true
	}
	return nil, false
}

// insertKnownConstant deduplicates a constant op: it is replaced by an
// identical one already at the start of its insertion region, or becomes
// that one itself (moving there). It reports whether op was replaced.
func (d *greedyDriver) insertKnownConstant(op *Operation) bool {
	if _, ok := d.cached[op]; ok {
		return false
	}
	a := op.Attr("value")
	region := d.insertionRegion(op)
	if a == nil || op.NumResults() != 1 || region == nil || op.def.dialect == nil {
		return false
	}
	key := constKey{region: region, dialect: op.def.dialect, attr: attrKey(a), typ: op.results[0].typ}
	if c := d.constants[key]; c != nil && c != op {
		d.rw.ReplaceOp(op, []*Value{c.results[0]})
		d.changed = true
		if d.cfg.Log != nil {
			d.logf("fold: '%s' at %s", op.Name(), locText(op.Loc()))
		}
		return true
	}
	// Only a constant that reads nothing and holds nothing may move up.
	if len(op.operands) > 0 || len(op.Regions()) > 0 || !op.HasTrait(Pure) {
		return false
	}
	d.constants[key] = op
	d.cached[op] = key
	if !inLeadingConstants(op, region.first) {
		op.MoveBefore(region.first.first)
		d.changed = true
	}
	return false
}

// inLeadingConstants reports whether op is in entry among the constants
// that start it.
func inLeadingConstants(op *Operation, entry *Block) bool {
	if op.block != entry {
		return false
	}
	for o := entry.first; o != op; o = o.next {
		if !o.HasTrait(ConstantLike) {
			return false
		}
	}
	return true
}

func (d *greedyDriver) forgetConstant(op *Operation) {
	if key, ok := d.cached[op]; ok {
		delete(d.cached, op)
		if d.constants[key] == op {
			delete(d.constants, key)
		}
	}
}

// simplifyRegions erases the unreachable blocks of every region under
// root, and reports whether it erased any.
func (d *greedyDriver) simplifyRegions() bool {
	erased := false
	d.root.Walk(func(o *Operation) bool {
		for _, r := range o.Regions() {
			if r.first == nil || r.first == r.last {
				continue
			}
			reach := reachableBlocks(r)
			for b := r.first; b != nil; {
				next := b.next
				if !reach[b] {
					d.rw.EraseBlock(b)
					erased = true
				}
				b = next
			}
		}
		return true
	})
	return erased
}

// reachableBlocks returns the blocks of r reachable from its entry.
func reachableBlocks(r *Region) map[*Block]bool {
	seen := map[*Block]bool{r.first: true}
	stack := []*Block{r.first}
	for len(stack) > 0 {
		b := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, s := range blockSuccessors(b) {
			if s != nil && s.parent == r && !seen[s] {
				seen[s] = true
				stack = append(stack, s)
			}
		}
	}
	return seen
}

// OpInserted implements RewriteListener: new ops are visited.
func (d *greedyDriver) OpInserted(op *Operation) { d.push(op) }

// OpModified implements RewriteListener: changed ops are revisited.
func (d *greedyDriver) OpModified(op *Operation) { d.push(op) }

// OpReplaced implements RewriteListener; the users are reported through
// OpModified.
func (d *greedyDriver) OpReplaced(*Operation, []*Value) {}

// OpErased implements RewriteListener: the op leaves the worklist and the
// constant cache, and the ops defining its operands are revisited since
// they may have become dead.
func (d *greedyDriver) OpErased(op *Operation) {
	d.erased[op] = true
	d.remove(op)
	d.forgetConstant(op)
	for _, o := range op.operands {
		if o.value != nil {
			if def := o.value.DefiningOp(); def != nil {
				d.push(def)
			}
		}
	}
}
