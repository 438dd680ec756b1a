package ir

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestVerify(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // diagnostics, notes joined with " | "; nil when valid
	}{
		{name: "valid function", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
^bb0(%a: i32):
  %0 = "test.add"(%a, %a) : (i32, i32) -> i32
  "test.return"(%0) : (i32) -> ()
}) : () -> ()`},
		{name: "op verifier", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> (i32, i32)}> ({
^bb0(%a: i32):
  "test.return"(%a) : (i32) -> ()
}) : () -> ()`, want: []string{
			"in.mlir:4:3: error: 'test.return' op has 1 operands, but enclosing function returns 2",
		}},
		{name: "op verifier with its own location", src: `
"test.located"() : () -> ()`, want: []string{
			"elsewhere:7:1: error: custom located error",
		}},
		{name: "use before def in a block", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
^bb0(%a: i32):
  %0 = "test.add"(%1, %a) : (i32, i32) -> i32
  %1 = "test.add"(%a, %a) : (i32, i32) -> i32
  "test.return"(%0) : (i32) -> ()
}) : () -> ()`, want: []string{
			"in.mlir:4:8: error: operand #0 does not dominate this use | in.mlir:5:8: note: operand defined here (op in the same block)",
		}},
		{name: "use of own result", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
^bb0(%a: i32):
  %0 = "test.add"(%0, %a) : (i32, i32) -> i32
  "test.return"(%0) : (i32) -> ()
}) : () -> ()`, want: []string{
			"in.mlir:4:8: error: operand #0 does not dominate this use | in.mlir:4:8: note: operand defined here (op in the same block)",
		}},
		{name: "dominance across blocks", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
^bb0(%a: i32):
  %0 = "test.add"(%a, %a) : (i32, i32) -> i32
  "test.cond_br"(%a)[^bb1, ^bb2] : (i32) -> ()
^bb1:
  %1 = "test.add"(%0, %0) : (i32, i32) -> i32
  "test.br"()[^bb3] : () -> ()
^bb2:
  "test.br"()[^bb3] : () -> ()
^bb3:
  %2 = "test.add"(%0, %1) : (i32, i32) -> i32
  "test.return"(%2) : (i32) -> ()
}) : () -> ()`, want: []string{
			"in.mlir:12:8: error: operand #1 does not dominate this use | in.mlir:7:8: note: operand defined here (op in the same region)",
		}},
		{name: "unreachable block uses anything", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
^bb0(%a: i32):
  "test.return"(%a) : (i32) -> ()
^bb1:
  %2 = "test.add"(%3, %3) : (i32, i32) -> i32
  "test.br"()[^bb2] : () -> ()
^bb2:
  %3 = "test.add"(%a, %a) : (i32, i32) -> i32
  "test.br"()[^bb1] : () -> ()
}) : () -> ()`},
		{name: "loop back edge", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
^bb0(%a: i32):
  "test.br"()[^bb1] : () -> ()
^bb1:
  %1 = "test.add"(%a, %a) : (i32, i32) -> i32
  "test.cond_br"(%1)[^bb1, ^bb2] : (i32) -> ()
^bb2:
  "test.return"(%1) : (i32) -> ()
}) : () -> ()`},
		{name: "values of enclosing regions", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
^bb0(%a: i32):
  %0 = "test.add"(%a, %a) : (i32, i32) -> i32
  "test.region"() ({
    %1 = "test.add"(%0, %a) : (i32, i32) -> i32
    "test.region"() ({
      %2 = "test.add"(%1, %0) : (i32, i32) -> i32
      "test.yield"() : () -> ()
    }) : () -> ()
    "test.yield"() : () -> ()
  }) : () -> ()
  "test.return"(%0) : (i32) -> ()
}) : () -> ()`},
		{name: "graph region", src: `
"test.graph"() ({
  %0 = "test.add"(%1, %1) : (i32, i32) -> i32
  %1 = "test.add"(%0, %0) : (i32, i32) -> i32
}) : () -> ()`},
		{name: "missing terminator", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
^bb0(%a: i32):
  %0 = "test.add"(%a, %a) : (i32, i32) -> i32
}) : () -> ()`, want: []string{
			"in.mlir:4:8: error: block with no terminator, has 'test.add' op",
		}},
		{name: "empty block", src: `
"test.region"() ({
^bb0:
}) : () -> ()`, want: []string{
			"in.mlir:2:1: error: 'test.region' op empty block: expect at least a terminator",
		}},
		{name: "terminator in the middle", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
^bb0(%a: i32):
  "test.return"(%a) : (i32) -> ()
  "test.return"(%a) : (i32) -> ()
}) : () -> ()`, want: []string{
			"in.mlir:4:3: error: 'test.return' op must be the last operation in the parent block",
		}},
		// An unregistered op's regions may be graph regions (as upstream
		// assumes): a use before the definition is fine there, but not in
		// the region of a registered op nested inside.
		{name: "unregistered ops are opaque but nested regions are checked", src: `
"x.opaque"() ({
  %0 = "test.add"(%1, %1) : (i32, i32) -> i32
  %1 = "x.thing"() : () -> i32
  "test.region"() ({
    %2 = "test.add"(%3, %0) : (i32, i32) -> i32
    %3 = "x.thing"() : () -> i32
    "test.yield"() : () -> ()
  }) : () -> ()
}) : () -> ()`, want: []string{
			"in.mlir:6:10: error: operand #0 does not dominate this use | in.mlir:7:10: note: operand defined here (op in the same block)",
		}},
		{name: "single block", src: `
"test.single"() ({
  "test.br"()[^bb1] : () -> ()
^bb1:
  "test.print"() : () -> ()
}) : () -> ()`, want: []string{
			"in.mlir:2:1: error: 'test.single' op expects region #0 to have 0 or 1 blocks",
		}},
		{name: "entry block with predecessors", src: `
"test.region"() ({
^bb0:
  "test.br"()[^bb0] : () -> ()
}) : () -> ()`, want: []string{
			"in.mlir:2:1: error: 'test.region' op entry block of region may not have predecessors",
		}},
		{name: "symbol redefinition", src: `
"test.module"() ({
  "test.func"() <{sym_name = "f", function_type = () -> ()}> ({
    "test.return"() : () -> ()
  }) : () -> ()
  "test.func"() <{sym_name = "f", function_type = () -> ()}> ({
    "test.return"() : () -> ()
  }) : () -> ()
}) : () -> ()`, want: []string{
			"in.mlir:6:3: error: redefinition of symbol named 'f' | in.mlir:3:3: note: see existing symbol definition here",
		}},
		{name: "symbol outside a symbol table", src: `
"test.region"() ({
  "test.func"() <{function_type = () -> ()}> ({
    "test.return"() : () -> ()
  }) : () -> ()
  "test.yield"() : () -> ()
}) : () -> ()`, want: []string{
			"in.mlir:3:3: error: 'test.func' op requires string attribute 'sym_name'",
			"in.mlir:3:3: error: 'test.func' op symbol's parent must have the SymbolTable trait",
		}},
		{name: "same operands and result type", src: `
"test.func"() <{sym_name = "f", function_type = (i32, i64) -> ()}> ({
^bb0(%a: i32, %b: i64):
  %0 = "test.add"(%a, %b) : (i32, i64) -> i32
  "test.return"() : () -> ()
}) : () -> ()`, want: []string{
			"in.mlir:4:8: error: 'test.add' op requires the same type for all operands and results",
		}},
		{name: "constant without value", src: `
%0 = "test.constant"() : () -> i32`, want: []string{
			"in.mlir:2:6: error: 'test.constant' op requires attribute 'value'",
		}},
		{name: "every error is reported", src: `
"test.func"() <{sym_name = "f", function_type = (i32) -> (i32, i32)}> ({
^bb0(%a: i32):
  %0 = "test.bad"() : () -> i32
  %1 = "test.add"(%2, %a) : (i32, i32) -> i32
  %2 = "test.constant"() : () -> i32
  "test.return"(%a) : (i32) -> ()
}) : () -> ()
"test.bad"() : () -> ()`, want: []string{
			"in.mlir:4:8: error: 'test.bad' op is always bad",
			"in.mlir:5:8: error: operand #0 does not dominate this use | in.mlir:6:8: note: operand defined here (op in the same block)",
			"in.mlir:6:8: error: 'test.constant' op requires attribute 'value'",
			"in.mlir:7:3: error: 'test.return' op has 1 operands, but enclosing function returns 2",
			"in.mlir:9:1: error: 'test.bad' op is always bad",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := newTestContext()
			ctx.AllowUnregistered = true
			m := mustParse(t, ctx, tc.src)
			got := diagStrings(Verify(m))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Verify:\ngot:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// TestVerifyBuiltIR covers errors the parser cannot produce: they arise from
// IR built or rewritten in memory.
func TestVerifyBuiltIR(t *testing.T) {
	const src = `
"test.module"() ({
  %c = "test.constant"() <{value = 1 : i32}> : () -> i32
  "test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
  ^bb0(%a: i32):
    %0 = "test.add"(%a, %a) : (i32, i32) -> i32
    "test.return"(%0) : (i32) -> ()
  }) : () -> ()
  "test.region"() ({
    "test.print"(%c) : (i32) -> ()
    "test.yield"() : () -> ()
  }) : () -> ()
  "test.region"() ({
    "test.br"()[^bb1] : () -> ()
  ^bb1:
    "test.yield"() : () -> ()
  }) : () -> ()
  %late = "test.constant"() <{value = 2 : i32}> : () -> i32
}) : () -> ()`
	tests := []struct {
		name   string
		mutate func(m *Operation)
		want   string
	}{
		{"isolated from above", func(m *Operation) {
			add := findOp(m, "test.add")
			c := findOp(m, "test.constant")
			add.SetOperand(1, c.Result(0))
		}, "in.mlir:6:10: error: 'test.add' op using value defined outside the region (operand #1) | in.mlir:4:3: note: required by region isolation constraints"},
		{"null operand", func(m *Operation) {
			findOp(m, "test.add").SetOperand(0, nil)
		}, "in.mlir:6:10: error: 'test.add' op null operand found (operand #0)"},
		{"erased definition", func(m *Operation) {
			add := findOp(m, "test.add")
			other := NewOperation(nil, OperationState{Name: "x.detached", ResultTypes: []Type{I32}})
			add.SetOperand(0, other.Result(0))
		}, "in.mlir:6:10: error: operand #0 does not dominate this use | note: operand defined here"},
		{"later op in an enclosing region", func(m *Operation) {
			findOp(m, "test.print").SetOperand(0, findOps(m, "test.constant")[1].Result(0))
		}, "in.mlir:10:5: error: operand #0 does not dominate this use | in.mlir:18:11: note: operand defined here (op in a parent region)"},
		{"successor in another region", func(m *Operation) {
			regions := findOps(m, "test.region")
			br := findOp(m, "test.br")
			br.SetSuccessor(0, regions[0].Region(0).Front())
		}, "in.mlir:14:5: error: 'test.br' op reference to block defined in another region (successor #0)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, newTestContext(), src)
			if err := Verify(m); err != nil {
				t.Fatalf("valid input: %v", err)
			}
			tc.mutate(m)
			got := diagStrings(Verify(m))
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestVerifyNestedRoot verifies an op whose operands come from outside it.
func TestVerifyNestedRoot(t *testing.T) {
	m := mustParse(t, newTestContext(), `
"test.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
^bb0(%a: i32):
  "test.region"() ({
    %0 = "test.add"(%a, %a) : (i32, i32) -> i32
    "test.yield"() : () -> ()
  }) : () -> ()
  "test.return"(%a) : (i32) -> ()
}) : () -> ()`)
	if err := Verify(findOp(m, "test.region")); err != nil {
		t.Errorf("Verify(nested op) = %v", err)
	}
}

func TestVerifyDeepNesting(t *testing.T) {
	const depth = 495 // about as deep as the parser allows
	var b strings.Builder
	b.WriteString("\"test.func\"() <{sym_name = \"f\", function_type = (i32) -> ()}> ({\n^bb0(%a: i32):\n")
	for range depth {
		b.WriteString("\"test.region\"() ({\n")
	}
	b.WriteString("%x = \"test.add\"(%a, %a) : (i32, i32) -> i32\n")
	for range depth {
		b.WriteString("\"test.yield\"() : () -> ()\n}) : () -> ()\n")
	}
	b.WriteString("\"test.return\"() : () -> ()\n}) : () -> ()\n")
	m := mustParse(t, newTestContext(), b.String())
	if err := Verify(m); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyLinear checks that verification time grows linearly: a
// quadratic dominance check would take minutes on a large function. It
// compares 500k ops with 50k ops on the same machine, so a loaded machine
// slows both sides alike; linear growth gives a ratio near 10, quadratic
// near 100.
func TestVerifyLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("large input")
	}
	timeVerify := func(n int) time.Duration {
		m := bigFunction(n)
		best := time.Duration(1<<63 - 1)
		for range 3 {
			// A collection started by building m would otherwise land in
			// the timed region of one side only.
			runtime.GC()
			start := time.Now()
			if err := Verify(m); err != nil {
				t.Fatal(err)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	small, large := timeVerify(50_000), timeVerify(500_000)
	if ratio := float64(large) / float64(small); ratio > 30 {
		t.Errorf("Verify of 500k ops took %v, %.0f× the %v of 50k ops: growth is not linear", large, ratio, small)
	}
}

func BenchmarkVerify(b *testing.B) {
	m := bigFunction(100_000)
	b.ResetTimer()
	for range b.N {
		if err := Verify(m); err != nil {
			b.Fatal(err)
		}
	}
}

// bigFunction builds a test.func holding n test.add ops, each using the two
// previous values, spread over a chain of blocks of 1000 ops.
func bigFunction(n int) *Operation {
	ctx := newTestContext()
	entry := NewBlock(I32)
	r := NewRegion()
	r.Append(entry)
	fn := NewOperation(ctx, OperationState{Name: "test.func", Regions: []*Region{r},
		Properties: Dict(NamedAttr{"sym_name", Str("f")}, NamedAttr{"function_type", TypeAttr{FunctionOf([]Type{I32}, []Type{I32})}})})
	b := NewBuilder(ctx)
	b.SetInsertionPointToEnd(entry)
	prev, cur := entry.Argument(0), entry.Argument(0)
	for i := range n {
		if i > 0 && i%1000 == 0 {
			next := NewBlock()
			r.Append(next)
			b.Create(OperationState{Name: "test.br", Successors: []*Block{next}})
			b.SetInsertionPointToEnd(next)
		}
		v := b.Op("test.add", UnknownLoc{}, []*Value{prev, cur}, []Type{I32}).Result(0)
		prev, cur = cur, v
	}
	b.Op("test.return", UnknownLoc{}, []*Value{cur}, nil)
	return fn
}

func findOps(root *Operation, name string) []*Operation {
	var ops []*Operation
	root.Walk(func(o *Operation) bool {
		if o.Name() == name {
			ops = append(ops, o)
		}
		return true
	})
	return ops
}

func findOp(root *Operation, name string) *Operation {
	ops := findOps(root, name)
	if len(ops) == 0 {
		panic(fmt.Sprintf("no %s op", name))
	}
	return ops[0]
}

// TestVerifyUnknownOpOfLoadedDialect checks that an op built in Go with a
// name its loaded dialect does not define is rejected, as the parser
// rejects its text, unless the context allows unregistered ops; ops of
// dialects the context did not load stay opaque.
func TestVerifyUnknownOpOfLoadedDialect(t *testing.T) {
	build := func(ctx *Context, name string) *Operation {
		m := NewOperation(ctx, OperationState{Name: "test.module", Regions: []*Region{{}}})
		body := &Block{}
		m.Region(0).Append(body)
		body.Append(NewOperation(ctx, OperationState{Name: name}))
		return m
	}
	ctx := NewContext(testDialect)
	err := Verify(build(ctx, "test.addd"))
	if err == nil || !strings.Contains(err.Error(), "unregistered operation 'test.addd' found in dialect ('test') that does not allow unknown operations") {
		t.Errorf("Verify(test.addd) = %v, want the unknown op reported", err)
	}
	if op := build(ctx, "test.addd").Region(0).Front().First(); op.Registered() || op.Def() != nil {
		t.Errorf("test.addd: Registered() = %v, Def() = %v; want an unregistered op", op.Registered(), op.Def())
	}
	if err := Verify(build(ctx, "other.op")); err != nil {
		t.Errorf("Verify(other.op), dialect not loaded: %v, want it accepted as opaque", err)
	}
	allow := NewContext(testDialect)
	allow.AllowUnregistered = true
	if err := Verify(build(allow, "test.addd")); err != nil {
		t.Errorf("Verify(test.addd) with AllowUnregistered: %v, want it accepted", err)
	}
}
