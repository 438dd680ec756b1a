package passes

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/strata-ir/strata/ir"
)

func init() {
	Register(&PassInfo{
		Name:    "cse",
		Summary: "Eliminate common sub-expressions",
		Description: "Replaces a pure op by an equivalent one that dominates it: same name, operands " +
			"(in any order for commutative ops), properties, attributes and result types. An op may " +
			"reuse one from an enclosing region, but never across an op isolated from above. Ops with " +
			"regions or successors, side effects, and unregistered ops are left alone. Dead pure ops " +
			"met on the way are erased.",
		Anchor: AnyOp,
		New:    func(Options) (Pass, error) { return cse{}, nil },
	})
}

type cse struct{}

func (cse) Name() string { return "cse" }

// cseScope maps op keys to the ops that first computed them, and falls
// back on the scope of the dominating block or enclosing region.
type cseScope struct {
	parent *cseScope
	known  map[cseKey][]*ir.Operation
}

// A cseKey is what an op computes, as far as a map can tell cheaply: its
// name and operands (in a canonical order for commutative ops). Ops with
// the same key are then told apart by properties, attributes and result
// types (sameExtras).
type cseKey struct {
	name     string
	operands [3]*ir.Value
	more     string // operands past the third, as value ids
}

func (s *cseScope) lookup(k cseKey, o *ir.Operation) *ir.Operation {
	for ; s != nil; s = s.parent {
		for _, prev := range s.known[k] {
			if sameExtras(prev, o) {
				return prev
			}
		}
	}
	return nil
}

type cseRun struct {
	replaced, erased int
	ids              map[*ir.Value]uint64 // see id
	scratch          []*ir.Value
}

func (cse) Run(op *ir.Operation, st *State) error {
	r := &cseRun{ids: map[*ir.Value]uint64{}}
	for _, reg := range op.Regions() {
		r.region(reg, nil)
	}
	st.Stat("num-cse'd", "Number of operations CSE'd").Add(int64(r.replaced))
	st.Stat("num-dce'd", "Number of operations DCE'd").Add(int64(r.erased))
	if r.replaced+r.erased == 0 {
		st.MarkUnchanged()
	}
	return nil
}

// region simplifies reg's blocks. The entry block dominates the others, so
// they see its scope; blocks other than the entry do not see one another's
// (a conservative stand-in for the dominator tree).
func (r *cseRun) region(reg *ir.Region, outer *cseScope) {
	blocks := reg.Blocks()
	if len(blocks) == 0 {
		return
	}
	entry := &cseScope{parent: outer, known: map[cseKey][]*ir.Operation{}}
	r.block(blocks[0], entry)
	for _, b := range blocks[1:] {
		r.block(b, &cseScope{parent: entry, known: map[cseKey][]*ir.Operation{}})
	}
}

func (r *cseRun) block(b *ir.Block, scope *cseScope) {
	for o := b.First(); o != nil; {
		next := o.Next()
		r.op(o, scope)
		o = next
	}
}

func (r *cseRun) op(o *ir.Operation, scope *cseScope) {
	if isDead(o) {
		o.Erase()
		r.erased++
		return
	}
	if o.NumRegions() > 0 {
		inner := scope
		if o.HasTrait(ir.IsolatedFromAbove) {
			// Keys inside never meet keys outside, so the values inside
			// are numbered apart: the ids of a large module's functions
			// are then not all held at once.
			inner = nil
			outer := r.ids
			r.ids = map[*ir.Value]uint64{}
			defer func() { r.ids = outer }()
		}
		for _, reg := range o.Regions() {
			r.region(reg, inner)
		}
		return
	}
	if !o.HasTrait(ir.Pure) || o.HasTrait(ir.Terminator) || len(o.Successors()) > 0 || o.NumResults() == 0 {
		return
	}
	k := r.key(o)
	if prev := scope.lookup(k, o); prev != nil {
		for i, res := range o.Results() {
			res.ReplaceAllUsesWith(prev.Result(i))
		}
		o.Erase()
		r.replaced++
		return
	}
	scope.known[k] = append(scope.known[k], o)
}

// id numbers values in the order the run first asks for them: an order for
// the operands of commutative ops, and a compact encoding of long operand
// lists.
func (r *cseRun) id(v *ir.Value) uint64 {
	id, ok := r.ids[v]
	if !ok {
		id = uint64(len(r.ids) + 1)
		r.ids[v] = id
	}
	return id
}

// key is o's name and operands.
func (r *cseRun) key(o *ir.Operation) cseKey {
	operands := r.scratch[:0]
	for i := range o.NumOperands() {
		operands = append(operands, o.Operand(i))
	}
	r.scratch = operands
	if o.HasTrait(ir.Commutative) {
		slices.SortFunc(operands, func(a, b *ir.Value) int { return cmp.Compare(r.id(a), r.id(b)) })
	}
	k := cseKey{name: o.Name()}
	n := copy(k.operands[:], operands)
	if n < len(operands) {
		var buf []byte
		for _, v := range operands[n:] {
			buf = binary.AppendUvarint(buf, r.id(v))
		}
		k.more = string(buf)
	}
	return k
}

// sameExtras reports whether ops a and b, of the same key, have the same
// properties, attributes and result types.
func sameExtras(a, b *ir.Operation) bool {
	if a.NumResults() != b.NumResults() {
		return false
	}
	for i := range a.NumResults() {
		if ta, tb := a.Result(i).Type(), b.Result(i).Type(); ta != tb && ta.String() != tb.String() {
			return false
		}
	}
	return a.Properties().Equal(b.Properties()) && a.Attributes().Equal(b.Attributes())
}
