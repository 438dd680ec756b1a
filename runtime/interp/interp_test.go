package interp

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
)

// parse reads a module written in generic syntax, so the tests depend only
// on op names and properties, not on the dialects' pretty syntax.
func parse(t interface {
	Helper()
	Fatalf(string, ...any)
}, src string) *ir.Operation {
	t.Helper()
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, arith.Dialect, mathd.Dialect)
	ctx.AllowUnregistered = true
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "t.mlir"})
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return m
}

// fn returns the generic form of a function named name of the given
// argument and result types whose body is body (with arguments %a0, %a1, ...).
func fn(name string, args, results []string, body string) string {
	params := make([]string, len(args))
	for i, a := range args {
		params[i] = fmt.Sprintf("%%a%d: %s", i, a)
	}
	return fmt.Sprintf(`"func.func"() <{function_type = (%s) -> (%s), sym_name = %q}> ({
^bb0(%s):
%s
}) : () -> ()
`, strings.Join(args, ", "), strings.Join(results, ", "), name, strings.Join(params, ", "), body)
}

// must returns v; constructors fail only on programming errors in tests.
func must(v *Tensor, err error) *Tensor {
	if err != nil {
		panic(err)
	}
	return v
}

func f32s(t testing.TB, shape []int64, vs ...float64) *Tensor {
	return must(FromFloat64s(ir.F32, shape, vs))
}

func call(t testing.TB, m *ir.Operation, name string, args ...Value) []Value {
	t.Helper()
	out, err := New(m).Call(name, args...)
	if err != nil {
		t.Fatalf("Call(%s): %v", name, err)
	}
	return out
}

func TestCallErrors(t *testing.T) {
	m := parse(t, fn("f", []string{"tensor<4xf32>", "i32"}, []string{"tensor<4xf32>"}, `
  "func.return"(%a0) : (tensor<4xf32>) -> ()`)+
		fn("bad", nil, nil, `  "foo.bar"() : () -> ()
  "func.return"() : () -> ()`)+
		fn("cast", []string{"f32"}, []string{"i32"}, `  %0 = "builtin.unrealized_conversion_cast"(%a0) : (f32) -> i32
  "func.return"(%0) : (i32) -> ()`)+
		fn("div", []string{"i32", "i32"}, []string{"i32"}, `  %0 = "arith.divsi"(%a0, %a1) : (i32, i32) -> i32
  "func.return"(%0) : (i32) -> ()`)+
		`"func.func"() <{function_type = () -> (), sym_name = "decl", sym_visibility = "private"}> ({}) : () -> ()`)
	four := f32s(t, []int64{4}, 1, 2, 3, 4)
	three := f32s(t, []int64{3}, 1, 2, 3)
	i32 := must(ScalarInt(ir.I32, 7))
	zero := must(ScalarInt(ir.I32, 0))
	for _, tc := range []struct {
		name string
		fn   string
		args []Value
		want string
	}{
		{"missing function", "nope", nil, "no function named @nope"},
		{"arity", "f", []Value{four}, "@f takes 2 arguments, got 1"},
		{"shape", "f", []Value{three, i32}, "argument 0: expected tensor<4xf32>, got f32 of shape [3]"},
		{"element type", "f", []Value{four, must(ScalarInt(ir.I64, 1))}, "argument 1: expected i32, got i64 scalar"},
		{"rank", "f", []Value{four, must(FromInt64s(ir.I32, []int64{1}, []int64{1}))}, "argument 1: expected i32, got i32 of shape [1]"},
		{"unknown op", "bad", nil, "t.mlir:8:3: error: no interpreter rule for 'foo.bar'"},
		{"cast", "cast", []Value{f32s(t, nil, 1)}, "'builtin.unrealized_conversion_cast' op has no run-time meaning"},
		{"division by zero", "div", []Value{i32, zero}, "t.mlir:18:8: error: 'arith.divsi' op integer division by zero"},
		{"declaration", "decl", nil, "@decl is a declaration without a body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(m).Call(tc.fn, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			var d *ir.Diagnostic
			if !errors.As(err, &d) {
				t.Errorf("error %T is not a diagnostic", err)
			}
		})
	}
}

func TestCallsAndRecursion(t *testing.T) {
	m := parse(t, fn("sq", []string{"f64"}, []string{"f64"}, `
  %0 = "arith.mulf"(%a0, %a0) : (f64, f64) -> f64
  "func.return"(%0) : (f64) -> ()`)+
		fn("quad", []string{"f64"}, []string{"f64", "f64"}, `
  %0 = "func.call"(%a0) <{callee = @sq}> : (f64) -> f64
  %1 = "func.call"(%0) <{callee = @sq}> : (f64) -> f64
  "func.return"(%1, %0) : (f64, f64) -> ()`)+
		fn("forever", []string{"i64"}, []string{"i64"}, `
  %0 = "func.call"(%a0) <{callee = @forever}> : (i64) -> i64
  "func.return"(%0) : (i64) -> ()`))
	out := call(t, m, "quad", must(ScalarFloat(ir.F64, 3)))
	if got := [2]float64{out[0].(*Tensor).Float64s()[0], out[1].(*Tensor).Float64s()[0]}; got != [2]float64{81, 9} {
		t.Errorf("quad(3) = %v, want [81 9]", got)
	}
	_, err := New(m, WithMaxDepth(50)).Call("forever", must(ScalarInt(ir.I64, 1)))
	if err == nil || !strings.Contains(err.Error(), "call depth limit of 50 exceeded calling @forever") ||
		!strings.Contains(err.Error(), "note: called from here") {
		t.Errorf("unbounded recursion: %v", err)
	}
	// The innermost calls are noted, the rest counted in the last note.
	var d *ir.Diagnostic
	if !errors.As(err, &d) || len(d.Notes) != maxCallNotes ||
		d.Notes[maxCallNotes-1].Message != fmt.Sprintf("called from here; and from %d calls further out", 49-maxCallNotes) {
		t.Errorf("recursion notes: %v", err)
	}
}

// TestBranches runs a multi-block function through a branch rule added with
// WithRule, as a control-flow dialect would register one.
func TestBranches(t *testing.T) {
	m := parse(t, `"func.func"() <{function_type = (i32) -> i32, sym_name = "f"}> ({
^bb0(%x: i32):
  %c = "arith.constant"() <{value = 5 : i32}> : () -> i32
  "test.br"(%c, %x)[^bb1] : (i32, i32) -> ()
^bb1(%p: i32, %q: i32):
  %s = "arith.muli"(%p, %q) : (i32, i32) -> i32
  "func.return"(%s) : (i32) -> ()
}) : () -> ()`)
	br := func(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
		f.Branch(op.Successors()[0], args)
		return nil, nil
	}
	out, err := New(m, WithRule("test.br", br)).Call("f", must(ScalarInt(ir.I32, 7)))
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].(*Tensor).Int64s()[0]; got != 35 {
		t.Errorf("f(7) = %d, want 35", got)
	}
}

// TestFloat32Arithmetic checks that f32 ops round to float32 after every
// op: carried in float64 and rounded at the end, (1e8 + 1) - 1e8 would be 1
// rather than 0, and 0.1 summed ten times would be 1 rather than 1.0000001.
func TestFloat32Arithmetic(t *testing.T) {
	body := `
  %d0 = "arith.addf"(%a0, %a1) : (f32, f32) -> f32
  %d1 = "arith.subf"(%d0, %a0) : (f32, f32) -> f32
  %s1 = "arith.addf"(%a2, %a2) : (f32, f32) -> f32
`
	for i := 2; i < 10; i++ {
		body += fmt.Sprintf("  %%s%d = \"arith.addf\"(%%s%d, %%a2) : (f32, f32) -> f32\n", i, i-1)
	}
	body += `  %p = "math.sqrt"(%s9) : (f32) -> f32
  "func.return"(%d1, %s9, %p) : (f32, f32, f32) -> ()`
	m := parse(t, fn("f", []string{"f32", "f32", "f32"}, []string{"f32", "f32", "f32"}, body))
	big, one, tenth := float32(1e8), float32(1), float32(0.1)
	out := call(t, m, "f", f32s(t, nil, float64(big)), f32s(t, nil, float64(one)), f32s(t, nil, float64(tenth)))
	got := func(i int) float32 { return Elems[float32](out[i].(*Tensor))[0] }
	if want := (big + one) - big; got(0) != want || want == float32(float64(big)+float64(one)-float64(big)) {
		t.Errorf("(1e8 + 1) - 1e8 = %v, want float32's %v", got(0), want)
	}
	var sum32 float32
	var sum64 float64
	for range 10 {
		sum32 += tenth
		sum64 += float64(tenth)
	}
	if got(1) != sum32 || sum32 == float32(sum64) {
		t.Errorf("0.1 summed ten times = %v, want float32's %v (not %v)", got(1), sum32, float32(sum64))
	}
	if want := float32(math.Sqrt(float64(sum32))); got(2) != want {
		t.Errorf("sqrt = %v, want %v", got(2), want)
	}
}
