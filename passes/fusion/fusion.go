// Package fusion provides the graph-fuse pass, which groups the ops of each
// function into graph.fusion regions, one per future kernel, and logs why
// (STRATA_LOGS=fusion or irc --logs=fusion). Importing the package
// registers the pass.
//
// The rules, modelled on TorchInductor's scheduler and XLA's priority
// fusion, are documented in docs/fusion.md and in the pass description.
package fusion

import (
	"fmt"
	"io"
	"strings"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
)

// Topic is the logs topic of fusion decisions.
const Topic = "fusion"

// Options tune graph-fuse.
type Options struct {
	// RowLimit is the largest per-row extent, in elements, of a reduction
	// whose rows stay in one kernel (persistent row reduction). The
	// default covers GPT-2's vocabulary (50304): the loss's max, pick and
	// Σexp over a row of logits are one kernel, whose later loop re-reads
	// the row from L2 (convert-loop-to-gpu gives such long rows a block
	// of LongRowBlock threads, few rows in flight) instead of a second
	// kernel reading it from memory.
	RowLimit int64
	// Horizontal merges sibling groups that read the same input.
	Horizontal bool
	// Epilogue fuses pointwise consumers into matmul and conv2d groups.
	Epilogue bool
	// MatmulLibrary says the matmuls will run on a vendor library
	// (convert-loop-to-gpu's matmul=cublaslt): a matmul group's epilogue
	// would then be a kernel of its own reading the stored product, so
	// its pointwise consumers are left to join their own consumers (a
	// layer norm's row kernel takes the bias and residual adds as its
	// prologue) instead of storing their result for them.
	MatmulLibrary bool
	// ConvLibrary says the convolutions cuDNN can take will run on it
	// (convert-loop-to-gpu's conv=cudnn): as under MatmulLibrary, a
	// conv2d group's epilogue would be a kernel of its own reading the
	// stored convolution, so its pointwise consumers are left to their
	// own consumers (ResNet's stem: the batch norm and ReLU join the max
	// pool's kernel instead of storing the activation it reads).
	ConvLibrary bool
	// MaxGroupOps bounds the ops of one group (0: no bound).
	MaxGroupOps int
	// Log, when not nil, receives every decision, one line each; when nil
	// they go to the logs package under Topic, if it is enabled.
	Log io.Writer
}

// DefaultOptions are the options of a plain graph-fuse.
func DefaultOptions() Options {
	return Options{RowLimit: 65536, Horizontal: true, Epilogue: true, MaxGroupOps: 64}
}

// Stats counts what one run did.
type Stats struct {
	Groups   int // fusions made
	FusedOps int // computing ops placed in them
	Copies   int // views materialized as copy groups
	Refusals int // merges refused
	Dropped  int // computing ops erased because nothing read them
}

const description = "Groups the ops of each function into graph.fusion regions, one per future kernel, " +
	"so that afterwards every op that computes sits in exactly one fusion; constants and views stay " +
	"outside or are cloned in. Ops are visited in program order; each starts a group and tries to join " +
	"the groups of its producers, best first by the bytes kept out of memory. Rules: pointwise ops fuse " +
	"vertically when they iterate over the same number of elements (views between them are index " +
	"remapping, never copies); a reduction takes its pointwise producers as a prologue and its " +
	"consumers in the reduced space as an epilogue, and consumers over its input space that read only the " +
	"prologue's values (not a reduced one) as more outputs of its kernel; when the reduced axes are innermost and a row " +
	"holds at most `row-limit` elements, consumers that read the reduced value broadcast over the " +
	"rows, and further reductions of the same rows, join it as a persistent row reduction (softmax and " +
	"layer_norm become one kernel); when they are not innermost (columns), a further reduction over the same " +
	"axes of the prologue's values joins it (batch norm's two sums over N, H, W stored channels last), and so does one " +
	"over the same axes whose own sums read nothing of the group but whose epilogue reads its reduced values (the " +
	"second halves of a split batch-norm mean and variance); matmul and conv2d start their own group and take pointwise consumers " +
	"over their output as an epilogue (`epilogue`; not matmuls under `matmul-library` nor the convolutions a library takes under " +
	"`conv-library`, whose result a library call stores: the consumers' kernels take the epilogue instead), never producers, except a widening cast (bf16 to f32) of " +
	"a result stored anyway (returned, read by a reduction, or a library's result under `matmul-library` or `conv-library`) that has several readers or a reduction " +
	"reader: each reader gets a copy of the cast and widens as it loads, so the template does not store a " +
	"widened copy; a cheap pointwise producer over a " +
	"smaller, broadcast space that nothing else reads is recomputed inside its consumer, and one over a larger space " +
	"whose inputs take no more bytes than its result is computed inside its only consumer (after horizontal fusion " +
	"too) or inside the copies of its views when only they read it; composites stay " +
	"alone. No merge may create a cycle between groups (a path through another group) or exceed " +
	"`max-group-ops` (four times it for a pointwise group over one static space of at most 65536 points: such a " +
	"kernel is launch-bound). Then siblings that read the same input over the same space merge (`horizontal`), and so " +
	"do copies of the function's arguments over one space (at most 8 MB each) read only as convolutions' weights, at " +
	"the first one's place (a network's channels-last weights of one shape: one kernel), and small pointwise " +
	"groups of the arguments over one space read only as broadcasts (batch norms' scales and shifts from their " +
	"running statistics: one kernel per channel count). " +
	"Then a pointwise value that one group computes and another reads over the value's space is recomputed " +
	"by the reader when its cone (the group's pointwise ops it depends on, at most 24, back to the group's " +
	"inputs, its template result, small reduced values or values stored anyway) loads fewer bytes than the " +
	"value (batch norm's float32 centred input, a function of the bf16 input), and a small value read " +
	"broadcast when its cone reaches back to the group's inputs and holds no special function or division " +
	"(which every point of the reader would compute); ops nothing reads any more " +
	"are dropped and siblings merge again. " +
	"A view that leaves the function is materialized as a `copy` group, and so is the view a bf16 or f16 " +
	"matmul would read its operand through when it is not a reshape or a transpose of the last two dims " +
	"(the tensor-core plans read buffers). Each fusion's `kind` says what " +
	"kernel it becomes. Every decision and refusal is logged under the `fusion` topic (STRATA_LOGS=fusion, " +
	"irc --logs=fusion). See docs/fusion.md."

func init() {
	d := DefaultOptions()
	passes.Register(&passes.PassInfo{
		Name:        "graph-fuse",
		Summary:     "Group graph ops into graph.fusion regions, one per kernel",
		Description: description,
		Anchor:      funcs.FuncOp,
		Options: []passes.OptionDef{
			{Name: "row-limit", Type: passes.Int, Default: d.RowLimit, Doc: "largest row, in elements, a persistent row reduction keeps in one kernel"},
			{Name: "horizontal", Type: passes.Bool, Default: d.Horizontal, Doc: "merge sibling groups that read the same input"},
			{Name: "epilogue", Type: passes.Bool, Default: d.Epilogue, Doc: "fuse pointwise consumers into matmul and conv2d groups"},
			{Name: "matmul-library", Type: passes.Bool, Default: d.MatmulLibrary, Doc: "the matmuls run on a vendor library: no epilogue joins a matmul group (its consumers' kernels take it)"},
			{Name: "conv-library", Type: passes.Bool, Default: d.ConvLibrary, Doc: "the convolutions of bf16 or f16, one group, no bias, static shapes and padding alike on both sides run on a vendor library: no epilogue joins their conv2d group (its consumers' kernels take it)"},
			{Name: "max-group-ops", Type: passes.Int, Default: int64(d.MaxGroupOps), Doc: "most ops in one group (0: no bound)"},
		},
		After: []passes.Order{
			{Pass: "graph-decompose", Reason: "a composite fused before graph-decompose keeps a group of its own, which convert-graph-to-loop cannot lower"},
			{Pass: "graph-autodiff", Reason: "graph-autodiff has no VJP for graph.fusion"},
		},
		New: func(o passes.Options) (passes.Pass, error) {
			opts := Options{
				RowLimit:      o.Int("row-limit"),
				Horizontal:    o.Bool("horizontal"),
				Epilogue:      o.Bool("epilogue"),
				MatmulLibrary: o.Bool("matmul-library"),
				ConvLibrary:   o.Bool("conv-library"),
				MaxGroupOps:   int(o.Int("max-group-ops")),
			}
			if opts.RowLimit < 0 || opts.MaxGroupOps < 0 {
				return nil, fmt.Errorf("graph-fuse: row-limit and max-group-ops must be >= 0")
			}
			return fusePass{opts}, nil
		},
	})
}

type fusePass struct{ opts Options }

func (fusePass) Name() string { return "graph-fuse" }

func (p fusePass) Run(op *ir.Operation, st *passes.State) error {
	s, err := Fuse(st.Ctx, op, p.opts)
	st.Stat("num-groups", "Number of fusion groups made").Add(int64(s.Groups))
	st.Stat("num-fused-ops", "Number of computing ops placed in fusion groups").Add(int64(s.FusedOps))
	st.Stat("num-copies", "Number of views materialized as copy groups").Add(int64(s.Copies))
	st.Stat("num-refused", "Number of fusions refused").Add(int64(s.Refusals))
	if err == nil && s.Groups == 0 && s.Dropped == 0 {
		st.MarkUnchanged()
	}
	return err
}

// Fuse groups the ops of every block of fn's body (a func.func or any op
// with regions) into graph.fusion ops, as graph-fuse does, and returns what
// it did. Ops already inside a graph.fusion are left alone.
func Fuse(ctx *ir.Context, fn *ir.Operation, opts Options) (Stats, error) {
	var total Stats
	var log strings.Builder
	for _, r := range fn.Regions() {
		for _, b := range r.Blocks() {
			p := newPlanner(b, opts)
			p.plan()
			if len(p.groups) > 0 || p.stats.Dropped > 0 {
				if err := p.rewrite(ctx); err != nil {
					return total, err
				}
			}
			p.stats.Groups = len(p.groups)
			for _, g := range p.groups {
				for _, op := range g.ops {
					if computes(op) {
						p.stats.FusedOps++
					}
				}
			}
			if p.log.Len() > 0 {
				fmt.Fprintf(&log, "%s: %d computing ops in %d groups\n%s", funcName(fn), p.stats.FusedOps, p.stats.Groups, p.log.String())
			}
			total.add(p.stats)
		}
	}
	if log.Len() > 0 {
		w := opts.Log
		if w == nil {
			w = logs.Writer(Topic)
		} else {
			w = prefixed{w}
		}
		if w != nil {
			io.WriteString(w, log.String())
		}
	}
	return total, nil
}

func (s *Stats) add(o Stats) {
	s.Groups += o.Groups
	s.FusedOps += o.FusedOps
	s.Copies += o.Copies
	s.Refusals += o.Refusals
	s.Dropped += o.Dropped
}

// funcName names fn for the log: @name for a function.
func funcName(fn *ir.Operation) string {
	if s, ok := fn.Attr("sym_name").(ir.StringAttr); ok {
		return "func @" + s.Value
	}
	return "'" + fn.Name() + "'"
}

// prefixed writes each line to w with the topic in front, as the logs
// package does.
type prefixed struct{ w io.Writer }

func (p prefixed) Write(b []byte) (int, error) {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		out.WriteString(Topic + ": " + line + "\n")
	}
	if _, err := io.WriteString(p.w, out.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}
