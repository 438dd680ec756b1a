package graph_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestTransposeMatmulKeepsValues checks graph.transpose-matmul on drawn
// products, their lhs a transpose or not: after canonicalize no transpose
// reads a product, and the interpreter's results are bit for bit the ones
// before (the same products summed in the same order).
func TestTransposeMatmulKeepsValues(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := rapid.Int64Range(1, 6).Draw(rt, "m")
		k := rapid.Int64Range(1, 6).Draw(rt, "k")
		n := rapid.Int64Range(1, 6).Draw(rt, "n")
		elt := rapid.SampledFrom([]string{"f32", "bf16", "f16", "f64", "i32"}).Draw(rt, "elt")
		lhsT := rapid.Bool().Draw(rt, "lhsTransposed")
		ty := func(r, c int64) string { return fmt.Sprintf("tensor<%dx%dx%s>", r, c, elt) }
		var b strings.Builder
		lhs := "%a"
		if lhsT {
			fmt.Fprintf(&b, "func.func @main(%%a: %s, %%b: %s) -> %s {\n", ty(k, m), ty(k, n), ty(n, m))
			fmt.Fprintf(&b, "  %%at = \"graph.transpose\"(%%a) <{perm = [1, 0]}> : (%s) -> %s\n", ty(k, m), ty(m, k))
			lhs = "%at"
		} else {
			fmt.Fprintf(&b, "func.func @main(%%a: %s, %%b: %s) -> %s {\n", ty(m, k), ty(k, n), ty(n, m))
		}
		fmt.Fprintf(&b, "  %%p = \"graph.matmul\"(%s, %%b) : (%s, %s) -> %s\n", lhs, ty(m, k), ty(k, n), ty(m, n))
		fmt.Fprintf(&b, "  %%r = \"graph.transpose\"(%%p) <{perm = [1, 0]}> : (%s) -> %s\n", ty(m, n), ty(n, m))
		fmt.Fprintf(&b, "  return %%r : %s\n}\n", ty(n, m))
		ctx := dialects.NewContext()
		mod, err := ir.Parse(ctx, b.String(), ir.ParseOptions{Filename: "tm.mlir"})
		if err != nil {
			rt.Fatalf("%v\n%s", err, b.String())
		}
		ft, err := interp.FuncType(interp.New(mod).Func("main"))
		if err != nil {
			rt.Fatal(err)
		}
		args, err := interp.RandomInputs(ft, m*100+k*10+n)
		if err != nil {
			rt.Fatal(err)
		}
		eval := func() string {
			out, err := interp.New(mod).Call("main", args...)
			if err != nil {
				rt.Fatalf("%v\n%s", err, mod)
			}
			return out[0].(*interp.Tensor).Format()
		}
		want := eval()
		if _, err := ir.ApplyPatternsGreedily(mod, ctx.CanonicalizationPatterns(), ir.DefaultGreedyConfig()); err != nil {
			rt.Fatal(err)
		}
		if err := ir.Verify(mod); err != nil {
			rt.Fatalf("%v\n%s", err, mod)
		}
		mod.Walk(func(o *ir.Operation) bool {
			if o.Name() == graph.OpTranspose && o.Operand(0).DefiningOp() != nil && o.Operand(0).DefiningOp().Name() == graph.OpMatmul {
				rt.Fatalf("a transpose still reads the product:\n%s", mod)
			}
			return true
		})
		if got := eval(); got != want {
			rt.Fatalf("canonicalize changed the result: %s, want %s\n%s", got, want, mod)
		}
	})
}

// TestTransposeUnitDimsKeepsValues checks graph.transpose-unit-dims on
// drawn shapes with dims of size 1 and drawn permutations: a transpose
// that keeps the order of the other dims becomes a reshape, any other
// stays, and the interpreter's result is the same before and after.
func TestTransposeUnitDimsKeepsValues(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rank := rapid.IntRange(2, 4).Draw(rt, "rank")
		shape := make([]int64, rank)
		for i := range shape {
			shape[i] = rapid.SampledFrom([]int64{1, 1, 2, 3}).Draw(rt, fmt.Sprintf("dim%d", i))
		}
		perm := rapid.Permutation([]int64{0, 1, 2, 3}[:rank]).Draw(rt, "perm")
		out := make([]int64, rank)
		moved := false // a dim other than 1 changes order
		last := int64(-1)
		for i, p := range perm {
			out[i] = shape[p]
			if shape[p] != 1 {
				moved = moved || p < last
				last = p
			}
		}
		ty := func(s []int64) string {
			parts := make([]string, len(s))
			for i, n := range s {
				parts[i] = fmt.Sprint(n)
			}
			return "tensor<" + strings.Join(parts, "x") + "xf32>"
		}
		ps := make([]string, rank)
		for i, p := range perm {
			ps[i] = fmt.Sprint(p)
		}
		src := fmt.Sprintf("func.func @main(%%a: %[1]s) -> %[2]s {\n  %%r = \"graph.transpose\"(%%a) <{perm = [%[3]s]}> : (%[1]s) -> %[2]s\n  return %%r : %[2]s\n}\n",
			ty(shape), ty(out), strings.Join(ps, ", "))
		ctx := dialects.NewContext()
		mod, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "tu.mlir"})
		if err != nil {
			rt.Fatalf("%v\n%s", err, src)
		}
		ft, err := interp.FuncType(interp.New(mod).Func("main"))
		if err != nil {
			rt.Fatal(err)
		}
		args, err := interp.RandomInputs(ft, int64(rank))
		if err != nil {
			rt.Fatal(err)
		}
		eval := func() string {
			res, err := interp.New(mod).Call("main", args...)
			if err != nil {
				rt.Fatalf("%v\n%s", err, mod)
			}
			return res[0].(*interp.Tensor).Format()
		}
		want := eval()
		if _, err := ir.ApplyPatternsGreedily(mod, ctx.CanonicalizationPatterns(), ir.DefaultGreedyConfig()); err != nil {
			rt.Fatal(err)
		}
		if err := ir.Verify(mod); err != nil {
			rt.Fatalf("%v\n%s", err, mod)
		}
		transposed := strings.Contains(ir.Sprint(mod, ir.PrintOptions{}), "graph.transpose")
		identity := slices.Equal(perm, []int64{0, 1, 2, 3}[:rank])
		if transposed != (moved && !identity) {
			rt.Fatalf("perm %v of %v: a transpose left %v, want %v\n%s", perm, shape, transposed, moved, mod)
		}
		if got := eval(); got != want {
			rt.Fatalf("canonicalize changed the result: %s, want %s\n%s", got, want, mod)
		}
	})
}
