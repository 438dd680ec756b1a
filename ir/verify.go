package ir

import "fmt"

// Verify checks op and everything nested in it: structure (operands,
// dominance, terminators, successors, block arguments, symbol tables), the
// traits of registered ops, and each registered op's own OpDef.Verify. It
// returns nil or a DiagnosticList holding every error found, each located at
// the offending op. Ops of dialects the creating context did not load, or
// of any dialect when it allowed unregistered ops, are accepted as opaque:
// their own structure is not checked, but the ops nested in them are. An op
// that a loaded dialect does not define (arith.addff) is an error.
func Verify(op *Operation) error {
	v := &verifier{
		root: op,
		pos:  map[*Operation]int{},
		dom:  map[*Region]*domTree{},
	}
	v.verifyOp(op)
	return v.diags.Err()
}

// verifier holds the state of one Verify call.
type verifier struct {
	root  *Operation
	diags DiagnosticList
	// pos numbers the ops of every block visited so far, in block order, so
	// that same-block dominance is one comparison. An op is numbered just
	// before it is visited, so an op not yet numbered comes later.
	pos map[*Operation]int
	// dom caches the dominator trees of multi-block regions.
	dom map[*Region]*domTree
}

// opError records "'name' op message" at op's location and returns it so
// callers can attach notes.
func (v *verifier) opError(op *Operation, format string, args ...any) *Diagnostic {
	d := Errorf(op.Loc(), "'%s' op %s", op.Name(), fmt.Sprintf(format, args...))
	v.diags = append(v.diags, d)
	return d
}

func (v *verifier) verifyOp(op *Operation) {
	hasNull := false
	for i, o := range op.operands {
		if o.value == nil {
			v.opError(op, "null operand found (operand #%d)", i)
			hasNull = true
		}
	}
	for i, s := range op.Successors() {
		switch {
		case s == nil:
			v.opError(op, "null successor found (successor #%d)", i)
		case op.block == nil || s.parent != op.block.parent:
			v.opError(op, "reference to block defined in another region (successor #%d)", i)
		}
	}
	if op.HasTrait(Terminator) && op.next != nil {
		v.opError(op, "must be the last operation in the parent block")
	}
	switch {
	case op.Registered():
		v.verifyTraits(op, hasNull)
	case op.def != nil: // an op its loaded dialect does not define
		d := Errorf(op.Loc(), "unregistered operation '%s' found in dialect ('%s') that does not allow unknown operations", op.Name(), op.def.dialect.Name)
		v.diags = append(v.diags, d)
	}

	for i, r := range op.Regions() {
		v.verifyRegion(op, i, r)
	}
}

// verifyTraits checks the rules implied by a registered op's traits, then
// its own verifier.
func (v *verifier) verifyTraits(op *Operation, hasNull bool) {
	def := op.def
	if op.HasTrait(SameOperandsAndResultType) && !hasNull {
		var first Type
		same := func(t Type) bool {
			if first == nil {
				first = t
			}
			return t == first
		}
		ok := true
		for _, o := range op.operands {
			ok = ok && same(o.value.typ)
		}
		for _, r := range op.results {
			ok = ok && same(r.typ)
		}
		if !ok {
			v.opError(op, "requires the same type for all operands and results")
		}
	}
	if op.HasTrait(ConstantLike) && op.Attr("value") == nil {
		v.opError(op, "requires attribute 'value'")
	}
	if op.HasTrait(SingleBlock) {
		for i, r := range op.Regions() {
			if r.first != r.last {
				v.opError(op, "expects region #%d to have 0 or 1 blocks", i)
			}
		}
	}
	if op.HasTrait(Symbol) {
		if _, ok := op.Attr(SymNameAttr).(StringAttr); !ok {
			v.opError(op, "requires string attribute '%s'", SymNameAttr)
		}
		if p := op.ParentOp(); p != nil && p.Registered() && !p.HasTrait(SymbolTable) {
			v.opError(op, "symbol's parent must have the SymbolTable trait")
		}
	}
	if op.HasTrait(SymbolTable) {
		v.verifySymbolTable(op)
	}
	if def.Verify != nil && !hasNull {
		v.addOpDefError(op, def.Verify(op))
	}
}

// addOpDefError records the error an OpDef.Verify returned, locating it at
// op unless it already carries a location.
func (v *verifier) addOpDefError(op *Operation, err error) {
	if err == nil {
		return
	}
	for _, d := range Diagnostics(err) {
		if d.Loc == nil || d.Loc == (UnknownLoc{}) {
			nd := *d
			nd.Loc = op.Loc()
			nd.Message = fmt.Sprintf("'%s' op %s", op.Name(), d.Message)
			d = &nd
		}
		v.diags = append(v.diags, d)
	}
}

// verifySymbolTable checks that a symbol table op has one region of at most
// one block, and that the symbols directly inside it have unique names.
func (v *verifier) verifySymbolTable(op *Operation) {
	if len(op.Regions()) != 1 {
		v.opError(op, "operations with a 'SymbolTable' must have exactly one region")
		return
	}
	seen := map[string]*Operation{}
	for b := op.Regions()[0].first; b != nil; b = b.next {
		for o := b.first; o != nil; o = o.next {
			name, ok := o.Attr(SymNameAttr).(StringAttr)
			if !ok {
				continue
			}
			if prev, dup := seen[name.Value]; dup {
				d := Errorf(o.Loc(), "redefinition of symbol named '%s'", name.Value)
				d.Note(prev.Loc(), "see existing symbol definition here")
				v.diags = append(v.diags, d)
				continue
			}
			seen[name.Value] = o
		}
	}
}

func (v *verifier) verifyRegion(op *Operation, index int, r *Region) {
	if r.parent != op {
		v.opError(op, "region #%d has an inconsistent parent", index)
	}
	// Registered ops need terminators unless they say otherwise; an
	// unregistered op is opaque, so its blocks may end any way they like.
	needTerm := op.Registered() && !op.HasTrait(NoTerminator)
	for b := r.first; b != nil; b = b.next {
		if b.parent != r {
			v.opError(op, "block in region #%d has an inconsistent parent", index)
		}
		if b == r.first && len(b.Predecessors()) > 0 {
			v.opError(op, "entry block of region may not have predecessors")
		}
		for i, a := range b.args {
			if a.block != b || a.index != i {
				v.opError(op, "block argument #%d is not owned by its block", i)
			}
		}
		if needTerm && b.last == nil {
			v.opError(op, "empty block: expect at least a terminator")
		}
		before := len(v.diags)
		n := 0
		for o := b.first; o != nil; o = o.next {
			if o.block != b {
				v.opError(o, "has an inconsistent parent block")
			}
			v.pos[o] = n
			n++
			v.verifyOperands(o)
			v.verifyOp(o)
		}
		// Positions matter only while the block is verified (its ops and
		// the ones nested in them): the map holds the blocks on the way
		// down, not the whole module.
		for o := b.first; o != nil; o = o.next {
			delete(v.pos, o)
		}
		// As in MLIR, the terminator is checked once the block's ops are,
		// and a block whose ops failed is not blamed for its end too (a
		// function cut short in a test usually lacks its return).
		// An unregistered op may be a terminator: MLIR accepts it.
		if needTerm && b.last != nil && len(v.diags) == before && b.last.Registered() && !b.last.HasTrait(Terminator) {
			v.diags = append(v.diags, Errorf(b.last.Loc(), "block with no terminator, has '%s' op", b.last.Name()))
		}
	}
}

// verifyOperands checks that every operand of user is visible at user:
// defined in a region enclosing user, not across an IsolatedFromAbove
// boundary, and (outside graph regions) dominating the use.
func (v *verifier) verifyOperands(user *Operation) {
	for i, o := range user.operands {
		if o.value != nil {
			v.verifyUse(user, i, o.value)
		}
	}
}

func (v *verifier) verifyUse(user *Operation, index int, val *Value) {
	defBlock := val.ParentBlock()
	var defRegion *Region
	if defBlock != nil {
		defRegion = defBlock.parent
	}
	// Walk up from the user to the op (anc) that sits directly in the
	// region defining val, noting the first isolated op crossed on the way.
	var isolated *Operation
	anc := user
	for anc != v.root && (anc.block == nil || anc.block.parent != defRegion || defRegion == nil) {
		p := anc.ParentOp()
		if p == nil {
			break
		}
		if isolated == nil && p.HasTrait(IsolatedFromAbove) {
			isolated = p
		}
		anc = p
	}
	found := defRegion != nil && anc.block != nil && anc.block.parent == defRegion && anc != v.root
	if !found {
		// val is not defined in a region enclosing user within the
		// verified tree: fine when it comes from outside the tree (the
		// caller verifies a nested op), unless it is detached or crosses an
		// isolation boundary.
		if defRegion == nil || v.inVerifiedTree(defRegion) {
			v.dominanceError(user, index, val)
			return
		}
		if isolated != nil {
			v.isolationError(user, index, isolated)
		}
		return
	}
	if isolated != nil {
		v.isolationError(user, index, isolated)
		return
	}
	if p := defRegion.parent; p != nil && (p.HasTrait(GraphRegion) || !p.Registered()) {
		// An unregistered op's regions may be graph regions, as upstream
		// assumes: nothing is known of their semantics.
		return
	}
	useBlock := anc.block
	if useBlock == defBlock {
		if d := val.op; d != nil {
			if dp, ok := v.pos[d]; !ok || d == anc || dp >= v.pos[anc] {
				v.dominanceError(user, index, val)
			}
		}
		return
	}
	if !v.domTree(defRegion).dominates(defBlock, useBlock) {
		v.dominanceError(user, index, val)
	}
}

// inVerifiedTree reports whether r lies inside the op being verified.
func (v *verifier) inVerifiedTree(r *Region) bool {
	for p := r.parent; p != nil; p = p.ParentOp() {
		if p == v.root {
			return true
		}
	}
	return false
}

func (v *verifier) dominanceError(user *Operation, index int, val *Value) {
	d := Errorf(user.Loc(), "operand #%d does not dominate this use", index)
	defBlock := val.ParentBlock()
	var defRegion, useRegion *Region
	if defBlock != nil {
		defRegion = defBlock.parent
	}
	if user.block != nil {
		useRegion = user.block.parent
	}
	// Where the definition is, seen from the use.
	where := "in a sibling region"
	switch {
	case val.op != nil && defBlock == user.block:
		where = "in the same block"
	case defRegion == useRegion:
		where = "in the same region"
	case encloses(defRegion, useRegion):
		where = "in a parent region"
	case encloses(useRegion, defRegion):
		where = "in a child region"
	}
	switch def := val.op; {
	case def != nil && defBlock == nil: // a definition no longer in the IR
		d.Note(def.Loc(), "operand defined here")
	case def != nil:
		d.Note(def.Loc(), "operand defined here (op %s)", where)
	case defBlock != nil:
		n := 0
		for b := defRegion.first; b != nil && b != defBlock; b = b.next {
			n++
		}
		// At the op that holds the block, as MLIR places it.
		var at Location = val.Loc()
		if owner := defRegion.parent; owner != nil {
			at = owner.Loc()
		}
		d.Note(at, "operand defined as a block argument (block #%d %s)", n, where)
	}
	v.diags = append(v.diags, d)
}

// encloses reports whether inner is nested (at any depth) inside outer.
func encloses(outer, inner *Region) bool {
	if outer == nil {
		return false
	}
	for r := inner; r != nil && r.parent != nil && r.parent.block != nil; {
		r = r.parent.block.parent
		if r == outer {
			return true
		}
	}
	return false
}

func (v *verifier) isolationError(user *Operation, index int, isolated *Operation) {
	d := v.opError(user, "using value defined outside the region (operand #%d)", index)
	d.Note(isolated.Loc(), "required by region isolation constraints")
}

func (v *verifier) domTree(r *Region) *domTree {
	t, ok := v.dom[r]
	if !ok {
		t = newDomTree(r)
		v.dom[r] = t
	}
	return t
}

// domTree is the dominator tree of a region's CFG, numbered so that a
// dominance query is two comparisons.
type domTree struct {
	// in and out are the DFS entry/exit times of each reachable block in
	// the dominator tree; unreachable blocks are absent.
	in, out map[*Block]int
}

// newDomTree computes dominators with the iterative algorithm of Cooper,
// Harvey and Kennedy over the reverse postorder of the region's CFG.
func newDomTree(r *Region) *domTree {
	// Reverse postorder, iteratively to survive long block chains.
	type frame struct {
		b    *Block
		next int
	}
	order := map[*Block]int{}
	var post []*Block
	visited := map[*Block]bool{}
	if r.first != nil {
		stack := []frame{{b: r.first}}
		visited[r.first] = true
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			succs := blockSuccessors(f.b)
			if f.next < len(succs) {
				s := succs[f.next]
				f.next++
				if s != nil && s.parent == r && !visited[s] {
					visited[s] = true
					stack = append(stack, frame{b: s})
				}
				continue
			}
			post = append(post, f.b)
			stack = stack[:len(stack)-1]
		}
	}
	n := len(post)
	rpo := make([]*Block, n)
	for i, b := range post {
		rpo[n-1-i] = b
		order[b] = n - 1 - i
	}
	preds := make([][]int, n)
	for i, b := range rpo {
		for _, s := range blockSuccessors(b) {
			if j, ok := order[s]; ok {
				preds[j] = append(preds[j], i)
			}
		}
	}
	idom := make([]int, n)
	for i := range idom {
		idom[i] = -1
	}
	if n > 0 {
		idom[0] = 0
	}
	intersect := func(a, b int) int {
		for a != b {
			for a > b {
				a = idom[a]
			}
			for b > a {
				b = idom[b]
			}
		}
		return a
	}
	for changed := true; changed; {
		changed = false
		for i := 1; i < n; i++ {
			nd := -1
			for _, p := range preds[i] {
				if idom[p] < 0 {
					continue
				}
				if nd < 0 {
					nd = p
				} else {
					nd = intersect(p, nd)
				}
			}
			if nd != idom[i] {
				idom[i] = nd
				changed = true
			}
		}
	}
	// Number the dominator tree by DFS so that a dominates b iff b's
	// interval nests in a's.
	children := make([][]int, n)
	for i := 1; i < n; i++ {
		children[idom[i]] = append(children[idom[i]], i)
	}
	t := &domTree{in: make(map[*Block]int, n), out: make(map[*Block]int, n)}
	if n == 0 {
		return t
	}
	clock := 0
	type tframe struct{ node, next int }
	stack := []tframe{{node: 0}}
	t.in[rpo[0]] = clock
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.next < len(children[f.node]) {
			c := children[f.node][f.next]
			f.next++
			clock++
			t.in[rpo[c]] = clock
			stack = append(stack, tframe{node: c})
			continue
		}
		clock++
		t.out[rpo[f.node]] = clock
		stack = stack[:len(stack)-1]
	}
	return t
}

// dominates reports whether every path from the entry to b passes through
// a. Uses in unreachable blocks are dominated by anything, as in MLIR.
func (t *domTree) dominates(a, b *Block) bool {
	bi, ok := t.in[b]
	if !ok {
		return true
	}
	ai, ok := t.in[a]
	if !ok {
		return false
	}
	return ai <= bi && t.out[b] <= t.out[a]
}

// blockSuccessors returns the successors of b's last op.
func blockSuccessors(b *Block) []*Block {
	if b.last == nil {
		return nil
	}
	return b.last.Successors()
}
