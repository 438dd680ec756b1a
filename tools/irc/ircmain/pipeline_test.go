package ircmain

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// failPass fails on every function whose name starts with "bad", after
// renaming its ops, so tests can see that half-rewritten IR is never
// printed as a result.
func init() {
	passes.Register(&passes.PassInfo{
		Name:    "ircmain-test-fail",
		Summary: "Fails on functions named bad*, for irc's tests",
		Anchor:  "func.func",
		New: func(passes.Options) (passes.Pass, error) {
			return passes.FuncPass{PassName: "ircmain-test-fail", Fn: func(op *ir.Operation, _ *passes.State) error {
				if !strings.HasPrefix(ir.SymbolName(op), "bad") {
					return nil
				}
				op.SetAttr("test.half_rewritten", ir.UnitAttr{})
				return ir.Errorf(op.Loc(), "ircmain-test-fail: refusing @%s", ir.SymbolName(op))
			}}, nil
		},
	})
}

const twoFuncs = `func.func @good(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  return %2 : i32
}
func.func @bad() {
  return
}
`

func TestPipeline(t *testing.T) {
	r := irc(t, twoFuncs, "--pass-pipeline=builtin.module(func.func(cse))")
	if r.status != ExitOK || strings.Count(r.stdout, "arith.addi") != 1 {
		t.Errorf("cse: status %d, stdout:\n%s\nstderr:\n%s", r.status, r.stdout, r.stderr)
	}
	// Flags after the file, and the anchor left out.
	r2 := irc(t, twoFuncs, "-", "--pass-pipeline", "func.func(cse)")
	if r2.status != ExitOK || r2.stdout != r.stdout {
		t.Errorf("flags after the file: status %d, stdout:\n%s", r2.status, r2.stdout)
	}
}

func TestBadPipelines(t *testing.T) {
	tests := []struct{ pipeline, want string }{
		{"builtin.module(nope)", "'nope' does not refer to a registered pass"},
		{"builtin.module(func.func(cse)", "builtin.module(func.func(cse)"},
		{"builtin.module(canonicalize{max-iterations=x})", "max-iterations"},
		{"builtin.module(canonicalize{bogus=1})", "bogus"},
	}
	for _, tc := range tests {
		r := irc(t, twoFuncs, "--pass-pipeline="+tc.pipeline)
		if r.status != ExitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%s: status %d, stdout %q, stderr %q, want it to contain %q", tc.pipeline, r.status, r.stdout, r.stderr, tc.want)
		}
	}
}

func TestFailingPassPrintsNoIR(t *testing.T) {
	r := irc(t, twoFuncs, "--pass-pipeline=builtin.module(func.func(ircmain-test-fail))")
	if r.status != ExitDiagnostics {
		t.Errorf("status %d, want %d", r.status, ExitDiagnostics)
	}
	if r.stdout != "" {
		t.Errorf("printed IR after a failure:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "<stdin>:7:1: error: ircmain-test-fail: refusing @bad") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	// --print-ir-after-failure shows the op the pass left behind.
	r = irc(t, twoFuncs, "--pass-pipeline=builtin.module(func.func(ircmain-test-fail))", "--print-ir-after-failure")
	if !strings.Contains(r.stderr, "test.half_rewritten") {
		t.Errorf("--print-ir-after-failure:\n%s", r.stderr)
	}
	// Under --verify-diagnostics, an expected pass failure passes.
	src := strings.Replace(twoFuncs, "func.func @bad", "// expected-error@+1 {{refusing @bad}}\nfunc.func @bad", 1)
	r = irc(t, src, "--verify-diagnostics", "--pass-pipeline=builtin.module(func.func(ircmain-test-fail))")
	if r.status != ExitOK {
		t.Errorf("--verify-diagnostics: status %d, stderr:\n%s", r.status, r.stderr)
	}
}

func TestReproducer(t *testing.T) {
	dir := t.TempDir()
	repro := filepath.Join(dir, "repro.mlir")
	r := irc(t, twoFuncs, "--pass-pipeline=builtin.module(func.func(cse,ircmain-test-fail))", "--reproducer", repro)
	if r.status != ExitDiagnostics {
		t.Fatalf("status %d, stderr:\n%s", r.status, r.stderr)
	}
	b, err := os.ReadFile(repro)
	if err != nil {
		t.Fatalf("no reproducer: %v", err)
	}
	text := string(b)
	// The reproducer holds the IR from before the pipeline, not the
	// half-rewritten one, and the pipeline.
	if strings.Count(text, "arith.addi") != 2 || strings.Contains(text, "half_rewritten") ||
		!strings.Contains(text, "ircmain-test-fail") || !strings.Contains(text, "mlir_reproducer") {
		t.Errorf("reproducer:\n%s", text)
	}
	r = irc(t, "", repro, "--run-reproducer")
	if r.status != ExitDiagnostics || !strings.Contains(r.stderr, "refusing @bad") {
		t.Errorf("--run-reproducer: status %d, stderr:\n%s", r.status, r.stderr)
	}
	if r := irc(t, "", repro, "--run-reproducer", "--pass-pipeline=cse"); r.status != ExitUsage {
		t.Errorf("--run-reproducer with --pass-pipeline: status %d", r.status)
	}
	// A file that is not a reproducer is a usage error.
	plain := writeFile(t, "plain.mlir", twoFuncs)
	if r := irc(t, "", plain, "--run-reproducer"); r.status != ExitUsage || !strings.Contains(r.stderr, "mlir_reproducer") {
		t.Errorf("plain file: status %d, stderr %q", r.status, r.stderr)
	}
	// No reproducer is written when all goes well.
	ok := filepath.Join(dir, "ok.mlir")
	if r := irc(t, twoFuncs, "--pass-pipeline=func.func(cse)", "--reproducer", ok); r.status != ExitOK {
		t.Errorf("status %d", r.status)
	}
	if _, err := os.Stat(ok); err == nil {
		t.Errorf("a reproducer was written for a pipeline that succeeded")
	}
}

func TestInstrumentationGoesToStderr(t *testing.T) {
	plain := irc(t, twoFuncs, "--pass-pipeline=func.func(cse)")
	trace := filepath.Join(t.TempDir(), "trace.json")
	r := irc(t, twoFuncs, "--pass-pipeline=func.func(cse)", "--timing", "--print-ir-after-all",
		"--print-ir-before-all", "--pass-statistics", "--trace", trace, "--debug-rewrites", "--verify-each=false")
	if r.status != ExitOK || r.stdout != plain.stdout {
		t.Errorf("status %d; stdout differs from the uninstrumented run:\n%s", r.status, r.stdout)
	}
	for _, want := range []string{"Execution time report", "IR Dump Before", "IR Dump After", "Pass statistics report"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if b, err := os.ReadFile(trace); err != nil || !strings.Contains(string(b), "traceEvents") {
		t.Errorf("trace file: %v\n%s", err, b)
	}
	// --timing works without a pipeline too.
	if r := irc(t, twoFuncs, "--timing"); !strings.Contains(r.stderr, "Total Execution Time") {
		t.Errorf("--timing without a pipeline:\n%s", r.stderr)
	}
}

func TestListPasses(t *testing.T) {
	r := irc(t, "", "--list-passes")
	for _, want := range []string{"canonicalize", "max-iterations", "cse", "dce", "symbol-dce", "inline", "ircmain-test-fail"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--list-passes lacks %q:\n%s", want, r.stdout)
		}
	}
}
