// Command mlp runs a two-layer perceptron compiled with frontend.Compile
// and checks it against the same computation written in plain Go.
//
//	go run ./examples/mlp [-backend interp|eager|nvptx|cpu] [-mode default|reduce-overhead]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/runtime/exec"
)

func main() {
	backend := flag.String("backend", "", "the frontend backend (default: nvptx where a GPU is present, else cpu where LLVM's tools are, else interp)")
	mode := flag.String("mode", string(frontend.ModeDefault), "the compile mode (default, reduce-overhead, ...)")
	flag.Parse()
	if err := run(os.Stdout, *backend, frontend.Mode(*mode)); err != nil {
		fmt.Fprintln(os.Stderr, "mlp:", err)
		os.Exit(1)
	}
}

const batch, in, hidden, out = 4, 16, 32, 10

func run(w io.Writer, backend string, mode frontend.Mode) error {
	w1, b1 := frontend.Rand(1, in, hidden), frontend.Rand(2, hidden)
	w2, b2 := frontend.Rand(3, hidden, out), frontend.Rand(4, out)
	mlp := func(x *frontend.Tensor) *frontend.Tensor {
		h := x.MatMul(w1).Add(b1).Relu()
		return h.MatMul(w2).Add(b2).Softmax(-1)
	}
	c, err := frontend.Compile(mlp, frontend.Options{Backend: backend, Mode: mode})
	if err != nil {
		return err
	}
	x := frontend.Rand(5, batch, in)
	res, err := c.Call(x)
	if err != nil {
		return err
	}
	got := res[0].Float32s()
	want := reference(x.Float32s(), w1.Float32s(), b1.Float32s(), w2.Float32s(), b2.Float32s())
	worst := 0.0
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i]-want[i])))
	}
	fmt.Fprintf(w, "mlp %dx%d -> %d -> %d, backend %s, mode %s: output %v\n", batch, in, hidden, out, c.Backend(), mode, res[0].Shape())
	fmt.Fprintf(w, "row 0: %.4f\n", got[:out])
	fmt.Fprintf(w, "max |compiled - plain Go| = %.2g\n", worst)
	fmt.Fprintf(w, "first call: %v\n", c.CompileTimes())
	if err := timeCalls(w, c, x); err != nil {
		return err
	}
	if worst > 1e-5 {
		return fmt.Errorf("compiled result differs from plain Go by %g", worst)
	}
	return nil
}

// timeCalls times calls that pass the cached graph's guards and run it.
// On the GPU it separates what a call costs beyond its kernels: calls on
// host inputs (each call uploads its input; "read" also downloads the
// result), calls on inputs already on the GPU (nothing is copied, calls
// queue their kernels without waiting), and the kernels' own GPU time.
func timeCalls(w io.Writer, c *frontend.Compiled, x *frontend.Tensor) error {
	const calls = 1000
	// Distinct host inputs, so that every call uploads one (a tensor
	// passed again is not copied again).
	xs := make([]*frontend.Tensor, 8)
	for i := range xs {
		xs[i] = frontend.Rand(uint64(10+i), batch, in)
	}
	// loop returns the host's time to issue a call and the wall time per
	// call, the queued GPU work included. With free, each result's GPU
	// memory is released at once (as Python's reference counting does for
	// torch); without, it waits for the garbage collector, and the caching
	// allocator asks the driver for new blocks meanwhile.
	loop := func(inputs []*frontend.Tensor, read, free bool) (issue, wall time.Duration, err error) {
		for _, x := range inputs { // warm: each input's first call
			if _, err := c.Call(x); err != nil {
				return 0, 0, err
			}
		}
		if err := frontend.Synchronize(); err != nil {
			return 0, 0, err
		}
		start := time.Now()
		for i := range calls {
			res, err := c.Call(inputs[i%len(inputs)])
			if err != nil {
				return 0, 0, err
			}
			if read && res[0].Float32s() == nil {
				return 0, 0, res[0].Err()
			}
			if free {
				if err := res[0].Free(); err != nil {
					return 0, 0, err
				}
			}
		}
		issue = time.Since(start) / calls
		if err := frontend.Synchronize(); err != nil { // the queued kernels count
			return 0, 0, err
		}
		return issue, time.Since(start) / calls, nil
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	_, hostRead, err := loop(xs, true, false)
	if err != nil {
		return err
	}
	xg := x.ToGPU()
	switch {
	case errors.Is(xg.Err(), frontend.ErrNoGPUBackend) || xg.Err() == nil && !onGPU(c, xg):
		// No GPU, or a backend that runs on the host.
		fmt.Fprintf(w, "cached call: %.1f µs (mean of %d)\n", us(hostRead), calls)
		return nil
	case xg.Err() != nil:
		return xg.Err()
	}
	_, host, err := loop(xs, false, true)
	if err != nil {
		return err
	}
	gpus := make([]*frontend.Tensor, len(xs))
	for i, x := range xs {
		if gpus[i] = x.ToGPU(); gpus[i].Err() != nil {
			return gpus[i].Err()
		}
	}
	_, gcDev, err := loop(gpus, false, false)
	if err != nil {
		return err
	}
	before := gpuTransfers()
	issue, dev, err := loop(gpus, false, true)
	if err != nil {
		return err
	}
	copies := gpuTransfers().Sub(before)
	kernels, err := c.KernelTime(100, gpus[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "cached call, host input, result read: %.1f µs (mean of %d)\n", us(hostRead), calls)
	fmt.Fprintf(w, "cached call, host input, result left on the GPU: %.1f µs\n", us(host))
	fmt.Fprintf(w, "cached call, GPU-resident input and result: %.1f µs (host issue %.1f µs; copies: %v)\n", us(dev), us(issue), copies)
	fmt.Fprintf(w, "  the same, results left to the garbage collector: %.1f µs\n", us(gcDev))
	fmt.Fprintf(w, "kernels' own GPU time: %.1f µs (median, do_bench method)\n", us(kernels))
	fmt.Fprintf(w, "per-call overhead (GPU-resident call - kernels): %.1f µs\n", us(dev-kernels))
	return nil
}

// onGPU reports whether c's results for x stay on the GPU (the nvptx
// backend).
func onGPU(c *frontend.Compiled, x *frontend.Tensor) bool {
	res, err := c.Call(x)
	return err == nil && res[0].IsGPU()
}

// gpuTransfers counts the runtime's copies (zero without a GPU).
func gpuTransfers() exec.Transfers {
	rt, err := frontend.GPURuntime()
	if err != nil {
		return exec.Transfers{}
	}
	return rt.Transfers()
}

// reference computes softmax(relu(x·w1 + b1)·w2 + b2) with loops.
func reference(x, w1, b1, w2, b2 []float32) []float32 {
	h := make([]float32, batch*hidden)
	for i := range batch {
		for j := range hidden {
			s := b1[j]
			for k := range in {
				s += x[i*in+k] * w1[k*hidden+j]
			}
			h[i*hidden+j] = max(s, 0)
		}
	}
	y := make([]float32, batch*out)
	for i := range batch {
		m := float32(math.Inf(-1))
		for j := range out {
			s := b2[j]
			for k := range hidden {
				s += h[i*hidden+k] * w2[k*out+j]
			}
			y[i*out+j] = s
			m = max(m, s)
		}
		var sum float32
		for j := range out {
			y[i*out+j] = float32(math.Exp(float64(y[i*out+j] - m)))
			sum += y[i*out+j]
		}
		for j := range out {
			y[i*out+j] /= sum
		}
	}
	return y
}
