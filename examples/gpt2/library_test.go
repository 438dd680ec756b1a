package gpt2

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/lower"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// libraryPipeline is the nvptx backend's lowering with the matmuls on
// cuBLASLt (autotune.LowerPipelineFor): the flash attention, graph-fuse
// told that the matmuls run on the library (their epilogues join the
// consumers' kernels: the layer norms' row kernels, the head split), and
// gpu.library_matmul for the products.
var libraryPipeline = "builtin.module(" + togpu.FlashPassName + "," + lower.LowerToLoop("matmul-library=true") +
	",convert-loop-to-gpu{matmul=" + togpu.MatmulCuBLASLt + "},canonicalize,cse)"

// decodePipeline is libraryPipeline with what the GPU pipelines run
// before convert-loop-to-gpu (togpu.BeforeConversion): a decoding step's
// cache updates written into the donated caches.
var decodePipeline = "builtin.module(" + togpu.FlashPassName + "," + lower.LowerToLoop("matmul-library=true") + "," +
	togpu.BeforeConversion + ",convert-loop-to-gpu{matmul=" + togpu.MatmulCuBLASLt + "},canonicalize,cse)"

// checkingBackend registers a backend that runs each graph in the
// interpreter twice, as the graph and lowered by pipeline (the kernels
// simulated, the library products summed in order), compares the results
// (passtest.Compare's tolerance) and returns the graph's; it counts the
// graphs checked.
func checkingBackend(t *testing.T, pipeline string) (string, func() int) {
	var (
		mu      sync.Mutex
		checked int
	)
	name := "library-check-" + t.Name()
	frontend.RegisterBackend(name, frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		text := ir.Sprint(g.Module, ir.PrintOptions{})
		ctx := dialects.NewContext()
		lowered, err := ir.Parse(ctx, text, ir.ParseOptions{Filename: g.Func + ".mlir"})
		if err != nil {
			return nil, err
		}
		pm, err := passes.Parse(pipeline)
		if err != nil {
			return nil, err
		}
		if err := pm.Run(ctx, lowered); err != nil {
			return nil, fmt.Errorf("%s: %w", g.Func, err)
		}
		if err := ir.Verify(lowered); err != nil {
			return nil, err
		}
		ref := g.Module
		return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
			vals := make([]interp.Value, len(in))
			bufs := make([]interp.Value, len(in))
			for i, x := range in {
				vals[i], bufs[i] = x, interp.BufferFromTensor(x)
			}
			want, err := interp.New(ref).Call(g.Func, vals...)
			if err != nil {
				return nil, err
			}
			got, err := interp.New(lowered).Call(g.Func, bufs...)
			if err != nil {
				return nil, fmt.Errorf("%s lowered: %w", g.Func, err)
			}
			out := make([]*interp.Tensor, len(want))
			for i := range want {
				w, _ := want[i].(*interp.Tensor)
				b, ok := got[i].(*interp.Buffer)
				if w == nil || !ok {
					return nil, fmt.Errorf("%s: result %d is %T lowered, %T as a graph", g.Func, i, got[i], want[i])
				}
				gt, err := b.Tensor()
				if err != nil {
					return nil, err
				}
				if err := closeAsBF16(gt, w); err != nil {
					t.Errorf("%s: result %d lowered with the library pipeline: %v", g.Func, i, err)
				}
				out[i] = w
			}
			mu.Lock()
			checked++
			mu.Unlock()
			return out, nil
		}), nil
	}))
	return name, func() int { mu.Lock(); defer mu.Unlock(); return checked }
}

// closeAsBF16 compares got with want at bf16's tolerance whatever their
// type: a mixed-precision step's float32 results (weight gradients of bf16
// products) come through bf16 values, and the flash attention's backward
// kernels round them differently from the graph's attention gradient (a
// bf16 ulp apart on main before any library fusion).
func closeAsBF16(got, want *interp.Tensor) error {
	g, w := got.Float64s(), want.Float64s()
	if len(g) != len(w) || got.ElemType() != want.ElemType() {
		return fmt.Errorf("got %s %v, want %s %v", got.ElemType(), got.Shape(), want.ElemType(), want.Shape())
	}
	tol := passtest.Tolerance(ir.BF16)
	for i := range w {
		if d := math.Abs(g[i] - w[i]); d > tol+tol*math.Abs(w[i]) || math.IsNaN(g[i]) != math.IsNaN(w[i]) {
			return fmt.Errorf("at flat index %d: got %v, want %v (tolerance %g)", i, g[i], w[i], tol)
		}
	}
	return nil
}

// TestLibraryLoweringMatchesGraph runs a bf16 toy model's logits and a
// mixed-precision training step (forward and backward graphs) through
// the library lowering in the interpreter and checks them against the
// graphs: the fusions graph-fuse makes when the matmuls run on a library
// (bias and residual adds in the layer norms' row kernels, the qkv bias in
// the head split, gradients cast in the kernels that sum them) compute
// what the model does.
func TestLibraryLoweringMatchesGraph(t *testing.T) {
	name, checked := checkingBackend(t, libraryPipeline)
	opts := frontend.Options{Backend: name}
	cfg := Config{Vocab: 32, Ctx: 16, D: 32, Heads: 2, Layers: 2, Seed: 3}
	x, y := batch(cfg, 2, 16)

	m := New(cfg)
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, opts)
	if _, _, err := step.Call(x, y); err != nil {
		t.Fatal(err)
	}

	bf := New(cfg)
	if err := nn.Cast(bf, frontend.BFloat16); err != nil {
		t.Fatal(err)
	}
	c, err := nn.Compile(bf, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{bf.Logits(in[0])} }, 1, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(x); err != nil {
		t.Fatal(err)
	}
	if n := checked(); n < 3 {
		t.Errorf("%d graphs checked, want the step's forward and backward and the logits", n)
	}
}

// TestLibraryLoweringKernels lowers a bf16 model's logits with the
// library pipeline and checks what its layers' pointwise work became: the
// four projections' biases are the library products' epilogues (one
// rounding, as PyTorch's linear); per layer one kernel cuts q, k and v out
// of the qkv product (three copies of views, merged), one puts the
// attention's heads back in rows, one applies GELU, and the two layer
// norms' row kernels take the residual adds (no kernel of their own, no
// float32 copy of the residual stream). With the matmuls' epilogues fused
// as for Strata's own kernels, 23 pointwise kernels.
func TestLibraryLoweringKernels(t *testing.T) {
	name, got := loweringBackendWith(t, libraryPipeline)
	cfg := Config{Vocab: 32, Ctx: 16, D: 128, Heads: 2, Layers: 3, Seed: 3} // heads of 64: flash
	bf := New(cfg)
	if err := nn.Cast(bf, frontend.BFloat16); err != nil {
		t.Fatal(err)
	}
	c, err := nn.Compile(bf, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{bf.Logits(in[0])} }, 1, frontend.Options{Backend: name})
	if err != nil {
		t.Fatal(err)
	}
	x, _ := batch(cfg, 2, 16)
	if _, err := c.Call(x); !errors.Is(err, errLowered) {
		t.Fatalf("logits: %v, want the backend's stop", err)
	}
	gs := got()
	if len(gs) != 1 {
		t.Fatalf("%d graphs lowered, want 1", len(gs))
	}
	g := gs[0]
	rows := fmt.Sprintf("memref<%dxf32>", 2*16*cfg.D)
	if n := g.buffers[rows]; n != 0 {
		t.Errorf("%d launches take a float32 %s (the residual stream's copy for a layer norm): want none", n, rows)
	}
	// The embedding's sum and first layer norm, each block's second layer
	// norm and the next block's first (or the final one): row kernels.
	if want := 2*cfg.Layers + 1; g.mappings[togpu.MappingRow] != want {
		t.Errorf("kernels %v: want %d row kernels (the layer norms)", g.mappings, want)
	}
	if want := 3 * cfg.Layers; g.mappings[togpu.MappingPointwise] != want {
		t.Errorf("kernels %v: want %d pointwise kernels (3 a layer: q, k and v heads, heads back to rows, GELU)", g.mappings, want)
	}
	if want := 4 * cfg.Layers; g.biased != want {
		t.Errorf("%d library products add a bias, want %d (4 projections a layer)", g.biased, want)
	}
}

// TestLibraryLoweringDecodes runs greedy decoding of a bf16 toy model
// through the library lowering in the interpreter, checking each step
// against its graph: the decoding step writes its KV caches in place
// (loop-update-in-place: the K and V caches of every layer) and still
// computes what the graph does.
func TestLibraryLoweringDecodes(t *testing.T) {
	cfg := Config{Vocab: 32, Ctx: 16, D: 32, Heads: 2, Layers: 2, Seed: 3}
	newDecoder := func() *Decoder {
		m := New(cfg)
		if err := nn.Cast(m, frontend.BFloat16); err != nil {
			t.Fatal(err)
		}
		return NewDecoder(m, 2, frontend.BFloat16)
	}
	prompt, _ := batch(cfg, 2, 4)

	name, checked := checkingBackend(t, decodePipeline)
	gen, err := NewGenerator(newDecoder(), frontend.Options{Backend: name})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gen.Generate(prompt, 4); err != nil {
		t.Fatal(err)
	}
	if n := checked(); n < 4 {
		t.Errorf("%d calls checked, want the prefill and 3 decoding steps", n)
	}

	lname, got := loweringBackendWith(t, decodePipeline)
	gen, err = NewGenerator(newDecoder(), frontend.Options{Backend: lname})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gen.Generate(prompt, 2); !errors.Is(err, errLowered) {
		t.Fatalf("generate: %v, want the backend's stop", err)
	}
	_, dc := gen.Steps()
	if _, err := dc.Call(frontend.FromSlice([]int64{1, 2}, 2, 1), frontend.FromSlice([]int64{4}, []int{}...)); !errors.Is(err, errLowered) {
		t.Fatalf("decoding step: %v, want the backend's stop", err)
	}
	gs := got()
	if len(gs) != 2 {
		t.Fatalf("%d graphs lowered, want the prefill and the decoding step", len(gs))
	}
	if gs[0].updated != 0 || gs[1].updated != 2*cfg.Layers {
		t.Errorf("prefill writes %d arguments in place, the decoding step %d: want 0 and %d (each layer's K and V caches)", gs[0].updated, gs[1].updated, 2*cfg.Layers)
	}
}
