package builtin_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/builtin"
	"github.com/strata-ir/strata/dialects/internal/mlirtest"
	"github.com/strata-ir/strata/ir"
)

func newCtx() *ir.Context {
	ctx := ir.NewContext(builtin.Dialect)
	ctx.AllowUnregistered = true
	return ctx
}

// prettyCases print back exactly as mlir-opt 19 prints them.
var prettyCases = []struct{ name, src string }{
	{"empty", "module {\n}\n"},
	{"named", "module @foo attributes {t.x, t.y = 1 : i32} {\n}\n"},
	{"visibility", "module attributes {sym_visibility = \"private\"} {\n}\n"},
	{"nested", "module {\n  module @inner {\n    \"t.op\"() : () -> ()\n  }\n  module {\n  }\n}\n"},
	{"cast", "module {\n  %0 = \"t.a\"() : () -> f32\n  %1 = \"t.b\"() : () -> i32\n  %2 = unrealized_conversion_cast %0, %1 : f32, i32 to i64\n  %3:2 = unrealized_conversion_cast %2 : i64 to f32, i32\n  %4 = unrealized_conversion_cast to i32\n  \"t.use\"(%3#0, %4) : (f32, i32) -> ()\n}\n"},
	{"cast in region", "module {\n  \"t.r\"() ({\n    %0 = builtin.unrealized_conversion_cast to i32\n    \"t.use\"(%0) : (i32) -> ()\n  }) : () -> ()\n}\n"},
}

func TestPrettyRoundTrip(t *testing.T) {
	for _, c := range prettyCases {
		t.Run(c.name, func(t *testing.T) {
			m := mlirtest.Parse(t, newCtx(), c.src)
			if got := ir.Sprint(m, ir.PrintOptions{}); got != c.src {
				t.Errorf("got\n%s\nwant\n%s", got, c.src)
			}
		})
	}
}

func TestMatchesMLIROpt(t *testing.T) {
	for _, c := range prettyCases {
		t.Run(c.name, func(t *testing.T) {
			mlirtest.CheckRoundTrip(t, newCtx(), c.src)
			if got := mlirtest.MLIROpt(t, c.src, "--allow-unregistered-dialect"); got != c.src {
				t.Errorf("the expected output is not mlir-opt's:\n%s", got)
			}
		})
	}
}

func TestVerifyErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{`"builtin.module"() ({}) : () -> ()`, "region #0 ('bodyRegion') failed to verify constraint: region with 1 blocks"},
		{"\"builtin.module\"() ({\n^bb0(%a: i32):\n}) : () -> ()", "region should have no arguments"},
		{"module attributes {x} {\n}", "can only contain attributes with dialect-prefixed names, found: 'x'"},
		{`"builtin.module"() <{sym_name = 1 : i32}> ({^bb0:}) : () -> ()`, "attribute 'sym_name' failed to satisfy constraint: string attribute"},
		{"\"builtin.module\"() ({\n\"t.x\"() : () -> ()\n^bb1:\n}) : () -> ()", "expects region #0 to have 0 or 1 blocks"},
		{"module {\n}", ""},
	}
	for _, c := range cases {
		got := mlirtest.VerifyError(t, newCtx(), c.src)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s:\ngot  %q\nwant %q", c.src, got, c.want)
		}
	}
}

func TestNewModule(t *testing.T) {
	m := builtin.NewModule(ir.UnknownLoc{})
	b := ir.NewBuilder(newCtx())
	b.SetInsertionPointToEnd(builtin.ModuleBody(m))
	b.Op("t.op", ir.UnknownLoc{}, nil, nil)
	if got, want := ir.Sprint(m, ir.PrintOptions{}), "module {\n  \"t.op\"() : () -> ()\n}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := ir.Verify(m); err != nil {
		t.Error(err)
	}
	// ModuleBody creates the block of a module that has none.
	empty := ir.NewOperation(nil, ir.OperationState{Name: builtin.ModuleOp, Regions: []*ir.Region{ir.NewRegion()}})
	if builtin.ModuleBody(empty) == nil || empty.Region(0).Front() == nil {
		t.Error("ModuleBody did not create the body block")
	}
}

func TestCastFold(t *testing.T) {
	src := `"t.user"() ({
  %a = "t.a"() : () -> f32
  %0 = builtin.unrealized_conversion_cast %a : f32 to i64
  %1 = builtin.unrealized_conversion_cast %0 : i64 to f32
  %2 = builtin.unrealized_conversion_cast %0 : i64 to i32
  %3 = builtin.unrealized_conversion_cast %a : f32 to f32
  "t.use"(%1, %2, %3) : (f32, i32, f32) -> ()
}) : () -> ()`
	m := mlirtest.Parse(t, newCtx(), src)
	ops := builtin.ModuleBody(m).First().Region(0).Front().Ops()
	a := ops[0].Result(0)
	for _, c := range []struct {
		op   *ir.Operation
		want *ir.Value // nil: does not fold
	}{{ops[1], nil}, {ops[2], a}, {ops[3], nil}, {ops[4], a}} {
		res := c.op.Def().Fold(c.op, make([]ir.Attribute, c.op.NumOperands()))
		switch {
		case c.want == nil && res != nil:
			t.Errorf("%s folded to %v", c.op, res)
		case c.want != nil && (len(res) != 1 || res[0].Value != c.want):
			t.Errorf("%s: got %v, want the input %%a", c.op, res)
		}
	}
}
