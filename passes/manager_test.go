package passes

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ir/strata/ir"
)

func manyFuncs(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(testFunc("f"+string(rune('a'+i%26))+strings.Repeat("x", i/26), i%7))
	}
	return b.String()
}

func run(t *testing.T, pipeline, src string, instr Instrumentation, threads bool) (*ir.Operation, error) {
	t.Helper()
	ctx := testContext()
	m := mustParse(t, ctx, src)
	pm, err := Parse(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	pm.Instr = instr
	pm.DisableThreading = !threads
	return m, pm.Run(ctx, m)
}

func TestNestingRunsOnDirectChildren(t *testing.T) {
	src := testFunc("a", 1) + `"test.inner"() <{sym_name = "in"}> ({` + testFunc("b", 2) + `}) : () -> ()`
	m, err := run(t, "builtin.module(test.func(test-tag),test.inner(test.func(test-tag)),any(test-tag))", src, Instrumentation{VerifyEach: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	m.Walk(func(op *ir.Operation) bool {
		if tag, ok := op.Attr("tag").(ir.IntegerAttr); ok {
			got[ir.SymbolName(op)] = tag.Value
		}
		return true
	})
	// @a has constant, add, return plus itself; "any" retags @a and tags
	// @in (itself, @b and its 4 ops) but does not reach into @in.
	want := map[string]int64{"a": 4, "b": 5, "in": 6}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tag of @%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

func TestWrongRootAnchor(t *testing.T) {
	pm := NewPassManager("test.inner")
	pm.AddPass(FuncPass{PassName: "nop", Fn: func(*ir.Operation, *State) error { return nil }})
	ctx := testContext()
	err := pm.Run(ctx, mustParse(t, ctx, testFunc("a", 1)))
	if err == nil || !strings.Contains(err.Error(), "anchored on 'test.inner' on a 'builtin.module' op") {
		t.Errorf("err = %v", err)
	}
}

// TestAnchorsThatMatchNothing checks the pipelines a run would skip in
// silence: one nested on an op name no dialect registers, and one written
// without the root's anchor on an op the root does not hold (mlir-opt
// refuses both).
func TestAnchorsThatMatchNothing(t *testing.T) {
	for _, tt := range []struct {
		pipeline, src string
		offset        int
		msg           string
	}{
		{"builtin.module(test.fnuc(test-tag))", testFunc("a", 1), 15, "'test.fnuc' is not a registered operation, so the pipeline nested on it would never run (did you mean 'test.func'?)"},
		{"test.fnuc(test-tag)", testFunc("a", 1), 0, "'test.fnuc' is not a registered operation"},
		{"builtin.module(test.inner(test.fnuc(test-tag)))", testFunc("a", 1), 26, "'test.fnuc' is not a registered operation"},
		{"test.inner(test-tag)", testFunc("a", 1), 0, "can't run 'test.inner' pass manager on 'builtin.module' op (it holds no 'test.inner' op"},
	} {
		ctx := testContext()
		m := mustParse(t, ctx, tt.src)
		pm, err := Parse(tt.pipeline)
		if err != nil {
			t.Fatal(err)
		}
		err = pm.Run(ctx, m)
		var pe *PipelineError
		if !errors.As(err, &pe) || pe.Offset != tt.offset || !strings.Contains(pe.Msg, tt.msg) {
			t.Errorf("%s: %v; want a PipelineError at %d: %s", tt.pipeline, err, tt.offset, tt.msg)
		}
	}
	// Explicitly nested, a registered anchor that matches nothing is fine
	// (as in mlir-opt); so is a lone one that matches, and an unregistered
	// name when the context allows unregistered ops.
	for _, pipeline := range []string{"builtin.module(test.inner(test-tag))", "test.func(test-tag)"} {
		if _, err := run(t, pipeline, testFunc("a", 1), Instrumentation{}, false); err != nil {
			t.Errorf("%s: %v", pipeline, err)
		}
	}
	ctx := testContext()
	ctx.AllowUnregistered = true
	pm, _ := Parse("builtin.module(test.fnuc(test-tag))")
	if err := pm.Run(ctx, mustParse(t, ctx, testFunc("a", 1))); err != nil {
		t.Errorf("with unregistered ops allowed: %v", err)
	}
}

// TestPipelineNestingBounds checks that deeply nested pipelines, in op
// pipelines or in options (inline's default-pipeline), are errors, and
// that parsing nested options stays fast.
func TestPipelineNestingBounds(t *testing.T) {
	deep := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	for _, tt := range []struct{ text, msg string }{
		{deep("builtin.module(", "", ")", 100_000), "pipelines nested deeper than 64"},
		{deep("any(", "test-tag", ")", MaxPipelineDepth+1), "pipelines nested deeper than 64"},
		{deep("inline{default-pipeline={", "cse", "}}", 100_000), "options nested deeper than 64 braces"},
		{"builtin.module(" + deep("inline{default-pipeline={", "cse", "}}", 2000) + ")", "options nested deeper than 64 braces"},
		{deep(`inline{default-pipeline="inline{default-pipeline='`, "cse", `'}"}`, 3000), ""},
	} {
		start := time.Now()
		_, err := ParsePipeline(tt.text)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%.60s…: %.300v", tt.text, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%.60s…: %v", tt.text, d)
		}
	}
	if _, err := ParsePipeline(deep("any(", "test-tag", ")", MaxPipelineDepth)); err != nil {
		t.Errorf("%d nested pipelines: %v", MaxPipelineDepth, err)
	}
	if _, err := ParsePipeline(deep("inline{default-pipeline={", "cse", "}}", 20)); err != nil {
		t.Errorf("20 nested inline pipelines: %v", err)
	}
}

// TestParallelDeterminism runs a pipeline with printing over 50 functions
// many times, threaded, and expects the same IR, dumps and errors as a
// sequential run.
func TestParallelDeterminism(t *testing.T) {
	src := manyFuncs(50) + testFunc("bad", 3)
	pipeline := "builtin.module(test.func(test-tag,test-fail))"
	capture := func(threads bool) string {
		var out strings.Builder
		m, err := run(t, pipeline, src, Instrumentation{VerifyEach: true, PrintAfter: true, Output: &out}, threads)
		return out.String() + "\n" + ir.Sprint(m, ir.PrintOptions{}) + "\n" + err.Error()
	}
	want := capture(false)
	if !strings.Contains(want, "'test.func' op bad is bad") {
		t.Fatalf("the sequential run did not fail as expected:\n%s", want)
	}
	for range 20 {
		if got := capture(true); got != want {
			t.Fatalf("threaded run differs from the sequential one:\n%s\n---\n%s", got, want)
		}
	}
}

func TestErrorsInOpOrder(t *testing.T) {
	src := testFunc("bad2", 1) + testFunc("ok", 1) + testFunc("bad1", 2)
	for range 10 {
		_, err := run(t, "test.func(test-fail)", src, Instrumentation{}, true)
		diags := ir.Diagnostics(err)
		if len(diags) != 2 || !strings.HasPrefix(diags[0].Error(), "in.mlir:1:1: error: 'test.func' op bad2 is bad") ||
			!strings.HasPrefix(diags[1].Error(), "in.mlir:11:1: error: 'test.func' op bad1 is bad") {
			t.Fatalf("diagnostics = %v", err)
		}
	}
}

func TestVerifyEach(t *testing.T) {
	var out strings.Builder
	_, err := run(t, "test.func(test-break)", testFunc("a", 1), Instrumentation{VerifyEach: true, PrintAfterFailure: true, Output: &out}, true)
	if err == nil || !strings.Contains(err.Error(), "'test.invalid' op is never valid") ||
		!strings.Contains(err.Error(), "note: the verifier rejected the IR produced by pass 'test-break'") {
		t.Errorf("err = %v", err)
	}
	if !strings.HasPrefix(out.String(), "// -----// IR Dump After test-break Failed ('test.func' operation: @a) //----- //\n") ||
		!strings.Contains(out.String(), "test.invalid") {
		t.Errorf("after-failure dump:\n%s", out.String())
	}
	if _, err := run(t, "test.func(test-break)", testFunc("a", 1), Instrumentation{}, true); err != nil {
		t.Errorf("without VerifyEach: %v", err)
	}
}

func TestPrintInstrumentation(t *testing.T) {
	src := testFunc("a", 1) + testFunc("bad", 1)
	tests := []struct {
		name  string
		instr Instrumentation
		want  []string // dump headers, in order
	}{
		{"before", Instrumentation{PrintBefore: true}, []string{
			"Before test-fail ('test.func' operation: @a)", "Before test-tag ('builtin.module' operation)",
		}},
		{"after", Instrumentation{PrintAfter: true}, []string{
			"After test-fail ('test.func' operation: @a)", "After test-tag ('builtin.module' operation)",
		}},
		// test-fail changes nothing on @a and says so; test-tag changes the module.
		{"after-change", Instrumentation{PrintAfterChange: true}, []string{
			"After test-tag ('builtin.module' operation)",
		}},
	}
	for _, tt := range tests {
		var out strings.Builder
		tt.instr.Output = &out
		_, err := run(t, "builtin.module(test.func(test-fail),test-tag)", strings.Replace(src, `"bad"`, `"b"`, 1), tt.instr, true)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range regexp.MustCompile(`// -----// IR Dump (.*) //----- //`).FindAllStringSubmatch(out.String(), -1) {
			got = append(got, m[1])
		}
		want := tt.want
		if tt.name != "after-change" {
			want = []string{strings.Replace(tt.want[0], "@a", "@a", 1), strings.Replace(tt.want[0], "@a", "@b", 1), tt.want[1]}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: dumps\n%s\nwant\n%s", tt.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestAfterPass checks that Instrumentation.AfterPass sees each pass that
// succeeded, with the op it ran on, after it ran (the nested passes, run
// at once, before the module's pass after them), and not a pass that
// failed or the passes after it.
func TestAfterPass(t *testing.T) {
	var mu sync.Mutex
	var got []string
	instr := Instrumentation{AfterPass: func(pass string, op *ir.Operation) {
		label := pass + " " + opLabel(op)
		if pass == "test-tag" && op.Attr("tag") == nil {
			label += " (before the pass changed it)"
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, label)
	}}
	src := testFunc("a", 1) + testFunc("b", 1)
	if _, err := run(t, "builtin.module(test.func(test-fail),test-tag)", src, instr, true); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got[:2]) // the functions' passes ran at once
	want := []string{"test-fail 'test.func' operation: @a", "test-fail 'test.func' operation: @b", "test-tag 'builtin.module' operation"}
	if !slices.Equal(got, want) {
		t.Errorf("AfterPass calls\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = nil
	if _, err := run(t, "builtin.module(test.func(test-fail),test-tag)", testFunc("bad", 1), instr, true); err == nil {
		t.Fatal("test-fail on @bad did not fail")
	}
	if len(got) != 0 {
		t.Errorf("AfterPass called for a failed pipeline: %v", got)
	}
}

func TestTimingStatisticsTrace(t *testing.T) {
	var timing, stats strings.Builder
	trace := filepath.Join(t.TempDir(), "trace.json")
	_, err := run(t, "builtin.module(test.func(test-tag),test-tag)", testFunc("a", 1)+testFunc("b", 2),
		Instrumentation{Timing: &timing, Statistics: &stats, TraceFile: trace}, true)
	if err != nil {
		t.Fatal(err)
	}
	wantTiming := regexp.MustCompile(`(?s)^===-+===\n +\.\.\. Execution time report \.\.\.\n===-+===\n` +
		`  Total Execution Time: \d+\.\d{4} seconds\n\n  ----Wall Time----  ----Name----\n` +
		`  +\d+\.\d{4} \( *\d+\.\d%\)  'test.func' Pipeline\n` +
		`  +\d+\.\d{4} \( *\d+\.\d%\)    test-tag\n` +
		`  +\d+\.\d{4} \( *\d+\.\d%\)  test-tag\n` +
		`  +\d+\.\d{4} \( *\d+\.\d%\)  Rest\n` +
		`  +\d+\.\d{4} \(100\.0%\)  Total\n$`)
	if !wantTiming.MatchString(timing.String()) {
		t.Errorf("timing report:\n%s", timing.String())
	}
	// @a has 4 ops, @b 5; the module pass then sees 1+4+5.
	wantStats := "'test.func' Pipeline\n  test-tag\n    (S) 9 ops - Number of ops seen\ntest-tag\n  (S) 10 ops - Number of ops seen\n"
	if !strings.HasSuffix(stats.String(), wantStats) || !strings.Contains(stats.String(), "... Pass statistics report ...") {
		t.Errorf("statistics:\n%s\nwant suffix\n%s", stats.String(), wantStats)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name, Ph string
			Ts, Dur  float64
			Pid, Tid int
			Args     map[string]string
		}
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatalf("trace is not JSON: %v\n%s", err, data)
	}
	ops := map[string]bool{}
	for _, e := range tr.TraceEvents {
		if e.Ph != "X" || e.Name != "test-tag" || e.Pid != 1 || e.Ts < 0 || e.Dur < 0 {
			t.Errorf("bad event %+v", e)
		}
		ops[e.Args["op"]] = true
	}
	if len(tr.TraceEvents) != 3 || !ops["'test.func' operation: @a"] || !ops["'test.func' operation: @b"] || !ops["'builtin.module' operation"] {
		t.Errorf("trace events: %+v", tr.TraceEvents)
	}
}

func TestReproducer(t *testing.T) {
	dir := t.TempDir()
	repro := filepath.Join(dir, "repro.mlir")
	src := testFunc("a", 1) + testFunc("bad", 2)
	ctx := testContext()
	m := mustParse(t, ctx, src)
	pm, err := Parse("builtin.module(test-tag,test.func(test-fail))")
	if err != nil {
		t.Fatal(err)
	}
	pm.Instr.Reproducer = repro
	// An old reproducer is replaced by a rename, never truncated and
	// rewritten in place: a second name for it keeps the old text.
	old := filepath.Join(dir, "old.mlir")
	if err := os.WriteFile(repro, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(repro, old); err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err == nil {
		t.Fatal("the pipeline did not fail")
	}
	if data, err := os.ReadFile(old); err != nil || string(data) != "old" {
		t.Errorf("the old reproducer was rewritten in place: %q %v", data, err)
	}
	data, err := os.ReadFile(repro)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	wantTail := "{-#\n  external_resources: {\n    mlir_reproducer: {\n" +
		"      pipeline: \"builtin.module(test-tag,test.func(test-fail))\",\n" +
		"      disable_threading: true,\n      verify_each: true\n    }\n  }\n#-}\n"
	if !strings.HasSuffix(text, wantTail) {
		t.Errorf("reproducer:\n%s", text)
	}
	// The IR in the reproducer is the input, not the half-rewritten module.
	if strings.Contains(text, "tag = ") {
		t.Errorf("reproducer holds IR modified by the pipeline:\n%s", text)
	}
	got, err := RunReproducer(testContext(), repro, Instrumentation{})
	if err == nil || !strings.Contains(err.Error(), "'test.func' op bad is bad") {
		t.Errorf("RunReproducer error = %v", err)
	}
	if got == nil || got.Attr(resourcesAttr) != nil {
		t.Errorf("RunReproducer module keeps its resources: %v", got)
	}
	os.WriteFile(repro, []byte(testFunc("a", 1)), 0o644)
	if _, err := RunReproducer(testContext(), repro, Instrumentation{}); err == nil || !strings.Contains(err.Error(), "no mlir_reproducer") {
		t.Errorf("RunReproducer on a plain file: %v", err)
	}
}

// TestNestedPanicReachesCaller checks that a pass panicking on a worker
// goroutine of a nested pipeline panics in the goroutine that called Run,
// where irc and the bench runner recover it, and not in the worker, which
// would end the process.
func TestNestedPanicReachesCaller(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	// The first function goes to a worker: the slots start free.
	src := testFunc("boom", 1) + manyFuncs(6)
	var got any
	func() {
		defer func() { got = recover() }()
		_, err := run(t, "builtin.module(test.func(test-panic))", src, Instrumentation{}, true)
		t.Errorf("Run returned %v instead of panicking", err)
	}()
	if got != "boom: boom" {
		t.Errorf("recovered %v, want the pass's panic", got)
	}
}
