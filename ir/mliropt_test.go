package ir_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strata-ir/strata/ir"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestGolden")

// mlirOpt returns the path of mlir-opt 19, looking in $STRATA_LLVM_BIN, the
// Debian/Ubuntu install directory and PATH. Without it the test is skipped,
// except under CI=true, where a missing oracle is a failure.
func mlirOpt(t testing.TB) string {
	t.Helper()
	var candidates []string
	if dir := os.Getenv("STRATA_LLVM_BIN"); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "mlir-opt"), filepath.Join(dir, "mlir-opt-19"))
	}
	candidates = append(candidates, "/usr/lib/llvm-19/bin/mlir-opt")
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	for _, name := range []string{"mlir-opt-19", "mlir-opt"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("mlir-opt 19 not found ($STRATA_LLVM_BIN, /usr/lib/llvm-19/bin, PATH) and CI=true")
	}
	t.Skip("mlir-opt 19 not found; set STRATA_LLVM_BIN")
	return ""
}

// runMLIROpt prints src in generic form with mlir-opt.
func runMLIROpt(t *testing.T, bin, src string, debugInfo bool) string {
	t.Helper()
	args := []string{"--allow-unregistered-dialect", "--mlir-print-op-generic"}
	if debugInfo {
		args = append(args, "--mlir-print-debuginfo")
	}
	args = append(args, "-")
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(src)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mlir-opt %s: %v\n%s\ninput:\n%s", strings.Join(args, " "), err, stderr.String(), src)
	}
	return stdout.String()
}

func newUnregisteredContext() *ir.Context {
	ctx := ir.NewContext()
	ctx.AllowUnregistered = true
	return ctx
}

// TestMLIROptCompat checks that what mlir-opt prints in generic form, parsed
// and printed by Strata, is read back by mlir-opt into the very same text.
func TestMLIROptCompat(t *testing.T) {
	bin := mlirOpt(t)
	files, err := filepath.Glob("testdata/compat/*.mlir")
	if err != nil || len(files) == 0 {
		t.Fatalf("no compat corpus: %v", err)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, debugInfo := range []bool{false, true} {
			name := filepath.Base(file)
			if debugInfo {
				name += "/debuginfo"
			}
			t.Run(name, func(t *testing.T) {
				want := runMLIROpt(t, bin, string(src), debugInfo)
				m, err := ir.Parse(newUnregisteredContext(), want, ir.ParseOptions{Filename: file})
				if err != nil {
					t.Fatalf("parse mlir-opt output: %v\n%s", err, want)
				}
				ours := ir.Sprint(m, ir.PrintOptions{Generic: true, DebugInfo: debugInfo})
				got := runMLIROpt(t, bin, ours, debugInfo)
				if got != want {
					t.Errorf("mlir-opt output differs after a Strata round trip\n%s\nour print:\n%s", lineDiff(want, got), ours)
				}
			})
		}
	}
}

// TestGolden compares our generic print of testdata/golden/*.mlir with the
// checked-in .golden files; -update rewrites them.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.mlir")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			m, err := ir.Parse(newUnregisteredContext(), string(src), ir.ParseOptions{Filename: file})
			if err != nil {
				t.Fatal(err)
			}
			got := ir.Sprint(m, ir.PrintOptions{Generic: true})
			golden := strings.TrimSuffix(file, ".mlir") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./ir -run Golden -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n%s", file, golden, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff shows how got differs from want, line by line (-want +got).
func lineDiff(want, got string) string {
	if diff := cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")); diff != "" {
		return "(-want +got):\n" + diff
	}
	return "(no line differs)"
}
