package resnet

import (
	"strings"
	"sync"
	"testing"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
)

// loweringCheck is a frontend backend that checks each graph it is given
// through the nvptx backend's pipeline (lower-to-gpu) in the interpreter,
// on random inputs, counting its conv2d nests and the tensor-core
// kernels they became, then runs the graph on the interpreter backend.
type loweringCheck struct {
	t *testing.T
	// noSemantics skips the lane-by-lane run of the lowered graphs
	// (minutes): only the kernel counts.
	noSemantics bool
	mu          sync.Mutex
	convs, mmas int
}

func (c *loweringCheck) Compile(g *frontend.Graph) (frontend.Executable, error) {
	src := ir.Sprint(g.Module, ir.PrintOptions{Generic: true})
	lower := func(pipeline string) *ir.Operation { return passtest.Run(c.t, src, pipeline) }
	convs := strings.Count(ir.Sprint(lower("builtin.module(lower-to-loop)"), ir.PrintOptions{}), `loop.nest = "conv2d"`)
	// Launches, not kernels: gpu-dedup-kernels keeps one kernel for the
	// nests that are the same code.
	mmas := togpu.LaunchMappings(lower("builtin.module(lower-to-gpu)"))[togpu.MappingMMA]
	if !c.noSemantics {
		if err := passtest.CheckSemantics(&passtest.Program{Func: g.Func, Source: src}, "builtin.module(lower-to-gpu)", 1); err != nil {
			c.t.Errorf("%s: %.2000v", g.Func, err)
		}
	}
	c.mu.Lock()
	c.convs, c.mmas = c.convs+convs, c.mmas+mmas
	c.mu.Unlock()
	be, _ := frontend.LookupBackend(frontend.InterpBackend)
	return be.Compile(g)
}

// TestTinyResNetLowered runs the tiny ResNet in bf16, inference and a
// training step (forward, data and weight gradients, SGD), through
// lower-to-gpu in the interpreter: every convolution runs the tensor-core
// kernel and the lowered graphs compute what the graphs do.
func TestTinyResNetLowered(t *testing.T) {
	if !testsize.Long() {
		t.Skipf("simulates every kernel thread by thread (minutes): set %s=1", testsize.EnvVar)
	}
	chk := &loweringCheck{t: t}
	frontend.RegisterBackend("resnet-lowering-check", chk)
	opts := frontend.Options{Backend: "resnet-lowering-check", Fullgraph: true}
	m := New(Tiny)
	if err := nn.Cast(m, frontend.BFloat16); err != nil {
		t.Fatal(err)
	}
	g := nn.NewRNG(3)
	x, y := g.Normal(1, 2, 3, 32, 32).Cast(frontend.BFloat16), g.Int64s(Tiny.Classes, 2)

	nn.SetTraining(m, false)
	c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{m.Forward(in[0])} }, 1, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(x); err != nil {
		t.Fatal(err)
	}
	nn.SetTraining(m, true)
	step := nn.NewGradStep(m, m.Loss, 2, opts)
	opt, err := optim.NewSGD(step.Params(), optim.SGDConfig{LR: 0.05, Momentum: 0.9}, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, grads, err := step.Call(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.Step(grads); err != nil {
		t.Fatal(err)
	}
	// The forward convolutions, then in the step each forward one and its
	// data and weight gradients (but the stem's data gradient).
	if chk.convs < 3*5 || chk.mmas < chk.convs {
		t.Errorf("%d tensor-core kernels for %d conv2d nests", chk.mmas, chk.convs)
	}
	t.Logf("%d conv2d nests, %d tensor-core kernels", chk.convs, chk.mmas)
}

// TestTinyResNetMixedLowersToMMA lowers the tiny ResNet's bf16
// mixed-precision training step (resnet50_train's: MixedLoss, float32
// master weights, SGD with momentum) through lower-to-gpu: every
// convolution of the step, forward and both gradients, runs the
// tensor-core kernel but one (below). TestTinyResNetLowered checks what
// lowered graphs compute (long tests only); this one only counts, so it
// runs in short tests too.
func TestTinyResNetMixedLowersToMMA(t *testing.T) {
	chk := &loweringCheck{t: t, noSemantics: true}
	frontend.RegisterBackend("resnet-mixed-lowering-count", chk)
	mixedStep(t, "resnet-mixed-lowering-count")
	// Nine forward convolutions (the stem; three and a downsample in
	// each block), their weight gradients and all but the stem's data
	// gradients; tensor-core kernels for each but one and for the
	// classifier's three products (forward, both gradients). The one is a
	// weight gradient whose transposing epilogue graph-fuse fused into it
	// (its nest reads the window from the other operand): the implicit
	// GEMM kernel computed it wrong, and it stays a SIMT nest (conv=cudnn
	// runs it as cuDNN's filter gradient: library_test.go).
	if chk.convs != 3*9-1 || chk.mmas < chk.convs+3-1 {
		t.Errorf("%d tensor-core kernels for %d conv2d nests", chk.mmas, chk.convs)
	}
	t.Logf("%d conv2d nests, %d tensor-core kernels", chk.convs, chk.mmas)
}

// mixedStep runs one step of the tiny ResNet's bf16 mixed-precision
// training (resnet50_train's: MixedLoss, float32 master weights, SGD with
// momentum) through the registered backend: the gradient step and the
// optimizer's update.
func mixedStep(t *testing.T, backend string) {
	t.Helper()
	opts := frontend.Options{Backend: backend, Fullgraph: true}
	m := New(Tiny)
	g := nn.NewRNG(3)
	x, y := g.Normal(1, 2, 3, 32, 32), g.Int64s(Tiny.Classes, 2)
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, opts)
	opt, err := optim.NewSGD(step.Params(), optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-4}, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, grads, err := step.Call(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.Step(grads); err != nil {
		t.Fatal(err)
	}
}

// wideIndices is a frontend backend that lowers each graph it is given
// through lower-to-gpu and lists its pointwise and row kernels that keep
// 64-bit index divisions or remainders (index-bits=32 could not prove
// their ranges), but those that read an index from memory (a gather by
// computed indices), then runs the graph on the interpreter backend.
type wideIndices struct {
	t    *testing.T
	mu   sync.Mutex
	wide []string
}

func (c *wideIndices) Compile(g *frontend.Graph) (frontend.Executable, error) {
	m := passtest.Run(c.t, ir.Sprint(g.Module, ir.PrintOptions{Generic: true}), "builtin.module(lower-to-gpu)")
	m.Walk(func(k *ir.Operation) bool {
		if !gpu.IsKernel(k) {
			return true
		}
		for _, a := range k.Region(0).Front().Arguments() {
			if mt, ok := a.Type().(*ir.MemRefType); ok && mt.ElementType() == ir.I64 {
				return false // indices from data
			}
		}
		wide := false
		k.Walk(func(o *ir.Operation) bool {
			switch o.Name() {
			case arith.OpDivUI, arith.OpRemUI, arith.OpDivSI, arith.OpRemSI:
				wide = wide || o.Result(0).Type() == ir.Index
			}
			return !wide
		})
		if wide {
			c.mu.Lock()
			c.wide = append(c.wide, ir.SymbolName(k))
			c.mu.Unlock()
		}
		return false
	})
	be, _ := frontend.LookupBackend(frontend.InterpBackend)
	return be.Compile(g)
}

// TestTinyResNetMixedIndices32 lowers the tiny ResNet's mixed training
// step and checks that every kernel computes its indices in 32 bits:
// the stem max pool's data gradient (nine stride-dilated taps read under
// loop.if guards) kept 64-bit divisions until the range analysis used
// the guards, 4.75 ms of resnet50_train's step on the H200 (1.05 ms
// with 32 bits).
func TestTinyResNetMixedIndices32(t *testing.T) {
	chk := &wideIndices{t: t}
	frontend.RegisterBackend("resnet-wide-indices", chk)
	mixedStep(t, "resnet-wide-indices")
	if len(chk.wide) > 0 {
		t.Errorf("kernels with 64-bit index divisions: %v", chk.wide)
	}
}
