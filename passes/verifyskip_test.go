package passes

import (
	"testing"

	"github.com/strata-ir/strata/ir"
)

func init() {
	// test-break-unchanged breaks the IR as test-break does but reports no
	// change: a pass that lies, to observe that VerifyEach trusts it.
	Register(&PassInfo{
		Name: "test-break-unchanged", Summary: "Breaks the IR and reports no change", Anchor: AnyOp,
		New: func(Options) (Pass, error) {
			return FuncPass{PassName: "test-break-unchanged", Fn: func(op *ir.Operation, st *State) error {
				b := ir.NewBuilder(st.Ctx)
				b.SetInsertionPointToStart(op.Region(0).Front())
				b.Op("test.invalid", op.Loc(), nil, nil)
				st.MarkUnchanged()
				return nil
			}}, nil
		},
	})
}

// TestVerifyEachSkipsUnchanged checks that VerifyEach does not verify after
// a pass that reported no change (State.MarkUnchanged), and still does after
// the next pass that changes something.
func TestVerifyEachSkipsUnchanged(t *testing.T) {
	if _, err := run(t, "test.func(test-break-unchanged)", testFunc("a", 1), Instrumentation{VerifyEach: true}, true); err != nil {
		t.Errorf("after a pass that reported no change, the verifier ran: %v", err)
	}
	_, err := run(t, "test.func(test-break-unchanged,test-tag)", testFunc("a", 1), Instrumentation{VerifyEach: true}, true)
	if err == nil {
		t.Error("the pass after it changed the IR, but the verifier did not run")
	}
}
