package passes

import "github.com/strata-ir/strata/ir"

func init() {
	Register(&PassInfo{
		Name:    "symbol-dce",
		Summary: "Eliminate dead symbols",
		Description: "Runs on an op with the SymbolTable trait (a module) and erases the private " +
			"symbols directly in it that nothing live refers to. Public symbols and every op that is " +
			"not a symbol are live; a symbol is live when a live op refers to it, so chains and " +
			"cycles of unreferenced private functions go at once. Symbol tables nested in the module " +
			"are kept or erased as a whole.",
		Anchor: AnyOp,
		New:    func(Options) (Pass, error) { return symbolDCE{}, nil },
	})
}

type symbolDCE struct{}

func (symbolDCE) Name() string { return "symbol-dce" }

func (symbolDCE) Run(table *ir.Operation, st *State) error {
	if !table.HasTrait(ir.SymbolTable) {
		return ir.Errorf(table.Loc(), "'%s' op was scheduled to run under symbol-dce, but does not define a symbol table", table.Name())
	}
	children := tableChildren(table)
	live := map[*ir.Operation]bool{}
	var work []*ir.Operation
	for _, c := range children {
		if ir.SymbolName(c) == "" || !ir.IsPrivate(c) {
			live[c] = true
			work = append(work, c)
		}
	}
	for len(work) > 0 {
		op := work[len(work)-1]
		work = work[:len(work)-1]
		for _, use := range ir.SymbolUses(op) {
			target := ir.LookupSymbol(use.User, use.Ref)
			// Refer the use to the child of the table holding its target.
			for target != nil && target.ParentOp() != table {
				target = target.ParentOp()
			}
			if target != nil && !live[target] {
				live[target] = true
				work = append(work, target)
			}
		}
	}
	erased := 0
	for _, c := range children {
		if !live[c] {
			c.Erase()
			erased++
		}
	}
	st.Stat("num-dce'd", "Number of symbols DCE'd").Add(int64(erased))
	if erased == 0 {
		st.MarkUnchanged()
	}
	return nil
}

// tableChildren returns the ops directly in table's regions.
func tableChildren(table *ir.Operation) []*ir.Operation {
	var children []*ir.Operation
	for _, r := range table.Regions() {
		for _, b := range r.Blocks() {
			children = append(children, b.Ops()...)
		}
	}
	return children
}
