package autotune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/strata-ir/strata/autodiff"
	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/layout"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/cudnn"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// resnetConvShapes are ResNet-50's convolutions at batch 64: in
// channels, size, out channels, window, stride, padding. The bottleneck's
// three kinds (1×1 reduce, 3×3, 1×1 expand) of stage 1, a 3×3 of each
// later stage (stage 2's strided one), the strided 1×1 downsample and the
// stem.
var resnetConvShapes = []struct {
	name             string
	c, h, o, k, s, p int64
}{
	{"stem-7x7-s2", 3, 224, 64, 7, 2, 3},
	{"layer1-1x1-reduce", 256, 56, 64, 1, 1, 0},
	{"layer1-3x3", 64, 56, 64, 3, 1, 1},
	{"layer1-1x1-expand", 64, 56, 256, 1, 1, 0},
	{"layer2-3x3-s2", 128, 56, 128, 3, 2, 1},
	{"layer3-3x3", 256, 14, 256, 3, 1, 1},
	{"layer4-3x3", 512, 7, 512, 3, 1, 1},
	{"downsample-1x1-s2", 512, 28, 1024, 1, 2, 0},
}

// convDirections are the three convolutions of a training step: the
// forward, the data gradient and the weight gradient.
var convDirections = []string{"fwd", "dgrad", "wgrad"}

// convSource returns the function (and its name) that computes direction
// dir of a bf16 convolution of x [64, c, h, h] by w [o, c, k, k]: the
// convolution itself, or the gradient of Σ conv(x, w)·g with respect to x
// or w, which autodiff adds to the module after layoutPipeline (the
// layout pass runs on the function it differentiates, as a training
// step's does).
func convSource(t *testing.T, ctx *ir.Context, c, h, o, k, s, p int64, dir, layoutPipeline string) (*ir.Operation, string) {
	t.Helper()
	q := (h+2*p-k)/s + 1
	types := strings.NewReplacer("X", fmt.Sprintf("tensor<64x%dx%dx%dxbf16>", c, h, h), "W", fmt.Sprintf("tensor<%dx%dx%dx%dxbf16>", o, c, k, k),
		"Y", fmt.Sprintf("tensor<64x%dx%dx%dxbf16>", o, q, q), "F", fmt.Sprintf("tensor<64x%dx%dx%dxf32>", o, q, q))
	conv := fmt.Sprintf(`"graph.conv2d"(%%x, %%w) <{padding = [%d, %d], strides = [%d, %d]}> : (X, W) -> Y`, p, p, s, s)
	src, fn := "func.func @main(%x: X, %w: W) -> Y {\n  %y = "+conv+"\n  return %y : Y\n}\n", "main"
	if dir != "fwd" {
		src, fn = `func.func @loss(%x: X, %w: W, %g: Y) -> tensor<f32> {
  %y = `+conv+`
  %m = "graph.mul"(%y, %g) : (Y, Y) -> Y
  %f = "graph.cast"(%m) : (Y) -> F
  %r = "graph.reduce_sum"(%f) <{axes = [0, 1, 2, 3], keepdims = false}> : (F) -> tensor<f32>
  return %r : tensor<f32>
}
`, "loss_grad"
	}
	m, err := ir.Parse(ctx, types.Replace(src), ir.ParseOptions{Filename: "conv.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	if layoutPipeline != "" {
		runPipeline(t, ctx, m, layoutPipeline)
	}
	if dir != "fwd" {
		wrt := map[string][]int{"dgrad": {0}, "wgrad": {1}}[dir]
		if _, err := autodiff.Grad(ctx, ir.NewSymTable(m).Lookup("loss"), wrt); err != nil {
			t.Fatal(err)
		}
	}
	return m, fn
}

func runPipeline(t *testing.T, ctx *ir.Context, m *ir.Operation, pipeline string) {
	t.Helper()
	pm, err := passes.Parse("builtin.module(" + pipeline + ")")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
}

// convArgs returns random inputs in [-1, 1), each exactly a bf16, for
// fn's parameters, and 1 for the f32 seed of a gradient.
func convArgs(t *testing.T, p *exec.Program, fn string, rng *rand.Rand) []interp.Value {
	t.Helper()
	ft, err := interp.FuncType(ir.NewSymTable(p.Module()).Lookup(fn))
	if err != nil {
		t.Fatal(err)
	}
	var args []interp.Value
	for _, in := range ft.Inputs {
		mt := in.(*ir.MemRefType)
		n := int64(1)
		for _, d := range mt.Shape() {
			n *= d
		}
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = 1
			if mt.ElementType() != ir.F32 {
				vals[i] = float64(math.Float32frombits(math.Float32bits(float32(2*rng.Float64()-1)) &^ 0xffff))
			}
		}
		v, err := interp.FromFloat64s(mt.ElementType(), mt.Shape(), vals)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, interp.BufferFromTensor(v))
	}
	return args
}

// convTiming is one variant's measurement: the median time of the whole
// function, the time of its convolution ops (Strata's implicit-GEMM
// kernels, or the library's calls) per call, and what else ran.
type convTiming struct {
	whole, conv float64
	ops         string
}

// timeConv runs p's fn on args, returns its results, and times it: the
// whole function (exec's event timing, median of 20 after 3 warm-ups)
// and, from a profile of 10 launches, its convolution ops alone.
func timeConv(t *testing.T, rt *exec.Runtime, p *exec.Program, fn string, args []interp.Value) ([]interp.Value, convTiming) {
	t.Helper()
	got, err := p.Run(rt, fn, args)
	if err != nil {
		t.Fatal(err)
	}
	var tm convTiming
	if tm.whole, err = p.RunTimed(rt, fn, args, 3, 20); err != nil {
		t.Fatal(err)
	}
	b, err := p.Prepare(rt, fn, args)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	const launches = 10
	entries, err := b.Profile(launches)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, e := range entries {
		if e.Kind == exec.IdleKind {
			continue
		}
		ms := e.Ms / launches
		if e.Kind == "kernel (mma)" || strings.HasPrefix(e.Kind, "library_") {
			tm.conv += ms
		}
		ops = append(ops, fmt.Sprintf("%s %.4f", e.Label, ms))
	}
	sort.Strings(ops)
	tm.ops = strings.Join(ops, "; ")
	return got, tm
}

// normwise returns ‖a − b‖ / ‖b‖ over two results' elements.
func normwise(t *testing.T, a, b interp.Value) float64 {
	t.Helper()
	var xs, ys []float64
	for i, v := range []interp.Value{a, b} {
		bv, ok := v.(*interp.Buffer)
		if !ok {
			t.Fatalf("result is %T, not a buffer", v)
		}
		tt, err := bv.Tensor()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			xs = tt.Float64s()
		} else {
			ys = tt.Float64s()
		}
	}
	if len(xs) != len(ys) {
		t.Fatalf("results of %d and %d elements", len(xs), len(ys))
	}
	var d, n float64
	for i := range xs {
		d += (xs[i] - ys[i]) * (xs[i] - ys[i])
		n += ys[i] * ys[i]
	}
	return math.Sqrt(d / n)
}

// TestGPUConvVsCuDNN (skipped without a GPU or cuDNN) times each
// direction of ResNet-50's convolutions at batch 64 in bf16 (forward,
// data gradient, weight gradient) on Strata's own implicit-GEMM kernels
// (NCHW, the layout they take; Hopper's tiling, HopperTile) and on the
// library path the default policy takes with cuDNN (graph-channels-last:
// NHWC on cuDNN, unstrided 1×1 windows as cuBLASLt products), after
// checking that both give the same result on the same random inputs
// (normwise within 1%), and logs each one's convolution time and
// TFLOP/s (2·N·O·OH·OW·C·KH·KW flops for every direction), the whole
// function's time and the ops each ran. The stem's data gradient is
// left out: no training step computes it.
func TestGPUConvVsCuDNN(t *testing.T) {
	rt := openRuntime(t)
	if err := cudnn.Load(); err != nil {
		t.Skipf("no cuDNN: %v", err)
	}
	ownCfg, libCfg := togpu.DefaultConfig, togpu.DefaultConfig
	ownCfg.MMATile, libCfg.MMATile = HopperTile, HopperTile
	libCfg.CuDNN, libCfg.CuBLASLt = true, true
	own, library := LowerPipelineFor(ownCfg), LowerPipelineFor(libCfg)
	rng := rand.New(rand.NewPCG(3, 14))
	for _, s := range resnetConvShapes {
		for _, dir := range convDirections {
			if s.c < 8 && dir == "dgrad" {
				continue
			}
			t.Run(s.name+"/"+dir, func(t *testing.T) {
				q := (s.h+2*s.p-s.k)/s.s + 1
				flops := 2 * float64(64*s.o*q*q) * float64(s.c*s.k*s.k)
				compile := func(layoutPipeline, lower string) (*exec.Program, string) {
					ctx := dialects.NewContext()
					m, fn := convSource(t, ctx, s.c, s.h, s.o, s.k, s.s, s.p, dir, layoutPipeline)
					runPipeline(t, ctx, m, lower)
					p, err := exec.Compile(m, exec.Options{})
					if err != nil {
						t.Fatal(err)
					}
					return p, fn
				}
				po, fn := compile("", own)
				args := convArgs(t, po, fn, rng)
				gotOwn, tOwn := timeConv(t, rt, po, fn, args)
				pl, _ := compile(layout.PassName+"{always=true}", library)
				gotLib, tLib := timeConv(t, rt, pl, fn, args)
				if len(gotOwn) != 1 || len(gotLib) != 1 {
					t.Fatalf("%d and %d results, want 1", len(gotOwn), len(gotLib))
				}
				if e := normwise(t, gotOwn[0], gotLib[0]); !(e <= 0.01) {
					t.Fatalf("Strata's kernels and the library differ: normwise %.3g", e)
				} else {
					t.Logf("normwise |own − library| %.2g", e)
				}
				tf := func(ms float64) float64 { return flops / ms / 1e9 }
				t.Logf("conv %s %s: own %.4f ms (%.0f TFLOP/s), whole %.4f; library %.4f ms (%.0f TFLOP/s), whole %.4f; own/library %.2f",
					s.name, dir, tOwn.conv, tf(tOwn.conv), tOwn.whole, tLib.conv, tf(tLib.conv), tLib.whole, tOwn.conv/tLib.conv)
				t.Logf("own ops: %s", tOwn.ops)
				t.Logf("library ops: %s", tLib.ops)
			})
		}
	}
}
