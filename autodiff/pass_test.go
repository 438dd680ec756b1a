package autodiff

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/interp"
)

// runPass parses src, runs pipeline on it and returns the module.
func runPass(t *testing.T, src, pipeline string) (*ir.Operation, error) {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "test.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		return nil, err
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("the output does not verify: %v\n%s", err, ir.Sprint(m, ir.PrintOptions{}))
	}
	return m, nil
}

func tensor(t *testing.T, shape []int64, vs ...float64) *interp.Tensor {
	t.Helper()
	x, err := interp.FromFloat64s(ir.F64, shape, vs)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// callGrad runs fn on args and returns its results as float64 slices.
func callGrad(t *testing.T, m *ir.Operation, fn string, args ...*interp.Tensor) [][]float64 {
	t.Helper()
	outs, err := interp.New(m).Call(fn, values(args)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, ir.Sprint(m, ir.PrintOptions{}))
	}
	res := make([][]float64, len(outs))
	for i, o := range outs {
		res[i] = o.(*interp.Tensor).Float64s()
	}
	return res
}

func near(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) <= 1e-12*(1+math.Abs(y)) })
}

// Ties share the gradient: half each for max, evenly for reduce_max.
func TestTies(t *testing.T) {
	m, err := runPass(t, `
func.func @f(%a: tensor<3xf64>, %b: tensor<3xf64>) -> (tensor<3xf64>, tensor<f64>) {
  %0 = "graph.max"(%a, %b) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %1 = "graph.reduce_max"(%a) <{axes = [0], keepdims = false}> : (tensor<3xf64>) -> tensor<f64>
  return %0, %1 : tensor<3xf64>, tensor<f64>
}`, "builtin.module(graph-autodiff)")
	if err != nil {
		t.Fatal(err)
	}
	a, b := tensor(t, []int64{3}, 3, 1, 3), tensor(t, []int64{3}, 3, 2, 0)
	got := callGrad(t, m, "f_grad", a, b, tensor(t, []int64{3}, 1, 1, 1), tensor(t, nil, 0))
	if !near(got[0], []float64{0.5, 0, 1}) || !near(got[1], []float64{0.5, 1, 0}) {
		t.Errorf("max: got %v and %v, want [0.5 0 1] and [0.5 1 0]", got[0], got[1])
	}
	got = callGrad(t, m, "f_grad", a, b, tensor(t, []int64{3}, 0, 0, 0), tensor(t, nil, 4))
	if !near(got[0], []float64{2, 0, 2}) {
		t.Errorf("reduce_max: got %v, want [2 0 2]", got[0])
	}
}

// A value used several times accumulates its gradients; an argument that
// does not reach the results gets zeros; comparisons, argmax and integer
// casts pass nothing back.
func TestAccumulationAndNonDifferentiable(t *testing.T) {
	m, err := runPass(t, `
func.func @f(%x: tensor<2xf64>, %unused: tensor<2x2xf64>) -> (tensor<2xf64>, tensor<i64>) {
  %e = "graph.exp"(%x) : (tensor<2xf64>) -> tensor<2xf64>
  %sq = "graph.mul"(%x, %x) : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  %s = "graph.add"(%sq, %e) : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  %zero = "graph.constant"() <{value = dense<0.0> : tensor<f64>}> : () -> tensor<f64>
  %pos = "graph.cmp"(%x, %zero) <{predicate = "gt"}> : (tensor<2xf64>, tensor<f64>) -> tensor<2xi1>
  %i = "graph.cast"(%x) : (tensor<2xf64>) -> tensor<2xi32>
  %back = "graph.cast"(%i) : (tensor<2xi32>) -> tensor<2xf64>
  %sel = "graph.select"(%pos, %s, %back) : (tensor<2xi1>, tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  %am = "graph.argmax"(%x) <{axis = 0 : i64}> : (tensor<2xf64>) -> tensor<i64>
  return %sel, %am : tensor<2xf64>, tensor<i64>
}`, "builtin.module(graph-autodiff)")
	if err != nil {
		t.Fatal(err)
	}
	x := tensor(t, []int64{2}, 0.5, -1.5)
	ct, err := interp.FromInt64s(ir.I64, nil, []int64{7})
	if err != nil {
		t.Fatal(err)
	}
	got := callGrad(t, m, "f_grad", x, tensor(t, []int64{2, 2}, 1, 2, 3, 4), tensor(t, []int64{2}, 1, 1), ct)
	if want := []float64{2*0.5 + math.Exp(0.5), 0}; !near(got[0], want) {
		t.Errorf("gradient of x: got %v, want %v", got[0], want)
	}
	if !near(got[1], []float64{0, 0, 0, 0}) {
		t.Errorf("gradient of an unused argument: got %v, want zeros", got[1])
	}
}

func TestWrtAndFuncOptions(t *testing.T) {
	src := `
func.func @f(%x: tensor<2xf64>, %y: tensor<2xf64>) -> tensor<2xf64> {
  %0 = "graph.mul"(%x, %y) : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  return %0 : tensor<2xf64>
}
func.func @g(%x: tensor<2xf64>) -> tensor<2xf64> {
  return %x : tensor<2xf64>
}
func.func private @h(%x: tensor<2xf64>) -> tensor<2xf64> {
  return %x : tensor<2xf64>
}`
	m, err := runPass(t, src, "builtin.module(graph-autodiff{wrt=1 func=f})")
	if err != nil {
		t.Fatal(err)
	}
	got := callGrad(t, m, "f_grad", tensor(t, []int64{2}, 2, 3), tensor(t, []int64{2}, 5, 7), tensor(t, []int64{2}, 1, 10))
	if len(got) != 1 || !near(got[0], []float64{2, 30}) {
		t.Errorf("f_grad with wrt=1: got %v, want [[2 30]]", got)
	}
	if interp.New(m).Func("g_grad") != nil {
		t.Error("func=f also differentiated @g")
	}
	m, err = runPass(t, src, "builtin.module(graph-autodiff)")
	if err != nil {
		t.Fatal(err)
	}
	in := interp.New(m)
	if in.Func("f_grad") == nil || in.Func("g_grad") == nil || in.Func("h_grad") != nil {
		t.Errorf("default: want @f_grad and @g_grad only\n%s", ir.Sprint(m, ir.PrintOptions{}))
	}
	got = callGrad(t, m, "g_grad", tensor(t, []int64{2}, 2, 3), tensor(t, []int64{2}, 4, 5))
	if !near(got[0], []float64{4, 5}) {
		t.Errorf("identity: got %v, want the cotangent", got[0])
	}
}

// Bad requests are located errors, never panics.
func TestErrors(t *testing.T) {
	for _, c := range []struct{ name, src, pipeline, want string }{
		{"integer wrt", `
func.func @f(%x: tensor<2xi64>) -> tensor<2xi64> {
  return %x : tensor<2xi64>
}`, "builtin.module(graph-autodiff{wrt=0})", "only floating-point tensors have gradients"},
		{"out of range", `
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}`, "builtin.module(graph-autodiff{wrt=3})", "@f has 1 arguments"},
		{"twice", `
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}`, "builtin.module(graph-autodiff{wrt=0,0})", "listed twice"},
		{"exists", `
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func private @f_grad() {
  return
}`, "builtin.module(graph-autodiff{func=f})", "@f_grad: the symbol already exists"},
		{"no such func", `
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}`, "builtin.module(graph-autodiff{func=nope})", "no function named @nope"},
		{"fusion", `
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "graph.fusion"(%x) ({
  ^bb0(%a: tensor<4xf32>):
    %r = "graph.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "graph.yield"(%r) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}`, "builtin.module(graph-autodiff)", "test.mlir:3:8: error: no VJP for 'graph.fusion'"},
		{"dynamic", `
func.func @f(%x: tensor<?xf32>) -> tensor<f32> {
  %0 = "graph.reduce_sum"(%x) : (tensor<?xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}`, "builtin.module(graph-autodiff)", "autodiff needs static tensor shapes, got tensor<?xf32>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := runPass(t, c.src, c.pipeline)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestDifferentiable(t *testing.T) {
	for name, want := range map[string]bool{"graph.matmul": true, "graph.argmax": true, "graph.conv2d": true, "graph.fusion": false} {
		if got := Differentiable(name); got != want {
			t.Errorf("Differentiable(%q) = %v, want %v", name, got, want)
		}
	}
}
