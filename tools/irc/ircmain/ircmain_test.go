package ircmain

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/builtin"
	"github.com/strata-ir/strata/ir"
)

// testDialect has an op that the verifier rejects, one that warns, and one
// whose verifier panics, so the tests need no real dialect.
var testDialect = &ir.Dialect{
	Name: "test",
	Ops: []*ir.OpDef{
		{Name: "test.ok"},
		{Name: "test.bad", Verify: func(*ir.Operation) error {
			return errors.New("is always wrong")
		}},
		{Name: "test.noted", Verify: func(op *ir.Operation) error {
			return ir.Errorf(op.Loc(), "'test.noted' op has a note").Note(op.Loc(), "see here")
		}},
		{Name: "test.panic", Verify: func(*ir.Operation) error {
			panic("verifier bug")
		}},
	},
}

// result is what one Main call produced.
type result struct {
	status         int
	stdout, stderr string
}

// irc runs Main in-process with the test dialect loaded.
func irc(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	status := Main(args, strings.NewReader(stdin), &out, &errOut, WithDialects(builtin.Dialect, testDialect))
	if status == ExitInternal {
		t.Errorf("irc %q: internal error:\n%s", args, errOut.String())
	}
	return result{status, out.String(), errOut.String()}
}

// writeFile writes text to a file in a fresh temporary directory.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const twoOps = `"test.ok"() : () -> ()
"test.ok"() {a = 1 : i32} : () -> ()
`

func TestPrintsModuleWithTrailingBlankLine(t *testing.T) {
	r := irc(t, twoOps)
	if r.status != ExitOK {
		t.Fatalf("status %d, stderr:\n%s", r.status, r.stderr)
	}
	want := "module {\n  \"test.ok\"() : () -> ()\n  \"test.ok\"() {a = 1 : i32} : () -> ()\n}\n\n"
	if r.stdout != want {
		t.Errorf("stdout =\n%q\nwant\n%q", r.stdout, want)
	}
}

func TestFlagsBeforeOrAfterFile(t *testing.T) {
	path := writeFile(t, "in.mlir", twoOps)
	orders := [][]string{
		{"--print-op-generic", "--print-debuginfo", path},
		{path, "--print-op-generic", "--print-debuginfo"},
		{"--print-op-generic", path, "-print-debuginfo"},
	}
	var first string
	for i, args := range orders {
		r := irc(t, "", args...)
		if r.status != ExitOK {
			t.Fatalf("irc %q: status %d, stderr:\n%s", args, r.status, r.stderr)
		}
		if !strings.Contains(r.stdout, `"builtin.module"() ({`) || !strings.Contains(r.stdout, "loc(") {
			t.Errorf("irc %q did not print generic form with locations:\n%s", args, r.stdout)
		}
		if i == 0 {
			first = r.stdout
		} else if r.stdout != first {
			t.Errorf("irc %q printed\n%s\nbut irc %q printed\n%s", args, r.stdout, orders[0], first)
		}
	}
}

func TestInputAndOutputFiles(t *testing.T) {
	in := writeFile(t, "in.mlir", twoOps)
	out := filepath.Join(t.TempDir(), "out.mlir")
	r := irc(t, "", in, "-o", out)
	if r.status != ExitOK || r.stdout != "" {
		t.Fatalf("status %d, stdout %q, stderr:\n%s", r.status, r.stdout, r.stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if fromStdin := irc(t, twoOps, "-"); string(got) != fromStdin.stdout {
		t.Errorf("-o wrote\n%s\nbut reading stdin printed\n%s", got, fromStdin.stdout)
	}
	// A failure leaves no output file.
	failed := filepath.Join(t.TempDir(), "failed.mlir")
	if r := irc(t, "\"test.bad\"() : () -> ()\n", "-o", failed); r.status != ExitDiagnostics {
		t.Errorf("status %d, want %d", r.status, ExitDiagnostics)
	}
	if _, err := os.Stat(failed); err == nil {
		t.Errorf("-o file written although the input was rejected")
	}
}

func TestUsageErrors(t *testing.T) {
	in := writeFile(t, "in.mlir", twoOps)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"missing file", []string{"/nonexistent/x.mlir"}, "/nonexistent/x.mlir"},
		{"unknown flag", []string{in, "--frobnicate"}, "-frobnicate"},
		{"unknown flag first", []string{"--no-such-flag=3", in}, "-no-such-flag"},
		{"two inputs", []string{in, in}, "expected one input file, got 2"},
		{"bad flag value", []string{in, "--verify-each=maybe"}, "verify-each"},
		{"ptx backend", []string{in, "--emit=ptx", "--ptx-backend=nvcc"}, `unknown PTX backend "nvcc"`},
		{"ptx target", []string{"--emit=ptx", "--ptx-target=sm_70", in}, `unknown --ptx-target "sm_70"`},
		{"emit unknown", []string{in, "--emit=wasm"}, `unknown --emit kind "wasm"`},
		{"version args", []string{"version", "x"}, "version takes no arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := irc(t, "", tc.args...)
			if r.status != ExitUsage {
				t.Errorf("status %d, want %d (usage)", r.status, ExitUsage)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr %q does not mention %q", r.stderr, tc.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	r := irc(t, "", "--help")
	if r.status != ExitOK || !strings.Contains(r.stdout, "-split-input-file") {
		t.Errorf("--help: status %d, stdout:\n%s", r.status, r.stdout)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := irc(t, "", args...)
		if r.status != ExitOK || !strings.HasPrefix(r.stdout, "irc version ") {
			t.Errorf("%q: status %d, stdout %q", args, r.status, r.stdout)
		}
	}
	var out bytes.Buffer
	Main([]string{"version"}, nil, &out, &out, WithName("myirc"), WithVersion("v1.2.3"))
	if !strings.HasPrefix(out.String(), "myirc version v1.2.3") {
		t.Errorf("WithName/WithVersion: got %q", out.String())
	}
}

func TestDiagnosticsExitOne(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"parse error", "\"test.ok\"(", []string{"<stdin>:1:"}},
		{"verifier error", "\"test.ok\"() : () -> ()\n\"test.bad\"() : () -> ()\n",
			[]string{"<stdin>:2:1: error: 'test.bad' op is always wrong", `"test.bad"() : () -> ()`, "^"}},
		{"note", "\"test.noted\"() : () -> ()\n",
			[]string{"<stdin>:1:1: error: 'test.noted' op has a note", "<stdin>:1:1: note: see here"}},
		{"unregistered", "\"foo.bar\"() : () -> ()\n", []string{"<stdin>:1:1: error:", "foo.bar"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := irc(t, tc.src)
			if r.status != ExitDiagnostics {
				t.Errorf("status %d, want %d", r.status, ExitDiagnostics)
			}
			if r.stdout != "" {
				t.Errorf("printed IR after an error:\n%s", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, r.stderr)
				}
			}
		})
	}
	if r := irc(t, "\"foo.bar\"() : () -> ()\n", "--allow-unregistered-dialect"); r.status != ExitOK {
		t.Errorf("--allow-unregistered-dialect: status %d, stderr:\n%s", r.status, r.stderr)
	}
}

func TestSplitInputFile(t *testing.T) {
	src := `"test.ok"() {n = 1 : i32} : () -> ()
// -----
"test.ok"() {n = 2 : i32} : () -> ()

// -----
"test.ok"() : () -> ()
"test.bad"() : () -> ()
`
	r := irc(t, src, "--split-input-file")
	if r.status != ExitDiagnostics {
		t.Errorf("status %d, want 1 (the third chunk is wrong)", r.status)
	}
	if want := "<stdin>:7:1: error: 'test.bad' op is always wrong"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not name line 7 of the whole file:\n%s", r.stderr)
	}
	want := "module {\n  \"test.ok\"() {n = 1 : i32} : () -> ()\n}\n\n" +
		"// -----\nmodule {\n  \"test.ok\"() {n = 2 : i32} : () -> ()\n}\n\n" +
		"// -----\n"
	if r.stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
	}
	// Without the flag, the markers are comments and the file is one module.
	if r := irc(t, src); !strings.Contains(r.stderr, "<stdin>:7:1:") || strings.Count(r.stdout, "module") != 0 {
		t.Errorf("without --split-input-file: status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.stdout, r.stderr)
	}
}

func TestSplitInput(t *testing.T) {
	chunks := splitInput("a\n// -----\nb\nc\n  // ----- x\n", true)
	want := []chunk{{"a\n", 0, 0}, {"b\nc\n", 11, 2}, {"", 28, 5}}
	if len(chunks) != len(want) {
		t.Fatalf("got %d chunks %+v, want %+v", len(chunks), chunks, want)
	}
	for i := range want {
		if chunks[i] != want[i] {
			t.Errorf("chunk %d = %+v, want %+v", i, chunks[i], want[i])
		}
	}
	if got := splitInput("a\n// -----\n", false); len(got) != 1 || got[0].text != "a\n// -----\n" {
		t.Errorf("no split: got %+v", got)
	}
}

func TestVerifyDiagnosticsPasses(t *testing.T) {
	src := `"test.ok"() : () -> ()
"test.bad"() : () -> () // expected-error {{always wrong}}
// expected-error@+1 {{'test.bad' op is always wrong}}
"test.bad"() : () -> ()
"test.bad"() : () -> ()
// expected-error@above {{always}}
// expected-error@below {{has a note}}
// expected-note@below {{see here}}
"test.noted"() : () -> ()
"test.bad"() : () -> ()
// expected-error@-1 {{always}}
// expected-error-re@+1 {{'test.{{[a-z]+}}' op is {{.*}} wrong}}
"test.bad"() : () -> ()
// -----
// expected-error@+1 {{expected}}
"test.ok"() : (i32 -> ()
`
	r := irc(t, src, "--split-input-file", "--verify-diagnostics")
	if r.status != ExitOK {
		t.Fatalf("status %d, stderr:\n%s", r.status, r.stderr)
	}
	if r.stderr != "" {
		t.Errorf("stderr not empty:\n%s", r.stderr)
	}
	// The first chunk failed verification, so no IR is printed for it; the
	// second failed to parse.
	if r.stdout != "// -----\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	// A chunk without errors is printed.
	if r := irc(t, twoOps, "--verify-diagnostics"); r.status != ExitOK || !strings.Contains(r.stdout, "module {") {
		t.Errorf("clean input: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
}

func TestVerifyDiagnosticsFails(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"not produced", "\"test.ok\"() : () -> () // expected-error {{boom}}\n",
			[]string{`<stdin>:1:27: error: expected error "boom" was not produced`}},
		{"unexpected", "\"test.bad\"() : () -> ()\n",
			[]string{"<stdin>:1:1: error: unexpected error: 'test.bad' op is always wrong"}},
		{"wrong line", "// expected-error@+2 {{always wrong}}\n\"test.bad\"() : () -> ()\n\n",
			[]string{"<stdin>:2:1: error: unexpected error:", `<stdin>:1:4: error: expected error "always wrong" was not produced`}},
		{"wrong message", "\"test.bad\"() : () -> () // expected-error {{sometimes wrong}}\n",
			[]string{"unexpected error: 'test.bad' op is always wrong", `expected error "sometimes wrong" was not produced`}},
		{"wrong kind", "\"test.bad\"() : () -> () // expected-warning {{always wrong}}\n",
			[]string{"'error' diagnostic emitted when expecting a 'warning'", `expected warning "always wrong" was not produced`}},
		{"unexpected note", "\"test.noted\"() : () -> () // expected-error {{has a note}}\n",
			[]string{"<stdin>:1:1: error: unexpected note: see here"}},
		{"malformed", "\"test.ok\"() : () -> ()\n// expected-error oops\n",
			[]string{"<stdin>:2:4: error: malformed expectation"}},
		{"bad regexp", "\"test.bad\"() : () -> () // expected-error-re {{{{(}}}}\n",
			[]string{"invalid regular expression"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := irc(t, tc.src, "--verify-diagnostics")
			if r.status != ExitDiagnostics {
				t.Errorf("status %d, want %d", r.status, ExitDiagnostics)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

func TestVerifyDiagnosticsUnknownLocation(t *testing.T) {
	src := "\"test.bad\"() : () -> () loc(unknown)\n// expected-error@unknown {{always wrong}}\n"
	if r := irc(t, src, "--verify-diagnostics"); r.status != ExitOK {
		t.Errorf("status %d, stderr:\n%s", r.status, r.stderr)
	}
}

func TestNoPanicOnGarbage(t *testing.T) {
	inputs := []string{
		"", "\x00\xff\xfe", "}}}}", "((((", "%0 = ", "\"test.ok\"() ({", "module {",
		"func.func @f(", "// -----", "^bb0:", "#a = ", "!t = ", "{-#", "\"a\"() <{",
		strings.Repeat("[", 10000), strings.Repeat("\"test.ok\"() ({\n", 3000),
		"\"test.ok\"() {a = dense<[1, 2]> : tensor<3xi32>} : () -> ()",
		"\"test.ok\"() {a = 300 : i8} : () -> ()", "\"test.ok\"() : () -> () loc(",
	}
	for _, in := range inputs {
		for _, args := range [][]string{nil, {"--split-input-file", "--verify-diagnostics"}, {"--allow-unregistered-dialect"}} {
			var out, errOut bytes.Buffer
			status := Main(args, strings.NewReader(in), &out, &errOut, WithDialects(builtin.Dialect, testDialect))
			if status != ExitOK && status != ExitDiagnostics {
				t.Errorf("input %.40q, args %q: status %d, stderr:\n%.400s", in, args, status, errOut.String())
			}
		}
	}
}

func TestPanicBecomesInternalError(t *testing.T) {
	var out, errOut bytes.Buffer
	status := Main(nil, strings.NewReader("\"test.panic\"() : () -> ()\n"), &out, &errOut, WithDialects(builtin.Dialect, testDialect))
	if status != ExitInternal {
		t.Errorf("status %d, want %d", status, ExitInternal)
	}
	msg := errOut.String()
	if !strings.Contains(msg, "irc: internal error: verifier bug") || !strings.Contains(msg, "please report") {
		t.Errorf("stderr = %q", msg)
	}
	if strings.Contains(msg, "goroutine") {
		t.Errorf("stderr holds a stack trace:\n%s", msg)
	}
}

func TestParseInterleaved(t *testing.T) {
	fs := newFlagSet("x")
	b := fs.Bool("b", false, "")
	s := fs.String("s", "", "")
	pos, err := parseInterleaved(fs, []string{"a", "-b", "c", "-s", "v", "-", "--", "-b", "d"})
	if err != nil {
		t.Fatal(err)
	}
	if !*b || *s != "v" || strings.Join(pos, " ") != "a c - -b d" {
		t.Errorf("b=%v s=%q positional=%q", *b, *s, pos)
	}
}
