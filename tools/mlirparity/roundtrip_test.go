package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mlirOptPath finds mlir-opt 19, skipping the test when it is not
// installed (failing instead under CI=true).
func mlirOptPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"mlir-opt-19", "/usr/lib/llvm-19/bin/mlir-opt"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("mlir-opt 19 not found: it is required in CI")
	}
	t.Skip("mlir-opt 19 not found")
	return ""
}

// fakeIRC writes a shell script standing for irc: it is called as
// "FLAGS... --print-op-generic SRC -o OUT" and runs body with $src and
// $out set.
func fakeIRC(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	script := "#!/bin/sh\nwhile [ $# -gt 2 ]; do src=$1; shift; done\nout=$2\n" + body + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMeasureRoundTrip runs the round trip with mlir-opt 19 and stand-ins
// for irc that keep the text, change a value, reject the chunk or print
// what mlir-opt cannot read. Of the file's chunks one counts: one mlir-opt
// rejects, one uses a dialect irc lacks, one holds an expected-error and
// one only comments.
func TestMeasureRoundTrip(t *testing.T) {
	mlirOpt := mlirOptPath(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "ops.mlir")
	text := strings.Join([]string{
		"// RUN: mlir-opt %s -split-input-file -allow-unregistered-dialect",
		"",
		"func.func @f(%a: i32) -> i32 {",
		"  %c = arith.constant 42 : i32",
		"  %s = arith.addi %a, %c : i32",
		"  \"foo.bar\"(%s) {k = 7 : i64} : (i32) -> ()",
		"  return %s : i32",
		"}",
		"// -----",
		"func.func @g( {",
		"// -----",
		"func.func @h() {",
		"  cf.br ^bb1",
		"^bb1:",
		"  return",
		"}",
		"// -----",
		"// expected-error @below {{whatever}}",
		"func.func @e()",
		"// -----",
		"// CHECK-LABEL: only comments",
		"",
	}, "\n")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "invalid.mlir"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := inputFiles([]string{dir}, isRoundTripFile)
	if err != nil || len(files) != 1 || files[0] != file {
		t.Fatalf("inputFiles = %v, %v; want only %s", files, err, file)
	}
	for _, tc := range []struct {
		name, body string
		passed     int
		why        string // the start of the failing chunk's description
	}{
		{"keeps", `cp "$src" "$out"`, 1, ""},
		{"changes", `sed 's/42 : i32/43 : i32/' "$src" > "$out"`, 0, stepDiffers + `: line 4 of the generic print is "%0 = \"arith.constant\"() <{value = 42 : i32}> : () -> i32" from the chunk, "%0 = \"arith.constant\"() <{value = 43 : i32}> : () -> i32" from irc's output`},
		{"drops", `grep -v foo.bar "$src" > "$out"`, 0, stepDiffers + ": line 6"},
		{"rejects", `echo "$src:3:1: error: no" >&2; exit 1`, 0, stepIRC + ": " + file + ":3:1: error: no"},
		{"garbles", `echo 'func.func @f(' > "$out"`, 0, stepReparse + ": (irc's output):1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config{mlirOpt: mlirOpt, irc: fakeIRC(t, t.TempDir(), "irc", tc.body), jobs: 2, roundTrip: true, foreign: map[string]bool{"cf": true}}
			rep, err := measureRoundTrip(cfg, files, runTool)
			if err != nil {
				t.Fatal(err)
			}
			f := rep.files[0]
			if f.chunks != 3 || f.reference != 1 || f.outside != 1 || f.passed != tc.passed {
				t.Errorf("chunks, reference, outside, passed = %d, %d, %d, %d; want 3, 1, 1, %d", f.chunks, f.reference, f.outside, f.passed, tc.passed)
			}
			var out strings.Builder
			rep.write(&out, cfg)
			if tc.why == "" {
				if strings.Contains(out.String(), "FAIL") {
					t.Errorf("a failure in the report:\n%s", out.String())
				}
				return
			}
			if want := "FAIL ops.mlir:1: " + tc.why; !strings.Contains(out.String(), want) {
				t.Errorf("report lacks %q:\n%s", want, out.String())
			}
		})
	}
}

func TestFirstDifference(t *testing.T) {
	for _, tc := range []struct{ want, got, diff string }{
		{"a\nb\n", "a\nb\n\n", ""},
		{"a\nb\n", "a\nc\n", `line 2 of the generic print is "b" from the chunk, "c" from irc's output`},
		{"a\nb\n", "a\n", `line 2 of the generic print is "b" from the chunk, "" from irc's output`},
	} {
		if got := firstDifference(tc.want, tc.got); got != tc.diff {
			t.Errorf("firstDifference(%q, %q) = %q, want %q", tc.want, tc.got, got, tc.diff)
		}
	}
}

// TestPercentOfNothing: a run that measured no chunk is 0%, so that a
// -min gate fails on it instead of passing.
func TestPercentOfNothing(t *testing.T) {
	if p := (&report{files: []fileResult{{name: "x.mlir", chunks: 3}}}).percent(); p != 0 {
		t.Errorf("percent of no chunks mlir-opt accepts = %v, want 0", p)
	}
}
