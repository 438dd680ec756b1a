package fusion

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// Check verifies graph-fuse's postcondition on op and everything nested in
// it: every graph op that computes sits directly in the body of exactly one
// graph.fusion (fusions do not nest), outside fusions only constants, views
// and non-graph ops remain, every fusion has a kind and every fusion result
// is read. Property tests call it after graph-fuse.
func Check(op *ir.Operation) error {
	var errs ir.DiagnosticList
	op.Walk(func(o *ir.Operation) bool {
		parent := o.ParentOp()
		inFusion := parent != nil && parent.Name() == graph.OpFusion
		switch {
		case o.Name() == graph.OpFusion:
			if o.ParentOfType(graph.OpFusion) != nil {
				errs = append(errs, ir.Errorf(o.Loc(), "graph.fusion nested in another fusion"))
			}
			if _, ok := o.Attr("kind").(ir.StringAttr); !ok {
				errs = append(errs, ir.Errorf(o.Loc(), "graph.fusion without a kind"))
			}
			for i, r := range o.Results() {
				if !r.HasUses() {
					errs = append(errs, ir.Errorf(o.Loc(), "graph.fusion result #%d is never read", i))
				}
			}
		case computes(o) && !inFusion:
			errs = append(errs, ir.Errorf(o.Loc(), "'%s' computes outside any graph.fusion", o.Name()))
		}
		return true
	})
	if len(errs) > 0 {
		return fmt.Errorf("graph-fuse invariant: %w", errs)
	}
	return nil
}
