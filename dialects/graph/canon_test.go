package graph_test

import (
	"math"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// canonicalize runs the graph patterns and folders to a fixpoint and returns
// the module in generic form. Values are numbered in order, test.src
// producers first.
func canonicalize(t *testing.T, src string) string {
	t.Helper()
	m := parse(t, src)
	if err := ir.Verify(m); err != nil {
		t.Fatalf("input does not verify: %v", err)
	}
	ctx := newCtx()
	if _, err := ir.ApplyPatternsGreedily(m, ctx.CanonicalizationPatterns(), ir.DefaultGreedyConfig()); err != nil {
		t.Fatalf("canonicalize: %v", err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("output does not verify: %v\n%s", err, m)
	}
	return ir.Sprint(m, ir.PrintOptions{Generic: true})
}

func TestCanonicalize(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // substrings of the result, in order
		not       []string // substrings that must be gone
	}{
		{"mul-one", `%a = src tensor<4xf32>
			%one = "graph.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
			%0 = "graph.mul"(%one, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
			"test.sink"(%0) : (tensor<4xf32>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.mul"}},
		{"mul-one-broadcasts", `%a = src tensor<4xf32>
			%one = "graph.constant"() {value = dense<1.0> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
			%0 = "graph.mul"(%a, %one) : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
			"test.sink"(%0) : (tensor<3x4xf32>) -> ()`,
			[]string{`"graph.broadcast_to"(%0) <{shape = [3, 4]}>`}, []string{"graph.mul"}},
		{"add-neg-zero", `%a = src tensor<4xf32>
			%z = "graph.constant"() {value = dense<-0.0> : tensor<4xf32>} : () -> tensor<4xf32>
			%0 = "graph.add"(%a, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
			"test.sink"(%0) : (tensor<4xf32>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.add"}},
		{"add-pos-zero-float-kept", `%a = src tensor<4xf32>
			%z = "graph.constant"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
			%0 = "graph.add"(%a, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
			"test.sink"(%0) : (tensor<4xf32>) -> ()`,
			[]string{"graph.add"}, nil},
		{"add-int-zero", `%a = src tensor<4xi32>
			%z = "graph.constant"() {value = dense<0> : tensor<4xi32>} : () -> tensor<4xi32>
			%0 = "graph.add"(%z, %a) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
			"test.sink"(%0) : (tensor<4xi32>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.add"}},
		{"sub-zero", `%a = src tensor<4xf32>
			%z = "graph.constant"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
			%0 = "graph.sub"(%a, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
			"test.sink"(%0) : (tensor<4xf32>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.sub"}},
		{"transpose-transpose-identity", `%a = src tensor<2x3x4xf32>
			%0 = "graph.transpose"(%a) {perm = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
			%1 = "graph.transpose"(%0) {perm = [2, 0, 1]} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
			"test.sink"(%1) : (tensor<2x3x4xf32>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.transpose"}},
		{"transpose-transpose-compose", `%a = src tensor<2x3x4xf32>
			%0 = "graph.transpose"(%a) {perm = [1, 0, 2]} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
			%1 = "graph.transpose"(%0) {perm = [2, 1, 0]} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
			"test.sink"(%1) : (tensor<4x2x3xf32>) -> ()`,
			[]string{`"graph.transpose"(%0) <{perm = [2, 0, 1]}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>`}, []string{"tensor<3x2x4xf32>"}},
		{"transpose-unit-dims", `%a = src tensor<8x12x1x64xf32>
			%0 = "graph.transpose"(%a) {perm = [0, 2, 1, 3]} : (tensor<8x12x1x64xf32>) -> tensor<8x1x12x64xf32>
			"test.sink"(%0) : (tensor<8x1x12x64xf32>) -> ()`,
			[]string{`"graph.reshape"(%0) <{shape = [8, 1, 12, 64]}>`}, []string{"graph.transpose"}},
		{"transpose-unit-dims-reorders-kept", `%a = src tensor<8x12x1x64xf32>
			%0 = "graph.transpose"(%a) {perm = [1, 2, 0, 3]} : (tensor<8x12x1x64xf32>) -> tensor<12x1x8x64xf32>
			"test.sink"(%0) : (tensor<12x1x8x64xf32>) -> ()`,
			[]string{"graph.transpose"}, []string{"graph.reshape"}},
		{"reshape-reshape", `%a = src tensor<2x6xf32>
			%0 = "graph.reshape"(%a) {shape = [3, 4]} : (tensor<2x6xf32>) -> tensor<3x4xf32>
			%1 = "graph.reshape"(%0) {shape = [12]} : (tensor<3x4xf32>) -> tensor<12xf32>
			"test.sink"(%1) : (tensor<12xf32>) -> ()`,
			[]string{`"graph.reshape"(%0) <{shape = [12]}> : (tensor<2x6xf32>) -> tensor<12xf32>`}, []string{"tensor<3x4xf32>"}},
		{"reshape-reshape-symbolic-kept", `%a = src tensor<?xf32, #graph.dims<[s0]>>
			%0 = "graph.reshape"(%a) {shape = [2, -1]} : (tensor<?xf32, #graph.dims<[s0]>>) -> tensor<2x?xf32, #graph.dims<[2, floordiv(s0, 2)]>>
			%1 = "graph.reshape"(%0) {shape = [-1]} : (tensor<2x?xf32, #graph.dims<[2, floordiv(s0, 2)]>>) -> tensor<?xf32, #graph.dims<[floordiv(s0, 2)*2]>>
			"test.sink"(%1) : (tensor<?xf32, #graph.dims<[floordiv(s0, 2)*2]>>) -> ()`,
			// Merged, the -1 would be s0, not the recorded floordiv(s0, 2)*2.
			[]string{`"graph.reshape"(%1) <{shape = [-1]}> : (tensor<2x?xf32`}, nil},
		{"reshape-same", `%a = src tensor<2x6xf32>
			%0 = "graph.reshape"(%a) : (tensor<2x6xf32>) -> tensor<2x6xf32>
			"test.sink"(%0) : (tensor<2x6xf32>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.reshape"}},
		{"broadcast-same", `%a = src tensor<2x6xf32>
			%0 = "graph.broadcast_to"(%a) {shape = [2, 6]} : (tensor<2x6xf32>) -> tensor<2x6xf32>
			"test.sink"(%0) : (tensor<2x6xf32>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.broadcast_to"}},
		{"broadcast-scalar-constant", `%c = "graph.constant"() {value = dense<2.5> : tensor<f32>} : () -> tensor<f32>
			%0 = "graph.broadcast_to"(%c) {shape = [2, 3]} : (tensor<f32>) -> tensor<2x3xf32>
			"test.sink"(%0) : (tensor<2x3xf32>) -> ()`,
			[]string{`dense<2.500000e+00> : tensor<2x3xf32>`}, []string{"graph.broadcast_to"}},
		{"select-true", `%a = src tensor<4xf32>
			%b = src tensor<4xf32>
			%c = "graph.constant"() {value = dense<true> : tensor<4xi1>} : () -> tensor<4xi1>
			%0 = "graph.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
			"test.sink"(%0) : (tensor<4xf32>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.select"}},
		{"select-false", `%a = src tensor<4xf32>
			%b = src tensor<4xf32>
			%c = "graph.constant"() {value = dense<false> : tensor<4xi1>} : () -> tensor<4xi1>
			%0 = "graph.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
			"test.sink"(%0) : (tensor<4xf32>) -> ()`,
			[]string{`"test.sink"(%1)`}, []string{"graph.select"}},
		{"neg-neg", `%a = src tensor<4xf32>
			%0 = "graph.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
			%1 = "graph.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
			"test.sink"(%1) : (tensor<4xf32>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.neg"}},
		{"cast-same", `%a = src tensor<4xf32>
			%0 = "graph.cast"(%a) : (tensor<4xf32>) -> tensor<4xf32>
			"test.sink"(%0) : (tensor<4xf32>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.cast"}},
		{"cast-widen-narrow", `%a = src tensor<4xbf16>
			%0 = "graph.cast"(%a) : (tensor<4xbf16>) -> tensor<4xf32>
			%1 = "graph.cast"(%0) : (tensor<4xf32>) -> tensor<4xbf16>
			"test.sink"(%1) : (tensor<4xbf16>) -> ()`,
			[]string{`"test.sink"(%0)`}, []string{"graph.cast"}},
		{"cast-narrow-widen-kept", `%a = src tensor<4xf32>
			%0 = "graph.cast"(%a) : (tensor<4xf32>) -> tensor<4xbf16>
			%1 = "graph.cast"(%0) : (tensor<4xbf16>) -> tensor<4xf32>
			"test.sink"(%1) : (tensor<4xf32>) -> ()`,
			[]string{"graph.cast", "graph.cast"}, nil},
		// A tied head's weight gradient: transpose(xᵀ·g) is gᵀ·x, the
		// transpose of a transpose gone.
		{"transpose-matmul", `%x = src tensor<8x3xf32>
			%g = src tensor<8x5xf32>
			%0 = "graph.transpose"(%x) {perm = [1, 0]} : (tensor<8x3xf32>) -> tensor<3x8xf32>
			%1 = "graph.matmul"(%0, %g) : (tensor<3x8xf32>, tensor<8x5xf32>) -> tensor<3x5xf32>
			%2 = "graph.transpose"(%1) {perm = [1, 0]} : (tensor<3x5xf32>) -> tensor<5x3xf32>
			"test.sink"(%2) : (tensor<5x3xf32>) -> ()`,
			[]string{`"graph.transpose"(%1) <{perm = [1, 0]}> : (tensor<8x5xf32>) -> tensor<5x8xf32>`,
				`"graph.matmul"(%2, %0) : (tensor<5x8xf32>, tensor<8x3xf32>) -> tensor<5x3xf32>`},
			[]string{"tensor<3x8xf32>", "tensor<3x5xf32>"}},
		// The product is read elsewhere too: computing both would be two
		// products.
		{"transpose-matmul-shared-kept", `%a = src tensor<3x8xf32>
			%b = src tensor<8x5xf32>
			%0 = "graph.matmul"(%a, %b) : (tensor<3x8xf32>, tensor<8x5xf32>) -> tensor<3x5xf32>
			%1 = "graph.transpose"(%0) {perm = [1, 0]} : (tensor<3x5xf32>) -> tensor<5x3xf32>
			"test.sink"(%0, %1) : (tensor<3x5xf32>, tensor<5x3xf32>) -> ()`,
			[]string{`"graph.matmul"(%0, %1) : (tensor<3x8xf32>, tensor<8x5xf32>) -> tensor<3x5xf32>`,
				`"graph.transpose"(%2) <{perm = [1, 0]}> : (tensor<3x5xf32>) -> tensor<5x3xf32>`}, nil},
		{"fold-binary-broadcast", `%a = "graph.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
			%b = "graph.constant"() {value = dense<[[10.0], [20.0]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
			%0 = "graph.add"(%a, %b) : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
			"test.sink"(%0) : (tensor<2x2xf32>) -> ()`,
			[]string{`dense<[[1.100000e+01, 1.200000e+01], [2.100000e+01, 2.200000e+01]]> : tensor<2x2xf32>`}, []string{"graph.add"}},
		{"fold-cmp-select-cast", `%a = "graph.constant"() {value = dense<[1.5, -2.7, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
			%z = "graph.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
			%c = "graph.cmp"(%a, %z) {predicate = "gt"} : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
			%n = "graph.neg"(%a) : (tensor<3xf32>) -> tensor<3xf32>
			%s = "graph.select"(%c, %a, %n) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
			%i = "graph.cast"(%s) : (tensor<3xf32>) -> tensor<3xi32>
			"test.sink"(%i) : (tensor<3xi32>) -> ()`,
			[]string{`dense<[1, 2, 3]> : tensor<3xi32>`}, []string{"graph.select", "graph.cmp", "graph.cast"}},
		{"fold-int-div-by-zero", `%a = "graph.constant"() {value = dense<[7, -7]> : tensor<2xi32>} : () -> tensor<2xi32>
			%b = "graph.constant"() {value = dense<[2, 0]> : tensor<2xi32>} : () -> tensor<2xi32>
			%0 = "graph.div"(%a, %b) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
			"test.sink"(%0) : (tensor<2xi32>) -> ()`,
			[]string{`dense<[3, 0]> : tensor<2xi32>`}, []string{"graph.div"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := canonicalize(t, tc.src)
			rest := got
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("missing %q in\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Fatalf("%q should be gone from\n%s", n, got)
				}
			}
		})
	}
}

// TestFoldPrecision checks that f32 folding rounds like float32 arithmetic
// and bf16 folding rounds to bf16.
func TestFoldPrecision(t *testing.T) {
	m := parse(t, `%a = "graph.constant"() {value = dense<[16777216.0, 1.0e-08]> : tensor<2xf32>} : () -> tensor<2xf32>
		%b = "graph.constant"() {value = dense<[1.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
		%0 = "graph.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>`)
	add := lastOp(m)
	ops := []ir.Attribute{add.Operand(0).DefiningOp().Attr("value"), add.Operand(1).DefiningOp().Attr("value")}
	res := add.Def().Fold(add, ops)
	if len(res) != 1 {
		t.Fatal("add of constants did not fold")
	}
	d := res[0].Attr.(ir.DenseAttr)
	if got := []float64{d.Float(0), d.Float(1)}; got[0] != 16777216 || got[1] != 1 {
		t.Errorf("f32 fold = %v, want [16777216 1] (float32 rounding)", got)
	}
	if graph.FloatToInt(-2.9, ir.I32) != -2 || graph.FloatToInt(math.NaN(), ir.I64) != 0 || graph.FloatToInt(1e20, ir.I32) != math.MaxInt32 {
		t.Error("FloatToInt does not truncate/saturate as documented")
	}
}

func TestMaterializeConstant(t *testing.T) {
	b := ir.NewBuilder(newCtx())
	blk := ir.NewBlock()
	b.SetInsertionPointToEnd(blk)
	ty := ir.TensorOf([]int64{2}, ir.F32)
	op := graph.Dialect.MaterializeConstant(b, ir.Float(3, ir.F32), ty, ir.UnknownLoc{})
	if op == nil || op.Name() != "graph.constant" || op.Result(0).Type() != ty {
		t.Fatalf("got %v", op)
	}
	if err := ir.Verify(op); err != nil {
		t.Fatal(err)
	}
	if graph.Dialect.MaterializeConstant(b, ir.Float(3, ir.F64), ty, ir.UnknownLoc{}) != nil {
		t.Error("a scalar of another type must not materialize")
	}
}

func TestBuild(t *testing.T) {
	b := ir.NewBuilder(newCtx())
	blk := ir.NewBlock(ir.TensorOf([]int64{4, 3}, ir.F32), ir.TensorOf([]int64{3}, ir.F32), ir.TensorOf([]int64{5}, ir.F32))
	b.SetInsertionPointToEnd(blk)
	x, y, z := blk.Argument(0), blk.Argument(1), blk.Argument(2)
	loc := ir.UnknownLoc{}
	s := graph.Add(b, loc, x, y)
	if s.Type().String() != "tensor<4x3xf32>" {
		t.Errorf("Add type = %s", s.Type())
	}
	r := graph.Reduce(b, "reduce_sum", loc, s, []int64{0}, true)
	if r.Type().String() != "tensor<1x3xf32>" {
		t.Errorf("reduce type = %s", r.Type())
	}
	mm := graph.Matmul(b, loc, graph.Transpose(b, loc, x, []int64{1, 0}), x)
	if mm.Type().String() != "tensor<3x3xf32>" {
		t.Errorf("matmul type = %s", mm.Type())
	}
	if c := graph.Cast(b, loc, x, ir.BF16); c.Type().String() != "tensor<4x3xbf16>" {
		t.Errorf("cast type = %s", c.Type())
	}
	if _, err := graph.Build(b, "add", loc, []*ir.Value{x, z}, nil); err == nil || !strings.Contains(err.Error(), "'graph.add' op operands 0 and 1 are not broadcast-compatible") {
		t.Errorf("Build of a bad add: %v", err)
	}
	bad := graph.Add(b, loc, x, z) // created anyway; the verifier reports it
	if bad.Type() != ir.None {
		t.Errorf("bad add type = %s, want none", bad.Type())
	}
	if _, err := graph.Build(b, "nope", loc, nil, nil); err == nil {
		t.Error("Build of an unknown op succeeded")
	}
}

func TestDocsComplete(t *testing.T) {
	for _, def := range graph.Dialect.Ops {
		if def.Summary == "" || def.Description == "" || def.Example == "" {
			t.Errorf("%s lacks docs", def.Name)
		}
		if !strings.Contains(def.Example, `"`+def.Name+`"`) {
			t.Errorf("%s example does not show the op in generic form", def.Name)
		}
	}
}

// TestSwapsLastTwo: only a graph.transpose whose permutation keeps every
// dim but the last two, which it exchanges, is a batched matrix transpose.
func TestSwapsLastTwo(t *testing.T) {
	m := parse(t, `%x = src tensor<2x3x4xf32>
  %y = src tensor<3x4xf32>
  %0 = "graph.transpose"(%x) <{perm = array<i64: 0, 2, 1>}> : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %1 = "graph.transpose"(%y) <{perm = array<i64: 1, 0>}> : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %2 = "graph.transpose"(%x) <{perm = array<i64: 1, 0, 2>}> : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %3 = "graph.transpose"(%x) <{perm = array<i64: 2, 1, 0>}> : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %4 = "graph.transpose"(%x) <{perm = array<i64: 0, 1, 2>}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %5 = "graph.neg"(%y) : (tensor<3x4xf32>) -> tensor<3x4xf32>`)
	want := []bool{true, true, false, false, false, false}
	var got []bool
	m.Walk(func(op *ir.Operation) bool {
		if strings.HasPrefix(op.Name(), "graph.") {
			got = append(got, graph.SwapsLastTwo(op))
		}
		return true
	})
	if len(got) != len(want) {
		t.Fatalf("%d graph ops, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("op %%%d: SwapsLastTwo = %v, want %v", i, got[i], want[i])
		}
	}
	if graph.SwapsLastTwo(nil) {
		t.Error("SwapsLastTwo(nil) = true")
	}
}
