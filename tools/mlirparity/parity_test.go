package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSplitChunks(t *testing.T) {
	text := "a\nb\n// -----\nc\n  // -----  \nd\n"
	got := splitChunks(text)
	want := []chunk{{line: 1, text: "a\nb\n"}, {line: 4, text: "c\n"}, {line: 6, text: "d\n"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("splitChunks = %#v, want %#v", got, want)
	}
}

func TestForeignDialect(t *testing.T) {
	foreign := map[string]bool{"cf": true, "test": true, "affine": true}
	for _, tc := range []struct {
		text       string
		unreg      bool
		wantResult string
	}{
		{"  cf.br ^bb1\n", true, "cf"},
		{"  %x:2 = affine.for %i = 0 to 4 {\n", false, "affine"},
		{"  \"test.op\"() : () -> ()\n", false, "test"},
		{"  \"test.op\"() : () -> ()\n", true, ""}, // parsed as an unregistered op
		{"  %0 = arith.addi %a, %b : i32 // cf.br in a comment\n", false, ""},
		{"#map = affine_map<(d0) -> (d0)>\n", false, ""},
		{"  \"foo.bar\"() : () -> ()\n", false, ""},
	} {
		if got := foreignDialect(tc.text, foreign, tc.unreg); got != tc.wantResult {
			t.Errorf("foreignDialect(%q, %v) = %q, want %q", tc.text, tc.unreg, got, tc.wantResult)
		}
	}
}

func TestRunFlags(t *testing.T) {
	if got := runFlags("// RUN: mlir-opt -allow-unregistered-dialect %s -split-input-file\n"); len(got) != 1 {
		t.Errorf("runFlags with -allow-unregistered-dialect = %v", got)
	}
	if got := runFlags("// RUN: mlir-opt %s\n// allow-unregistered-dialect is not on a RUN line\n"); got != nil {
		t.Errorf("runFlags without the flag = %v", got)
	}
}

// TestMeasure runs the measurement with a fake pair of tools: "mlir-opt"
// passes the chunks holding "ref", irc those holding "ours"; chunks
// without expected-error and chunks of foreign dialects are not counted.
func TestMeasure(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "invalid-x.mlir")
	text := strings.Join([]string{
		"// RUN: mlir-opt %s -split-input-file -verify-diagnostics",
		"// expected-error {{a}} ref ours",
		"// -----",
		"// expected-error {{b}} ref",
		"// -----",
		"// expected-error {{c}}",
		"// -----",
		"no expectation, ref ours",
		"// -----",
		"  cf.br ^bb1 // expected-error {{d}} ref",
		"",
	}, "\n")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var lines []string
	fake := func(tool string, args []string) (bool, string, error) {
		b, err := os.ReadFile(args[len(args)-3])
		if err != nil {
			return false, "", err
		}
		chunk := string(b)
		if tool == "ref" {
			return strings.Contains(chunk, "ref"), "", nil
		}
		lines = append(lines, strings.TrimLeft(chunk, "\n"))
		return strings.Contains(chunk, "ours"), "error: mismatch\n", nil
	}
	files, err := inputFiles([]string{dir}, isDiagnosticsFile)
	if err != nil || len(files) != 1 {
		t.Fatalf("inputFiles = %v, %v", files, err)
	}
	rep, err := measure(config{mlirOpt: "ref", irc: "ours", jobs: 1, foreign: map[string]bool{"cf": true}}, files, fake)
	if err != nil {
		t.Fatal(err)
	}
	f := rep.files[0]
	if f.chunks != 4 || f.reference != 2 || f.passed != 1 || f.outside != 1 {
		t.Errorf("chunks, reference, passed, outside = %d, %d, %d, %d; want 4, 2, 1, 1", f.chunks, f.reference, f.passed, f.outside)
	}
	if len(lines) != 2 {
		t.Errorf("irc ran on %d chunks, want the 2 mlir-opt passed in scope: %q", len(lines), lines)
	}
	if rep.percent() != 50 {
		t.Errorf("percent = %v, want 50", rep.percent())
	}
	var out strings.Builder
	rep.write(&out, config{})
	if !strings.Contains(out.String(), "FAIL invalid-x.mlir:4: error: mismatch") {
		t.Errorf("report lacks the failing chunk:\n%s", out.String())
	}
}
