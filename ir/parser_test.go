package ir_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strata-ir/strata/ir"
)

// TestParseErrors feeds malformed input to the parser and checks that each
// gets one located diagnostic, at the right place, and never a panic.
func TestParseErrors(t *testing.T) {
	deep := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	tests := []struct {
		name string
		src  string
		pos  string // "line:col" of the diagnostic
		msg  string // a substring of the message
	}{
		{"garbage", "\x01\x02\x03", "1:1", "unexpected character"},
		{"invalid utf8", `"t.op"() {s = "a` + "\xff" + `"} : () -> ()`, "1:17", "invalid UTF-8"},
		{"invalid utf8 outside strings", "\n  \xc3\x28", "2:3", "invalid UTF-8"},
		{"unterminated string", `"t.op"() {s = "abc} : () -> ()`, "1:15", `expected '"'`},
		{"unterminated op name", `"t.op`, "1:1", `expected '"'`},
		{"unterminated region", `"t.op"() ({` + "\n" + `"t.x"() : () -> ()`, "2:19", "expected '}'"},
		{"unterminated dict", `"t.op"() {a = 1`, "1:16", "expected"},
		{"unterminated parens", `"t.op"(`, "1:8", "expected SSA operand"},
		{"unterminated array", `"t.op"() {a = [1, 2`, "1:20", "expected"},
		{"unterminated type", `"t.op"() : () -> tensor<4xf32`, "1:30", "expected '>'"},
		{"undefined value", `"t.op"(%x) : (i32) -> ()`, "1:8", "use of undeclared SSA value name"},
		{"redefined value", "%x = \"t.a\"() : () -> i32\n%x = \"t.b\"() : () -> i32", "2:1", "redefinition of SSA value '%x'"},
		{"type mismatch between uses", "%x = \"t.a\"() : () -> i32\n\"t.b\"(%x) : (f32) -> ()", "2:7", "expects different type than prior uses"},
		{"forward ref type mismatch", "\"t.r\"() ({\n\"t.b\"(%x) : (f32) -> ()\n%x = \"t.a\"() : () -> i32\n}) : () -> ()", "3:1", "definition of SSA value '%x#0' has type 'i32'"},
		{"i8 out of range", `"t.op"() {a = 256 : i8} : () -> ()`, "1:15", "out of range"},
		{"ui8 negative", `"t.op"() {a = -1 : ui8} : () -> ()`, "1:15", "negative integer literal not valid for unsigned integer type"},
		{"i1 = 2", `"t.op"() {a = 2 : i1} : () -> ()`, "1:15", "out of range"},
		{"si1 = 1", `"t.op"() {a = 1 : si1} : () -> ()`, "1:15", "out of range"},
		{"i67 out of range", `"t.op"() {a = 147573952589676412928 : i67} : () -> ()`, "1:15", "out of range"},
		{"i67 dense out of range", `"t.op"() {a = dense<[1, -73786976294838206465]> : tensor<2xi67>} : () -> ()`, "1:25", "out of range"},
		{"i128 dense of floats", `"t.op"() {a = dense<[1.5]> : tensor<1xi128>} : () -> ()`, "1:22", "expected integer elements of type i128"},
		{"f80 hex too wide", `"t.op"() {a = 0x1FFFF8000000000000000 : f80} : () -> ()`, "1:15", "out of range for type f80"},
		{"typed dialect attribute without a type", `"t.op"() {a = #foo.x : } : () -> ()`, "1:24", "type, found '}'"},
		{"si8 = 128", `"t.op"() {a = 128 : si8} : () -> ()`, "1:15", "out of range"},
		{"i64 overflow", `"t.op"() {a = 18446744073709551616 : i64} : () -> ()`, "1:15", "out of range"},
		{"dense element out of range", `"t.op"() {a = dense<[1, 300]> : tensor<2xi8>} : () -> ()`, "1:25", "out of range"},
		{"dense wrong size", `"t.op"() {a = dense<[1, 2, 3]> : tensor<4xi32>} : () -> ()`, "1:34", "does not match type"},
		{"dense wrong shape", `"t.op"() {a = dense<[[1, 2], [3, 4]]> : tensor<4xi32>} : () -> ()`, "1:41", "does not match type"},
		{"dense ragged", `"t.op"() {a = dense<[[1, 2], [3]]> : tensor<2x2xi32>} : () -> ()`, "1:33", "ranks are not consistent"},
		{"dense hex wrong size", `"t.op"() {a = dense<"0x0102"> : tensor<4xi32>} : () -> ()`, "1:21", "hex data size is invalid"},
		{"dense dynamic", `"t.op"() {a = dense<1> : tensor<?xi32>} : () -> ()`, "1:26", "static shape"},
		{"dense float for int", `"t.op"() {a = dense<1.5> : tensor<2xi32>} : () -> ()`, "1:21", ""},
		{"unknown type", `"t.op"() : () -> foo`, "1:18", "expected"},
		{"unknown type in tensor", `"t.op"() : () -> tensor<4xbar>`, "1:27", "expected non-function type, found 'bar'"},
		{"missing function type", `"t.op"()`, "1:9", "expected ':'"},
		{"not a function type", `"t.op"() : i32`, "1:12", "expected function type"},
		{"operand count vs types", "%x = \"t.a\"() : () -> i32\n\"t.b\"(%x, %x) : (i32) -> ()", "2:17", "operand types"},
		{"result count", `%a, %b = "t.a"() : () -> i32`, "1:10", "defines 1 results but was provided 2"},
		{"result index out of range", "%x:2 = \"t.a\"() : () -> (i32, i32)\n\"t.b\"(%x#5) : (i32) -> ()", "2:7", "out of range"},
		{"forward result index out of range", "\"t.r\"() ({\n\"t.b\"(%x#5) : (i32) -> ()\n%x:2 = \"t.a\"() : () -> (i32, i32)\n}) : () -> ()", "2:7", "out of range"},
		{"undefined block", "\"t.r\"() ({\n\"t.br\"()[^bb9] : () -> ()\n}) : () -> ()", "2:10", "undefined block"},
		{"redefined block", "\"t.r\"() ({\n^bb0:\n\"t.x\"() : () -> ()\n^bb0:\n\"t.x\"() : () -> ()\n}) : () -> ()", "4:1", "redefinition of block"},
		{"undefined attribute alias", `"t.op"() {a = #nope} : () -> ()`, "1:15", "undefined symbol alias"},
		{"undefined type alias", `"t.op"() : () -> !nope`, "1:18", ""},
		{"undefined location alias", `"t.op"() : () -> () loc(#nope)`, "1:25", "operation location alias was never defined: 'nope'"},
		{"attribute alias as a location", "\"t.op\"() : () -> () loc(#a)\n#a = true", "1:25", "expected location, but found 'true'"},
		{"missing token at the end of a line", "\"t.op\"() \n\"t.op\"() : () -> ()", "1:9", "expected ':' followed by operation type"},
		{"redefined alias", "#a = 1\n#a = 2", "2:1", "redefinition of attribute alias"},
		{"bad escape", `"t.op"() {s = "\q"} : () -> ()`, "1:15", "escape"},
		{"empty op name", `""() : () -> ()`, "1:1", "empty operation name"},
		{"unregistered op", `"foo.bar"() : () -> ()`, "1:1", "unregistered"},
		{"unregistered custom op", `foo.bar`, "1:1", "unknown"},
		{"nested regions 100k", deep(`"t.r"() ({`, "", `}) : () -> ()`, 100000), "", "nesting deeper than"},
		{"nested arrays 100k", `"t.op"() {a = ` + deep("[", "", "]", 100000) + `} : () -> ()`, "", "nesting deeper than"},
		{"nested dicts 100k", `"t.op"() {a = ` + deep("{a = ", "1", "}", 100000) + `} : () -> ()`, "", "nesting deeper than"},
		{"nested types 100k", `"t.op"() : () -> ` + deep("tuple<", "i32", ">", 100000), "", "nesting deeper than"},
		{"nested function types 100k", `"t.op"() : () -> ` + deep("() -> (", "i32", ")", 100000), "", "nesting deeper than"},
		{"nested tensors 100k", `"t.op"() : () -> ` + deep("tensor<4x", "i32", ">", 100000), "", "nesting deeper than"},
		{"nested locations 100k", `"t.op"() : () -> () loc(` + deep(`callsite(`, `"a":1:1`, ` at "b":1:1)`, 100000) + `)`, "", "nesting deeper than"},
		{"integer type too wide", `"t.op"() : () -> i16777216`, "1:18", ""},
		{"trailing junk", `"t.op"() : () -> () )`, "1:21", ""},
		{"hex float with minus", `"t.op"() {a = -0x7F800000 : f32} : () -> ()`, "1:15", "leading minus"},
		{"hex float too wide", `"t.op"() {a = 0x1FFFF : f16} : () -> ()`, "1:15", "out of range"},
		{"float for integer type", `"t.op"() {a = 1.5 : i32} : () -> ()`, "1:15", ""},
		{"array<i100>", `"t.op"() {a = array<i100: 0>} : () -> ()`, "1:21", "bitwidth must be a multiple of 8"},
		{"array<i128>", `"t.op"() {a = array<i128: 0>} : () -> ()`, "1:21", "wider than 64 bits"},
		{"tensor too large", `"t.op"() : () -> tensor<4611686018427387904x0x4xf32>`, "1:18", "more than 2^63-1 elements"},
		{"memref too large", `"t.op"() : () -> memref<?x3037000500x3037000500xf32>`, "1:18", "more than 2^63-1 elements"},
		{"attribute alias bomb", aliasBomb("#a", "[", "]", 40) + `"t.op"() {x = #a39} : () -> ()`, "25:15", "stand for more than 256 MiB of text ('#a23' alone for"},
		{"location alias bomb", `"t.op"() : () -> () loc(#loc39)` + "\n" + locBomb(40), "25:33", "stand for more than 256 MiB of text ('#loc22' alone for"},
		{"array<i8> out of range", `"t.op"() {a = array<i8: 1, 1000>} : () -> ()`, "1:28", "out of range"},
		{"block arg outside region", `"t.br"()[^bb1] : () -> ()`, "1:10", ""},
		{"unterminated distinct[", `#a = distinct[`, "1:15", "expected distinct ID"},
		{"unterminated distinct[ in a dictionary", `"t.op"() {x = distinct[0`, "1:25", "expected ']'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ir.NewContext()
			ctx.AllowUnregistered = tt.name != "unregistered op" && tt.name != "unregistered custom op"
			m, err := ir.Parse(ctx, tt.src, ir.ParseOptions{Filename: "bad.mlir"})
			if err == nil {
				t.Fatalf("no error; parsed as\n%.2000s", ir.Sprint(m, ir.PrintOptions{Generic: true}))
			}
			diags := ir.Diagnostics(err)
			if len(diags) != 1 {
				t.Fatalf("want one diagnostic, got %d: %v", len(diags), err)
			}
			text := err.Error()
			prefix := "bad.mlir:" + tt.pos + ": error: "
			if tt.pos == "" {
				prefix = "bad.mlir:"
			}
			if !strings.HasPrefix(text, prefix) {
				t.Errorf("diagnostic %q does not start with %q", firstLine(text), prefix)
			}
			if !strings.Contains(text, tt.msg) {
				t.Errorf("diagnostic %q does not mention %q", firstLine(text), tt.msg)
			}
		})
	}
}

// aliasBomb returns n alias definitions, each using the previous one twice:
// the last stands for 2^n copies of the first.
func aliasBomb(prefix, open, close string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s0 = %si32, i32%s\n", prefix, open, close)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "%s%d = %s%s%d, %s%d%s\n", prefix, i, open, prefix, i-1, prefix, i-1, close)
	}
	return b.String()
}

// locBomb returns n location alias definitions, each a call site of the
// previous one at itself.
func locBomb(n int) string {
	var b strings.Builder
	b.WriteString(`#loc0 = loc("a":1:1)` + "\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "#loc%d = loc(callsite(#loc%d at #loc%d))\n", i, i-1, i-1)
	}
	return b.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestParseEmpty checks that an empty file (or one of only comments) is an
// empty module whose body is one empty block, as with mlir-opt.
func TestParseEmpty(t *testing.T) {
	for _, src := range []string{"", "  \n// just a comment\n"} {
		m, err := ir.Parse(ir.NewContext(), src, ir.ParseOptions{Filename: "empty.mlir"})
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if m.Name() != "builtin.module" || m.NumRegions() != 1 || len(m.Region(0).Blocks()) != 1 || !m.Region(0).Front().Empty() {
			t.Fatalf("%q: not an empty module:\n%s", src, m.GenericString())
		}
		const want = "\"builtin.module\"() ({\n^bb0:\n}) : () -> ()\n"
		if got := ir.Sprint(m, ir.PrintOptions{Generic: true}); got != want {
			t.Errorf("%q printed as\n%s\nwant\n%s", src, got, want)
		}
	}
}

// TestParseEmptyDense checks that elements literals without elements, in
// brackets or not, parse as the empty dense attribute (they indexed their
// first element).
func TestParseEmptyDense(t *testing.T) {
	ctx := ir.NewContext()
	ctx.AllowUnregistered = true
	for src, want := range map[string]string{
		"dense<[]> : tensor<0xf32>":          "dense<> : tensor<0xf32>",
		"dense<[[], []]> : tensor<2x0xi32>":  "dense<> : tensor<2x0xi32>",
		"dense<[]> : tensor<0xcomplex<f32>>": "dense<> : tensor<0xcomplex<f32>>",
		"dense<[]> : tensor<0x!foo.bar>":     "dense<> : tensor<0x!foo.bar>",
		"dense<[[]]> : tensor<0xf32>":        "error: inferred shape of elements literal ([1, 0]) does not match type ([0])",
	} {
		m, err := ir.Parse(ctx, `"t.op"() {a = `+src+`} : () -> ()`, ir.ParseOptions{Filename: "d.mlir"})
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = ir.Sprint(m, ir.PrintOptions{Generic: true})
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s: got\n%s\nwant it to contain %q", src, got, want)
		}
	}
}

// TestParseDeepOpaque checks that a dialect attribute body nested 100k deep,
// which the parser keeps as text without recursing, parses without trouble.
func TestParseDeepOpaque(t *testing.T) {
	body := strings.Repeat("<", 100000) + strings.Repeat(">", 100000)
	src := `"t.op"() {a = #foo.x` + body + `} : () -> ()`
	m, err := ir.Parse(newUnregisteredContext(), src, ir.ParseOptions{Filename: "deep.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Region(0).Front().First().Attributes().Get("a").String(); got != "#foo.x"+body {
		t.Errorf("opaque attribute not kept verbatim (%d bytes)", len(got))
	}
}

// TestColumnsOnOneLine checks op locations on a line holding several ops
// after multi-byte characters: the parser counts columns on from the last
// position it located on the line.
func TestColumnsOnOneLine(t *testing.T) {
	ctx := ir.NewContext()
	ctx.AllowUnregistered = true
	src := `"t.a"() {s = "ééé"} : () -> () "t.b"() : () -> () "t.c"() {s = "€"} : () -> ()` + "\n" + `  "t.d"() : () -> ()`
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "cols.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for op := m.Region(0).Front().First(); op != nil; op = op.Next() {
		got = append(got, op.Loc().String())
	}
	want := []string{`"cols.mlir":1:1`, `"cols.mlir":1:32`, `"cols.mlir":1:51`, `"cols.mlir":2:3`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("locations (-want +got):\n%s", diff)
	}
}
