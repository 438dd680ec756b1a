package ircmain

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/runtime/npy"
)

// TestHostileInputEndToEnd runs irc on the reproducers of issue 24: inputs
// that once hung, overflowed the stack, exhausted memory or panicked. Each
// must end within seconds with the expected status and a message, located
// where the input is at fault, and no Go trace.
func TestHostileInputEndToEnd(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deep := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	dimsFunc := func(dims string) string {
		ty := "tensor<?xf32, #graph.dims<[" + dims + "]>>"
		return "func.func @main(%x: " + ty + ") -> " + ty + " {\n  %0 = \"graph.exp\"(%x) : (" + ty + ") -> " + ty + "\n  return %0 : " + ty + "\n}\n"
	}
	neg := file("neg.mlir", "func.func @main(%v: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = arith.negf %v : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
	iota := file("iota.mlir", `func.func @main() -> tensor<100000x100000xf32> {
  %0 = "graph.iota"() <{axis = 0 : i64}> : () -> tensor<100000x100000xf32>
  return %0 : tensor<100000x100000xf32>
}
`)
	bcast := file("bcast.mlir", `func.func @main(%x: tensor<?x1xf32>, %y: tensor<1x?xf32>) -> tensor<?x?xf32> {
  %0 = "graph.add"(%x, %y) : (tensor<?x1xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
`)
	spin := file("spin.mlir", `func.func @main() -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1000000000000 : index
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %s = "loop.for"(%c0, %n, %c1, %z) ({
  ^bb0(%i: index, %acc: i64):
    %y = arith.addi %acc, %one : i64
    loop.yield %y : i64
  }) : (index, index, index, i64) -> i64
  return %s : i64
}
`)
	guards := 0
	guarded := func(guard string) string {
		guards++
		return file(fmt.Sprintf("guarded%d.mlir", guards), `func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> attributes {graph.guards = ["`+guard+`"]} {
  return %x : tensor<?xf32>
}
`)
	}
	repro := file("repro.mlir", "module {\n}\n{-#\n  external_resources: {\n    mlir_reproducer: {\n      pipeline: \""+
		deep("builtin.module(", "cse", ")", 50_000)+"\",\n      disable_threading: true,\n      verify_each: true\n    }\n  }\n#-}\n")
	tests := []struct {
		name   string
		stdin  string
		args   []string
		status int
		want   []string
	}{
		// Hangs.
		{"unterminated distinct[", "#a = distinct[", nil, ExitDiagnostics, []string{"<stdin>:1:15: error: expected distinct ID"}},
		{"nested max in dims", dimsFunc(deep("max(", "s0", ", s1 + 1)", 40)), []string{"-", "--pass-pipeline=builtin.module(canonicalize)"}, ExitOK, nil},
		{"nested min in a guard", "", []string{"run", file("guards2.mlir", `func.func @main(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> attributes {graph.guards = ["arg0.shape[0] == s0", "arg1.shape[0] == s1", "s0 >= `+
			deep("min(", "s0", ", s1 + 1)", 40)+`"]} {
  return %x : tensor<?xf32>
}
`), "--random-inputs", "1", "--shape", "arg0=3", "--shape", "arg1=5"}, ExitOK, nil},
		{"reshape of 40 symbolic dims", manyDims(40), nil, ExitOK, nil},
		{"product of 40 sums in dims", dimsFunc(sumsProduct(40)), nil, ExitDiagnostics, []string{"expands to more than 16384 terms"}},
		{"nested inline pipelines", "", []string{neg, "--pass-pipeline=builtin.module(" + deep("inline{default-pipeline={", "cse", "}}", 3000) + ")"}, ExitUsage,
			[]string{"options nested deeper than 64 braces"}},
		{"run a loop of 10^12 iterations", "", []string{"run", spin}, ExitDiagnostics,
			[]string{fmt.Sprintf("spin.mlir:9:10: error: 'arith.addi' op: the run went past its limit of %d ops", DefaultMaxOps),
				fmt.Sprintf("spin.mlir:9:10: note: irc run stops after --max-ops=%d ops; raise the limit, or 0 for none", DefaultMaxOps)}},
		{"run a loop with --max-ops", "", []string{"run", spin, "--max-ops=1000"}, ExitDiagnostics,
			[]string{"spin.mlir:9:10: error: 'arith.addi' op: the run went past its limit of 1000 ops"}},
		{"negative --max-ops", "", []string{"run", spin, "--max-ops=-1"}, ExitUsage, []string{"--max-ops must be at least 0, got -1"}},
		// Stack overflows.
		{"deep parentheses in dims", dimsFunc(deep("(", "s0", ")", 50_000)), nil, ExitDiagnostics,
			[]string{"<stdin>:2:8: error: 'graph.exp' op operand #0: ", "nested deeper than 200"}},
		{"deep parentheses in a guard", "", []string{"run", guarded("s1 == " + deep("(", "s0", ")", 200_000)), "--random-inputs", "1", "--shape", "arg0=3"}, ExitDiagnostics,
			[]string{"guarded1.mlir:1:1: error: 'func.func' op graph.guards: sym: bad guard \"s1 == ((((((((((((((((((((((((((((((((((((((((((((((((((((((…)))", "nested deeper than 200"}},
		{"deep pipeline", "", []string{neg, "--pass-pipeline=" + deep("builtin.module(", "cse", ")", 100_000)}, ExitUsage, []string{"pipelines nested deeper than 64"}},
		{"deep pipeline in a reproducer", "", []string{repro, "--run-reproducer"}, ExitUsage, []string{"pipelines nested deeper than 64"}},
		// Memory.
		{"run iota of 10^10 elements", "", []string{"run", iota}, ExitDiagnostics,
			[]string{"iota.mlir:2:8: error: 'graph.iota' op a result of shape [100000 100000] and element type f32 needs"}},
		{"run broadcast of dynamic operands", "", []string{"run", bcast, "--random-inputs", "1", "--shape", "arg0=200000x1", "--shape", "arg1=1x200000"}, ExitDiagnostics,
			[]string{"bcast.mlir:2:8: error: 'graph.add' op a result of shape [200000 200000] and element type f32 needs"}},
		{"endless input", "", []string{"/dev/zero"}, ExitUsage, []string{"/dev/zero: is larger than the 1.0 MiB irc reads from a stream"}},
		{"file over the limit", "", []string{file("big.mlir", strings.Repeat(" ", 5<<20))}, ExitUsage, []string{"big.mlir: is 5.0 MiB, more than the 4.0 MiB irc reads"}},
		{"input over the limit", strings.Repeat(" ", 2<<20), []string{"-"}, ExitUsage, []string{"standard input: is larger than the 1.0 MiB irc reads from a stream"}},
		// Accepted nonsense.
		{"negative size in dims", dimsFunc("-5"), nil, ExitDiagnostics, []string{"<stdin>:2:8: error: 'graph.exp' op operand #0: in #graph.dims<[-5]>: size -5 is negative"}},
		{"floordiv by zero in dims", dimsFunc("floordiv(s0, 0)"), nil, ExitDiagnostics, []string{"<stdin>:2:8: error: ", "floordiv by zero"}},
		{"reshape to dynamic sizes without shape", `func.func @f(%a: tensor<?x4xf32>) -> tensor<?x3xf32> {
  %0 = "graph.reshape"(%a) : (tensor<?x4xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}`, nil, ExitDiagnostics, []string{"<stdin>:2:8: error: 'graph.reshape' op reshape to tensor<?x3xf32> needs the 'shape' attribute"}},
		{"misspelled anchor", "", []string{neg, "--pass-pipeline=builtin.module(func.fnuc(cse))"}, ExitUsage,
			[]string{"pass pipeline:1:16: error: 'func.fnuc' is not a registered operation, so the pipeline nested on it would never run (did you mean 'func.func'?)"}},
		{"anchor the root does not hold", "", []string{neg, "--pass-pipeline=gpu.module(cse)"}, ExitUsage,
			[]string{"pass pipeline:1:1: error: can't run 'gpu.module' pass manager on 'builtin.module' op"}},
		{"run with a misspelled anchor", "", []string{"run", neg, "--random-inputs", "1", "--pass-pipeline=builtin.module(func.fnuc(cse))"}, ExitUsage,
			[]string{"'func.fnuc' is not a registered operation"}},
		{"run --backend cpu with a misspelled anchor", "", []string{"run", neg, "--backend", "cpu", "--random-inputs", "1", "--pass-pipeline=builtin.module(func.fnuc(cse))"}, ExitUsage,
			[]string{"'func.fnuc' is not a registered operation"}},
	}
	defer func(n, m int64) { maxInputBytes, maxStreamBytes = n, m }(maxInputBytes, maxStreamBytes)
	maxInputBytes, maxStreamBytes = 4<<20, 1<<20
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := irc(t, tc.stdin, tc.args...)
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v", d)
			}
			if r.status != tc.status {
				t.Errorf("status %d, want %d; stderr:\n%.2000s", r.status, tc.status, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not contain %q:\n%.2000s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
				t.Errorf("stderr holds a panic:\n%.2000s", r.stderr)
			}
		})
	}
}

// TestOutputsAllOrNone checks that output files are replaced atomically:
// a run whose second --output cannot be written leaves the first file as
// it was, and a failed write leaves no temporary file behind.
func TestOutputsAllOrNone(t *testing.T) {
	dir := t.TempDir()
	two := filepath.Join(dir, "two.mlir")
	if err := os.WriteFile(two, []byte(`func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = arith.negf %x : tensor<2xf32>
  return %0, %x : tensor<2xf32>, tensor<2xf32>
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, "first.npy")
	old := []byte("the previous contents")
	if err := os.WriteFile(first, old, 0o644); err != nil {
		t.Fatal(err)
	}
	r := irc(t, "", "run", two, "--random-inputs", "1", "--output", first, "--output", filepath.Join(dir, "missing", "second.npy"))
	if r.status == ExitOK || !strings.Contains(r.stderr, "second.npy") {
		t.Fatalf("status %d; stderr:\n%s", r.status, r.stderr)
	}
	if got, _ := os.ReadFile(first); !bytes.Equal(got, old) {
		t.Errorf("the first output was overwritten by a failed run: %q", got)
	}
	// Both writable: both written.
	second := filepath.Join(dir, "second.npy")
	if r := irc(t, "", "run", two, "--random-inputs", "1", "--output", first, "--output", second); r.status != ExitOK {
		t.Fatalf("status %d; stderr:\n%s", r.status, r.stderr)
	}
	for _, p := range []string{first, second} {
		if _, err := npy.ReadFile(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	// -o replaces the file whole; a device is written in place.
	out := filepath.Join(dir, "out.mlir")
	if err := os.WriteFile(out, bytes.Repeat([]byte("x"), 100000), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := irc(t, twoOps, "-o", out); r.status != ExitOK {
		t.Fatalf("status %d; stderr:\n%s", r.status, r.stderr)
	}
	if got, _ := os.ReadFile(out); !strings.HasPrefix(string(got), "module {") || len(got) > 1000 {
		t.Errorf("-o wrote %.200q", got)
	}
	if r := irc(t, twoOps, "-o", os.DevNull); r.status != ExitOK {
		t.Errorf("-o %s: status %d; stderr:\n%s", os.DevNull, r.status, r.stderr)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("a temporary file was left behind: %s", e.Name())
		}
	}
}

// manyDims is a reshape of a tensor of n dims of symbolic sizes s_i + 1,
// whose element count has 2^n terms once expanded.
func manyDims(n int) string {
	dims := make([]string, n)
	for i := range dims {
		dims[i] = fmt.Sprintf("s%d + 1", i)
	}
	ty := "tensor<" + strings.Repeat("?x", n) + "f32, #graph.dims<[" + strings.Join(dims, ", ") + "]>>"
	return "func.func @f(%x: " + ty + ") -> tensor<?xf32> {\n  %0 = \"graph.reshape\"(%x) {shape = [-1]} : (" + ty + ") -> tensor<?xf32>\n  return %0 : tensor<?xf32>\n}\n"
}

// sumsProduct is (s0 + 1)*(s1 + 1)*… of n factors: 2^n terms expanded.
func sumsProduct(n int) string {
	fs := make([]string, n)
	for i := range fs {
		fs[i] = fmt.Sprintf("(s%d + 1)", i)
	}
	return strings.Join(fs, "*")
}
