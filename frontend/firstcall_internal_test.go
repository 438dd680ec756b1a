package frontend

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/exec"
)

// ptxDump names a folder to write the PTX of the first-call programs to
// (go test -run TestFirstCallPTX -ptxdump DIR), to compare code
// generation before and after a change.
var ptxDump = flag.String("ptxdump", "", "write the PTX of TestFirstCallPTX's programs to this folder")

// errGenerated is the error of a first call compiled by captureBackend:
// its code was generated, not run.
var errGenerated = ErrPTXOnly

// firstCallProgram is a compiled function and the inputs of its calls, as
// an example program makes its first calls.
type firstCallProgram struct {
	name  string
	fn    any
	calls [][]*Tensor
}

// firstCallPrograms returns examples/transformer's block (two sequence
// lengths: two graphs) and examples/mlp, with the same sizes.
func firstCallPrograms() []firstCallProgram {
	const dModel, heads, dFF = 32, 4, 64
	scaled := func(seed uint64, shape ...int) *Tensor {
		r := Rand(seed, shape...)
		a := float64(1 / math.Sqrt(float64(shape[0])))
		return r.Mul(Full(Float32, 2*a, 1)).Sub(Full(Float32, a, 1))
	}
	ln1w, ln1b := Ones(Float32, dModel), Zeros(Float32, dModel)
	wq, wk, wv, wo := scaled(1, dModel, dModel), scaled(2, dModel, dModel), scaled(3, dModel, dModel), scaled(4, dModel, dModel)
	ln2w, ln2b := Ones(Float32, dModel), Zeros(Float32, dModel)
	w1, b1, w2, b2 := scaled(5, dModel, dFF), Zeros(Float32, dFF), scaled(6, dFF, dModel), Zeros(Float32, dModel)
	block := func(x *Tensor) *Tensor {
		shape := x.Shape()
		n, seq, dh := shape[0], shape[1], dModel/heads
		split := func(t *Tensor) *Tensor { return t.Reshape(n, seq, heads, dh).Transpose(0, 2, 1, 3) }
		h := x.LayerNorm(ln1w, ln1b, -1, 1e-5)
		q, k, v := split(h.MatMul(wq)), split(h.MatMul(wk)), split(h.MatMul(wv))
		a := Attention(q, k, v, AttentionOptions{Causal: true})
		a = a.Transpose(0, 2, 1, 3).Reshape(n, seq, dModel).MatMul(wo)
		x = x.Add(a)
		h = x.LayerNorm(ln2w, ln2b, -1, 1e-5)
		h = h.MatMul(w1).Add(b1).Gelu("tanh").MatMul(w2).Add(b2)
		return x.Add(h)
	}
	mw1, mb1, mw2, mb2 := Rand(1, 16, 32), Rand(2, 32), Rand(3, 32, 10), Rand(4, 10)
	mlp := func(x *Tensor) *Tensor {
		return x.MatMul(mw1).Add(mb1).Relu().MatMul(mw2).Add(mb2).Softmax(-1)
	}
	return []firstCallProgram{
		{"transformer", block, [][]*Tensor{{Rand(18, 2, 8, dModel)}, {Rand(26, 2, 16, dModel)}}},
		{"mlp", mlp, [][]*Tensor{{Rand(5, 4, 16)}}},
	}
}

// generated is what the capturing backend kept of one graph: its PTX, the
// phases of its compile and the lowered module.
type generated struct {
	ptx    map[string]string
	times  CompileTimes
	module string // the lowered module's text, with -ptxdump
}

// captureBackend registers, under a name of its own, a PTXOnly backend
// (the nvptx backend's host part: passes and code generation, everything
// before the device, for the capability it picks without a device) that
// keeps what it generated; calls then fail with errGenerated. It returns
// the name and the list it appends to.
func captureBackend(t testing.TB) (string, *[]generated) {
	var (
		mu  sync.Mutex
		out []generated
	)
	name := fmt.Sprintf("capture-%s-%p", t.Name(), &out)
	RegisterBackend(name, PTXOnly(PTXOnlyOptions{Keep: func(g *Graph, prog *exec.Program, times CompileTimes) {
		gen := generated{ptx: prog.PTX(), times: times}
		if *ptxDump != "" {
			gen.module = ir.Sprint(g.Module, ir.PrintOptions{})
		}
		mu.Lock()
		out = append(out, gen)
		mu.Unlock()
	}}))
	return name, &out
}

// firstCalls compiles p from scratch with backend and makes its calls.
func firstCalls(t testing.TB, p firstCallProgram, backend string) {
	c, err := Compile(p.fn, Options{Backend: backend, Fullgraph: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range p.calls {
		if _, err := c.Call(in...); !errors.Is(err, errGenerated) {
			t.Fatalf("%s: want the capturing backend's stop, got %v", p.name, err)
		}
	}
}

// TestFirstCallPTX generates the examples' programs, one graph per
// call; with -ptxdump it writes the PTX out. (bench's
// TestModelsHostCompile checks that the PTX does not depend on how many
// goroutines generate it.)
func TestFirstCallPTX(t *testing.T) {
	name, got := captureBackend(t)
	for _, p := range firstCallPrograms() {
		*got = nil
		firstCalls(t, p, name)
		if len(*got) != len(p.calls) {
			t.Fatalf("%s: %d graphs compiled, want %d", p.name, len(*got), len(p.calls))
		}
		for i, g := range *got {
			var mods []string
			for m := range g.ptx {
				mods = append(mods, m)
			}
			sort.Strings(mods)
			if *ptxDump != "" {
				f := filepath.Join(*ptxDump, fmt.Sprintf("%s_graph%d.mlir", p.name, i))
				if err := os.WriteFile(f, []byte(g.module), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, m := range mods {
				if *ptxDump != "" {
					f := filepath.Join(*ptxDump, fmt.Sprintf("%s_graph%d_%s.ptx", p.name, i, m))
					if err := os.WriteFile(f, []byte(g.ptx[m]), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}

// BenchmarkFirstCall compiles the examples' programs from scratch as their
// first calls do (trace, passes, code generation to PTX; not the device's
// load) and reports each phase in ms per program run.
func BenchmarkFirstCall(b *testing.B) {
	for _, p := range firstCallPrograms() {
		b.Run(p.name, func(b *testing.B) {
			name, got := captureBackend(b)
			var total CompileTimes
			for b.Loop() {
				*got = nil
				start := time.Now()
				firstCalls(b, p, name)
				total.Device += time.Since(start)
				for _, g := range *got {
					total.Passes += g.times.Passes
					total.Codegen += g.times.Codegen
				}
			}
			n := float64(b.N) * 1e6
			b.ReportMetric(float64(total.Passes)/n, "passes-ms")
			b.ReportMetric(float64(total.Codegen)/n, "codegen-ms")
			b.ReportMetric(float64(total.Device-total.Passes-total.Codegen)/n, "trace-ms")
		})
	}
}
