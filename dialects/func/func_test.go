package funcs_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/internal/mlirtest"
	"github.com/strata-ir/strata/ir"
)

func newCtx() *ir.Context {
	ctx := ir.NewContext(builtin.Dialect, funcs.Dialect)
	ctx.AllowUnregistered = true
	return ctx
}

// prettyCases print back exactly as mlir-opt 19 prints them (their value
// names are the ones both printers choose).
var prettyCases = []struct{ name, src string }{
	{"declarations", `module {
  func.func private @ext(f32, i32 {t.noalias}) -> (f32 {a.b}, i32)
  func.func nested @n()
  func.func private @fn_result() -> ((i32) -> i32)
  func.func private @none()
}
`},
	{"definition", `module {
  func.func @f(%arg0: f32 {foo.bar = 1 : i64}, %arg1: i32) -> (f32, i32) attributes {t.emit} {
    %0:2 = call @f(%arg0, %arg1) : (f32, i32) -> (f32, i32)
    %1 = "t.fn"() : () -> ((f32, i32) -> (f32, i32))
    %2:2 = call_indirect %1(%0#0, %0#1) {t.a} : (f32, i32) -> (f32, i32)
    return %2#0, %0#1 : f32, i32
  }
}
`},
	{"public and empty return", `module {
  func.func public @n() {
    return
  }
  func.func @m() -> i32 {
    %0 = "t.a"() : () -> i32
    return {t.x} %0 : i32
  }
}
`},
	// An unregistered op with one region might be a symbol table, which
	// hides @f from mlir-opt's lookup: "t.r" has two.
	{"nested prefixes", `module {
  func.func @f() {
    "t.r"() ({
      func.call @f() : () -> ()
      %1 = builtin.unrealized_conversion_cast to i32
      "t.t"() : () -> ()
    }, {
    }) : () -> ()
    %0 = builtin.unrealized_conversion_cast to i32
    return
  }
}
`},
}

func TestPrettyRoundTrip(t *testing.T) {
	for _, c := range prettyCases {
		t.Run(c.name, func(t *testing.T) {
			m := mlirtest.Parse(t, newCtx(), c.src)
			if err := ir.Verify(m); err != nil {
				t.Fatal(err)
			}
			if got := ir.Sprint(m, ir.PrintOptions{}); got != c.src {
				t.Errorf("got\n%s\nwant\n%s", got, c.src)
			}
		})
	}
}

func TestMatchesMLIROpt(t *testing.T) {
	for _, c := range prettyCases {
		t.Run(c.name, func(t *testing.T) {
			mlirtest.CheckRoundTrip(t, newCtx(), c.src)
			if got := mlirtest.MLIROpt(t, c.src, "--allow-unregistered-dialect"); got != c.src {
				t.Errorf("the expected output is not mlir-opt's:\n%s", got)
			}
		})
	}
	// func.constant's result takes the symbol's name in mlir-opt's output,
	// so it is compared in generic form only.
	mlirtest.CheckRoundTrip(t, newCtx(), `func.func private @ext(f32) -> f32
func.func @g(%x: f32) -> f32 {
  %f = func.constant @ext : (f32) -> f32
  %r = func.call_indirect %f(%x) : (f32) -> f32
  return %r : f32
}`)
}

func TestVerifyErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"func.func @a()", "'func.func' op symbol declaration cannot have public visibility"},
		{"func.func @b(%x: f32) -> i32 { return %x : f32 }", "type of return operand 0 ('f32') doesn't match function result type ('i32') in function @b"},
		{"func.func @c(%x: i32) -> (i32, i32) { return %x : i32 }", "'func.return' op has 1 operands, but enclosing function (@c) returns 2"},
		{"\"func.func\"() <{function_type = (f32) -> (), sym_name = \"d\"}> ({\n^bb0(%a: i32):\n  \"func.return\"() : () -> ()\n}) : () -> ()",
			"'func.func' op type of entry block argument #0('i32') must match the type of the corresponding argument in function signature('f32')"},
		{"\"func.func\"() <{function_type = (f32) -> (), sym_name = \"e\"}> ({\n^bb0:\n  \"func.return\"() : () -> ()\n}) : () -> ()",
			"'func.func' op entry block must have 1 arguments to match function signature"},
		{`"func.func"() <{function_type = (f32) -> (), sym_name = "g", sym_visibility = "foo"}> ({}) : () -> ()`,
			`'func.func' op visibility expected to be one of ["public", "private", "nested"], but got "foo"`},
		{`"func.func"() <{function_type = (f32) -> (), sym_name = "h", sym_visibility = "private", arg_attrs = [{}, {}]}> ({}) : () -> ()`,
			"'func.func' op expects argument attribute array to have the same number of elements as the number of function arguments, got 2, but expected 1"},
		{`"func.func"() <{sym_name = "i", sym_visibility = "private"}> ({}) : () -> ()`, "'func.func' op requires attribute 'function_type'"},
		{`"func.func"() <{function_type = f32, sym_name = "j", sym_visibility = "private"}> ({}) : () -> ()`,
			"'func.func' op attribute 'function_type' failed to satisfy constraint: type attribute of function type"},
		{"func.func @p(%a: i32 {x}) { return }", "'func.func' op arguments may only have dialect attributes"},
		{"func.func private @q() -> (i32 {y})", "'func.func' op results may only have dialect attributes"},
		{"func.func @k() {\n func.call @nope() : () -> ()\n return }", "'func.call' op 'nope' does not reference a valid function"},
		{"func.func private @l(i32) -> f32\nfunc.func @k(%a: f32) { %0 = func.call @l(%a) : (f32) -> f32\n return }",
			"'func.call' op operand type mismatch: expected operand type 'i32', but provided 'f32' for operand number 0"},
		{"func.func private @l(i32) -> f32\nfunc.func @k(%a: i32) { %0 = func.call @l(%a) : (i32) -> i32\n return }",
			"'func.call' op result type mismatch at index 0"},
		{"func.func private @l(i32) -> f32\nfunc.func @k(%a: i32) { func.call @l(%a, %a) : (i32, i32) -> f32\n return }",
			"'func.call' op incorrect number of operands for callee"},
		{"func.func private @l(i32) -> f32\nfunc.func @k(%a: i32) { func.call @l(%a) : (i32) -> ()\n return }",
			"'func.call' op incorrect number of results for callee"},
		{"\"t.x\"() {sym_name = \"l\"} : () -> ()\nfunc.func @k() { func.call @l() : () -> ()\n return }",
			"'func.call' op 'l' does not reference a valid function"},
		{"func.func private @o(i32) -> f32\nfunc.func @k() { %0 = func.constant @o : (i32) -> i32\n return }",
			"'func.constant' op reference to function with mismatched type"},
		{"func.func @k(%f: (i32) -> f32, %a: i32) { %1 = \"func.call_indirect\"(%f, %a) : ((i32) -> f32, i32) -> i32\n return }",
			"'func.call_indirect' op failed to verify that callee result types match result types"},
		{"func.func @k(%f: (i32) -> f32, %a: i32) { %1 = \"func.call_indirect\"(%f, %a, %a) : ((i32) -> f32, i32, i32) -> f32\n return }",
			"'func.call_indirect' op failed to verify that callee input types match argument types"},
		{`"t.op"() ({ "func.return"() : () -> () }) : () -> ()`, "'func.return' op expects parent op 'func.func'"},
		// Callees are found through the nearest symbol table, nested modules included.
		{"module @m {\n func.func private @l(i32)\n func.func @k(%a: i32) { func.call @l(%a) : (i32) -> ()\n return }\n}", ""},
		{"func.func private @l(i32)\nmodule @m {\n func.func @k(%a: i32) { func.call @l(%a) : (i32) -> ()\n return }\n}",
			"'func.call' op 'l' does not reference a valid function"},
	}
	for _, c := range cases {
		got := mlirtest.VerifyError(t, newCtx(), c.src)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s:\ngot  %q\nwant %q", c.src, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"func.func @m() {}", "1:16: error: expected non-empty function body"},
		{"func.func @m(f32, %a: f32) {\n return }", "expected type instead of SSA identifier"},
		{"func.func @m(%a: f32) -> (f32 {a.b} {\n return }", "expected ')'"},
		{"func.func @m() { %0 = call @m : () -> () }", "expected '('"},
		{"func.func @m() { call @m() : i32 }", "expected function type"},
		{"func.func @m() { return %x : f32, i32 }", "1 operands present, but expected 2"},
	}
	for _, c := range cases {
		_, err := ir.Parse(newCtx(), c.src, ir.ParseOptions{Filename: "in.mlir"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\ngot  %v\nwant %q", c.src, err, c.want)
		}
	}
}

func TestBuilders(t *testing.T) {
	ctx := newCtx()
	m := builtin.NewModule(ir.UnknownLoc{})
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointToEnd(builtin.ModuleBody(m))
	ext := funcs.NewExternalFunc(b, "ext", ir.FunctionOf([]ir.Type{ir.F32}, []ir.Type{ir.F32}), ir.UnknownLoc{})
	fn, entry := funcs.NewFunc(b, "f", ir.FunctionOf([]ir.Type{ir.F32}, []ir.Type{ir.F32, ir.F32}), ir.UnknownLoc{})
	b.SetInsertionPointToEnd(entry)
	call := funcs.CallFunc(b, ir.UnknownLoc{}, ext, entry.Argument(0))
	call2 := funcs.Call(b, ir.UnknownLoc{}, "ext", []ir.Type{ir.F32}, call.Result(0))
	funcs.Return(b, ir.UnknownLoc{}, call.Result(0), call2.Result(0))
	if err := ir.Verify(m); err != nil {
		t.Fatal(err)
	}
	want := `module {
  func.func private @ext(f32) -> f32
  func.func @f(%arg0: f32) -> (f32, f32) {
    %0 = call @ext(%arg0) : (f32) -> f32
    %1 = call @ext(%0) : (f32) -> f32
    return %0, %1 : f32, f32
  }
}
`
	if got := ir.Sprint(m, ir.PrintOptions{}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if funcs.Type(fn).String() != "(f32) -> (f32, f32)" || funcs.Body(fn) != entry || funcs.IsExternal(fn) || !funcs.IsExternal(ext) {
		t.Error("Type, Body or IsExternal disagree with the built function")
	}
}

// TestUpdateType: after the entry block's arguments and the returned
// values change type, UpdateType makes function_type say so; an external
// function has no body to read it from.
func TestUpdateType(t *testing.T) {
	src := `func.func @f(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}
func.func private @ext(f32) -> f32
`
	m, err := ir.Parse(newCtx(), src, ir.ParseOptions{Filename: "in.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	fn := ir.NewSymTable(m).Lookup("f")
	funcs.Body(fn).Argument(0).SetType(ir.TensorOf([]int64{4}, ir.F32))
	if err := funcs.UpdateType(fn); err != nil {
		t.Fatal(err)
	}
	if got, want := funcs.Type(fn).String(), "(tensor<4xf32>) -> tensor<4xf32>"; got != want {
		t.Errorf("function_type %s, want %s", got, want)
	}
	if err := ir.Verify(m); err != nil {
		t.Error(err)
	}
	if err := funcs.UpdateType(ir.NewSymTable(m).Lookup("ext")); err == nil || !strings.Contains(err.Error(), "no body") {
		t.Errorf("external function: err = %v", err)
	}
}

// TestUpdateTypeGrowsArgAttrs: arguments appended to a function whose
// arguments carry arg_attrs (a JAX export whose weights are lifted to
// arguments) get empty dictionaries, and the function verifies.
func TestUpdateTypeGrowsArgAttrs(t *testing.T) {
	src := `"func.func"() <{arg_attrs = [{jax.arg = 1 : i64}], function_type = (tensor<2xf32>) -> tensor<2xf32>, res_attrs = [{jax.result_info = "result"}], sym_name = "main"}> ({
^bb0(%a: tensor<2xf32>):
  "func.return"(%a) : (tensor<2xf32>) -> ()
}) : () -> ()
`
	m, err := ir.Parse(newCtx(), src, ir.ParseOptions{Filename: "in.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	fn := ir.NewSymTable(m).Lookup("main")
	funcs.Body(fn).AddArgument(ir.TensorOf([]int64{3}, ir.F32))
	funcs.Body(fn).AddArgument(ir.TensorOf([]int64{4}, ir.F32))
	if err := funcs.UpdateType(fn); err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("after two arguments were appended: %v", err)
	}
	if got, want := fn.Attr(funcs.ArgAttrsAttr).String(), "[{jax.arg = 1 : i64}, {}, {}]"; got != want {
		t.Errorf("arg_attrs %s, want %s", got, want)
	}
}
