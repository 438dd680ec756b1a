package autodiff

import (
	"errors"

	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

func init() {
	passes.Register(&passes.PassInfo{
		Name:    "graph-autodiff",
		Summary: "Add reverse-mode gradient functions @f_grad next to graph functions",
		Description: "For each public func.func @f directly in the module (or only the one named by `func`), " +
			"adds @f_grad after it. @f_grad takes f's arguments followed by one cotangent per result of f " +
			"(the gradient of a loss with respect to that result; pass ones to differentiate a sum) and " +
			"returns the gradient with respect to each argument listed in `wrt`, in order (every " +
			"floating-point argument when `wrt` is empty). It recomputes the forward values it needs; the " +
			"gradient is built from each op's VJP rule (see docs/autodiff.md). Integer and boolean arguments " +
			"have no gradient; listing one in `wrt` is an error, as is an op with no VJP on a " +
			"differentiated path, a dynamic shape there, or an existing @f_grad. With `joint`, it adds " +
			"@f_joint instead: the same arguments, f's results followed by the gradients, sharing the " +
			"forward values with the backward sweep; graph-partition splits it into @f_fwd and @f_bwd.",
		Anchor: builtin.OpModule,
		Options: []passes.OptionDef{
			{Name: "wrt", Type: passes.IntList, Default: []int64{}, Doc: "argument indices to differentiate with respect to (default: every float argument)"},
			{Name: "func", Type: passes.String, Default: "", Doc: "differentiate only this function (default: every public function)"},
			{Name: "joint", Type: passes.Bool, Default: false, Doc: "add the joint forward and backward function @f_joint instead of @f_grad"},
		},
		Before: []passes.Order{
			{Pass: "convert-graph-to-loop", Reason: "it differentiates graph ops, which convert-graph-to-loop replaces with loops"},
		},
		New: func(o passes.Options) (passes.Pass, error) {
			var wrt []int
			for _, w := range o.Ints("wrt") {
				wrt = append(wrt, int(w))
			}
			return autodiffPass{wrt: wrt, fn: o.String("func"), joint: o.Bool("joint")}, nil
		},
	})
}

type autodiffPass struct {
	wrt   []int // nil: every float argument
	fn    string
	joint bool // build @f_joint rather than @f_grad
}

func (autodiffPass) Name() string { return "graph-autodiff" }

// Run differentiates the selected functions of the module. The functions
// are collected first so that the new @f_grad are not differentiated in
// turn.
func (p autodiffPass) Run(module *ir.Operation, st *passes.State) error {
	var todo []*ir.Operation
	for _, r := range module.Regions() {
		for blk := r.Front(); blk != nil; blk = blk.Next() {
			for op := range blk.All() {
				if p.selects(op) {
					todo = append(todo, op)
				}
			}
		}
	}
	if p.fn != "" && len(todo) == 0 {
		return ir.Errorf(module.Loc(), "graph-autodiff: no function named @%s with a body in the module", p.fn)
	}
	count := st.Stat("num-differentiated", "Number of gradient functions added")
	var errs ir.DiagnosticList
	derive := Grad
	if p.joint {
		derive = Joint
	}
	for _, fn := range todo {
		if _, err := derive(st.Ctx, fn, p.wrt); err != nil {
			errs = append(errs, asDiagnostic(fn, err))
			continue
		}
		count.Add(1)
	}
	if len(todo) == 0 {
		st.MarkUnchanged()
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// selects reports whether op is a function with a body to differentiate:
// the one named by the func option, or else any public one.
func (p autodiffPass) selects(op *ir.Operation) bool {
	if op.Name() != funcd.FuncOp || funcd.IsExternal(op) {
		return false
	}
	if p.fn != "" {
		return ir.SymbolName(op) == p.fn
	}
	// Functions autodiff made are not differentiated again.
	return !ir.IsPrivate(op) && op.Attr(PrimalsAttr) == nil && op.Attr(SavedAttr) == nil
}

func asDiagnostic(fn *ir.Operation, err error) *ir.Diagnostic {
	var d *ir.Diagnostic
	if errors.As(err, &d) {
		return d
	}
	return ir.Errorf(fn.Loc(), "cannot differentiate @%s: %v", ir.SymbolName(fn), err)
}
