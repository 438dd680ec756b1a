package togpu_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes/passtest"
	"pgregory.net/rapid"
)

// convLibraryPipeline is lower-to-gpu with the convolutions on cuDNN.
const convLibraryPipeline = "builtin.module(lower-to-loop,convert-loop-to-gpu{conv=cudnn},canonicalize,cse)"

// convLibraryCases are convCases that conv=cudnn hands to
// gpu.library_conv2d, or gpu.library_matmul for unstrided 1×1 windows
// (library: how many) with the kernels left: the epilogue, or none when
// the library writes the result itself (a strided 1×1 window on cuDNN).
// The asymmetric padding and the bias added before the rounding stay on
// Strata's kernel.
var convLibraryCases = map[string]struct{ library, kernels int }{
	"3x3-pad1":          {1, 0},
	"1x1":               {1, 0},
	"1x1-stride2":       {1, 0},
	"3x3-stride2-odd":   {1, 0},
	"asym-pad-dilation": {0, 1},
	"7x7-stem":          {1, 0},
	"f16-bias":          {0, 1},
	"bn-residual-relu":  {1, 1},
	"many-channels":     {1, 0},
	"batched-unfolded":  {1, 0},
	"folded-1x1":        {1, 0},
}

// TestLibraryConvLowering lowers each convolution case with conv=cudnn,
// counts the library ops and kernels, and runs the lowered program in the
// interpreter (gpu.library_conv2d's reference meaning) against the graph
// program on random inputs.
func TestLibraryConvLowering(t *testing.T) {
	for _, tc := range convCases {
		want, ok := convLibraryCases[tc.name]
		if !ok {
			t.Fatalf("convLibraryCases has no entry for %s", tc.name)
		}
		t.Run(tc.name, func(t *testing.T) {
			p := &passtest.Program{Func: "main", Source: tc.src}
			text := lowerText(t, p, convLibraryPipeline)
			if got := strings.Count(text, `"gpu.library_conv2d"`) + strings.Count(text, `"gpu.library_matmul"`); got != want.library {
				t.Errorf("%d library ops, want %d:\n%s", got, want.library, text)
			}
			if got := strings.Count(text, "gpu.launch_func"); got != want.kernels {
				t.Errorf("%d kernel launches, want %d:\n%s", got, want.kernels, text)
			}
			if want.library > 0 && strings.Contains(text, `mapping = "mma"`) {
				t.Errorf("an mma kernel is left:\n%s", text)
			}
			if err := passtest.CheckSemantics(p, convLibraryPipeline, 5); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLibraryConvPreservesSemantics draws one-group convolutions (sizes,
// window, strides, symmetric padding, dilations, bf16 or f16) with an
// epilogue (none, ReLU, or a per-channel scale and a residual add) and
// checks that conv=cudnn computes what the graph does.
func TestLibraryConvPreservesSemantics(t *testing.T) {
	testsize.RapidChecks(t, 20)
	gen := rapid.Custom(func(rt *rapid.T) *passtest.Program {
		elem := rapid.SampledFrom([]string{"bf16", "f16"}).Draw(rt, "elem")
		n, c, o := rapid.Int64Range(1, 2).Draw(rt, "n"), rapid.Int64Range(1, 6).Draw(rt, "c"), rapid.Int64Range(1, 7).Draw(rt, "o")
		var size, win, stride, dil, pad, out [2]int64
		for i, d := range []string{"h", "w"} {
			win[i] = rapid.Int64Range(1, 3).Draw(rt, "k"+d)
			dil[i] = rapid.Int64Range(1, 2).Draw(rt, "dilation "+d)
			pad[i] = rapid.Int64Range(0, 2).Draw(rt, "pad "+d)
			stride[i] = rapid.Int64Range(1, 3).Draw(rt, "stride "+d)
			span := dil[i]*(win[i]-1) + 1
			size[i] = rapid.Int64Range(max(1, span-2*pad[i]), 8).Draw(rt, d)
			out[i] = (size[i]+2*pad[i]-span)/stride[i] + 1
		}
		xt := fmt.Sprintf("tensor<%dx%dx%dx%dx%s>", n, c, size[0], size[1], elem)
		wt := fmt.Sprintf("tensor<%dx%dx%dx%dx%s>", o, c, win[0], win[1], elem)
		yt := fmt.Sprintf("tensor<%dx%dx%dx%dx%s>", n, o, out[0], out[1], elem)
		st := fmt.Sprintf("tensor<1x%dx1x1x%s>", o, elem)
		body := fmt.Sprintf("  %%y = \"graph.conv2d\"(%%x, %%w) <{padding = [%d, %d], strides = [%d, %d], dilations = [%d, %d]}> : (%s, %s) -> %s\n",
			pad[0], pad[1], stride[0], stride[1], dil[0], dil[1], xt, wt, yt)
		args := ""
		switch rapid.IntRange(0, 2).Draw(rt, "epilogue") {
		case 0:
			body += fmt.Sprintf("  %%r = \"graph.add\"(%%y, %%y) : (%s, %s) -> %s\n", yt, yt, yt)
		case 1:
			body += fmt.Sprintf("  %%r = \"graph.relu\"(%%y) : (%s) -> %s\n", yt, yt)
		default:
			args = fmt.Sprintf(", %%s: %s, %%res: %s", st, yt)
			body += fmt.Sprintf("  %%0 = \"graph.mul\"(%%y, %%s) : (%s, %s) -> %s\n  %%r = \"graph.add\"(%%0, %%res) : (%s, %s) -> %s\n", yt, st, yt, yt, yt, yt)
		}
		return &passtest.Program{Func: "main", Source: fmt.Sprintf("func.func @main(%%x: %s, %%w: %s%s) -> %s {\n%s  return %%r : %s\n}\n", xt, wt, args, yt, body, yt)}
	})
	passtest.PreservesSemantics(t, convLibraryPipeline, gen)
}

// TestLibraryConvHints checks that under conv=cudnn a convolution nest
// the library cannot take stays on Strata's kernels with the reason and
// location under STRATA_LOGS=perf_hints.
func TestLibraryConvHints(t *testing.T) {
	var buf bytes.Buffer
	defer logs.SetOutput(logs.SetOutput(&buf))
	logs.Enable("perf_hints")
	defer logs.Disable()
	for _, tc := range []struct{ name, want string }{
		{"asym-pad-dilation", "convolution nest stays on Strata's kernels, not cuDNN: padding (top, left, bottom, right) [2 0 1 3] differs between the sides"},
		{"f16-bias", "not cuDNN: the f32 sum is not rounded to f16 before the epilogue reads it"},
		{"1x1-stride2", ""},
		{"3x3-pad1", ""},
	} {
		buf.Reset()
		for _, c := range convCases {
			if c.name == tc.name {
				lowerText(t, &passtest.Program{Func: "main", Source: c.src}, convLibraryPipeline)
			}
		}
		out := buf.String()
		if tc.want == "" && out != "" || !strings.Contains(out, tc.want) || tc.want != "" && !strings.Contains(out, ": remark: ") {
			t.Errorf("%s: log %q, want a located remark %q", tc.name, out, tc.want)
		}
	}
}

// filterLoss has a stride-2 convolution whose weight gradient's
// convolution is larger than the window (4×4 for 3×3: the input's last
// row is read by no output) and a dilated one.
const filterLoss = `func.func @loss(%x: tensor<4x16x8x8xbf16>, %w1: tensor<16x16x3x3xbf16>, %w2: tensor<8x16x3x3xbf16>) -> tensor<f32> {
  %0 = "graph.conv2d"(%x, %w1) <{padding = [1, 1], strides = [2, 2]}> : (tensor<4x16x8x8xbf16>, tensor<16x16x3x3xbf16>) -> tensor<4x16x4x4xbf16>
  %1 = "graph.relu"(%0) : (tensor<4x16x4x4xbf16>) -> tensor<4x16x4x4xbf16>
  %2 = "graph.conv2d"(%1, %w2) <{padding = [2, 2], dilations = [2, 2]}> : (tensor<4x16x4x4xbf16>, tensor<8x16x3x3xbf16>) -> tensor<4x8x4x4xbf16>
  %3 = "graph.cast"(%2) : (tensor<4x8x4x4xbf16>) -> tensor<4x8x4x4xf32>
  %4 = "graph.mul"(%3, %3) : (tensor<4x8x4x4xf32>, tensor<4x8x4x4xf32>) -> tensor<4x8x4x4xf32>
  %5 = "graph.reduce_mean"(%4) <{axes = [0, 1, 2, 3], keepdims = false}> : (tensor<4x8x4x4xf32>) -> tensor<f32>
  return %5 : tensor<f32>
}
`

// TestLibraryConvFilterGradient checks that under conv=cudnn every weight
// gradient of a small CNN (the convolution of transposed copies autodiff
// makes) becomes one gpu.library_conv2d of direction backward_filter
// reading x and g themselves, the copies gone, and that the lowered
// gradient computes what the graph does, bit for bit (the interpreter
// sums the library's filter gradient in the nest's order).
func TestLibraryConvFilterGradient(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		wrt       []int
		filters   int
	}{
		{"stride2-dilated", filterLoss, []int{0, 1, 2}, 2},
		{"bias-and-1x1", convLoss, []int{0, 1, 2, 3}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := dialects.NewContext()
			m, err := ir.Parse(ctx, tc.src, ir.ParseOptions{Filename: "conv.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			gradOf(t, ctx, m, "loss", tc.wrt)
			p := &passtest.Program{Func: "loss_grad", Source: ir.Sprint(m, ir.PrintOptions{Generic: true})}
			loopText := lowerText(t, p, "builtin.module(lower-to-loop)")
			text := lowerText(t, p, convLibraryPipeline)
			if got := strings.Count(text, `direction = "backward_filter"`); got != tc.filters {
				t.Errorf("%d filter gradients on the library, want %d:\n%s", got, tc.filters, text)
			}
			// Each filter gradient removes its two copy nests and adds one
			// (the transpose of the library's [O, C, …] result).
			copies := strings.Count(loopText, `loop.nest = "copy"`)
			if got := strings.Count(lowerText(t, p, "builtin.module(lower-to-loop,convert-loop-to-gpu{conv=cudnn})"), "gpu.launch_func"); got > strings.Count(lowerText(t, p, "builtin.module(lower-to-gpu)"), "gpu.launch_func")-tc.filters {
				t.Errorf("%d kernels (of %d copy nests before): the copies of x and g were not removed", got, copies)
			}
			if err := passtest.CheckSemantics(p, convLibraryPipeline, 2); err != nil {
				t.Error(err)
			}
		})
	}
}

// castLoss convolves with a bf16 copy of float32 master weights: the
// weight gradient's transpose and cast back to f32 fuse into its
// convolution, whose nest then runs over the output's first two
// dimensions swapped and reads the window from its other operand.
const castLoss = `func.func @loss(%x: tensor<2x4x6x6xbf16>, %w: tensor<4x4x3x3xf32>) -> tensor<f32> {
  %wb = "graph.cast"(%w) : (tensor<4x4x3x3xf32>) -> tensor<4x4x3x3xbf16>
  %0 = "graph.conv2d"(%x, %wb) <{padding = [1, 1]}> : (tensor<2x4x6x6xbf16>, tensor<4x4x3x3xbf16>) -> tensor<2x4x6x6xbf16>
  %3 = "graph.cast"(%0) : (tensor<2x4x6x6xbf16>) -> tensor<2x4x6x6xf32>
  %4 = "graph.mul"(%3, %3) : (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  %5 = "graph.reduce_mean"(%4) <{axes = [0, 1, 2, 3], keepdims = false}> : (tensor<2x4x6x6xf32>) -> tensor<f32>
  return %5 : tensor<f32>
}
`

// TestConvPermutedWeightGradient checks castLoss's gradient: the
// tensor-core kernel leaves the permuted weight-gradient nest alone (it
// computed it with the operands' roles swapped: a wrong gradient) and
// conv=cudnn runs it as the library's filter gradient; both lowered
// gradients compute what the graph does.
func TestConvPermutedWeightGradient(t *testing.T) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, castLoss, ir.ParseOptions{Filename: "conv.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	gradOf(t, ctx, m, "loss", []int{0, 1})
	p := &passtest.Program{Func: "loss_grad", Source: ir.Sprint(m, ir.PrintOptions{Generic: true})}
	convs := strings.Count(lowerText(t, p, "builtin.module(lower-to-loop)"), `loop.nest = "conv2d"`)
	if got := mmaKernels(t, p, "builtin.module(lower-to-gpu)", 256); got != convs-1 {
		t.Errorf("%d mma kernels for %d conv2d nests, want all but the permuted weight gradient", got, convs)
	}
	if got := strings.Count(lowerText(t, p, convLibraryPipeline), `direction = "backward_filter"`); got != 1 {
		t.Errorf("%d filter gradients on the library, want 1", got)
	}
	for _, pipeline := range []string{"builtin.module(lower-to-gpu)", convLibraryPipeline} {
		if err := passtest.CheckSemantics(p, pipeline, 3); err != nil {
			t.Errorf("%s: %v", pipeline, err)
		}
	}
}

// TestLibraryConvReshapedWeight checks a channels-last strided 1×1
// convolution whose weight is the reshape of an [O, C, 1, 1] argument to
// [O, 1, 1, C] (graph-channels-last's form of a downsample's weight): the
// nest reads the argument through a view, so conv=cudnn runs it as one
// gpu.library_conv2d with no copy kernel before it, and it computes what
// the graph does.
func TestLibraryConvReshapedWeight(t *testing.T) {
	src := `func.func @main(%x: tensor<2x8x8x16xbf16>, %w: tensor<32x16x1x1xbf16>) -> tensor<2x4x4x32xbf16> {
  %r = "graph.reshape"(%w) <{shape = [32, 1, 1, 16]}> : (tensor<32x16x1x1xbf16>) -> tensor<32x1x1x16xbf16>
  %0 = "graph.conv2d"(%x, %r) <{layout = "NHWC", padding = [0, 0], strides = [2, 2]}> : (tensor<2x8x8x16xbf16>, tensor<32x1x1x16xbf16>) -> tensor<2x4x4x32xbf16>
  return %0 : tensor<2x4x4x32xbf16>
}
`
	p := &passtest.Program{Func: "main", Source: src}
	text := lowerText(t, p, convLibraryPipeline)
	if strings.Count(text, `"gpu.library_conv2d"`) != 1 || strings.Contains(text, "gpu.launch_func") {
		t.Errorf("want one library convolution and no kernel:\n%s", text)
	}
	if err := passtest.CheckSemantics(p, convLibraryPipeline, 3); err != nil {
		t.Error(err)
	}
}
