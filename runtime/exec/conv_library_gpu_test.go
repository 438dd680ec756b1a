package exec

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/autodiff"
	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/cudnn"
	"github.com/strata-ir/strata/runtime/interp"
)

// convProgram lowers a graph function with its convolutions on cuDNN
// (library) or on Strata's own kernels with tiling tile (mma-tile's
// spelling; "" the default).
func convProgram(t *testing.T, src string, library bool, tile string) *Program {
	t.Helper()
	return convProgramLayout(t, src, library, tile, false)
}

// convProgramLayout is convProgram, with graph-channels-last{always=true}
// first when channelsLast: the convolutions in NHWC.
func convProgramLayout(t *testing.T, src string, library bool, tile string, channelsLast bool) *Program {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "conv.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	opts := "conv=mma"
	if library {
		opts = "conv=cudnn"
	}
	if tile != "" {
		opts += " mma-tile=" + tile
	}
	layout := ""
	if channelsLast {
		layout = "graph-channels-last{always=true},"
	}
	pm, err := passes.Parse("builtin.module(" + layout + "lower-to-loop,convert-loop-to-gpu{" + opts + "},canonicalize,cse)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	text := ir.Sprint(m, ir.PrintOptions{})
	if channelsLast && library && !strings.Contains(text, `layout = "NHWC"`) && !strings.Contains(text, "gpu.library_matmul") {
		t.Fatalf("no channels-last library op:\n%s", text)
	}
	if has := strings.Contains(text, "gpu.library_conv2d") || strings.Contains(text, "gpu.library_matmul"); has != library {
		t.Fatalf("a library op in the lowered program: %v, want %v", has, library)
	}
	p, err := Compile(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// convFunc is a function of one convolution of x [n, c, h, w] by w
// [o, c, k, k] (stride s, padding p, dilation d) in elem, followed by
// epilogue ("": none, the library writes the result; "bn-relu": a per-channel scale and shift and ReLU;
// "bn-add-relu": with a residual added before the ReLU).
func convFunc(elem string, n, c, h, w, o, k, s, p, d int64, epilogue string) string {
	oh, ow := (h+2*p-d*(k-1)-1)/s+1, (w+2*p-d*(k-1)-1)/s+1
	y := fmt.Sprintf("tensor<%dx%dx%dx%dx%s>", n, o, oh, ow, elem)
	ch := fmt.Sprintf("tensor<1x%dx1x1x%s>", o, elem)
	xt, wt := fmt.Sprintf("tensor<%dx%dx%dx%dx%s>", n, c, h, w, elem), fmt.Sprintf("tensor<%dx%dx%dx%dx%s>", o, c, k, k, elem)
	args, body := "", ""
	switch epilogue {
	case "bn-relu", "bn-add-relu":
		args = ", %s: C, %t: C"
		body = "  %0 = \"graph.mul\"(%y, %s) : (Y, C) -> Y\n  %1 = \"graph.add\"(%0, %t) : (Y, C) -> Y\n"
		last := "%1"
		if epilogue == "bn-add-relu" {
			args += ", %res: Y"
			body += "  %2 = \"graph.add\"(%1, %res) : (Y, Y) -> Y\n"
			last = "%2"
		}
		body += "  %r = \"graph.relu\"(" + last + ") : (Y) -> Y\n"
	}
	res := "%r"
	if body == "" {
		res = "%y"
	}
	src := fmt.Sprintf("func.func @main(%%x: X, %%w: W%s) -> Y {\n  %%y = \"graph.conv2d\"(%%x, %%w) <{padding = [%d, %d], strides = [%d, %d], dilations = [%d, %d]}> : (X, W) -> Y\n%s  return %s : Y\n}\n",
		args, p, p, s, s, d, d, body, res)
	return strings.NewReplacer("X", xt, "W", wt, "Y", y, "C", ch).Replace(src)
}

// argsOf returns random inputs in [-1, 1) for main's parameters.
func argsOf(t *testing.T, p *Program, rng *rand.Rand) []interp.Value {
	t.Helper()
	ft, err := interp.FuncType(ir.NewSymTable(p.Module()).Lookup("main"))
	if err != nil {
		t.Fatal(err)
	}
	var args []interp.Value
	for _, in := range ft.Inputs {
		mt := in.(*ir.MemRefType)
		args = append(args, randomHalf(t, rng, mt.ElementType(), mt.Shape()...))
	}
	return args
}

// TestGPUCuDNN runs gpu.library_conv2d through cuDNN on odd sizes, both
// element types, strides, padding, dilation, 1×1 and 7×7 windows, with
// and without an epilogue kernel, launch by launch and captured in a CUDA
// graph, and compares with the interpreter (the sum in order of (c, a,
// b)).
func TestGPUCuDNN(t *testing.T) {
	rt := openGPU(t)
	if err := cudnn.Load(); err != nil {
		t.Skipf("no cuDNN: %v", err)
	}
	path, version, _ := cudnn.Info()
	t.Logf("cuDNN %d from %s", version, path)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	r := func(lo, hi int64) int64 { return lo + rng.Int64N(hi-lo+1) }
	for _, tc := range []struct {
		name     string
		src      string
		elem     ir.Type
		epilogue bool
	}{
		{"3x3-bn-relu", convFunc("bf16", r(1, 3), r(1, 40), r(3, 20), r(3, 20), r(1, 70), 3, 1, 1, 1, "bn-relu"), ir.BF16, true},
		{"3x3-s2-bn-add-relu", convFunc("bf16", r(1, 3), r(1, 40), r(3, 20), r(3, 20), r(1, 70), 3, 2, 1, 1, "bn-add-relu"), ir.BF16, true},
		{"1x1-bare", convFunc("bf16", r(1, 3), r(1, 64), r(1, 16), r(1, 16), r(1, 70), 1, 1, 0, 1, ""), ir.BF16, false},
		{"7x7-s2-stem", convFunc("bf16", r(1, 2), 3, r(7, 30), r(7, 30), r(1, 32), 7, 2, 3, 1, "bn-relu"), ir.BF16, true},
		{"f16-dilated", convFunc("f16", r(1, 3), r(1, 24), r(5, 16), r(5, 16), r(1, 40), 3, 1, 2, 2, "bn-relu"), ir.F16, true},
		// graph-channels-last: cuDNN in NHWC (transposes around it).
		{"nhwc-3x3-bn-relu", convFunc("bf16", r(1, 3), r(1, 40), r(3, 20), r(3, 20), r(1, 70), 3, 1, 1, 1, "bn-relu"), ir.BF16, true},
		{"nhwc-3x3-s2-bn-add-relu", convFunc("bf16", r(1, 3), r(1, 40), r(3, 20), r(3, 20), r(1, 70), 3, 2, 1, 1, "bn-add-relu"), ir.BF16, true},
		{"nhwc-1x1-s2", convFunc("bf16", r(1, 3), r(1, 64), r(2, 16), r(2, 16), r(1, 70), 1, 2, 0, 1, "bn-relu"), ir.BF16, true},
		{"nhwc-7x7-s2-stem", convFunc("bf16", r(1, 2), 3, r(7, 30), r(7, 30), r(1, 32), 7, 2, 3, 1, "bn-relu"), ir.BF16, true},
		{"nhwc-f16-dilated", convFunc("f16", r(1, 3), r(1, 24), r(5, 16), r(5, 16), r(1, 40), 3, 1, 2, 2, "bn-relu"), ir.F16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := convProgramLayout(t, tc.src, true, "", strings.HasPrefix(tc.name, "nhwc-"))
			args := argsOf(t, p, rng)
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			// Two ulps of the 16-bit result (relative to the largest):
			// cuDNN sums in another order than the interpreter, which can
			// move the rounded convolution by one and the epilogue's
			// result by another.
			tol := 2.0 / 128
			if tc.elem == ir.F16 {
				tol = 2.0 / 1024
			}
			compare(t, p, args, got, tol)
			rn := NewRunner(p, rt, "main", true)
			defer rn.Close()
			if got, err = rn.Run(args); err != nil {
				t.Fatal(err)
			}
			info, err := rn.Graph(args)
			var ce *CaptureError
			switch {
			case errors.As(err, &ce) && !tc.epilogue:
				t.Logf("not captured (expected: no kernel launch): %v", err)
			case err != nil:
				t.Fatalf("capture: %v", err)
			default:
				t.Logf("%v", info)
			}
			compare(t, p, args, got, tol)
		})
	}
}

// TestGPUCuDNNGradient differentiates a two-convolution loss (a strided
// 3×3 and a 1×1 after a ReLU, random sizes), lowers the gradient with
// conv=cudnn, checks that the weight gradients run as the library's
// filter gradients, and compares the device's gradients with the
// interpreter's.
func TestGPUCuDNNGradient(t *testing.T) {
	rt := openGPU(t)
	if err := cudnn.Load(); err != nil {
		t.Skipf("no cuDNN: %v", err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	// A batch of 2 or more: at batch 1 the weight gradient's transposes
	// of x and g (which swap an axis of one) are views, and the gradient
	// runs as the library's forward convolution of those views instead
	// of its filter gradient; a quarter of this test's draws failed its
	// count (session 20).
	n, c, h, o1, o2 := 2+rng.Int64N(3), 8+rng.Int64N(24), 8+rng.Int64N(12), 8+rng.Int64N(40), 8+rng.Int64N(40)
	q := (h+2-3)/2 + 1
	src := strings.NewReplacer("X", fmt.Sprintf("tensor<%dx%dx%dx%dxbf16>", n, c, h, h), "W1", fmt.Sprintf("tensor<%dx%dx3x3xbf16>", o1, c),
		"W2", fmt.Sprintf("tensor<%dx%dx1x1xbf16>", o2, o1), "Y1", fmt.Sprintf("tensor<%dx%dx%dx%dxbf16>", n, o1, q, q),
		"Y2", fmt.Sprintf("tensor<%dx%dx%dx%dxbf16>", n, o2, q, q), "F", fmt.Sprintf("tensor<%dx%dx%dx%dxf32>", n, o2, q, q)).Replace(`func.func @loss(%x: X, %w1: W1, %w2: W2) -> tensor<f32> {
  %0 = "graph.conv2d"(%x, %w1) <{padding = [1, 1], strides = [2, 2]}> : (X, W1) -> Y1
  %1 = "graph.relu"(%0) : (Y1) -> Y1
  %2 = "graph.conv2d"(%1, %w2) : (Y1, W2) -> Y2
  %3 = "graph.cast"(%2) : (Y2) -> F
  %4 = "graph.mul"(%3, %3) : (F, F) -> F
  %5 = "graph.reduce_mean"(%4) <{axes = [0, 1, 2, 3], keepdims = false}> : (F) -> tensor<f32>
  return %5 : tensor<f32>
}
`)
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "loss.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := autodiff.Grad(ctx, ir.NewSymTable(m).Lookup("loss"), []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-loop,convert-loop-to-gpu{conv=cudnn},canonicalize,cse)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(ir.Sprint(m, ir.PrintOptions{}), `direction = "backward_filter"`); got != 2 {
		t.Fatalf("%d filter gradients on the library, want 2", got)
	}
	p, err := Compile(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ft, err := interp.FuncType(ir.NewSymTable(m).Lookup("loss_grad"))
	if err != nil {
		t.Fatal(err)
	}
	var args []interp.Value
	for _, in := range ft.Inputs {
		mt := in.(*ir.MemRefType)
		if mt.ElementType() == ir.F32 { // the loss's seed gradient
			v, err := interp.FromFloat64s(ir.F32, mt.Shape(), []float64{1})
			if err != nil {
				t.Fatal(err)
			}
			args = append(args, interp.BufferFromTensor(v))
			continue
		}
		args = append(args, randomHalf(t, rng, mt.ElementType(), mt.Shape()...))
	}
	got, err := p.Run(rt, "loss_grad", args)
	if err != nil {
		t.Fatal(err)
	}
	want, err := interp.New(p.Module()).Call("loss_grad", args...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		// The weight gradients are sums over N·OH·OW terms rounded to bf16
		// in another order: a few ulps of the largest.
		same(t, got[i], want[i], 4.0/128)
	}
}

// resnetShapes are ResNet-50's convolutions at batch 64 (as
// passes/togpu's TestGPUConv times them): in channels, size, out
// channels, window, stride, padding.
var resnetShapes = []struct {
	name             string
	c, h, o, k, s, p int64
}{
	{"stem", 3, 224, 64, 7, 2, 3},
	{"layer1-3x3", 64, 56, 64, 3, 1, 1},
	{"layer2-3x3-s2", 128, 56, 128, 3, 2, 1},
	{"layer3-3x3", 256, 14, 256, 3, 1, 1},
	{"layer4-3x3", 512, 7, 512, 3, 1, 1},
	{"layer1-1x1", 256, 56, 64, 1, 1, 0},
	{"downsample-1x1-s2", 512, 28, 1024, 1, 2, 0},
}

// TestGPUCuDNNResNet times ResNet-50's convolutions with a batch-norm
// affine and ReLU epilogue on Strata's own implicit-GEMM kernels (the
// epilogue fused) and, for the convolutions conv=cudnn takes (not the
// strided 1×1), on the library (cuDNN, or cuBLASLt for a 1×1 window;
// the convolution + one pointwise kernel) after checking that both agree
// on the same random inputs, and the bare convolution on the library. It
// logs ms and TFLOP/s of each.
func TestGPUCuDNNResNet(t *testing.T) {
	rt := openGPU(t)
	if err := cudnn.Load(); err != nil {
		t.Skipf("no cuDNN: %v", err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 6))
	for _, s := range resnetShapes {
		t.Run(s.name, func(t *testing.T) {
			q := (s.h+2*s.p-s.k)/s.s + 1
			flops := 2 * float64(64*s.o*q*q) * float64(s.c*s.k*s.k)
			src := convFunc("bf16", 64, s.c, s.h, s.h, s.o, s.k, s.s, s.p, 1, "bn-relu")
			own := convProgram(t, src, false, "128x256x64s4go")
			args := argsOf(t, own, rng)
			type variant struct {
				name string
				p    *Program
				args []interp.Value
			}
			vs := []variant{{"own-fused", own, args}}
			if s.k > 1 || s.s == 1 { // conv=cudnn keeps strided 1×1 windows on Strata's kernels
				lib := convProgram(t, src, true, "")
				a, err := lib.Run(rt, "main", args)
				if err != nil {
					t.Fatal(err)
				}
				b, err := own.Run(rt, "main", args)
				if err != nil {
					t.Fatal(err)
				}
				same(t, a[0], b[0], 2.0/128)
				bare := convProgram(t, convFunc("bf16", 64, s.c, s.h, s.h, s.o, s.k, s.s, s.p, 1, ""), true, "")
				vs = append(vs, variant{"library+epilogue", lib, args}, variant{"library-bare", bare, args[:2]})
			}
			var line strings.Builder
			for _, v := range vs {
				ms, err := v.p.RunTimed(rt, "main", v.args, 3, 20)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&line, " %s %.4f ms (%.0f TFLOP/s);", v.name, ms, flops/ms/1e9)
			}
			t.Logf("conv %s:%s", s.name, line.String())
		})
	}
}

// same checks that two results of one program agree within rel of the
// largest magnitude.
func same(t *testing.T, a, b interp.Value, rel float64) {
	t.Helper()
	x, y := tensor(t, a).Float64s(), tensor(t, b).Float64s()
	scale := 0.0
	for _, v := range y {
		scale = max(scale, v, -v)
	}
	bad := 0
	for i := range x {
		if d := x[i] - y[i]; d > rel*scale || -d > rel*scale || x[i] != x[i] {
			if bad++; bad <= 5 {
				t.Errorf("element %d: cuDNN %g, Strata's kernel %g", i, x[i], y[i])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d elements differ", bad, len(x))
	}
}

// TestPlanLibraryCalls checks the library calls a plan lists for
// WarmLibraryCalls: each gpu.library_conv2d with its convolution and
// direction, and the operands' sizes.
func TestPlanLibraryCalls(t *testing.T) {
	p := convProgram(t, convFunc("bf16", 2, 5, 9, 9, 7, 3, 2, 1, 1, "bn-relu"), true, "")
	pl, err := p.plan("main")
	if err != nil {
		t.Fatal(err)
	}
	want := cudnn.Conv{Type: cudnn.BF16, Layout: cudnn.NCHW, N: 2, C: 5, H: 9, W: 9, O: 7, KH: 3, KW: 3,
		Pad: [2]int64{1, 1}, Stride: [2]int64{2, 2}, Dilate: [2]int64{1, 1}}
	if len(pl.libCalls) != 1 {
		t.Fatalf("%d library calls, want 1: %+v", len(pl.libCalls), pl.libCalls)
	}
	c := pl.libCalls[0]
	if !c.isConv || c.conv != want || (c.dir != "" && c.dir != "forward") || c.bytes != [4]uint64{2 * 5 * 9 * 9 * 2, 7 * 5 * 3 * 3 * 2, 2 * 7 * 5 * 5 * 2} {
		t.Errorf("library call %+v, want the forward convolution %+v", c, want)
	}
	// The frontend's early warm-up reads the same calls from the IR.
	if got := libCallsIn(p.Module(), "main"); !slices.Equal(got, pl.libCalls) {
		t.Errorf("libCallsIn: %+v, want the plan's %+v", got, pl.libCalls)
	}
	if got := libCallsIn(p.Module(), "other"); len(got) != 0 {
		t.Errorf("libCallsIn of a function that is not there: %+v", got)
	}
}

// warmCalls claims the calls of calls (of host function fn) that no
// warm-up of rt has claimed yet and makes their first calls in the
// foreground (warmClaimed), returning how many it made.
func (rt *Runtime) warmCalls(fn string, calls []libCall) (int, error) {
	return rt.warmClaimed(fn, rt.libs.claimAll(calls))
}

// TestGPUWarmLibraryCalls warms a gradient's library calls (cuDNN's
// filter gradients and convolutions, cuBLASLt's products) on scratch
// memory, then runs the gradient: every call was warmed once, and the
// results match the interpreter.
func TestGPUWarmLibraryCalls(t *testing.T) {
	rt := openGPU(t)
	p, pl, args := libraryGradient(t)
	n, err := rt.warmCalls("loss_grad", pl.libCalls)
	if err != nil || n != len(pl.libCalls) {
		t.Fatalf("%d of %d library calls warmed: %v", n, len(pl.libCalls), err)
	}
	p.WarmLibraryCalls(rt, "loss_grad") // the background path, on warm plans
	rt.WarmLibraryCallsIn(p.Module(), "loss_grad")
	rt.libs.warm.Wait()
	if n, err := rt.warmCalls("loss_grad", pl.libCalls); n != 0 || err != nil {
		t.Errorf("warming the calls again made %d of them (want none: each is warmed once per Runtime): %v", n, err)
	}
	checkLibraryGradient(t, rt, p, args)
}

// TestGPURunBesideWarmUps runs a gradient's library calls while their
// warm-ups time the candidates in the background, as a first run does:
// the convolutions run untimed (cudnn.Handle.Untimed) while their
// warm-ups are due, the results match the interpreter, and once the
// warm-ups end every call is warmed and the results match again.
func TestGPURunBesideWarmUps(t *testing.T) {
	rt := openGPU(t)
	p, pl, args := libraryGradient(t)
	p.WarmLibraryCalls(rt, "loss_grad")
	checkLibraryGradient(t, rt, p, args) // beside the warm-ups
	rt.libs.warm.Wait()
	for _, c := range pl.libCalls {
		if rt.libs.warming(c) {
			t.Errorf("%v: still warming after the warm-ups ended", c)
		}
	}
	checkLibraryGradient(t, rt, p, args)
}

// libraryGradient compiles the gradient of a two-convolution loss with
// the convolutions on cuDNN (the unstrided 1×1 one a cuBLASLt product)
// and returns the program, its plan of @loss_grad and random arguments.
func libraryGradient(t *testing.T) (*Program, *plan, []interp.Value) {
	t.Helper()
	if err := cudnn.Load(); err != nil {
		t.Skipf("no cuDNN: %v", err)
	}
	src := strings.NewReplacer("X", "tensor<2x8x10x10xbf16>", "W1", "tensor<16x8x3x3xbf16>", "W2", "tensor<12x16x1x1xbf16>",
		"Y1", "tensor<2x16x5x5xbf16>", "Y2", "tensor<2x12x5x5xbf16>", "F", "tensor<2x12x5x5xf32>").Replace(`func.func @loss(%x: X, %w1: W1, %w2: W2) -> tensor<f32> {
  %0 = "graph.conv2d"(%x, %w1) <{padding = [1, 1], strides = [2, 2]}> : (X, W1) -> Y1
  %1 = "graph.relu"(%0) : (Y1) -> Y1
  %2 = "graph.conv2d"(%1, %w2) : (Y1, W2) -> Y2
  %3 = "graph.cast"(%2) : (Y2) -> F
  %4 = "graph.mul"(%3, %3) : (F, F) -> F
  %5 = "graph.reduce_mean"(%4) <{axes = [0, 1, 2, 3], keepdims = false}> : (F) -> tensor<f32>
  return %5 : tensor<f32>
}
`)
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "loss.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := autodiff.Grad(ctx, ir.NewSymTable(m).Lookup("loss"), []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-loop,convert-loop-to-gpu{conv=cudnn},canonicalize,cse)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := p.plan("loss_grad")
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.libCalls) < 3 {
		t.Fatalf("%d library calls listed: %+v", len(pl.libCalls), pl.libCalls)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	ft, err := interp.FuncType(ir.NewSymTable(m).Lookup("loss_grad"))
	if err != nil {
		t.Fatal(err)
	}
	var args []interp.Value
	for _, in := range ft.Inputs {
		mt := in.(*ir.MemRefType)
		if mt.ElementType() == ir.F32 {
			v, err := interp.FromFloat64s(ir.F32, mt.Shape(), []float64{1})
			if err != nil {
				t.Fatal(err)
			}
			args = append(args, interp.BufferFromTensor(v))
			continue
		}
		args = append(args, randomHalf(t, rng, mt.ElementType(), mt.Shape()...))
	}
	return p, pl, args
}

// checkLibraryGradient runs @loss_grad of p on rt and compares it with
// the interpreter.
func checkLibraryGradient(t *testing.T, rt *Runtime, p *Program, args []interp.Value) {
	t.Helper()
	got, err := p.Run(rt, "loss_grad", args)
	if err != nil {
		t.Fatal(err)
	}
	want, err := interp.New(p.Module()).Call("loss_grad", args...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		same(t, got[i], want[i], 4.0/128) // as TestGPUCuDNNGradient
	}
}
