package passes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
	"pgregory.net/rapid"
)

// genProgram draws a random straight-line i32 function @f of nargs
// arguments, with enough constants and repeated subexpressions for the
// cleanups to find work.
func genProgram(t *rapid.T, nargs int) string {
	var b strings.Builder
	args := make([]string, nargs)
	for i := range args {
		args[i] = fmt.Sprintf("%%a%d: i32", i)
	}
	pool := make([]string, nargs)
	for i := range pool {
		pool[i] = fmt.Sprintf("%%a%d", i)
	}
	var bools []string
	binops := []string{"addi", "subi", "muli", "andi", "ori", "xori", "maxsi", "minsi", "maxui", "minui"}
	preds := []string{"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"}
	n := rapid.IntRange(1, 25).Draw(t, "n")
	for i := range n {
		name := fmt.Sprintf("%%v%d", i)
		pick := func(label string) string { return rapid.SampledFrom(pool).Draw(t, label) }
		switch kind := rapid.IntRange(0, 9).Draw(t, "kind"); {
		case kind < 2:
			c := rapid.SampledFrom([]int64{0, 1, -1, 2, 3, 7, -2147483648, 2147483647}).Draw(t, "const")
			fmt.Fprintf(&b, "  %s = arith.constant %d : i32\n", name, c)
		case kind < 7:
			op := rapid.SampledFrom(binops).Draw(t, "op")
			fmt.Fprintf(&b, "  %s = arith.%s %s, %s : i32\n", name, op, pick("x"), pick("y"))
		case kind < 8:
			pred := rapid.SampledFrom(preds).Draw(t, "pred")
			fmt.Fprintf(&b, "  %s = arith.cmpi %s, %s, %s : i32\n", name, pred, pick("x"), pick("y"))
			bools = append(bools, name)
			continue
		default:
			if len(bools) == 0 {
				fmt.Fprintf(&b, "  %s = arith.addi %s, %s : i32\n", name, pick("x"), pick("y"))
				break
			}
			cond := rapid.SampledFrom(bools).Draw(t, "cond")
			fmt.Fprintf(&b, "  %s = arith.select %s, %s, %s : i32\n", name, cond, pick("x"), pick("y"))
		}
		pool = append(pool, name)
	}
	nres := rapid.IntRange(1, 3).Draw(t, "nres")
	var res, types []string
	for range nres {
		res = append(res, rapid.SampledFrom(pool).Draw(t, "result"))
		types = append(types, "i32")
	}
	return fmt.Sprintf("func.func @f(%s) -> (%s) {\n%s  return %s : %s\n}\n",
		strings.Join(args, ", "), strings.Join(types, ", "), b.String(), strings.Join(res, ", "), strings.Join(types, ", "))
}

func evalF(t *rapid.T, m *ir.Operation, args []interp.Value) string {
	out, err := interp.New(m).Call("f", args...)
	if err != nil {
		t.Fatalf("interpreting: %v\n%s", err, m)
	}
	parts := make([]string, len(out))
	for i, v := range out {
		parts[i] = v.(*interp.Tensor).Format()
	}
	return strings.Join(parts, "; ")
}

// TestCleanupsPreserveResults checks on random programs that each cleanup
// pipeline keeps the interpreter's results, and that canonicalize is
// idempotent.
func TestCleanupsPreserveResults(t *testing.T) {
	pipelines := []string{
		"func.func(canonicalize)",
		"func.func(cse)",
		"func.func(dce)",
		"builtin.module(func.func(canonicalize{max-iterations=10},cse),symbol-dce)",
		"func.func(canonicalize{top-down=false region-simplify=disabled},cse,dce)",
	}
	rapid.Check(t, func(t *rapid.T) {
		nargs := rapid.IntRange(1, 3).Draw(t, "nargs")
		src := genProgram(t, nargs)
		var args []interp.Value
		for i := range nargs {
			v, err := interp.ScalarInt(ir.IntegerOf(32), int64(rapid.Int32().Draw(t, fmt.Sprintf("arg%d", i))))
			if err != nil {
				t.Fatal(err)
			}
			args = append(args, v)
		}
		ctx := realContext()
		for _, pl := range pipelines {
			m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "gen.mlir"})
			if err != nil {
				t.Fatalf("generated program does not parse: %v\n%s", err, src)
			}
			want := evalF(t, m, args)
			pm, err := Parse(pl)
			if err != nil {
				t.Fatal(err)
			}
			if err := pm.Run(ctx, m); err != nil {
				t.Fatalf("%s: %v\n%s", pl, err, src)
			}
			if got := evalF(t, m, args); got != want {
				t.Fatalf("%s changed the results: %s, want %s\nbefore:\n%s\nafter:\n%s", pl, got, want, src, m)
			}
			if pl == "func.func(canonicalize)" {
				once := m.String()
				if err := pm.Run(ctx, m); err != nil {
					t.Fatal(err)
				}
				if twice := m.String(); twice != once {
					t.Fatalf("%s is not idempotent:\n%s\nthen\n%s", pl, once, twice)
				}
			}
		}
	})
}
