package lower_test

import (
	"math"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestDynamicSizeOfEqualSymbols: an elementwise op's dynamic size is the
// broadcast of its operands' (select(a == 1, b, a) at function level) only
// where their types name different symbols (one may be 1 at run time; an
// unnamed "?" is never equal to another); operands of one symbol give it
// directly, so a dynamic layer norm's allocation is sized by a single
// loop.dim.
func TestDynamicSizeOfEqualSymbols(t *testing.T) {
	const same = `func.func @main(%x: tensor<?x64xf32, #graph.dims<[s0, 64]>>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32, #graph.dims<[s0, 64]>> {
  %0 = "graph.layer_norm"(%x, %w, %b) <{axis = 1 : i64, epsilon = 1.0e-5 : f32}> : (tensor<?x64xf32, #graph.dims<[s0, 64]>>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32, #graph.dims<[s0, 64]>>
  return %0 : tensor<?x64xf32, #graph.dims<[s0, 64]>>
}`
	// Without #graph.dims nothing says the sizes are equal: either may be 1.
	const different = `func.func @main(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = "graph.add"(%x, %y) : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}`
	for _, tc := range []struct {
		name, src string
		sel       bool
	}{{"same", same, false}, {"different", different, true}} {
		t.Run(tc.name, func(t *testing.T) {
			m := passtest.Run(t, tc.src, "builtin.module(lower-to-loop)")
			got := false
			for _, fn := range funcsOf(m) {
				for op := range fn.Region(0).Front().All() {
					got = got || op.Name() == "arith.select" && op.Result(0).Type() == ir.Index
				}
			}
			if got != tc.sel {
				t.Errorf("an index arith.select at function level: %v, want %v:\n%s", got, tc.sel, ir.Sprint(m, ir.PrintOptions{}))
			}
		})
	}
}

// TestBroadcastIndexOfEqualSymbols: an operand's dynamic dim is indexed
// through a broadcast select (its size may be 1 at run time) unless its
// type and the result's name the same symbol. In a symbolized softmax every
// operand's row dim is s0, so no index select is left and the rows are
// read at their own index (one load per element for the whole row kernel);
// the lowered program computes the graph program's softmax, at one row
// too. Without #graph.dims the selects stay.
func TestBroadcastIndexOfEqualSymbols(t *testing.T) {
	const symbolic = `func.func @main(%x: tensor<?x8xf32, #graph.dims<[s0, 8]>>) -> tensor<?x8xf32, #graph.dims<[s0, 8]>> {
  %0 = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<?x8xf32, #graph.dims<[s0, 8]>>) -> tensor<?x8xf32, #graph.dims<[s0, 8]>>
  return %0 : tensor<?x8xf32, #graph.dims<[s0, 8]>>
}`
	const unnamed = `func.func @main(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}`
	for _, tc := range []struct {
		name, src string
		selects   bool
	}{{"symbolic", symbolic, false}, {"unnamed", unnamed, true}} {
		t.Run(tc.name, func(t *testing.T) {
			m := passtest.Run(t, tc.src, "builtin.module(lower-to-loop,canonicalize,cse)")
			selects := 0
			m.Walk(func(o *ir.Operation) bool {
				if o.Name() == "arith.select" && o.Result(0).Type() == ir.Index {
					selects++
				}
				return true
			})
			if (selects > 0) != tc.selects {
				t.Errorf("%d index selects, want some: %v\n%s", selects, tc.selects, ir.Sprint(m, ir.PrintOptions{}))
			}
			g := passtest.Run(t, tc.src, "builtin.module(func.func(graph-decompose))")
			for _, rows := range []int64{1, 3} {
				xs := make([]float64, rows*8)
				for i := range xs {
					xs[i] = float64(i%7) - 2.5
				}
				x, err := interp.FromFloat64s(ir.F32, []int64{rows, 8}, xs)
				if err != nil {
					t.Fatal(err)
				}
				want := runConv(t, g, []interp.Value{x}, false)[0].Float64s()
				got := runConv(t, m, []interp.Value{x}, true)[0].Float64s()
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-6*math.Abs(want[i]) {
						t.Fatalf("%d rows, element %d: %g, want %g", rows, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// TestDynamicCausalAttention lowers a causal attention whose sequence
// length is the symbol s0: graph-decompose masks it with iotas of the
// symbolic length (graph.iota sized by s0, which the lowering reads off
// the argument that s0 sizes), and the decomposed graph and the lowered
// program compute the attention at every length, the first and last
// lengths of a row included. Lengths of an unnamed ? are refused.
func TestDynamicCausalAttention(t *testing.T) {
	const ty = "tensor<1x2x?x4xf32, #graph.dims<[1, 2, s0, 4]>>"
	src := `func.func @main(%q: ` + ty + `, %k: ` + ty + `, %v: ` + ty + `) -> ` + ty + ` {
  %0 = "graph.attention"(%q, %k, %v) <{causal = true}> : (` + ty + `, ` + ty + `, ` + ty + `) -> ` + ty + `
  return %0 : ` + ty + `
}`
	g := passtest.Run(t, src, "builtin.module(func.func(graph-decompose))")
	if !strings.Contains(ir.Sprint(g, ir.PrintOptions{}), `"graph.iota"() <{axis = 0 : i64}> : () -> tensor<?x?xi64, #graph.dims<[s0, s0]>>`) {
		t.Errorf("no iota of the symbolic length in the decomposition:\n%s", ir.Sprint(g, ir.PrintOptions{}))
	}
	m := passtest.Run(t, src, "builtin.module(lower-to-loop)")
	ref := passtest.Run(t, src, "builtin.module()")
	for _, n := range []int64{1, 2, 7} {
		var in []interp.Value
		for a := range 3 {
			xs := make([]float64, 2*n*4)
			for i := range xs {
				xs[i] = float64((i*7+a*3)%11)/4 - 1.2
			}
			x, err := interp.FromFloat64s(ir.F32, []int64{1, 2, n, 4}, xs)
			if err != nil {
				t.Fatal(err)
			}
			in = append(in, x)
		}
		want := runConv(t, ref, in, false)[0].Float64s()
		for _, run := range []struct {
			name    string
			m       *ir.Operation
			lowered bool
		}{{"decomposed", g, false}, {"lowered", m, true}} {
			got := runConv(t, run.m, in, run.lowered)[0].Float64s()
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-5 {
					t.Fatalf("%s, length %d, element %d: %g, want %g", run.name, n, i, got[i], want[i])
				}
			}
		}
	}
	unnamed := strings.ReplaceAll(src, ", #graph.dims<[1, 2, s0, 4]>", "")
	ctx := dialects.NewContext()
	um, err := ir.Parse(ctx, unnamed, ir.ParseOptions{Filename: "unnamed.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(func.func(graph-decompose))")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, um); err == nil || !strings.Contains(err.Error(), "named by symbols") {
		t.Errorf("a causal mask of unnamed lengths: %v, want the decomposition's refusal", err)
	}
}

// TestSymbolicReshapeGroups: a reshape between symbolic shapes is
// indexed run by run of dims whose symbolic products agree. GPT-2's heads
// [2, s0, 3, 4] read from its rows [s0·2, 12] are at row b·s0 + t, column
// h·4 + d: the copy to the heads divides by no size known only at run
// time (it took the linear index apart by s0·2 and 12 before); the rows
// read from [2, s0, 12] divide by s0 once (a dim split in two). The
// lowered program computes the graph's at several s0.
func TestSymbolicReshapeGroups(t *testing.T) {
	const src = `func.func @main(%x: tensor<2x?x12xf32, #graph.dims<[2, s0, 12]>>) -> tensor<2x3x?x4xf32, #graph.dims<[2, 3, s0, 4]>> {
  %0 = "graph.reshape"(%x) <{shape = array<i64: -1, 12>}> : (tensor<2x?x12xf32, #graph.dims<[2, s0, 12]>>) -> tensor<?x12xf32, #graph.dims<[s0*2, 12]>>
  %1 = "graph.exp"(%0) : (tensor<?x12xf32, #graph.dims<[s0*2, 12]>>) -> tensor<?x12xf32, #graph.dims<[s0*2, 12]>>
  %2 = "graph.reshape"(%1) <{shape = array<i64: 2, -1, 3, 4>}> : (tensor<?x12xf32, #graph.dims<[s0*2, 12]>>) -> tensor<2x?x3x4xf32, #graph.dims<[2, s0, 3, 4]>>
  %3 = "graph.transpose"(%2) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x?x3x4xf32, #graph.dims<[2, s0, 3, 4]>>) -> tensor<2x3x?x4xf32, #graph.dims<[2, 3, s0, 4]>>
  return %3 : tensor<2x3x?x4xf32, #graph.dims<[2, 3, s0, 4]>>
}`
	m := passtest.Run(t, src, "builtin.module(lower-to-loop,canonicalize,cse)")
	divisions := map[string]int{} // by nest kind: divisions and remainders by a size known at run time
	m.Walk(func(o *ir.Operation) bool {
		if (o.Name() == "arith.divui" || o.Name() == "arith.remui") && o.Operand(1).DefiningOp() != nil && o.Operand(1).DefiningOp().Name() != "arith.constant" {
			for p := o.ParentOp(); p != nil; p = p.ParentOp() {
				if kind, ok := p.Attr("loop.nest").(ir.StringAttr); ok {
					divisions[kind.Value]++
					break
				}
			}
		}
		return true
	})
	if divisions["copy"] != 0 || divisions["pointwise"] != 2 {
		t.Errorf("divisions by run-time sizes %v, want none in the copy to the heads, one div and one rem in the pointwise nest:\n%s", divisions, ir.Sprint(m, ir.PrintOptions{}))
	}
	ref := passtest.Run(t, src, "builtin.module()")
	for _, n := range []int64{1, 3} {
		xs := make([]float64, 2*n*12)
		for i := range xs {
			xs[i] = float64(i%13)/8 - 0.7
		}
		x, err := interp.FromFloat64s(ir.F32, []int64{2, n, 12}, xs)
		if err != nil {
			t.Fatal(err)
		}
		want := runConv(t, ref, []interp.Value{x}, false)[0].Float64s()
		got := runConv(t, m, []interp.Value{x}, true)[0].Float64s()
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-6*math.Abs(want[i]) {
				t.Fatalf("s0 = %d, element %d: %g, want %g", n, i, got[i], want[i])
			}
		}
	}
}
