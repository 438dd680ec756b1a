package graph_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/internal/fuzzwatch"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// FuzzSymbolicAttributes puts fuzzed symbolic text where modules carry it:
// the sizes of a #graph.dims encoding on the operand and result of a
// graph op, and a graph.guards entry. The text skips the parser's own
// nesting bound (an attribute's body is scanned as balanced text), so sym
// must bound it: whatever the text, parsing and verifying end within
// fuzzwatch's deadline with located diagnostics or a module that prints
// and parses back to the same text; a guard either fails to parse or
// prints as text that parses to the same guard.
func FuzzSymbolicAttributes(f *testing.F) {
	for _, s := range []string{
		"s0", "s0*4 + 1", "max(s0, s1)", "min(max(s0, 2), s1 + 1)", "floordiv(s0 + 3, 4)", "mod(s0, 8)",
		"floordiv(s0, 0)", "-5", "((s0))", "s0, 4", "?", "s0 - s1", "9223372036854775807", "s0 == s1",
		"arg0.shape[0] == s0*2", "s0 >= max(s1, 3)", "max(max(max(s0, s1 + 1), s1 + 1), s1 + 1)",
	} {
		f.Add(s)
	}
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, graph.Dialect)
	f.Fuzz(func(t *testing.T, text string) {
		defer fuzzwatch.Start(text)()
		ty := "tensor<?xf32, #graph.dims<[" + text + "]>>"
		src := fmt.Sprintf("func.func @f(%%x: %[1]s) -> %[1]s {\n  %%0 = \"graph.add\"(%%x, %%x) : (%[1]s, %[1]s) -> %[1]s\n  return %%0 : %[1]s\n}\n", ty)
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "fuzz.mlir"})
		if err == nil {
			err = ir.Verify(m)
		}
		if err != nil {
			for _, d := range ir.Diagnostics(err) {
				if ir.Position(d.Loc) == "" {
					t.Fatalf("%q: diagnostic without a position: %v", text, err)
				}
			}
		} else {
			printed := ir.Sprint(m, ir.PrintOptions{})
			back, err := ir.Parse(ctx, printed, ir.ParseOptions{Filename: "printed.mlir"})
			if err == nil {
				err = ir.Verify(back)
			}
			if err != nil {
				t.Fatalf("%q: the printed module does not parse and verify: %v\n%s", text, err, printed)
			}
			if again := ir.Sprint(back, ir.PrintOptions{}); again != printed {
				t.Fatalf("%q: print∘parse differs:\n%s\n%s", text, printed, again)
			}
		}
		gs, err := sym.ParseGuards([]string{text})
		if err != nil {
			return
		}
		back, err := sym.ParseGuards(gs.Strings())
		if err != nil || strings.Join(back.Strings(), "\n") != strings.Join(gs.Strings(), "\n") {
			t.Fatalf("guard %q prints as %q, which parses as %v, %v", text, gs.Strings(), back, err)
		}
	})
}
