package passes

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
)

func init() {
	noop := func(name string) func(Options) (Pass, error) {
		return func(Options) (Pass, error) {
			return FuncPass{PassName: name, Fn: func(*ir.Operation, *State) error { return nil }}, nil
		}
	}
	Register(&PassInfo{Name: "test-order-first", Summary: "Runs first", Anchor: AnyOp, New: noop("test-order-first")})
	Register(&PassInfo{
		Name: "test-order-second", Summary: "Runs after test-order-first", Anchor: AnyOp,
		After: []Order{{Pass: "test-order-first", Reason: "it reads what the first makes"}},
		New:   noop("test-order-second"),
	})
	Register(&PassInfo{
		Name: "test-order-early", Summary: "Runs before test-order-first", Anchor: AnyOp,
		Before: []Order{{Pass: "test-order-first", Reason: "the first would erase what it matches"}},
		New:    noop("test-order-early"),
	})
	RegisterPipeline("test-order-pipeline", "the first pass", "test-order-first")
}

// TestPipelineOrder checks that PassInfo.After and Before are enforced when
// a pipeline is parsed, with a diagnostic at the misplaced pass that quotes
// the reason, and bind only passes that are both in the pipeline.
func TestPipelineOrder(t *testing.T) {
	for _, ok := range []string{
		"builtin.module(test-order-first,test-order-second)",
		"builtin.module(test-order-second)",
		"builtin.module(test-order-early,test-order-first,test-order-second)",
		"builtin.module(test-order-early,test-order-pipeline,test-order-second)",
		"builtin.module(test-order-first,any(test-order-second))",
	} {
		if _, err := ParsePipeline(ok); err != nil {
			t.Errorf("ParsePipeline(%q): %v", ok, err)
		}
	}
	for _, c := range []struct{ text, want string }{
		{"builtin.module(test-order-second,test-order-first)",
			"pass pipeline:1:34: error: pass 'test-order-first' must run before 'test-order-second' (it reads what the first makes), but comes after it"},
		{"builtin.module(test-order-first,test-order-early)",
			"pass pipeline:1:33: error: pass 'test-order-early' must run before 'test-order-first' (the first would erase what it matches), but comes after it"},
		{"builtin.module(any(test-order-second),test-order-pipeline)",
			"pass pipeline:1:39: error: pass 'test-order-first' must run before 'test-order-second'"},
	} {
		_, err := ParsePipeline(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParsePipeline(%q) = %v, want %q", c.text, err, c.want)
		}
	}
}
