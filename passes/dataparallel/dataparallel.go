// Package dataparallel is graph-data-parallel, the compiled form of
// PyTorch's DistributedDataParallel: every rank runs the same training step
// on its own part of the batch, and the gradients are averaged across the
// ranks before the optimizer sees them. The pass takes the joint forward
// and backward function that graph-autodiff{joint=true} makes (or the
// backward function graph-partition makes), groups its gradients into
// buckets in the order the backward sweep produces them, and inserts one
// graph.all_reduce (reduce = "avg") per bucket right after the bucket's
// last gradient, so that the reduction runs on the communication stream
// while the rest of the backward sweep computes. The schedule is decided
// here, at compile time, and printed on request (Schedule.String).
package dataparallel

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/strata-ir/strata/autodiff"
	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
)

// Topic is the log topic of the schedules (STRATA_LOGS=data_parallel).
const Topic = "data_parallel"

// BucketAttr is the discardable attribute (i64) of each bucket's
// all_reduce: the bucket's number in the schedule. It survives lowering on
// the loop.collective step.
const BucketAttr = "strata.bucket"

// DefaultBucketMB is the default bucket size, PyTorch DDP's.
const DefaultBucketMB = 25

func init() {
	passes.Register(&passes.PassInfo{
		Name:    "graph-data-parallel",
		Summary: "Average gradients across ranks in buckets that overlap the backward sweep (DDP)",
		Description: "For each joint function (`autodiff.primals`, from graph-autodiff{joint=true}) or backward " +
			"function (`autodiff.saved`, from graph-partition), or only the one named by `func`, groups the " +
			"returned gradients into buckets of at most `bucket-mb` MiB (`bucket-bytes` overrides it; one " +
			"element type per bucket; a larger gradient is a bucket of its own) in the order the backward " +
			"sweep produces them, and replaces each bucket by one graph.all_reduce (reduce = \"avg\") over " +
			"`group` of the gradients flattened and concatenated, placed right after the bucket's last " +
			"gradient: the collective runs on the communication stream while the remaining backward kernels " +
			"compute. Each all_reduce carries `strata.bucket`. With `print-schedule` (or " +
			"STRATA_LOGS=data_parallel) it prints the schedule: each bucket's gradients, bytes, issue point " +
			"and the compute ops it overlaps.",
		Anchor: builtin.OpModule,
		Options: []passes.OptionDef{
			{Name: "bucket-mb", Type: passes.Int, Default: int64(DefaultBucketMB), Doc: "bucket size in MiB (PyTorch DDP's bucket_cap_mb)"},
			{Name: "bucket-bytes", Type: passes.Int, Default: int64(0), Doc: "bucket size in bytes; overrides bucket-mb when positive"},
			{Name: "group", Type: passes.String, Default: graph.WorldGroup, Doc: "the process group to average over"},
			{Name: "func", Type: passes.String, Default: "", Doc: "only this function (default: every joint or backward function)"},
			{Name: "print-schedule", Type: passes.Bool, Default: false, Doc: "print each function's schedule to stderr"},
		},
		New: func(o passes.Options) (passes.Pass, error) {
			limit := o.Int("bucket-mb") << 20
			if b := o.Int("bucket-bytes"); b > 0 {
				limit = b
			}
			if o.Int("bucket-mb") < 1 && o.Int("bucket-bytes") < 1 || o.Int("bucket-bytes") < 0 {
				return nil, fmt.Errorf("graph-data-parallel: bucket-mb must be at least 1 (or bucket-bytes positive), got bucket-mb=%d bucket-bytes=%d", o.Int("bucket-mb"), o.Int("bucket-bytes"))
			}
			return &pass{opts: Options{BucketBytes: limit, Group: o.String("group")}, fn: o.String("func"), print: o.Bool("print-schedule")}, nil
		},
	})
}

// Options configure Apply.
type Options struct {
	// BucketBytes bounds a bucket's bytes (a larger gradient is a bucket
	// of its own).
	BucketBytes int64
	// Group is the process group ("world" when empty).
	Group string
}

type pass struct {
	opts  Options
	fn    string
	print bool
}

func (*pass) Name() string { return "graph-data-parallel" }

var (
	outMu sync.Mutex
	out   io.Writer
)

// SetScheduleOutput makes every run of graph-data-parallel print its
// schedules to w (nil stops it).
func SetScheduleOutput(w io.Writer) {
	outMu.Lock()
	defer outMu.Unlock()
	out = w
}

func (p *pass) Run(module *ir.Operation, st *passes.State) error {
	var todo []*ir.Operation
	for _, r := range module.Regions() {
		for blk := r.Front(); blk != nil; blk = blk.Next() {
			for op := range blk.All() {
				if op.Name() != funcs.FuncOp || funcs.IsExternal(op) {
					continue
				}
				if p.fn != "" && ir.SymbolName(op) != p.fn {
					continue
				}
				if op.Attr(autodiff.PrimalsAttr) != nil || op.Attr(autodiff.SavedAttr) != nil {
					todo = append(todo, op)
				}
			}
		}
	}
	if len(todo) == 0 {
		what := "no joint or backward function"
		if p.fn != "" {
			what = fmt.Sprintf("no joint or backward function named @%s", p.fn)
		}
		return ir.Errorf(module.Loc(), "graph-data-parallel: %s in the module (make one with graph-autodiff{joint=true}, and graph-partition for a backward function)", what)
	}
	buckets := st.Stat("num-buckets", "Number of gradient buckets made")
	for _, fn := range todo {
		s, err := Apply(st.Ctx, fn, p.opts)
		if err != nil {
			return err
		}
		buckets.Add(int64(len(s.Buckets)))
		text := s.String()
		outMu.Lock()
		w := out
		outMu.Unlock()
		if w == nil && p.print {
			w = os.Stderr
		}
		if w != nil {
			outMu.Lock()
			_, err := io.WriteString(w, text)
			outMu.Unlock()
			if err != nil {
				return fmt.Errorf("graph-data-parallel: printing the schedule: %w", err)
			}
		}
		if logs.Enabled(Topic) {
			for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
				logs.Printf(Topic, "%s", line)
			}
		}
	}
	return nil
}

// Gradient is one gradient of a bucket.
type Gradient struct {
	// Result is its index among the function's results.
	Result int
	// Type is its tensor type, Bytes its size.
	Type  *ir.TensorType
	Bytes int64
	// Producer is the op that computes it (nil for a block argument), and
	// Pos that op's position in the function body (-1 for an argument).
	Producer *ir.Operation
	Pos      int
}

// Bucket is one all_reduce of the schedule.
type Bucket struct {
	Grads []Gradient
	Bytes int64
	// AllReduce is the inserted op; Issue is the position of the op after
	// which it is issued (in the final body), Overlap the compute ops
	// (graph ops that become kernels) between it and the function's return.
	AllReduce *ir.Operation
	Issue     int
	Overlap   int
}

// Schedule is the plan graph-data-parallel made for one function.
type Schedule struct {
	Func        string
	Group       string
	BucketBytes int64
	Buckets     []*Bucket
	// Compute counts the function's compute ops from the first gradient's
	// producer on (the backward kernels that can overlap a bucket).
	Compute int
}

// String prints the schedule, one line per bucket, as
// --print-memory-plan prints a memory plan.
func (s *Schedule) String() string {
	var b strings.Builder
	grads, bytes := 0, int64(0)
	for _, k := range s.Buckets {
		grads += len(k.Grads)
		bytes += k.Bytes
	}
	fmt.Fprintf(&b, "data-parallel schedule of @%s: %d gradients, %s, in %d buckets of at most %s; all_reduce avg over %q on the communication stream\n",
		s.Func, grads, size(bytes), len(s.Buckets), size(s.BucketBytes), s.Group)
	for i, k := range s.Buckets {
		var gs []string
		for _, g := range k.Grads {
			gs = append(gs, fmt.Sprintf("#%d %s", g.Result, g.Type))
		}
		after := "the function's entry"
		if last := k.Grads[len(k.Grads)-1]; last.Producer != nil {
			after = fmt.Sprintf("op %d '%s'", last.Pos, last.Producer.Name())
		}
		fmt.Fprintf(&b, "  bucket %d: %s, results %s; all_reduce on stream 1 after %s; overlaps %d of the %d compute ops from the first gradient on\n",
			i, size(k.Bytes), strings.Join(gs, ", "), after, k.Overlap, s.Compute)
	}
	exposed := 0
	if n := len(s.Buckets); n > 0 {
		exposed = s.Buckets[n-1].Overlap
	}
	fmt.Fprintf(&b, "  the step waits at the return for the last bucket, which overlaps %d compute ops\n", exposed)
	return b.String()
}

// size prints a byte count.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// gradientResults returns the indices of fn's results that are gradients:
// those after f's results in a joint function, every result of a backward
// function.
func gradientResults(fn *ir.Operation) ([]int, error) {
	ft := funcs.Type(fn)
	first := 0
	if p, ok := fn.Attr(autodiff.PrimalsAttr).(ir.IntegerAttr); ok {
		// @f_joint(x₀…xₙ₋₁, ȳ₀…ȳₘ₋₁) -> (y₀…yₘ₋₁, gradients…)
		first = len(ft.Inputs) - int(p.Value)
		if first < 0 || first > len(ft.Results) {
			return nil, ir.Errorf(fn.Loc(), "graph-data-parallel: @%s has %s = %d, more than its %d arguments", ir.SymbolName(fn), autodiff.PrimalsAttr, p.Value, len(ft.Inputs))
		}
	}
	var out []int
	for i := first; i < len(ft.Results); i++ {
		out = append(out, i)
	}
	return out, nil
}

// Apply inserts the gradient all_reduces into the joint or backward
// function fn and returns the schedule.
func Apply(ctx *ir.Context, fn *ir.Operation, o Options) (*Schedule, error) {
	if o.Group == "" {
		o.Group = graph.WorldGroup
	}
	if o.BucketBytes < 1 {
		return nil, fmt.Errorf("graph-data-parallel: the bucket size must be positive, got %d bytes", o.BucketBytes)
	}
	name := ir.SymbolName(fn)
	body := funcs.Body(fn)
	ret := body.Terminator()
	if ret == nil || ret.Name() != funcs.ReturnOp {
		return nil, ir.Errorf(fn.Loc(), "graph-data-parallel: @%s does not end in %s", name, funcs.ReturnOp)
	}
	idx, err := gradientResults(fn)
	if err != nil {
		return nil, err
	}
	pos := map[*ir.Operation]int{}
	for i, op := range body.Ops() {
		pos[op] = i
	}
	// One entry per distinct gradient value, in the order the backward
	// sweep produces them; results sharing a value share its reduction.
	seen := map[*ir.Value]int{}
	var grads []Gradient
	var values []*ir.Value
	for _, i := range idx {
		v := ret.Operand(i)
		t, ok := v.Type().(*ir.TensorType)
		if !ok || !t.Ranked() || ir.NumElements(t.Shape()) < 0 || !ir.IsFloat(t.ElementType()) {
			return nil, ir.Errorf(ret.Loc(), "graph-data-parallel: @%s result %d is %s; gradients must be float tensors of static shape", name, i, v.Type())
		}
		if _, dup := seen[v]; dup {
			continue
		}
		seen[v] = len(grads)
		g := Gradient{Result: i, Type: t, Bytes: ir.NumElements(t.Shape()) * elemBytes(t.ElementType()), Pos: -1}
		if d := v.DefiningOp(); d != nil {
			g.Producer, g.Pos = d, pos[d]
		}
		grads = append(grads, g)
		values = append(values, v)
	}
	order := make([]int, len(grads))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return grads[a].Pos - grads[b].Pos })

	s := &Schedule{Func: name, Group: o.Group, BucketBytes: o.BucketBytes}
	var cur *Bucket
	var members [][]int
	for _, gi := range order {
		g := grads[gi]
		if cur == nil || cur.Bytes+g.Bytes > o.BucketBytes || cur.Grads[0].Type.ElementType() != g.Type.ElementType() {
			cur = &Bucket{}
			s.Buckets = append(s.Buckets, cur)
			members = append(members, nil)
		}
		cur.Grads = append(cur.Grads, g)
		cur.Bytes += g.Bytes
		members[len(members)-1] = append(members[len(members)-1], gi)
	}

	b := ir.NewBuilder(ctx)
	reduced := map[*ir.Value]*ir.Value{}
	for k, bk := range s.Buckets {
		last := bk.Grads[len(bk.Grads)-1]
		if last.Producer != nil {
			b.SetInsertionPointAfter(last.Producer)
		} else {
			b.SetInsertionPointToStart(body)
		}
		e := &graph.Emitter{B: b, Loc: ret.Loc()}
		attrs := []ir.NamedAttr{{Name: "reduce", Value: ir.Str("avg")}, {Name: "group", Value: ir.Str(o.Group)}}
		var outs []*ir.Value
		var r *ir.Value
		if len(bk.Grads) == 1 {
			r = e.Op(graph.OpAllReduce, []*ir.Value{values[members[k][0]]}, attrs...)
			outs = []*ir.Value{r}
		} else {
			var flat []*ir.Value
			for _, gi := range members[k] {
				n := ir.NumElements(grads[gi].Type.Shape())
				flat = append(flat, e.Op(graph.OpReshape, []*ir.Value{values[gi]}, ir.NamedAttr{Name: "shape", Value: graph.Ints(n)}))
			}
			cat := e.Op(graph.OpConcat, flat, ir.NamedAttr{Name: "axis", Value: ir.IntegerAttr{Value: 0, Type: ir.I64}})
			r = e.Op(graph.OpAllReduce, []*ir.Value{cat}, attrs...)
			// The gradients are cut out of the bucket at the return, so
			// that no kernel waits for the all_reduce before it must.
			b.SetInsertionPointBefore(ret)
			var off int64
			for _, gi := range members[k] {
				n := ir.NumElements(grads[gi].Type.Shape())
				sl := e.Op(graph.OpSlice, []*ir.Value{r},
					ir.NamedAttr{Name: "starts", Value: graph.Ints(off)},
					ir.NamedAttr{Name: "limits", Value: graph.Ints(off + n)},
					ir.NamedAttr{Name: "strides", Value: graph.Ints(1)})
				outs = append(outs, e.Op(graph.OpReshape, []*ir.Value{sl}, ir.NamedAttr{Name: "shape", Value: graph.Ints(grads[gi].Type.Shape()...)}))
				off += n
			}
		}
		if e.Err != nil {
			return nil, e.Err
		}
		for i, gi := range members[k] {
			reduced[values[gi]] = outs[i]
		}
		bk.AllReduce = r.DefiningOp()
		bk.AllReduce.SetAttr(BucketAttr, ir.IntegerAttr{Value: int64(k), Type: ir.I64})
	}
	for _, i := range idx {
		if r := reduced[ret.Operand(i)]; r != nil {
			ret.SetOperand(i, r)
		}
	}
	// The overlap, in the final order: compute ops after each issue point.
	ops := body.Ops()
	first := len(ops)
	for i, op := range ops {
		if op == ret {
			break
		}
		for _, bk := range s.Buckets {
			if bk.AllReduce == op {
				bk.Issue = i
			}
		}
		if slices.ContainsFunc(grads, func(g Gradient) bool { return g.Producer == op }) && i < first {
			first = i
		}
	}
	for i, op := range ops {
		if !computes(op) {
			continue
		}
		if i >= first {
			s.Compute++
		}
		for _, bk := range s.Buckets {
			if i > bk.Issue {
				bk.Overlap++
			}
		}
	}
	return s, nil
}

// computes reports whether op is a graph op that becomes (part of) a
// kernel: not a constant, view or collective.
func computes(op *ir.Operation) bool {
	c := graph.ClassOf(op.Name())
	return c >= graph.ClassPointwise && c != graph.ClassCollective
}

// elemBytes is the size of one element of a float type.
func elemBytes(t ir.Type) int64 {
	if f, ok := t.(*ir.FloatType); ok {
		return int64(f.Width / 8)
	}
	return 8
}
