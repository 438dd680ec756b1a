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
