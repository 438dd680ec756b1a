package gpt2

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// errLowered stops a call once the lowering backend has lowered its graphs.
var errLowered = errors.New("lowered")

// lowered is one graph the lowering backend saw: its graph.matmul count,
// whether some size is symbolic ("?"), and its kernel launches by
// mapping (togpu.LaunchMappings).
type lowered struct {
	matmuls  int
	dynamic  bool
	mappings map[string]int
	// narrow lists the SIMT kernels on grids too small for their data
	// (togpu.NarrowLaunches).
	narrow []string
	// buffers counts the launches (kernels and library calls) that take
	// a buffer of each type, such as "memref<393216xf32>".
	buffers map[string]int
	// biased counts the gpu.library_matmul ops that add a bias.
	biased int
	// updated counts the arguments functions write in place
	// (loop.UpdatesArgsAttr).
	updated int
}

// loweringBackend registers a backend that lowers each graph with the
// nvptx backend's passes (graph-attention-to-flash, lower-to-gpu) and
// records what the kernels became; its executables fail with errLowered.
func loweringBackend(t *testing.T) (string, func() []lowered) {
	return loweringBackendWith(t, "builtin.module("+togpu.FlashPassName+",lower-to-gpu)")
}

// loweringBackendWith is loweringBackend lowering with pipeline.
func loweringBackendWith(t *testing.T, pipeline string) (string, func() []lowered) {
	var (
		mu  sync.Mutex
		got []lowered
	)
	name := "lowering-" + t.Name()
	frontend.RegisterBackend(name, frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		in := ir.Sprint(g.Module, ir.PrintOptions{})
		l := lowered{matmuls: strings.Count(in, `"graph.matmul"`), dynamic: strings.Contains(in, "?"), mappings: map[string]int{}}
		pm, err := passes.Parse(pipeline)
		if err != nil {
			return nil, err
		}
		if err := pm.Run(g.Context, g.Module); err != nil {
			return nil, err
		}
		l.mappings = togpu.LaunchMappings(g.Module)
		l.narrow = togpu.NarrowLaunches(g.Module)
		l.buffers = launchBuffers(g.Module)
		g.Module.Walk(func(op *ir.Operation) bool {
			if op.Name() == gpu.LibraryMatmulOp && gpu.LibraryBias(op) != nil {
				l.biased++
			}
			if a, ok := op.Attr(loop.UpdatesArgsAttr).(ir.DenseArrayAttr); ok {
				l.updated += len(a.Values)
			}
			return true
		})
		mu.Lock()
		got = append(got, l)
		mu.Unlock()
		return stopped{}, nil
	}))
	return name, func() []lowered { mu.Lock(); defer mu.Unlock(); return got }
}

// launchBuffers counts, for each buffer type, the launches of module (at
// the gpu level: gpu.launch_func and library calls) that take a buffer of
// that type, each launch once per type.
func launchBuffers(module *ir.Operation) map[string]int {
	out := map[string]int{}
	module.Walk(func(op *ir.Operation) bool {
		if op.Name() == gpu.FuncOp {
			return false
		}
		var args []*ir.Value
		if l, ok := gpu.LaunchOf(op); ok {
			args = l.Args
		} else if strings.HasPrefix(op.Name(), "gpu.library_") {
			args = op.Operands()
		}
		seen := map[string]bool{}
		for _, v := range args {
			if _, ok := v.Type().(*ir.MemRefType); ok && !seen[v.Type().String()] {
				seen[v.Type().String()] = true
				out[v.Type().String()]++
			}
		}
		return true
	})
	return out
}

type stopped struct{}

func (stopped) Run([]*interp.Tensor) ([]*interp.Tensor, error) { return nil, errLowered }

// small is a GPT-2 whose head dim (32) the flash kernel takes.
var small = Config{Vocab: 96, Ctx: 64, D: 64, Heads: 2, Layers: 2, Seed: 1}

// TestLoweredOnTensorCores checks what the GPU lowering makes of the
// graphs GPT-2 traces in bf16: every product of the forward pass (four a
// layer and the head) an mma kernel, every attention a flash kernel; in
// the mixed-precision training step, every product of the backward pass
// too, and the embeddings' gradients two scatter kernels (they were one-hot
// products before graph.scatter_add). The attention output's projection (a
// transpose and a reshape before it) and products on reshaped operands were
// scalar nests before.
func TestLoweredOnTensorCores(t *testing.T) {
	name, got := loweringBackend(t)
	opts := frontend.Options{Backend: name}
	m := New(small)
	x, y := batch(small, 2, 32)

	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, opts)
	if _, _, err := step.Call(x, y); !errors.Is(err, errLowered) {
		t.Fatalf("training step: %v, want the backend's stop", err)
	}
	bf := New(small)
	if err := nn.Cast(bf, frontend.BFloat16); err != nil {
		t.Fatal(err)
	}
	c, err := nn.Compile(bf, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{bf.Logits(in[0])} }, 1, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(x); !errors.Is(err, errLowered) {
		t.Fatalf("prefill: %v, want the backend's stop", err)
	}
	gs := got()
	if len(gs) != 3 {
		t.Fatalf("%d graphs lowered, want 3 (forward and backward of the step, prefill)", len(gs))
	}
	products := 4*small.Layers + 1
	for i, want := range []struct {
		name     string
		matmuls  int
		mma      int
		flashMin int
		scatter  int
	}{
		{"training forward", products, products, small.Layers, 0},
		// Two products per forward product; the embeddings' gradients are
		// scatter-adds (token and position).
		{"training backward", 2 * products, 2 * products, small.Layers, 2},
		{"prefill", products, products, small.Layers, 0},
	} {
		g := gs[i]
		if g.matmuls != want.matmuls || g.mappings[togpu.MappingMMA] != want.mma || g.mappings[togpu.MappingFlash] < want.flashMin ||
			g.mappings[togpu.MappingScatter] != want.scatter {
			t.Errorf("%s: %d graph.matmul, kernels %v; want %d products, %d mma kernels, at least %d flash kernels, %d scatter kernels",
				want.name, g.matmuls, g.mappings, want.matmuls, want.mma, want.flashMin, want.scatter)
		}
	}
}

// TestTrainingStepFillsTheGrid lowers the mixed-precision training step
// of a GPT-2 whose loss folds 262144 elements (64 tokens, 4096 classes)
// and checks that no SIMT kernel of its forward or backward pass runs a
// large buffer on a few blocks: the loss's mean, one kernel of one thread
// over every token and class, took GPT-2's step tens of seconds on the
// H200 before graph-split-reductions.
func TestTrainingStepFillsTheGrid(t *testing.T) {
	name, got := loweringBackend(t)
	cfg := Config{Vocab: 4096, Ctx: 64, D: 64, Heads: 2, Layers: 1, Seed: 1}
	m := New(cfg)
	x, y := batch(cfg, 2, 32)
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, frontend.Options{Backend: name})
	if _, _, err := step.Call(x, y); !errors.Is(err, errLowered) {
		t.Fatalf("training step: %v, want the backend's stop", err)
	}
	gs := got()
	if len(gs) != 2 {
		t.Fatalf("%d graphs lowered, want the step's forward and backward", len(gs))
	}
	for i, g := range gs {
		if len(g.narrow) > 0 {
			t.Errorf("graph %d: kernels with ≥ %d elements of a buffer a block: %v", i, togpu.NarrowPerBlock, g.narrow)
		}
	}
}

// TestTrainingLossKeepsLogitsNarrow lowers the mixed-precision training
// step of a GPT-2 with 96 tokens and 16512 classes (rows longer than
// togpu.LongRow, as GPT-2's 50304) and checks what touches its [96, 16512]
// logits: no kernel takes them (or the log-probabilities, or anything of
// their size) in float32, and in the forward pass the bf16 logits are
// written by the head's product and read by one row kernel (the row
// maximum with the label's logit, then the sum of exponentials). The
// cross-entropy moved about 16 GB a step of GPT-2 before (float32 logits
// stored by the head's epilogue, log_softmax in three passes, the
// log-probabilities kept for the backward pass); it now moves about 4.
func TestTrainingLossKeepsLogitsNarrow(t *testing.T) {
	name, got := loweringBackend(t)
	cfg := Config{Vocab: 16512, Ctx: 64, D: 64, Heads: 2, Layers: 1, Seed: 1}
	m := New(cfg)
	x, y := batch(cfg, 3, 32)
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, frontend.Options{Backend: name})
	if _, _, err := step.Call(x, y); !errors.Is(err, errLowered) {
		t.Fatalf("training step: %v, want the backend's stop", err)
	}
	gs := got()
	if len(gs) != 2 {
		t.Fatalf("%d graphs lowered, want the step's forward and backward", len(gs))
	}
	n := 3 * 32 * cfg.Vocab
	wide, narrow := fmt.Sprintf("memref<%dxf32>", n), fmt.Sprintf("memref<%dxbf16>", n)
	for i, g := range gs {
		if k := g.buffers[wide]; k > 0 {
			t.Errorf("graph %d: %d launches take a %s (float32 logits or their like): %v", i, k, wide, g.buffers)
		}
	}
	if k := gs[0].buffers[narrow]; k != 2 {
		t.Errorf("forward: %d launches take the bf16 logits %s, want 2 (the product; the maximum, label and exponentials' sum)", k, narrow)
	}
}

// TestFullWidthStepFillsTheGrid lowers one layer of GPT-2's
// mixed-precision training step at full width (768, 50304 classes, 8
// sequences of 1024 tokens) and checks that no SIMT kernel runs 65536 or
// more elements of a buffer a block. The first halves of the split bias
// and layer-norm parameter gradients (sums of [8192, C] over the tokens)
// did with 65536 partial sums (graph-split-reductions' SplitColumns
// before): c_attn's bias gradient took 73728 threads of 256 rows each,
// 0.167 ms at 680 GB/s on the H200, twelve a step.
func TestFullWidthStepFillsTheGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("lowers a full-width layer")
	}
	name, got := loweringBackend(t)
	cfg := Config{Vocab: 50304, Ctx: 1024, D: 768, Heads: 12, Layers: 1, Seed: 1}
	m := New(cfg)
	x, y := batch(cfg, 8, 1024)
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, frontend.Options{Backend: name})
	if _, _, err := step.Call(x, y); !errors.Is(err, errLowered) {
		t.Fatalf("training step: %v, want the backend's stop", err)
	}
	gs := got()
	if len(gs) != 2 {
		t.Fatalf("%d graphs lowered, want the step's forward and backward", len(gs))
	}
	for i, g := range gs {
		if len(g.narrow) > 0 {
			t.Errorf("graph %d: kernels with ≥ %d elements of a buffer a block: %v", i, togpu.NarrowPerBlock, g.narrow)
		}
	}
}
