package ir

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// funcSrc wraps body in a test.func @f taking (%a, %b: i32) and a module.
func funcSrc(body string) string {
	return `"test.func"() <{sym_name = "f", function_type = (i32, i32) -> i32}> ({
^bb0(%a: i32, %b: i32):
` + body + `
}) : () -> ()`
}

// wantFunc is the generic print of a module holding funcSrc(body), with
// body written as the printer renames values.
func wantFunc(body string) string {
	var b strings.Builder
	b.WriteString("\"builtin.module\"() ({\n  \"test.func\"() <{function_type = (i32, i32) -> i32, sym_name = \"f\"}> ({\n  ^bb0(%arg0: i32, %arg1: i32):\n")
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "^") {
			b.WriteString("  " + l + "\n")
		} else {
			b.WriteString("    " + l + "\n")
		}
	}
	b.WriteString("  }) : () -> ()\n}) : () -> ()\n")
	return b.String()
}

type greedyRun struct {
	out     string
	log     string
	changed bool
	err     error
}

func runGreedy(t *testing.T, src string, patterns []*Pattern, cfg GreedyConfig) greedyRun {
	t.Helper()
	ctx := newTestContext()
	m := mustParse(t, ctx, src)
	var log strings.Builder
	cfg.Log = &log
	changed, err := ApplyPatternsGreedily(m, patterns, cfg)
	if verr := Verify(m); verr != nil {
		t.Fatalf("IR invalid after rewriting: %v\n%s", verr, Sprint(m, PrintOptions{Generic: true}))
	}
	return greedyRun{out: Sprint(m, PrintOptions{Generic: true}), log: log.String(), changed: changed, err: err}
}

// negNeg rewrites test.neg(test.neg(x)) to x.
var negNeg = &Pattern{Name: "neg-neg", Root: "test.neg", Benefit: 1, Rewrite: func(r *Rewriter, op *Operation) bool {
	inner := op.Operand(0).DefiningOp()
	if inner == nil || inner.Name() != "test.neg" {
		return false
	}
	r.ReplaceOp(op, []*Value{inner.Operand(0)})
	return true
}}

// mulToAdd rewrites x*2 into x+x, a strength reduction.
var mulToAdd = &Pattern{Name: "mul-by-two", Root: "test.mul", Benefit: 1, Rewrite: func(r *Rewriter, op *Operation) bool {
	c := op.Operand(1).DefiningOp()
	if c == nil || !c.HasTrait(ConstantLike) || !AttrEqual(c.Attr("value"), Int(2, I32)) {
		return false
	}
	x := op.Operand(0)
	add := r.Op("test.add", op.Loc(), []*Value{x, x}, []Type{x.Type()})
	r.ReplaceOp(op, add.Results())
	return true
}}

func TestGreedy(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		patterns []*Pattern
		want     string // the function body after rewriting
		log      string
	}{
		{
			name: "fold to constant",
			body: `
  %c1 = "test.constant"() <{value = 1 : i32}> : () -> i32
  %c2 = "test.constant"() <{value = 2 : i32}> : () -> i32
  %0 = "test.add"(%c1, %c2) : (i32, i32) -> i32
  %1 = "test.mul"(%0, %a) : (i32, i32) -> i32
  "test.return"(%1) : (i32) -> ()`,
			want: `
%0 = "test.constant"() <{value = 3 : i32}> : () -> i32
%1 = "test.mul"(%0, %arg0) : (i32, i32) -> i32
"test.return"(%1) : (i32) -> ()`,
			log: "fold: 'test.add' at in.mlir:6:8\n",
		},
		{
			name: "fold to an existing value",
			body: `
  %c0 = "test.constant"() <{value = 0 : i32}> : () -> i32
  %0 = "test.add"(%c0, %a) : (i32, i32) -> i32
  "test.return"(%0) : (i32) -> ()`,
			want: `"test.return"(%arg0) : (i32) -> ()`,
			log:  "fold: 'test.add' at in.mlir:5:8\n",
		},
		{
			name: "constants are deduplicated and hoisted",
			body: `
  %0 = "test.mul"(%a, %b) : (i32, i32) -> i32
  %c1 = "test.constant"() <{value = 7 : i32}> : () -> i32
  %1 = "test.mul"(%0, %c1) : (i32, i32) -> i32
  %c2 = "test.constant"() <{value = 7 : i32}> : () -> i32
  %2 = "test.mul"(%1, %c2) : (i32, i32) -> i32
  "test.return"(%2) : (i32) -> ()`,
			want: `
%0 = "test.constant"() <{value = 7 : i32}> : () -> i32
%1 = "test.mul"(%arg0, %arg1) : (i32, i32) -> i32
%2 = "test.mul"(%1, %0) : (i32, i32) -> i32
%3 = "test.mul"(%2, %0) : (i32, i32) -> i32
"test.return"(%3) : (i32) -> ()`,
			log: "fold: 'test.constant' at in.mlir:7:9\n",
		},
		{
			name: "folded constants reuse existing ones",
			body: `
  %c3 = "test.constant"() <{value = 3 : i32}> : () -> i32
  %c1 = "test.constant"() <{value = 1 : i32}> : () -> i32
  %c2 = "test.constant"() <{value = 2 : i32}> : () -> i32
  %0 = "test.add"(%c1, %c2) : (i32, i32) -> i32
  %1 = "test.mul"(%0, %c3) : (i32, i32) -> i32
  %2 = "test.mul"(%1, %a) : (i32, i32) -> i32
  "test.return"(%2) : (i32) -> ()`,
			want: `
%0 = "test.constant"() <{value = 9 : i32}> : () -> i32
%1 = "test.mul"(%0, %arg0) : (i32, i32) -> i32
"test.return"(%1) : (i32) -> ()`,
		},
		{
			name: "dead ops are removed, side effects kept",
			body: `
  %0 = "test.add"(%a, %b) : (i32, i32) -> i32
  %1 = "test.neg"(%0) : (i32) -> i32
  %2 = "test.print"(%a) : (i32) -> i32
  "test.return"(%a) : (i32) -> ()`,
			want: `
%0 = "test.print"(%arg0) : (i32) -> i32
"test.return"(%arg0) : (i32) -> ()`,
		},
		{
			name:     "pattern",
			patterns: []*Pattern{negNeg},
			body: `
  %0 = "test.neg"(%a) : (i32) -> i32
  %1 = "test.neg"(%0) : (i32) -> i32
  %2 = "test.neg"(%1) : (i32) -> i32
  %3 = "test.neg"(%2) : (i32) -> i32
  "test.return"(%3) : (i32) -> ()`,
			want: `"test.return"(%arg0) : (i32) -> ()`,
			log:  "rewrite: neg-neg on 'test.neg' at in.mlir:5:8\nrewrite: neg-neg on 'test.neg' at in.mlir:7:8\n",
		},
		{
			name:     "pattern creating ops that fold",
			patterns: []*Pattern{mulToAdd},
			body: `
  %c2 = "test.constant"() <{value = 2 : i32}> : () -> i32
  %c0 = "test.constant"() <{value = 0 : i32}> : () -> i32
  %0 = "test.mul"(%a, %c2) : (i32, i32) -> i32
  %1 = "test.mul"(%c0, %c2) : (i32, i32) -> i32
  %2 = "test.add"(%0, %1) : (i32, i32) -> i32
  "test.return"(%2) : (i32) -> ()`,
			want: `
%0 = "test.add"(%arg0, %arg0) : (i32, i32) -> i32
"test.return"(%0) : (i32) -> ()`,
		},
		{
			name: "unreachable blocks are removed",
			body: `
  "test.br"()[^bb2] : () -> ()
^bb1:
  %0 = "test.print"(%a) : (i32) -> i32
  "test.br"()[^bb2] : () -> ()
^bb2:
  "test.return"(%a) : (i32) -> ()`,
			want: `
"test.br"()[^bb1] : () -> ()
^bb1:  // pred: ^bb0
"test.return"(%arg0) : (i32) -> ()`,
		},
	}
	for _, tc := range tests {
		for _, topDown := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/topdown=%v", tc.name, topDown), func(t *testing.T) {
				cfg := DefaultGreedyConfig()
				cfg.TopDown = topDown
				got := runGreedy(t, funcSrc(tc.body), tc.patterns, cfg)
				if got.err != nil {
					t.Fatal(got.err)
				}
				if want := wantFunc(tc.want); got.out != want {
					t.Errorf("got:\n%s\nwant:\n%s", got.out, want)
				}
				if !got.changed {
					t.Error("changed = false")
				}
				if tc.log != "" && !topDown && got.log != tc.log {
					t.Errorf("log:\n%s\nwant:\n%s", got.log, tc.log)
				}
			})
		}
	}
}

func TestGreedyNoChange(t *testing.T) {
	src := funcSrc(`
  %0 = "test.add"(%a, %b) : (i32, i32) -> i32
  "test.return"(%0) : (i32) -> ()`)
	got := runGreedy(t, src, []*Pattern{negNeg}, DefaultGreedyConfig())
	if got.changed || got.err != nil || got.log != "" {
		t.Errorf("changed=%v err=%v log=%q, want no change", got.changed, got.err, got.log)
	}
}

func TestGreedyFoldingDisabled(t *testing.T) {
	src := funcSrc(`
  %c1 = "test.constant"() <{value = 1 : i32}> : () -> i32
  %0 = "test.add"(%c1, %c1) : (i32, i32) -> i32
  "test.return"(%0) : (i32) -> ()`)
	cfg := DefaultGreedyConfig()
	cfg.EnableFolding = false
	got := runGreedy(t, src, nil, cfg)
	if got.changed || !strings.Contains(got.out, "test.add") {
		t.Errorf("folded with folding disabled:\n%s", got.out)
	}
}

// TestGreedyBenefit checks that the highest benefit pattern is tried first
// and that equal benefits keep the given order.
func TestGreedyBenefit(t *testing.T) {
	tag := func(name string, benefit int) *Pattern {
		return &Pattern{Name: name, Root: "test.neg", Benefit: benefit, Rewrite: func(r *Rewriter, op *Operation) bool {
			if op.Attr("tag") != nil {
				return false
			}
			r.ModifyInPlace(op, func() { op.SetAttr("tag", Str(name)) })
			return true
		}}
	}
	src := funcSrc(`
  %0 = "test.neg"(%a) : (i32) -> i32
  "test.return"(%0) : (i32) -> ()`)
	for _, tc := range []struct {
		patterns []*Pattern
		want     string
	}{
		{[]*Pattern{tag("low", 1), tag("high", 2)}, "high"},
		{[]*Pattern{tag("high", 2), tag("low", 1)}, "high"},
		{[]*Pattern{tag("first", 1), tag("second", 1)}, "first"},
		{[]*Pattern{tag("any", 3), tag("second", 1)}, "any"},
	} {
		tc.patterns[0].Root = map[bool]string{true: "", false: "test.neg"}[tc.want == "any"]
		got := runGreedy(t, src, tc.patterns, DefaultGreedyConfig())
		if want := fmt.Sprintf("{tag = %q}", tc.want); !strings.Contains(got.out, want) {
			t.Errorf("want %s:\n%s", want, got.out)
		}
	}
}

func TestGreedyNotConverged(t *testing.T) {
	// flip toggles an attribute forever: it never reaches a fixpoint.
	flip := &Pattern{Name: "flip", Root: "test.neg", Rewrite: func(r *Rewriter, op *Operation) bool {
		r.ModifyInPlace(op, func() {
			if op.Attr("on") != nil {
				op.SetAttr("on", nil)
			} else {
				op.SetAttr("on", UnitAttr{})
			}
		})
		return true
	}}
	src := funcSrc(`
  %0 = "test.neg"(%a) : (i32) -> i32
  "test.return"(%0) : (i32) -> ()`)
	cfg := DefaultGreedyConfig()
	cfg.MaxNumRewrites = 7
	got := runGreedy(t, src, []*Pattern{flip}, cfg)
	if !errors.Is(got.err, ErrNotConverged) || !got.changed {
		t.Errorf("MaxNumRewrites: changed=%v err=%v, want ErrNotConverged", got.changed, got.err)
	}
	if n := strings.Count(got.log, "\n"); n != 7 {
		t.Errorf("%d rewrites, want 7", n)
	}

	// stamp changes its op without telling the rewriter, so the op is not
	// revisited within a sweep, but every sweep changes the IR again.
	stamp := &Pattern{Name: "stamp", Root: "test.neg", Rewrite: func(r *Rewriter, op *Operation) bool {
		n, _ := op.Attr("n").(IntegerAttr)
		op.SetAttr("n", Int(n.Value+1, I64))
		return true
	}}
	cfg = DefaultGreedyConfig()
	cfg.MaxIterations = 3
	got = runGreedy(t, src, []*Pattern{stamp}, cfg)
	if !errors.Is(got.err, ErrNotConverged) || !strings.Contains(got.err.Error(), "within 3 iterations") {
		t.Errorf("MaxIterations: err = %v", got.err)
	}
	if n := strings.Count(got.log, "\n"); n != 3 {
		t.Errorf("%d rewrites in 3 iterations, want 3", n)
	}
}

func TestCanonicalizationPatterns(t *testing.T) {
	p1 := &Pattern{Name: "a1"}
	p2 := &Pattern{Name: "a2"}
	p3 := &Pattern{Name: "b1"}
	ctx := NewContext(
		&Dialect{Name: "zz", Ops: []*OpDef{{Name: "zz.op", Canonicalize: []*Pattern{p3}}}},
		&Dialect{Name: "aa", Ops: []*OpDef{{Name: "aa.y", Canonicalize: []*Pattern{p1}}, {Name: "aa.x"}, {Name: "aa.z", Canonicalize: []*Pattern{p2}}}},
	)
	got := ctx.CanonicalizationPatterns()
	if len(got) != 3 || got[0] != p1 || got[1] != p2 || got[2] != p3 {
		t.Errorf("CanonicalizationPatterns = %v", got)
	}
}

// TestGreedyPreservesValues is the property: for random chains of
// test.constant/test.add/test.mul over the arguments, the rewritten function
// computes what the original did.
func TestGreedyPreservesValues(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var body strings.Builder
		vals := []string{"%a", "%b"}
		n := rapid.IntRange(1, 25).Draw(t, "n")
		for i := range n {
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				c := rapid.Int64Range(-3, 3).Draw(t, "const")
				fmt.Fprintf(&body, "  %%v%d = \"test.constant\"() <{value = %d : i32}> : () -> i32\n", i, c)
			default:
				op := []string{"test.add", "test.mul"}[rapid.IntRange(0, 1).Draw(t, "op")]
				x := rapid.SampledFrom(vals).Draw(t, "x")
				y := rapid.SampledFrom(vals).Draw(t, "y")
				fmt.Fprintf(&body, "  %%v%d = %q(%s, %s) : (i32, i32) -> i32\n", i, op, x, y)
			}
			vals = append(vals, fmt.Sprintf("%%v%d", i))
		}
		fmt.Fprintf(&body, "  \"test.return\"(%s) : (i32) -> ()", rapid.SampledFrom(vals).Draw(t, "ret"))
		ctx := newTestContext()
		m, err := Parse(ctx, funcSrc(body.String()), ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		args := [][2]int64{{0, 0}, {1, -1}, {5, 7}, {-100000, 123456}}
		var before []int64
		for _, a := range args {
			before = append(before, evalTestFunc(t, m, a[0], a[1]))
		}
		cfg := DefaultGreedyConfig()
		cfg.TopDown = rapid.Bool().Draw(t, "topDown")
		if _, err := ApplyPatternsGreedily(m, []*Pattern{mulToAdd}, cfg); err != nil {
			t.Fatal(err)
		}
		if err := Verify(m); err != nil {
			t.Fatal(err)
		}
		for i, a := range args {
			if got := evalTestFunc(t, m, a[0], a[1]); got != before[i] {
				t.Fatalf("f(%d, %d) = %d after rewriting, %d before:\n%s", a[0], a[1], got, before[i], Sprint(m, PrintOptions{Generic: true}))
			}
		}
	})
}

// evalTestFunc interprets the single-block test.func @f of m.
func evalTestFunc(t *rapid.T, m *Operation, a, b int64) int64 {
	fn := findOp(m, "test.func")
	entry := fn.Region(0).Front()
	env := map[*Value]int64{entry.Argument(0): a, entry.Argument(1): b}
	for op := range entry.All() {
		in := make([]int64, op.NumOperands())
		for i, v := range op.Operands() {
			x, ok := env[v]
			if !ok {
				t.Fatalf("%s reads an undefined value", op.Name())
			}
			in[i] = x
		}
		var out int64
		switch op.Name() {
		case "test.constant":
			out = op.Attr("value").(IntegerAttr).Value
		case "test.add":
			out = in[0] + in[1]
		case "test.mul":
			out = in[0] * in[1]
		case "test.return":
			return int64(int32(in[0]))
		default:
			t.Fatalf("cannot evaluate %s", op.Name())
		}
		env[op.Result(0)] = int64(int32(out))
	}
	t.Fatal("no test.return")
	return 0
}
