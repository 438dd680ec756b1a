package frontend

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/autotune"
	"github.com/strata-ir/strata/runtime/exec"
)

// loweredLayoutCheck is a backend that chooses the channels-last layout
// for training steps, as the nvptx backend does (trainingLayout), checks
// that each graph lowered through the nvptx backend's GPU pipeline with
// the libraries (autotune.LowerPipelineFor) computes what the graph does
// in the interpreter, and runs the graph in the interpreter.
type loweredLayoutCheck struct {
	t      *testing.T
	mu     sync.Mutex
	graphs []string
	// nhwc and filters count the channels-last library convolutions and
	// the library's filter gradients in the lowered graphs.
	nhwc, filters int
}

func (*loweredLayoutCheck) trainingLayout(*Graph) string { return "graph-channels-last" }

func (c *loweredLayoutCheck) Compile(g *Graph) (Executable, error) {
	src := ir.Sprint(g.Module, ir.PrintOptions{Generic: true})
	cfg := autotune.AssumedConfig(exec.ModeDefault, g.Module, true)
	pipeline := "builtin.module(" + autotune.LowerPipelineFor(cfg) + ")"
	if err := passtest.CheckSemantics(&passtest.Program{Func: g.Func, Source: src}, pipeline, 1); err != nil {
		c.t.Errorf("%s lowered by %s: %.3000v", g.Func, pipeline, err)
	}
	lowered, err := ir.Parse(irContext(), src, ir.ParseOptions{Filename: "graph.mlir"})
	if err != nil {
		c.t.Fatal(err)
	}
	pm, err := passes.Parse(pipeline)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := pm.Run(irContext(), lowered); err != nil {
		c.t.Fatal(err)
	}
	text := ir.Sprint(lowered, ir.PrintOptions{Generic: true})
	c.mu.Lock()
	c.graphs = append(c.graphs, g.Func)
	c.nhwc += strings.Count(text, `layout = "NHWC"`)
	c.filters += strings.Count(text, `direction = "backward_filter"`)
	c.mu.Unlock()
	be, _ := LookupBackend(InterpBackend)
	return be.Compile(g)
}

// TestChannelsLastTrainingStepLowered differentiates a small residual
// block in bf16 with float32 batch-norm statistics (a stem convolution,
// batch norm and ReLU, a padded max pool, a 3×3 convolution and a strided
// 1×1 projection, each with its batch norm, their sum, a mean loss) on
// 2 images of 32×32, as a training step on the nvptx backend is, channels
// last; its forward and backward graphs, lowered through the GPU
// pipeline with the libraries (cuDNN convolutions and filter gradients,
// batch-norm statistics split into column partial sums whose second
// halves share a kernel, vectorized padded copies), compute what the
// graphs do. (Lanes of a padded copy all yielding the first lane's value
// fail it.)
func TestChannelsLastTrainingStepLowered(t *testing.T) {
	chk := &loweredLayoutCheck{t: t}
	RegisterBackend("lowered-layout-check", chk)
	bn := func(x *Tensor, c int) *Tensor {
		f := x.Cast(Float32)
		axes := []int{0, 2, 3}
		mean := f.Mean(axes, true)
		d := f.Sub(mean)
		v := d.Mul(d).Mean(axes, true)
		return d.Mul(v.Add(Full(Float32, 1e-5)).Rsqrt()).Cast(BFloat16)
	}
	conv := func(x, w *Tensor, stride, pad int) *Tensor {
		return Conv2D(x, w.Cast(BFloat16), nil, Conv2DOptions{Strides: []int{stride, stride}, Padding: []int{pad, pad}})
	}
	block := func(x, w0, w1, w2 *Tensor) *Tensor {
		h := bn(conv(x.Cast(BFloat16), w0, 1, 1), 8).Relu()
		// A 3×3 max pool, stride 2, padding 1: the padded copy and its
		// windows' gradient.
		p := h.Pad([]int{0, 0, 1, 1}, []int{0, 0, 1, 1}, -1e30)
		ps := p.Shape()
		oh := (ps[2]-3)/2 + 1
		var m *Tensor
		for i := range 3 {
			for j := range 3 {
				s := p.Slice([]int{0, 0, i, j}, []int{ps[0], ps[1], i + 2*(oh-1) + 1, j + 2*(oh-1) + 1}, []int{1, 1, 2, 2})
				if m == nil {
					m = s
				} else {
					m = m.Max(s)
				}
			}
		}
		a := bn(conv(m, w1, 1, 1), 8).Relu()
		b := bn(conv(m, w2, 2, 0), 16)
		a2 := bn(conv(a, w2, 2, 0), 16)
		return a2.Add(b).Relu().Cast(Float32).Mean(nil, false)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	randn := func(shape ...int) *Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64()) * 0.5
		}
		return FromSlice(v, shape...)
	}
	step := ValueAndGrad(block, 1, 2, 3).WithOptions(Options{Backend: "lowered-layout-check"})
	if _, _, err := step.Call(randn(2, 8, 32, 32), randn(8, 8, 3, 3), randn(8, 8, 3, 3), randn(16, 8, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(chk.graphs, ","); !strings.Contains(got, "_fwd") || !strings.Contains(got, "_bwd") {
		t.Errorf("graphs lowered %q, want a forward and a backward pass", got)
	}
	// Channels last: the 3×3 convolutions and their gradients on cuDNN
	// (the 1×1 ones are products).
	if chk.nhwc < 4 || chk.filters < 2 {
		t.Errorf("%d channels-last library convolutions, %d filter gradients: want the step channels last on the libraries", chk.nhwc, chk.filters)
	}
}
