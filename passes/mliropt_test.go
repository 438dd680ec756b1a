package passes

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/strata-ir/strata/ir"
)

// mlirOpt returns the path of mlir-opt 19, skipping the test when it is
// missing (failing instead under CI=true).
func mlirOpt(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"mlir-opt-19", "/usr/lib/llvm-19/bin/mlir-opt"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("mlir-opt 19 is required under CI=true")
	}
	t.Skip("mlir-opt 19 not found")
	return ""
}

func runMlirOpt(t *testing.T, tool string, input []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(tool, args...)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mlir-opt %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

func countOps(m *ir.Operation) int {
	n := 0
	m.Walk(func(*ir.Operation) bool { n++; return true })
	return n
}

// TestAgainstMlirOpt runs the cleanup pipeline with our passes and
// with mlir-opt's on each testdata program: ours must leave no more ops,
// and mlir-opt must accept what we print.
func TestAgainstMlirOpt(t *testing.T) {
	tool := mlirOpt(t)
	files, err := filepath.Glob("testdata/*.mlir")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	const pipeline = "builtin.module(func.func(canonicalize{max-iterations=10},cse),symbol-dce)"
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			theirs := runMlirOpt(t, tool, src, "--pass-pipeline="+pipeline)
			ctx := realContext()
			ref, err := ir.Parse(ctx, string(theirs), ir.ParseOptions{Filename: "mlir-opt output"})
			if err != nil {
				t.Fatalf("parsing mlir-opt's output: %v\n%s", err, theirs)
			}
			m := mustParse(t, ctx, string(src))
			pm, err := Parse(pipeline)
			if err != nil {
				t.Fatal(err)
			}
			if err := pm.Run(ctx, m); err != nil {
				t.Fatal(err)
			}
			ours := ir.Sprint(m, ir.PrintOptions{})
			if got, want := countOps(m), countOps(ref); got > want {
				t.Errorf("we leave %d ops, mlir-opt %d\nours:\n%s\nmlir-opt:\n%s", got, want, ours, theirs)
			}
			runMlirOpt(t, tool, []byte(ours), "--verify-each")
		})
	}
}
