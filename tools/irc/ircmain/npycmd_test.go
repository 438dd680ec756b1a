package ircmain

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strata-ir/strata/runtime/npy"
)

func TestNpyMakeShowCompare(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	for _, args := range [][]string{
		{"make", at("a.npy"), "arange", "--shape", "2x3", "--dtype", "int32"},
		{"make", at("b.npy"), "arange", "--shape=2,3", "--dtype=f64"},
		{"make", at("s.npy"), "2.5"},
		{"make", at("n.npy"), "-1", "--shape", "2", "--dtype", "int8"},
		{"make", at("r1.npy"), "rand", "--shape", "4", "--seed", "9"},
		{"make", at("r2.npy"), "rand", "--shape", "4", "--seed", "9"},
		{"make", at("z.npy"), "zeros", "--shape", "3", "--dtype", "bool"},
	} {
		if r := irc(t, "", append([]string{"npy"}, args...)...); r.status != ExitOK {
			t.Fatalf("npy %q: status %d, stderr %s", args, r.status, r.stderr)
		}
	}
	a, err := npy.ReadFile(at("a.npy"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := npy.ToSlice[int32](a)
	if diff := cmp.Diff(struct {
		Shape []int64
		Vals  []int32
	}{[]int64{2, 3}, []int32{0, 1, 2, 3, 4, 5}}, struct {
		Shape []int64
		Vals  []int32
	}{a.Shape, got}); diff != "" {
		t.Errorf("npy make arange (-want +got):\n%s", diff)
	}

	r := irc(t, "", "npy", "show", at("a.npy"), at("s.npy"), at("z.npy"), at("n.npy"))
	want := at("a.npy") + ": shape (2, 3) dtype int32\n[[0 1 2]\n [3 4 5]]\n" +
		at("s.npy") + ": shape () dtype float32\n2.5\n" +
		at("z.npy") + ": shape (3,) dtype bool\n[false false false]\n" +
		at("n.npy") + ": shape (2,) dtype int8\n[-1 -1]\n"
	if diff := cmp.Diff(want, r.stdout); diff != "" || r.status != ExitOK {
		t.Errorf("npy show: status %d (-want +got):\n%s", r.status, diff)
	}

	// int32 and float64 aranges are equal as numbers; equal seeds draw
	// equal arrays; a and s differ in shape.
	for _, c := range []struct {
		a, b   string
		flags  []string
		status int
		out    string
	}{
		{"a.npy", "b.npy", nil, ExitOK, "equal within rtol=1e-05 atol=1e-08: 6 elements, max |a-b| 0\n"},
		{"r1.npy", "r2.npy", nil, ExitOK, "equal within"},
		{"a.npy", "s.npy", nil, ExitDiagnostics, ""},
		{"s.npy", "b.npy", nil, ExitDiagnostics, ""},
		{"r1.npy", "z.npy", nil, ExitDiagnostics, ""},
		{"b.npy", "a.npy", []string{"--atol", "-1"}, ExitUsage, ""},
	} {
		args := append([]string{"npy", "compare", at(c.a), at(c.b)}, c.flags...)
		r := irc(t, "", args...)
		if r.status != c.status || !strings.HasPrefix(r.stdout, c.out) {
			t.Errorf("npy compare %s %s: status %d (want %d), stdout %q, stderr %q", c.a, c.b, r.status, c.status, r.stdout, r.stderr)
		}
	}

	// A difference names the first element out of tolerance.
	irc(t, "", "npy", "make", at("c.npy"), "arange", "--shape", "2x3")
	irc(t, "", "npy", "make", at("d.npy"), "0", "--shape", "2x3")
	r = irc(t, "", "npy", "compare", at("c.npy"), at("d.npy"), "--atol", "1.5")
	if want := "not equal within rtol=1e-05 atol=1.5: 4 of 6 elements differ, max |a-b| 5; first at [0, 2]: 2 vs 0\n"; r.stdout != want || r.status != ExitDiagnostics {
		t.Errorf("npy compare: status %d, stdout %q, want %q", r.status, r.stdout, want)
	}
}

func TestNpyErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"npy"}, "usage: irc npy make"},
		{[]string{"npy", "frob"}, `unknown command "frob"`},
		{[]string{"npy", "make", filepath.Join(dir, "x.npy")}, "want FILE KIND"},
		{[]string{"npy", "make", filepath.Join(dir, "x.npy"), "twos"}, `unknown KIND "twos"`},
		{[]string{"npy", "make", filepath.Join(dir, "x.npy"), "1.5", "--dtype", "int8"}, "1.5 is not a int8"},
		{[]string{"npy", "make", filepath.Join(dir, "x.npy"), "ones", "--dtype", "complex64"}, `unknown dtype "complex64"`},
		{[]string{"npy", "make", filepath.Join(dir, "x.npy"), "ones", "--shape", "2xa"}, `"a" is not a size`},
		{[]string{"npy", "make", filepath.Join(dir, "x.npy"), "ones", "--shap", "2"}, "did you mean --shape?"},
		{[]string{"npy", "show"}, "want one or more .npy files"},
		{[]string{"npy", "compare", "a.npy"}, "want two .npy files, got 1"},
	} {
		r := irc(t, "", c.args...)
		if r.status != ExitUsage || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("irc %q: status %d, output %q, want %q", c.args, r.status, r.stdout+r.stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.npy")); !os.IsNotExist(err) {
		t.Errorf("a failed npy make left a file: %v", err)
	}
	if r := irc(t, "", "npy", "show", "/nonexistent.npy"); r.status != ExitDiagnostics || !strings.Contains(r.stderr, "/nonexistent.npy") {
		t.Errorf("npy show of a missing file: status %d, stderr %q", r.status, r.stderr)
	}
}

func TestRunSaveInputsAndRepeat(t *testing.T) {
	path := writeFile(t, "swap.mlir", swap)
	dir := filepath.Join(t.TempDir(), "in")
	r := irc(t, "", "run", path, "--random-inputs", "5", "--save-inputs", dir, "--repeat", "4")
	if r.status != ExitOK {
		t.Fatalf("status %d, stderr %s", r.status, r.stderr)
	}
	if !regexp.MustCompile(`^repeat: 4 calls, median \d+\.\d+ ms, min \d+\.\d+ ms\n$`).MatchString(r.stderr) {
		t.Errorf("--repeat 4: stderr %q", r.stderr)
	}
	again := irc(t, "", "run", path, "--input", filepath.Join(dir, "arg0.npy"), "--input", filepath.Join(dir, "arg1.npy"))
	if diff := cmp.Diff(r.stdout, again.stdout); diff != "" {
		t.Errorf("the saved inputs give other results (-random +saved):\n%s", diff)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--repeat", "-1"}, "--repeat must be at least 0"},
		{[]string{"--repeat", "x"}, "invalid value"},
	} {
		r := irc(t, "", append([]string{"run", path, "--random-inputs", "1"}, c.args...)...)
		if r.status != ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: status %d, stderr %q", c.args, r.status, r.stderr)
		}
	}
	// A run that fails writes no input files.
	fails := writeFile(t, "fails.mlir", "func.func @main(%x: i32) -> i32 {\n  %z = arith.constant 0 : i32\n"+
		"  %0 = arith.divsi %x, %z : i32\n  return %0 : i32\n}\n")
	none := filepath.Join(t.TempDir(), "none")
	if r := irc(t, "", "run", fails, "--random-inputs", "1", "--save-inputs", none); r.status != ExitDiagnostics || !strings.Contains(r.stderr, "division by zero") {
		t.Fatalf("the failing program: status %d, stderr %q", r.status, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(none, "arg0.npy")); !os.IsNotExist(err) {
		t.Errorf("a failed run saved its inputs: %v", err)
	}
}

func TestHelp(t *testing.T) {
	r := irc(t, "", "--help")
	for _, want := range []string{"commands:\n  run FILE [flags]", "\n  npy make|show|compare", "\n  devices ", "\n  help [TOPIC]", "\n  version "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--help lacks %q:\n%s", want, r.stdout)
		}
	}
	if h := irc(t, "", "help"); h.stdout != r.stdout {
		t.Errorf("irc help differs from irc --help")
	}
	for topic, want := range map[string]string{
		"flags": "-pass-pipeline", "passes": "canonicalize", "logs": "recompiles", "backends": "interp",
		"modes": "max-autotune-no-cudagraphs", "options": "RecompileLimit", "run": "-random-inputs",
		"npy": "npy compare A.npy B.npy", "devices": "usage: irc devices", "version": "usage: irc version",
		"--logs": "recompiles",
	} {
		h := irc(t, "", "help", topic)
		if h.status != ExitOK || !strings.Contains(h.stdout, want) {
			t.Errorf("irc help %s: status %d, stdout lacks %q:\n%s%s", topic, h.status, want, h.stdout, h.stderr)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "passs"}, `unknown topic "passs" (did you mean "passes"?)`},
		{[]string{"help", "a", "b"}, "help takes one topic, got 2"},
		{[]string{"--verify-diagnostic"}, "did you mean --verify-diagnostics?"},
		{[]string{"--pass"}, "did you mean --pass-pipeline?"},
		{[]string{"--logs=fusion,bogus"}, `unknown log topic "bogus"`},
		{[]string{"run", "x.mlir", "--logs=fusoin"}, `run: --logs: unknown log topic "fusoin" (did you mean "fusion"?)`},
		{[]string{"run", "x.mlir", "--bakend=interp"}, "did you mean --backend?"},
	} {
		r := irc(t, "", c.args...)
		if r.status != ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("irc %q: status %d, stderr %q, want %q", c.args, r.status, r.stderr, c.want)
		}
	}
}
