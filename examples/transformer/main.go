// Command transformer runs one pre-norm transformer block (layer norm,
// causal self-attention with a residual, layer norm, a GELU MLP with a
// residual) compiled with frontend.Compile, on two sequence lengths.
//
//	go run ./examples/transformer [-backend interp|eager|nvptx]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/strata-ir/strata/frontend"
)

func main() {
	backend := flag.String("backend", "", "the frontend backend (default: nvptx where a GPU is present, else interp)")
	flag.Parse()
	if err := run(os.Stdout, *backend); err != nil {
		fmt.Fprintln(os.Stderr, "transformer:", err)
		os.Exit(1)
	}
}

const dModel, heads, dFF = 32, 4, 64

// block holds the weights of one transformer block.
type block struct {
	ln1w, ln1b, wq, wk, wv, wo, ln2w, ln2b, w1, b1, w2, b2 *frontend.Tensor
}

func newBlock() *block {
	scaled := func(seed uint64, shape ...int) *frontend.Tensor {
		// Uniform in [-1/√fan_in, 1/√fan_in).
		r := frontend.Rand(seed, shape...)
		a := float64(1 / math.Sqrt(float64(shape[0])))
		return r.Mul(frontend.Full(frontend.Float32, 2*a, 1)).Sub(frontend.Full(frontend.Float32, a, 1))
	}
	return &block{
		ln1w: frontend.Ones(frontend.Float32, dModel), ln1b: frontend.Zeros(frontend.Float32, dModel),
		wq: scaled(1, dModel, dModel), wk: scaled(2, dModel, dModel), wv: scaled(3, dModel, dModel), wo: scaled(4, dModel, dModel),
		ln2w: frontend.Ones(frontend.Float32, dModel), ln2b: frontend.Zeros(frontend.Float32, dModel),
		w1: scaled(5, dModel, dFF), b1: frontend.Zeros(frontend.Float32, dFF),
		w2: scaled(6, dFF, dModel), b2: frontend.Zeros(frontend.Float32, dModel),
	}
}

// forward maps x [batch, seq, dModel] to the same shape.
func (b *block) forward(x *frontend.Tensor) *frontend.Tensor {
	shape := x.Shape()
	n, seq, dh := shape[0], shape[1], dModel/heads
	split := func(t *frontend.Tensor) *frontend.Tensor { // [n, seq, d] -> [n, heads, seq, dh]
		return t.Reshape(n, seq, heads, dh).Transpose(0, 2, 1, 3)
	}
	h := x.LayerNorm(b.ln1w, b.ln1b, -1, 1e-5)
	q, k, v := split(h.MatMul(b.wq)), split(h.MatMul(b.wk)), split(h.MatMul(b.wv))
	a := frontend.Attention(q, k, v, frontend.AttentionOptions{Causal: true})
	a = a.Transpose(0, 2, 1, 3).Reshape(n, seq, dModel).MatMul(b.wo)
	x = x.Add(a)
	h = x.LayerNorm(b.ln2w, b.ln2b, -1, 1e-5)
	h = h.MatMul(b.w1).Add(b.b1).Gelu("tanh").MatMul(b.w2).Add(b.b2)
	return x.Add(h)
}

func run(w io.Writer, backend string) error {
	blk := newBlock()
	c, err := frontend.Compile(blk.forward, frontend.Options{Backend: backend, Fullgraph: true})
	if err != nil {
		return err
	}
	for _, seq := range []int{8, 16} {
		x := frontend.Rand(uint64(10+seq), 2, seq, dModel)
		res, err := c.Call(x)
		if err != nil {
			return err
		}
		y := res[0]
		mean := y.Mean(nil, false).Item()
		if err := y.Err(); err != nil {
			return err
		}
		if math.IsNaN(mean) || math.IsInf(mean, 0) {
			return fmt.Errorf("seq %d: non-finite output", seq)
		}
		fmt.Fprintf(w, "transformer block on %s: input %v -> output %v, mean %.5f\n", c.Backend(), x.Shape(), y.Shape(), mean)
	}
	fmt.Fprintf(w, "first call: %v\n", c.CompileTimes())
	fmt.Fprintf(w, "stats: %+v\n", c.Stats())
	return nil
}
