package passes

import "github.com/strata-ir/strata/ir"

func init() {
	Register(&PassInfo{
		Name:    "dce",
		Summary: "Eliminate dead code",
		Description: "Erases unreachable blocks and pure ops none of whose results is used, " +
			"repeatedly, so that chains of dead ops go at once. Ops with side effects, " +
			"terminators and unregistered ops are kept.",
		Anchor: AnyOp,
		New:    func(Options) (Pass, error) { return dce{}, nil },
	})
}

type dce struct{}

func (dce) Name() string { return "dce" }

func (dce) Run(op *ir.Operation, st *State) error {
	blocks := eraseUnreachableBlocks(op)
	ops := eraseDeadOps(op)
	st.Stat("num-blocks-erased", "Number of unreachable blocks erased").Add(int64(blocks))
	st.Stat("num-ops-erased", "Number of dead operations erased").Add(int64(ops))
	if blocks+ops == 0 {
		st.MarkUnchanged()
	}
	return nil
}

// isDead reports whether op can be erased: a pure, registered non-terminator
// none of whose results is used.
func isDead(op *ir.Operation) bool {
	if !op.HasTrait(ir.Pure) || op.HasTrait(ir.Terminator) {
		return false
	}
	for _, r := range op.Results() {
		if r.HasUses() {
			return false
		}
	}
	return true
}

// eraseDeadOps erases the dead ops nested in root, revisiting the producers
// of each erased op's operands, and returns how many it erased.
func eraseDeadOps(root *ir.Operation) int {
	var work []*ir.Operation
	root.WalkPost(func(o *ir.Operation) {
		if o != root {
			work = append(work, o)
		}
	})
	erased := map[*ir.Operation]bool{}
	n := 0
	// Pop from the end: later ops first, so users go before producers.
	for len(work) > 0 {
		o := work[len(work)-1]
		work = work[:len(work)-1]
		if erased[o] || !isDead(o) {
			continue
		}
		var producers []*ir.Operation
		for _, v := range o.Operands() {
			if d := v.DefiningOp(); d != nil && d.IsAncestor(root) && d != root {
				producers = append(producers, d)
			}
		}
		o.WalkPost(func(x *ir.Operation) { erased[x] = true; n++ })
		o.Erase()
		work = append(work, producers...)
	}
	return n
}

// eraseUnreachableBlocks erases the blocks no path from their region's entry
// reaches, in every region under root, and returns how many it erased.
func eraseUnreachableBlocks(root *ir.Operation) int {
	n := 0
	root.Walk(func(o *ir.Operation) bool {
		for _, r := range o.Regions() {
			blocks := r.Blocks()
			if len(blocks) < 2 {
				continue
			}
			reach := map[*ir.Block]bool{blocks[0]: true}
			stack := []*ir.Block{blocks[0]}
			for len(stack) > 0 {
				b := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if t := b.Last(); t != nil {
					for _, s := range t.Successors() {
						if !reach[s] {
							reach[s] = true
							stack = append(stack, s)
						}
					}
				}
			}
			for _, b := range blocks {
				if !reach[b] {
					b.Erase()
					n++
				}
			}
		}
		return true
	})
	return n
}
