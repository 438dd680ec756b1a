package frontend

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-ir/strata/autodiff"
	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/interp"
)

// GradFunc is the gradient of a traced function, made by Grad: its Call
// returns the gradients of fn's first result, a scalar loss, with respect
// to the arguments listed in wrt.
type GradFunc struct{ core *gradCore }

// ValueAndGradFunc is a traced function with its gradient, made by
// ValueAndGrad: its Call returns fn's results and the gradients of the
// first one.
type ValueAndGradFunc struct{ core *gradCore }

// Grad returns the gradient of fn, a function of tensors as Compile takes
// (func(x, w *Tensor) *Tensor, …), whose first result is a rank-0 float
// loss; further results are auxiliary values that get no gradient. The
// gradient is taken with respect to the arguments whose indices are in
// wrt, in that order, or every float argument when wrt is empty:
//
//	g := frontend.Grad(loss, 1, 2)
//	grads, err := g.Call(x, w1, w2) // ∂loss/∂w1, ∂loss/∂w2
//
// The first call traces fn into one graph (a graph break is an error, as
// under Fullgraph, and every shape is static), builds its joint forward
// and backward function with package autodiff, partitions it into a
// forward and a backward pass (autodiff.Partition: what to save, what to
// recompute) and runs both with the backend, aot_eager unless WithOptions
// says otherwise. The passes are cached by the graph's structure and input
// types. Every call runs fn; a later one replays it against the traced
// calls as a compiled call does (docs/frontend-state.md): it builds no IR,
// and when fn performs the same ops on inputs of the same types the
// cached passes run on the tensors it read this time; at the first
// difference fn is traced again. Errors, including a bad fn or wrt, are
// returned by Call.
func Grad(fn any, wrt ...int) *GradFunc { return &GradFunc{newGradCore(fn, wrt, Options{})} }

// ValueAndGrad is Grad returning fn's results as well:
//
//	vg := frontend.ValueAndGrad(loss, 1, 2)
//	values, grads, err := vg.Call(x, w1, w2) // values[0] is the loss
func ValueAndGrad(fn any, wrt ...int) *ValueAndGradFunc {
	return &ValueAndGradFunc{newGradCore(fn, wrt, Options{})}
}

// WithOptions returns the gradient compiled with opts: its Backend (the
// forward and backward passes are graphs that backend compiles; aot_eager
// when empty), BackendOptions and Mode. Fullgraph is implied and Dynamic
// is always false: gradients need static shapes.
func (g *GradFunc) WithOptions(opts Options) *GradFunc {
	return &GradFunc{newGradCore(g.core.fn, g.core.wrt, opts)}
}

// WithOptions is GradFunc.WithOptions.
func (g *ValueAndGradFunc) WithOptions(opts Options) *ValueAndGradFunc {
	return &ValueAndGradFunc{newGradCore(g.core.fn, g.core.wrt, opts)}
}

// Call returns the gradients of fn's loss at inputs, one per wrt argument.
func (g *GradFunc) Call(inputs ...*Tensor) ([]*Tensor, error) {
	_, grads, err := g.core.call(inputs, nil)
	return grads, err
}

// Call returns fn's results at inputs and the gradients of its loss, one
// per wrt argument.
func (g *ValueAndGradFunc) Call(inputs ...*Tensor) (values, grads []*Tensor, err error) {
	return g.core.call(inputs, nil)
}

// VJP returns fn's results at inputs and the vector-Jacobian product with
// cotangents, one per result of fn (of its shape and dtype): the gradient
// of Σᵢ ⟨resultᵢ, cotangentᵢ⟩ with respect to each wrt argument. Unlike
// Call it accepts results of any shape.
func (g *ValueAndGradFunc) VJP(cotangents []*Tensor, inputs ...*Tensor) (values, grads []*Tensor, err error) {
	if cotangents == nil {
		cotangents = []*Tensor{}
	}
	return g.core.call(inputs, cotangents)
}

// Stats returns the counters of g's calls: Compiles counts the calls
// whose graph was differentiated and compiled, CacheHits those that
// reused a compiled step, and Replays those of the hits that replayed fn
// against a recorded call without building a graph.
func (g *GradFunc) Stats() Stats { return g.core.stats() }

// Stats is GradFunc.Stats.
func (g *ValueAndGradFunc) Stats() Stats { return g.core.stats() }

// Report returns the partition report of the last call's graph: the values
// its forward pass saves for the backward pass and their bytes.
func (g *GradFunc) Report() autodiff.Report { return g.core.lastReport() }

// Report is GradFunc.Report.
func (g *ValueAndGradFunc) Report() autodiff.Report { return g.core.lastReport() }

// gradCore traces fn and runs its forward and backward passes.
type gradCore struct {
	fn   any
	wrt  []int
	opts Options

	mu     sync.Mutex
	c      *Compiled // fn checked and invoked as Compile does; nil after err
	err    error
	cache  map[string]*trainStep
	report autodiff.Report
}

// trainStep is one graph's compiled forward and backward passes.
type trainStep struct {
	fwd, bwd Executable
	results  int // results of fn; the forward pass returns the saved values after them
	report   autodiff.Report
	// seeds are the cotangents of a call without given ones (the loss's
	// 1 and zeros), made by the first such call.
	seeds []*interp.Tensor
	// pending, while set, is the backward pass's compile still running:
	// the first call runs the forward pass meanwhile (gradCore.run).
	pending *pendingCompile
}

// pendingCompile is a backward pass's compile running in a goroutine of
// its own.
type pendingCompile struct {
	done  chan struct{} // closed when the compile ended
	err   error
	panic any
	times CompileTimes
}

// quietRunner is implemented by the executables whose device may be busy
// with work that times itself (the nvptx backend's library warm-ups,
// which choose the libraries' algorithms by timing them): quiet returns a
// channel closed once none is in progress. A forward pass run while its
// backward pass compiles waits for it, so that its kernels do not slow
// the timings (and the choices) of the backward pass's library calls.
type quietRunner interface {
	quiet() <-chan struct{}
}

func newGradCore(fn any, wrt []int, opts Options) *gradCore {
	if opts.Backend == "" {
		opts.Backend = AOTEagerBackend
	}
	opts.Fullgraph, opts.Dynamic = true, DynamicFalse
	core := &gradCore{fn: fn, wrt: slices.Clone(wrt), opts: opts, cache: map[string]*trainStep{}}
	core.c, core.err = Compile(fn, opts)
	if core.err != nil {
		core.err = fmt.Errorf("frontend: Grad: %w", core.err)
	}
	return core
}

func (g *gradCore) stats() Stats {
	if g.c == nil {
		return Stats{}
	}
	return g.c.Stats()
}

func (g *gradCore) lastReport() autodiff.Report {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.report
}

// call traces fn on inputs and runs the forward and backward passes. With
// nil cotangents the first result must be a float scalar: it is seeded
// with 1 and the other results with zeros.
func (g *gradCore) call(inputs, cotangents []*Tensor) (values, grads []*Tensor, err error) {
	start := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return nil, nil, g.err
	}
	c := g.c
	unlock, err := c.lockCompiled()
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	c.stats.Calls++
	if !c.simpleArgs() || !c.results.simple {
		return nil, nil, fmt.Errorf("frontend: Grad: the function must take and return tensors, not %v", c.fn.Type())
	}
	if nargs := len(c.in); !c.variadic && len(inputs) != nargs || c.variadic && len(inputs) < nargs-1 {
		return nil, nil, fmt.Errorf("frontend: Grad: the function takes %d arguments, got %d", nargs, len(inputs))
	}
	// The arguments stay where they are: a GPU tensor (a parameter kept
	// on the device) is passed to the passes without a copy.
	datas := make([]tensorData, len(inputs))
	for i, t := range inputs {
		if t == nil {
			return nil, nil, fmt.Errorf("frontend: Grad: argument %d is nil", i)
		}
		if datas[i], err = t.data("argument of a differentiated function"); err != nil {
			return nil, nil, fmt.Errorf("frontend: Grad: argument %d: %w", i, err)
		}
	}
	wrt, err := g.resolveWrt(datas)
	if err != nil {
		return nil, nil, err
	}

	// A later call replays fn against the tapes of the calls traced
	// before (replay.go): no graph is built, and when fn matches one the
	// tape's passes run on the tensors it read. At the first difference
	// the steps replayed so far become a graph and fn goes on tracing.
	s := newSession(c, c.backend, true)
	defer func() {
		if err != nil {
			s.fail(err) // tensors fn assigned in place get their old values back
		}
		s.end()
		// The replay's map of the tensors it read does not keep them
		// (a replaced weight's memory) alive until the next call.
		clear(c.rpLifted)
	}()
	args := make([]*Tensor, len(datas))
	for i, d := range datas {
		args[i] = fromData(d)
		args[i].sess = s
	}
	var gr *graphTrace
	if len(c.tapes) == 0 || !s.startReplay(args, datas) {
		gr = s.newGraph(args, c.argTypes(inputs, datas))
	}
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		in[i] = reflect.ValueOf(a)
	}
	_, outs, fnErr := c.invoke(in)
	if s.rp != nil {
		if err := s.collect(outs, fnErr); err != nil {
			return nil, nil, err
		}
		if grads, done, err := g.finishReplay(s, outs, wrt, cotangents); done {
			return outs, grads, err
		}
	}
	if gr == nil {
		gr = s.first // built from the steps replayed before fn differed
	}
	// Tensors fn assigned in place are extra results of the graph, not
	// differentiated (zero cotangents), written back once it has run.
	all := slices.Clip(outs)
	for _, m := range s.mutated {
		if gr != nil && m.t.g == gr && !slices.Contains(all, m.t) {
			all = append(all, m.t)
		}
	}
	if err := g.endTrace(s, gr, all, fnErr); err != nil {
		return nil, nil, err
	}

	cts, err := g.cotangents(resultTypes(all), len(outs), cotangents)
	if err != nil {
		return nil, nil, err
	}
	key := fmt.Sprintf("%x|%v|%v", gr.fp.Sum64(), gr.outIDs, wrt)
	step, ok := g.cache[key]
	if ok {
		c.stats.CacheHits++
	} else {
		c.stats.Compiles++
		if step, err = g.compile(s, gr, wrt, time.Since(start)); err != nil {
			return nil, nil, err
		}
	}
	if cotangents == nil && step.seeds == nil {
		step.seeds = cts
	}
	g.report = step.report
	grads, err = g.run(s, step, gr.inputs, all, cts)
	if !ok && step.pending == nil {
		g.cache[key] = step // both passes compiled, whether or not they ran
	}
	if err != nil {
		return nil, nil, err
	}
	for _, t := range gr.pending {
		if t.g == gr {
			t.err, t.g, t.node = errEscaped, nil, nil
		}
	}
	if gr.tape != nil && len(c.tapes) < maxTapes {
		c.keepTape(&tape{steps: gr.tape.steps, nleaves: len(args), outs: gr.outIDs, train: step, wrt: wrt})
	}
	return outs, grads, nil
}

// run runs step's forward and backward passes on inputs with cotangents
// cts, gives the forward pass's results to all (fn's results, then the
// tensors it assigned in place) and returns the gradients.
//
// On a device backend the passes read and return GPU memory: the saved
// values go from one pass to the other there, and the values and
// gradients stay on the GPU (read them like any GPU tensor).
//
// A first call's forward pass runs while its backward pass still compiles
// (trainStep.pending), once the device is quiet (quietRunner) or the
// compile ended, whichever comes first; the backward pass then waits for
// its compile.
func (g *gradCore) run(s *session, step *trainStep, inputs []tensorData, all []*Tensor, cts []*interp.Tensor) ([]*Tensor, error) {
	if pc := step.pending; pc != nil {
		if q, ok := step.fwd.(quietRunner); ok {
			select {
			case <-q.quiet():
			case <-pc.done:
			}
		}
	}
	fwd, err := runExecutable(step.fwd, inputs)
	if err == nil && len(fwd) < len(all) {
		err = errTooFewResults(len(fwd), len(all))
	}
	if cerr := g.awaitBackward(s, step); cerr != nil {
		if err == nil {
			releaseSaved(fwd[step.results:])
			err = cerr
		}
		return nil, err // the compile's error, or the forward pass's
	}
	if err != nil {
		return nil, fmt.Errorf("frontend: Grad: forward pass: %w", err)
	}
	bwdIn := slices.Clip(fwd[step.results:])
	for _, ct := range cts {
		bwdIn = append(bwdIn, hostData(ct))
	}
	bwd, err := runExecutable(step.bwd, bwdIn)
	// The saved values are the passes' own: released once the backward
	// pass is queued (its stream reads them first), so that a CUDA graph
	// of the forward pass does not move them out of its pool before its
	// next replay (reduce-overhead) and a plain plan's memory returns to
	// the allocator now rather than when the collector finds them.
	if rerr := releaseSaved(fwd[step.results:]); err == nil {
		err = rerr
	}
	if err != nil {
		return nil, fmt.Errorf("frontend: Grad: backward pass: %w", err)
	}
	for i, o := range all {
		o.rid = 0
		o.setData(fwd[i])
	}
	grads := make([]*Tensor, len(bwd))
	for i, d := range bwd {
		grads[i] = fromData(d)
	}
	return grads, nil
}

// finishReplay ends a call that replayed fn to its end: when fn matched
// a whole tape, returning the same values and differentiated with
// respect to the same arguments, the tape's passes run on the tensors the
// replay collected and it reports done. Otherwise the steps replayed
// become the call's graph (s.first) and the call goes on as a traced one.
func (g *gradCore) finishReplay(s *session, outs []*Tensor, wrt []int, cotangents []*Tensor) (grads []*Tensor, done bool, err error) {
	rp := s.rp
	all := slices.Clip(outs)
	for _, m := range s.mutated {
		if _, ok := m.t.replayID(); ok && !slices.Contains(all, m.t) {
			all = append(all, m.t)
		}
	}
	ids := make([]int32, len(all))
	for i, o := range all {
		id, ok := o.replayID()
		if !ok { // not computed in fn: tracing reports it
			s.diverge()
			return nil, false, nil
		}
		ids[i] = id
	}
	accept := func(tp *tape) bool {
		return tp.train != nil && slices.Equal(tp.outs, ids) && slices.Equal(tp.wrt, wrt)
	}
	if rp.pos != len(rp.tp.steps) || !accept(rp.tp) {
		if !rp.switchTape(nil, accept) {
			s.diverge()
			return nil, false, nil
		}
	}
	s.rp = nil
	step := rp.tp.train
	c := g.c
	c.stats.CacheHits++
	c.stats.Replays++
	g.report = step.report
	// The loss's seed and the zeros are the same tensors every call, so
	// a CUDA graph's buffers already hold them.
	cts, err := step.seeds, error(nil)
	if cotangents != nil || cts == nil {
		cts, err = g.cotangents(resultTypes(all), len(outs), cotangents)
	}
	if err == nil {
		grads, err = g.run(s, step, rp.inputs, all, cts)
	}
	// The placeholders fn made and did not return are left without a
	// value, as after a traced call; on an error, every one is.
	for _, t := range rp.objs {
		if t.rid != 0 {
			t.escape(nil, 0)
			if err != nil {
				t.err = err
			}
		}
	}
	clear(rp.objs) // the buffers are reused; the tensors are not kept alive
	clear(rp.inputs)
	rp.leaves, rp.vals = nil, nil
	return grads, true, err
}

// resultTypes returns the types of fn's results: traced tensors' IR
// types, or the shapes and dtypes of a replay's placeholders.
func resultTypes(outs []*Tensor) []*ir.TensorType {
	types := make([]*ir.TensorType, len(outs))
	for i, o := range outs {
		if o.node != nil {
			types[i] = o.node.Type().(*ir.TensorType)
		} else {
			types[i] = ir.TensorOf(o.shape, o.dtype.Elem())
		}
	}
	return types
}

// resolveWrt checks wrt against the arguments, or picks every float one.
func (g *gradCore) resolveWrt(vals []tensorData) ([]int, error) {
	if len(g.wrt) == 0 {
		var wrt []int
		for i, v := range vals {
			if ir.IsFloat(v.ElemType()) {
				wrt = append(wrt, i)
			}
		}
		if len(wrt) == 0 {
			return nil, fmt.Errorf("frontend: Grad: no floating-point argument to differentiate with respect to")
		}
		return wrt, nil
	}
	for _, a := range g.wrt {
		if a < 0 || a >= len(vals) {
			return nil, fmt.Errorf("frontend: Grad: wrt %d is out of range for %d arguments", a, len(vals))
		}
		if !ir.IsFloat(vals[a].ElemType()) {
			return nil, fmt.Errorf("frontend: Grad: argument %d is %s: only floating-point tensors have gradients", a, vals[a].ElemType())
		}
	}
	return g.wrt, nil
}

// endTrace checks that fn's results come from gr, the session's only
// graph, and makes them the results of its function.
func (g *gradCore) endTrace(s *session, gr *graphTrace, outs []*Tensor, fnErr error) error {
	if err := s.collect(outs, fnErr); err != nil {
		return err
	}
	if s.cur != gr || len(s.graphs) > 0 {
		return fmt.Errorf("frontend: Grad: the function did not trace into one graph")
	}
	for i, o := range outs {
		if o.g != gr {
			return fmt.Errorf("frontend: Grad: result %d is not computed from the arguments (a constant or a tensor made outside the function)", i)
		}
	}
	s.cur = nil
	s.seal(gr, outs)
	return nil
}

// cotangents returns the given cotangents of fn's nres results, checked
// against them, or, when given is nil, 1 for the scalar loss and zeros for
// the rest. The results after fn's own (tensors assigned in place) get
// zeros.
func (g *gradCore) cotangents(types []*ir.TensorType, nres int, given []*Tensor) ([]*interp.Tensor, error) {
	cts := make([]*interp.Tensor, len(types))
	for i, tt := range types {
		if given != nil && i < nres {
			if len(given) != nres {
				return nil, fmt.Errorf("frontend: VJP: %d cotangents for %d results", len(given), nres)
			}
			v, err := given[i].value("cotangent")
			if err != nil {
				return nil, fmt.Errorf("frontend: VJP: cotangent %d: %w", i, err)
			}
			if v.ElemType() != tt.ElementType() || !slices.Equal(v.Shape(), tt.Shape()) {
				return nil, fmt.Errorf("frontend: VJP: cotangent %d is %s%v, want the result's %s%v", i, v.ElemType(), v.Shape(), tt.ElementType(), tt.Shape())
			}
			cts[i] = v
			continue
		}
		if i == 0 && (len(tt.Shape()) != 0 || !ir.IsFloat(tt.ElementType())) {
			return nil, fmt.Errorf("frontend: Grad: the function must return a floating-point scalar loss first, got %s (use ValueAndGrad(...).VJP with cotangents for other results)", tt)
		}
		var err error
		if i == 0 && given == nil { // the loss, a scalar: seeded with 1
			cts[i], err = interp.FromFloat64s(tt.ElementType(), tt.Shape(), []float64{1})
		} else {
			cts[i], err = interp.NewTensor(tt.ElementType(), tt.Shape())
		}
		if err != nil {
			return nil, err
		}
	}
	return cts, nil
}

// releaseSaved releases the device memory of the saved values saved and
// returns the first error.
func releaseSaved(saved []tensorData) error {
	var first error
	for _, d := range saved {
		if d.dev != nil {
			if err := d.dev.arr.Release(); first == nil {
				first = err
			}
		}
	}
	return first
}

// awaitBackward waits for the backward pass's compile of step, when one
// is pending, adds its times to the session's and returns its error (a
// panic in it goes on here, in the caller's goroutine, as it would have
// without the concurrency). Once it compiled, step is no longer pending.
func (g *gradCore) awaitBackward(s *session, step *trainStep) error {
	pc := step.pending
	if pc == nil {
		return nil
	}
	<-pc.done
	s.times.merge(pc.times)
	if pc.panic != nil {
		panic(pc.panic)
	}
	if pc.err != nil {
		return fmt.Errorf("frontend: Grad: backend %s: %w", g.c.backend.name, pc.err)
	}
	step.pending = nil
	return nil
}

// concurrentCompiler is implemented by the built-in backends whose
// Compile may run for several graphs at once (Backend makes no such
// promise).
type concurrentCompiler interface {
	concurrentCompile()
}

// trainingLayout is implemented by the built-in backends that store a
// training step's convolutions channels last: trainingLayout returns the
// pipeline (the body of a module pipeline) that chooses the layout of
// g's function, the function to differentiate, or "" for none.
type trainingLayout interface {
	trainingLayout(g *Graph) string
}

// chooseLayout runs the backend's layout pipeline (trainingLayout) on
// gr's function before it is differentiated: the layout the backend
// would give the forward and the backward pass alone is NCHW, as each
// would transpose every activation the forward saves for the backward
// (graph-channels-last's cost guard), while the differentiated
// channels-last function is channels last in both.
func (g *gradCore) chooseLayout(gr *graphTrace) error {
	tl, ok := g.c.backend.b.(trainingLayout)
	if !ok {
		return nil
	}
	pipeline := tl.trainingLayout(&Graph{Context: irContext(), Module: gr.module, Func: ir.SymbolName(gr.fn), Mode: g.opts.Mode, Options: g.opts.BackendOptions})
	if pipeline == "" {
		return nil
	}
	pm, err := passes.Parse("builtin.module(" + pipeline + ")")
	if err != nil {
		return fmt.Errorf("choosing the layout: %w", err)
	}
	// A traced graph, valid by construction; the backend verifies the
	// passes' lowered module, as for its own pipeline.
	pm.Instr.VerifyEach = false
	if err := pm.Run(irContext(), gr.module); err != nil {
		return fmt.Errorf("choosing the layout: %w", err)
	}
	return nil
}

// compile builds gr's joint function, partitions it and compiles the two
// passes, each in a module of its own, with the backend.
func (g *gradCore) compile(s *session, gr *graphTrace, wrt []int, traced time.Duration) (*trainStep, error) {
	ctx := irContext()
	var (
		fwd, bwd *ir.Operation
		report   autodiff.Report
	)
	start := time.Now()
	err := g.chooseLayout(gr)
	var joint *ir.Operation
	if err == nil {
		joint, err = autodiff.Joint(ctx, gr.fn, wrt)
	}
	if err == nil {
		fwd, bwd, report, err = autodiff.Partition(ctx, joint)
	}
	s.times.add(PhasePasses, time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("frontend: Grad: %w", err)
	}
	// What the first call did before its two passes' compiles start.
	logs.Printf(topicCompile, "%s: traced in %.1f ms (%d ops), then differentiated and partitioned in %.1f ms",
		ir.SymbolName(gr.fn), float64(traced.Microseconds())/1000, gr.nops, float64(time.Since(start).Microseconds())/1000)
	if logs.Enabled(autodiff.PartitionTopic) {
		for _, line := range strings.Split(strings.TrimSuffix(report.String(), "\n"), "\n") {
			logs.Printf(autodiff.PartitionTopic, "%s", line)
		}
	}
	step := &trainStep{results: len(funcs.Type(gr.fn).Results), report: report}
	// With a backend that allows it (concurrentCompiler), the two passes
	// are compiled at once: the backward pass's passes and code
	// generation (the larger) overlap the forward pass's, a GPU backend's
	// load of one overlaps the other's host work, and the call returns
	// once the forward pass compiled, with the backward pass's compile
	// pending (gradCore.run runs the forward pass meanwhile). Their phases
	// add up in the session's times (which then may exceed the wall
	// time). Other backends compile them one after the other, forward
	// first.
	_, concurrent := g.c.backend.b.(concurrentCompiler)
	var graphs [2]*Graph
	var times [2]CompileTimes
	for i, fn := range []*ir.Operation{fwd, bwd} {
		m := builtin.NewModule(ir.UnknownLoc{})
		fn.Remove()
		builtin.ModuleBody(m).Append(fn)
		graphs[i] = &Graph{Context: ctx, Module: m, Func: ir.SymbolName(fn), Mode: g.opts.Mode, Options: g.opts.BackendOptions, times: &times[i]}
	}
	fail := func(err error) error { return fmt.Errorf("frontend: Grad: backend %s: %w", g.c.backend.name, err) }
	if !concurrent {
		var errs [2]error
		step.fwd, errs[0] = g.c.backend.b.Compile(graphs[0])
		step.bwd, errs[1] = g.c.backend.b.Compile(graphs[1])
		s.times.merge(times[0])
		s.times.merge(times[1])
		if err := cmp.Or(errs[0], errs[1]); err != nil {
			return nil, fail(err)
		}
		return step, nil
	}
	pc := &pendingCompile{done: make(chan struct{})}
	graphs[1].times = &pc.times
	bwdExe := &step.bwd // written by the compile, read once done is closed
	go func() {
		defer close(pc.done)
		// A backend's panic is a bug: it goes on in the caller's
		// goroutine (awaitBackward), as it would without the
		// concurrency.
		defer func() { pc.panic = recover() }()
		*bwdExe, pc.err = g.c.backend.b.Compile(graphs[1])
	}()
	fwdPanic := func() (p any) {
		defer func() { p = recover() }()
		step.fwd, err = g.c.backend.b.Compile(graphs[0])
		return nil
	}()
	s.times.merge(times[0])
	if fwdPanic != nil || err != nil {
		// The backward pass's compile ends first: its panic or error
		// comes after the forward pass's, as in the order they compile.
		<-pc.done
		s.times.merge(pc.times)
		if fwdPanic != nil {
			panic(fwdPanic)
		}
		if pc.panic != nil {
			panic(pc.panic)
		}
		return nil, fail(err)
	}
	step.pending = pc
	return step, nil
}
