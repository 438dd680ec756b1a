package cudnn

import (
	"errors"
	"fmt"
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

// direction is what a plan computes.
type direction int

const (
	forward        direction = iota // y from x and w
	backwardData                    // dx from dy and w
	backwardFilter                  // dw from x and dy
)

var directionNames = [...]string{"forward", "backward data", "backward filter"}

// planKey names a plan: one direction of one convolution.
type planKey struct {
	dir direction
	Conv
}

// plan is a convolution's descriptors and algorithms, made once per
// planKey: the heuristic's candidates that fit the workspace, best first,
// until a call succeeds with one (chosen), which is kept.
type plan struct {
	x, y, w, conv uintptr
	algos         []int32
	chosen        bool
}

// Handle is a cuDNN handle on one device with its workspace and the plans
// of the convolutions it has run. It is safe for concurrent use.
type Handle struct {
	lib       *lib
	dev       *cuda.Device
	alloc     *cuda.Allocator
	h         uintptr
	workspace cuda.DevicePtr

	mu    sync.Mutex
	plans map[planKey]*plan
	// alpha and beta are the host scalars of every call (y = 1·conv + 0·y),
	// read when a call is queued, also while a stream is captured.
	alpha, beta float32
}

// New loads cuDNN (an error wrapping ErrNotFound when absent), creates a
// handle on dev and takes its workspace of WorkspaceBytes from alloc.
func New(dev *cuda.Device, alloc *cuda.Allocator) (*Handle, error) {
	l, err := load()
	if err != nil {
		return nil, err
	}
	hd := &Handle{lib: l, dev: dev, alloc: alloc, plans: map[planKey]*plan{}, alpha: 1}
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

// Close destroys the plans and the handle and returns the workspace.
func (hd *Handle) Close() error {
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
	hd.plans = nil
	return errors.Join(errs...)
}

// Forward queues y = conv(x, w) on stream (nil: the default stream). The
// first convolution of each shape asks cuDNN's heuristic for an algorithm;
// later ones reuse it.
func (hd *Handle) Forward(c Conv, x, w, y cuda.DevicePtr, stream *cuda.Stream) error {
	return hd.run(planKey{forward, c}, stream, func(l *lib, p *plan, algo int32, ws uint64) Status {
		return l.cudnnConvolutionForward(hd.h, unsafe.Pointer(&hd.alpha), p.x, uint64(x), p.w, uint64(w), p.conv, algo,
			ws, WorkspaceBytes, unsafe.Pointer(&hd.beta), p.y, uint64(y))
	})
}

// BackwardData queues dx, the gradient of Forward's x, from the output's
// gradient dy and w.
func (hd *Handle) BackwardData(c Conv, w, dy, dx cuda.DevicePtr, stream *cuda.Stream) error {
	return hd.run(planKey{backwardData, c}, stream, func(l *lib, p *plan, algo int32, ws uint64) Status {
		return l.cudnnConvolutionBackwardData(hd.h, unsafe.Pointer(&hd.alpha), p.w, uint64(w), p.y, uint64(dy), p.conv, algo,
			ws, WorkspaceBytes, unsafe.Pointer(&hd.beta), p.x, uint64(dx))
	})
}

// BackwardFilter queues dw, the gradient of Forward's w, from x and the
// output's gradient dy.
func (hd *Handle) BackwardFilter(c Conv, x, dy, dw cuda.DevicePtr, stream *cuda.Stream) error {
	return hd.run(planKey{backwardFilter, c}, stream, func(l *lib, p *plan, algo int32, ws uint64) Status {
		return l.cudnnConvolutionBackwardFilter(hd.h, unsafe.Pointer(&hd.alpha), p.x, uint64(x), p.y, uint64(dy), p.conv, algo,
			ws, WorkspaceBytes, unsafe.Pointer(&hd.beta), p.w, uint64(dw))
	})
}

// run makes or finds key's plan and queues call on stream with the
// plan's algorithm. Until one call succeeds, a candidate the library
// refuses (CUDNN_STATUS_BAD_PARAM or _NOT_SUPPORTED: it checks before it
// launches anything) gives way to the next: the heuristic ranks
// algorithms it cannot run for some shapes (ResNet-50's 3-channel stem in
// NCHW) first.
func (hd *Handle) run(key planKey, stream *cuda.Stream, call func(l *lib, p *plan, algo int32, ws uint64) Status) error {
	if err := key.check(); err != nil {
		return err
	}
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.plans == nil {
		return errors.New("cuDNN: handle used after Close")
	}
	l := hd.lib
	return hd.dev.WithContext(func() error {
		p := hd.plans[key]
		if p == nil {
			var err error
			if p, err = hd.newPlan(key); err != nil {
				return err
			}
			hd.plans[key] = p
		}
		if err := l.check("cudnnSetStream", l.cudnnSetStream(hd.h, stream.Handle())); err != nil {
			return err
		}
		op := "cudnnConvolution" + [...]string{"Forward", "BackwardData", "BackwardFilter"}[key.dir]
		if !p.chosen && len(p.algos) > 1 {
			if err := hd.choose(key, p, stream, call); err != nil {
				return err
			}
		}
		for {
			s := call(l, p, p.algos[0], uint64(hd.workspace))
			if s == 0 {
				p.chosen = true
				return nil
			}
			if p.chosen || len(p.algos) == 1 || (s != statusBadParam && s != statusNotSupported) {
				return fmt.Errorf("%s: %w", key.Conv, l.check(op, s))
			}
			p.algos = p.algos[1:]
		}
	})
}

// choose times each of p's candidate algorithms on stream, twice (the
// first run of an algorithm loads its kernels), and keeps the fastest, as
// cudnnFind does: cuDNN's heuristic ranks first, for ResNet-50's 1×1
// convolutions in NCHW, algorithms several times slower than others. The
// runs write the operand the call writes; the caller's run after them
// writes it again. On a stream being captured (nothing runs, the host
// cannot wait) the heuristic's order stands. The context is current.
func (hd *Handle) choose(key planKey, p *plan, stream *cuda.Stream, call func(l *lib, p *plan, algo int32, ws uint64) Status) error {
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
	best, bestMS := int32(-1), float32(0)
	var times []string
	for _, algo := range p.algos {
		var ms float32
		ok := true
		for range 2 {
			if err := start.Record(stream); err != nil {
				return err
			}
			if call(hd.lib, p, algo, uint64(hd.workspace)) != 0 {
				ok = false // refused (it launches nothing): not a candidate
				break
			}
			if err := end.Record(stream); err != nil {
				return err
			}
			if err := end.Synchronize(); err != nil {
				return err
			}
			if ms, err = cuda.Elapsed(start, end); err != nil {
				return err
			}
		}
		if !ok {
			continue
		}
		times = append(times, fmt.Sprintf("%d: %.4f ms", algo, ms))
		if best < 0 || ms < bestMS {
			best, bestMS = algo, ms
		}
	}
	if best >= 0 {
		p.algos = []int32{best}
		logs.Printf("autotune", "cuDNN %s of %s: algorithm %d (%s; chosen in %.1f ms of the first call)", directionNames[key.dir], key.Conv, best, strings.Join(times, ", "),
			float64(time.Since(began).Microseconds())/1000)
	}
	return nil
}

// newPlan makes the descriptors of key and lists the algorithms cuDNN's
// heuristic ranks, best first, that support them within the workspace.
// The context is current.
func (hd *Handle) newPlan(key planKey) (_ *plan, err error) {
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
	case forward:
		op, s = "cudnnGetConvolutionForwardAlgorithm_v7", l.cudnnGetConvolutionForwardAlgo(hd.h, p.x, p.w, p.conv, p.y, algosRequested, &got, &perf[0])
	case backwardData:
		op, s = "cudnnGetConvolutionBackwardDataAlgorithm_v7", l.cudnnGetConvolutionBwdDataAlgo(hd.h, p.w, p.y, p.conv, p.x, algosRequested, &got, &perf[0])
	case backwardFilter:
		op, s = "cudnnGetConvolutionBackwardFilterAlgorithm_v7", l.cudnnGetConvolutionBwdFilterAlgo(hd.h, p.x, p.y, p.conv, p.w, algosRequested, &got, &perf[0])
	}
	if err := l.check(op, s); err != nil {
		return nil, err
	}
	for _, a := range perf[:got] {
		var need uint64
		var s Status
		switch key.dir {
		case forward:
			s = l.cudnnGetConvolutionForwardWorkspaceSize(hd.h, p.x, p.w, p.conv, p.y, a.algo, &need)
		case backwardData:
			s = l.cudnnGetConvolutionBwdDataWorkspaceSize(hd.h, p.w, p.y, p.conv, p.x, a.algo, &need)
		case backwardFilter:
			s = l.cudnnGetConvolutionBwdFilterWorkspaceSize(hd.h, p.x, p.y, p.conv, p.w, a.algo, &need)
		}
		if a.status == 0 && s == 0 && need <= WorkspaceBytes {
			p.algos = append(p.algos, a.algo)
		}
	}
	if len(p.algos) > 0 {
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

// destroy releases the descriptors p holds. The context is current.
func (p *plan) destroy(l *lib) error {
	var errs []error
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
