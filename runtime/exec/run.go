package exec

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/sym"
)

// device is what a Runtime drives: the CUDA device in production
// (cudaDevice), a fake in the unit tests.
type device interface {
	cuda.Backend
	CopyHtoD(dst DevicePtr, src []byte) error
	CopyDtoH(dst []byte, src DevicePtr) error
	Synchronize() error
	// load compiles and loads a PTX text; link asks for the driver's
	// linker, whose compiles run concurrently, where the driver has it.
	load(ptx string, jit cuda.JITOptions, link bool) (module, error)
	// loadImage loads a cubin (no compile).
	loadImage(cubin []byte) (module, error)
	// canLink reports whether load can use the linker.
	canLink() bool
	// cached reports whether jit.Cache holds the linker's cubin of ptx
	// compiled with jit, so that a linked load needs no compile.
	cached(ptx string, jit cuda.JITOptions) bool
	// launch queues a kernel on stream (nil: the default stream).
	launch(k kernel, grid, block [3]uint32, sharedBytes uint32, stream *cuda.Stream, args []any) error
	// graphBlocker returns why the device cannot capture CUDA graphs, or
	// "" when it can.
	graphBlocker() string
	// beginCapture returns a new stream whose queued work is recorded
	// into a graph instead of run. Its error is a *CaptureError.
	beginCapture() (*cuda.Stream, error)
	// endCapture ends st's capture and returns the recorded graph,
	// instantiated; it owns st from then on. With ok false (the
	// recording failed) it only discards the capture and st. Its error
	// is a *CaptureError.
	endCapture(st *cuda.Stream, ok bool) (graphExec, error)
}

// graphExec is a captured graph the device replays.
type graphExec interface {
	// launch replays the graph on the default stream.
	launch() error
	// destroy frees the graph and its capture stream.
	destroy() error
}

// module is a loaded PTX module.
type module interface {
	function(name string) (kernel, error)
	unload() error
}

// kernel is a function of a loaded module.
type kernel interface{ Name() string }

// cudaDevice adapts *cuda.Device to device.
type cudaDevice struct{ *cuda.Device }

type cudaModule struct{ *cuda.Module }

func (d cudaDevice) load(ptx string, jit cuda.JITOptions, link bool) (module, error) {
	load := d.LoadModuleJIT
	if link && d.CanLink() {
		load = d.LoadModuleLinked
	}
	m, err := load(ptx, jit)
	if err != nil {
		return nil, err
	}
	return cudaModule{m}, nil
}

func (d cudaDevice) canLink() bool { return d.CanLink() }

func (d cudaDevice) loadImage(cubin []byte) (module, error) {
	m, err := d.LoadModuleJIT(string(cubin), cuda.JITOptions{}) // an ELF image: no JIT
	if err != nil {
		return nil, err
	}
	return cudaModule{m}, nil
}

func (d cudaDevice) cached(ptx string, jit cuda.JITOptions) bool {
	return jit.Cache != nil && jit.Cache.Has(d.Device, ptx, jit)
}

func (d cudaDevice) launch(k kernel, grid, block [3]uint32, shared uint32, stream *cuda.Stream, args []any) error {
	return d.Launch(k.(*cuda.Function), grid, block, shared, stream, args...)
}

func (d cudaDevice) graphBlocker() string {
	if !d.SupportsGraphs() {
		return cuda.ErrNoGraphs.Error()
	}
	return ""
}

func (d cudaDevice) beginCapture() (*cuda.Stream, error) {
	st, err := d.NewNonBlockingStream()
	if err != nil {
		return nil, &CaptureError{Reason: "creating the capture stream", Err: err}
	}
	if err := st.BeginCapture(); err != nil {
		_ = st.Destroy()
		return nil, &CaptureError{Reason: "the driver refused to capture", Err: err}
	}
	return st, nil
}

func (d cudaDevice) endCapture(st *cuda.Stream, ok bool) (graphExec, error) {
	g, err := st.EndCapture()
	if err != nil || !ok {
		if g != nil {
			_ = g.Destroy()
		}
		_ = st.Destroy()
		if err != nil {
			return nil, &CaptureError{Reason: "the capture was invalidated", Err: err}
		}
		return nil, nil
	}
	ge, err := g.Instantiate()
	_ = g.Destroy()
	if err != nil {
		_ = st.Destroy()
		return nil, &CaptureError{Reason: "instantiating the graph", Err: err}
	}
	return cudaGraph{ge, st}, nil
}

// cudaGraph is a CUDA graph and the stream it was captured on.
type cudaGraph struct {
	exec   *cuda.GraphExec
	stream *cuda.Stream
}

// launch replays the graph on the default stream, where plain launches,
// device copies and downloads go too, so a chain of calls is one stream
// without cross-stream dependencies (the capture stream cannot be it:
// capturing needs a non-blocking stream).
func (g cudaGraph) launch() error { return g.exec.Launch(nil) }

func (g cudaGraph) destroy() error { return errors.Join(g.exec.Destroy(), g.stream.Destroy()) }

func (m cudaModule) function(name string) (kernel, error) { return m.Function(name) }
func (m cudaModule) unload() error                        { return m.Unload() }

// ErrNoGPU wraps the reason no GPU can run programs (no driver, no device).
var ErrNoGPU = errors.New("needs an NVIDIA GPU")

// Runtime runs Programs on one GPU: it holds the device, a caching
// allocator for plan buffers and the PTX modules loaded so far (one per
// distinct PTX text, shared by every Program). It is safe for concurrent
// use.
type Runtime struct {
	dev   device
	cuda  *cuda.Device
	alloc *cuda.Allocator
	owned bool

	mu      sync.Mutex
	modules map[[32]byte]module // by the SHA-256 of the PTX text
	libs    libraries           // cuBLASLt, for gpu.library_matmul (library.go)
	comm    Communicator        // runs loop.collective (collective.go); nil: a world of one rank
	// commStream and collEvents order the collectives' stream with the
	// plan's (collective.go).
	commStream *cuda.Stream
	collEvents map[*ir.Operation]*collEvents
	// policy says how PTX is handed to the driver (load.go); policyErr is
	// a bad LoadPolicyEnv, reported by the first load.
	policy    LoadPolicy
	policyErr error
	// linkCache keeps the cubins of linked loads between processes
	// (cuda.DefaultLinkCache; nil: none).
	linkCache *cuda.LinkCache
	// loading holds, under mu, the mark of each text a batch of loads is
	// compiling, ended when that batch has stored its module (or failed):
	// another batch that needs the text waits for it rather than
	// compiling it again.
	loading map[[32]byte]*loadMark
	// jitSlots bounds the compiles in flight under a policy of one load
	// per CPU (LoadPolicy.Parallel 0): one per CPU in all, the longest
	// waiting text first.
	jitSlots *jitSlots

	// work is the stream of asynchronous uploads (array.go): a blocking
	// stream, so that it and the legacy default stream of launches, graph
	// replays and device copies are ordered as one stream.
	workOnce  sync.Once
	work      *cuda.Stream
	workOwned bool // work is a stream of its own, destroyed by Close
	workErr   error
	// stage queues small uploads on work from pinned memory (stage.go);
	// nil when its buffer could not be had (uploads are then copied
	// from the caller's memory).
	stageOnce sync.Once
	stage     *stager
	stageDev  *cudaStage
	// xfer counts copies between host and device (Transfers).
	xfer transferCounters
	// sinceGC is the device memory allocate handed out since it last
	// started a collection less what came back without the collector
	// (gcpace.go; it may be negative), collecting is set while that
	// collection runs, and gcStarted counts them; gcEveryBytes, when not
	// zero, replaces the package's bound.
	sinceGC      atomic.Int64
	collecting   atomic.Bool
	gcStarted    atomic.Int64
	gcEveryBytes uint64
	// handedOut and credited total the bytes allocate handed out and
	// freed credited (MemoryCounters).
	handedOut, credited atomic.Uint64
	// prof is the running profile, or nil (profile.go).
	prof atomic.Pointer[profiler]
}

// Open opens GPU ordinal and returns a Runtime that closes the device with
// Close. Without a driver or a device the error wraps ErrNoGPU and says
// why.
func Open(ordinal int) (*Runtime, error) {
	dev, err := cuda.Open(ordinal)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoGPU, err)
	}
	rt := NewRuntime(dev)
	rt.owned = true
	return rt, nil
}

// NewRuntime returns a Runtime on an open device; Close leaves the device
// open.
func NewRuntime(dev *cuda.Device) *Runtime {
	rt := newRuntime(cudaDevice{dev})
	rt.cuda = dev
	return rt
}

func newRuntime(d device) *Runtime {
	rt := &Runtime{dev: d, alloc: cuda.NewAllocator(d), modules: map[[32]byte]module{}, loading: map[[32]byte]*loadMark{},
		jitSlots: newJITSlots(runtime.NumCPU())}
	rt.policy, rt.policyErr = policyFromEnv()
	rt.linkCache = cuda.DefaultLinkCache()
	return rt
}

// Device returns the CUDA device (nil for a Runtime not on CUDA).
func (rt *Runtime) Device() *cuda.Device { return rt.cuda }

// Allocator returns the caching allocator of plan buffers.
func (rt *Runtime) Allocator() *cuda.Allocator { return rt.alloc }

// Close unloads the modules, returns the allocator's cached memory and,
// for a Runtime from Open, closes the device.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var errs []error
	for k, m := range rt.modules {
		errs = append(errs, m.unload())
		delete(rt.modules, k)
	}
	errs = append(errs, rt.closeLibraries(), rt.closeCollectivesLocked(), rt.alloc.EmptyCache())
	if rt.work != nil {
		errs = append(errs, rt.work.Synchronize())
		if rt.stageDev != nil {
			errs = append(errs, rt.stageDev.close())
			rt.stage, rt.stageDev = nil, nil
		}
		if rt.workOwned {
			errs = append(errs, rt.work.Destroy())
		}
		rt.work = nil
	}
	if rt.owned && rt.cuda != nil {
		errs = append(errs, rt.cuda.Close())
	}
	return errors.Join(errs...)
}

// ptxSymbol is the PTX name of a kernel: both PTX backends replace every
// character PTX identifiers do not allow with "_$_", as llc does.
func ptxSymbol(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			out = append(out, c)
		} else {
			out = append(out, "_$_"...)
		}
	}
	return string(out)
}

// Run runs host function fn on args: it uploads the arguments, runs the
// plan, waits for it and returns the results (an interp.Buffer per memref,
// a rank-0 interp.Tensor per scalar). Memref arguments may be Tensors or
// Buffers; like the interpreter, Run writes the final contents of device
// buffers back into the Buffers it was given.
func (p *Program) Run(rt *Runtime, fn string, args []interp.Value) ([]interp.Value, error) {
	b, err := p.Prepare(rt, fn, args)
	if err != nil {
		return nil, err
	}
	defer b.Free()
	if err := b.Launch(); err != nil {
		return nil, err
	}
	res, err := b.Results()
	if err != nil {
		return nil, err
	}
	if err := b.writeBack(args); err != nil {
		return nil, err
	}
	return res, nil
}

// Bound is a host function with its arguments on the device, ready to be
// launched any number of times. It is not safe for concurrent use.
type Bound struct {
	rt      *Runtime
	plan    *plan
	kernels []kernel // per launch of the plan
	args    []slotValue
	// own[i] is the buffer argument i was copied into (nil for scalars and
	// for Arrays passed by reference); src[i] is the immutable value last
	// copied there (an *interp.Tensor or *Array), so that passing the same
	// value again copies nothing.
	own []*allocation
	src []interp.Value
	// alias passes Array arguments by reference instead of copying them
	// into own buffers (a Runner without CUDA graphs); arrays[i] is the
	// Array argument i refers to.
	alias  bool
	arrays []*Array
	// resTypes are the function's result types (resultTypes).
	resTypes []ir.Type
	// donated are the donation flags of the call being bound
	// (Runner.RunDeviceDonating; nil for other calls), and writable[i]
	// reports whether the plan may write argument i in place when it
	// updates it (plan.updates): an Array the call was donated, that no
	// other Array shares, passed by reference or read in place by a
	// variant. Every other updated argument is copied first (copyUpdated).
	donated  []bool
	writable []bool

	state   runState
	results []slotValue
	// graph is the CUDA graph Capture recorded, with the arguments in
	// the Bound's buffers; cur is the one Launch replays: graph, or one
	// of the variants, which read Arrays lent by graphs' pools where they
	// lie (twin.go).
	graph, cur *capturedGraph
	variants   *variantGraphs
	// held are the plan allocations the last results keep alive.
	held []*allocation
}

// Load loads the PTX modules of the kernels host function fn launches
// (each distinct text once per Runtime), so that a caller can time module
// loading apart from uploads; Prepare loads them too when needed.
func (p *Program) Load(rt *Runtime, fn string) error {
	pl, err := p.plan(fn)
	if err != nil {
		return err
	}
	_, err = p.kernels(rt, pl, true)
	return err
}

// LoadFinal is Load without tiers (LoadPolicy.Tier): each kernel not
// loaded yet is compiled at the final JIT level only, for a caller that
// captures CUDA graphs or times the kernels right away and would only
// wait for that level.
func (p *Program) LoadFinal(rt *Runtime, fn string) error {
	pl, err := p.plan(fn)
	if err != nil {
		return err
	}
	_, err = p.kernels(rt, pl, false)
	return err
}

// Prepare checks args against host function fn and its guards, loads the
// kernels it launches and uploads the arguments.
func (p *Program) Prepare(rt *Runtime, fn string, args []interp.Value) (*Bound, error) {
	pl, err := p.plan(fn)
	if err != nil {
		return nil, err
	}
	return p.prepare(rt, pl, args, false, true)
}

// prepare binds args to pl; alias passes Array arguments by reference;
// tiers lets the kernels load in tiers (LoadPolicy.Tier).
func (p *Program) prepare(rt *Runtime, pl *plan, args []interp.Value, alias, tiers bool) (*Bound, error) {
	if len(args) != len(pl.params) {
		return nil, fmt.Errorf("@%s takes %d arguments, got %d", pl.name, len(pl.params), len(args))
	}
	if err := pl.checkGuards(args); err != nil {
		return nil, err
	}
	b := &Bound{rt: rt, plan: pl, state: runState{rt: rt}, alias: alias}
	b.state.bound = b
	var err error
	if b.kernels, err = p.kernels(rt, pl, tiers); err != nil {
		return nil, err
	}
	n := len(args)
	b.args, b.own, b.src, b.arrays = make([]slotValue, n), make([]*allocation, n), make([]interp.Value, n), make([]*Array, n)
	b.writable = make([]bool, n)
	for i, a := range args {
		if err := b.bind(i, a); err != nil {
			b.Free()
			return nil, fmt.Errorf("@%s argument %d: %w", pl.name, i, err)
		}
	}
	return b, nil
}

// bind sets argument i to a: a scalar is read; a memref is passed by
// reference (an Array, when the Bound aliases) or copied into the
// argument's own buffer, allocated on first use. A value copied there
// last time is not copied again: Tensors and Arrays are immutable
// (Buffers are not, and are copied every time), and the plans of graph
// functions never write their arguments (a hand-written function that
// does writes into Buffers, as the interpreter's aliasing has it).
func (b *Bound) bind(i int, a interp.Value) error {
	t := b.plan.params[i]
	mt, ok := t.(*ir.MemRefType)
	if !ok {
		if arr, isArr := a.(*Array); isArr {
			// A scalar parameter needs its value on the host.
			v, err := arr.Download()
			if err != nil {
				return err
			}
			a = v
		}
		v, err := scalarValue(a, t)
		if err != nil {
			return err
		}
		b.args[i] = v
		return nil
	}
	if arr, isArr := a.(*Array); isArr {
		if err := arr.check(b.rt, mt); err != nil {
			return err
		}
		if b.alias {
			// Passed by reference: a result borrowing a CUDA graph's
			// pool gets memory of its own first, so that no replay of
			// that graph can overwrite what this plan reads.
			if err := arr.st.claim(); err != nil {
				return err
			}
			b.arrays[i] = arr
			b.args[i] = slotValue{b: &devBuffer{mem: arr.st.memory(), elem: arr.elem, shape: arr.shape}}
			return nil
		}
	}
	if b.src[i] == a && b.own[i] != nil && !isBuffer(a) {
		b.args[i] = slotValue{b: &devBuffer{mem: b.own[i], elem: a.ElemType(), shape: a.Shape()}}
		b.arrays[i] = nil
		return nil
	}
	var data []byte
	var n uint64
	arr, isArr := a.(*Array)
	if isArr {
		n = arr.bytes()
	} else {
		tv, err := tensorOf(a, mt)
		if err != nil {
			return err
		}
		if data, err = encodeView(tv); err != nil {
			return err
		}
		n = uint64(len(data))
	}
	m := b.own[i]
	if m != nil && m.bytes != n {
		m.freed = true
		err := b.rt.alloc.Free(m.ptr)
		b.own[i], b.src[i] = nil, nil
		if err != nil {
			return err
		}
		m = nil
	}
	if m == nil {
		p, err := b.rt.allocate(n)
		if err != nil {
			return err
		}
		m = &allocation{ptr: p, bytes: n}
		b.own[i] = m
	}
	b.src[i] = nil
	var err error
	if isArr {
		// Under the store's lock: a borrowed block stays put until the
		// copy is queued.
		arr.st.mu.Lock()
		err = b.rt.copyDtoD(m.ptr, arr.st.mem.ptr, n)
		arr.st.mu.Unlock()
	} else {
		err = b.rt.upload(m.ptr, data)
	}
	if err != nil {
		return err
	}
	b.src[i] = a
	b.arrays[i] = nil
	b.args[i] = slotValue{b: &devBuffer{mem: m, elem: a.ElemType(), shape: slices.Clone(a.Shape())}}
	return nil
}

func isBuffer(v interp.Value) bool { _, ok := v.(*interp.Buffer); return ok }

// checkGuards checks the arguments against the graph guards of the plan's
// function, if it has any.
func (pl *plan) checkGuards(args []interp.Value) error {
	if !pl.hasGuards {
		return nil
	}
	inputs := make([]sym.ShapeDtype, len(args))
	for i, v := range args {
		inputs[i] = sym.ShapeDtype{Shape: v.Shape(), Dtype: v.ElemType().String()}
	}
	if _, fail := pl.guards.Check(inputs); fail != nil {
		return fmt.Errorf("@%s: %v", pl.name, fail)
	}
	return nil
}

// Launch runs the plan once on the bound arguments, without waiting for
// the kernels. The results of the previous Launch are released.
func (b *Bound) Launch() (err error) {
	// While the libraries' warm-ups time candidates beside it, the run's
	// work is marked for them to wait for (cuda.Device.WaitQuiet): the
	// run does not wait for them, their timings are not made beside it.
	if dev := b.rt.cuda; dev != nil && b.rt.libs.warm.busy() {
		dev.BeginWork()
		defer func() {
			if endErr := dev.EndWork(b.state.stream); endErr != nil {
				err = errors.Join(err, fmt.Errorf("@%s: the end of the run's work for the warm-ups' timings: %w", b.plan.name, endErr))
			}
		}()
	}
	p := b.rt.prof.Load()
	if g := b.cur; g != nil {
		if err := g.pool.reclaim(); err != nil {
			return fmt.Errorf("@%s: %w", b.plan.name, err)
		}
		b.results = g.results
		if p != nil {
			return p.timed(b.rt.cuda, profileKey{b.plan, -1}, &b.state, g.exec.launch)
		}
		return g.exec.launch()
	}
	if err := b.release(); err != nil {
		return err
	}
	r := &b.state
	r.reset(b.plan.nslots)
	for i, s := range b.plan.args {
		r.slots[s] = b.args[i]
	}
	if err := b.copyUpdated(r, func(i int) bool { return b.writable[i] }); err != nil {
		r.abandon()
		return err
	}
	if p != nil {
		if err := b.runProfiled(p, r); err != nil {
			r.abandon()
			return err
		}
	} else {
		for _, step := range b.plan.steps {
			if err := step(r); err != nil {
				r.abandon()
				return err
			}
		}
	}
	// The slices are reused launch after launch: the launch path of a
	// small kernel allocates nothing it can avoid (tiny_chain's host
	// overhead).
	b.results = append(b.results[:0], r.results...)
	// Keep what the results use; return every other plan allocation the
	// plan did not deallocate itself, so a plan that leaks does not grow
	// the device's memory launch after launch. The results are marked
	// first: a training step's forward pass returns ~550 of ~500
	// allocations, too many to scan for each.
	for _, v := range b.results {
		if v.b != nil {
			v.b.mem.result = true
		}
	}
	var errs []error
	for _, m := range r.allocs {
		switch {
		case m.owned && m.result:
			m.held = true
			b.held = append(b.held, m)
		case !m.freed:
			errs = append(errs, r.free(m))
		}
	}
	for _, v := range b.results {
		if v.b != nil {
			v.b.mem.result = false
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, m := range b.held {
		if m.freed {
			return ir.Errorf(b.plan.fn.Loc(), "@%s returns a buffer it deallocated", b.plan.name)
		}
	}
	return nil
}

// markWritable sets b.writable from the call's donation flags, once its
// arguments are bound (Array arguments by reference, or read in place).
func (b *Bound) markWritable() {
	for i := range b.writable {
		b.writable[i] = b.arrays[i] != nil && b.mayWrite(i, b.arrays)
	}
}

// mayWrite reports whether the plan may write args[i], the Array
// argument i of the call being bound, in place: the plan updates it, the
// call was donated it, no other Array shares its memory, and no other
// argument the plan reads there is it.
func (b *Bound) mayWrite(i int, args []*Array) bool {
	arr := args[i]
	if b.plan.updates == nil || !b.plan.updates[i] || i >= len(b.donated) || !b.donated[i] || arr.st.refs.Load() != 1 {
		return false
	}
	for j, a := range args {
		if j != i && a != nil && a.st == arr.st {
			return false
		}
	}
	return true
}

// copyUpdated gives each argument the plan updates in place and may not
// write (writable false) a copy of its own, allocated by the run (so
// captured into a graph's pool) and copied on the run's stream: the
// caller's Array, or the Bound's buffer that a later call with the same
// argument reads again, keeps its value.
func (b *Bound) copyUpdated(r *runState, writable func(i int) bool) error {
	for i, up := range b.plan.updates {
		if !up || writable(i) {
			continue
		}
		s := b.plan.args[i]
		src := r.slots[s].b
		if src == nil {
			return fmt.Errorf("@%s argument %d: updated in place but not bound to a buffer", b.plan.name, i)
		}
		n, err := storageBytes(src.elem, src.shape)
		if err != nil {
			return fmt.Errorf("@%s argument %d: %w", b.plan.name, i, err)
		}
		m, err := r.alloc(n)
		if err != nil {
			return fmt.Errorf("@%s argument %d: a copy to update in place: %w", b.plan.name, i, err)
		}
		if err := b.rt.copyDtoDOn(m.ptr, src.mem.ptr, n, r.stream); err != nil {
			return fmt.Errorf("@%s argument %d: %w", b.plan.name, i, err)
		}
		r.slots[s] = slotValue{b: &devBuffer{mem: m, elem: src.elem, shape: src.shape}}
	}
	return nil
}

// release frees the allocations the last results held.
func (b *Bound) release() error {
	var errs []error
	for _, m := range b.held {
		m.held = false
		if !m.freed {
			m.freed = true
			b.rt.freed(m.bytes)
			errs = append(errs, b.rt.alloc.Free(m.ptr))
		}
	}
	b.held, b.results = b.held[:0], b.results[:0]
	return errors.Join(errs...)
}

// Wait waits for the last Launch to finish.
func (b *Bound) Wait() error {
	if err := b.rt.dev.Synchronize(); err != nil {
		return fmt.Errorf("@%s: %w", b.plan.name, err)
	}
	return nil
}

// Results waits for the last Launch and copies its results to the host.
func (b *Bound) Results() ([]interp.Value, error) {
	if err := b.Wait(); err != nil {
		return nil, err
	}
	out := make([]interp.Value, len(b.results))
	results := b.resultTypes()
	for i, v := range b.results {
		var err error
		if v.b == nil {
			out[i], err = scalarResult(v, results[i])
		} else {
			var t *interp.Tensor
			if t, err = b.download(v.b); err == nil {
				out[i] = interp.BufferFromTensor(t)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("@%s result %d: %w", b.plan.name, i, err)
		}
	}
	return out, nil
}

// download copies a device buffer to a tensor.
func (b *Bound) download(d *devBuffer) (*interp.Tensor, error) {
	return b.rt.downloadTensor(d.mem.ptr, d.elem, d.shape)
}

// writeBack copies the device contents of memref arguments given as
// Buffers back into them.
func (b *Bound) writeBack(args []interp.Value) error {
	for i, a := range args {
		buf, ok := a.(*interp.Buffer)
		if !ok || b.args[i].b == nil {
			continue
		}
		t, err := b.download(b.args[i].b)
		if err == nil {
			err = fill(buf, t)
		}
		if err != nil {
			return fmt.Errorf("@%s argument %d: %w", b.plan.name, i, err)
		}
	}
	return nil
}

// Free releases the device memory of the arguments and of the last
// results. The Bound cannot be launched afterwards.
func (b *Bound) Free() error {
	errs := []error{b.release()}
	if b.graph != nil {
		errs = append(errs, b.destroyGraphs())
		b.graph, b.cur, b.variants, b.results = nil, nil, nil, nil
	}
	for _, m := range b.own {
		if m != nil && !m.freed {
			m.freed = true
			errs = append(errs, b.rt.alloc.Free(m.ptr))
		}
	}
	b.own, b.src, b.arrays, b.args = nil, nil, nil, nil
	return errors.Join(errs...)
}

// runState is one run of a plan.
type runState struct {
	rt      *Runtime
	bound   *Bound
	slots   []slotValue
	allocs  []*allocation
	results []slotValue
	argv    []any
	// stream receives the launches (nil: the default stream); pool, when
	// set, serves the allocations of a run being captured.
	stream *cuda.Stream
	pool   poolAlloc
}

// reset prepares the state for a new run, reusing its memory.
func (r *runState) reset(n int) {
	if cap(r.slots) < n {
		r.slots = make([]slotValue, n)
	}
	r.slots = r.slots[:n]
	clear(r.slots)
	r.allocs, r.results = r.allocs[:0], r.results[:0]
}

// abandon frees what a failed run allocated.
func (r *runState) abandon() {
	for _, m := range r.allocs {
		if !m.freed {
			_ = r.free(m)
		}
	}
}

func (r *runState) alloc(n uint64) (*allocation, error) {
	if r.pool != nil {
		m, err := r.pool.alloc(r.rt.alloc, n)
		if err == nil {
			r.allocs = append(r.allocs, m)
		}
		return m, err
	}
	p, err := r.rt.allocate(n)
	if err != nil {
		return nil, err
	}
	m := &allocation{ptr: p, bytes: n, owned: true}
	r.allocs = append(r.allocs, m)
	return m, nil
}

func (r *runState) free(m *allocation) error {
	m.freed = true
	if r.pool != nil {
		r.pool.free(m)
		return nil
	}
	r.rt.freed(m.bytes)
	return r.rt.alloc.Free(m.ptr)
}

// maxGrid bounds grid and block sizes to what fits the driver's unsigned
// 32-bit sizes; the driver checks the device's own limits.
const maxGrid = 1<<32 - 1

// launch marshals and launches one gpu.launch_func.
func (r *runState) launch(l *launch) error {
	var grid, block [3]uint32
	for i := range 3 {
		g, bl := r.slots[l.grid[i]].i, r.slots[l.block[i]].i
		if g <= 0 || bl <= 0 || g > maxGrid || bl > maxGrid {
			return ir.Errorf(l.op.Loc(), "gpu.launch_func of @%s with grid (%d, %d, %d) and block (%d, %d, %d): sizes must be positive",
				l.kernel, r.slots[l.grid[0]].i, r.slots[l.grid[1]].i, r.slots[l.grid[2]].i,
				r.slots[l.block[0]].i, r.slots[l.block[1]].i, r.slots[l.block[2]].i)
		}
		grid[i], block[i] = uint32(g), uint32(bl)
	}
	var shared uint32
	if l.shared >= 0 {
		s := r.slots[l.shared].i
		if s < 0 || s > maxGrid {
			return ir.Errorf(l.op.Loc(), "gpu.launch_func of @%s with %d bytes of dynamic shared memory", l.kernel, s)
		}
		shared = uint32(s)
	}
	r.argv = r.argv[:0]
	for i, s := range l.args {
		v := r.slots[s]
		if l.kinds[i] == argPtr && v.b.mem.freed {
			return ir.Errorf(l.op.Loc(), "gpu.launch_func of @%s: argument %d was deallocated", l.kernel, i)
		}
		if m := l.maps[i]; m != nil {
			a, err := m.arg(v.b)
			if err != nil {
				return ir.Errorf(l.op.Loc(), "gpu.launch_func of @%s: argument %d: %v", l.kernel, i, err)
			}
			r.argv = append(r.argv, a)
			continue
		}
		r.argv = append(r.argv, marshal(l.kinds[i], l.types[i], v))
	}
	if err := r.rt.dev.launch(resolve(r.bound.kernels[l.index]), grid, block, shared, r.stream, r.argv); err != nil {
		return &LaunchError{Diag: ir.Errorf(l.op.Loc(), "launching @%s: %v", l.kernel, err), Err: err}
	}
	return nil
}

// LaunchError is a kernel launch the driver refused, located at its
// gpu.launch_func. Err is the driver's error: after asynchronous work
// (a kernel fault of an earlier call) it is that work's error, which the
// driver reports at the next call.
type LaunchError struct {
	Diag *ir.Diagnostic
	Err  error
}

// Error prints the located diagnostic.
func (e *LaunchError) Error() string { return e.Diag.Error() }

// Unwrap returns the driver's error.
func (e *LaunchError) Unwrap() error { return e.Err }
