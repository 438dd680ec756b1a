package stablehlo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/npy"
)

// convertText parses a StableHLO module, converts it and checks that no
// stablehlo op remains.
func convertText(t *testing.T, text string) *ir.Operation {
	t.Helper()
	ctx := dialects.NewContext()
	mod, err := ir.Parse(ctx, text, ir.ParseOptions{Filename: "in.mlir"})
	if err == nil {
		err = ir.Verify(mod)
	}
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := Convert(ctx, mod); err != nil {
		t.Fatalf("convert: %v", err)
	}
	if err := ir.Verify(mod); err != nil {
		t.Fatalf("verify after conversion: %v\n%s", err, mod)
	}
	if s := mod.String(); strings.Contains(s, "stablehlo.") {
		t.Fatalf("stablehlo ops remain:\n%s", s)
	}
	return mod
}

func randT(rng *rand.Rand, shape ...int64) (*interp.Tensor, []float64) {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = float64(float32(rng.Float64()*2 - 1))
	}
	x, _ := interp.FromFloat64s(ir.F32, shape, vs)
	return x, vs
}

func run(t *testing.T, mod *ir.Operation, args ...interp.Value) *interp.Tensor {
	t.Helper()
	res, err := interp.New(mod).Call("main", args...)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res[0].(*interp.Tensor)
}

func near(t *testing.T, what string, got *interp.Tensor, shape []int64, want []float64, tol float64) {
	t.Helper()
	if len(got.Shape()) != len(shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	for i := range shape {
		if got.Shape()[i] != shape[i] {
			t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
		}
	}
	g := got.Float64s()
	for i := range g {
		if math.Abs(g[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s: element %d is %v, want %v", what, i, g[i], want[i])
		}
	}
}

// An MLP as JAX prints it: dot_general, broadcast_in_dim, maximum, a
// softmax from reduce (max, add), exponential and divide, through a call
// to a private function.
const mlp = `module @jit_mlp attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<4x5xf32>, %arg2: tensor<5xf32>) -> (tensor<3x5xf32> {jax.result_info = ""}) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]}> : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
    %1 = "stablehlo.broadcast_in_dim"(%arg2) <{broadcast_dimensions = array<i64: 1>}> : (tensor<5xf32>) -> tensor<3x5xf32>
    %2 = "stablehlo.add"(%0, %1) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    %3 = "func.call"(%2) <{callee = @relu}> : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %4 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %5 = "stablehlo.reduce"(%3, %4) <{dimensions = array<i64: 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%m) : (tensor<f32>) -> ()
    }) : (tensor<3x5xf32>, tensor<f32>) -> tensor<3xf32>
    %6 = "stablehlo.broadcast_in_dim"(%5) <{broadcast_dimensions = array<i64: 0>}> : (tensor<3xf32>) -> tensor<3x5xf32>
    %7 = "stablehlo.subtract"(%3, %6) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    %8 = "stablehlo.exponential"(%7) : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %9 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %10 = "stablehlo.reduce"(%8, %9) <{dimensions = array<i64: 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<3x5xf32>, tensor<f32>) -> tensor<3xf32>
    %11 = "stablehlo.broadcast_in_dim"(%10) <{broadcast_dimensions = array<i64: 0>}> : (tensor<3xf32>) -> tensor<3x5xf32>
    %12 = "stablehlo.divide"(%8, %11) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    return %12 : tensor<3x5xf32>
  }
  func.func private @relu(%arg0: tensor<3x5xf32>) -> tensor<3x5xf32> {
    %0 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %1 = "stablehlo.broadcast_in_dim"(%0) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<3x5xf32>
    %2 = "stablehlo.maximum"(%arg0, %1) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    return %2 : tensor<3x5xf32>
  }
}`

func TestMLP(t *testing.T) {
	mod := convertText(t, mlp)
	rng := rand.New(rand.NewPCG(1, 1))
	x, xs := randT(rng, 3, 4)
	w, ws := randT(rng, 4, 5)
	b, bs := randT(rng, 5)
	want := make([]float64, 15)
	for i := range 3 {
		var rowMax, sum float64 = math.Inf(-1), 0
		for j := range 5 {
			var s float64
			for k := range 4 {
				s += xs[i*4+k] * ws[k*5+j]
			}
			want[i*5+j] = math.Max(s+bs[j], 0)
			rowMax = math.Max(rowMax, want[i*5+j])
		}
		for j := range 5 {
			want[i*5+j] = math.Exp(want[i*5+j] - rowMax)
			sum += want[i*5+j]
		}
		for j := range 5 {
			want[i*5+j] /= sum
		}
	}
	near(t, "mlp", run(t, mod, x, w, b), []int64{3, 5}, want, 1e-5)
}

// Batched dot_general (an attention score einsum bqhd,bkhd->bhqk), iota,
// compare, select (a causal mask), transpose and a gather (embedding).
const attention = `func.func @main(%q: tensor<2x3x2x4xf32>, %k: tensor<2x3x2x4xf32>, %emb: tensor<5x4xf32>, %ids: tensor<2x3xi32>) -> (tensor<2x2x3x3xf32>, tensor<2x3x4xf32>) {
  %0 = "stablehlo.dot_general"(%q, %k) <{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 2], rhs_batching_dimensions = [0, 2], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [3]>}> : (tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>) -> tensor<2x2x3x3xf32>
  %1 = "stablehlo.iota"() <{iota_dimension = 0 : i64}> : () -> tensor<3x3xi32>
  %2 = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<3x3xi32>
  %3 = "stablehlo.compare"(%1, %2) <{comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>}> : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
  %4 = "stablehlo.broadcast_in_dim"(%3) <{broadcast_dimensions = array<i64: 2, 3>}> : (tensor<3x3xi1>) -> tensor<2x2x3x3xi1>
  %5 = "stablehlo.constant"() <{value = dense<-1.000000e+09> : tensor<2x2x3x3xf32>}> : () -> tensor<2x2x3x3xf32>
  %6 = "stablehlo.select"(%4, %0, %5) : (tensor<2x2x3x3xi1>, tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %7 = "stablehlo.broadcast_in_dim"(%ids) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<2x3xi32>) -> tensor<2x3x1xi32>
  %8 = "stablehlo.gather"(%emb, %7) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}> : (tensor<5x4xf32>, tensor<2x3x1xi32>) -> tensor<2x3x4xf32>
  return %6, %8 : tensor<2x2x3x3xf32>, tensor<2x3x4xf32>
}`

func TestAttentionPieces(t *testing.T) {
	mod := convertText(t, attention)
	rng := rand.New(rand.NewPCG(2, 2))
	q, qs := randT(rng, 2, 3, 2, 4)
	k, ks := randT(rng, 2, 3, 2, 4)
	emb, es := randT(rng, 5, 4)
	ids, _ := interp.FromInt64s(ir.I32, []int64{2, 3}, []int64{4, 0, 2, 1, 1, 3})
	res, err := interp.New(mod).Call("main", q, k, emb, ids)
	if err != nil {
		t.Fatal(err)
	}
	at := func(vs []float64, b, s, h, d int) float64 { return vs[((b*3+s)*2+h)*4+d] }
	var want []float64
	for b := range 2 {
		for h := range 2 {
			for i := range 3 {
				for j := range 3 {
					var s float64
					for d := range 4 {
						s += at(qs, b, i, h, d) * at(ks, b, j, h, d)
					}
					if j > i {
						s = float64(float32(-1e9))
					}
					want = append(want, s)
				}
			}
		}
	}
	near(t, "scores", res[0].(*interp.Tensor), []int64{2, 2, 3, 3}, want, 1e-5)
	var gw []float64
	for _, id := range []int{4, 0, 2, 1, 1, 3} {
		gw = append(gw, es[id*4:id*4+4]...)
	}
	near(t, "gather", res[1].(*interp.Tensor), []int64{2, 3, 4}, gw, 0)
}

// An NHWC convolution (Flax's layout) with padding, then average pooling
// by reduce_window with SAME padding, and max pooling in NCHW.
const cnn = `func.func @main(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x3xf32>) -> (tensor<1x5x5x3xf32>, tensor<1x5x5x3xf32>, tensor<1x3x2x2xf32>) {
  %0 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 1, 1>}> : (tensor<1x5x5x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x5x5x3xf32>
  %1 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %2 = "stablehlo.reduce_window"(%0, %1) <{padding = dense<[[0, 0], [0, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 1, 1, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) : (tensor<1x5x5x3xf32>, tensor<f32>) -> tensor<1x5x5x3xf32>
  %3 = "stablehlo.transpose"(%0) <{permutation = array<i64: 0, 3, 1, 2>}> : (tensor<1x5x5x3xf32>) -> tensor<1x3x5x5xf32>
  %4 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
  %5 = "stablehlo.reduce_window"(%3, %4) <{window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%m) : (tensor<f32>) -> ()
  }) : (tensor<1x3x5x5xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  return %0, %2, %5 : tensor<1x5x5x3xf32>, tensor<1x5x5x3xf32>, tensor<1x3x2x2xf32>
}`

func TestCNN(t *testing.T) {
	mod := convertText(t, cnn)
	rng := rand.New(rand.NewPCG(3, 3))
	x, xs := randT(rng, 1, 5, 5, 2)
	w, ws := randT(rng, 3, 3, 2, 3)
	res, err := interp.New(mod).Call("main", x, w)
	if err != nil {
		t.Fatal(err)
	}
	conv := make([]float64, 75)
	for i := range 5 {
		for j := range 5 {
			for o := range 3 {
				var s float64
				for u := range 3 {
					for v := range 3 {
						y, z := i+u-1, j+v-1
						if y < 0 || y >= 5 || z < 0 || z >= 5 {
							continue
						}
						for c := range 2 {
							s += xs[(y*5+z)*2+c] * ws[((u*3+v)*2+c)*3+o]
						}
					}
				}
				conv[(i*5+j)*3+o] = s
			}
		}
	}
	near(t, "conv", res[0].(*interp.Tensor), []int64{1, 5, 5, 3}, conv, 1e-5)
	sum := make([]float64, 75)
	for i := range 5 {
		for j := range 5 {
			for o := range 3 {
				for _, p := range [][2]int{{i, j}, {i + 1, j}, {i, j + 1}, {i + 1, j + 1}} {
					if p[0] < 5 && p[1] < 5 {
						sum[(i*5+j)*3+o] += conv[(p[0]*5+p[1])*3+o]
					}
				}
			}
		}
	}
	near(t, "window sum", res[1].(*interp.Tensor), []int64{1, 5, 5, 3}, sum, 1e-5)
	var mx []float64
	for o := range 3 {
		for i := range 2 {
			for j := range 2 {
				m := math.Inf(-1)
				for u := range 2 {
					for v := range 2 {
						m = math.Max(m, conv[((2*i+u)*5+2*j+v)*3+o])
					}
				}
				mx = append(mx, m)
			}
		}
	}
	near(t, "max pool", res[2].(*interp.Tensor), []int64{1, 3, 2, 2}, mx, 1e-6)
}

// TestRefused: custom_call and unsupported bodies are located errors.
func TestRefused(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.custom_call"(%x) <{call_target_name = "cublas_gemm"}> : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}`, `in.mlir:2:8: error: 'stablehlo.custom_call' op custom_call "cublas_gemm" is not supported`},
		{`func.func @main(%x: tensor<2xf32>, %i: tensor<f32>) -> tensor<f32> {
  %0 = "stablehlo.reduce"(%x, %i) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = "stablehlo.multiply"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%m) : (tensor<f32>) -> ()
  }) : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}`, "a body of stablehlo.multiply is not supported"},
		// A stride of 0 repeated the first window (a result, silently); a
		// result type larger than the window gives read past the input.
		{reduceWindowText("window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 0>", "2x2"), "want sizes, strides and dilations ≥ 1"},
		{reduceWindowText("window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 2>", "2x3"), "the result type tensor<2x3xf32> does not match the window [1 2]"},
		{`func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "stablehlo.negate"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}`, "only static shapes are supported"},
	} {
		ctx := dialects.NewContext()
		mod, err := ir.Parse(ctx, tc.text, ir.ParseOptions{Filename: "in.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		err = Convert(ctx, mod)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// reduceWindowText is a max pooling of a [2, 5] input by reduce_window
// with attrs, declared to give a [out] result.
func reduceWindowText(attrs, out string) string {
	return fmt.Sprintf(`func.func @main(%%x: tensor<2x5xf32>) -> tensor<%[2]sxf32> {
  %%i = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
  %%0 = "stablehlo.reduce_window"(%%x, %%i) <{%[1]s}> ({
  ^bb0(%%a: tensor<f32>, %%b: tensor<f32>):
    %%m = "stablehlo.maximum"(%%a, %%b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%%m) : (tensor<f32>) -> ()
  }) : (tensor<2x5xf32>, tensor<f32>) -> tensor<%[2]sxf32>
  return %%0 : tensor<%[2]sxf32>
}`, attrs, out)
}

// TestVerifier: the dialect rejects malformed dimension numbers.
func TestVerifier(t *testing.T) {
	text := `func.func @main(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = "stablehlo.dot_general"(%x, %x) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1, 0], rhs_contracting_dimensions = [1]>}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}`
	ctx := dialects.NewContext()
	mod, err := ir.Parse(ctx, text, ir.ParseOptions{Filename: "in.mlir"})
	if err == nil {
		err = ir.Verify(mod)
	}
	if err == nil || !strings.Contains(err.Error(), "differ in count") {
		t.Errorf("got %v", err)
	}
}

// TestJAXExports runs programs exported from JAX 0.11 (testdata, made by
// testdata/export_jax.py: an MLP, a CNN with NCHW and NHWC convolutions
// and reduce_window pooling, a causal attention block with an embedding
// gather) and compares with JAX's outputs.
func TestJAXExports(t *testing.T) {
	for _, name := range []string{"mlp", "cnn", "attention"} {
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", name+".mlir"))
			if err != nil {
				t.Fatal(err)
			}
			mod := convertText(t, string(text))
			var args []interp.Value
			ins, _ := filepath.Glob(filepath.Join("testdata", name+".in*.npy"))
			for _, in := range ins {
				args = append(args, readNPY(t, in))
			}
			want := readNPY(t, filepath.Join("testdata", name+".out.npy"))
			near(t, name, run(t, mod, args...), want.Shape(), want.Float64s(), 1e-4)
		})
	}
}

func readNPY(t *testing.T, path string) *interp.Tensor {
	t.Helper()
	arr, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	elem := map[npy.DType]ir.Type{npy.Float32: ir.F32, npy.Int32: ir.I32, npy.Int64: ir.I64}[arr.DType]
	v, err := interp.FromNPY(arr, ir.TensorOf(arr.Shape, elem))
	if err != nil {
		t.Fatal(err)
	}
	return v.(*interp.Tensor)
}
