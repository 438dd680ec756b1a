package frontend_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/exec"
)

// gpu returns the nvptx backend's runtime, or skips without a GPU.
func gpu(t testing.TB) *exec.Runtime {
	t.Helper()
	rt, err := frontend.GPURuntime()
	if errors.Is(err, frontend.ErrNoGPUBackend) {
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// nearTol compares with a relative tolerance (the GPU's exp and division
// are approximations).
func nearTol(t *testing.T, what string, got, want []float32, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > rel*(1+math.Abs(float64(want[i]))) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s: value %d: got %v, want %v", what, i, got[i], want[i])
		}
	}
}

// twoLayers returns an MLP layer pair and a second function to chain.
func twoLayers(seed uint64) (mlp, head func(x *frontend.Tensor) *frontend.Tensor) {
	w1, b1 := frontend.Rand(seed+1, 16, 32), frontend.Rand(seed+2, 32)
	w2, b2 := frontend.Rand(seed+3, 32, 10), frontend.Rand(seed+4, 10)
	mlp = func(x *frontend.Tensor) *frontend.Tensor {
		return x.MatMul(w1).Add(b1).Relu().MatMul(w2).Add(b2)
	}
	head = func(y *frontend.Tensor) *frontend.Tensor { return y.Tanh().Softmax(-1) }
	return mlp, head
}

// TestGPUDeviceTensors checks, on fresh random data, that a chain of
// compiled calls on GPU tensors computes what the interpreter does, keeps
// its results on the GPU, copies nothing between host and GPU until a
// result is read, and reads each result once; in both the default mode
// and reduce-overhead (CUDA graphs, whose buffers take device copies).
func TestGPUDeviceTensors(t *testing.T) {
	rt := gpu(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	mlp, head := twoLayers(seed)
	refM := frontend.MustCompile(mlp, frontend.Options{Backend: frontend.InterpBackend})
	refH := frontend.MustCompile(head, frontend.Options{Backend: frontend.InterpBackend})
	for _, mode := range []frontend.Mode{frontend.ModeDefault, frontend.ModeReduceOverhead} {
		t.Run(string(mode), func(t *testing.T) {
			opts := frontend.Options{Backend: frontend.NVPTXBackend, Mode: mode}
			m, h := frontend.MustCompile(mlp, opts), frontend.MustCompile(head, opts)
			for i := range 3 {
				x := frontend.Rand(seed+10+uint64(i), 4, 16)
				xg := x.ToGPU()
				if !xg.IsGPU() || xg.Err() != nil {
					t.Fatalf("ToGPU: %v", xg)
				}
				before := rt.Transfers()
				y := call(t, m, xg)[0]
				z := call(t, h, y)[0]
				d := rt.Transfers().Sub(before)
				if !y.IsGPU() || !z.IsGPU() {
					t.Fatalf("results %v, %v: want them on the GPU", y, z)
				}
				// The first call of each compiles and uploads the captured weights.
				if i > 0 && (d.HtoD != 0 || d.DtoH != 0) {
					t.Errorf("call %d: a chain on GPU tensors copied between host and GPU: %v", i, d)
				}
				if i > 0 && mode == frontend.ModeDefault && d.DtoD != 0 {
					t.Errorf("call %d: the default mode copied on the device: %v", i, d)
				}
				before = rt.Transfers()
				got := z.Float32s()
				_ = z.Item() // a second read downloads nothing
				if d := rt.Transfers().Sub(before); d.DtoH != 1 || d.HtoD != 0 {
					t.Errorf("two reads of one result: %v, want one download", d)
				}
				wantY := call(t, refM, x)[0]
				nearTol(t, "mlp", y.Float32s(), wantY.Float32s(), 1e-5)
				nearTol(t, "chain", got, call(t, refH, wantY)[0].Float32s(), 1e-5)
				// A GPU tensor into an interpreter backend is downloaded.
				nearTol(t, "interp on a GPU tensor", call(t, refH, y)[0].Float32s(), got, 1e-5)
			}
			if err := frontend.Synchronize(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGPUFreeAndCleanup checks that GPU memory returns to the allocator
// on Free and when results become unreachable.
func TestGPUFreeAndCleanup(t *testing.T) {
	rt := gpu(t)
	mlp, _ := twoLayers(99)
	c := frontend.MustCompile(mlp, frontend.Options{Backend: frontend.NVPTXBackend})
	xg := frontend.Rand(5, 256, 16).ToGPU()
	call(t, c, xg)
	// The libraries' start-up (the backend's Start) allocates in the
	// background: it ends first.
	if err := frontend.Settle(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	base := rt.Allocator().Stats().Allocated
	y := call(t, c, xg)[0]
	held := rt.Allocator().Stats().Allocated
	if held <= base {
		t.Fatalf("a result on the GPU: %d bytes allocated, want more than %d", held, base)
	}
	if err := y.Free(); err != nil {
		t.Fatal(err)
	}
	if got := rt.Allocator().Stats().Allocated; got >= held {
		t.Errorf("after Free: %d bytes allocated, want less than %d", got, held)
	}
	if y.Float32s() != nil || y.Err() == nil || !strings.Contains(y.Err().Error(), "device_gpu_test.go:") ||
		!strings.Contains(y.Err().Error(), "after Free") {
		t.Errorf("a result read after Free: %v, want an error located at the Free", y.Err())
	}
	for range 20 {
		call(t, c, xg) // results dropped
	}
	deadline := time.Now().Add(5 * time.Second)
	for rt.Allocator().Stats().Allocated > base && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := rt.Allocator().Stats().Allocated; got > base {
		t.Errorf("%d bytes allocated after 20 dropped results, want %d", got, base)
	}
	if err := frontend.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// benchCall times cached calls of the MLP on x, after a warm-up, and
// reports the GPU time of its kernels and the rest of a call (overhead).
// Host inputs are eight distinct tensors in turn, so that every call
// uploads one (the same tensor again would not be copied again). With
// free, each result's GPU memory is released at once; without, it waits
// for the garbage collector.
func benchCall(b *testing.B, mode frontend.Mode, onGPU, read, free bool) {
	gpu(b)
	mlp, _ := twoLayers(7)
	c := frontend.MustCompile(mlp, frontend.Options{Backend: frontend.NVPTXBackend, Mode: mode})
	xs := make([]*frontend.Tensor, 8)
	for i := range xs {
		xs[i] = frontend.Rand(uint64(i), 4, 16)
		if onGPU {
			xs[i] = xs[i].ToGPU()
		}
	}
	for _, x := range xs {
		if _, err := c.Call(x); err != nil {
			b.Fatal(err)
		}
	}
	kernels, err := c.KernelTime(50, xs[0])
	if err != nil {
		b.Fatal(err)
	}
	if err := frontend.Synchronize(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	n := 0
	for b.Loop() {
		res, err := c.Call(xs[n%len(xs)])
		if err != nil {
			b.Fatal(err)
		}
		if read {
			res[0].Float32s()
		}
		if free {
			if err := res[0].Free(); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
	if err := frontend.Synchronize(); err != nil {
		b.Fatal(err)
	}
	per := time.Since(start) / time.Duration(n)
	b.ReportMetric(float64(kernels.Nanoseconds())/1e3, "kernel-µs")
	b.ReportMetric(float64((per-kernels).Nanoseconds())/1e3, "overhead-µs")
}

// BenchmarkGPUCachedCall is the per-call cost of a cached graph on the
// GPU: inputs on the host (uploaded each call, result read) or on the GPU
// (nothing copied), in the default mode and reduce-overhead.
func BenchmarkGPUCachedCall(b *testing.B) {
	b.Run("host-read", func(b *testing.B) { benchCall(b, frontend.ModeDefault, false, true, false) })
	b.Run("host", func(b *testing.B) { benchCall(b, frontend.ModeDefault, false, false, true) })
	b.Run("gpu", func(b *testing.B) { benchCall(b, frontend.ModeDefault, true, false, true) })
	b.Run("gpu-gc", func(b *testing.B) { benchCall(b, frontend.ModeDefault, true, false, false) })
	b.Run("gpu-reduce-overhead", func(b *testing.B) { benchCall(b, frontend.ModeReduceOverhead, true, false, true) })
}

// TestGPUGraphBreakReadsDeviceResult checks a graph break on the nvptx
// backend: the value read into Go (Item) is a result of the first graph,
// which stays on the GPU, and the second graph takes it as an input; the
// output matches the interpreter's.
func TestGPUGraphBreakReadsDeviceResult(t *testing.T) {
	gpu(t)
	normalize := func(x *frontend.Tensor) *frontend.Tensor {
		norm := x.Mul(x).Sum(nil, false).Sqrt()
		if norm.Item() < 1e-6 {
			return x
		}
		return x.Div(norm).Tanh()
	}
	c := frontend.MustCompile(normalize, frontend.Options{Backend: frontend.NVPTXBackend})
	ref := frontend.MustCompile(normalize, frontend.Options{Backend: frontend.InterpBackend})
	for i, in := range [][]float32{{3, 4}, {0, 0}, {6, 8, 1}} {
		x := frontend.FromSlice(in, len(in))
		got, want := call(t, c, x)[0], call(t, ref, x)[0]
		nearTol(t, fmt.Sprintf("call %d", i), got.Float32s(), want.Float32s(), 1e-6)
	}
	if s := c.Stats(); s.GraphBreaks == 0 {
		t.Errorf("stats %+v: want graph breaks", s)
	}
}

// TestGPUDonate feeds a reduce-overhead call's result back as its next
// argument, donated, as a decoding step's KV cache is: from the second
// call on, the twin CUDA graphs read it where the previous replay wrote
// it (no copy) and nothing is copied out of the graphs' pools (x alone is
// copied in), the last result matches the host's arithmetic on fresh
// random data, and a donated tensor fails afterwards with an error
// located at its Donate (unless it had a host copy, which stays).
func TestGPUDonate(t *testing.T) {
	rt := gpu(t)
	c := frontend.MustCompile(func(s, x *frontend.Tensor) *frontend.Tensor { return s.Mul(x).Add(x) },
		frontend.Options{Backend: frontend.NVPTXBackend, Mode: frontend.ModeReduceOverhead})
	const n = 4096
	want := frontend.Rand(91, n).Float32s()
	state := frontend.FromSlice(want).ToGPU()
	for call := range 5 {
		xs := frontend.Rand(uint64(100+call), n).Float32s()
		x := frontend.FromSlice(xs).ToGPU()
		for i := range want {
			want[i] = want[i]*xs[i] + xs[i]
		}
		before := rt.Transfers()
		_, _, line, _ := runtime.Caller(0)
		if err := state.Donate(); err != nil {
			t.Fatal(err)
		}
		out, err := c.Call(state, x)
		if err != nil {
			t.Fatal(err)
		}
		if dtod := rt.Transfers().Sub(before).DtoD; call > 0 && dtod != 1 {
			// x into the graph's buffer; the state read in place.
			t.Errorf("call %d: %d device copies, want 1", call, dtod)
		}
		if call == 0 {
			// The first state had a host copy (ToGPU's): it keeps it.
			if err := state.Err(); err != nil {
				t.Errorf("a donated tensor with a host copy: %v", err)
			}
		} else if err := state.Err(); err == nil || !strings.Contains(err.Error(), "donated") || !strings.Contains(err.Error(), fmt.Sprintf("device_gpu_test.go:%d", line+1)) {
			t.Errorf("call %d: the donated tensor: %v, want an error located at line %d", call, err, line+1)
		}
		state = out[0]
	}
	got := state.Float32s()
	if err := state.Err(); err != nil {
		t.Fatal(err)
	}
	nearTol(t, "the fifth state", got, want, 1e-4)
}

// TestGPUCompileLog checks the compile topic: a graph's first call on the
// nvptx backend logs its phases and kernels, its longest driver compiles
// and its first run, and a cached call nothing.
func TestGPUCompileLog(t *testing.T) {
	gpu(t)
	var buf strings.Builder
	defer logs.SetOutput(logs.SetOutput(&buf))
	logs.Enable("compile")
	defer logs.Disable()
	mlp, _ := twoLayers(7)
	c, err := frontend.Compile(mlp, frontend.Options{Backend: frontend.NVPTXBackend})
	if err != nil {
		t.Fatal(err)
	}
	x := frontend.Rand(8, 4, 16)
	if _, err := c.Call(x); err != nil {
		t.Fatal(err)
	}
	// The libraries' start-up calls log from the background.
	if err := frontend.Settle(); err != nil {
		t.Fatal(err)
	}
	first := buf.String()
	for _, want := range []string{" kernels), device wait ", "driver modules, JIT", "compile: graph0: longest driver compiles: ", "compile: graph0: first run queued in "} {
		if strings.Count(first, want) != 1 {
			t.Errorf("the first call's compile log has %q %d times, want once:\n%s", want, strings.Count(first, want), first)
		}
	}
	if !strings.Contains(first, " ms JIT in ") {
		t.Errorf("no compile in the longest driver compiles:\n%s", first)
	}
	if _, err := c.Call(x); err != nil {
		t.Fatal(err)
	}
	if more := strings.TrimPrefix(buf.String(), first); more != "" {
		t.Errorf("a cached call logged under compile:\n%s", more)
	}
}

// TestGPUArgmax checks a greedy decoder's argmax over a long last axis
// (graph-split-reductions makes it two row reductions) on the GPU against
// the host on fresh random data with ties and NaNs: the first largest
// element wins, and the first NaN.
func TestGPUArgmax(t *testing.T) {
	gpu(t)
	const rows, n = 3, 50304
	vs := frontend.Rand(uint64(time.Now().UnixNano()), rows, n).Float32s()
	for i := range vs {
		vs[i] = float32(math.Round(float64(vs[i]) * 8)) // ties
	}
	vs[n+777] = float32(math.NaN())
	vs[n+9000] = float32(math.NaN())
	want := make([]int64, rows)
	for r := range rows {
		row := vs[r*n : (r+1)*n]
		for j, v := range row {
			if best := row[want[r]]; best == best && (v > best || v != v) {
				want[r] = int64(j)
			}
		}
	}
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Argmax(1, true) },
		frontend.Options{Backend: frontend.NVPTXBackend})
	out, err := c.Call(frontend.FromSlice(vs, rows, n).ToGPU())
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].Int64s(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("argmax %v, want %v", got, want)
	}
}
