package frontend

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// Tensor is an n-dimensional array. A Tensor is either concrete (its
// elements are known) or pending: the result of an op recorded in a graph
// that has not run yet. Ops never run one by one: they are recorded, and
// the graph runs when a value is read (Float32s, Item, …), when a compiled
// function returns, or at a graph break.
//
// A Tensor also carries the first error of the computation that made it:
// a shape or dtype mismatch found while recording, located at the caller's
// file:line. Ops on a failed tensor fail with the same error, so a chain
// of ops needs one check at the end (Err) or at the compiled function's
// Call.
type Tensor struct {
	val  *interp.Tensor // the elements on the host, once known
	dev  *devData       // the elements in GPU memory (device.go), if there
	g    *graphTrace    // the graph recording this tensor while pending
	node *ir.Value      // the tensor's value in g
	sess *session       // the session that made it, nil for user-made tensors
	// shape is the concrete shape; for a pending tensor of a graph with
	// dynamic dims it is computed from the concrete shapes of the inputs.
	shape []int64
	dtype DType
	err   error
	rid   int32  // 1 + the value id of a placeholder of a replay (replay.go)
	ver   uint32 // bumped by an in-place update: see lift
	seq   uint64 // creation order
	dyn   []int  // dims marked with MarkDynamic
	// remat is the recipe of a tensor that escaped a compiled call
	// without being returned (remat.go): value rematID of its steps.
	remat   *rematSrc
	rematID int32
	// in is the compiled call in flight whose graph reads t as an input
	// (set by session.stamp), so that a host read of t is a graph break.
	in atomic.Pointer[session]
	// zeros is val when Full made it all zeros, so that ToGPU sets the
	// device memory instead of copying the host's (an optimizer's state).
	zeros *interp.Tensor
}

// seqCounter numbers tensors in creation order.
var seqCounter atomic.Uint64

func newTensor() *Tensor { return &Tensor{seq: seqCounter.Add(1)} }

// fromInterp wraps a concrete value.
func fromInterp(v *interp.Tensor) *Tensor {
	t := newTensor()
	t.setValue(v)
	return t
}

func (t *Tensor) setValue(v *interp.Tensor) {
	t.val, t.g, t.node = v, nil, nil
	t.shape = slices.Clone(v.Shape())
	t.dtype, _ = dtypeOf(v.ElemType())
}

// failed returns a tensor holding err.
func failed(err error) *Tensor {
	t := newTensor()
	t.err = err
	return t
}

// Element is the set of Go types tensors are made from.
type Element interface {
	float32 | float64 | int64 | int32 | bool
}

// FromSlice returns a tensor of the given shape holding data (which it
// copies), of the DType matching T: float32, float64, int64, int32 or
// bool. With no shape, data is one-dimensional. A shape that does not
// match len(data) gives a tensor whose Err says so.
func FromSlice[T Element](data []T, shape ...int) *Tensor {
	var elem ir.Type
	switch any(data).(type) {
	case []float32:
		elem = ir.F32
	case []float64:
		elem = ir.F64
	case []int64:
		elem = ir.I64
	case []int32:
		elem = ir.I32
	case []bool:
		elem = ir.I1
	}
	if shape == nil {
		shape = []int{len(data)}
	}
	v, err := interp.FromData(elem, toInt64s(shape), slices.Clone(data))
	if err != nil {
		return failed(located(callerLoc(), "FromSlice: %v", err))
	}
	return fromInterp(v)
}

// Scalar returns a rank-0 float32 tensor holding v.
func Scalar(v float32) *Tensor { return FromSlice([]float32{v}, []int{}...) }

// Full returns a tensor of the given dtype and shape with every element v
// (converted to dt: truncated toward zero for integers, v != 0 for Bool).
func Full(dt DType, v float64, shape ...int) *Tensor {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return failed(located(callerLoc(), "Full: negative size in shape %v", shape))
		}
		n *= d
	}
	elem := dt.Elem()
	if elem == nil {
		return failed(located(callerLoc(), "Full: unknown dtype %v", dt))
	}
	var val *interp.Tensor
	var err error
	switch {
	case v == 0 && !math.Signbit(v):
		// Every dtype's +0 is the zero bit pattern, which a new tensor
		// holds: an optimizer's zeroed state for GPT-2 124M (2 × 124 M
		// elements) took 1.2 s of CPU element by element.
		val, err = interp.NewTensor(elem, toInt64s(shape))
	case dt.IsFloat():
		fs := make([]float64, n)
		for i := range fs {
			fs[i] = v
		}
		val, err = interp.FromFloat64s(elem, toInt64s(shape), fs)
	default:
		iv := int64(v)
		if dt == Bool && v != 0 {
			iv = 1
		}
		is := make([]int64, n)
		for i := range is {
			is[i] = iv
		}
		val, err = interp.FromInt64s(elem, toInt64s(shape), is)
	}
	if err != nil {
		return failed(located(callerLoc(), "Full: %v", err))
	}
	t := fromInterp(val)
	if v == 0 && !math.Signbit(v) {
		t.zeros = val
	}
	return t
}

// Zeros returns a tensor of zeros.
func Zeros(dt DType, shape ...int) *Tensor { return Full(dt, 0, shape...) }

// Ones returns a tensor of ones.
func Ones(dt DType, shape ...int) *Tensor { return Full(dt, 1, shape...) }

// Rand returns a float32 tensor of the given shape with elements drawn
// uniformly from [0, 1) by a generator seeded with seed, so the same seed
// gives the same tensor.
func Rand(seed uint64, shape ...int) *Tensor {
	n := 1
	for _, d := range shape {
		n *= max(d, 0)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	data := make([]float32, n)
	for i := range data {
		data[i] = r.Float32()
	}
	return FromSlice(data, shape...)
}

// Err returns the first error of the computation that made t: a shape or
// dtype mismatch (located at the offending call), a graph break refused
// by Fullgraph, or a failure running the graph.
func (t *Tensor) Err() error { return t.err }

// Shape returns the sizes of t's dims. Reading the shape of a tensor
// with symbolic dims in a dynamic graph specializes that graph on its
// input sizes (the guard then checks them exactly); Dim and Size read one
// dim, and Size keeps it symbolic.
func (t *Tensor) Shape() []int {
	if slices.Contains(t.symShape(), ir.Dynamic) {
		t.shapeRead()
	}
	out := make([]int, len(t.shape))
	for i, d := range t.shape {
		out[i] = int(d)
	}
	return out
}

// shapeRead notes that code read t's sizes: in a graph with dynamic dims
// where t is pending or an input, that specializes the graph on its input
// sizes.
func (t *Tensor) shapeRead() {
	var s *session
	if _, ok := t.replayID(); ok {
		s = t.sess
	} else if in := t.in.Load(); in != nil && in.rp != nil {
		if _, ok := in.c.rpLifted[t]; ok {
			s = in
		}
	}
	if s != nil && s.rp.tp.dynamic {
		if !s.rp.tp.specialized {
			s.diverge() // the recorded call did not read sizes
		} else if s.rp.specializer == nil {
			s.rp.specializer = callerLoc() // for the graph if the replay diverges
		}
	}
	if t.g != nil {
		if t.g.dynamic {
			t.g.specialize(callerLoc())
		}
		return
	}
	if s := t.in.Load(); s != nil && s.active && s.cur != nil && s.cur.dynamic {
		if _, ok := s.cur.lifted[t]; ok {
			s.cur.specialize(callerLoc())
		}
	}
}

// inputRead is a host read of t, an input of a graph of s: a graph break
// when t is an input of the graph being recorded (its value decides what
// the Go code does next), refused under Fullgraph.
func (s *session) inputRead(t *Tensor, reason string) error {
	if !s.active || s.c == nil {
		return nil
	}
	if s.rp != nil {
		if _, ok := s.c.rpLifted[t]; !ok {
			return nil
		}
		s.diverge() // the recorded call had no break here
	}
	if s.cur == nil {
		return nil
	}
	g := s.cur
	if _, ok := g.lifted[t]; !ok {
		return nil
	}
	reason += " of an input of the graph"
	if g.nops == 0 && len(g.pending) == 0 {
		// Nothing recorded yet: no graph to run, but still a break.
		if err := s.noteBreak(reason, callerLoc()); err != nil {
			return err
		}
		s.cur = nil
		return nil
	}
	return s.graphBreak(g, reason, callerLoc())
}

// KnownInt64s returns the elements of an integer tensor whose current
// value the host holds: one made on the host or uploaded from it (ToGPU
// keeps the host copy), passed to or captured by the function, and not
// assigned in place since. Unlike Int64s it is never a graph break and
// never waits for the device: it returns false for a pending tensor, a
// replayed call's placeholder, a tensor only on the GPU, a failed or a
// floating-point one. A compiled function's tapes stay valid when it
// reads them: Go code that only checks the values (and fails the call
// when they are bad) records the same ops whatever they are. Layers
// check their integer inputs with it before recording ops on them
// (nn.CrossEntropy's labels).
func (t *Tensor) KnownInt64s() ([]int64, bool) {
	if t == nil || t.err != nil || t.g != nil || t.remat != nil || t.val == nil || ir.IsFloat(t.val.ElemType()) {
		return nil, false
	}
	if _, ok := t.replayID(); ok {
		return nil, false
	}
	return t.val.Int64s(), true
}

// Rank returns the number of dims.
func (t *Tensor) Rank() int { return len(t.shape) }

// DType returns the element type.
func (t *Tensor) DType() DType { return t.dtype }

// Len returns the number of elements.
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.shape {
		n *= int(d)
	}
	return n
}

// String describes the tensor: its dtype and shape, and whether it is
// pending or failed. It never runs a graph.
func (t *Tensor) String() string {
	switch {
	case t.err != nil:
		return "Tensor(error: " + t.err.Error() + ")"
	case t.val == nil && t.dev == nil && (t.g != nil || t.rid != 0):
		return fmt.Sprintf("Tensor(%s%v, pending)", t.dtype, t.shape)
	case t.dev != nil:
		return fmt.Sprintf("Tensor(%s%v, gpu)", t.dtype, t.shape)
	}
	return fmt.Sprintf("Tensor(%s%v)", t.dtype, t.shape)
}

// value returns t's elements on the host, running its graph if t is
// pending (inside a compiled function that is a graph break with the
// given reason) and downloading them once if they are on the GPU.
func (t *Tensor) value(reason string) (*interp.Tensor, error) {
	if t.err != nil {
		return nil, t.err
	}
	if t.remat != nil {
		if err := t.rematerialize(); err != nil {
			return nil, err
		}
	}
	if _, ok := t.replayID(); ok {
		t.sess.diverge() // a read the recorded call did not make
	}
	if t.g == nil {
		if s := t.in.Load(); s != nil {
			if err := s.inputRead(t, reason); err != nil {
				return nil, err
			}
		}
	}
	if t.val != nil {
		return t.val, nil
	}
	if t.dev != nil {
		v, err := t.dev.download()
		if err != nil {
			return nil, locatedWrap(callerLoc(), err, "reading a GPU tensor")
		}
		t.val = v
		return v, nil
	}
	if t.g == nil {
		return nil, errors.New("frontend: tensor has no value (it escaped from a compiled function without being returned)")
	}
	if err := t.g.sess.graphBreak(t.g, reason, callerLoc()); err != nil {
		t.err = err
		return nil, err
	}
	if t.err != nil {
		return nil, t.err
	}
	if t.val == nil && t.dev == nil {
		return nil, errors.New("frontend: the graph break ran the graph but left the tensor without a value")
	}
	// The graph ran: t is concrete now, on the host or (a GPU backend's
	// result) on the GPU, which the second look downloads.
	return t.value(reason)
}

// Float32s returns a copy of t's elements converted to float32 (nil when t
// failed; see Err). Reading a pending tensor runs its graph; inside a
// compiled function it is a graph break.
func (t *Tensor) Float32s() []float32 {
	fs := t.Float64s()
	if fs == nil {
		return nil
	}
	out := make([]float32, len(fs))
	for i, f := range fs {
		out[i] = float32(f)
	}
	return out
}

// Float64s returns a copy of t's elements converted to float64 (see
// Float32s).
func (t *Tensor) Float64s() []float64 {
	v, err := t.value("data-dependent read (Float64s/Float32s)")
	if err != nil {
		return nil
	}
	if ir.IsFloat(v.ElemType()) {
		return v.Float64s()
	}
	is := v.Int64s()
	out := make([]float64, len(is))
	for i, x := range is {
		out[i] = float64(x)
	}
	return out
}

// Int64s returns a copy of t's elements converted to int64 (floats are
// truncated toward zero; see Float32s).
func (t *Tensor) Int64s() []int64 {
	v, err := t.value("data-dependent read (Int64s)")
	if err != nil {
		return nil
	}
	if !ir.IsFloat(v.ElemType()) {
		return v.Int64s()
	}
	fs := v.Float64s()
	out := make([]int64, len(fs))
	for i, f := range fs {
		out[i] = int64(f)
	}
	return out
}

// Item returns the only element of a one-element tensor as a float64 (0
// when t failed or has another number of elements; see Err). Inside a
// compiled function it is a graph break.
func (t *Tensor) Item() float64 {
	if t.err == nil && t.Len() != 1 {
		t.err = located(callerLoc(), "Item: tensor of shape %v has %d elements, want 1", t.shape, t.Len())
		return 0
	}
	v, err := t.value("data-dependent read (Item)")
	if err != nil {
		return 0
	}
	if ir.IsFloat(v.ElemType()) {
		return v.Float64s()[0]
	}
	return float64(v.Int64s()[0])
}

// Must returns t, or panics with t's error. It is meant for examples and
// tests, where a failure is a bug.
func Must(t *Tensor) *Tensor {
	if t.err != nil {
		panic(t.err)
	}
	return t
}

// MarkDynamic asks Compile to treat dim of t as dynamic from the first
// call in which t is an argument (torch._dynamo.mark_dynamic): the graph
// is compiled with that size unknown, so other sizes reuse it. It returns
// t.
func MarkDynamic(t *Tensor, dim int) *Tensor {
	if dim < 0 {
		dim += len(t.shape)
	}
	if dim < 0 || dim >= len(t.shape) {
		t.err = located(callerLoc(), "MarkDynamic: dim %d out of range for shape %v", dim, t.shape)
		return t
	}
	if !slices.Contains(t.dyn, dim) {
		t.dyn = append(t.dyn, dim)
	}
	return t
}

func toInt64s(xs []int) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}
