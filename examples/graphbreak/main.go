// Command graphbreak compiles a function with a data-dependent branch,
// shows the graph break with frontend.Explain, and shows that Fullgraph
// turns the break into an error naming its line.
//
//	STRATA_LOGS=graph_breaks,recompiles go run ./examples/graphbreak
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/strata-ir/strata/frontend"
)

func main() {
	backend := flag.String("backend", "", "the frontend backend (default: nvptx where a GPU is present, else interp)")
	flag.Parse()
	if err := run(os.Stdout, *backend); err != nil {
		fmt.Fprintln(os.Stderr, "graphbreak:", err)
		os.Exit(1)
	}
}

// normalize scales x to unit norm and squashes it with tanh, unless its
// norm is tiny: reading the norm into Go (Item) ends the first graph.
func normalize(x *frontend.Tensor) *frontend.Tensor {
	norm := x.Mul(x).Sum(nil, false).Sqrt()
	if norm.Item() < 1e-6 {
		return x
	}
	return x.Div(norm).Tanh()
}

func run(w io.Writer, backend string) error {
	x := frontend.FromSlice([]float32{3, 4})
	e, err := frontend.Explain(normalize, x)
	if err != nil {
		return err
	}
	fmt.Fprint(w, e)

	c, err := frontend.Compile(normalize, frontend.Options{Backend: backend})
	if err != nil {
		return err
	}
	for _, in := range [][]float32{{3, 4}, {0, 0}, {6, 8}} {
		res, err := c.Call(frontend.FromSlice(in))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "normalize(%v) = %.4f\n", in, res[0].Float32s())
	}
	fmt.Fprintf(w, "first call: %v\n", c.CompileTimes())
	fmt.Fprintf(w, "stats: %+v\n", c.Stats())

	full, err := frontend.Compile(normalize, frontend.Options{Backend: backend, Fullgraph: true})
	if err != nil {
		return err
	}
	_, err = full.Call(x)
	if err == nil {
		return fmt.Errorf("fullgraph accepted a graph break")
	}
	fmt.Fprintf(w, "with Fullgraph: %v\n", err)
	return nil
}
