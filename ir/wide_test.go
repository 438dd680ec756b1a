package ir

import (
	"math"
	"strings"
	"testing"
)

// TestWideLiterals: literals the 64-bit forms cannot hold are WideAttrs
// normalized as upstream prints them; those they can hold stay
// IntegerAttr or FloatAttr.
func TestWideLiterals(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"147573952589676412927 : i67", "-1 : i67"},
		{"73786976294838206464 : i67", "-73786976294838206464 : i67"},
		{"147573952589676412927 : ui67", "147573952589676412927 : ui67"},
		{"-5 : si128", "-5 : si128"},
		{"dense<[[7, 7], [7, 7]]> : tensor<2x2xi100>", "dense<7> : tensor<2x2xi100>"},
		{"dense<[[1], [-1]]> : tensor<2x1xi100>", "dense<[[1], [-1]]> : tensor<2x1xi100>"},
		{"0x7FFFC000000000000001 : f80", "0x7FFFC000000000000001 : f80"},
		{"0x0000000000000000000000000000001 : f128", "0x00000000000000000000000000000001 : f128"},
		{"-1.0e5000 : f128", "-1.0e5000 : f128"},
	} {
		m, err := Parse(newUnregistered(), `"t.op"() {a = `+tc.src+`} : () -> ()`, ParseOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		a := m.Region(0).Front().First().Attr("a")
		if _, ok := a.(WideAttr); !ok || a.String() != tc.want {
			t.Errorf("%s: %T %v, want the WideAttr %s", tc.src, a, a, tc.want)
		}
	}
	for _, tc := range []struct {
		src  string
		want float64
	}{
		{"0x3FFF8000000000000000 : f80", 1},
		{"0xC000C000000000000000 : f80", -3},
		{"0x7FFF8000000000000000 : f80", math.Inf(1)},
		{"0xFFFF0000000000000000000000000000 : f128", math.Inf(-1)},
		{"0x3FFF8000000000000000000000000000 : f128", 1.5},
		{"0x7FFFC000000000000000 : f80", math.NaN()},
	} {
		m, err := Parse(newUnregistered(), `"t.op"() {a = `+tc.src+`} : () -> ()`, ParseOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		a, ok := m.Region(0).Front().First().Attr("a").(FloatAttr)
		if v := FloatFromBits(a.Bits, a.Type); !ok || v != tc.want && !(math.IsNaN(v) && math.IsNaN(tc.want)) {
			t.Errorf("%s: %v (FloatAttr %v), want %v", tc.src, v, ok, tc.want)
		}
		// Printed back in the type's own encoding or in decimal.
		if s := a.String(); math.IsInf(tc.want, 0) || math.IsNaN(tc.want) {
			if want := tc.src; s != want {
				t.Errorf("%s printed as %s", tc.src, s)
			}
		}
	}
}

// TestTruncIntSigned1: si1 holds 0 and -1, i1 holds 0 and 1.
func TestTruncIntSigned1(t *testing.T) {
	si1 := IntegerWithSign(1, Signed)
	for _, tc := range []struct {
		v    int64
		t    Type
		want int64
	}{{-1, si1, -1}, {1, si1, -1}, {0, si1, 0}, {-1, I1, 1}, {2, I1, 0}, {1, IntegerWithSign(1, Unsigned), 1}} {
		if got := TruncInt(tc.v, tc.t); got != tc.want {
			t.Errorf("TruncInt(%d, %s) = %d, want %d", tc.v, tc.t, got, tc.want)
		}
	}
}

func newUnregistered() *Context {
	ctx := NewContext()
	ctx.AllowUnregistered = true
	return ctx
}

// TestNestedSymbolTableNumbering: functions in a module restart their
// numbering, but a module nested in a function continues the function's,
// so no name is redefined along a chain of nested regions (mlir-opt's
// generic parser refuses that).
func TestNestedSymbolTableNumbering(t *testing.T) {
	m := mustParse(t, newTestContext(), `"test.module"() ({
  "test.func"() <{sym_name = "a", function_type = (i32) -> ()}> ({
  ^bb0(%x: i32):
    %0 = "test.neg"(%x) : (i32) -> i32
    "test.module"() ({
      "test.func"() <{sym_name = "b", function_type = (i32) -> ()}> ({
      ^bb0(%y: i32):
        %1 = "test.neg"(%y) : (i32) -> i32
        "test.return"() : () -> ()
      }) : () -> ()
    }) : () -> ()
    "test.return"() : () -> ()
  }) : () -> ()
  "test.func"() <{sym_name = "c", function_type = (i32) -> ()}> ({
  ^bb0(%z: i32):
    "test.return"() : () -> ()
  }) : () -> ()
}) : () -> ()`)
	got := strings.Join(strings.Fields(m.GenericString()), " ")
	for _, want := range []string{
		`^bb0(%arg0: i32): %0 = "test.neg"(%arg0)`,
		`^bb0(%arg1: i32): %1 = "test.neg"(%arg1)`,
		`sym_name = "c"}> ({ ^bb0(%arg0: i32):`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("print lacks %q:\n%s", want, got)
		}
	}
}
