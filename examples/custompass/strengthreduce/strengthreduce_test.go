package strengthreduce

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/interp"
	"pgregory.net/rapid"
)

func newContext() *ir.Context { return ir.NewContext(builtin.Dialect, funcs.Dialect, arith.Dialect) }

func call(t *rapid.T, m *ir.Operation, x interp.Value) string {
	out, err := interp.New(m).Call("f", x)
	if err != nil {
		t.Fatalf("interpreting: %v\n%s", err, m)
	}
	return out[0].(*interp.Tensor).Format()
}

// TestStrengthReduceKeepsResults multiplies a random x by a random constant
// (a power of two half of the time, on either side) in a random integer
// type, and checks that the pass keeps the result and removes every
// multiplication by a power of two.
func TestStrengthReduceKeepsResults(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		typ := rapid.SampledFrom([]string{"i8", "i16", "i32", "i64", "index"}).Draw(t, "type")
		ty := map[string]ir.Type{"i8": ir.IntegerOf(8), "i16": ir.IntegerOf(16), "i32": ir.IntegerOf(32),
			"i64": ir.IntegerOf(64), "index": ir.Index}[typ]
		width := ir.IntWidth(ty)
		var c int64
		pow2 := rapid.Bool().Draw(t, "pow2")
		if pow2 {
			c = ir.TruncInt(1<<rapid.IntRange(0, width-1).Draw(t, "k"), ty)
		} else {
			c = ir.TruncInt(rapid.Int64().Draw(t, "c"), ty)
		}
		lhs, rhs := "%x", "%c"
		if rapid.Bool().Draw(t, "swap") {
			lhs, rhs = rhs, lhs
		}
		src := fmt.Sprintf("func.func @f(%%x: %[1]s) -> %[1]s {\n  %%c = arith.constant %[2]d : %[1]s\n"+
			"  %%0 = arith.muli %[3]s, %[4]s : %[1]s\n  return %%0 : %[1]s\n}\n", typ, c, lhs, rhs)
		x, err := interp.ScalarInt(ty, ir.TruncInt(rapid.Int64().Draw(t, "x"), ty))
		if err != nil {
			t.Fatal(err)
		}
		ctx := newContext()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "gen.mlir"})
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		want := call(t, m, x)
		pm, err := passes.Parse("builtin.module(func.func(strength-reduce))")
		if err != nil {
			t.Fatal(err)
		}
		if err := pm.Run(ctx, m); err != nil {
			t.Fatal(err)
		}
		if got := call(t, m, x); got != want {
			t.Fatalf("result %s, want %s\nbefore:\n%s\nafter:\n%s", got, want, src, m)
		}
		// 2^0 = 1 is canonicalize's business, not a shift.
		if pow2 && c != 1 && strings.Contains(m.String(), "arith.muli") {
			t.Fatalf("multiplication by %d left in place:\n%s", c, m)
		}
	})
}
