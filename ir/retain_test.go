package ir_test

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
	"weak"

	"github.com/strata-ir/strata/ir"
)

// TestParseDoesNotRetainSource: the IR holds no slice of the text it was
// parsed from (attribute names, symbol references, opaque attributes and
// types, location names, op names), so the text is freed once the caller
// drops it, even while the IR lives (a 131 MB file was held twice).
func TestParseDoesNotRetainSource(t *testing.T) {
	for _, line := range []string{
		`"foo.op"() {bare = 1} : () -> ()`,
		`"foo.op"() {bare = #foo.attr} : () -> ()`,
		`"foo.op"() {sym = @callee::@inner} : () -> ()`,
		`"foo.op"() {ty = !foo.type<1>} : () -> ()`,
		`"foo.op"() : () -> !foo.t`,
		`"foo.op"() {other = #foo.a<x>} : () -> ()`,
		`"foo.op"() : () -> () loc("here")`,
		`"foo.op"() : () -> () loc(callsite("a" at "b":1:2))`,
		`"foo.op"() <{p = 1}> : () -> ()`,
		`"foo.op"() {s = "str"} : () -> ()`,
		`%x$ = "foo.op"() : () -> i32` + "\n" + `"foo.use"(%x$) : (i32) -> ()`,
		`"foo.op"() {n = 3 : i32} : () -> ()`,
	} {
		t.Run(line, func(t *testing.T) { testRetain(t, line) })
	}
}

func testRetain(t *testing.T, line string) {
	var m *ir.Operation
	var text weak.Pointer[byte]
	func() {
		var b strings.Builder
		for i := range 200 {
			b.WriteString(strings.ReplaceAll(line, "$", strconv.Itoa(i)) + "\n")
		}
		src := strings.Clone(b.String())
		text = weak.Make(unsafe.StringData(src))
		ctx := ir.NewContext()
		ctx.AllowUnregistered = true
		var err error
		if m, err = ir.Parse(ctx, src, ir.ParseOptions{Filename: "retain.mlir"}); err != nil {
			t.Fatal(err)
		}
	}()
	runtime.GC()
	runtime.GC()
	if text.Value() != nil {
		t.Error("the parsed IR keeps its source text alive")
	}
	runtime.KeepAlive(m)
}

// maxLiveBytesPerOp bounds the memory a parsed op of the benchmark module
// keeps: the op with its results and operand slots, its location, its
// share of the dictionaries and types. It was about 380 bytes before ops
// kept their rare parts out of line and shared their dictionaries.
const maxLiveBytesPerOp = 320

// TestParsedIRSize: the IR of the benchmark module stays within
// maxLiveBytesPerOp bytes an op once parsed (the text dropped), so that a
// 1M-op file is not held in several times its size (docs/performance.md).
func TestParsedIRSize(t *testing.T) {
	const n = 20_000
	src := benchSource(n)
	live := liveHeap()
	m, err := ir.Parse(newUnregisteredContext(), strings.Clone(src), ir.ParseOptions{Filename: "size.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	perOp := float64(liveHeap()-live) / n
	runtime.KeepAlive(m)
	t.Logf("%.0f live bytes per op", perOp)
	if perOp > maxLiveBytesPerOp {
		t.Errorf("the parsed IR keeps %.0f bytes per op, more than %d", perOp, maxLiveBytesPerOp)
	}
}

// liveHeap returns the bytes of the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestParseProgress: ParseOptions.Progress hears of the parser's way through
// the source about every ProgressStep bytes, in increasing offsets within
// the text, and does not change what is parsed.
func TestParseProgress(t *testing.T) {
	src := benchSource(100_000)
	var offsets []int
	m, err := ir.Parse(newUnregisteredContext(), src, ir.ParseOptions{
		Filename: "progress.mlir",
		Progress: func(offset int) { offsets = append(offsets, offset) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(src) / ir.ProgressStep; len(offsets) < want || len(offsets) > want+1 {
		t.Errorf("Progress called %d times for %d bytes, want %d or %d", len(offsets), len(src), want, want+1)
	}
	for i, off := range offsets {
		if off < 0 || off > len(src) || i > 0 && off < offsets[i-1]+ir.ProgressStep {
			t.Fatalf("offsets %v: not every ProgressStep within the %d bytes", offsets, len(src))
		}
	}
	plain, err := ir.Parse(newUnregisteredContext(), src, ir.ParseOptions{Filename: "progress.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ir.Sprint(m, ir.PrintOptions{}), ir.Sprint(plain, ir.PrintOptions{}); got != want {
		t.Error("parsing with Progress gives another module")
	}
}
