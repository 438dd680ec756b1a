package autodiff

import (
	"strings"

	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
)

// PartitionTopic is the logs topic of graph-partition's reports
// (STRATA_LOGS=partition, irc --logs=partition).
const PartitionTopic = "partition"

func init() {
	passes.Register(&passes.PassInfo{
		Name:    "graph-partition",
		Summary: "Split joint functions @f_joint into a forward pass @f_fwd and a backward pass @f_bwd",
		Description: "For each joint function directly in the module (made by graph-autodiff{joint=true}: it has " +
			"the autodiff.primals attribute), or only the one named by `func`, adds @f_fwd, which takes f's " +
			"arguments and returns f's results followed by the values saved for the backward pass, and " +
			"@f_bwd, which takes the saved values followed by one cotangent per result of f and returns the " +
			"gradients, then erases @f_joint unless `keep-joint` is set. The saved values are a minimum cut " +
			"in bytes: cheap pointwise and layout ops are recomputed in the backward pass from saved inputs, " +
			"matmul, conv2d, reduction and composite results are saved, and so are the operands of the forward " +
			"pass's matmuls and convolutions, which it writes anyway (see docs/autodiff.md). Each split " +
			"is reported, with every saved value's type and size and the total against saving everything " +
			"the backward pass reads, under the `partition` log topic.",
		Anchor: builtin.OpModule,
		Options: []passes.OptionDef{
			{Name: "func", Type: passes.String, Default: "", Doc: "partition only this joint function (default: every joint function)"},
			{Name: "keep-joint", Type: passes.Bool, Default: false, Doc: "keep @f_joint next to @f_fwd and @f_bwd"},
		},
		After: []passes.Order{
			{Pass: "graph-autodiff", Reason: "it splits the @f_joint functions graph-autodiff{joint=true} adds"},
		},
		New: func(o passes.Options) (passes.Pass, error) {
			return partitionPass{fn: o.String("func"), keep: o.Bool("keep-joint")}, nil
		},
	})
}

type partitionPass struct {
	fn   string
	keep bool
}

func (partitionPass) Name() string { return "graph-partition" }

// Run partitions the selected joint functions, collected first.
func (p partitionPass) Run(module *ir.Operation, st *passes.State) error {
	var todo []*ir.Operation
	for _, r := range module.Regions() {
		for blk := r.Front(); blk != nil; blk = blk.Next() {
			for op := range blk.All() {
				if op.Name() == funcd.FuncOp && !funcd.IsExternal(op) &&
					(p.fn == "" && op.Attr(PrimalsAttr) != nil || p.fn != "" && ir.SymbolName(op) == p.fn) {
					todo = append(todo, op)
				}
			}
		}
	}
	if p.fn != "" && len(todo) == 0 {
		return ir.Errorf(module.Loc(), "graph-partition: no function named @%s with a body in the module", p.fn)
	}
	if len(todo) == 0 {
		st.MarkUnchanged()
		return nil
	}
	count := st.Stat("num-partitioned", "Number of joint functions split")
	savedBytes := st.Stat("saved-bytes", "Bytes saved for the backward passes")
	var errs ir.DiagnosticList
	var log strings.Builder
	for _, fn := range todo {
		_, _, rep, err := Partition(st.Ctx, fn)
		if err != nil {
			errs = append(errs, asDiagnostic(fn, err))
			continue
		}
		count.Add(1)
		savedBytes.Add(rep.SavedBytes)
		log.WriteString(rep.String())
		if !p.keep {
			fn.Erase()
		}
	}
	if log.Len() > 0 && logs.Enabled(PartitionTopic) {
		for _, line := range strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n") {
			logs.Printf(PartitionTopic, "%s", line)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
