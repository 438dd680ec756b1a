package decompose_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/decompose"
	"github.com/strata-ir/strata/runtime/interp"
)

func run(t *testing.T, src string) (*ir.Operation, error) {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "in.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("func.func(graph-decompose)")
	if err != nil {
		t.Fatal(err)
	}
	return m, pm.Run(ctx, m)
}

// Every composite of the dialect is expanded; the semantics of each
// expansion are property-tested in passes/passtest.
func TestCompositesExpand(t *testing.T) {
	m, err := run(t, `
func.func @f(%x: tensor<?x4xf32>, %w: tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xf32>) {
  %0 = "graph.softmax"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = "graph.log_softmax"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = "graph.layer_norm"(%x, %w, %w) : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %3 = "graph.rms_norm"(%x, %w) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %4 = "graph.attention"(%x, %x, %x) : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %5:3 = "graph.attention_grad"(%x, %x, %x, %x, %x) : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>)
  %6 = "graph.logsumexp"(%x) : (tensor<?x4xf32>) -> tensor<?xf32>
  return %0, %1, %2, %3, %4, %5#1, %6 : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xf32>
}`)
	if err != nil {
		t.Fatal(err)
	}
	text := m.String()
	for _, name := range decompose.Composites() {
		if strings.Contains(text, name) {
			t.Errorf("%s survived:\n%s", name, text)
		}
	}
	if len(decompose.Composites()) != 7 {
		t.Errorf("Composites() = %v, want the seven composites", decompose.Composites())
	}
}

// A causal mask over dynamic lengths that no symbol names, or a default
// scale over a dynamic head size, has nothing to build from: a located
// error, not a panic.
func TestDynamicSizesAreDiagnosed(t *testing.T) {
	for _, tc := range []struct{ typ, attrs, want string }{
		{"tensor<?x4xf32>", "<{causal = true}>", "causal mask needs sequence lengths that are static or named by symbols"},
		{"tensor<4x?xf32>", "", "default scale 1/√D needs a static D"},
	} {
		_, err := run(t, `
func.func @f(%x: `+tc.typ+`) -> `+tc.typ+` {
  %0 = "graph.attention"(%x, %x, %x) `+tc.attrs+` : (`+tc.typ+`, `+tc.typ+`, `+tc.typ+`) -> `+tc.typ+`
  return %0 : `+tc.typ+`
}`)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "in.mlir:3:") {
			t.Errorf("%s %s: got %v, want a located error containing %q", tc.typ, tc.attrs, err, tc.want)
		}
	}
}

// compositeCases are programs of one composite each over %x (and %w, %b,
// %m where the op takes them), with the text of x's type and of the weight
// type substituted in; the result has x's type, or R's (x's shape without
// its last dim) when the body names it.
var compositeCases = []struct{ name, body string }{
	{"softmax", `%0 = "graph.softmax"(%x) <{axis = 1 : i64}> : (X) -> X`},
	{"log_softmax", `%0 = "graph.log_softmax"(%x) <{axis = -1 : i64}> : (X) -> X`},
	{"logsumexp", `%0 = "graph.logsumexp"(%x) <{axis = -1 : i64}> : (X) -> R`},
	{"layer_norm", `%0 = "graph.layer_norm"(%x, %w, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f64}> : (X, W, W) -> X`},
	{"rms_norm", `%0 = "graph.rms_norm"(%x, %w) <{axis = -1 : i64, epsilon = 1.0e-01 : f32}> : (X, W) -> X`},
	{"attention", `%0 = "graph.attention"(%x, %x, %x) <{causal = true}> : (X, X, X) -> X`},
	{"attention_mask", `%0 = "graph.attention"(%x, %x, %x, %m) <{scale = 0.3 : f64}> : (X, X, X, M) -> X`},
}

// TestExpansionsAreBitIdentical runs each composite and its expansion in
// the interpreter on random inputs of every float type and requires the
// same bits: f16 and bf16 composites compute in f32 and round once in both
// forms, and every step of the expansion rounds as the composite's rule.
func TestExpansionsAreBitIdentical(t *testing.T) {
	for _, tc := range compositeCases {
		t.Run(tc.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				elem := rapid.SampledFrom([]string{"f64", "f32", "f16", "bf16"}).Draw(rt, "elem")
				rows := rapid.IntRange(1, 4).Draw(rt, "rows")
				cols := rapid.IntRange(1, 40).Draw(rt, "cols")
				x := fmt.Sprintf("tensor<2x%dx%dx%s>", rows, cols, elem)
				w := fmt.Sprintf("tensor<%dx%s>", cols, elem)
				m := fmt.Sprintf("tensor<%dx%dx%s>", rows, rows, elem)
				out := x
				if strings.Contains(tc.body, "R") {
					out = fmt.Sprintf("tensor<2x%dx%s>", rows, elem)
				}
				body := strings.NewReplacer("X", x, "W", w, "M", m, "R", out).Replace(tc.body)
				src := fmt.Sprintf("func.func @f(%%x: %s, %%w: %s, %%b: %s, %%m: %s) -> %s {\n  %s\n  return %%0 : %s\n}", x, w, w, m, out, body, out)
				args := randomArgs(rt, floatTypes[elem], []int64{2, int64(rows), int64(cols)}, []int64{int64(cols)}, []int64{int64(cols)}, []int64{int64(rows), int64(rows)})
				sameBitsAfterDecompose(rt, src, args)
			})
		})
	}
}

// TestAttentionGradExpansionIsBitIdentical runs graph.attention_grad and
// its expansion in the interpreter on random q, k, v, o and do (o need
// not be attention's result: both forms take D from it) of every float
// type, causal or not, and requires the same bits in dq, dk and dv.
func TestAttentionGradExpansionIsBitIdentical(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		elem := rapid.SampledFrom([]string{"f64", "f32", "f16", "bf16"}).Draw(rt, "elem")
		lq := int64(rapid.IntRange(1, 9).Draw(rt, "lq"))
		lk := int64(rapid.IntRange(1, 9).Draw(rt, "lk"))
		d := int64(rapid.IntRange(1, 6).Draw(rt, "d"))
		dv := int64(rapid.IntRange(1, 6).Draw(rt, "dv"))
		attrs := rapid.SampledFrom([]string{"", "<{causal = true}>", "<{scale = -0.7 : f64}>", "<{causal = true, scale = 2.0 : f64}>"}).Draw(rt, "attrs")
		ty := func(a, b int64) string { return fmt.Sprintf("tensor<2x%dx%dx%s>", a, b, elem) }
		tq, tk, tv, to := ty(lq, d), ty(lk, d), ty(lk, dv), ty(lq, dv)
		src := fmt.Sprintf(`func.func @f(%%q: %[1]s, %%k: %[2]s, %%v: %[3]s, %%o: %[4]s, %%do: %[4]s) -> (%[1]s, %[2]s, %[3]s) {
  %%0:3 = "graph.attention_grad"(%%q, %%k, %%v, %%o, %%do) %[5]s : (%[1]s, %[2]s, %[3]s, %[4]s, %[4]s) -> (%[1]s, %[2]s, %[3]s)
  return %%0#0, %%0#1, %%0#2 : %[1]s, %[2]s, %[3]s
}`, tq, tk, tv, to, attrs)
		args := randomArgs(rt, floatTypes[elem], []int64{2, lq, d}, []int64{2, lk, d}, []int64{2, lk, dv}, []int64{2, lq, dv}, []int64{2, lq, dv})
		if parts := sameBitsAfterDecompose(rt, src, args); strings.Contains(parts.String(), "attention_grad") {
			rt.Fatalf("attention_grad survived:\n%s", parts)
		}
	})
}

// sameBitsAfterDecompose parses src twice, runs graph-decompose on one
// copy, calls @f of both on args in the interpreter and requires the same
// bits in every result. It returns the decomposed module.
func sameBitsAfterDecompose(rt *rapid.T, src string, args []interp.Value) *ir.Operation {
	ctx := dialects.NewContext()
	whole, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "in.mlir"})
	if err != nil {
		rt.Fatal(err)
	}
	parts, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "in.mlir"})
	if err != nil {
		rt.Fatal(err)
	}
	pm, err := passes.Parse("func.func(graph-decompose)")
	if err != nil {
		rt.Fatal(err)
	}
	if err := pm.Run(ctx, parts); err != nil {
		rt.Fatal(err)
	}
	want, err := interp.New(whole).Call("f", args...)
	if err != nil {
		rt.Fatal(err)
	}
	got, err := interp.New(parts).Call("f", args...)
	if err != nil {
		rt.Fatal(err)
	}
	for r := range want {
		g, wv := got[r].(*interp.Tensor).Float64s(), want[r].(*interp.Tensor).Float64s()
		for i := range g {
			if math.Float64bits(g[i]) != math.Float64bits(wv[i]) && !(math.IsNaN(g[i]) && math.IsNaN(wv[i])) {
				rt.Fatalf("result %d, element %d: decomposition %g, composite %g\n%s", r, i, g[i], wv[i], parts)
			}
		}
	}
	return parts
}

var floatTypes = map[string]*ir.FloatType{"f64": ir.F64, "f32": ir.F32, "f16": ir.F16, "bf16": ir.BF16}

// randomArgs draws one tensor of elem for each shape, values in [-4, 4].
func randomArgs(rt *rapid.T, elem *ir.FloatType, shapes ...[]int64) []interp.Value {
	args := make([]interp.Value, len(shapes))
	for i, shape := range shapes {
		n := int(ir.NumElements(shape))
		vs := rapid.SliceOfN(rapid.Float64Range(-4, 4), n, n).Draw(rt, fmt.Sprint("arg", i))
		t, err := interp.FromFloat64s(elem, shape, vs)
		if err != nil {
			rt.Fatal(err)
		}
		args[i] = t
	}
	return args
}

// TestLogSumExpEdgeRows runs logsumexp and its expansion over dynamic
// sizes (the axis dropped by a reshape with one dynamic size left, by a
// maximum over the axis with two) on rows that a naive exp-sum-log gets
// wrong: all -inf, one +inf, a NaN, and large values that overflow exp.
func TestLogSumExpEdgeRows(t *testing.T) {
	inf := math.Inf(1)
	rows := []float64{
		math.Inf(-1), math.Inf(-1), math.Inf(-1),
		1, inf, 2,
		math.NaN(), 1, 2,
		1000, 1000, 1000,
	}
	want := []float64{math.Inf(-1), inf, math.NaN(), float64(float32(1000 + float32(math.Log(3))))}
	for _, tc := range []struct{ in, out string }{
		{"tensor<?x3xf32>", "tensor<?xf32>"},
		{"tensor<?x?x3xf32>", "tensor<?x?xf32>"},
	} {
		shape := []int64{4, 3}
		if strings.Count(tc.in, "?") == 2 {
			shape = []int64{2, 2, 3}
		}
		x, err := interp.FromFloat64s(ir.F32, shape, rows)
		if err != nil {
			t.Fatal(err)
		}
		src := fmt.Sprintf("func.func @f(%%x: %s) -> %s {\n  %%0 = \"graph.logsumexp\"(%%x) : (%s) -> %s\n  return %%0 : %s\n}", tc.in, tc.out, tc.in, tc.out, tc.out)
		rapid.Check(t, func(rt *rapid.T) {
			parts := sameBitsAfterDecompose(rt, src, []interp.Value{x})
			got, err := interp.New(parts).Call("f", x)
			if err != nil {
				rt.Fatal(err)
			}
			vs := got[0].(*interp.Tensor).Float64s()
			for i, w := range want {
				if !(vs[i] == w || math.IsNaN(vs[i]) && math.IsNaN(w)) {
					rt.Errorf("%s: row %d = %v, want %v", tc.in, i, vs[i], w)
				}
			}
		})
	}
}
