package cudnn

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/strata-ir/strata/internal/dynlib"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cuda"
)

// Status is a cudnnStatus_t.
type Status int32

// statusNames name the cudnnStatus_t codes cuDNN 9 returns most, for when
// the library cannot be asked (cudnnGetErrorString).
var statusNames = map[Status]string{
	0:    "CUDNN_STATUS_SUCCESS",
	1001: "CUDNN_STATUS_NOT_INITIALIZED",
	2000: "CUDNN_STATUS_BAD_PARAM",
	3000: "CUDNN_STATUS_NOT_SUPPORTED",
	4000: "CUDNN_STATUS_INTERNAL_ERROR",
	5000: "CUDNN_STATUS_EXECUTION_FAILED",
}

// String returns the status's CUDNN_STATUS_* name.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("cudnnStatus_t(%d)", int32(s))
}

// Error is a failed cuDNN call.
type Error struct {
	Op     string // the entry point
	Status Status
	Name   string // the library's description of Status
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("cuDNN: %s failed: %s", e.Op, e.Name) }

// check turns a status into an *Error naming op, or nil on success.
func (l *lib) check(op string, s Status) error {
	if s == 0 {
		return nil
	}
	name := s.String()
	if p := l.cudnnGetErrorString(s); p != nil {
		name = dynlib.GoString(p)
	}
	return &Error{Op: op, Status: s, Name: name}
}

// DataType is a cudnnDataType_t: the element type of a tensor.
type DataType int32

// The element types a Conv takes.
const (
	F16  DataType = 2 // CUDNN_DATA_HALF
	BF16 DataType = 9 // CUDNN_DATA_BFLOAT16
)

// String returns the type's name as Strata's IR spells it.
func (t DataType) String() string {
	switch t {
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("cudnnDataType_t(%d)", int32(t))
}

// Layout is the order of a Conv's tensors' dimensions in memory.
type Layout int32

// The layouts of x, w and y (and their gradients).
const (
	// NCHW stores x [N, C, H, W], w [O, C, KH, KW], y [N, O, OH, OW].
	NCHW Layout = 0 // CUDNN_TENSOR_NCHW
	// NHWC (channels last) stores x [N, H, W, C], w [O, KH, KW, C] and
	// y [N, OH, OW, O].
	NHWC Layout = 1 // CUDNN_TENSOR_NHWC
)

// The cuDNN constants the descriptors take (cudnn_graph.h, cudnn_cnn.h).
const (
	dataFloat        = 0 // CUDNN_DATA_FLOAT: the compute type
	crossCorrelation = 1 // CUDNN_CROSS_CORRELATION: no flip of the window
	tensorOpMath     = 1 // CUDNN_TENSOR_OP_MATH
	algosRequested   = 8

	statusBadParam     Status = 2000 // CUDNN_STATUS_BAD_PARAM
	statusNotSupported Status = 3000 // CUDNN_STATUS_NOT_SUPPORTED
)

// algoPerf is cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t, which
// share one layout.
type algoPerf struct {
	algo        int32
	status      Status
	time        float32
	memory      uint64
	determinism int32
	mathType    int32
	reserved    [3]int32
}

// WorkspaceBytes is the workspace a Handle gives cuDNN: the algorithms
// that need more are not chosen.
const WorkspaceBytes = 256 << 20

// Conv is one 2-D convolution (cross-correlation, as PyTorch's and
// Strata's conv2d), one group, f32 accumulation and one rounding to Type:
//
//	y[n, o, i, j] = Σ_{c, a, b} x[n, c, i·sh - ph + a·dh, j·sw - pw + b·dw] · w[o, c, a, b]
//
// (zero outside x), with the tensors stored in Layout's order. Padding is
// the same on both sides of a dimension.
type Conv struct {
	Type                DataType // of x, w and y
	Layout              Layout
	N, C, H, W          int64 // x
	O, KH, KW           int64 // w: O output channels of C·KH·KW
	Pad, Stride, Dilate [2]int64
}

// Out returns the output's height and width.
func (c Conv) Out() (oh, ow int64) {
	size := func(in, k int64, d int) int64 {
		return (in+2*c.Pad[d]-c.Dilate[d]*(k-1)-1)/c.Stride[d] + 1
	}
	return size(c.H, c.KH, 0), size(c.W, c.KW, 1)
}

// check reports a convolution cuDNN is not asked to do.
func (c Conv) check() error {
	switch {
	case c.Type != BF16 && c.Type != F16:
		return fmt.Errorf("cuDNN convolution of %s: tensors must be bf16 or f16", c.Type)
	case c.Layout != NCHW && c.Layout != NHWC:
		return fmt.Errorf("cuDNN convolution: unknown layout %d", c.Layout)
	case c.Stride[0] < 1 || c.Stride[1] < 1 || c.Dilate[0] < 1 || c.Dilate[1] < 1 || c.Pad[0] < 0 || c.Pad[1] < 0:
		return fmt.Errorf("cuDNN convolution: strides %v and dilations %v must be positive, padding %v at least 0", c.Stride, c.Dilate, c.Pad)
	}
	oh, ow := c.Out()
	switch {
	case min(c.N, c.C, c.H, c.W, c.O, c.KH, c.KW) < 1 || oh < 1 || ow < 1:
		return fmt.Errorf("cuDNN convolution of x [%d, %d, %d, %d] by w [%d, %d, %d, %d]: every size, and the output's %d×%d, must be positive",
			c.N, c.C, c.H, c.W, c.O, c.C, c.KH, c.KW, oh, ow)
	case max(c.N, c.C, c.H, c.W, c.O, c.KH, c.KW, c.Pad[0], c.Pad[1], c.Stride[0], c.Stride[1], c.Dilate[0], c.Dilate[1]) > 1<<31-1:
		return fmt.Errorf("cuDNN convolution: sizes must fit in 32 bits")
	}
	return nil
}

// Direction is what a plan computes: a convolution's output or one of
// its gradients.
type Direction int

const (
	DirForward        Direction = iota // y from x and w
	DirBackwardData                    // dx from dy and w
	DirBackwardFilter                  // dw from x and dy
)

var directionNames = [...]string{"forward", "backward data", "backward filter"}

// planKey names a plan: one direction of one convolution.
type planKey struct {
	dir Direction
	Conv
}

// candidate is one way to run a plan: an execution plan of the graph API
// (exec, finalized, of the engine with global index engine) or, when exec
// is 0, an algorithm of the legacy API.
type candidate struct {
	exec   uintptr
	engine int64
	algo   int32
}

// String names c in the logs.
func (c candidate) String() string {
	if c.exec != 0 {
		return fmt.Sprintf("engine %d", c.engine)
	}
	return fmt.Sprintf("algorithm %d", c.algo)
}

// plan is a convolution's descriptors and candidates, made once per
// planKey: on the graph API, the heuristic's engines that compile nothing
// at run time (enginePlan); on the legacy API, the heuristic's algorithms
// that fit the workspace (legacyPlan). Best first, until a call succeeds
// with one (chosen), which is kept.
type plan struct {
	cands  []candidate
	chosen bool
	// descs are the graph API's descriptors, destroyed with the plan.
	descs []uintptr
	// x, y, w and conv are the legacy API's descriptors; legacy is the
	// legacy plan of a graph API plan's key, made for a call whose
	// operands are aligned less than its tensors declare.
	x, y, w, conv uintptr
	legacy        *plan
	// failed is set on a graph API plan none of whose engines ran: its
	// calls run on the legacy plan.
	failed bool
}

// Handle is a cuDNN handle on one device with its workspace and the plans
// of the convolutions it has run. It is safe for concurrent use.
type Handle struct {
	lib       *lib
	dev       *cuda.Device
	alloc     *cuda.Allocator
	h         uintptr
	workspace cuda.DevicePtr
	// graphAPI is set when plans are made on the graph API (APIEnv and
	// the library allow it).
	graphAPI bool

	// mu is held for every use of the handle (cuDNN's handles are not
	// for concurrent use), and guards plans.
	mu    sync.Mutex
	plans map[planKey]*plan
	// alpha and beta are the host scalars of every legacy call (y =
	// 1·conv + 0·y), read when a call is queued, also while a stream is
	// captured.
	alpha, beta float32

	// tuneMu serialises the Tunes, which run on tuneWorkspace (fresh
	// memory, taken by the first Tune): the program's calls use
	// workspace meanwhile, on other streams.
	tuneMu        sync.Mutex
	tuneWorkspace cuda.DevicePtr
}

// New loads cuDNN (an error wrapping ErrNotFound when absent), creates a
// handle on dev and takes its workspace of WorkspaceBytes from alloc. An
// unknown $STRATA_CUDNN_API (APIEnv) is an error.
func New(dev *cuda.Device, alloc *cuda.Allocator) (*Handle, error) {
	l, err := load()
	if err != nil {
		return nil, err
	}
	graph, err := useGraphAPI()
	if err != nil {
		return nil, fmt.Errorf("cuDNN: %w", err)
	}
	hd := &Handle{lib: l, dev: dev, alloc: alloc, plans: map[planKey]*plan{}, alpha: 1, graphAPI: graph && l.graph != nil}
	if err := dev.WithContext(func() error { return l.check("cudnnCreate", l.cudnnCreate(&hd.h)) }); err != nil {
		return nil, err
	}
	if hd.workspace, err = alloc.Alloc(WorkspaceBytes); err != nil {
		_ = dev.WithContext(func() error { return l.check("cudnnDestroy", l.cudnnDestroy(hd.h)) })
		return nil, fmt.Errorf("cuDNN workspace: %w", err)
	}
	return hd, nil
}

// Path returns the file the library was loaded from.
func (hd *Handle) Path() string { return hd.lib.path }

// GraphAPI reports whether the handle plans convolutions on cuDNN's graph
// API (engines without runtime compilation) rather than the legacy one.
func (hd *Handle) GraphAPI() bool { return hd.graphAPI }

// Close destroys the plans and the handle and returns the workspace.
func (hd *Handle) Close() error {
	hd.tuneMu.Lock()
	defer hd.tuneMu.Unlock()
	hd.mu.Lock()
	defer hd.mu.Unlock()
	l := hd.lib
	errs := []error{hd.dev.WithContext(func() error {
		var errs []error
		for _, p := range hd.plans {
			errs = append(errs, p.destroy(l))
		}
		errs = append(errs, l.check("cudnnDestroy", l.cudnnDestroy(hd.h)))
		return errors.Join(errs...)
	})}
	errs = append(errs, hd.alloc.Free(hd.workspace))
	if hd.tuneWorkspace != 0 {
		errs = append(errs, hd.alloc.Free(hd.tuneWorkspace))
		hd.tuneWorkspace = 0
	}
	hd.plans = nil
	return errors.Join(errs...)
}

// Forward queues y = conv(x, w) on stream (nil: the default stream). The
// first convolution of each shape asks cuDNN's heuristic for candidates
// and times them; later ones reuse the fastest.
func (hd *Handle) Forward(c Conv, x, w, y cuda.DevicePtr, stream *cuda.Stream) error {
	return hd.run(planKey{DirForward, c}, stream, [3]cuda.DevicePtr{x, w, y}, false, hd.workspace)
}

// BackwardData queues dx, the gradient of Forward's x, from the output's
// gradient dy and w.
func (hd *Handle) BackwardData(c Conv, w, dy, dx cuda.DevicePtr, stream *cuda.Stream) error {
	return hd.run(planKey{DirBackwardData, c}, stream, [3]cuda.DevicePtr{dx, w, dy}, false, hd.workspace)
}

// BackwardFilter queues dw, the gradient of Forward's w, from x and the
// output's gradient dy.
func (hd *Handle) BackwardFilter(c Conv, x, dy, dw cuda.DevicePtr, stream *cuda.Stream) error {
	return hd.run(planKey{DirBackwardFilter, c}, stream, [3]cuda.DevicePtr{x, dw, dy}, false, hd.workspace)
}

// Operands are a convolution call's tensors: x, w and y, with a gradient
// in place of what it is the gradient of (BackwardData writes X,
// BackwardFilter W).
type Operands struct{ X, W, Y cuda.DevicePtr }

// Untimed is Forward, BackwardData or BackwardFilter (dir) without their
// timing: until a Tune of the same call (or a timed call) has chosen its
// candidate, it runs the heuristic's first one that the library accepts.
// A program calls it while a Tune of the call is under way or due in the
// background, so that its first run does not wait for the timing.
func (hd *Handle) Untimed(dir Direction, c Conv, ops Operands, stream *cuda.Stream) error {
	return hd.run(planKey{dir, c}, stream, [3]cuda.DevicePtr{ops.X, ops.W, ops.Y}, true, hd.workspace)
}

// Tune makes the plan of the call dir of c and chooses its candidate as
// the first timed call does (choose), on the operands ops (scratch: the
// timing runs write the written one) on stream, but holds the handle only
// for each of its calls: the program's calls of the handle meanwhile run
// (Untimed ones on the heuristic's first candidate). Every call of a Tune
// runs on a workspace of Tune's own, and the candidates' timings wait for
// the program's work on the device (cuda.Device.WaitQuiet) and are made
// again when a run of it began meanwhile: the device is the program's
// first, and the timings stay those of an idle device. A call chosen
// already runs once.
func (hd *Handle) Tune(dir Direction, c Conv, ops Operands, stream *cuda.Stream) error {
	key := planKey{dir, c}
	if err := key.check(); err != nil {
		return err
	}
	args := [3]cuda.DevicePtr{ops.X, ops.W, ops.Y}
	hd.tuneMu.Lock()
	defer hd.tuneMu.Unlock()
	// The plan, and the candidates to time: none when the choice is made
	// or there is nothing to choose, or when the graph API's plan does
	// not run these operands (the first call's fallback decides then).
	var p *plan
	var cands []candidate
	err := hd.locked(func() error {
		var err error
		if p, err = hd.planOf(key); err != nil {
			return err
		}
		if !p.chosen && len(p.cands) > 1 && !(p.graph() && (p.failed || !aligned(args))) {
			cands = slices.Clone(p.cands)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Every call of a Tune, timed or not, runs on the tuning workspace:
	// the program's calls on other streams use the handle's meanwhile,
	// and two kernels that share a workspace may overwrite each other's
	// partial results.
	if hd.tuneWorkspace == 0 {
		ws, err := hd.alloc.AllocFresh(WorkspaceBytes)
		if err != nil {
			return fmt.Errorf("cuDNN tuning workspace: %w", err)
		}
		hd.tuneWorkspace = ws
	}
	if len(cands) == 0 {
		return hd.run(key, stream, args, false, hd.tuneWorkspace)
	}
	began := time.Now()
	start, err := hd.dev.NewEvent()
	if err != nil {
		return err
	}
	defer start.Destroy()
	end, err := hd.dev.NewEvent()
	if err != nil {
		return err
	}
	defer end.Destroy()
	tuneCall := func(c candidate) (s Status, err error) {
		err = hd.locked(func() error {
			if err := hd.lib.check("cudnnSetStream", hd.lib.cudnnSetStream(hd.h, stream.Handle())); err != nil {
				return err
			}
			s = hd.call(key, p, c, args, hd.tuneWorkspace)
			return nil
		})
		return s, err
	}
	best, bestMS, retimed := -1, float32(0), 0
	var times []string
	for i, c := range cands {
		if s, err := tuneCall(c); err != nil {
			return err
		} else if s != 0 {
			continue // refused (it launches nothing): not a candidate
		}
		ms, ok, again, err := hd.timeCandidate(func() (Status, error) { return tuneCall(c) }, stream, start, end, true)
		if err != nil {
			return err
		}
		retimed += again
		if !ok {
			continue
		}
		times = append(times, fmt.Sprintf("%v: %.4f ms", c, ms))
		if best < 0 || ms < bestMS {
			best, bestMS = i, ms
		}
	}
	if best < 0 {
		// No candidate ran: the first call's fallbacks (the legacy API)
		// decide.
		return hd.run(key, stream, args, false, hd.tuneWorkspace)
	}
	won := cands[best]
	return hd.locked(func() error {
		if !p.chosen {
			p.cands, p.chosen = []candidate{won}, true
			logs.Printf("autotune", "cuDNN %s of %s: %v (%s; tuned in %.1f ms, %d timings made again after the program's work)",
				directionNames[key.dir], key.Conv, won, strings.Join(times, ", "), float64(time.Since(began).Microseconds())/1000, retimed)
		}
		return nil
	})
}

// Plan makes the plan of the call dir of c (its descriptors and the
// heuristic's candidates: what the call's first run needs, Untimed or
// not) if it is not made yet, without running anything. A warm-up makes
// the plans of all its calls before it times any (Tune), whose timings
// wait for the program's runs: those runs then find their plans made.
func (hd *Handle) Plan(dir Direction, c Conv) error {
	key := planKey{dir, c}
	if err := key.check(); err != nil {
		return err
	}
	return hd.locked(func() error {
		_, err := hd.planOf(key)
		return err
	})
}

// locked calls f holding the handle, with the device's context current;
// a closed handle is an error.
func (hd *Handle) locked(f func() error) error {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.plans == nil {
		return errors.New("cuDNN: handle used after Close")
	}
	return hd.dev.WithContext(f)
}

// planOf returns key's plan, made on first use. The handle is locked and
// the context current.
func (hd *Handle) planOf(key planKey) (*plan, error) {
	p := hd.plans[key]
	if p == nil {
		var err error
		if p, err = hd.newPlan(key); err != nil {
			return nil, err
		}
		hd.plans[key] = p
	}
	return p, nil
}

// call queues candidate c of p (a plan of key) with the operands ops in
// x, w, y order (the gradients in place of what they are the gradient
// of) and the workspace ws on the handle's stream. The context is
// current.
func (hd *Handle) call(key planKey, p *plan, c candidate, ops [3]cuda.DevicePtr, ws cuda.DevicePtr) Status {
	if c.exec != 0 {
		return hd.execute(c, ops, ws)
	}
	l := hd.lib
	x, w, y := uint64(ops[0]), uint64(ops[1]), uint64(ops[2])
	switch key.dir {
	case DirBackwardData:
		return l.cudnnConvolutionBackwardData(hd.h, unsafe.Pointer(&hd.alpha), p.w, w, p.y, y, p.conv, c.algo,
			uint64(ws), WorkspaceBytes, unsafe.Pointer(&hd.beta), p.x, x)
	case DirBackwardFilter:
		return l.cudnnConvolutionBackwardFilter(hd.h, unsafe.Pointer(&hd.alpha), p.x, x, p.y, y, p.conv, c.algo,
			uint64(ws), WorkspaceBytes, unsafe.Pointer(&hd.beta), p.w, w)
	}
	return l.cudnnConvolutionForward(hd.h, unsafe.Pointer(&hd.alpha), p.x, x, p.w, w, p.conv, c.algo,
		uint64(ws), WorkspaceBytes, unsafe.Pointer(&hd.beta), p.y, y)
}

// run makes or finds key's plan and queues it on stream with the operands
// ops (x, w, y order). Until one call succeeds, a candidate the library
// refuses (CUDNN_STATUS_BAD_PARAM or _NOT_SUPPORTED: it checks before it
// launches anything) gives way to the next: the heuristic ranks
// algorithms it cannot run for some shapes (ResNet-50's 3-channel stem in
// NCHW) first. Untimed, a plan whose candidate is not chosen yet runs its
// first one without timing them (Untimed). Every call runs on the
// workspace ws: the handle's for the program's calls, the tuning one for
// a Tune's, whose stream is another.
func (hd *Handle) run(key planKey, stream *cuda.Stream, ops [3]cuda.DevicePtr, untimed bool, ws cuda.DevicePtr) error {
	if err := key.check(); err != nil {
		return err
	}
	l := hd.lib
	return hd.locked(func() error {
		p, err := hd.planOf(key)
		if err != nil {
			return err
		}
		if err := l.check("cudnnSetStream", l.cudnnSetStream(hd.h, stream.Handle())); err != nil {
			return err
		}
		if p.graph() && (p.failed || !aligned(ops)) {
			// The graph's tensors declare tensorAlignment.
			return hd.runLegacy(key, p, stream, ops, untimed, ws)
		}
		err = hd.runPlan(key, p, stream, ops, untimed, ws)
		if err != nil && p.graph() && !p.chosen {
			// No engine of the graph API ran: the legacy API's
			// algorithms are the last resort.
			p.failed = true
			logs.Printf("compile", "cuDNN %s: the graph API's engines failed (%v): the legacy API's algorithms", key.Conv, err)
			return hd.runLegacy(key, p, stream, ops, untimed, ws)
		}
		return err
	})
}

// runLegacy runs p's key on its legacy plan, made on first use. The
// context is current.
func (hd *Handle) runLegacy(key planKey, p *plan, stream *cuda.Stream, ops [3]cuda.DevicePtr, untimed bool, ws cuda.DevicePtr) error {
	if p.legacy == nil {
		var err error
		if p.legacy, err = hd.legacyPlan(key); err != nil {
			return err
		}
	}
	return hd.runPlan(key, p.legacy, stream, ops, untimed, ws)
}

// runPlan queues p (of key) on stream with the workspace ws, choosing its
// candidate on its first call unless untimed (a Tune chooses it then).
// The context is current and the stream set.
func (hd *Handle) runPlan(key planKey, p *plan, stream *cuda.Stream, ops [3]cuda.DevicePtr, untimed bool, ws cuda.DevicePtr) error {
	if !p.chosen && len(p.cands) > 1 && !untimed {
		if err := hd.choose(key, p, stream, ops, ws); err != nil {
			return err
		}
	}
	for {
		s := hd.call(key, p, p.cands[0], ops, ws)
		if s == 0 {
			// An untimed call leaves the choice to the Tune.
			p.chosen = p.chosen || !untimed || len(p.cands) == 1
			return nil
		}
		if p.chosen || len(p.cands) == 1 || (s != statusBadParam && s != statusNotSupported) {
			op := "cudnnConvolution" + [...]string{"Forward", "BackwardData", "BackwardFilter"}[key.dir]
			if p.cands[0].exec != 0 {
				op = "cudnnBackendExecute"
			}
			return fmt.Errorf("%s: %w", key.Conv, hd.lib.check(op, s))
		}
		p.cands = p.cands[1:]
	}
}

// graph reports whether p runs on the graph API.
func (p *plan) graph() bool { return len(p.cands) > 0 && p.cands[0].exec != 0 }

// choose times each of p's candidates on stream, as cudnnFind does, and
// keeps the fastest: cuDNN's heuristic ranks first, for ResNet-50's 1×1
// convolutions in NCHW, algorithms several times slower than others. A
// candidate runs once (its first run loads its kernels), then
// timingRuns times between two events (timeCandidate: the program's own
// call, which a Tune of another call waits for), and its fastest run
// counts: a run that other work slowed, or that waited for the host, only
// ever takes longer. The runs write the operand the call writes; the
// caller's run after them writes it again.
// On a stream being captured (nothing runs, the host cannot wait) the
// heuristic's order stands. The context is current.
func (hd *Handle) choose(key planKey, p *plan, stream *cuda.Stream, ops [3]cuda.DevicePtr, ws cuda.DevicePtr) error {
	if capturing, err := hd.dev.Capturing(stream); err != nil || capturing {
		return err
	}
	began := time.Now()
	start, err := hd.dev.NewEvent()
	if err != nil {
		return err
	}
	defer start.Destroy()
	end, err := hd.dev.NewEvent()
	if err != nil {
		return err
	}
	defer end.Destroy()
	best, bestMS := -1, float32(0)
	var times []string
	for i, c := range p.cands {
		call := func() (Status, error) { return hd.call(key, p, c, ops, ws), nil }
		if s, _ := call(); s != 0 {
			continue // refused (it launches nothing): not a candidate
		}
		// The program's own call: its work is what it would wait for.
		ms, ok, _, err := hd.timeCandidate(call, stream, start, end, false)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		times = append(times, fmt.Sprintf("%v: %.4f ms", c, ms))
		if best < 0 || ms < bestMS {
			best, bestMS = i, ms
		}
	}
	if best >= 0 {
		c := p.cands[best]
		p.cands = []candidate{c}
		logs.Printf("autotune", "cuDNN %s of %s: %v (%s; chosen in %.1f ms of the first call)", directionNames[key.dir], key.Conv, c, strings.Join(times, ", "),
			float64(time.Since(began).Microseconds())/1000)
	}
	return nil
}

// timeCandidate makes call (a candidate's, which the library may
// refuse) timingRuns times between start and end on stream and returns
// its fastest run's milliseconds (cuda.FastestRun); false when the
// library refused a run. With quiet (a Tune's timing, beside the
// program), the timed runs start once the program's work queued so far
// has finished, hold the device's TimingLock, and are all made again
// (counted in again) when a run of the program's began meanwhile
// (cuda.Device.TimeQuiet). Without it (the program's own first call,
// which holds the handle), they take no lock: a Tune waits for them
// instead.
func (hd *Handle) timeCandidate(call func() (Status, error), stream *cuda.Stream, start, end *cuda.Event, quiet bool) (ms float32, ok bool, again int, err error) {
	run := func() (bool, error) {
		s, err := call()
		return s == 0, err
	}
	if !quiet {
		ms, ok, err = cuda.FastestRun(timingRuns, run, stream, start, end)
		return ms, ok, 0, err
	}
	again, err = hd.dev.TimeQuiet(func() (bool, error) {
		var err error
		ms, ok, err = cuda.FastestRun(timingRuns, run, stream, start, end)
		return ok, err
	})
	return ms, ok, again, err
}

// timingRuns is how many timed runs of each candidate choose and Tune
// take the fastest of.
const timingRuns = 3

// newPlan makes key's plan: on the graph API where the handle uses it
// and it has an engine for key, else on the legacy API. The plan is
// logged, under the topic compile when it took long (a first call's
// time) or fell back to the legacy API, else under autotune. The context
// is current.
func (hd *Handle) newPlan(key planKey) (*plan, error) {
	start := time.Now()
	var p *plan
	api, note := "legacy API", ""
	if hd.graphAPI {
		p, note = hd.enginePlan(key)
		api = "graph API"
	}
	if p == nil {
		var err error
		if p, err = hd.legacyPlan(key); err != nil {
			return nil, err
		}
		if hd.graphAPI {
			api = "legacy API (no graph API plan: " + note + ")"
			note = ""
		}
	}
	if note != "" {
		api += " (" + note + ")"
	}
	d := time.Since(start)
	topic := "autotune"
	if d >= slowPlan || p.cands[0].exec == 0 && hd.graphAPI {
		topic = "compile" // part of a first call's time, or a fallback
	}
	logs.Printf(topic, "cuDNN %s of %s: %d candidates on the %s, planned in %.1f ms", directionNames[key.dir], key.Conv, len(p.cands), api,
		float64(d.Microseconds())/1000)
	return p, nil
}

// slowPlan is how long making a plan takes before newPlan logs it under
// the topic compile rather than autotune.
const slowPlan = 20 * time.Millisecond

// legacyPlan makes the descriptors of key and lists the algorithms
// cuDNN's legacy heuristic ranks, best first, that support them within
// the workspace. The context is current.
func (hd *Handle) legacyPlan(key planKey) (_ *plan, err error) {
	l, c := hd.lib, key.Conv
	p := &plan{}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.destroy(l))
		}
	}()
	oh, ow := c.Out()
	dt, f := int32(c.Type), int32(c.Layout)
	if err := l.check("cudnnCreateTensorDescriptor", l.cudnnCreateTensorDescriptor(&p.x)); err != nil {
		return nil, err
	}
	if err := l.check("cudnnSetTensor4dDescriptor", l.cudnnSetTensor4dDescriptor(p.x, f, dt, int32(c.N), int32(c.C), int32(c.H), int32(c.W))); err != nil {
		return nil, err
	}
	if err := l.check("cudnnCreateTensorDescriptor", l.cudnnCreateTensorDescriptor(&p.y)); err != nil {
		return nil, err
	}
	if err := l.check("cudnnSetTensor4dDescriptor", l.cudnnSetTensor4dDescriptor(p.y, f, dt, int32(c.N), int32(c.O), int32(oh), int32(ow))); err != nil {
		return nil, err
	}
	if err := l.check("cudnnCreateFilterDescriptor", l.cudnnCreateFilterDescriptor(&p.w)); err != nil {
		return nil, err
	}
	if err := l.check("cudnnSetFilter4dDescriptor", l.cudnnSetFilter4dDescriptor(p.w, dt, f, int32(c.O), int32(c.C), int32(c.KH), int32(c.KW))); err != nil {
		return nil, err
	}
	if err := l.check("cudnnCreateConvolutionDescriptor", l.cudnnCreateConvolutionDescriptor(&p.conv)); err != nil {
		return nil, err
	}
	if err := l.check("cudnnSetConvolution2dDescriptor", l.cudnnSetConvolution2dDescriptor(p.conv, int32(c.Pad[0]), int32(c.Pad[1]),
		int32(c.Stride[0]), int32(c.Stride[1]), int32(c.Dilate[0]), int32(c.Dilate[1]), crossCorrelation, dataFloat)); err != nil {
		return nil, err
	}
	if err := l.check("cudnnSetConvolutionMathType", l.cudnnSetConvolutionMathType(p.conv, tensorOpMath)); err != nil {
		return nil, err
	}
	perf := make([]algoPerf, algosRequested)
	var got int32
	var s Status
	var op string
	switch key.dir {
	case DirForward:
		op, s = "cudnnGetConvolutionForwardAlgorithm_v7", l.cudnnGetConvolutionForwardAlgo(hd.h, p.x, p.w, p.conv, p.y, algosRequested, &got, &perf[0])
	case DirBackwardData:
		op, s = "cudnnGetConvolutionBackwardDataAlgorithm_v7", l.cudnnGetConvolutionBwdDataAlgo(hd.h, p.w, p.y, p.conv, p.x, algosRequested, &got, &perf[0])
	case DirBackwardFilter:
		op, s = "cudnnGetConvolutionBackwardFilterAlgorithm_v7", l.cudnnGetConvolutionBwdFilterAlgo(hd.h, p.x, p.y, p.conv, p.w, algosRequested, &got, &perf[0])
	}
	if err := l.check(op, s); err != nil {
		return nil, err
	}
	for _, a := range perf[:got] {
		var need uint64
		var s Status
		switch key.dir {
		case DirForward:
			s = l.cudnnGetConvolutionForwardWorkspaceSize(hd.h, p.x, p.w, p.conv, p.y, a.algo, &need)
		case DirBackwardData:
			s = l.cudnnGetConvolutionBwdDataWorkspaceSize(hd.h, p.w, p.y, p.conv, p.x, a.algo, &need)
		case DirBackwardFilter:
			s = l.cudnnGetConvolutionBwdFilterWorkspaceSize(hd.h, p.x, p.y, p.conv, p.w, a.algo, &need)
		}
		if a.status == 0 && s == 0 && need <= WorkspaceBytes {
			p.cands = append(p.cands, candidate{algo: a.algo})
		}
	}
	if len(p.cands) > 0 {
		return p, nil
	}
	return nil, fmt.Errorf("cuDNN has no %s algorithm within %d MiB of workspace for %s", directionNames[key.dir], WorkspaceBytes>>20, c)
}

// String describes c as the error messages name it.
func (c Conv) String() string {
	layout := "NCHW"
	if c.Layout == NHWC {
		layout = "NHWC"
	}
	return fmt.Sprintf("%s %s x [%d, %d, %d, %d] by w [%d, %d, %d, %d], padding %v, strides %v, dilations %v",
		c.Type, layout, c.N, c.C, c.H, c.W, c.O, c.C, c.KH, c.KW, c.Pad, c.Stride, c.Dilate)
}

// destroy releases the descriptors p (and its legacy plan) holds. The
// context is current.
func (p *plan) destroy(l *lib) error {
	var errs []error
	if p.legacy != nil {
		errs = append(errs, p.legacy.destroy(l))
	}
	for i := len(p.descs) - 1; i >= 0; i-- { // users before what they use
		errs = append(errs, l.check("cudnnBackendDestroyDescriptor", l.graph.destroy(p.descs[i])))
	}
	for _, t := range []uintptr{p.x, p.y} {
		if t != 0 {
			errs = append(errs, l.check("cudnnDestroyTensorDescriptor", l.cudnnDestroyTensorDescriptor(t)))
		}
	}
	if p.w != 0 {
		errs = append(errs, l.check("cudnnDestroyFilterDescriptor", l.cudnnDestroyFilterDescriptor(p.w)))
	}
	if p.conv != 0 {
		errs = append(errs, l.check("cudnnDestroyConvolutionDescriptor", l.cudnnDestroyConvolutionDesc(p.conv)))
	}
	return errors.Join(errs...)
}
