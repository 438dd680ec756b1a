package loop_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// TestKnownMultiple checks each rule of loop.KnownMultiple on the results
// of a function's non-constant arith ops, in order.
func TestKnownMultiple(t *testing.T) {
	const src = `func.func @f(%a: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c12 = arith.constant 12 : index
  %c48 = arith.constant 48 : index
  %m = arith.muli %a, %c8 : index
  %s = arith.addi %m, %c12 : index
  %r = arith.remui %m, %c48 : index
  %l = arith.shli %s, %c3 : index
  %z = arith.muli %a, %c0 : index
  %u = arith.addi %a, %c8 : index
  "loop.for"(%c12, %n, %c8) ({
  ^bb0(%i: index):
    %x = arith.muli %i, %c3 : index
    loop.yield
  }) : (index, index, index) -> ()
  return
}
`
	// m = 8a, s = 8a + 12, r = 8a mod 48, l = s << 3, z = 0, u = a + 8,
	// x = 3i with i in 12, 20, 28, …
	want := []int64{8, 4, 8, 32, 0, 1, 12}
	m, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{Filename: "multiple.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	m.Walk(func(op *ir.Operation) bool {
		if strings.HasPrefix(op.Name(), "arith.") && op.Name() != arith.OpConstant {
			got = append(got, loop.KnownMultiple(op.Result(0)))
		}
		return true
	})
	if len(got) != len(want) {
		t.Fatalf("%d arith results, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d: KnownMultiple = %d, want %d", i, got[i], want[i])
		}
	}
}
