package passes

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
)

// This file defines a small dialect and a few passes for the tests of the
// pass manager, so that they do not depend on the real dialects.

var testOps = []*ir.OpDef{
	{Name: "builtin.module", Traits: ir.SymbolTable | ir.NoTerminator | ir.SingleBlock | ir.IsolatedFromAbove},
	{Name: "test.func", Traits: ir.IsolatedFromAbove | ir.Symbol, Inherent: []string{"sym_name", "sym_visibility"}},
	{Name: "test.inner", Traits: ir.IsolatedFromAbove | ir.SymbolTable | ir.NoTerminator | ir.SingleBlock, Inherent: []string{"sym_name"}},
	{Name: "test.return", Traits: ir.Terminator | ir.ReturnLike | ir.Pure},
	{Name: "test.constant", Traits: ir.ConstantLike | ir.Pure, Inherent: []string{"value"}},
	{Name: "test.add", Traits: ir.Pure | ir.Commutative},
	{Name: "test.print"},
	{Name: "test.invalid", Verify: func(*ir.Operation) error { return errors.New("is never valid") }},
}

func testContext() *ir.Context {
	return ir.NewContext(&ir.Dialect{Name: "test", Ops: testOps[1:]}, &ir.Dialect{Name: "builtin", Ops: testOps[:1]})
}

func mustParse(t testing.TB, ctx *ir.Context, src string) *ir.Operation {
	t.Helper()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "in.mlir"})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("verify input: %v", err)
	}
	return m
}

// testFunc returns the generic form of a test.func named name holding n adds.
func testFunc(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\"test.func\"() <{sym_name = \"%s\"}> ({\n", name)
	b.WriteString("  %c = \"test.constant\"() <{value = 1 : i32}> : () -> i32\n")
	prev := "%c"
	for i := range n {
		fmt.Fprintf(&b, "  %%v%d = \"test.add\"(%s, %%c) : (i32, i32) -> i32\n", i, prev)
		prev = fmt.Sprintf("%%v%d", i)
	}
	fmt.Fprintf(&b, "  \"test.return\"(%s) : (i32) -> ()\n}) : () -> ()\n", prev)
	return b.String()
}

func init() {
	Register(&PassInfo{
		Name: "test-options", Summary: "Records its options", Anchor: "test.func",
		Options: []OptionDef{
			{Name: "flag", Type: Bool, Default: false, Doc: "a flag"},
			{Name: "count", Type: Int, Default: 3, Doc: "a count"},
			{Name: "mode", Type: String, Default: "fast", Enum: []string{"fast", "slow"}, Doc: "a mode"},
			{Name: "dims", Type: IntList, Doc: "some dims"},
			{Name: "names", Type: StringList, Doc: "some names"},
			{Name: "label", Type: String, Default: "", Doc: "free text"},
		},
		New: func(opts Options) (Pass, error) {
			if opts.Int("count") < 0 {
				return nil, errors.New("count must not be negative")
			}
			return FuncPass{PassName: "test-options", Fn: func(*ir.Operation, *State) error { return nil }}, nil
		},
	})
	// test-tag sets attribute "tag" on the op to the number of ops in it,
	// counting them in a statistic.
	Register(&PassInfo{
		Name: "test-tag", Summary: "Tags ops with their size", Anchor: AnyOp,
		New: func(Options) (Pass, error) {
			return FuncPass{PassName: "test-tag", Fn: func(op *ir.Operation, st *State) error {
				n := 0
				op.Walk(func(*ir.Operation) bool { n++; return true })
				st.Stat("ops", "Number of ops seen").Add(int64(n))
				op.SetAttr("tag", ir.Int(int64(n), ir.IntegerOf(64)))
				return nil
			}}, nil
		},
	})
	// test-fail fails on symbols named "bad...", after half rewriting them.
	Register(&PassInfo{
		Name: "test-fail", Summary: "Fails on @bad", Anchor: "test.func",
		New: func(Options) (Pass, error) {
			return FuncPass{PassName: "test-fail", Fn: func(op *ir.Operation, st *State) error {
				if !strings.HasPrefix(ir.SymbolName(op), "bad") {
					st.MarkUnchanged()
					return nil
				}
				op.SetAttr("half", ir.UnitAttr{})
				return ir.Errorf(op.Loc(), "'%s' op %s is bad", op.Name(), ir.SymbolName(op))
			}}, nil
		},
	})
	// test-break inserts an op the verifier rejects.
	Register(&PassInfo{
		Name: "test-break", Summary: "Breaks the IR", Anchor: AnyOp,
		New: func(Options) (Pass, error) {
			return FuncPass{PassName: "test-break", Fn: func(op *ir.Operation, st *State) error {
				b := ir.NewBuilder(st.Ctx)
				body := op.Region(0).Front()
				b.SetInsertionPointToStart(body)
				b.Op("test.invalid", op.Loc(), nil, nil)
				return nil
			}}, nil
		},
	})
	Register(&PassInfo{
		Name: "test-module-only", Summary: "Runs on modules", Anchor: "builtin.module",
		New: func(Options) (Pass, error) {
			return FuncPass{PassName: "test-module-only", Fn: func(*ir.Operation, *State) error { return nil }}, nil
		},
	})
	// test-panic panics on symbols named "boom...".
	Register(&PassInfo{
		Name: "test-panic", Summary: "Panics on @boom", Anchor: "test.func",
		New: func(Options) (Pass, error) {
			return FuncPass{PassName: "test-panic", Fn: func(op *ir.Operation, st *State) error {
				if strings.HasPrefix(ir.SymbolName(op), "boom") {
					panic("boom: " + ir.SymbolName(op))
				}
				return nil
			}}, nil
		},
	})
	RegisterPipeline("test-pipeline", "Tags functions twice", "test.func(test-tag,test-tag)")
	RegisterPipeline("test-loop-a", "Refers to test-loop-b", "test-loop-b")
	RegisterPipeline("test-loop-b", "Refers to test-loop-a", "test-loop-a")
	RegisterPipeline("test-wrong-anchor", "A func pass at module level", "test-fail")
}
