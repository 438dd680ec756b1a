package passes

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-ir/strata/ir"
)

// PassManager runs a pipeline on a root op with instrumentation.
type PassManager struct {
	*OpPassManager
	// Instr selects the instrumentation; NewPassManager and Parse turn
	// VerifyEach on.
	Instr Instrumentation
	// DisableThreading runs nested pipelines one op at a time.
	DisableThreading bool
}

// NewPassManager returns an empty pass manager for ops named anchor.
func NewPassManager(anchor string) *PassManager {
	return &PassManager{OpPassManager: NewOpPassManager(anchor), Instr: Instrumentation{VerifyEach: true}}
}

// Parse returns a pass manager running the textual pipeline text (see
// ParsePipeline). Errors are *PipelineError.
func Parse(text string) (*PassManager, error) {
	opm, err := ParsePipeline(text)
	if err != nil {
		return nil, err
	}
	return &PassManager{OpPassManager: opm, Instr: Instrumentation{VerifyEach: true}}, nil
}

// Run runs the pipeline on root. On error the IR may be half rewritten and
// must not be printed as a result (see the package documentation).
func (pm *PassManager) Run(ctx *ir.Context, root *ir.Operation) error {
	if pm.anchor != AnyOp && root.Name() != pm.anchor {
		return fmt.Errorf("can't run a pass pipeline anchored on '%s' on a '%s' op", pm.anchor, root.Name())
	}
	if err := checkAnchorsRun(ctx, pm.OpPassManager, root); err != nil {
		return err
	}
	r := &runner{
		ctx:   ctx,
		instr: &pm.Instr,
		start: time.Now(),
		times: map[any]time.Duration{},
	}
	workers := runtime.GOMAXPROCS(0)
	if pm.DisableThreading {
		workers = 1
	}
	// Slot 0 is the calling goroutine; the others are handed to workers
	// and double as trace thread ids.
	r.slots = make(chan int, workers-1)
	for i := 1; i < workers; i++ {
		r.slots <- i
	}
	var snapshot string
	if pm.Instr.Reproducer != "" {
		snapshot = ir.Sprint(root, ir.PrintOptions{DebugInfo: true})
	}
	out := pm.Instr.Output
	if out == nil {
		out = io.Discard
	}
	runErr := r.runPipeline(pm.OpPassManager, root, out, 0)
	total := time.Since(r.start)
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
		if pm.Instr.Reproducer != "" {
			if err := writeReproducer(pm.Instr.Reproducer, snapshot, pm.String(), pm.Instr.VerifyEach); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if w := pm.Instr.Timing; w != nil {
		if err := r.writeTiming(w, pm.OpPassManager, total); err != nil {
			errs = append(errs, err)
		}
	}
	if w := pm.Instr.Statistics; w != nil {
		if err := writeStatistics(w, pm.OpPassManager); err != nil {
			errs = append(errs, err)
		}
	}
	if pm.Instr.TraceFile != "" {
		if err := r.writeTrace(pm.Instr.TraceFile); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// runner is the state of one PassManager.Run.
type runner struct {
	ctx   *ir.Context
	instr *Instrumentation
	start time.Time
	slots chan int

	mu     sync.Mutex
	times  map[any]time.Duration // *passEntry or *OpPassManager → summed wall time
	events []traceEvent
}

// runPipeline runs pm's items in order on op. Output goes to out; tid is the
// trace thread id of the calling goroutine.
func (r *runner) runPipeline(pm *OpPassManager, op *ir.Operation, out io.Writer, tid int) error {
	for _, it := range pm.items {
		start := time.Now()
		var err error
		if it.nested != nil {
			err = r.runNested(it.nested, op, out, tid)
			r.addTime(it.nested, time.Since(start))
		} else {
			err = r.runPass(it.pass, op, out, tid)
			r.addTime(it.pass, time.Since(start))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) addTime(key any, d time.Duration) {
	r.mu.Lock()
	r.times[key] += d
	r.mu.Unlock()
}

// runNested runs pm on every op directly nested in op's regions that pm is
// anchored on, in parallel when there are spare worker slots. Output and
// errors are gathered per op and reported in op order.
func (r *runner) runNested(pm *OpPassManager, op *ir.Operation, out io.Writer, tid int) error {
	var targets []*ir.Operation
	for _, reg := range op.Regions() {
		for _, b := range reg.Blocks() {
			for _, child := range b.Ops() {
				if pm.anchor == AnyOp && child.HasTrait(ir.IsolatedFromAbove) || child.Name() == pm.anchor {
					targets = append(targets, child)
				}
			}
		}
	}
	if len(targets) == 0 {
		return nil
	}
	if len(targets) == 1 || cap(r.slots) == 0 {
		var errs []error
		for _, t := range targets {
			if err := r.runPipeline(pm, t, out, tid); err != nil {
				errs = append(errs, err)
			}
		}
		return joinInOrder(errs)
	}
	bufs := make([]bytes.Buffer, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	var panicked atomic.Pointer[any]
	for i, t := range targets {
		select {
		case slot := <-r.slots:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { r.slots <- slot }()
				// A pass that panics has a bug: the panic goes on in the
				// caller's goroutine once the others are done, where irc
				// and the bench runner report it.
				defer func() {
					if p := recover(); p != nil {
						panicked.CompareAndSwap(nil, &p)
					}
				}()
				errs[i] = r.runPipeline(pm, t, &bufs[i], slot)
			}()
		default:
			// No spare worker: run here rather than wait, so that nested
			// parallel sections can never deadlock on slots.
			errs[i] = r.runPipeline(pm, t, &bufs[i], tid)
		}
	}
	wg.Wait()
	if p := panicked.Load(); p != nil {
		panic(*p)
	}
	var firstWriteErr error
	for i := range bufs {
		if _, err := out.Write(bufs[i].Bytes()); err != nil && firstWriteErr == nil {
			firstWriteErr = err
		}
	}
	if err := joinInOrder(errs); err != nil {
		return err
	}
	return firstWriteErr
}

// joinInOrder merges errors, keeping them in order; located diagnostics are
// merged into one ir.DiagnosticList so callers print them uniformly.
func joinInOrder(errs []error) error {
	var diags ir.DiagnosticList
	var others []error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if ds := ir.Diagnostics(err); len(ds) > 0 {
			diags = append(diags, ds...)
		} else {
			others = append(others, err)
		}
	}
	if len(others) == 0 {
		return diags.Err()
	}
	if len(diags) > 0 {
		others = append([]error{diags}, others...)
	}
	if len(others) == 1 {
		return others[0]
	}
	return errors.Join(others...)
}

// runPass runs one pass on op with the instrumentation around it.
func (r *runner) runPass(pe *passEntry, op *ir.Operation, out io.Writer, tid int) error {
	name := pe.pass.Name()
	if pe.info != nil && pe.info.Anchor != AnyOp && pe.info.Anchor != op.Name() {
		return ir.Errorf(op.Loc(), "'%s' op was scheduled to run under pass '%s', which runs only on '%s'", op.Name(), name, pe.info.Anchor)
	}
	in := r.instr
	if in.PrintBefore {
		printIR(out, "Before", name, op)
	}
	var before uint64
	if in.PrintAfterChange {
		before = hashIR(op)
	}
	st := &State{Ctx: r.ctx, DebugRewrites: in.DebugRewrites, stats: &pe.stats}
	start := time.Now()
	err := pe.pass.Run(op, st)
	dur := time.Since(start)
	if in.TraceFile != "" {
		r.mu.Lock()
		r.events = append(r.events, traceEvent{name: name, op: opLabel(op), start: start.Sub(r.start), dur: dur, tid: tid})
		r.mu.Unlock()
	}
	if err != nil {
		if in.PrintAfterFailure {
			printIR(out, "After", name+" Failed", op)
		}
		return passFailure(op, name, err)
	}
	// A pass that reports no change (State.MarkUnchanged) left IR that was
	// verified before it, so it is not verified again, as in MLIR.
	if in.VerifyEach && !st.unchanged {
		if verr := ir.Verify(op); verr != nil {
			if in.PrintAfterFailure {
				printIR(out, "After", name+" Failed", op)
			}
			diags := ir.DiagnosticList(slices.Clone(ir.Diagnostics(verr)))
			last := *diags[len(diags)-1]
			last.Notes = slices.Clone(last.Notes)
			last.Note(op.Loc(), "the verifier rejected the IR produced by pass '%s'", name)
			diags[len(diags)-1] = &last
			return diags
		}
	}
	switch {
	case in.PrintAfter:
		printIR(out, "After", name, op)
	case in.PrintAfterChange && !st.unchanged && hashIR(op) != before:
		printIR(out, "After", name, op)
	}
	if in.AfterPass != nil {
		in.AfterPass(name, op)
	}
	return nil
}

// passFailure keeps a pass's located diagnostics as they are and locates
// any other error at the op the pass ran on.
func passFailure(op *ir.Operation, name string, err error) error {
	var d *ir.Diagnostic
	var dl ir.DiagnosticList
	switch {
	case errors.As(err, &dl):
		return dl
	case errors.As(err, &d):
		return d
	}
	return ir.Errorf(op.Loc(), "pass '%s' failed: %v", name, err)
}

// printIR writes an MLIR-style dump header and op.
func printIR(w io.Writer, when, what string, op *ir.Operation) {
	fmt.Fprintf(w, "// -----// IR Dump %s %s (%s) //----- //\n%s\n", when, what, opLabel(op), ir.Sprint(op, ir.PrintOptions{}))
}

// opLabel names an op for dumps and traces: "'func.func' operation: @f".
func opLabel(op *ir.Operation) string {
	if name := ir.SymbolName(op); name != "" {
		return fmt.Sprintf("'%s' operation: @%s", op.Name(), name)
	}
	return fmt.Sprintf("'%s' operation", op.Name())
}

func hashIR(op *ir.Operation) uint64 {
	h := fnv.New64a()
	io.WriteString(h, ir.Sprint(op, ir.PrintOptions{Generic: true}))
	return h.Sum64()
}
