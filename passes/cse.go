package passes

import (
	"fmt"
	"slices"
	"strings"

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

// cseScope maps op keys to the op that first computed them, and falls back
// on the scope of the dominating block or enclosing region.
type cseScope struct {
	parent *cseScope
	known  map[string]*ir.Operation
}

func (s *cseScope) lookup(k string) *ir.Operation {
	for ; s != nil; s = s.parent {
		if op, ok := s.known[k]; ok {
			return op
		}
	}
	return nil
}

type cseRun struct {
	replaced, erased int
	keyBuf           strings.Builder
}

func (cse) Run(op *ir.Operation, st *State) error {
	r := &cseRun{}
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
	entry := &cseScope{parent: outer, known: map[string]*ir.Operation{}}
	r.block(blocks[0], entry)
	for _, b := range blocks[1:] {
		r.block(b, &cseScope{parent: entry, known: map[string]*ir.Operation{}})
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
			inner = nil
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
	if prev := scope.lookup(k); prev != nil {
		for i, res := range o.Results() {
			res.ReplaceAllUsesWith(prev.Result(i))
		}
		o.Erase()
		r.replaced++
		return
	}
	scope.known[k] = o
}

// key identifies what o computes. Values are identified by their address,
// which is stable while the pass runs.
func (r *cseRun) key(o *ir.Operation) string {
	b := &r.keyBuf
	b.Reset()
	b.WriteString(o.Name())
	operands := make([]string, o.NumOperands())
	for i, v := range o.Operands() {
		operands[i] = fmt.Sprintf("%p", v)
	}
	if o.HasTrait(ir.Commutative) {
		slices.Sort(operands)
	}
	b.WriteByte('(')
	b.WriteString(strings.Join(operands, ","))
	b.WriteString(")<")
	b.WriteString(o.Properties().String())
	b.WriteString(">")
	b.WriteString(o.Attributes().String())
	for _, t := range o.ResultTypes() {
		b.WriteString(";" + t.String())
	}
	return b.String()
}
