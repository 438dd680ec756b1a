// Package mlirtest helps the dialect tests use mlir-opt 19 as an oracle for
// the text format and for folding, and check verifier diagnostics.
package mlirtest

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
)

// tool is the oracle's binary name.
const tool = "mlir-opt-19"

// MLIROpt runs mlir-opt 19 with args on src and returns its output,
// ending with one newline. It skips
// the test when mlir-opt is not installed, unless CI=true, where it fails.
func MLIROpt(t testing.TB, src string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		path, err = exec.LookPath("/usr/lib/llvm-19/bin/mlir-opt")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found: it is required in CI (scripts/setup-tools.sh installs it)", tool)
		}
		t.Skipf("%s not found; skipping the oracle comparison", tool)
	}
	cmd := exec.Command(path, append(args, "-")...)
	cmd.Stdin = strings.NewReader(src)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s\ninput:\n%s", tool, args, err, errb.String(), src)
	}
	// mlir-opt ends its output with a blank line; we end with one newline.
	return strings.TrimRight(out.String(), "\n") + "\n"
}

// Parse parses src in ctx and fails the test on error.
func Parse(t testing.TB, ctx *ir.Context, src string) *ir.Operation {
	t.Helper()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "in.mlir"})
	if err != nil {
		t.Fatalf("parse: %v\ninput:\n%s", err, src)
	}
	return m
}

// CheckRoundTrip parses src (pretty or generic), verifies it, and checks
// that our generic form equals mlir-opt's generic form of src, and that our
// pretty form, read back by mlir-opt, gives that same generic form.
func CheckRoundTrip(t *testing.T, ctx *ir.Context, src string) {
	t.Helper()
	m := Parse(t, ctx, src)
	if err := ir.Verify(m); err != nil {
		t.Fatalf("verify: %v\ninput:\n%s", err, src)
	}
	flags := []string{"--mlir-print-op-generic"}
	if ctx.AllowUnregistered {
		flags = append(flags, "--allow-unregistered-dialect")
	}
	want := MLIROpt(t, src, flags...)
	if got := ir.Sprint(m, ir.PrintOptions{Generic: true}); got != want {
		t.Errorf("generic form differs from mlir-opt's\n--- ours\n%s--- mlir-opt\n%s", got, want)
	}
	pretty := ir.Sprint(m, ir.PrintOptions{})
	if got := MLIROpt(t, pretty, flags...); got != want {
		t.Errorf("mlir-opt reads our pretty form differently\n--- pretty\n%s--- its generic form\n%s--- expected\n%s", pretty, got, want)
	}
}

// VerifyError parses src in ctx, verifies it and returns the first
// diagnostic's message ("" when it verifies), failing on a parse error.
func VerifyError(t testing.TB, ctx *ir.Context, src string) string {
	t.Helper()
	m := Parse(t, ctx, src)
	ds := ir.Diagnostics(ir.Verify(m))
	if len(ds) == 0 {
		return ""
	}
	return ds[0].Message
}
