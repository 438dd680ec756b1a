package loop

import "github.com/strata-ir/strata/ir"

// DataIndexed returns the loads and stores under root with an index
// computed from a loaded value (graph.gather's indices: an embedding's
// ids), which nothing keeps in range, and the values so computed. A
// load's result taints every value computed from it, through the results
// of ops whose operands (or, for loop.if and loop.for, whose yielded
// values) are tainted. Backends guard those accesses: the CPU backend
// (targets/cpu) checks and reports them, the GPU lowering (passes/togpu)
// makes them read zero and skip stores.
func DataIndexed(root *ir.Operation) (accesses map[*ir.Operation]bool, tainted map[*ir.Value]bool) {
	tainted = map[*ir.Value]bool{}
	accesses = map[*ir.Operation]bool{}
	root.Walk(func(op *ir.Operation) bool {
		first := 1 // a load's indices follow its buffer
		if op.Name() == StoreOp {
			first = 2
		}
		if op.Name() == LoadOp || op.Name() == StoreOp {
			for _, v := range op.Operands()[first:] {
				if tainted[v] {
					accesses[op] = true
				}
			}
		}
		if op.Name() == LoadOp {
			tainted[op.Result(0)] = true
			return true
		}
		for _, v := range op.Operands() {
			if !tainted[v] {
				continue
			}
			for _, r := range op.Results() {
				tainted[r] = true
			}
			if op.Name() == YieldOp {
				if p := op.ParentOp(); p != nil {
					for _, r := range p.Results() {
						tainted[r] = true
					}
				}
			}
			break
		}
		return true
	})
	return accesses, tainted
}
