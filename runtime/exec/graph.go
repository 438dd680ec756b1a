package exec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
)

// The log topics of CUDA graph decisions: a plan that cannot be captured
// is logged under both (STRATA_LOGS=cudagraphs or perf_hints).
const (
	TopicCUDAGraphs = "cudagraphs"
	TopicPerfHints  = "perf_hints"
)

// CaptureError says why a plan was not captured into a CUDA graph; the
// plan then runs launch by launch.
type CaptureError struct {
	Func   string // the host function whose plan was not captured
	Reason string
	Err    error // the driver's error, if one caused it
}

// Error implements error.
func (e *CaptureError) Error() string {
	s := fmt.Sprintf("@%s not captured into a CUDA graph: %s", e.Func, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the driver's error, if one caused the failure.
func (e *CaptureError) Unwrap() error { return e.Err }

// GraphInfo describes a captured plan.
type GraphInfo struct {
	// Kernels is the number of kernel launches in the graph.
	Kernels int
	// PoolBytes is the static pool: the plan's own allocations, which the
	// graph reuses on every replay and which live as long as the graph.
	PoolBytes uint64
}

// String prints the info as irc does.
func (g GraphInfo) String() string {
	return fmt.Sprintf("CUDA graph of %d kernels, static pool %.2f MiB", g.Kernels, float64(g.PoolBytes)/(1<<20))
}

// captureSafe lists the host ops a capture can record: they compute on
// host scalars and shapes, or queue device work. An op reading device
// memory on the host between launches would need the stream to finish,
// which a capture cannot do; none of the executor's ops does today, and a
// new host op must be added here consciously.
var captureSafe = func() map[string]bool {
	m := map[string]bool{}
	for name := range hostOps {
		m[name] = true
	}
	return m
}()

// captureBlocker returns why b's plan cannot be captured, or "".
func (b *Bound) captureBlocker() string {
	if len(b.plan.launches) == 0 {
		return "the plan launches no kernel"
	}
	for _, op := range b.plan.fn.Region(0).Front().Ops() {
		if !captureSafe[op.Name()] && !isArithHostOp(op.Name()) {
			return fmt.Sprintf("'%s' at %v needs the host between launches", op.Name(), op.Loc())
		}
	}
	return b.rt.dev.graphBlocker()
}

// isArithHostOp reports whether name is one of arith's scalar ops the
// planner evaluates on the host (always capture-safe).
func isArithHostOp(name string) bool { return strings.HasPrefix(name, "arith.") }

// staticPool holds the memory a captured plan allocates: taken from the
// caching allocator during capture and never returned to it while the
// graph lives, since every replay writes the same addresses. Blocks the
// plan deallocates are reused by its later allocations of the same size,
// which is safe because the launches are ordered on one stream. The
// results of the last replay that wrote the pool are lent out of it
// (lent, store.reclaim).
type staticPool struct {
	blocks []DevicePtr
	spare  map[uint64][]DevicePtr // bytes → blocks deallocated during capture
	bytes  uint64
	// seq is every block alloc handed out, in order: a capture of the
	// same plan through replaying (a pool over seq) puts each value where
	// this capture did.
	seq  []poolBlock
	lent []*store
}

// poolBlock is a block of a pool.
type poolBlock struct {
	ptr   DevicePtr
	bytes uint64
}

// replaying hands out the blocks of a pool's seq in order: the plan that
// made seq, captured again, allocates the same sizes in the same order.
type replaying struct {
	seq  []poolBlock
	next int
}

// poolAlloc is what serves a capture's allocations.
type poolAlloc interface {
	alloc(a *cuda.Allocator, n uint64) (*allocation, error)
	free(m *allocation)
}

func (p *staticPool) alloc(a *cuda.Allocator, n uint64) (*allocation, error) {
	if ptrs := p.spare[n]; len(ptrs) > 0 {
		ptr := ptrs[len(ptrs)-1]
		p.spare[n] = ptrs[:len(ptrs)-1]
		p.seq = append(p.seq, poolBlock{ptr, n})
		return &allocation{ptr: ptr, bytes: n, owned: true}, nil
	}
	ptr, err := a.Alloc(n)
	if err != nil {
		return nil, err
	}
	p.blocks = append(p.blocks, ptr)
	p.bytes += n
	p.seq = append(p.seq, poolBlock{ptr, n})
	return &allocation{ptr: ptr, bytes: n, owned: true}, nil
}

func (p *staticPool) free(m *allocation) {
	if p.spare == nil {
		p.spare = map[uint64][]DevicePtr{}
	}
	p.spare[m.bytes] = append(p.spare[m.bytes], m.ptr)
}

func (p *replaying) alloc(_ *cuda.Allocator, n uint64) (*allocation, error) {
	if p.next >= len(p.seq) || p.seq[p.next].bytes != n {
		return nil, fmt.Errorf("allocation %d of %d bytes departs from the first capture's", p.next, n)
	}
	b := p.seq[p.next]
	p.next++
	return &allocation{ptr: b.ptr, bytes: n, owned: true}, nil
}

func (p *replaying) free(*allocation) {}

// holds reports whether m is one of the pool's blocks.
func (p *staticPool) holds(m *allocation) bool {
	return m.owned && slices.Contains(p.blocks, m.ptr)
}

// reclaim ends the loans of the last replay's results (store.reclaim),
// before a replay or the pool's release overwrites them.
func (p *staticPool) reclaim() error {
	var errs []error
	for _, s := range p.lent {
		errs = append(errs, s.reclaim(p))
	}
	clear(p.lent)
	p.lent = p.lent[:0]
	return errors.Join(errs...)
}

// release returns the pool's blocks to the allocator, after moving the
// results still in use out.
func (p *staticPool) release(a *cuda.Allocator) error {
	errs := []error{p.reclaim()}
	for _, ptr := range p.blocks {
		errs = append(errs, a.Free(ptr))
	}
	p.blocks, p.spare, p.bytes, p.seq = nil, nil, 0, nil
	return errors.Join(errs...)
}

// capturedGraph is a plan recorded as a CUDA graph: the pool its replays
// write and the results they leave there.
type capturedGraph struct {
	exec    graphExec
	pool    *staticPool
	info    GraphInfo
	results []slotValue
}

// captureFailed names b's function in err, a *CaptureError of the
// device's.
func (b *Bound) captureFailed(err error) (GraphInfo, error) {
	var ce *CaptureError
	if errors.As(err, &ce) {
		ce.Func = b.plan.name
	}
	return GraphInfo{}, err
}

// stream returns the stream Launch queues work on: the default one (nil),
// for graph replays too.
func (b *Bound) stream() *cuda.Stream { return nil }

// Capture records the plan's launches into a CUDA graph, after one plain
// launch that loads every kernel and surfaces faults outside the graph.
// From then on Launch replays the graph with one driver call, and the
// results live in the graph's static pool: each Launch overwrites them.
// When the plan cannot be captured the error is a *CaptureError and the
// Bound keeps launching kernel by kernel.
func (b *Bound) Capture() (GraphInfo, error) {
	if b.graph != nil {
		return b.graph.info, nil
	}
	if reason := b.captureBlocker(); reason != "" {
		return GraphInfo{}, &CaptureError{Func: b.plan.name, Reason: reason}
	}
	b.settle() // a graph keeps the code it captures: the final tier's
	// The libraries' warm-ups (WarmLibraryCalls) end first: no library
	// work of theirs runs on other streams while the capture records.
	b.rt.libs.warm.Wait()
	if err := b.Launch(); err != nil {
		return GraphInfo{}, err
	}
	if err := b.rt.dev.Synchronize(); err != nil {
		return GraphInfo{}, fmt.Errorf("@%s: %w", b.plan.name, err)
	}
	if err := b.release(); err != nil {
		return GraphInfo{}, err
	}
	pool := &staticPool{}
	g, err := b.record(pool, pool, nil)
	if err != nil {
		_ = pool.release(b.rt.alloc)
		return GraphInfo{}, err
	}
	b.graph, b.cur = g, g
	return g.info, nil
}

// record captures the plan into a graph whose allocations alloc serves
// and whose replays write pool (alloc itself, or a replaying view of it),
// with the arguments b bound, those of fb read from the pool blocks
// it names instead.
func (b *Bound) record(pool *staticPool, alloc poolAlloc, fb []feedback) (*capturedGraph, error) {
	r := &b.state
	r.reset(b.plan.nslots)
	for i, s := range b.plan.args {
		r.slots[s] = b.args[i]
	}
	for _, f := range fb {
		r.slots[b.plan.args[f.arg]] = slotValue{b: f.buf}
	}
	st, err := b.rt.dev.beginCapture()
	if err != nil {
		_, err = b.captureFailed(err)
		return nil, err
	}
	r.stream, r.pool = st, alloc
	defer func() { r.stream, r.pool = nil, nil }()
	// An updated argument read in place was donated (pickGraph): the
	// graph writes it there; any other is copied in the graph first.
	runErr := b.copyUpdated(r, func(i int) bool {
		for _, f := range fb {
			if f.arg == i {
				return true
			}
		}
		return false
	})
	for _, step := range b.plan.steps {
		if runErr != nil {
			break
		}
		runErr = step(r)
	}
	ge, endErr := b.rt.dev.endCapture(st, runErr == nil)
	if runErr != nil {
		return nil, runErr
	}
	if endErr != nil {
		_, err = b.captureFailed(endErr)
		return nil, err
	}
	info := GraphInfo{Kernels: len(b.plan.launches), PoolBytes: pool.bytes}
	return &capturedGraph{exec: ge, pool: pool, info: info, results: slices.Clone(r.results)}, nil
}

// Update copies new arguments into the buffers Prepare bound, so that the
// next Launch (a graph replay included) runs on them. Memref arguments
// must have the bound shapes and element types and scalars the bound
// values: a captured graph has both built in. An argument that is the
// same Tensor or Array as last time is not copied again (both are
// immutable); an Array is copied device to device, or passed by reference
// by a Bound that aliases (a Runner without CUDA graphs).
func (b *Bound) Update(args []interp.Value) error { return b.update(args) }

// update is Update, with the graph to replay picked by where the Array
// arguments are (pickGraph): those a variant reads in place are not
// copied.
func (b *Bound) update(args []interp.Value) error { return b.updateDonated(args, nil) }

// updateDonated is update for a call donating the arguments donated
// flags (RunDeviceDonating): an argument the plan updates in place may
// be read in place, and written there, only when donated (mayWrite).
func (b *Bound) updateDonated(args []interp.Value, donated []bool) error {
	b.donated = donated
	if err := b.bindAll(args); err != nil {
		return err
	}
	b.markWritable()
	return nil
}

// bindAll binds args to b, reading Array arguments in place where a
// variant graph does (pickGraph).
func (b *Bound) bindAll(args []interp.Value) error {
	if len(args) != len(b.args) {
		return fmt.Errorf("@%s takes %d arguments, got %d", b.plan.name, len(b.args), len(args))
	}
	inPlace := b.pickGraph(args)
	for i, a := range args {
		bv := b.args[i]
		if bv.b == nil {
			if arr, ok := a.(*Array); ok {
				v, err := arr.Download()
				if err != nil {
					return fmt.Errorf("@%s argument %d: %w", b.plan.name, i, err)
				}
				a = v
			}
			v, err := scalarValue(a, b.plan.params[i])
			if err != nil {
				return fmt.Errorf("@%s argument %d: %w", b.plan.name, i, err)
			}
			if v != bv {
				return fmt.Errorf("@%s argument %d: the scalar changed; prepare the new value anew", b.plan.name, i)
			}
			continue
		}
		if a.ElemType() != bv.b.elem || !slices.Equal(a.Shape(), bv.b.shape) {
			return fmt.Errorf("@%s argument %d: %v×%v does not match the bound %v×%v", b.plan.name, i,
				a.Shape(), a.ElemType(), bv.b.shape, bv.b.elem)
		}
		if i < len(inPlace) && inPlace[i] {
			// Read where it lies; a result that is this argument shares
			// its memory (resultStore).
			b.arrays[i] = a.(*Array)
			continue
		}
		if err := b.bind(i, a); err != nil {
			return fmt.Errorf("@%s argument %d: %w", b.plan.name, i, err)
		}
	}
	return nil
}

// Runner runs one host function of a Program call after call, keeping a
// prepared Bound per argument signature (shapes and element types of the
// memrefs, values of the scalars): a later call with the same signature
// only copies its inputs in. With CUDA graphs on, each signature's plan
// is captured once and replayed; a plan that cannot be captured runs
// launch by launch, and the reason is logged under TopicCUDAGraphs and
// TopicPerfHints. A Runner is safe for concurrent use (calls serialise).
type Runner struct {
	prog   *Program
	rt     *Runtime
	fn     string
	graphs bool

	mu    sync.Mutex
	bound map[string]*runnerEntry
	last  *runnerEntry // the entry of the previous call, checked first
	// scalar[i] reports whether parameter i of fn is a scalar (not a
	// memref): its value is built into a plan, so it is part of the
	// signature; a rank-0 memref is a buffer like any other, updated in
	// place (a decoding step's position, whose every call takes the
	// steady-state path).
	scalar []bool
}

type runnerEntry struct {
	b    *Bound
	info GraphInfo
	err  error // why the plan is not a graph, if it is not
	// The signature: element type and shape of each argument, and the
	// value of the rank-0 Tensors passed as scalar parameters.
	elems   []ir.Type
	shapes  [][]int64
	scalars []*interp.Tensor
}

// setSig records args' signature in e; scalar is Runner.scalar.
func (e *runnerEntry) setSig(args []interp.Value, scalar []bool) {
	for i, a := range args {
		e.elems = append(e.elems, a.ElemType())
		e.shapes = append(e.shapes, slices.Clone(a.Shape()))
		t, _ := a.(*interp.Tensor)
		if t == nil || len(t.Shape()) != 0 || !scalar[i] {
			t = nil
		}
		e.scalars = append(e.scalars, t)
	}
}

// matches reports whether args have e's signature, without building the
// key string (the steady-state call's check); scalar is Runner.scalar.
func (e *runnerEntry) matches(args []interp.Value, scalar []bool) bool {
	if len(args) != len(e.elems) {
		return false
	}
	for i, a := range args {
		if a.ElemType() != e.elems[i] || !slices.Equal(a.Shape(), e.shapes[i]) {
			return false
		}
		if s := e.scalars[i]; s != nil {
			t, ok := a.(*interp.Tensor)
			if !ok || !slices.Equal(t.Bits(), s.Bits()) {
				return false
			}
		} else if t, ok := a.(*interp.Tensor); ok && len(t.Shape()) == 0 && scalar[i] {
			return false
		}
	}
	return true
}

// NewRunner returns a Runner of host function fn; graphs turns CUDA graph
// capture on (Mode.CUDAGraphs).
func NewRunner(p *Program, rt *Runtime, fn string, graphs bool) *Runner {
	return &Runner{prog: p, rt: rt, fn: fn, graphs: graphs, bound: map[string]*runnerEntry{}}
}

// signature keys the prepared Bounds of a Runner; scalar is
// Runner.scalar.
func signature(args []interp.Value, scalar []bool) string {
	var sb strings.Builder
	for i, a := range args {
		fmt.Fprintf(&sb, "%v%v", a.ElemType(), a.Shape())
		if len(a.Shape()) == 0 && scalar[i] {
			if t, ok := a.(*interp.Tensor); ok {
				fmt.Fprintf(&sb, "=%x", t.Bits())
			}
		}
		sb.WriteByte(';')
	}
	return sb.String()
}

// summary describes a signature for the logs: a model's passes take
// hundreds of arguments, whose shapes would fill screens.
func summary(args []interp.Value) string {
	var bytes int64
	for _, a := range args {
		size, _ := elemSize(a.ElemType())
		n, _ := elementCount(a.Shape())
		bytes += n * int64(size)
	}
	return fmt.Sprintf("%d arguments of %.2f MiB", len(args), float64(bytes)/(1<<20))
}

// entry returns the prepared Bound of args' signature, preparing (and
// capturing) it on first use and updating its inputs afterwards.
// donated are the call's donation flags (RunDeviceDonating; nil: none):
// an argument the plan updates in place is written where it lies only
// when donated.
func (r *Runner) entry(args []interp.Value, donated []bool) (*runnerEntry, error) {
	if r.scalar == nil {
		pl, err := r.prog.plan(r.fn)
		if err != nil {
			return nil, err
		}
		r.scalar = make([]bool, len(pl.params))
		for i, t := range pl.params {
			_, mem := t.(*ir.MemRefType)
			r.scalar[i] = !mem
		}
	}
	if len(args) != len(r.scalar) {
		return nil, fmt.Errorf("@%s takes %d arguments, got %d", r.fn, len(r.scalar), len(args))
	}
	if e := r.last; e != nil && e.matches(args, r.scalar) {
		return e, e.b.updateDonated(args, donated)
	}
	key := signature(args, r.scalar)
	if e, ok := r.bound[key]; ok {
		r.last = e
		return e, e.b.updateDonated(args, donated)
	}
	pl, err := r.prog.plan(r.fn)
	if err != nil {
		return nil, err
	}
	// Without graphs, Arrays are passed by reference: a call on device
	// data copies nothing. A graph has its argument addresses built in,
	// so Arrays are copied into them on the device.
	b, err := r.prog.prepare(r.rt, pl, args, !r.graphs, !r.graphs) // a graph would wait for the final tier
	if err != nil {
		return nil, err
	}
	b.donated = donated
	b.markWritable()
	e := &runnerEntry{b: b}
	e.setSig(args, r.scalar)
	if r.graphs {
		e.info, e.err = b.Capture()
		var ce *CaptureError
		if e.err != nil && !errors.As(e.err, &ce) {
			b.Free()
			return nil, e.err
		}
		if ce != nil {
			logs.Printf(TopicCUDAGraphs, "%v; running launch by launch", ce)
			logs.Printf(TopicPerfHints, "%v; running launch by launch", ce)
		} else {
			logs.Printf(TopicCUDAGraphs, "@%s on %s: %v", r.fn, summary(args), e.info)
		}
	}
	r.bound[key] = e
	r.last = e
	return e, nil
}

// Run runs the function on args and returns its results as Program.Run
// does.
func (r *Runner) Run(args []interp.Value) ([]interp.Value, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, err := r.entry(args, nil)
	if err != nil {
		return nil, err
	}
	if err := e.b.Launch(); err != nil {
		return nil, err
	}
	res, err := e.b.Results()
	if err != nil {
		return nil, err
	}
	if err := e.b.writeBack(args); err != nil {
		return nil, err
	}
	return res, nil
}

// RunDevice runs the function on args without waiting for it: memref
// arguments may be host values (copied in, once per distinct Tensor) or
// Arrays of r's Runtime (passed by reference, or copied device to device
// into a CUDA graph's buffers), and memref results are Arrays (scalar
// results are rank-0 Tensors). The results of a CUDA graph borrow its
// static pool until the next replay, which first moves those still in
// use to memory of their own (a copy each): Release what is not kept, or
// donate it (RunDeviceDonating). Nothing is copied to the host: reading a
// result (Array.Download) waits for the work queued before it. A fault of
// the kernels surfaces at that read or at a later call, as the driver
// reports it.
func (r *Runner) RunDevice(args []interp.Value) ([]interp.Value, error) {
	return r.RunDeviceDonating(args, nil)
}

// RunDeviceDonating is RunDevice that takes over the Array arguments i
// with donated[i] set (JAX's donated buffers): each is released once the
// call has read it (copied into a CUDA graph's buffer before the replay,
// or, passed by reference, after the launches are queued), so a donated
// result of the previous replay is not copied out of the graph's pool.
// The caller must not use a donated Array again; Array.Released tells
// whether the call took it (a call that fails before reading it does
// not). donated may be shorter than args; other arguments are ignored.
func (r *Runner) RunDeviceDonating(args []interp.Value, donated []bool) ([]interp.Value, error) {
	if len(donated) > len(args) {
		return nil, fmt.Errorf("@%s: %d donation flags for %d arguments", r.fn, len(donated), len(args))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, err := r.entry(args, donated)
	if err != nil {
		return nil, err
	}
	release := func() error {
		var errs []error
		for i, d := range donated {
			if a, ok := args[i].(*Array); ok && d {
				errs = append(errs, a.Release())
			}
		}
		return errors.Join(errs...)
	}
	// A copied Array was read when it was bound. One read by reference
	// is needed until the launches are queued, and a result that is the
	// argument shares its memory: it goes after the results are taken.
	if !e.b.alias {
		if err := release(); err != nil {
			return nil, err
		}
	}
	if err := e.b.Launch(); err != nil {
		return nil, err
	}
	res, err := e.b.takeResults()
	if err != nil {
		return nil, err
	}
	if e.b.alias {
		if err := release(); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Graph returns the CUDA graph of args' signature, or why there is none
// (a *CaptureError, or an error when graphs are off or the signature has
// not run yet).
func (r *Runner) Graph(args []interp.Value) (GraphInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.graphs {
		return GraphInfo{}, errors.New("CUDA graphs are off")
	}
	var e *runnerEntry
	if len(args) == len(r.scalar) {
		e = r.bound[signature(args, r.scalar)]
	}
	if e == nil {
		return GraphInfo{}, fmt.Errorf("@%s has not run on these shapes", r.fn)
	}
	return e.info, e.err
}

// Time times one call of the prepared signature of args (see Bound.Time);
// a graph replay when the signature was captured.
func (r *Runner) Time(args []interp.Value, warmup, iters int) (float64, error) {
	return r.timed(args, func(b *Bound) (float64, error) { return b.Time(warmup, iters) })
}

// Estimate is Bound.Estimate for the prepared signature of args; graph
// replays when the signature was captured.
func (r *Runner) Estimate(args []interp.Value, n int) (float64, error) {
	return r.timed(args, func(b *Bound) (float64, error) { return b.Estimate(n) })
}

// WallTime times back-to-back calls of the prepared signature of args
// with the host clock (see Bound.WallTime).
func (r *Runner) WallTime(args []interp.Value, iters int) (float64, error) {
	return r.timed(args, func(b *Bound) (float64, error) { return b.WallTime(iters) })
}

// timed runs a timing on the Bound prepared for args' signature.
func (r *Runner) timed(args []interp.Value, timing func(*Bound) (float64, error)) (float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, err := r.entry(args, nil)
	if err != nil {
		return 0, err
	}
	return timing(e.b)
}

// Close frees every prepared Bound and graph.
func (r *Runner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for k, e := range r.bound {
		errs = append(errs, e.b.Free())
		delete(r.bound, k)
	}
	r.last = nil
	return errors.Join(errs...)
}
