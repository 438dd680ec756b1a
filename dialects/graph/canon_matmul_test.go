package graph_test

import (
	"fmt"
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
