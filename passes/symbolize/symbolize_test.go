package symbolize_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/symbolize"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/sym"
	"pgregory.net/rapid"
)

// program is a static program whose leading size is N: broadcasting
// against a 1-row input, matmul, reshape with -1, concat, a reduction.
const program = `
func.func @main(%x: tensor<N x8xf32>, %y: tensor<N x8xf32>, %b: tensor<1x8xf32>, %w: tensor<8x4xf32>) -> (tensor<N x4xf32>, tensor<M xf32>, tensor<4xf32>) {
  %0 = "graph.add"(%x, %y) : (tensor<N x8xf32>, tensor<N x8xf32>) -> tensor<N x8xf32>
  %1 = "graph.mul"(%0, %b) : (tensor<N x8xf32>, tensor<1x8xf32>) -> tensor<N x8xf32>
  %2 = "graph.matmul"(%1, %w) : (tensor<N x8xf32>, tensor<8x4xf32>) -> tensor<N x4xf32>
  %3 = "graph.tanh"(%2) : (tensor<N x4xf32>) -> tensor<N x4xf32>
  %4 = "graph.reshape"(%3) <{shape = [-1]}> : (tensor<N x4xf32>) -> tensor<M xf32>
  %5 = "graph.concat"(%3, %2) <{axis = 0 : i64}> : (tensor<N x4xf32>, tensor<N x4xf32>) -> tensor<K x4xf32>
  %6 = "graph.reduce_max"(%5) <{axes = [0], keepdims = false}> : (tensor<K x4xf32>) -> tensor<4xf32>
  return %3, %4, %6 : tensor<N x4xf32>, tensor<M xf32>, tensor<4xf32>
}`

func static(n int) string {
	r := strings.NewReplacer("N x", fmt.Sprintf("%dx", n), "M x", fmt.Sprintf("%dx", 4*n), "K x", fmt.Sprintf("%dx", 2*n))
	return r.Replace(program)
}

// tb is what parse needs of a test: *testing.T and *rapid.T both fit.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

func parse(t tb, src string) *ir.Operation {
	t.Helper()
	mod, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{Filename: "p.mlir"})
	if err == nil {
		err = ir.Verify(mod)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return mod
}

func symbolized(t *testing.T, src, pipeline string) *ir.Operation {
	t.Helper()
	mod := parse(t, src)
	pm, err := passes.Parse(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(dialects.NewContext(), mod); err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(mod); err != nil {
		t.Fatalf("symbolized program does not verify: %v\n%s", err, ir.Sprint(mod, ir.PrintOptions{}))
	}
	return mod
}

func fn(mod *ir.Operation) *ir.Operation { return mod.Region(0).Front().First() }

func TestSymbolizeTypesAndGuards(t *testing.T) {
	mod := symbolized(t, static(6), "builtin.module(graph-symbolize-shapes)")
	text := ir.Sprint(mod, ir.PrintOptions{})
	for _, want := range []string{
		"%arg0: tensor<?x8xf32, #graph.dims<[s0, 8]>>, %arg1: tensor<?x8xf32, #graph.dims<[s0, 8]>>, %arg2: tensor<1x8xf32>",
		"-> (tensor<?x4xf32, #graph.dims<[s0, 4]>>, tensor<?xf32, #graph.dims<[s0*4]>>, tensor<4xf32>)",
		"tensor<?x4xf32, #graph.dims<[s0*2, 4]>>",
		`graph.constraints = ["s0 == s1", "s2 == 8"]`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	gs, ok, err := symbolize.Guards(fn(mod))
	if !ok || err != nil {
		t.Fatalf("Guards: %v, %v", ok, err)
	}
	in := func(n, m int64) []sym.ShapeDtype {
		return []sym.ShapeDtype{{Shape: []int64{n, 8}, Dtype: "f32"}, {Shape: []int64{m, 8}, Dtype: "f32"},
			{Shape: []int64{1, 8}, Dtype: "f32"}, {Shape: []int64{8, 4}, Dtype: "f32"}}
	}
	if env, fail := gs.Check(in(11, 11)); fail != nil || env["s0"] != 11 {
		t.Errorf("Check(11, 11) = %v, %v", env, fail)
	}
	if _, fail := gs.Check(in(11, 12)); fail == nil || fail.Error() != "guard failed: arg1.shape[0] == s0 (got 12)" {
		t.Errorf("Check(11, 12) = %v", fail)
	}
	if _, fail := gs.Check(in(0, 0)); fail == nil || fail.Error() != "guard failed: s0 >= 1 (got s0 = 0)" {
		t.Errorf("Check(0, 0) = %v", fail)
	}
}

// A 0/1 size stays static under zero-one and becomes a symbol under none.
func TestZeroOnePolicy(t *testing.T) {
	src := static(1)
	one := symbolized(t, src, "builtin.module(graph-symbolize-shapes)")
	if strings.Contains(ir.Sprint(one, ir.PrintOptions{}), "#graph.dims") {
		t.Error("zero-one made a size-1 dim symbolic")
	}
	none := symbolized(t, src, "builtin.module(graph-symbolize-shapes{specialize=none})")
	if text := ir.Sprint(none, ir.PrintOptions{}); !strings.Contains(text, "#graph.dims<[s0, 8]>") || strings.Contains(text, "s0 >= 1") {
		t.Errorf("specialize=none:\n%s", text)
	}
}

func TestBadOptions(t *testing.T) {
	for _, p := range []string{"graph-symbolize-shapes{dims=x}", "graph-symbolize-shapes{specialize=always}"} {
		if _, err := passes.Parse("builtin.module(" + p + ")"); err == nil {
			t.Errorf("%s accepted", p)
		}
	}
	mod := parse(t, static(4))
	pm, _ := passes.Parse("builtin.module(graph-symbolize-shapes{dims=9:0})")
	if err := pm.Run(dialects.NewContext(), mod); err == nil || !strings.Contains(err.Error(), "dims entry 9:0 names no dim") {
		t.Errorf("dims=9:0: %v", err)
	}
}

// A symbolized program gives the static program's results, bit for bit,
// at the size it was compiled from and at other sizes (1 included).
func TestSymbolizedMatchesStatic(t *testing.T) {
	sym6 := symbolized(t, static(6), "builtin.module(graph-symbolize-shapes)")
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 20).Draw(t, "n")
		shapes := [][]int64{{int64(n), 8}, {int64(n), 8}, {1, 8}, {8, 4}}
		args := make([]interp.Value, len(shapes))
		for i, s := range shapes {
			vs := rapid.SliceOfN(rapid.Float64Range(-2, 2), int(s[0]*s[1]), int(s[0]*s[1])).Draw(t, fmt.Sprint("arg", i))
			v, err := interp.FromFloat64s(ir.F32, s, vs)
			if err != nil {
				t.Fatal(err)
			}
			args[i] = v
		}
		want, err := interp.New(parse(t, static(n))).Call("main", args...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := interp.New(sym6).Call("main", args...)
		if err != nil {
			t.Fatalf("symbolized program at n=%d: %v", n, err)
		}
		for i := range want {
			w, g := want[i].(*interp.Tensor), got[i].(*interp.Tensor)
			if !slices.Equal(w.Shape(), g.Shape()) || !slices.Equal(w.Bits(), g.Bits()) {
				t.Fatalf("n=%d result %d: got shape %v, want %v (or different values)", n, i, g.Shape(), w.Shape())
			}
		}
	})
}
