package frontend

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// Device-resident tensors (docs/frontend-gpu.md).
//
// A concrete Tensor holds its elements on the host, on the GPU, or both.
// ToGPU uploads; results of a compiled call on the nvptx backend stay on
// the GPU. Reading elements (Float32s, Item, Print, a graph break, an
// interpreter backend) downloads them once, waiting for the GPU work
// queued before. Passing a GPU tensor to a compiled call on the nvptx
// backend passes its device memory without a copy, and the call returns
// without waiting for the GPU.

// DeviceExecutable is implemented by executables that keep data on a GPU
// (the nvptx backend's). RunDevice takes each input as an *interp.Tensor
// (host) or an *exec.Array (GPU memory of the backend's runtime) and
// returns *exec.Array results that stay on the GPU (a rank-0 result may
// be an *interp.Tensor); it need not wait for the GPU.
type DeviceExecutable interface {
	Executable
	RunDevice(inputs []interp.Value) ([]interp.Value, error)
}

// devData is a tensor's elements in GPU memory, shared by the Tensors
// that hold the same elements; the host copy is made once, on first read.
type devData struct {
	arr  *exec.Array
	once sync.Once
	host *interp.Tensor
	err  error
	// donor, when set, is the tensor that donated arr (Tensor.Donate)
	// to the next compiled call that reads it; donated is where.
	donor   *Tensor
	donated *freedError
}

// taken makes the donor of d fail as after Free, located at its Donate,
// once a call released d's memory.
func (d *devData) taken() {
	t := d.donor
	if t == nil || !d.arr.Released() {
		return
	}
	d.donor = nil
	if t.dev != d {
		return // t holds other elements since
	}
	t.dev = nil
	if t.val == nil {
		if d.host != nil {
			t.val = d.host
		} else {
			t.err = d.donated
		}
	}
}

// download returns the host copy of d, copying it on first use.
func (d *devData) download() (*interp.Tensor, error) {
	d.once.Do(func() {
		d.host, d.err = d.arr.Download()
		if d.err != nil {
			d.err = gpuWork.explain(d.err)
		} else {
			gpuWork.synced()
		}
	})
	return d.host, d.err
}

// tensorData is a concrete tensor's elements: on the host, on the GPU, or
// both. It implements interp.Value (element type and shape).
type tensorData struct {
	host *interp.Tensor
	dev  *devData
}

func hostData(v *interp.Tensor) tensorData { return tensorData{host: v} }

// ElemType returns the element type.
func (d tensorData) ElemType() ir.Type {
	if d.host != nil {
		return d.host.ElemType()
	}
	return d.dev.arr.ElemType()
}

// Shape returns the sizes of the dims.
func (d tensorData) Shape() []int64 {
	if d.host != nil {
		return d.host.Shape()
	}
	return d.dev.arr.Shape()
}

// String describes d.
func (d tensorData) String() string {
	if d.host != nil {
		return d.host.String()
	}
	return d.dev.arr.String()
}

// hostValue returns the elements on the host, downloading them once.
func (d tensorData) hostValue() (*interp.Tensor, error) {
	if d.host != nil {
		return d.host, nil
	}
	return d.dev.download()
}

// arg is what a DeviceExecutable gets: the GPU copy when there is one.
func (d tensorData) arg() interp.Value {
	if d.dev != nil {
		return d.dev.arr
	}
	return d.host
}

// hostValues returns the host elements of ds, downloading those on the
// GPU only.
func hostValues(ds []tensorData) ([]*interp.Tensor, error) {
	out := make([]*interp.Tensor, len(ds))
	for i, d := range ds {
		v, err := d.hostValue()
		if err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

// DonatingExecutable is a DeviceExecutable that can take over the GPU
// memory of inputs their tensors donated (Tensor.Donate):
// RunDeviceDonating is RunDevice that releases each input i with
// donated[i] set once it has read it (exec.Runner.RunDeviceDonating).
type DonatingExecutable interface {
	DeviceExecutable
	RunDeviceDonating(inputs []interp.Value, donated []bool) ([]interp.Value, error)
}

// runExecutable runs exe on inputs: on the GPU data itself for a
// DeviceExecutable (giving it the inputs donated to it, if it takes
// them), else on host copies.
func runExecutable(exe Executable, inputs []tensorData) ([]tensorData, error) {
	if de, ok := exe.(DeviceExecutable); ok {
		args := make([]interp.Value, len(inputs))
		var donated []bool
		for i, d := range inputs {
			args[i] = d.arg()
			if d.dev != nil && d.dev.donor != nil {
				if donated == nil {
					donated = make([]bool, len(inputs))
				}
				donated[i] = true
			}
		}
		var res []interp.Value
		var err error
		if dd, ok := de.(DonatingExecutable); ok && donated != nil {
			res, err = dd.RunDeviceDonating(args, donated)
			for i, d := range donated {
				if d {
					inputs[i].dev.taken()
				}
			}
		} else {
			res, err = de.RunDevice(args)
		}
		if err != nil {
			return nil, err
		}
		out := make([]tensorData, len(res))
		for i, r := range res {
			switch r := r.(type) {
			case *exec.Array:
				out[i] = tensorData{dev: &devData{arr: r}}
			case *interp.Tensor:
				out[i] = hostData(r)
			default:
				return nil, fmt.Errorf("result %d is %v, not a tensor", i, r)
			}
		}
		return out, nil
	}
	vals, err := hostValues(inputs)
	if err != nil {
		return nil, err
	}
	res, err := exe.Run(vals)
	if err != nil {
		return nil, err
	}
	out := make([]tensorData, len(res))
	for i, r := range res {
		out[i] = hostData(r)
	}
	return out, nil
}

// data returns t's concrete elements; value (the host copy) is run only
// when t has no GPU copy, so a GPU tensor is not downloaded.
func (t *Tensor) data(reason string) (tensorData, error) {
	if t.err == nil && t.dev != nil {
		return tensorData{host: t.val, dev: t.dev}, nil
	}
	v, err := t.value(reason)
	if err != nil {
		return tensorData{}, err
	}
	return tensorData{host: v, dev: t.dev}, nil
}

// setData makes t concrete with d's elements.
func (t *Tensor) setData(d tensorData) {
	t.val, t.dev, t.g, t.node, t.remat = d.host, d.dev, nil, nil, nil
	t.shape = slices.Clone(d.Shape())
	t.dtype, _ = dtypeOf(d.ElemType())
}

func fromData(d tensorData) *Tensor {
	t := newTensor()
	t.setData(d)
	return t
}

// ToGPU returns t with its elements in the memory of GPU 0, as torch's
// .cuda() does: the copy is queued and ToGPU returns without waiting for
// it. A tensor already on the GPU is returned as is; a pending one is
// computed first (inside a compiled function that is a graph break). The
// host copy, if any, is kept, so reading the result costs no download.
// Without a GPU the result's Err wraps ErrNoGPUBackend, located at the
// call.
func (t *Tensor) ToGPU() *Tensor {
	loc := callerLoc()
	if t == nil {
		return failed(located(loc, "ToGPU: nil tensor"))
	}
	if t.err != nil {
		return failed(t.err)
	}
	if t.dev != nil {
		return t
	}
	v, err := t.value("ToGPU")
	if err != nil {
		return failed(err)
	}
	rt, err := gpuRuntime()
	if err != nil {
		return failed(locatedWrap(loc, err, "ToGPU"))
	}
	var arr *exec.Array
	if t.zeros != nil && t.zeros == v {
		arr, err = rt.Zeros(v.ElemType(), v.Shape()) // set on the device: nothing to copy
	} else {
		arr, err = rt.Upload(v)
	}
	if err != nil {
		return failed(locatedWrap(loc, gpuWork.explain(err), "ToGPU"))
	}
	out := fromData(tensorData{host: v, dev: &devData{arr: arr}})
	out.sess, out.dyn = t.sess, slices.Clone(t.dyn)
	return out
}

// CPU returns a tensor with t's elements on the host only (torch's
// .cpu()): a GPU tensor is downloaded (once; t keeps the copy too).
func (t *Tensor) CPU() *Tensor {
	if t == nil {
		return failed(located(callerLoc(), "CPU: nil tensor"))
	}
	v, err := t.value("CPU")
	if err != nil {
		return failed(err)
	}
	out := fromInterp(v)
	out.dyn = slices.Clone(t.dyn)
	return out
}

// IsGPU reports whether t's elements are in GPU memory.
func (t *Tensor) IsGPU() bool { return t != nil && t.dev != nil }

// Free releases t's GPU memory now instead of when t becomes unreachable
// (the garbage collector releases it then). A tensor whose elements were
// also on the host (read, or made by ToGPU) stays usable there; one that
// was only on the GPU fails from then on with an error located at the
// Free. Free on a host tensor does nothing.
func (t *Tensor) Free() error {
	if t == nil || t.dev == nil {
		return nil
	}
	d := t.dev
	t.dev = nil
	if t.val == nil {
		if d.host != nil { // read before: keep the host copy
			t.val = d.host
		} else {
			// Located lazily: a loop that frees its results each call
			// must not pay for resolving a location it never prints.
			e := &freedError{}
			e.n = runtime.Callers(2, e.pcs[:])
			t.err = e
		}
	}
	return d.arr.Release()
}

// Donate lets the next compiled call on the GPU that reads t take over
// t's GPU memory, as JAX's donated buffers: a result of a CUDA graph
// (reduce-overhead) fed back into the next call, as a decoding step's
// KV cache is, is then copied into the graph once and never out of its
// pool. After that call t fails as after Free, with an error located at
// the Donate (a host copy it had stays usable), and so do tensors that
// share its elements (an eager Assign of t). A host tensor, a call on
// another backend, or one that does not read t leave t as it was. Donate
// is for the code around compiled calls: inside a compiled function it
// returns an error located at the call.
func (t *Tensor) Donate() error {
	if t == nil {
		return located(callerLoc(), "Donate: nil tensor")
	}
	if t.err != nil {
		return t.err
	}
	if callMu.TryLock() {
		callMu.Unlock()
	} else if insideCompiledCall() {
		return located(callerLoc(), "Donate inside a compiled function: donate the tensors a call takes before the call")
	}
	if t.dev == nil {
		return nil
	}
	e := &freedError{donated: true}
	e.n = runtime.Callers(2, e.pcs[:])
	t.dev.donor, t.dev.donated = t, e
	return nil
}

// freedError is the error of a tensor used after Free, or after a call
// took its donated memory, located at the Free or Donate.
type freedError struct {
	pcs     [16]uintptr
	n       int
	donated bool
}

func (e *freedError) Error() string {
	if e.donated {
		return ir.Errorf(userLoc(e.pcs[:e.n]), "tensor used after a compiled call took the GPU memory it donated").Error()
	}
	return ir.Errorf(userLoc(e.pcs[:e.n]), "tensor used after Free released its GPU memory").Error()
}

// userLoc returns the location of the first frame of pcs outside this
// package (callerLoc, resolved later).
func userLoc(pcs []uintptr) ir.Location {
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if !internalFrame(f.Function) {
			return ir.FileLineColLoc{File: f.File, Line: f.Line}
		}
		if !more {
			return ir.UnknownLoc{}
		}
	}
}

// Synchronize waits for the GPU work queued by compiled calls and ToGPU
// (torch.cuda.synchronize) and returns the first error of that work,
// naming the calls that queued it. Without a GPU runtime opened it does
// nothing.
func Synchronize() error {
	rt, ok := openedRuntime()
	if !ok {
		return nil
	}
	if err := rt.Synchronize(); err != nil {
		return gpuWork.explain(err)
	}
	gpuWork.synced()
	return nil
}

// GPURuntime returns the nvptx backend's runtime on GPU 0, opening it if
// needed: its Transfers count the copies between host and GPU (a chain
// of compiled calls on GPU tensors makes none), its Allocator holds the
// memory of GPU tensors. Without a GPU the error wraps ErrNoGPUBackend.
func GPURuntime() (*exec.Runtime, error) {
	rt, err := gpuRuntime()
	if err != nil {
		return nil, fmt.Errorf("frontend: %w", err)
	}
	return rt, nil
}

// KernelTime returns the GPU time of one run of the cached graph that a
// call on inputs runs: the median of iters runs between CUDA events,
// timed as triton.testing.do_bench does (the L2 cache cleared before each
// run, no host wait between runs), so a call's host overhead is its wall
// time minus this. It needs c compiled to one graph without breaks on
// the nvptx backend and called once on inputs of this signature.
func (c *Compiled) KernelTime(iters int, inputs ...*Tensor) (time.Duration, error) {
	args := make([]reflect.Value, len(inputs))
	for i, t := range inputs {
		if t == nil {
			return 0, fmt.Errorf("frontend: KernelTime: argument %d is nil", i)
		}
		args[i] = reflect.ValueOf(t)
	}
	if _, err := c.call(args); err != nil {
		return 0, fmt.Errorf("frontend: KernelTime: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.last
	if s == nil || len(s.ran) != 1 || len(s.breaks) != 0 {
		return 0, errors.New("frontend: KernelTime: the call did not run one compiled graph (a function with graph breaks has no single graph)")
	}
	r := s.ran[0]
	ne, ok := r.exe.(*nvptxExecutable)
	if !ok {
		return 0, fmt.Errorf("frontend: KernelTime: the graph runs on backend %s, not %s", c.backend.name, NVPTXBackend)
	}
	vals := make([]interp.Value, len(r.inputs))
	for i, d := range r.inputs {
		vals[i] = d.arg()
	}
	ms, err := ne.runner.Time(vals, 3, iters)
	if err != nil {
		return 0, fmt.Errorf("frontend: KernelTime: %w", gpuWork.explain(err))
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// locatedError is an error located at a call in the user's code that
// wraps its cause (errors.Is(err, ErrNoGPUBackend) holds without a GPU).
type locatedError struct {
	diag *ir.Diagnostic
	err  error
}

func (e *locatedError) Error() string { return e.diag.Error() }
func (e *locatedError) Unwrap() error { return e.err }

// locatedWrap returns "loc: error: what: err", wrapping err.
func locatedWrap(loc ir.Location, err error, what string) error {
	return &locatedError{diag: ir.Errorf(loc, "%s: %v", what, err), err: err}
}

// workSite is a compiled call that queued GPU work: its graph and the
// call stack (resolved only for an error message).
type workSite struct {
	graph string
	pcs   [16]uintptr
	n     int
}

func (w *workSite) String() string {
	if loc, ok := userLoc(w.pcs[:w.n]).(ir.FileLineColLoc); ok {
		return fmt.Sprintf("@%s called at %s:%d", w.graph, loc.File, loc.Line)
	}
	return "@" + w.graph
}

// workLog remembers the compiled calls that queued GPU work since the
// GPU last finished everything, so that an error of that asynchronous
// work, which surfaces at a later read or call, names them.
type workLog struct {
	mu          sync.Mutex
	n           int
	first, last workSite
}

// gpuWork is the work log of the nvptx backend's runtime.
var gpuWork workLog

// queued records a call of graph; skip frames are above the caller's.
// Only the first call since the GPU last finished everything keeps its
// call stack: unwinding it cost 2 µs a call on the H200's host (a cached
// call is 20–30 µs), and the error names the later calls by graph.
func (l *workLog) queued(graph string, skip int) {
	var w workSite
	w.graph = graph
	l.mu.Lock()
	first := l.n == 0
	l.mu.Unlock()
	if first {
		w.n = runtime.Callers(skip+2, w.pcs[:])
	}
	l.mu.Lock()
	if l.n == 0 {
		l.first = w
	}
	l.last = w
	l.n++
	l.mu.Unlock()
}

// synced forgets the work: the GPU finished it.
func (l *workLog) synced() {
	l.mu.Lock()
	l.n = 0
	l.mu.Unlock()
}

// explain adds to a driver error the calls whose queued work it may come
// from; other errors are returned as they are, and so is a device
// allocation that did not fit (its own call's, saying what it asked for
// and what was free: no queued work caused it).
func (l *workLog) explain(err error) error {
	var ce *cuda.Error
	var oom *cuda.OutOfMemoryError
	if !errors.As(err, &ce) || errors.As(err, &oom) {
		return err
	}
	l.mu.Lock()
	n, first, last := l.n, l.first, l.last
	l.mu.Unlock()
	if n == 0 {
		return err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "GPU work queued since the last synchronization: %d compiled calls, ", n)
	if n == 1 {
		sb.WriteString(first.String())
	} else {
		fmt.Fprintf(&sb, "the first %s, the last %s", first.String(), last.String())
	}
	return fmt.Errorf("%w (%s)", err, sb.String())
}
