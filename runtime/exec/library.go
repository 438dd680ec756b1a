package exec

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cublaslt"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/cudnn"
)

// libraries holds a Runtime's handles of vendor libraries, each made on
// first use: a plan without library ops never loads one.
type libraries struct {
	once sync.Once
	blas *cublaslt.Handle
	err  error
	// dnn is the cuDNN handle, made by dnnOnce (with dnnErr) on the first
	// library convolution.
	dnnOnce sync.Once
	dnn     *cudnn.Handle
	dnnErr  error
	warm    warmGroup // warm-ups in progress (WarmLibraries)
	// primed makes each library's start-up call (primeCalls) once, with
	// its error in primeErr.
	primed   [numLibraries]sync.Once
	primeErr [numLibraries]error
	// claimed are the calls a warm-up has made (true) or is due to make
	// (false) (claim, warmed).
	claimMu sync.Mutex
	claimed map[libCall]bool
	// pending counts the claimed calls not warmed yet: warming's answer
	// without the lock once none is (every call of a steady step).
	pending atomic.Int32
}

// claim reports whether c is not warmed yet, and marks it claimed: the
// warm-up that claims it makes it, then marks it warmed.
func (l *libraries) claim(c libCall) bool {
	l.claimMu.Lock()
	defer l.claimMu.Unlock()
	if _, ok := l.claimed[c]; ok {
		return false
	}
	if l.claimed == nil {
		l.claimed = map[libCall]bool{}
	}
	l.claimed[c] = false
	l.pending.Add(1)
	return true
}

// claimAll claims each of calls that is not claimed yet (claim) and
// returns those, in order.
func (l *libraries) claimAll(calls []libCall) []libCall {
	var out []libCall
	for _, c := range calls {
		if l.claim(c) {
			out = append(out, c)
		}
	}
	return out
}

// claimedAny reports whether any call of cuDNN (conv) or of cuBLASLt
// has been claimed for a warm-up.
func (l *libraries) claimedAny(conv bool) bool {
	l.claimMu.Lock()
	defer l.claimMu.Unlock()
	for c := range l.claimed {
		if c.isConv == conv {
			return true
		}
	}
	return false
}

// warmed marks claimed call c made (or failed) by its warm-up.
func (l *libraries) warmed(c libCall) {
	l.claimMu.Lock()
	defer l.claimMu.Unlock()
	if done, ok := l.claimed[c]; ok && !done {
		l.claimed[c] = true
		l.pending.Add(-1)
	}
}

// warming reports whether a warm-up has claimed c and not made it yet: a
// program's call of c then runs untimed (cudnn.Handle.Untimed) rather
// than wait for the warm-up's timing or time it again.
func (l *libraries) warming(c libCall) bool {
	if l.pending.Load() == 0 {
		return false
	}
	l.claimMu.Lock()
	defer l.claimMu.Unlock()
	done, ok := l.claimed[c]
	return ok && !done
}

// warmGroup counts the warm-ups in progress, as a sync.WaitGroup does,
// but may be waited on while new ones start: Capture, Settle and Close
// wait for the warm-ups while another graph's compile may start more (a
// WaitGroup panics when an Add from zero races a Wait that is returning).
// Wait returns once the count has dropped to zero.
type warmGroup struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero; nil while it is zero
}

// Add counts one more warm-up.
func (g *warmGroup) Add(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n += n
}

// Done counts a warm-up ended.
func (g *warmGroup) Done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 {
		close(g.idle)
		g.idle = nil
	}
}

// idleChan returns a channel closed once no warm-up is in progress
// (closed already when none is).
func (g *warmGroup) idleChan() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.idle == nil {
		return closedChan
	}
	return g.idle
}

// closedChan is a closed channel.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// WarmUpsIdle returns a channel closed once none of the libraries'
// warm-ups (WarmLibraries, WarmLibraryCalls) is in progress, whose timing
// runs choose algorithms by their times on the device: work queued
// meanwhile would slow those timings. Warm-ups started later are not
// waited for.
func (rt *Runtime) WarmUpsIdle() <-chan struct{} { return rt.libs.warm.idleChan() }

// busy reports whether a warm-up is in progress.
func (g *warmGroup) busy() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n > 0
}

// Wait waits until no warm-up is in progress.
func (g *warmGroup) Wait() {
	g.mu.Lock()
	idle := g.idle
	g.mu.Unlock()
	if idle != nil {
		<-idle
	}
}

// Library is a vendor library whose handle a Runtime can make ahead of
// its first use (WarmLibraries).
type Library uint8

const (
	// CuBLASLt runs gpu.library_matmul (and, under conv=cudnn, the
	// unstrided 1×1 convolutions).
	CuBLASLt Library = iota
	// CuDNN runs gpu.library_conv2d.
	CuDNN
	numLibraries
)

// primeCalls are the calls WarmLibraries makes, once per Runtime, as soon
// as a library's handle is made, on scratch memory: a library's first
// call pays the library's own start-up besides its shape's plan and
// kernels. On the H200 with a cold JIT cache (session 16, call 1) the
// first cuBLASLt product took 124–290 ms against 20–100 ms for each later
// shape, and cuDNN's first graph-API plan 95–264 ms against ≈ 20 ms; a
// program's warm-ups (WarmLibraryCalls) start only after its passes, and
// its first run waited for them. A library some of whose calls a program
// has claimed for their warm-ups by the time its handle is made gets no
// start-up call: those calls pay the start-up, sooner. Small bf16 shapes
// (the models' type): a product under cublaslt.TuneMinFlops (one
// algorithm, not timed) and an NHWC 3×3 convolution.
var primeCalls = [numLibraries]libCall{
	CuBLASLt: {mm: cublaslt.Matmul{AType: cublaslt.BF16, DType: cublaslt.BF16, M: 128, N: 128, K: 128, Batch: 1},
		bytes: [4]uint64{128 * 128 * 2, 128 * 128 * 2, 128 * 128 * 2}},
	CuDNN: {isConv: true, dir: gpu.ConvForward,
		conv: cudnn.Conv{Type: cudnn.BF16, Layout: cudnn.NHWC, N: 8, C: 16, H: 16, W: 16, O: 16, KH: 3, KW: 3,
			Pad: [2]int64{1, 1}, Stride: [2]int64{1, 1}, Dilate: [2]int64{1, 1}},
		bytes: [4]uint64{8 * 16 * 16 * 16 * 2, 16 * 16 * 3 * 3 * 2, 8 * 16 * 16 * 16 * 2}},
}

// WarmLibraries starts, in the background, what the first library call
// of a program would otherwise pay inside its first run, for each of libs:
// loading the library (cuBLASLt: about 55 ms for the half-gigabyte
// library on the H200 machine; cuDNN opens its sub-libraries too), making
// the Runtime's handle (cudnnCreate) and workspace, and, once per
// Runtime, the library's start-up call (primeCalls; none once a program's
// own calls of the library are claimed for their warm-ups). A caller whose
// programs run on the libraries (autotune.ModeConfig) calls it right
// after opening the Runtime, while the program's code loads, as the
// device itself is opened ahead of the first call. An absent library is
// not reported here: the first library op reports it, as without the
// warm-up. Close waits for a warm-up in progress.
func (rt *Runtime) WarmLibraries(libs ...Library) {
	for _, l := range libs {
		rt.libs.warm.Add(1)
		go func() {
			defer rt.libs.warm.Done()
			var err error
			switch l {
			case CuBLASLt:
				_, err = rt.cublasLt()
			case CuDNN:
				_, err = rt.cuDNN()
			default:
				return
			}
			if err == nil {
				rt.libs.primed[l].Do(func() {
					// A program's own calls of the library, claimed for
					// their warm-ups, pay its start-up themselves: the
					// start-up call would only hold the handle before them
					// (cnn_small_train's first process: cuDNN's took the
					// handle 200 ms before the backward's plans).
					if rt.libs.claimedAny(l == CuDNN) {
						logs.Printf(TopicCompile, "%s: no start-up call: the program's own calls are due", primeCalls[l].library())
						return
					}
					rt.libs.primeErr[l] = rt.prime(l)
				})
			}
		}()
	}
}

// prime makes lib's start-up call (primeCalls) on a stream of its own
// and logs its time under TopicCompile.
func (rt *Runtime) prime(lib Library) error {
	c := primeCalls[lib]
	start := time.Now()
	st, err := rt.cuda.NewNonBlockingStream()
	if err != nil {
		return err
	}
	err = errors.Join(rt.warmCall(c, st), st.Destroy())
	ms := float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		logs.Printf(TopicCompile, "%s: the start-up call (%v) failed after %.1f ms: %v", c.library(), c, ms, err)
		return err
	}
	logs.Printf(TopicCompile, "%s: start-up call (%v) made in %.1f ms", c.library(), c, ms)
	return nil
}

// LibrariesOf returns the libraries a program lowered with a configuration
// that runs matmuls on cuBLASLt (blasLt) or convolutions on cuDNN (dnn)
// calls, for WarmLibraries: cuDNN's configuration runs the unstrided 1×1
// convolutions on cuBLASLt too.
func LibrariesOf(blasLt, dnn bool) []Library {
	var libs []Library
	if blasLt || dnn {
		libs = append(libs, CuBLASLt)
	}
	if dnn {
		libs = append(libs, CuDNN)
	}
	return libs
}

// cublasLt returns the Runtime's cuBLASLt handle, loading the library and
// taking its workspace from the allocator on first use.
func (rt *Runtime) cublasLt() (*cublaslt.Handle, error) {
	rt.libs.once.Do(func() {
		if rt.cuda == nil {
			rt.libs.err = errors.New("cuBLASLt needs a CUDA device")
			return
		}
		start := time.Now()
		rt.libs.blas, rt.libs.err = cublaslt.New(rt.cuda, rt.alloc)
		logLibrary("cuBLASLt", start, rt.libs.err)
	})
	return rt.libs.blas, rt.libs.err
}

// cuDNN returns the Runtime's cuDNN handle, loading the library and
// taking its workspace from the allocator on first use.
func (rt *Runtime) cuDNN() (*cudnn.Handle, error) {
	rt.libs.dnnOnce.Do(func() {
		if rt.cuda == nil {
			rt.libs.dnnErr = errors.New("cuDNN needs a CUDA device")
			return
		}
		start := time.Now()
		rt.libs.dnn, rt.libs.dnnErr = cudnn.New(rt.cuda, rt.alloc)
		logLibrary("cuDNN", start, rt.libs.dnnErr)
	})
	return rt.libs.dnn, rt.libs.dnnErr
}

// TopicCompile is the frontend's log topic of compile phases, under which
// a Runtime logs what its libraries' start-up took (part of a first call).
const TopicCompile = "compile"

// logLibrary logs under TopicCompile how long lib's handle took to make
// since start (loading the library, creating the handle, its workspace).
func logLibrary(lib string, start time.Time, err error) {
	if err != nil {
		logs.Printf(TopicCompile, "%s: no handle after %.1f ms: %v", lib, float64(time.Since(start).Microseconds())/1000, err)
		return
	}
	logs.Printf(TopicCompile, "%s: handle made in %.1f ms (library load, handle, workspace)", lib, float64(time.Since(start).Microseconds())/1000)
}

// closeLibraries destroys the handles made so far, returning their
// workspaces to the allocator.
func (rt *Runtime) closeLibraries() error {
	rt.libs.warm.Wait()
	var errs []error
	if rt.libs.blas != nil {
		errs = append(errs, rt.libs.blas.Close())
	}
	if rt.libs.dnn != nil {
		errs = append(errs, rt.libs.dnn.Close())
	}
	rt.libs = libraries{}
	return errors.Join(errs...)
}

// libraryTypes are the element types gpu.library_matmul passes to cuBLASLt.
var libraryTypes = map[ir.Type]cublaslt.DataType{ir.BF16: cublaslt.BF16, ir.F16: cublaslt.F16, ir.F32: cublaslt.F32}

// libraryMatmul is gpu.library_matmul: cuBLASLt queues the product on the
// plan's stream, between the kernels around it (and into a CUDA graph
// when the plan is captured).
func (c *planner) libraryMatmul(op *ir.Operation) (stepFunc, error) {
	if (op.NumOperands() != 3 && op.NumOperands() != 4) || op.NumResults() != 0 {
		return nil, ir.Errorf(op.Loc(), "%s must have three or four operands (A, B, C, bias) and no results", gpu.LibraryMatmulOp)
	}
	var types [3]cublaslt.DataType
	for i, v := range op.Operands() {
		mt, err := globalMemRef(op, v.Type())
		if err != nil {
			return nil, err
		}
		t, ok := libraryTypes[mt.ElementType()]
		if !ok {
			return nil, ir.Errorf(op.Loc(), "%s of %s: cuBLASLt takes bf16, f16 and f32 matrices", gpu.LibraryMatmulOp, mt.ElementType())
		}
		if i < 3 {
			types[i] = t
		} else if t != types[0] || types[2] != types[0] {
			return nil, ir.Errorf(op.Loc(), "%s: the bias and C must have A's type", gpu.LibraryMatmulOp)
		}
	}
	hasBias := op.NumOperands() == 4
	in, err := c.uses(op)
	if err != nil {
		return nil, err
	}
	transA, transB := gpu.LibraryTransposes(op)
	if lc, ok := libCallOf(op); ok {
		c.p.libCalls = append(c.p.libCalls, lc)
	}
	return func(r *runState) error {
		a, b, d := r.slots[in[0]].b, r.slots[in[1]].b, r.slots[in[2]].b
		if a.mem.freed || b.mem.freed || d.mem.freed {
			return ir.Errorf(op.Loc(), "%s of a deallocated buffer", gpu.LibraryMatmulOp)
		}
		batch, m, n, k, err := gpu.MatmulDims(a.shape, b.shape, d.shape, transA, transB)
		if err != nil {
			return ir.Errorf(op.Loc(), "%s: %v", gpu.LibraryMatmulOp, err)
		}
		var bias *devBuffer
		if hasBias {
			bias = r.slots[in[3]].b
			switch {
			case bias.mem.freed:
				return ir.Errorf(op.Loc(), "%s of a deallocated buffer", gpu.LibraryMatmulOp)
			case len(bias.shape) != 1 || bias.shape[0] != n:
				return ir.Errorf(op.Loc(), "%s: the bias is %v, not [N] = [%d]", gpu.LibraryMatmulOp, bias.shape, n)
			}
		}
		count, err := elementCount(batch)
		if err != nil {
			return ir.Errorf(op.Loc(), "%s: %v", gpu.LibraryMatmulOp, err)
		}
		if count == 0 || m == 0 || n == 0 {
			return nil // an empty product writes nothing
		}
		h, err := r.rt.cublasLt()
		if err == nil {
			mm := cublaslt.Matmul{AType: types[0], DType: types[2], M: m, N: n, K: k, Batch: count, TransA: transA, TransB: transB,
				SharedA: gpu.SharedA(a.shape, b.shape), Bias: hasBias}
			if hasBias {
				err = h.RunBias(mm, a.mem.ptr, b.mem.ptr, d.mem.ptr, bias.mem.ptr, r.stream)
			} else {
				err = h.Run(mm, a.mem.ptr, b.mem.ptr, d.mem.ptr, r.stream)
			}
		}
		if err != nil {
			return ir.Errorf(op.Loc(), "%s: %v", gpu.LibraryMatmulOp, err)
		}
		return nil
	}, nil
}

// convTypes are the element types gpu.library_conv2d passes to cuDNN.
var convTypes = map[ir.Type]cudnn.DataType{ir.BF16: cudnn.BF16, ir.F16: cudnn.F16}

// libraryConv2D is gpu.library_conv2d: cuDNN queues the convolution (or
// its data or filter gradient) on the plan's stream, between the kernels around it (and into a CUDA graph
// when the plan is captured).
func (c *planner) libraryConv2D(op *ir.Operation) (stepFunc, error) {
	if op.NumOperands() != 3 || op.NumResults() != 0 {
		return nil, ir.Errorf(op.Loc(), "%s must have three operands and no results", gpu.LibraryConv2DOp)
	}
	geo, err := gpu.LibraryConvGeometry(op)
	if err != nil {
		return nil, ir.Errorf(op.Loc(), "%s: %v", gpu.LibraryConv2DOp, err)
	}
	var shapes [3][]int64
	var dt cudnn.DataType
	for i, v := range op.Operands() {
		mt, err := globalMemRef(op, v.Type())
		if err != nil {
			return nil, err
		}
		t, ok := convTypes[mt.ElementType()]
		if !ok || len(mt.Shape()) != 4 {
			return nil, ir.Errorf(op.Loc(), "%s of %s: cuDNN takes 4-D bf16 and f16 tensors", gpu.LibraryConv2DOp, mt)
		}
		shapes[i], dt = mt.Shape(), t
	}
	x, w := geo.ConvNCHW(shapes[0]), geo.ConvNCHW(shapes[1])
	layout := cudnn.NCHW
	if geo.ChannelsLast {
		layout = cudnn.NHWC
	}
	conv := cudnn.Conv{Type: dt, Layout: layout, N: x[0], C: x[1], H: x[2], W: x[3], O: w[0], KH: w[2], KW: w[3],
		Pad: geo.Padding, Stride: geo.Strides, Dilate: geo.Dilations}
	in, err := c.uses(op)
	if err != nil {
		return nil, err
	}
	lc, warmable := libCallOf(op)
	if warmable {
		c.p.libCalls = append(c.p.libCalls, lc)
	}
	dir := convDirections[geo.Direction]
	return func(r *runState) error {
		xb, wb, yb := r.slots[in[0]].b, r.slots[in[1]].b, r.slots[in[2]].b
		if xb.mem.freed || wb.mem.freed || yb.mem.freed {
			return ir.Errorf(op.Loc(), "%s of a deallocated buffer", gpu.LibraryConv2DOp)
		}
		h, err := r.rt.cuDNN()
		if err == nil && warmable && r.rt.libs.warming(lc) {
			// Its warm-up times the candidates in the background: this
			// call runs the heuristic's first and does not wait.
			err = h.Untimed(dir, conv, cudnn.Operands{X: xb.mem.ptr, W: wb.mem.ptr, Y: yb.mem.ptr}, r.stream)
		} else if err == nil {
			switch geo.Direction {
			case gpu.ConvBackwardData:
				err = h.BackwardData(conv, wb.mem.ptr, yb.mem.ptr, xb.mem.ptr, r.stream)
			case gpu.ConvBackwardFilter:
				err = h.BackwardFilter(conv, xb.mem.ptr, yb.mem.ptr, wb.mem.ptr, r.stream)
			default:
				err = h.Forward(conv, xb.mem.ptr, wb.mem.ptr, yb.mem.ptr, r.stream)
			}
		}
		if err != nil {
			return ir.Errorf(op.Loc(), "%s: %v", gpu.LibraryConv2DOp, err)
		}
		return nil
	}, nil
}

// convDirections are cuDNN's names of the convolution directions.
var convDirections = map[gpu.ConvDirection]cudnn.Direction{
	"":                     cudnn.DirForward,
	gpu.ConvForward:        cudnn.DirForward,
	gpu.ConvBackwardData:   cudnn.DirBackwardData,
	gpu.ConvBackwardFilter: cudnn.DirBackwardFilter,
}

// libCall is a library op of a plan whose operands have static shapes,
// which WarmLibraryCalls makes its first call of on scratch memory: a
// convolution in one direction (isConv: conv, dir) or a product (mm).
type libCall struct {
	isConv bool
	conv   cudnn.Conv
	dir    gpu.ConvDirection
	mm     cublaslt.Matmul
	bytes  [4]uint64 // of the op's operands (a product's bias fourth; 0 without one)
}

// libOperandBytes returns the sizes of op's three or four operands, which
// the planner checked are memrefs of a known element type.
func libOperandBytes(op *ir.Operation) [4]uint64 {
	var out [4]uint64
	for i, v := range op.Operands() {
		mt := v.Type().(*ir.MemRefType)
		size, _ := elemSize(mt.ElementType())
		n, _ := elementCount(mt.Shape())
		out[i] = uint64(n) * uint64(size)
	}
	return out
}

// libCallOf returns the library call op makes, for the warm-ups: a
// gpu.library_matmul or gpu.library_conv2d on memrefs of static shapes
// and of element types the library takes. It reports false for any other
// op, and for a product that computes nothing.
func libCallOf(op *ir.Operation) (libCall, bool) {
	var shapes [][]int64
	var elems []ir.Type
	for _, v := range op.Operands() {
		mt, ok := v.Type().(*ir.MemRefType)
		if !ok || !mt.Ranked() || slices.Contains(mt.Shape(), ir.Dynamic) {
			return libCall{}, false
		}
		shapes, elems = append(shapes, mt.Shape()), append(elems, mt.ElementType())
	}
	if op.NumResults() != 0 {
		return libCall{}, false
	}
	switch op.Name() {
	case gpu.LibraryMatmulOp:
		if len(shapes) != 3 && len(shapes) != 4 {
			return libCall{}, false
		}
		var types [3]cublaslt.DataType
		for i := range types {
			t, ok := libraryTypes[elems[i]]
			if !ok {
				return libCall{}, false
			}
			types[i] = t
		}
		transA, transB := gpu.LibraryTransposes(op)
		batch, m, n, k, err := gpu.MatmulDims(shapes[0], shapes[1], shapes[2], transA, transB)
		if err != nil {
			return libCall{}, false
		}
		count, err := elementCount(batch)
		if err != nil || count == 0 || m == 0 || n == 0 {
			return libCall{}, false
		}
		mm := cublaslt.Matmul{AType: types[0], DType: types[2], M: m, N: n, K: k, Batch: count, TransA: transA, TransB: transB,
			SharedA: gpu.SharedA(shapes[0], shapes[1]), Bias: len(shapes) == 4}
		return libCall{mm: mm, bytes: libOperandBytes(op)}, true
	case gpu.LibraryConv2DOp:
		if len(shapes) != 3 {
			return libCall{}, false
		}
		geo, err := gpu.LibraryConvGeometry(op)
		if err != nil {
			return libCall{}, false
		}
		dt, ok := convTypes[elems[0]]
		for i := range shapes {
			if t, known := convTypes[elems[i]]; !known || t != dt || len(shapes[i]) != 4 {
				ok = false
			}
		}
		if !ok {
			return libCall{}, false
		}
		x, w := geo.ConvNCHW(shapes[0]), geo.ConvNCHW(shapes[1])
		layout := cudnn.NCHW
		if geo.ChannelsLast {
			layout = cudnn.NHWC
		}
		conv := cudnn.Conv{Type: dt, Layout: layout, N: x[0], C: x[1], H: x[2], W: x[3], O: w[0], KH: w[2], KW: w[3],
			Pad: geo.Padding, Stride: geo.Strides, Dilate: geo.Dilations}
		return libCall{isConv: true, conv: conv, dir: geo.Direction, bytes: libOperandBytes(op)}, true
	}
	return libCall{}, false
}

// WarmLibraryCalls starts, in the background, the first call of each
// distinct library op host function fn makes, on scratch memory and a
// stream of its own: cuDNN's plan of each convolution and direction (its
// descriptors, the heuristic's candidates and the timing that picks one
// of them) and cuBLASLt's plan of each product, with the libraries' own
// first use of those kernels. A first run otherwise does all of it
// between its launches (cnn_small_train's backward pass: 2.2 s on a fresh
// H200 machine); called when the program's kernels start loading, it
// overlaps the driver's JIT instead. A plan's call of an op being warmed
// does not wait for the timing: a convolution runs cuDNN's heuristic
// choice (cudnn.Handle.Untimed), a product the heuristic's first
// algorithm, until the warm-up's Tune sets the fastest; the Tunes' timings
// wait for the plan's runs (cuda.Device.WaitQuiet) instead. Capture waits
// for every warm-up, and so does Close. Errors are not reported here: the
// plan's own call reports them.
func (p *Program) WarmLibraryCalls(rt *Runtime, fn string) {
	pl, err := p.plan(fn)
	if err != nil {
		return
	}
	rt.warmInBackground(pl.name, pl.libCalls)
}

// WarmLibraryCallsIn is WarmLibraryCalls for function fn of module as the
// IR is now, a lowering still under way: the frontend calls it once
// convert-loop-to-gpu has made the library ops (passes.Instrumentation's
// AfterPass), so that the warm-ups overlap the cleanups after it and the
// code generation too (resnet50_train's backward pass: ≈ 250 ms on the
// H200 host), rather than starting with the load. It only reads module,
// before it returns. A call warmed (or warming) already on rt is not
// warmed again, here or by WarmLibraryCalls.
func (rt *Runtime) WarmLibraryCallsIn(module *ir.Operation, fn string) {
	rt.warmInBackground(fn, libCallsIn(module, fn))
}

// libCallsIn returns the library calls (libCallOf) of function fn of
// module, in program order.
func libCallsIn(module *ir.Operation, fn string) []libCall {
	var calls []libCall
	body := module.Region(0).Front()
	if body == nil {
		return nil
	}
	for _, f := range body.Ops() {
		if f.Name() != funcs.OpFunc || ir.SymbolName(f) != fn {
			continue
		}
		f.Walk(func(o *ir.Operation) bool {
			if lc, ok := libCallOf(o); ok {
				calls = append(calls, lc)
			}
			return true
		})
	}
	return calls
}

// warmInBackground starts the warm-ups of calls (host function fn's):
// cuDNN's and cuBLASLt's at once, each library's one after the other (a
// handle serialises its calls anyway).
func (rt *Runtime) warmInBackground(fn string, calls []libCall) {
	if rt.cuda == nil || len(calls) == 0 {
		return
	}
	// Claimed at once, not as the warm-up reaches them: a run's call of
	// a claimed convolution runs untimed rather than time it itself.
	var convs, products []libCall
	for _, c := range rt.libs.claimAll(calls) {
		if c.isConv {
			convs = append(convs, c)
		} else {
			products = append(products, c)
		}
	}
	for _, calls := range [][]libCall{convs, products} {
		if len(calls) == 0 {
			continue
		}
		rt.libs.warm.Add(1)
		go func() {
			defer rt.libs.warm.Done()
			start := time.Now()
			n, err := rt.warmClaimed(fn, calls)
			ms := float64(time.Since(start).Microseconds()) / 1000
			if err != nil {
				logs.Printf(TopicCompile, "@%s: warming its library calls stopped after %.1f ms: %v", fn, ms, err)
				return
			}
			if n > 0 {
				logs.Printf(TopicCompile, "@%s: %d %s calls warmed in %.1f ms in the background", fn, n, calls[0].library(), ms)
			}
		}()
	}
}

// library names the library that makes c.
func (c libCall) library() string {
	if c.isConv {
		return "cuDNN"
	}
	return "cuBLASLt"
}

// String describes c for the logs.
func (c libCall) String() string {
	if c.isConv {
		dir := c.dir
		if dir == "" {
			dir = gpu.ConvForward
		}
		return fmt.Sprintf("cuDNN %s of %s", dir, c.conv)
	}
	m := c.mm
	return fmt.Sprintf("cuBLASLt %s product %dx%dx%d (batch %d, transposes %v %v, bias %v)", m.AType, m.M, m.N, m.K, m.Batch, m.TransA, m.TransB, m.Bias)
}

// slowWarmCall is how long a library call's first call takes before
// warmClaimed logs it by itself.
const slowWarmCall = 20 * time.Millisecond

// warmClaimed makes the first call of each of calls (of host function
// fn), which the caller claimed (libraries.claimAll), on scratch memory
// (zeroed) and a stream of its own, one after the other, and returns how
// many it made; a slow one is logged. It marks each call warmed when
// made, or when it is not made for an earlier error.
func (rt *Runtime) warmClaimed(fn string, calls []libCall) (n int, err error) {
	defer func() {
		for _, c := range calls[n:] {
			rt.libs.warmed(c)
		}
	}()
	st, err := rt.cuda.NewNonBlockingStream()
	if err != nil {
		return 0, err
	}
	rt.planConvs(fn, calls)
	for _, c := range calls {
		start := time.Now()
		err = rt.warmCall(c, st)
		rt.libs.warmed(c)
		if err != nil {
			break
		}
		if d := time.Since(start); d >= slowWarmCall {
			logs.Printf(TopicCompile, "@%s: the first call of %v took %.1f ms", fn, c, float64(d.Microseconds())/1000)
		}
		n++
	}
	return n, errors.Join(err, st.Destroy())
}

// planConvs makes cuDNN's plans of the convolutions among calls (of host
// function fn) before any is timed: a Tune's timing waits for the
// program's runs, and the runs need the plans (cnn_small_train's first
// process: the backward's first run made its 3-channel filter gradient's
// plan itself, 106 ms of heuristics, while the warm-ups waited to time
// another). A plan that fails is left to the call's warm-up to report.
func (rt *Runtime) planConvs(fn string, calls []libCall) {
	if !slices.ContainsFunc(calls, func(c libCall) bool { return c.isConv }) {
		return
	}
	h, err := rt.cuDNN()
	if err != nil {
		return
	}
	start, n := time.Now(), 0
	for _, c := range calls {
		if c.isConv && h.Plan(convDirections[c.dir], c.conv) == nil {
			n++
		}
	}
	if d := time.Since(start); d >= slowWarmCall {
		logs.Printf(TopicCompile, "@%s: %d cuDNN plans made in %.1f ms before their timings", fn, n, float64(d.Microseconds())/1000)
	}
}

// warmCall makes call c on zeroed scratch memory (fresh from the device:
// cuda.Allocator.AllocFresh) on stream st and waits for it, then frees
// the scratch.
func (rt *Runtime) warmCall(c libCall, st *cuda.Stream) error {
	var ptrs [4]DevicePtr
	var err error
	for i, n := range c.bytes {
		if i == 3 && !c.mm.Bias {
			break
		}
		n = (n + 3) &^ 3 // zeroed a word at a time
		// Fresh: a cached block may be one a program freed under its
		// queued work, which st's memset would overwrite.
		if ptrs[i], err = rt.alloc.AllocFresh(n); err != nil {
			break
		}
		if err = rt.cuda.MemsetD32(ptrs[i], 0, n/4, st); err != nil {
			break
		}
	}
	if err == nil {
		if c.isConv {
			var h *cudnn.Handle
			if h, err = rt.cuDNN(); err == nil {
				// The candidates are timed beside the program's calls,
				// which run untimed meanwhile (libraryConv2D).
				err = h.Tune(convDirections[c.dir], c.conv, cudnn.Operands{X: ptrs[0], W: ptrs[1], Y: ptrs[2]}, st)
			}
		} else {
			var h *cublaslt.Handle
			if h, err = rt.cublasLt(); err == nil {
				// The heuristic's first algorithm is not always its
				// fastest: the first few are timed on the scratch.
				err = h.Tune(c.mm, ptrs[0], ptrs[1], ptrs[2], ptrs[3], st)
			}
		}
	}
	// The scratch goes back once the stream is done with it.
	errs := []error{err, st.Synchronize()}
	for _, p := range ptrs {
		if p != 0 {
			errs = append(errs, rt.alloc.Free(p))
		}
	}
	return errors.Join(errs...)
}
