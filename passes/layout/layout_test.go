package layout_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"

	_ "github.com/strata-ir/strata/autodiff" // graph-autodiff
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/ir"
	_ "github.com/strata-ir/strata/passes/lower" // lower-to-loop
	"github.com/strata-ir/strata/passes/passtest"
	_ "github.com/strata-ir/strata/passes/togpu" // convert-loop-to-gpu
	"github.com/strata-ir/strata/runtime/interp"
)

// stack builds a random convolution stack as a graph function: the ops
// of ResNet's blocks (convolutions, the batch norm's affine and
// statistics, ReLU, residual adds, max-pool as pad and strided slices)
// in random order and sizes, and what reads the stack back (a reduction
// without kept dims, or the rank-4 value itself).
type stack struct {
	elem  string
	args  []string // types
	body  strings.Builder
	n     int
	shape []int64 // of the current value
	cur   string
	seen  map[string]string // value by shape, for residual adds
}

func tensor(shape []int64, elem string) string {
	var b strings.Builder
	b.WriteString("tensor<")
	for _, d := range shape {
		fmt.Fprintf(&b, "%dx", d)
	}
	return b.String() + elem + ">"
}

func ints(vs ...int64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func (s *stack) arg(shape []int64) string {
	s.args = append(s.args, tensor(shape, s.elem))
	return fmt.Sprintf("%%arg%d", len(s.args)-1)
}

// op emits an op and returns its result.
func (s *stack) op(name, operands, props string, in []string, out []int64) string {
	v := fmt.Sprintf("%%%d", s.n)
	s.n++
	if props != "" {
		props = " <{" + props + "}>"
	}
	fmt.Fprintf(&s.body, "    %s = \"graph.%s\"(%s)%s : (%s) -> %s\n", v, name, operands, props, strings.Join(in, ", "), tensor(out, s.elem))
	return v
}

func (s *stack) set(v string, shape []int64) {
	s.cur, s.shape = v, shape
	s.seen[fmt.Sprint(shape)] = v
}

func drawStack(t *rapid.T, elem string, allConvs bool) *passtest.Program {
	d := func(label string, lo, hi int) int64 { return int64(rapid.IntRange(lo, hi).Draw(t, label)) }
	s := &stack{elem: elem, seen: map[string]string{}}
	x := []int64{d("n", 1, 2), d("c", 1, 4), d("h", 3, 7), d("w", 3, 7)}
	s.set(s.arg(x), x)
	convs := 0
	steps := rapid.IntRange(1, 7).Draw(t, "steps")
	for i := range steps {
		sh := s.shape
		cur := tensor(sh, elem)
		kind := rapid.IntRange(0, 5).Draw(t, fmt.Sprint("kind", i))
		if convs == 0 && i == steps-1 {
			kind = 0
		}
		switch kind {
		case 0: // conv2d
			o, k := d("o", 1, 4), []int64{1, 3}[d("k", 0, 1)]
			stride, pad := d("stride", 1, 2), d("pad", 0, 1)
			padding := ints(pad, pad)
			lo, hi := [2]int64{pad, pad}, [2]int64{pad, pad}
			if allConvs && rapid.Bool().Draw(t, "asymmetric") {
				hi = [2]int64{d("pb", 0, 1), d("pr", 0, 1)}
				padding = ints(pad, pad, hi[0], hi[1])
			}
			groups := int64(1)
			if allConvs && sh[1]%2 == 0 && o%2 == 0 && rapid.Bool().Draw(t, "grouped") {
				groups = 2
			}
			if min(sh[2]+lo[0]+hi[0], sh[3]+lo[1]+hi[1]) < k {
				k = 1
			}
			out := []int64{sh[0], o, 0, 0}
			for j := range 2 {
				out[2+j] = (sh[2+j]+lo[j]+hi[j]-k)/stride + 1
			}
			w := []int64{o, sh[1] / groups, k, k}
			operands, in := s.cur+", "+s.arg(w), []string{cur, tensor(w, elem)}
			if allConvs && rapid.Bool().Draw(t, "bias") {
				operands, in = operands+", "+s.arg([]int64{o}), append(in, tensor([]int64{o}, elem))
			}
			props := fmt.Sprintf("dilations = [1, 1], groups = %d : i64, padding = %s, strides = %s", groups, padding, ints(stride, stride))
			s.set(s.op("conv2d", operands, props, in, out), out)
			convs++
		case 1: // batch-norm affine: x·scale + shift per channel
			c := []int64{1, sh[1], 1, 1}
			sc := s.op("reshape", s.arg([]int64{sh[1]}), "shape = "+ints(c...), []string{tensor([]int64{sh[1]}, elem)}, c)
			m := s.op("mul", s.cur+", "+sc, "", []string{cur, tensor(c, elem)}, sh)
			sf := s.op("reshape", s.arg([]int64{sh[1]}), "shape = "+ints(c...), []string{tensor([]int64{sh[1]}, elem)}, c)
			s.set(s.op("add", m+", "+sf, "", []string{cur, tensor(c, elem)}, sh), sh)
		case 2:
			s.set(s.op("relu", s.cur, "", []string{cur}, sh), sh)
		case 3: // batch statistics: x - mean over (n, h, w)
			c := []int64{1, sh[1], 1, 1}
			m := s.op("reduce_mean", s.cur, "axes = [0, 2, 3], keepdims = true", []string{cur}, c)
			s.set(s.op("sub", s.cur+", "+m, "", []string{cur, tensor(c, elem)}, sh), sh)
		case 4: // residual add of an earlier value of this shape
			s.set(s.op("add", s.cur+", "+s.seen[fmt.Sprint(sh)], "", []string{cur, cur}, sh), sh)
		case 5: // max-pool 3×3/2 as pad, strided slices and max
			p := []int64{sh[0], sh[1], sh[2] + 2, sh[3] + 2}
			padded := s.op("pad", s.cur, "high = [0, 0, 1, 1], low = [0, 0, 1, 1], value = 0.0 : "+elem, []string{cur}, p)
			out := []int64{sh[0], sh[1], (sh[2]-1)/2 + 1, (sh[3]-1)/2 + 1}
			var acc string
			for a := range int64(2) {
				lim := ints(p[0], p[1], a+2*(out[2]-1)+1, 1-a+2*(out[3]-1)+1)
				v := s.op("slice", padded, fmt.Sprintf("limits = %s, starts = %s, strides = [1, 1, 2, 2]", lim, ints(0, 0, a, 1-a)), []string{tensor(p, elem)}, out)
				if acc == "" {
					acc = v
				} else {
					acc = s.op("max", acc+", "+v, "", []string{tensor(out, elem), tensor(out, elem)}, out)
				}
			}
			s.set(acc, out)
		}
	}
	sh := s.shape
	ret, rt := s.cur, tensor(sh, elem)
	switch rapid.IntRange(0, 2).Draw(t, "end") {
	case 1: // global average pool: [N, C]
		out := []int64{sh[0], sh[1]}
		ret = s.op("reduce_mean", s.cur, "axes = [2, 3], keepdims = false", []string{rt}, out)
		rt = tensor(out, elem)
	case 2: // flatten, in NCHW order: the region's exit reads it back
		out := []int64{sh[0], sh[1] * sh[2] * sh[3]}
		ret = s.op("reshape", s.cur, "shape = "+ints(out...), []string{rt}, out)
		rt = tensor(out, elem)
	}
	fmt.Fprintf(&s.body, "    \"func.return\"(%s) : (%s) -> ()\n", ret, rt)
	var src strings.Builder
	args := make([]string, len(s.args))
	for i, a := range s.args {
		args[i] = fmt.Sprintf("%%arg%d: %s", i, a)
	}
	fmt.Fprintf(&src, "\"builtin.module\"() ({\n  \"func.func\"() <{function_type = (%s) -> %s, sym_name = \"f\"}> ({\n  ^bb0(%s):\n%s  }) : () -> ()\n}) : () -> ()\n",
		strings.Join(s.args, ", "), rt, strings.Join(args, ", "), s.body.String())
	return &passtest.Program{Func: "f", Source: src.String()}
}

// TestChannelsLastPreservesSemantics checks on random convolution stacks
// that the interpreter computes the same before and after the pass:
// every convolution converted (f64, any groups and padding), and the
// default selection on bf16 (1×1 convolutions as products), also among
// convolutions it leaves NCHW (grouped, padded unevenly: the region's
// boundaries run through the stack).
func TestChannelsLastPreservesSemantics(t *testing.T) {
	for _, c := range []struct {
		elem, pipeline string
		all, mixed     bool
	}{
		{"f64", "builtin.module(graph-channels-last{all-convs=true always=true})", true, false},
		{"f32", "builtin.module(graph-channels-last{all-convs=true always=true matmul-1x1=false},canonicalize,cse)", true, false},
		{"bf16", "builtin.module(graph-channels-last{always=true},canonicalize,cse)", false, false},
		{"bf16-mixed", "builtin.module(graph-channels-last{always=true},canonicalize,cse)", true, true},
		// Through the loop level: the channels-last convolution nests.
		{"f32-loops", "builtin.module(graph-channels-last{all-convs=true always=true},lower-to-loop)", true, false},
		{"bf16-loops", "builtin.module(graph-channels-last{always=true},lower-to-loop)", false, false},
	} {
		t.Run(c.elem, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				elem := strings.TrimSuffix(strings.TrimSuffix(c.elem, "-loops"), "-mixed")
				p := drawStack(t, elem, c.all)
				if c.mixed {
					if err := passtest.CheckSemantics(p, c.pipeline, 1); err != nil {
						t.Fatal(err)
					}
					return
				}
				if err := passtest.CheckSemantics(p, c.pipeline, 1); err != nil {
					t.Fatal(err)
				}
				// Every convolution was converted (always=true; the bf16
				// stacks' convolutions are all the library's kind).
				out := lowered(t, p.Source, c.pipeline)
				if strings.Count(out, `"graph.conv2d"`) != strings.Count(out, `layout = "NHWC"`) || strings.Contains(out, `"graph.conv2d"`) && strings.HasSuffix(c.elem, "-loops") {
					t.Fatalf("a convolution stayed NCHW:\n%s", out)
				}
			})
		})
	}
}

// lowered runs pipeline on src and returns the result in the generic
// form.
func lowered(t passtest.TB, src, pipeline string) string {
	t.Helper()
	return ir.Sprint(passtest.Run(t, src, pipeline), ir.PrintOptions{Generic: true})
}

// convert runs pipeline on src and returns the result's text and the
// counts of the ops named in count.
func convert(t *testing.T, src, pipeline string, count ...string) (string, map[string]int) {
	t.Helper()
	out := lowered(t, src, pipeline)
	n := map[string]int{}
	for _, name := range count {
		n[name] = strings.Count(out, `"`+name+`"`)
	}
	return out, n
}

// block is a ResNet bottleneck in bf16 without its batch norms'
// statistics: 1×1, 3×3 and 1×1 convolutions with per-channel affines and
// ReLUs, and the residual add, then a global average pool.
const block = `"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2x8x6x6xbf16>, tensor<4x8x1x1xbf16>, tensor<4x4x3x3xbf16>, tensor<8x4x1x1xbf16>, tensor<1x4x1x1xbf16>, tensor<1x4x1x1xbf16>) -> tensor<2x8xbf16>, sym_name = "f"}> ({
  ^bb0(%x: tensor<2x8x6x6xbf16>, %w1: tensor<4x8x1x1xbf16>, %w2: tensor<4x4x3x3xbf16>, %w3: tensor<8x4x1x1xbf16>, %s: tensor<1x4x1x1xbf16>, %b: tensor<1x4x1x1xbf16>):
    %0 = "graph.conv2d"(%x, %w1) <{padding = [0, 0], strides = [1, 1]}> : (tensor<2x8x6x6xbf16>, tensor<4x8x1x1xbf16>) -> tensor<2x4x6x6xbf16>
    %1 = "graph.mul"(%0, %s) : (tensor<2x4x6x6xbf16>, tensor<1x4x1x1xbf16>) -> tensor<2x4x6x6xbf16>
    %2 = "graph.add"(%1, %b) : (tensor<2x4x6x6xbf16>, tensor<1x4x1x1xbf16>) -> tensor<2x4x6x6xbf16>
    %3 = "graph.relu"(%2) : (tensor<2x4x6x6xbf16>) -> tensor<2x4x6x6xbf16>
    %4 = "graph.conv2d"(%3, %w2) <{padding = [1, 1], strides = [1, 1]}> : (tensor<2x4x6x6xbf16>, tensor<4x4x3x3xbf16>) -> tensor<2x4x6x6xbf16>
    %5 = "graph.relu"(%4) : (tensor<2x4x6x6xbf16>) -> tensor<2x4x6x6xbf16>
    %6 = "graph.conv2d"(%5, %w3) <{padding = [0, 0], strides = [1, 1]}> : (tensor<2x4x6x6xbf16>, tensor<8x4x1x1xbf16>) -> tensor<2x8x6x6xbf16>
    %7 = "graph.add"(%6, %x) : (tensor<2x8x6x6xbf16>, tensor<2x8x6x6xbf16>) -> tensor<2x8x6x6xbf16>
    %8 = "graph.relu"(%7) : (tensor<2x8x6x6xbf16>) -> tensor<2x8x6x6xbf16>
    %9 = "graph.reduce_mean"(%8) <{axes = [2, 3], keepdims = false}> : (tensor<2x8x6x6xbf16>) -> tensor<2x8xbf16>
    "func.return"(%9) : (tensor<2x8xbf16>) -> ()
  }) : () -> ()
}) : () -> ()
`

// TestChannelsLastBlock checks what the pass makes of a bottleneck: the
// 3×3 convolution NHWC, the 1×1 ones products, and one transpose of a
// large tensor (the input), none back (the pool reads NHWC directly).
func TestChannelsLastBlock(t *testing.T) {
	out, n := convert(t, block, "builtin.module(graph-channels-last,canonicalize,cse)", "graph.conv2d", "graph.matmul", "graph.transpose")
	if n["graph.conv2d"] != 1 || !strings.Contains(out, `layout = "NHWC"`) || n["graph.matmul"] != 2 {
		t.Errorf("want one NHWC conv2d and two matmuls, got %v:\n%s", n, out)
	}
	large := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"graph.transpose"`) && strings.Contains(line, "2x8x6x6") {
			large++
		}
	}
	if large != 1 {
		t.Errorf("want the input transposed once, got %d large transposes:\n%s", large, out)
	}
	// The per-channel scale and shift [1, 4, 1, 1] enter as reshapes to
	// [1, 1, 1, 4] (views), not transposes.
	if strings.Contains(out, `"graph.transpose"(%arg4)`) || strings.Contains(out, `"graph.transpose"(%arg5)`) ||
		!strings.Contains(out, `(tensor<1x4x1x1xbf16>) -> tensor<1x1x1x4xbf16>`) {
		t.Errorf("want the scale and shift reshaped, not transposed:\n%s", out)
	}
	if err := passtest.CheckSemantics(&passtest.Program{Func: "f", Source: block}, "builtin.module(graph-channels-last,canonicalize,cse)", 2); err != nil {
		t.Error(err)
	}
}

// TestChannelsLastPadsTheStem checks that a 3-channel convolution reads
// 4 channels, its input and weight padded with zeros, and with
// pad-channels=0 reads 3.
func TestChannelsLastPadsTheStem(t *testing.T) {
	src := `"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2x3x9x9xbf16>, tensor<4x3x7x7xbf16>) -> tensor<2x4xbf16>, sym_name = "f"}> ({
  ^bb0(%x: tensor<2x3x9x9xbf16>, %w: tensor<4x3x7x7xbf16>):
    %0 = "graph.conv2d"(%x, %w) <{padding = [3, 3], strides = [2, 2]}> : (tensor<2x3x9x9xbf16>, tensor<4x3x7x7xbf16>) -> tensor<2x4x5x5xbf16>
    %1 = "graph.relu"(%0) : (tensor<2x4x5x5xbf16>) -> tensor<2x4x5x5xbf16>
    %2 = "graph.reduce_mean"(%1) <{axes = [2, 3], keepdims = false}> : (tensor<2x4x5x5xbf16>) -> tensor<2x4xbf16>
    "func.return"(%2) : (tensor<2x4xbf16>) -> ()
  }) : () -> ()
}) : () -> ()
`
	for _, c := range []struct {
		pipeline string
		conv     string
	}{
		{"builtin.module(graph-channels-last{space-to-depth=false})", "(tensor<2x9x9x4xbf16>, tensor<4x7x7x4xbf16>) -> tensor<2x5x5x4xbf16>"},
		{"builtin.module(graph-channels-last{pad-channels=0 space-to-depth=false})", "(tensor<2x9x9x3xbf16>, tensor<4x7x7x3xbf16>) -> tensor<2x5x5x4xbf16>"},
		// Space to depth: the padded 15×15 input's 2×2 blocks (and a row
		// and column of zeros to 16) as 16 channels, the 7×7 window
		// (with zeros to 8×8) as 4×4.
		{"builtin.module(graph-channels-last)", "(tensor<2x8x8x16xbf16>, tensor<4x4x4x16xbf16>) -> tensor<2x5x5x4xbf16>"},
		{"builtin.module(graph-channels-last{pad-channels=0})", "(tensor<2x8x8x12xbf16>, tensor<4x4x4x12xbf16>) -> tensor<2x5x5x4xbf16>"},
	} {
		out, _ := convert(t, src, c.pipeline)
		if !strings.Contains(out, c.conv) {
			t.Errorf("%s: want the convolution %s:\n%s", c.pipeline, c.conv, out)
		}
		if err := passtest.CheckSemantics(&passtest.Program{Func: "f", Source: src}, c.pipeline, 4); err != nil {
			t.Error(err)
		}
	}
}

// TestChannelsLastLeavesBiasedConvolutions checks that a convolution
// with a bias operand (added before the one rounding, which cuDNN does
// not do) stays NCHW by default, and that all-convs converts it.
func TestChannelsLastLeavesBiasedConvolutions(t *testing.T) {
	src := `"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2x4x6x6xbf16>, tensor<4x4x3x3xbf16>, tensor<4xbf16>) -> tensor<2x4xbf16>, sym_name = "f"}> ({
  ^bb0(%x: tensor<2x4x6x6xbf16>, %w: tensor<4x4x3x3xbf16>, %b: tensor<4xbf16>):
    %0 = "graph.conv2d"(%x, %w, %b) <{padding = [1, 1], strides = [1, 1]}> : (tensor<2x4x6x6xbf16>, tensor<4x4x3x3xbf16>, tensor<4xbf16>) -> tensor<2x4x6x6xbf16>
    %1 = "graph.reduce_mean"(%0) <{axes = [2, 3], keepdims = false}> : (tensor<2x4x6x6xbf16>) -> tensor<2x4xbf16>
    "func.return"(%1) : (tensor<2x4xbf16>) -> ()
  }) : () -> ()
}) : () -> ()
`
	if out, _ := convert(t, src, "builtin.module(graph-channels-last)"); strings.Contains(out, "NHWC") {
		t.Errorf("the biased convolution was converted:\n%s", out)
	}
	p := "builtin.module(graph-channels-last{all-convs=true})"
	if out, _ := convert(t, src, p); !strings.Contains(out, "NHWC") {
		t.Errorf("all-convs: the biased convolution stayed NCHW:\n%s", out)
	}
	if err := passtest.CheckSemantics(&passtest.Program{Func: "f", Source: src}, p, 5); err != nil {
		t.Error(err)
	}
}

// TestChannelsLastLeavesCostlyFunctions checks that a function returning
// its convolution's NCHW output and reading NCHW input, too many large
// transposes for one convolution, is left alone, and that always
// converts it anyway.
func TestChannelsLastLeavesCostlyFunctions(t *testing.T) {
	src := `"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2x4x6x6xbf16>, tensor<4x4x3x3xbf16>) -> tensor<2x4x6x6xbf16>, sym_name = "f"}> ({
  ^bb0(%x: tensor<2x4x6x6xbf16>, %w: tensor<4x4x3x3xbf16>):
    %0 = "graph.conv2d"(%x, %w) <{padding = [1, 1], strides = [1, 1]}> : (tensor<2x4x6x6xbf16>, tensor<4x4x3x3xbf16>) -> tensor<2x4x6x6xbf16>
    "func.return"(%0) : (tensor<2x4x6x6xbf16>) -> ()
  }) : () -> ()
}) : () -> ()
`
	if _, n := convert(t, src, "builtin.module(graph-channels-last)", "graph.transpose"); n["graph.transpose"] != 0 {
		t.Errorf("the function was converted: %v", n)
	}
	if _, n := convert(t, src, "builtin.module(graph-channels-last{always=true})", "graph.transpose"); n["graph.transpose"] != 3 {
		t.Errorf("always: want the input, the weight and the result transposed, got %v", n)
	}
}

// gpuPipeline is lower-to-gpu's library configuration with the pass: the
// channels-last convolutions on cuDNN (gpu.library_conv2d, layout NHWC),
// the 1×1 products on cuBLASLt.
const gpuPipeline = "builtin.module(func.func(graph-decompose,canonicalize,cse),graph-channels-last{always=true},canonicalize,cse," +
	"func.func(graph-split-reductions,graph-fuse{matmul-library=true}),convert-graph-to-loop,func.func(loop-buffer-reuse)," +
	"convert-loop-to-gpu{conv=cudnn matmul=cublaslt},canonicalize,cse)"

// TestChannelsLastOnTheLibraries lowers the bottleneck for the GPU with
// the libraries: the 3×3 convolution is one gpu.library_conv2d in NHWC,
// the 1×1 ones gpu.library_matmul, and the interpreter computes the same
// before and after.
func TestChannelsLastOnTheLibraries(t *testing.T) {
	out, n := convert(t, block, gpuPipeline, "gpu.library_conv2d", "gpu.library_matmul")
	if n["gpu.library_conv2d"] != 1 || !strings.Contains(out, `layout = "NHWC"`) || n["gpu.library_matmul"] != 2 {
		t.Errorf("want one NHWC library_conv2d and two library_matmul, got %v:\n%s", n, out)
	}
	if err := passtest.CheckSemantics(&passtest.Program{Func: "f", Source: block}, gpuPipeline, 3); err != nil {
		t.Error(err)
	}
}

// TestChannelsLastStacksOnTheLibraries checks random bf16 stacks through
// the library lowering in the interpreter.
func TestChannelsLastStacksOnTheLibraries(t *testing.T) {
	testsize.RapidChecks(t, 10)
	rapid.Check(t, func(t *rapid.T) {
		p := drawStack(t, "bf16", false)
		if err := passtest.CheckSemantics(p, gpuPipeline, 1); err != nil {
			t.Fatal(err)
		}
		// Every convolution runs on a library, none on a SIMT nest.
		out := lowered(t, p.Source, gpuPipeline)
		if convs, libs := strings.Count(p.Source, `"graph.conv2d"`), strings.Count(out, `"gpu.library_conv2d"`)+strings.Count(out, `"gpu.library_matmul"`); libs != convs {
			t.Fatalf("%d library ops for %d convolutions:\n%s", libs, convs, out)
		}
	})
}

// TestChannelsLastTrainingPreservesGradients checks on random
// convolution stacks that differentiating the channels-last function (a
// training step chooses the layout before autodiff: frontend's
// chooseLayout) gives the gradients of the NCHW one: at the graph level
// (f64, every convolution converted, grouped ones too), and in bf16
// through the library lowering, where every convolution of the gradient
// function, forward, data and weight gradient, runs on a library.
func TestChannelsLastTrainingPreservesGradients(t *testing.T) {
	for _, c := range []struct {
		elem, layout, lower string
		all                 bool
	}{
		{"f64", "graph-channels-last{all-convs=true always=true},canonicalize,cse", "", true},
		// Without padded channels: a data gradient sliced back to fewer
		// than 4 channels joins the epilogue of the convolution before it
		// (a ReLU's mask), which then is no library's (a SIMT nest;
		// ResNet's one padded convolution, the stem, has no data
		// gradient). The f64 draws pad.
		{"bf16", "graph-channels-last{always=true pad-channels=0},canonicalize,cse", "," + strings.TrimSuffix(strings.TrimPrefix(gpuPipeline, "builtin.module("), ")"), false},
	} {
		t.Run(c.elem, func(t *testing.T) {
			testsize.RapidChecks(t, 20)
			rapid.Check(t, func(t *rapid.T) {
				p := drawStack(t, c.elem, c.all)
				want := gradients(t, passtest.Run(t, p.Source, "builtin.module(graph-autodiff)"))
				pipeline := "builtin.module(" + c.layout + ",graph-autodiff" + c.lower + ")"
				after := passtest.Run(t, p.Source, pipeline)
				got := gradients(t, after)
				for i := range want {
					if err := passtest.Compare(got[i], want[i]); err != nil {
						t.Fatalf("gradient %d: %v\n%s", i, err, p.Source)
					}
				}
				// The library counts are not compared where a convolution
				// has a batch or channels of one: there a transposed
				// operand is a copy in the other layout too, and either
				// lowering may read a convolution as another's filter
				// gradient, or fuse it differently.
				if c.lower == "" || degenerate.MatchString(p.Source) {
					return
				}
				// Channels last, the convolutions and their gradients run
				// on the libraries at least as often as NCHW (where graph-fuse
				// gives a data gradient and its consumers' sums one kernel,
				// that is a SIMT nest either way): per convolution of the
				// stack, one in @f, its data and weight gradients in
				// @f_grad (every argument is differentiated) and perhaps
				// the convolution again, when the gradient reads its result.
				out := ir.Sprint(after, ir.PrintOptions{Generic: true})
				libraries := func(s string) int {
					return strings.Count(s, `"gpu.library_conv2d"`) + strings.Count(s, `"gpu.library_matmul"`)
				}
				nchw := lowered(t, p.Source, "builtin.module(graph-autodiff"+strings.Replace(c.lower, "graph-channels-last{always=true},", "", 1)+")")
				if libs, want := libraries(out), libraries(nchw); libs < want {
					t.Fatalf("%d library ops, %d NCHW:\n%s", libs, want, out)
				}
				// The weight gradient of each convolution left one
				// (not made a product) is cuDNN's filter gradient where
				// the recognizer tells it from a data gradient: its
				// window, the forward's output, at least as large as its
				// result. (A data gradient may be recognized as one too,
				// of a batch of one image of one channel: its operands'
				// transposes are copies then.)
				nhwc := filterGradients(passtest.Run(t, p.Source, "builtin.module("+c.layout+")"))
				if n := strings.Count(out, `direction = "backward_filter"`); n < nhwc {
					t.Fatalf("%d filter gradients for %d channels-last convolutions:\n%s", n, nhwc, out)
				}
			})
		})
	}
}

// degenerate matches a convolution of a batch of one, of one input or
// output channel, or of a 1×1 image (whose windows are padding but for
// the one pixel: space-to-depth makes a strided one a 2×2 convolution of
// padding blocks, which the recognizers may read as a filter gradient,
// and the gradients then recompute a different set of forwards than
// NCHW's — 7 library ops against 8 at 2x3x1x1, stride 2, pad 1, in
// session 24's CI run).
var degenerate = regexp.MustCompile(`"graph.conv2d".*: \((tensor<1x|tensor<\d+x1x[^,]*, tensor<\d+x|tensor<\d+x\d+x1x1x|[^,]*, tensor<1x)`)

// gradients runs @f_grad of m on the random inputs of seed 1.
func gradients(t *rapid.T, m *ir.Operation) []interp.Value {
	t.Helper()
	in := interp.New(m)
	f := in.Func("f_grad")
	if f == nil {
		t.Fatal("no @f_grad")
	}
	ft, err := interp.FuncType(f)
	if err != nil {
		t.Fatal(err)
	}
	args, err := interp.RandomInputs(ft, 1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := in.Call("f_grad", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// filterGradients counts the channels-last convolutions of m whose
// weight gradient convolution has a window (the output's extents) at
// least as large as its result.
func filterGradients(m *ir.Operation) int {
	n := 0
	m.Walk(func(op *ir.Operation) bool {
		prm, err := graph.Conv2DParamsOf(op)
		if op.Name() != graph.OpConv2D || err != nil || !prm.ChannelsLast {
			return true
		}
		x := op.Operand(0).Type().(*ir.TensorType).Shape()
		y := op.Result(0).Type().(*ir.TensorType).Shape()
		ok := true
		for d := range 2 {
			// The weight gradient's result: the extent of the window
			// that gives y's extent from x's.
			k := x[1+d] + prm.Padding[d] + prm.Padding[2+d] - prm.Strides[d]*(y[1+d]-1)
			ok = ok && y[1+d] >= k
		}
		if ok {
			n++
		}
		return true
	})
	return n
}
