package passes

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
)

func realContext() *ir.Context {
	return ir.NewContext(builtin.Dialect, funcs.Dialect, arith.Dialect)
}

// opCounts counts the ops under m by name, m excluded.
func opCounts(m *ir.Operation) map[string]int {
	c := map[string]int{}
	m.Walk(func(o *ir.Operation) bool {
		if o != m {
			c[o.Name()]++
		}
		return true
	})
	return c
}

func countsString(c map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(c)) {
		b.WriteString(k + "=" + strconv.Itoa(c[k]) + " ")
	}
	return strings.TrimSpace(b.String())
}

func runReal(t *testing.T, pipeline, src string) (*ir.Operation, error) {
	t.Helper()
	ctx := realContext()
	m := mustParse(t, ctx, src)
	pm, err := Parse(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	return m, pm.Run(ctx, m)
}

func TestGenericPasses(t *testing.T) {
	tests := []struct {
		name, pipeline, src string
		want                string // op counts after the pipeline
		has                 []string
	}{
		{"cse-basic", "func.func(cse)", `
func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  return %2 : i32
}`, "arith.addi=1 arith.muli=1 func.func=1 func.return=1", []string{"arith.muli %0, %0"}},
		{"cse-commutative-and-attrs", "func.func(cse)", `
func.func @f(%a: i32, %b: i32) -> (i32, i32, i32, i32) {
  %0 = arith.addi %a, %b : i32
  %1 = arith.addi %b, %a : i32
  %2 = arith.subi %a, %b : i32
  %3 = arith.subi %b, %a : i32
  %4 = arith.addi %0, %1 overflow<nsw> : i32
  %5 = arith.addi %0, %1 : i32
  return %2, %3, %4, %5 : i32, i32, i32, i32
}`, "arith.addi=3 arith.subi=2 func.func=1 func.return=1", nil},
		{"cse-dead-and-nested-scopes", "func.func(cse)", `
func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %dead = arith.muli %a, %a : i32
  return %0 : i32
}
func.func @g(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  return %0 : i32
}`, "arith.addi=2 func.func=2 func.return=2", nil},
		{"dce-chain", "func.func(dce)", `
func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.muli %0, %0 : i32
  %2 = arith.subi %1, %a : i32
  return %a : i32
}`, "func.func=1 func.return=1", nil},
		{"dce-keeps-effects", "dce", `
func.func private @ext(i32)
func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  func.call @ext(%0) : (i32) -> ()
  return %a : i32
}`, "arith.addi=1 func.call=1 func.func=2 func.return=1", nil},
		{"symbol-dce", "symbol-dce", `
func.func private @dead1() { func.call @dead2() : () -> () return }
func.func private @dead2() { func.call @dead1() : () -> () return }
func.func private @used() { return }
func.func private @decl()
func.func @pub() { func.call @used() : () -> () return }`, "func.call=1 func.func=2 func.return=2", []string{"@used", "@pub"}},
		{"inline", "inline", `
func.func private @sq(%a: i32) -> i32 {
  %0 = arith.muli %a, %a : i32
  return %0 : i32
}
func.func @pub(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  return %0 : i32
}
func.func @f(%a: i32) -> i32 {
  %0 = func.call @sq(%a) : (i32) -> i32
  %1 = func.call @pub(%0) : (i32) -> i32
  %c0 = arith.constant 0 : i32
  %2 = arith.addi %1, %c0 : i32
  return %2 : i32
}`, "arith.addi=2 arith.muli=1 func.func=2 func.return=2", []string{"arith.addi %0, %0"}},
		{"inline-recursive", "inline{default-pipeline=\"\"}", `
func.func private @r(%a: i32) -> i32 {
  %0 = func.call @r(%a) : (i32) -> i32
  return %0 : i32
}
func.func private @leaf(%a: i32) -> i32 { return %a : i32 }
func.func private @mid(%a: i32) -> i32 {
  %0 = func.call @leaf(%a) : (i32) -> i32
  return %0 : i32
}
func.func @f(%a: i32) -> i32 {
  %0 = func.call @r(%a) : (i32) -> i32
  %1 = func.call @mid(%0) : (i32) -> i32
  return %1 : i32
}`, "func.call=2 func.func=2 func.return=2", []string{"call @r(%arg0)"}},
		{"canonicalize", "func.func(canonicalize)", `
func.func @f(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %0 = arith.addi %a, %c0 : i32
  %1 = arith.muli %0, %c1 : i32
  %2 = arith.addi %c1, %c2 : i32
  %3 = arith.addi %1, %2 : i32
  return %3 : i32
}`, "arith.addi=1 arith.constant=1 func.func=1 func.return=1", []string{"arith.constant 3 : i32"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := runReal(t, tt.pipeline, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			out := ir.Sprint(m, ir.PrintOptions{})
			if got := countsString(opCounts(m)); got != tt.want {
				t.Errorf("ops: %s\nwant: %s\n%s", got, tt.want, out)
			}
			for _, h := range tt.has {
				if !strings.Contains(out, h) {
					t.Errorf("output lacks %q:\n%s", h, out)
				}
			}
		})
	}
}

// TestInlineSizeBudget inlines a call tree that doubles at every level: the
// inliner must stop at its size budget, leaving calls, instead of growing
// the module 2^30 times.
func TestInlineSizeBudget(t *testing.T) {
	defer func(b int) { inlineMinBudget = b }(inlineMinBudget)
	inlineMinBudget = 5000
	const depth = 30
	m, err := runReal(t, "inline{max-iterations=30 default-pipeline=\"\"}", doublingCallTree(depth))
	if err != nil {
		t.Fatal(err)
	}
	c := opCounts(m)
	total := 0
	for _, n := range c {
		total += n
	}
	if total > inlineMinBudget || total < inlineMinBudget/2 || c["func.call"] == 0 {
		t.Errorf("after inlining: %d ops (budget %d): %s", total, inlineMinBudget, countsString(c))
	}
}

// TestInlineDefaultBudget inlines the 40-level doubling call tree with the
// default options and budget: it once grew to 660 000 ops and took a
// minute; now it stops at 2^16 ops, within seconds.
func TestInlineDefaultBudget(t *testing.T) {
	start := time.Now()
	m, err := runReal(t, "inline", doublingCallTree(40))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range opCounts(m) {
		total += n
	}
	if total > 1<<16 || opCounts(m)["func.call"] == 0 {
		t.Errorf("after inlining: %d ops: %s", total, countsString(opCounts(m)))
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("inlining took %v", d)
	}
	// Private callees inlined everywhere are erased, each dropping its
	// calls, which may leave the next unreferenced (counting each one's
	// uses walked the whole module once per function).
	src := strings.ReplaceAll(doublingCallTree(40), "func.func @f", "func.func private @f")
	src = strings.Replace(src, "func.func private @f0(", "func.func @f0(", 1)
	start = time.Now()
	if m, err = runReal(t, "inline", src); err != nil {
		t.Fatal(err)
	}
	if n := opCounts(m)["func.func"]; n > 8 {
		t.Errorf("%d functions left", n)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("inlining private functions took %v", d)
	}
}

// doublingCallTree returns depth functions, each calling the next twice.
func doublingCallTree(depth int) string {
	var src strings.Builder
	for i := range depth {
		src.WriteString("func.func @f" + strconv.Itoa(i) + "(%x: i32) -> i32 {\n")
		if i < depth-1 {
			next := "@f" + strconv.Itoa(i+1)
			src.WriteString("  %a = func.call " + next + "(%x) : (i32) -> i32\n")
			src.WriteString("  %b = func.call " + next + "(%a) : (i32) -> i32\n")
			src.WriteString("  return %b : i32\n}\n")
		} else {
			src.WriteString("  %y = arith.addi %x, %x : i32\n  return %y : i32\n}\n")
		}
	}
	return src.String()
}
