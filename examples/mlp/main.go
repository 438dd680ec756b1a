// Command mlp runs a two-layer perceptron compiled with frontend.Compile
// and checks it against the same computation written in plain Go.
//
//	go run ./examples/mlp [-backend interp|eager|nvptx]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/strata-ir/strata/frontend"
)

func main() {
	backend := flag.String("backend", frontend.DefaultBackend, "the frontend backend")
	flag.Parse()
	if err := run(os.Stdout, *backend); err != nil {
		fmt.Fprintln(os.Stderr, "mlp:", err)
		os.Exit(1)
	}
}

const batch, in, hidden, out = 4, 16, 32, 10

func run(w io.Writer, backend string) error {
	w1, b1 := frontend.Rand(1, in, hidden), frontend.Rand(2, hidden)
	w2, b2 := frontend.Rand(3, hidden, out), frontend.Rand(4, out)
	mlp := func(x *frontend.Tensor) *frontend.Tensor {
		h := x.MatMul(w1).Add(b1).Relu()
		return h.MatMul(w2).Add(b2).Softmax(-1)
	}
	c, err := frontend.Compile(mlp, frontend.Options{Backend: backend})
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
	fmt.Fprintf(w, "mlp %dx%d -> %d -> %d on %s: output %v\n", batch, in, hidden, out, backend, res[0].Shape())
	fmt.Fprintf(w, "row 0: %.4f\n", got[:out])
	fmt.Fprintf(w, "max |compiled - plain Go| = %.2g\n", worst)
	fmt.Fprintf(w, "first call: %v\n", c.CompileTimes())
	// Later calls pass the cached graph's guards and run it: the host cost
	// of a call, with its copies in and out, when the kernels are tiny.
	const calls = 200
	start := time.Now()
	for range calls {
		if _, err := c.Call(x); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "cached call: %.1f µs (mean of %d)\n", float64(time.Since(start).Microseconds())/calls, calls)
	if worst > 1e-5 {
		return fmt.Errorf("compiled result differs from plain Go by %g", worst)
	}
	return nil
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
