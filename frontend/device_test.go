package frontend_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/runtime/interp"
)

// noGPU skips tests of the no-GPU behaviour on a machine with a GPU.
func noGPU(t *testing.T) {
	t.Helper()
	if _, err := frontend.GPURuntime(); err == nil {
		t.Skip("a GPU is present: the no-GPU errors do not apply")
	} else if !errors.Is(err, frontend.ErrNoGPUBackend) {
		t.Fatalf("GPURuntime: %v, want an error wrapping ErrNoGPUBackend", err)
	}
}

// TestToGPUWithoutGPU checks the located error of device operations on a
// machine without a GPU, and that host tensors are unaffected.
func TestToGPUWithoutGPU(t *testing.T) {
	noGPU(t)
	x := frontend.FromSlice([]float32{1, 2, 3})
	_, file, line, _ := runtime.Caller(0)
	g := x.ToGPU()
	err := g.Err()
	if !errors.Is(err, frontend.ErrNoGPUBackend) {
		t.Fatalf("ToGPU without a GPU: %v, want an error wrapping ErrNoGPUBackend", err)
	}
	at := fmt.Sprintf("%s:%d", file, line+1)
	if !strings.Contains(err.Error(), at) || !strings.Contains(err.Error(), "ToGPU") {
		t.Errorf("error %q: want it located at %s and naming ToGPU", err, at)
	}
	if y := g.Add(x); !errors.Is(y.Err(), frontend.ErrNoGPUBackend) {
		t.Errorf("an op on the failed tensor: %v", y.Err())
	}
	c := frontend.MustCompile(func(a *frontend.Tensor) *frontend.Tensor { return a.Neg() }, frontend.Options{})
	if _, err := c.Call(g); !errors.Is(err, frontend.ErrNoGPUBackend) {
		t.Errorf("a call on the failed tensor: %v", err)
	}
	if x.IsGPU() || g.IsGPU() {
		t.Error("IsGPU on a host or failed tensor")
	}
	if err := x.Free(); err != nil {
		t.Errorf("Free of a host tensor: %v", err)
	}
	near(t, x.CPU().Float32s(), []float32{1, 2, 3})
	if err := frontend.Synchronize(); err != nil {
		t.Errorf("Synchronize without a GPU runtime: %v", err)
	}
}

// deviceBackend's executables implement DeviceExecutable over the eager
// backend, recording what RunDevice receives.
type deviceBackend struct {
	runs, hostInputs atomic.Int32
}

type deviceExe struct {
	frontend.Executable
	b *deviceBackend
}

func (b *deviceBackend) Compile(g *frontend.Graph) (frontend.Executable, error) {
	inner, _ := frontend.LookupBackend(frontend.EagerBackend)
	exe, err := inner.Compile(g)
	if err != nil {
		return nil, err
	}
	return deviceExe{exe, b}, nil
}

func (e deviceExe) RunDevice(inputs []interp.Value) ([]interp.Value, error) {
	e.b.runs.Add(1)
	ts := make([]*interp.Tensor, len(inputs))
	for i, v := range inputs {
		t, ok := v.(*interp.Tensor)
		if !ok {
			return nil, fmt.Errorf("input %d is %T", i, v)
		}
		e.b.hostInputs.Add(1)
		ts[i] = t
	}
	res, err := e.Run(ts)
	if err != nil {
		return nil, err
	}
	out := make([]interp.Value, len(res))
	for i, r := range res {
		out[i] = r
	}
	return out, nil
}

// TestDeviceExecutable checks that the frontend runs a DeviceExecutable
// through RunDevice, on the first (traced) call and on cached ones, with
// host inputs as Tensors and the captured tensors after the arguments.
func TestDeviceExecutable(t *testing.T) {
	b := &deviceBackend{}
	name := "device-" + t.Name()
	frontend.RegisterBackend(name, b)
	w := frontend.FromSlice([]float32{10, 20})
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Add(w) }, frontend.Options{Backend: name})
	for i := range 3 {
		out := call(t, c, frontend.FromSlice([]float32{1, float32(i)}))
		near(t, out[0].Float32s(), []float32{11, 20 + float32(i)})
	}
	if r, h := b.runs.Load(), b.hostInputs.Load(); r != 3 || h != 6 {
		t.Errorf("RunDevice ran %d times with %d host inputs, want 3 and 6", r, h)
	}
	if s := c.Stats(); s.CacheHits < 2 {
		t.Errorf("stats %+v: want the later calls cached", s)
	}
	if _, err := c.KernelTime(10, frontend.FromSlice([]float32{1, 2})); err == nil || !strings.Contains(err.Error(), "not nvptx") {
		t.Errorf("KernelTime of a graph on another backend: %v", err)
	}
}

// TestDonateOnHost checks Donate where nothing can be taken over: a host
// tensor donated to a compiled call keeps its elements, Donate inside a
// compiled function is an error located at it, and a nil tensor's is an
// error.
func TestDonateOnHost(t *testing.T) {
	x := frontend.FromSlice([]float32{1, 2})
	if err := x.Donate(); err != nil {
		t.Fatalf("Donate of a host tensor: %v", err)
	}
	c := frontend.MustCompile(func(a *frontend.Tensor) *frontend.Tensor { return a.Add(a) }, frontend.Options{Backend: frontend.EagerBackend})
	near(t, call(t, c, x)[0].Float32s(), []float32{2, 4})
	near(t, x.Float32s(), []float32{1, 2})

	var inside error
	var line int
	d := frontend.MustCompile(func(a *frontend.Tensor) *frontend.Tensor {
		_, _, line, _ = runtime.Caller(0)
		inside = a.Donate()
		return a.Mul(a)
	}, frontend.Options{Backend: frontend.EagerBackend})
	near(t, call(t, d, x)[0].Float32s(), []float32{1, 4})
	if inside == nil || !strings.Contains(inside.Error(), "inside a compiled function") || !strings.Contains(inside.Error(), fmt.Sprintf("device_test.go:%d", line+1)) {
		t.Errorf("Donate inside a compiled function: %v, want an error located at line %d", inside, line+1)
	}
	var nilT *frontend.Tensor
	if err := nilT.Donate(); err == nil || !strings.Contains(err.Error(), "nil tensor") {
		t.Errorf("Donate of nil: %v", err)
	}
}
