package arith_test

import (
	"testing"

	"github.com/strata-ir/strata/ir"
)

// TestParsedPropertiesShared: the properties the custom parsers build for
// each op (the default fastmath flag) are shared among the ops whose
// properties read the same, as those parsed from text are, and only among
// them; printing and setting one op's flag show nothing shared leaking.
func TestParsedPropertiesShared(t *testing.T) {
	ctx := newContext()
	m := parse(t, ctx, `func.func @f(%a: f32) -> f32 {
  %0 = arith.addf %a, %a : f32
  %1 = arith.addf %0, %a : f32
  %2 = arith.addf %1, %a fastmath<fast> : f32
  %3 = arith.mulf %2, %a fastmath<fast> : f32
  %4 = arith.mulf %3, %a : f32
  return %4 : f32
}`)
	var ops []*ir.Operation
	m.Walk(func(o *ir.Operation) bool {
		if o.Name() == "arith.addf" || o.Name() == "arith.mulf" {
			ops = append(ops, o)
		}
		return true
	})
	if len(ops) != 5 {
		t.Fatalf("%d arith ops, want 5", len(ops))
	}
	same := func(a, b *ir.Operation) bool { return &a.Properties()[0] == &b.Properties()[0] }
	for _, tc := range []struct {
		a, b  int
		share bool
	}{{0, 1, true}, {0, 4, true}, {2, 3, true}, {0, 2, false}, {3, 4, false}} {
		if got := same(ops[tc.a], ops[tc.b]); got != tc.share {
			t.Errorf("ops %d and %d share their properties: %v, want %v", tc.a, tc.b, got, tc.share)
		}
	}
	ops[0].SetProperty("fastmath", ops[2].Attr("fastmath"))
	if got := ops[1].Attr("fastmath").String(); got != "#arith.fastmath<none>" {
		t.Errorf("after setting op 0's flag, op 1's reads %s", got)
	}
}
