package passes

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCustomPassExample builds the out-of-tree example module
// examples/custompass (its own go.mod, strata replaced by this checkout),
// runs its tests, and runs its irc with the strength-reduce pass, offline.
func TestCustomPassExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a separate module")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the go command is required under CI=true")
		}
		t.Skip("go command not found")
	}
	dir, err := filepath.Abs("../examples/custompass")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goTool, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("test", "./...")
	irc := filepath.Join(t.TempDir(), "irc")
	goCmd("build", "-o", irc, "./cmd/irc")

	var stdout, stderr bytes.Buffer
	cmd := exec.Command(irc, "testdata/mul.mlir", "--pass-pipeline=builtin.module(func.func(strength-reduce,canonicalize))")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("irc: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{`arith.shli %arg0, %\w+ : i32`, `arith.shli %arg1, %\w+ : index`, `arith.constant 3 : i32`, `arith.constant 2 : index`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("irc output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "arith.muli") != 1 {
		t.Errorf("expected only the multiplication by 6 to stay:\n%s", out)
	}

	stdout.Reset()
	cmd = exec.Command(irc, "--list-passes")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("irc --list-passes: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "strength-reduce") || !strings.Contains(stdout.String(), "min-shift=<int> (default 1)") {
		t.Errorf("--list-passes does not show strength-reduce:\n%s", stdout.String())
	}
}
