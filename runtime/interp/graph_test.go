package interp

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// runGraph parses src (func.func in pretty syntax, graph ops in generic
// syntax), verifies it and calls @f on args.
func runGraph(t testing.TB, src string, args ...Value) []*Tensor {
	t.Helper()
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, graph.Dialect)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "t.mlir"})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("verify: %v", err)
	}
	out, err := New(m).Call("f", args...)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	ts := make([]*Tensor, len(out))
	for i, v := range out {
		ts[i] = v.(*Tensor)
	}
	return ts
}

func near(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= tol*(1+math.Abs(b))
}

func checkFloats(t *testing.T, what string, got *Tensor, shape []int64, want []float64, tol float64) {
	t.Helper()
	if len(got.Shape()) != len(shape) || ir.NumElements(got.Shape()) != ir.NumElements(shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	for i := range shape {
		if got.Shape()[i] != shape[i] {
			t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
		}
	}
	vs := got.Float64s()
	for i := range want {
		if !near(vs[i], want[i], tol) {
			t.Fatalf("%s: element %d = %v, want %v (all: %v)", what, i, vs[i], want[i], vs)
		}
	}
}

func checkInts(t *testing.T, what string, got *Tensor, want []int64) {
	t.Helper()
	vs := got.Int64s()
	if len(vs) != len(want) {
		t.Fatalf("%s: %v, want %v", what, vs, want)
	}
	for i := range want {
		if vs[i] != want[i] {
			t.Fatalf("%s: %v, want %v", what, vs, want)
		}
	}
}

func TestGraphSoftmaxCompositeAndPrimitives(t *testing.T) {
	src := `func.func @f(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %s = "graph.softmax"(%x) {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %m = "graph.reduce_max"(%x) {axes = [1], keepdims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %d = "graph.sub"(%x, %m) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %e = "graph.exp"(%d) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %z = "graph.reduce_sum"(%e) {axes = [1], keepdims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %p = "graph.div"(%e, %z) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %l = "graph.log_softmax"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s, %p, %l : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}`
	// The second row is large: without the max subtraction exp overflows.
	x := f32s(t, []int64{2, 3}, 1, 2, 3, 1000, 1000, 1001)
	out := runGraph(t, src, x)
	e1, e2 := math.Exp(-2), math.Exp(-1)
	s := 1 + e1 + e2
	e3 := math.Exp(-1)
	s2 := 2*e3 + 1
	want := []float64{e1 / s, e2 / s, 1 / s, e3 / s2, e3 / s2, 1 / s2}
	checkFloats(t, "softmax", out[0], []int64{2, 3}, want, 1e-6)
	checkFloats(t, "softmax from primitives", out[1], []int64{2, 3}, want, 1e-6)
	logs := make([]float64, len(want))
	for i, w := range want {
		logs[i] = math.Log(w)
	}
	checkFloats(t, "log_softmax", out[2], []int64{2, 3}, logs, 1e-6)
}

func TestGraphLayerNormAndRMSNorm(t *testing.T) {
	src := `func.func @f(%x: tensor<2x4xf64>, %w: tensor<4xf64>, %b: tensor<4xf64>) -> (tensor<2x4xf64>, tensor<2x4xf64>) {
  %0 = "graph.layer_norm"(%x, %w, %b) {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<2x4xf64>
  %1 = "graph.rms_norm"(%x, %w) {epsilon = 0.0 : f64} : (tensor<2x4xf64>, tensor<4xf64>) -> tensor<2x4xf64>
  return %0, %1 : tensor<2x4xf64>, tensor<2x4xf64>
}`
	x := must(FromFloat64s(ir.F64, []int64{2, 4}, []float64{1, 2, 3, 4, -1, -1, 1, 1}))
	w := must(FromFloat64s(ir.F64, []int64{4}, []float64{1, 2, 1, 1}))
	b := must(FromFloat64s(ir.F64, []int64{4}, []float64{0, 0, 0, 10}))
	out := runGraph(t, src, x, w, b)
	// Row 1: mean 2.5, biased variance 1.25.
	inv := 1 / math.Sqrt(1.25+1e-5)
	inv2 := 1 / math.Sqrt(1+1e-5)
	checkFloats(t, "layer_norm", out[0], []int64{2, 4}, []float64{
		-1.5 * inv, -0.5 * inv * 2, 0.5 * inv, 1.5*inv + 10,
		-inv2, -inv2 * 2, inv2, inv2 + 10,
	}, 1e-12)
	r1 := 1 / math.Sqrt((1+4+9+16)/4.0)
	checkFloats(t, "rms_norm", out[1], []int64{2, 4}, []float64{r1, 4 * r1, 3 * r1, 4 * r1, -1, -2, 1, 1}, 1e-12)
}

func TestGraphGELUTanhAndMLP(t *testing.T) {
	src := `func.func @f(%x: tensor<1x2xf32>, %w: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<1x3xf32> {
  %0 = "graph.matmul"(%x, %w) : (tensor<1x2xf32>, tensor<2x3xf32>) -> tensor<1x3xf32>
  %1 = "graph.add"(%0, %b) : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %2 = "graph.gelu"(%1) {approximate = "tanh"} : (tensor<1x3xf32>) -> tensor<1x3xf32>
  return %2 : tensor<1x3xf32>
}`
	x := f32s(t, []int64{1, 2}, 1, 2)
	w := f32s(t, []int64{2, 3}, 1, 0, -1, 0.5, 1, 0)
	b := f32s(t, []int64{3}, 0, -3, 0.25)
	out := runGraph(t, src, x, w, b)
	gelu := func(v float64) float64 {
		return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
	}
	checkFloats(t, "mlp", out[0], []int64{1, 3}, []float64{gelu(2), gelu(-1), gelu(-0.75)}, 1e-6)
}

// TestGraphBF16MatmulBiasRoundsOnce checks graph.matmul's bias: added to
// the f32 sum before the one rounding to bf16, where an add after the
// product rounds twice.
func TestGraphBF16MatmulBiasRoundsOnce(t *testing.T) {
	src := `func.func @f(%a: tensor<1x2xbf16>, %b: tensor<2x2xbf16>, %c: tensor<2xbf16>) -> (tensor<1x2xbf16>, tensor<1x2xbf16>) {
  %0 = "graph.matmul"(%a, %b, %c) : (tensor<1x2xbf16>, tensor<2x2xbf16>, tensor<2xbf16>) -> tensor<1x2xbf16>
  %1 = "graph.matmul"(%a, %b) : (tensor<1x2xbf16>, tensor<2x2xbf16>) -> tensor<1x2xbf16>
  %2 = "graph.add"(%1, %c) : (tensor<1x2xbf16>, tensor<2xbf16>) -> tensor<1x2xbf16>
  return %0, %2 : tensor<1x2xbf16>, tensor<1x2xbf16>
}`
	// Column 0: 256 + 1 = 257 rounds to 256 (ties to even), + 1 = 257
	// again 256; once: 258. Column 1: 256 - 0.5 + 1 = 256.5 → 256 once;
	// 255.5 → 256 then 257 → 256 as well.
	a := must(FromFloat64s(ir.BF16, []int64{1, 2}, []float64{256, 1}))
	b := must(FromFloat64s(ir.BF16, []int64{2, 2}, []float64{1, 1, 1, -0.5}))
	c := must(FromFloat64s(ir.BF16, []int64{2}, []float64{1, 1}))
	out := runGraph(t, src, a, b, c)
	checkFloats(t, "matmul with bias", out[0], []int64{1, 2}, []float64{258, 256}, 0)
	checkFloats(t, "matmul then add", out[1], []int64{1, 2}, []float64{256, 256}, 0)
}

func TestGraphBF16MatmulAccumulatesInF32(t *testing.T) {
	src := `func.func @f(%a: tensor<1x3xbf16>, %b: tensor<3x1xbf16>, %c: tensor<1xbf16>) -> tensor<1x1xbf16> {
  %0 = "graph.matmul"(%a, %b) : (tensor<1x3xbf16>, tensor<3x1xbf16>) -> tensor<1x1xbf16>
  %1 = "graph.add"(%0, %c) : (tensor<1x1xbf16>, tensor<1xbf16>) -> tensor<1x1xbf16>
  %2 = "graph.relu"(%1) : (tensor<1x1xbf16>) -> tensor<1x1xbf16>
  return %2 : tensor<1x1xbf16>
}`
	// 256 + 1 + 1: in bf16 arithmetic 256+1 rounds back to 256 twice; an
	// f32 accumulator keeps 258, which is a bf16 value.
	a := must(FromFloat64s(ir.BF16, []int64{1, 3}, []float64{256, 1, 1}))
	b := must(FromFloat64s(ir.BF16, []int64{3, 1}, []float64{1, 1, 1}))
	c := must(FromFloat64s(ir.BF16, []int64{1}, []float64{-2}))
	out := runGraph(t, src, a, b, c)
	checkFloats(t, "bf16 matmul+bias+relu", out[0], []int64{1, 1}, []float64{256}, 0)
	if out[0].ElemType() != ir.BF16 {
		t.Errorf("result type %s", out[0])
	}
}

func TestGraphCastsCompareSelect(t *testing.T) {
	src := `func.func @f(%x: tensor<5xf32>) -> (tensor<5xi32>, tensor<5xf32>, tensor<5xf32>) {
  %0 = "graph.cast"(%x) : (tensor<5xf32>) -> tensor<5xi32>
  %1 = "graph.cast"(%0) : (tensor<5xi32>) -> tensor<5xf32>
  %z = "graph.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %c = "graph.cmp"(%x, %z) {predicate = "ge"} : (tensor<5xf32>, tensor<f32>) -> tensor<5xi1>
  %s = "graph.select"(%c, %x, %z) : (tensor<5xi1>, tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
  return %0, %1, %s : tensor<5xi32>, tensor<5xf32>, tensor<5xf32>
}`
	out := runGraph(t, src, f32s(t, []int64{5}, 2.9, -2.9, 0.5, -0.5, 7))
	checkInts(t, "cast f32→i32", out[0], []int64{2, -2, 0, 0, 7})
	checkFloats(t, "cast i32→f32", out[1], []int64{5}, []float64{2, -2, 0, 0, 7}, 0)
	checkFloats(t, "select", out[2], []int64{5}, []float64{2.9, 0, 0.5, 0, 7}, 1e-7)
}

func TestGraphReductionsAndShapes(t *testing.T) {
	src := `func.func @f(%x: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<3xi64>, tensor<3x2xf32>, tensor<6xf32>, tensor<f32>, tensor<1x3xf32>) {
  %0 = "graph.reduce_mean"(%x) {axes = [1]} : (tensor<2x3xf32>) -> tensor<2xf32>
  %1 = "graph.argmax"(%x) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<3xi64>
  %2 = "graph.transpose"(%x) {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %3 = "graph.reshape"(%2) {shape = [-1]} : (tensor<3x2xf32>) -> tensor<6xf32>
  %4 = "graph.reduce_max"(%x) : (tensor<2x3xf32>) -> tensor<f32>
  %5 = "graph.reduce_min"(%x) {axes = [0], keepdims = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2xf32>, tensor<3xi64>, tensor<3x2xf32>, tensor<6xf32>, tensor<f32>, tensor<1x3xf32>
}`
	out := runGraph(t, src, f32s(t, []int64{2, 3}, 1, 5, 3, 4, 2, 6))
	checkFloats(t, "mean", out[0], []int64{2}, []float64{3, 4}, 1e-7)
	checkInts(t, "argmax", out[1], []int64{1, 0, 1})
	checkFloats(t, "transpose", out[2], []int64{3, 2}, []float64{1, 4, 5, 2, 3, 6}, 0)
	checkFloats(t, "reshape", out[3], []int64{6}, []float64{1, 4, 5, 2, 3, 6}, 0)
	checkFloats(t, "reduce_max", out[4], nil, []float64{6}, 0)
	checkFloats(t, "reduce_min keepdims", out[5], []int64{1, 3}, []float64{1, 2, 3}, 0)
}

func TestGraphDataMovement(t *testing.T) {
	src := `func.func @f(%x: tensor<2x3xi32>, %i: tensor<2xi64>) -> (tensor<3x3xi32>, tensor<2x2xi32>, tensor<3x4xi32>, tensor<2x2xi32>, tensor<2x2x3xi32>, tensor<2x3xi64>) {
  %0 = "graph.concat"(%x, %x) {axis = 0 : i64} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<4x3xi32>
  %1 = "graph.slice"(%0) {starts = [1, 0], limits = [4, 3]} : (tensor<4x3xi32>) -> tensor<3x3xi32>
  %2 = "graph.slice"(%x) {starts = [0, 0], limits = [2, 3], strides = [1, 2]} : (tensor<2x3xi32>) -> tensor<2x2xi32>
  %3 = "graph.pad"(%x) {low = [1, 0], high = [0, 1], value = 9 : i32} : (tensor<2x3xi32>) -> tensor<3x4xi32>
  %4 = "graph.gather"(%x, %i) {axis = 1 : i64} : (tensor<2x3xi32>, tensor<2xi64>) -> tensor<2x2xi32>
  %5 = "graph.broadcast_to"(%x) {shape = [2, 2, 3]} : (tensor<2x3xi32>) -> tensor<2x2x3xi32>
  %6 = "graph.iota"() {axis = 1 : i64} : () -> tensor<2x3xi64>
  return %1, %2, %3, %4, %5, %6 : tensor<3x3xi32>, tensor<2x2xi32>, tensor<3x4xi32>, tensor<2x2xi32>, tensor<2x2x3xi32>, tensor<2x3xi64>
}`
	x := must(FromInt64s(ir.I32, []int64{2, 3}, []int64{1, 2, 3, 4, 5, 6}))
	i := must(FromInt64s(ir.I64, []int64{2}, []int64{2, -3}))
	out := runGraph(t, src, x, i)
	checkInts(t, "concat+slice", out[0], []int64{4, 5, 6, 1, 2, 3, 4, 5, 6})
	checkInts(t, "strided slice", out[1], []int64{1, 3, 4, 6})
	checkInts(t, "pad", out[2], []int64{9, 9, 9, 9, 1, 2, 3, 9, 4, 5, 6, 9})
	checkInts(t, "gather", out[3], []int64{3, 1, 6, 4})
	checkInts(t, "broadcast_to", out[4], []int64{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6})
	checkInts(t, "iota", out[5], []int64{0, 1, 2, 0, 1, 2})
}

func TestGraphAttentionMatchesPrimitives(t *testing.T) {
	src := `func.func @f(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x2xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xf32>, tensor<2x3x2xf32>) {
  %a = "graph.attention"(%q, %k, %v) {scale = 0.5 : f32} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x2xf32>) -> tensor<2x3x2xf32>
  %kt = "graph.transpose"(%k) {perm = [0, 2, 1]} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %s = "graph.matmul"(%q, %kt) : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %h = "graph.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %ss = "graph.mul"(%s, %h) : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %p = "graph.softmax"(%ss) : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = "graph.matmul"(%p, %v) : (tensor<2x3x5xf32>, tensor<2x5x2xf32>) -> tensor<2x3x2xf32>
  %c = "graph.attention"(%q, %k, %v) {causal = true} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x2xf32>) -> tensor<2x3x2xf32>
  return %a, %o, %c : tensor<2x3x2xf32>, tensor<2x3x2xf32>, tensor<2x3x2xf32>
}`
	seq := func(n int, f func(i int) float64) []float64 {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = f(i)
		}
		return vs
	}
	q := f32s(t, []int64{2, 3, 4}, seq(24, func(i int) float64 { return math.Sin(float64(i)) })...)
	k := f32s(t, []int64{2, 5, 4}, seq(40, func(i int) float64 { return math.Cos(float64(i) * 0.7) })...)
	v := f32s(t, []int64{2, 5, 2}, seq(20, func(i int) float64 { return float64(i%7) - 3 })...)
	out := runGraph(t, src, q, k, v)
	checkFloats(t, "attention vs primitives", out[0], []int64{2, 3, 2}, out[1].Float64s(), 1e-6)
	// Causal: query 0 sees only key 0, so its output is v[0].
	c := out[2].Float64s()
	vs := v.Float64s()
	if c[0] != vs[0] || c[1] != vs[1] {
		t.Errorf("causal attention row 0 = %v, want %v", c[:2], vs[:2])
	}
}

func TestGraphConv2D(t *testing.T) {
	src := `func.func @f(%x: tensor<1x1x3x3xf32>, %w: tensor<1x1x2x2xf32>, %b: tensor<1xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %0 = "graph.conv2d"(%x, %w, %b) : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %1 = "graph.conv2d"(%x, %w) {padding = [1, 1], strides = [2, 2]} : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0, %1 : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}`
	x := f32s(t, []int64{1, 1, 3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	w := f32s(t, []int64{1, 1, 2, 2}, 1, 0, 0, -1)
	b := f32s(t, []int64{1}, 10)
	out := runGraph(t, src, x, w, b)
	checkFloats(t, "conv2d", out[0], []int64{1, 1, 2, 2}, []float64{6, 6, 6, 6}, 0)
	// Padded by 1, stride 2: windows at (-1,-1), (-1,1), (1,-1), (1,1).
	checkFloats(t, "conv2d padded strided", out[1], []int64{1, 1, 2, 2}, []float64{-1, -3, -7, 5 - 9}, 0)
}

func TestGraphFusionAndFloat32Rounding(t *testing.T) {
	src := `func.func @f(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "graph.fusion"(%x, %y) ({
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
    %s = "graph.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %r = "graph.sub"(%s, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "graph.yield"(%r) : (tensor<2xf32>) -> ()
  }) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}`
	// (1e8 + 1) - 1e8 is 0 in float32 (it would be 1 in float64).
	out := runGraph(t, src, f32s(t, []int64{2}, 1e8, 1), f32s(t, []int64{2}, 1, 1))
	checkFloats(t, "fusion", out[0], []int64{2}, []float64{0, 1}, 0)
}

// TestGraphSpeed checks the interpreter is fast enough for tests: a
// 1M-element add and a 256³ matmul each well under a second.
func TestGraphSpeed(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	big := make([]float64, 1<<20)
	for i := range big {
		big[i] = float64(i % 100)
	}
	x := f32s(t, []int64{1 << 20}, big...)
	start := time.Now()
	runGraph(t, `func.func @f(%x: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %0 = "graph.add"(%x, %x) : (tensor<1048576xf32>, tensor<1048576xf32>) -> tensor<1048576xf32>
  return %0 : tensor<1048576xf32>
}`, x)
	if d := time.Since(start); d > time.Second {
		t.Errorf("1M-element add took %v", d)
	}
	m := f32s(t, []int64{256, 256}, big[:256*256]...)
	start = time.Now()
	runGraph(t, `func.func @f(%x: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %0 = "graph.matmul"(%x, %x) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  return %0 : tensor<256x256xf32>
}`, m)
	if d := time.Since(start); d > time.Second {
		t.Errorf("256³ matmul took %v", d)
	}
}

// TestSymbolicSizesOfArguments checks that a call's arguments must agree
// with the symbolic sizes of its parameter types: the graph ops would
// otherwise broadcast a size-1 argument, or read part of a longer one
// once lowered, where the types promise equal sizes.
func TestSymbolicSizesOfArguments(t *testing.T) {
	src := `func.func @f(%x: tensor<?x4xf32, #graph.dims<[s0, 4]>>, %y: tensor<?xf32, #graph.dims<[s0]>>) -> tensor<?xf32, #graph.dims<[s0]>> {
  %s = "graph.reduce_sum"(%x) <{axes = array<i64: 1>}> : (tensor<?x4xf32, #graph.dims<[s0, 4]>>) -> tensor<?xf32, #graph.dims<[s0]>>
  %a = "graph.add"(%s, %y) : (tensor<?xf32, #graph.dims<[s0]>>, tensor<?xf32, #graph.dims<[s0]>>) -> tensor<?xf32, #graph.dims<[s0]>>
  return %a : tensor<?xf32, #graph.dims<[s0]>>
}`
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, graph.Dialect)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "t.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	x, y1, y3 := f32s(t, []int64{3, 4}, make([]float64, 12)...), f32s(t, []int64{1}, 1), f32s(t, []int64{3}, 1, 2, 3)
	if _, err := New(m).Call("f", x, y3); err != nil {
		t.Errorf("consistent sizes: %v", err)
	}
	_, err = New(m).Call("f", x, y1)
	want := "t.mlir:1:1: error: @f argument 1 of type tensor<?xf32, #graph.dims<[s0]>> has size 1 in dim 0, but s0 = 3 (argument 0, dim 0)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("s0 = 3 and 1: error %v, want %q", err, want)
	}
}

// TestIotaOfSymbolicSizes: an iota's dynamic sizes are the values of
// the symbols that size the function's arguments (an expression of them
// too); a symbol no argument has is a located error.
func TestIotaOfSymbolicSizes(t *testing.T) {
	src := `func.func @f(%x: tensor<?xf32, #graph.dims<[s0]>>) -> tensor<?x?xi64, #graph.dims<[s0, s0*2]>> {
  %0 = "graph.iota"() <{axis = 1 : i64}> : () -> tensor<?x?xi64, #graph.dims<[s0, s0*2]>>
  return %0 : tensor<?x?xi64, #graph.dims<[s0, s0*2]>>
}`
	got := runGraph(t, src, f32s(t, []int64{2}, 0, 0))
	if s := got[0].Shape(); len(s) != 2 || s[0] != 2 || s[1] != 4 {
		t.Fatalf("shape %v, want [2 4]", s)
	}
	checkInts(t, "iota", got[0], []int64{0, 1, 2, 3, 0, 1, 2, 3})
	other := strings.ReplaceAll(src, "s0*2", "s1")
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, graph.Dialect)
	m, err := ir.Parse(ctx, other, ir.ParseOptions{Filename: "t.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(m).Call("f", f32s(t, []int64{2}, 0, 0))
	if err == nil || !strings.Contains(err.Error(), "t.mlir:2:") || !strings.Contains(err.Error(), "dim 1 is no size of the function's arguments") {
		t.Errorf("an iota sized by s1: error %v, want a located one naming dim 1", err)
	}
}

// TestHugeResults runs tiny programs whose results would need terabytes:
// each must end in a located error before anything is allocated (Go ends
// the process when an allocation fails). Static result types are checked
// before the op runs; computed ones (broadcasts of dynamic operands,
// products of empty operands, padding) by the op's rule.
func TestHugeResults(t *testing.T) {
	defer func(p, a func() uint64) { physicalMemory, availableMemory = p, a }(physicalMemory, availableMemory)
	physicalMemory = func() uint64 { return 4 << 30 }
	availableMemory = func() uint64 { return 512 << 20 }
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, graph.Dialect)
	f32 := func(shape ...int64) Value { return must(NewTensor(ir.F32, shape)) }
	for _, tc := range []struct {
		name, sig, body string
		args            []Value
		want            string
	}{
		{"iota", "() -> tensor<100000x100000xi64>",
			`%0 = "graph.iota"() {axis = 0 : i64} : () -> tensor<100000x100000xi64>`, nil,
			"'graph.iota' op a result of shape [100000 100000] and element type i64 needs 223.5 GiB, more than the 4.0 GiB of memory of this machine"},
		{"iota of more than 2^36 elements", "() -> tensor<1000000000x1000000000xf32>",
			`%0 = "graph.iota"() {axis = 0 : i64} : () -> tensor<1000000000x1000000000xf32>`, nil, "more than 2^36 elements"},
		{"broadcast_to", "(%x: tensor<1xf32>) -> tensor<100000x100000xf32>",
			`%0 = "graph.broadcast_to"(%x) {shape = [100000, 100000]} : (tensor<1xf32>) -> tensor<100000x100000xf32>`,
			[]Value{f32(1)}, "'graph.broadcast_to' op a result of shape [100000 100000] and element type f32 needs 186.3 GiB"},
		{"add of dynamic operands", "(%x: tensor<?x1xf32>, %y: tensor<1x?xf32>) -> tensor<?x?xf32>",
			`%0 = "graph.add"(%x, %y) : (tensor<?x1xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>`,
			[]Value{f32(100000, 1), f32(1, 100000)}, "'graph.add' op a result of shape [100000 100000] and element type f32 needs"},
		{"cmp of dynamic operands", "(%x: tensor<?x1xf32>, %y: tensor<1x?xf32>) -> tensor<?x?xi1>",
			`%0 = "graph.cmp"(%x, %y) {predicate = "lt"} : (tensor<?x1xf32>, tensor<1x?xf32>) -> tensor<?x?xi1>`,
			[]Value{f32(100000, 1), f32(1, 100000)}, "'graph.cmp' op a result of shape [100000 100000]"},
		{"select of dynamic operands", "(%c: tensor<?x1xi1>, %x: tensor<1x?xf32>, %y: tensor<1x1xf32>) -> tensor<?x?xf32>",
			`%0 = "graph.select"(%c, %x, %y) : (tensor<?x1xi1>, tensor<1x?xf32>, tensor<1x1xf32>) -> tensor<?x?xf32>`,
			[]Value{must(NewTensor(ir.I1, []int64{100000, 1})), f32(1, 100000), f32(1, 1)}, "'graph.select' op a result of shape [100000 100000]"},
		{"matmul with k = 0", "(%x: tensor<?x0xf32>, %y: tensor<0x?xf32>) -> tensor<?x?xf32>",
			`%0 = "graph.matmul"(%x, %y) : (tensor<?x0xf32>, tensor<0x?xf32>) -> tensor<?x?xf32>`,
			[]Value{f32(1000000, 0), f32(0, 1000000)}, "'graph.matmul' op a result of shape [1000000 1000000]"},
		{"conv2d with no channels", "(%x: tensor<?x0x?x?xf32>, %w: tensor<?x0x1x1xf32>) -> tensor<?x?x?x?xf32>",
			`%0 = "graph.conv2d"(%x, %w) : (tensor<?x0x?x?xf32>, tensor<?x0x1x1xf32>) -> tensor<?x?x?x?xf32>`,
			[]Value{f32(1, 0, 100000, 100000), f32(1000, 0, 1, 1)}, "'graph.conv2d' op a result of shape [1 1000 100000 100000]"},
		{"attention with head dim 0", "(%q: tensor<1x?x0xf32>, %k: tensor<1x?x0xf32>, %v: tensor<1x?x0xf32>) -> tensor<1x?x0xf32>",
			`%0 = "graph.attention"(%q, %k, %v) : (tensor<1x?x0xf32>, tensor<1x?x0xf32>, tensor<1x?x0xf32>) -> tensor<1x?x0xf32>`,
			[]Value{f32(1, 1000000, 0), f32(1, 1000000, 0), f32(1, 1000000, 0)}, "'graph.attention' op a result of shape [1 1000000 1000000]"},
		{"pad", "(%x: tensor<?xf32>) -> tensor<?xf32>",
			`%0 = "graph.pad"(%x) {low = [1000000000000], high = [0]} : (tensor<?xf32>) -> tensor<?xf32>`,
			[]Value{f32(2)}, "'graph.pad' op a result of shape [1000000000002] and element type f32"},
		{"pad that overflows", "(%x: tensor<?xf32>) -> tensor<?xf32>",
			`%0 = "graph.pad"(%x) {low = [9223372036854775807], high = [9223372036854775807]} : (tensor<?xf32>) -> tensor<?xf32>`,
			[]Value{f32(2)}, "'graph.pad' op padding [9223372036854775807], [9223372036854775807] of f32 of shape [2] gives dim 0 the size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "func.func @f" + strings.Replace(tc.sig, " ->", " -> ", 1) + " {\n  " + tc.body + "\n  return %0 : " +
				tc.sig[strings.LastIndex(tc.sig, "-> ")+3:] + "\n}\n"
			m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "t.mlir"})
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, src)
			}
			if err := ir.Verify(m); err != nil {
				t.Fatalf("verify: %v\n%s", err, src)
			}
			start := time.Now()
			_, err = New(m).Call("f", tc.args...)
			var d *ir.Diagnostic
			if err == nil || !errors.As(err, &d) || !strings.HasPrefix(err.Error(), "t.mlir:2:") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a located error containing %q", err, tc.want)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("took %v", el)
			}
		})
	}
}

// An attention of width 0 (no head dimension, no value columns) still has
// one score a query and key: its gradient must not index past its rows
// (rapid found it through autodiff's joint-and-partition property test).
func TestGraphAttentionGradOfWidthZero(t *testing.T) {
	src := `func.func @f(%q: tensor<1x0xf64>, %g: tensor<1x0xf64>) -> (tensor<1x0xf64>, tensor<1x0xf64>, tensor<1x0xf64>) {
  %o = "graph.attention"(%q, %q, %q) : (tensor<1x0xf64>, tensor<1x0xf64>, tensor<1x0xf64>) -> tensor<1x0xf64>
  %d:3 = "graph.attention_grad"(%q, %q, %q, %o, %g) : (tensor<1x0xf64>, tensor<1x0xf64>, tensor<1x0xf64>, tensor<1x0xf64>, tensor<1x0xf64>) -> (tensor<1x0xf64>, tensor<1x0xf64>, tensor<1x0xf64>)
  return %d#0, %d#1, %d#2 : tensor<1x0xf64>, tensor<1x0xf64>, tensor<1x0xf64>
}`
	empty, err := FromFloat64s(ir.F64, []int64{1, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range runGraph(t, src, empty, empty) {
		if n := ir.NumElements(d.Shape()); n != 0 {
			t.Errorf("gradient %d has %d elements, want 0", i, n)
		}
	}
}

// TestGraphScatterAdd checks scatter_add on a small case by hand (repeated
// and negative indices, a position none names, indices of rank 2 in the
// middle of the updates) and an index out of range.
func TestGraphScatterAdd(t *testing.T) {
	src := `func.func @f(%u: tensor<2x2x2x2xf32>, %i: tensor<2x2xi64>) -> tensor<2x4x2xf32> {
  %0 = "graph.scatter_add"(%u, %i) <{axis = -2 : i64, size = 4 : i64}> : (tensor<2x2x2x2xf32>, tensor<2x2xi64>) -> tensor<2x4x2xf32>
  return %0 : tensor<2x4x2xf32>
}`
	vs := make([]float64, 16)
	for j := range vs {
		vs[j] = float64(j + 1)
	}
	u := must(FromFloat64s(ir.F32, []int64{2, 2, 2, 2}, vs))
	i := must(FromInt64s(ir.I64, []int64{2, 2}, []int64{3, -1, 0, 1}))
	out := runGraph(t, src, u, i)
	// Index 3 twice (3 and -1): rows 0 and 1 of each outer slice sum there.
	checkFloats(t, "scatter_add", out[0], []int64{2, 4, 2}, []float64{
		5, 6, 7, 8, 0, 0, 1 + 3, 2 + 4,
		13, 14, 15, 16, 0, 0, 9 + 11, 10 + 12}, 0)
	bad := must(FromInt64s(ir.I64, []int64{2, 2}, []int64{3, 4, 0, 1}))
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, graph.Dialect)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(m).Call("f", u, bad); err == nil || !strings.Contains(err.Error(), "index 4 is out of range for axis 1 of size 4") {
		t.Errorf("index 4 of 4: error %v, want it reported out of range", err)
	}
}

// TestScatterAddIsTheAdjointOfGather checks ⟨gather(x, i), u⟩ =
// ⟨x, scatter_add(u, i)⟩ on random shapes, axes and indices, in f64 with
// integer values (exact sums).
func TestScatterAddIsTheAdjointOfGather(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		xs := rapid.SliceOfN(rapid.Int64Range(1, 4), 1, 3).Draw(rt, "x")
		axis := rapid.IntRange(0, len(xs)-1).Draw(rt, "axis")
		is := rapid.SliceOfN(rapid.Int64Range(1, 3), 0, 2).Draw(rt, "indices")
		d := xs[axis]
		idx := rapid.SliceOfN(rapid.Int64Range(-d, d-1), int(ir.NumElements(is)), int(ir.NumElements(is))).Draw(rt, "idx")
		us := slices.Concat(xs[:axis], is, xs[axis+1:])
		draw := func(label string, shape []int64) *Tensor {
			n := int(ir.NumElements(shape))
			vs := rapid.SliceOfN(rapid.Float64Range(-8, 8), n, n).Draw(rt, label)
			for j := range vs {
				vs[j] = math.Round(vs[j])
			}
			return must(FromFloat64s(ir.F64, shape, vs))
		}
		x, u := draw("xv", xs), draw("uv", us)
		ty := func(shape []int64, e string) string {
			s := "tensor<"
			for _, n := range shape {
				s += fmt.Sprintf("%dx", n)
			}
			return s + e + ">"
		}
		src := fmt.Sprintf(`func.func @f(%%x: %s, %%u: %s, %%i: %s) -> (%s, %s) {
  %%g = "graph.gather"(%%x, %%i) <{axis = %d : i64}> : (%s, %s) -> %s
  %%s = "graph.scatter_add"(%%u, %%i) <{axis = %d : i64, size = %d : i64}> : (%s, %s) -> %s
  return %%g, %%s : %s, %s
}`, ty(xs, "f64"), ty(us, "f64"), ty(is, "i64"), ty(us, "f64"), ty(xs, "f64"),
			axis, ty(xs, "f64"), ty(is, "i64"), ty(us, "f64"),
			axis, d, ty(us, "f64"), ty(is, "i64"), ty(xs, "f64"),
			ty(us, "f64"), ty(xs, "f64"))
		out := runGraph(t, src, x, u, must(FromInt64s(ir.I64, is, idx)))
		dot := func(a, b *Tensor) float64 {
			s := 0.0
			for j, v := range a.Float64s() {
				s += v * b.Float64s()[j]
			}
			return s
		}
		if l, r := dot(out[0], u), dot(x, out[1]); l != r {
			rt.Fatalf("⟨gather(x), u⟩ = %g, ⟨x, scatter_add(u)⟩ = %g\n%s", l, r, src)
		}
	})
}
