package math_test

import (
	"fmt"
	gomath "math"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/internal/mlirtest"
	"github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
)

func newCtx() *ir.Context {
	ctx := ir.NewContext(builtin.Dialect, funcs.Dialect, math.Dialect)
	ctx.AllowUnregistered = true
	return ctx
}

// pretty prints back exactly as mlir-opt 19 prints it.
const pretty = `module {
  func.func @f(%arg0: f32, %arg1: vector<4xf64>, %arg2: tensor<2x?xbf16>, %arg3: i32, %arg4: tensor<3xi8>) -> f32 {
    %0 = math.exp %arg0 : f32
    %1 = math.powf %0, %arg0 fastmath<fast> : f32
    %2 = math.fma %0, %1, %0 fastmath<nnan,ninf> : f32
    %3 = math.absi %arg3 : i32
    %4 = math.tanh %arg1 fastmath<reassoc,afn> : vector<4xf64>
    %5 = math.rsqrt %arg2 {t.x} : tensor<2x?xbf16>
    %6 = math.ctpop %arg4 {t.y = 1 : i64} : tensor<3xi8>
    %7 = math.fpowi %arg0, %arg3 fastmath<contract> : f32, i32
    %8 = math.ipowi %3, %arg3 : i32
    %9 = math.atan2 %arg1, %4 : vector<4xf64>
    %10 = math.copysign %7, %2 : f32
    return %10 : f32
  }
}
`

func TestPrettyRoundTrip(t *testing.T) {
	m := mlirtest.Parse(t, newCtx(), pretty)
	if err := ir.Verify(m); err != nil {
		t.Fatal(err)
	}
	if got := ir.Sprint(m, ir.PrintOptions{}); got != pretty {
		t.Errorf("got\n%s\nwant\n%s", got, pretty)
	}
}

func TestMatchesMLIROpt(t *testing.T) {
	mlirtest.CheckRoundTrip(t, newCtx(), pretty)
	if got := mlirtest.MLIROpt(t, pretty); got != pretty {
		t.Errorf("the expected output is not mlir-opt's:\n%s", got)
	}
	// Every op of the dialect, in both forms; the generic form without a
	// fastmath property and with flags in any order, as mlir-opt reads it.
	var b strings.Builder
	b.WriteString("func.func @all(%x: f32, %i: i64) {\n")
	for _, d := range math.Dialect.Ops {
		name := strings.TrimPrefix(d.Name, "math.")
		n := len(d.Operands)
		switch {
		case name == "fpowi":
			fmt.Fprintf(&b, "  %%%s = math.fpowi %%x, %%i : f32, i64\n", name)
		case d.Inherent == nil:
			fmt.Fprintf(&b, "  %%%s = math.%s %s : i64\n", name, name, repeat("%i", n))
			fmt.Fprintf(&b, "  %%%s_g = \"math.%s\"(%s) : (%s) -> i64\n", name, name, repeat("%i", n), repeat("i64", n))
		default:
			fmt.Fprintf(&b, "  %%%s = math.%s %s fastmath<afn,nnan> : f32\n", name, name, repeat("%x", n))
			fmt.Fprintf(&b, "  %%%s_g = \"math.%s\"(%s) : (%s) -> f32\n", name, name, repeat("%x", n), repeat("f32", n))
			fmt.Fprintf(&b, "  %%%s_h = \"math.%s\"(%s) <{fastmath = #arith.fastmath<afn,fast,reassoc>}> : (%s) -> f32\n", name, name, repeat("%x", n), repeat("f32", n))
		}
	}
	b.WriteString("  return\n}\n")
	src := b.String()
	m := mlirtest.Parse(t, newCtx(), src)
	if err := ir.Verify(m); err != nil {
		t.Fatal(err)
	}
	// The generic form without fastmath has no property here (mlir-opt
	// adds the default), so compare what mlir-opt makes of our pretty form.
	want := mlirtest.MLIROpt(t, src, "--mlir-print-op-generic")
	if got := mlirtest.MLIROpt(t, ir.Sprint(m, ir.PrintOptions{}), "--mlir-print-op-generic"); got != want {
		t.Errorf("mlir-opt reads our pretty form differently:\n%s\nwant\n%s", got, want)
	}
}

func repeat(s string, n int) string {
	return strings.TrimSuffix(strings.Repeat(s+", ", n), ", ")
}

func TestVerifyErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"func.func @f(%x: i32) {\n %0 = math.exp %x : i32\n return }", "'math.exp' op operand #0 must be floating-point-like, but got 'i32'"},
		{"func.func @f(%x: f32) {\n %0 = math.ctlz %x : f32\n return }", "'math.ctlz' op operand #0 must be signless-integer-like, but got 'f32'"},
		{"func.func @f(%x: ui32) {\n %0 = math.absi %x : ui32\n return }", "'math.absi' op operand #0 must be signless-integer-like, but got 'ui32'"},
		{"func.func @f(%x: f32) {\n %0 = \"math.exp\"(%x) : (f32) -> f64\n return }", "'math.exp' op requires the same type for all operands and results"},
		{"func.func @f(%x: f32) {\n %0 = \"math.exp\"(%x) <{fastmath = 1 : i32}> : (f32) -> f32\n return }", "'math.exp' op attribute 'fastmath' must be #arith.fastmath<...>"},
		{"func.func @f(%x: f32) {\n %0 = \"math.exp\"(%x) <{fastmath = #arith.fastmath<quick>}> : (f32) -> f32\n return }", "unknown fastmath flag 'quick'"},
		{"func.func @f(%x: f32) {\n %0 = \"math.powf\"(%x) : (f32) -> f32\n return }", "'math.powf' op expected 2 operands, but found 1"},
		{"func.func @f(%x: tensor<2xf32>, %n: tensor<3xi32>) {\n %0 = math.fpowi %x, %n : tensor<2xf32>, tensor<3xi32>\n return }", "'math.fpowi' op failed to verify that lhs and rhs have the same shape"},
		{"func.func @f(%x: f32, %n: i32) {\n %0 = \"math.fpowi\"(%x, %n) : (f32, i32) -> f64\n return }", "'math.fpowi' op failed to verify that all of {lhs, result} have same type"},
		{"func.func @f(%x: tensor<?xf32>, %n: i32) {\n %0 = math.fpowi %x, %n : tensor<?xf32>, i32\n return }", "'math.fpowi' op failed to verify that lhs and rhs have the same shape"},
		{"func.func @f(%x: vector<2xf16>, %n: vector<2xi64>) {\n %0 = math.fpowi %x, %n : vector<2xf16>, vector<2xi64>\n return }", ""},
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
		{"func.func @f(%x: f32) {\n %0 = math.exp %x fastmath<quick> : f32\n return }", "unknown fastmath flag 'quick'"},
		{"func.func @f(%x: f32) {\n %0 = math.powf %x : f32\n return }", "expected 2 operands, but found 1"},
		{"func.func @f(%x: f32, %n: i32) {\n %0 = math.fpowi %x, %n : f32\n return }", "expected 2 types, but found 1"},
		{"func.func @f(%x: f32) {\n %0 = math.absi %x fastmath<fast> : f32\n return }", "expected ':'"},
	}
	for _, c := range cases {
		_, err := ir.Parse(newCtx(), c.src, ir.ParseOptions{Filename: "in.mlir"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\ngot  %v\nwant %q", c.src, err, c.want)
		}
	}
}

func TestNew(t *testing.T) {
	ctx := newCtx()
	m := builtin.NewModule(ir.UnknownLoc{})
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointToEnd(builtin.ModuleBody(m))
	fn, entry := funcs.NewFunc(b, "f", ir.FunctionOf([]ir.Type{ir.F32, ir.I32}, []ir.Type{ir.F32}), ir.UnknownLoc{})
	b.SetInsertionPointToEnd(entry)
	e, err := math.New(b, "math.exp", ir.UnknownLoc{}, entry.Argument(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := math.New(b, "absi", ir.UnknownLoc{}, entry.Argument(1)); err != nil {
		t.Fatal(err)
	}
	funcs.Return(b, ir.UnknownLoc{}, e.Result(0))
	if err := ir.Verify(fn); err != nil {
		t.Fatal(err)
	}
	want := `"math.exp"(%arg0) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32`
	if !strings.Contains(ir.Sprint(m, ir.PrintOptions{Generic: true}), want) {
		t.Errorf("math.New did not set the default fastmath:\n%s", ir.Sprint(m, ir.PrintOptions{Generic: true}))
	}
	if _, err := math.New(b, "frobnicate", ir.UnknownLoc{}, entry.Argument(0)); err == nil {
		t.Error("math.New accepted an unknown op")
	}
	if _, err := math.New(b, "powf", ir.UnknownLoc{}, entry.Argument(0)); err == nil {
		t.Error("math.New accepted a wrong operand count")
	}
}

// foldOne folds op on the given constants (in the op's operand type).
func foldOne(t *testing.T, op string, typ ir.Type, consts ...ir.Attribute) ir.Attribute {
	t.Helper()
	ctx := newCtx()
	def := ctx.OpDef(op)
	if def == nil {
		t.Fatalf("no op %s", op)
	}
	blk := ir.NewBlock()
	args := make([]*ir.Value, len(consts))
	for i := range consts {
		args[i] = blk.AddArgument(typ)
	}
	o := ir.NewOperation(ctx, ir.OperationState{Name: op, Operands: args, ResultTypes: []ir.Type{typ}})
	if def.Fold == nil {
		return nil
	}
	res := def.Fold(o, consts)
	if res == nil {
		return nil
	}
	return res[0].Attr
}

func TestFold(t *testing.T) {
	f32 := func(v float64) ir.Attribute { return ir.Float(v, ir.F32) }
	f16 := func(v float64) ir.Attribute { return ir.Float(v, ir.F16) }
	i8 := func(v int64) ir.Attribute { return ir.Int(v, ir.I8) }
	t2 := ir.TensorOf([]int64{2}, ir.F32)
	cases := []struct {
		op   string
		typ  ir.Type
		args []ir.Attribute
		want string // "" when it must not fold
	}{
		{"math.exp", ir.F32, []ir.Attribute{f32(0.7)}, "2.0137527 : f32"},
		{"math.exp", ir.F64, []ir.Attribute{ir.Float(0.7, ir.F64)}, "2.0137527074704766 : f64"},
		{"math.exp", ir.F16, []ir.Attribute{f16(0.7)}, ""},
		{"math.floor", ir.F16, []ir.Attribute{f16(-2.5)}, "-3.000000e+00 : f16"},
		{"math.log", ir.F32, []ir.Attribute{f32(0)}, "0xFF800000 : f32"},
		{"math.log", ir.F32, []ir.Attribute{f32(gomath.Copysign(0, -1))}, ""},
		{"math.sqrt", ir.F32, []ir.Attribute{f32(-4)}, ""},
		{"math.log1p", ir.F32, []ir.Attribute{f32(-1)}, "0xFF800000 : f32"},
		{"math.log1p", ir.F32, []ir.Attribute{f32(-2)}, ""},
		{"math.rsqrt", ir.F32, []ir.Attribute{f32(4)}, ""},
		{"math.powf", ir.F32, []ir.Attribute{f32(2), f32(10)}, "1.024000e+03 : f32"},
		{"math.fma", ir.F32, []ir.Attribute{f32(2), f32(3), f32(1)}, ""}, // upstream does not fold fma
		{"math.powf", ir.F32, []ir.Attribute{f32(2), nil}, ""},
		{"math.atan2", ir.F16, []ir.Attribute{f16(0), f16(0)}, ""},
		{"math.atan2", ir.F16, []ir.Attribute{f16(1), f16(0)}, ""},
		{"math.sinh", ir.F64, []ir.Attribute{ir.Float(0.7, ir.F64)}, "0.75858370183953338 : f64"},
		{"math.roundeven", ir.F32, []ir.Attribute{f32(2.5)}, "2.000000e+00 : f32"},
		{"math.round", ir.F32, []ir.Attribute{f32(2.5)}, "3.000000e+00 : f32"},
		{"math.exp", t2, []ir.Attribute{ir.DenseFloats(t2, []float64{0.7, 0.3})}, "dense<[2.0137527, 1.34985888]> : tensor<2xf32>"},
		{"math.cos", t2, []ir.Attribute{ir.DenseAttr{Type: t2, Bits: []uint64{ir.FloatToBits(0, ir.F32)}, Splat: true}}, "dense<1.000000e+00> : tensor<2xf32>"},
		{"math.sqrt", t2, []ir.Attribute{ir.DenseFloats(t2, []float64{4, -1})}, ""},
		{"math.exp", ir.F32, []ir.Attribute{ir.Float(0.7, ir.F64)}, ""}, // mistyped constant
		{"math.absi", ir.I8, []ir.Attribute{i8(-128)}, "-128 : i8"},
		{"math.ctlz", ir.I8, []ir.Attribute{i8(1)}, "7 : i8"},
		{"math.ctlz", ir.I8, []ir.Attribute{i8(0)}, "8 : i8"},
		{"math.cttz", ir.I8, []ir.Attribute{i8(0)}, "8 : i8"},
		{"math.cttz", ir.I8, []ir.Attribute{i8(-128)}, "7 : i8"},
		{"math.ctpop", ir.I8, []ir.Attribute{i8(-1)}, "8 : i8"},
		{"math.ipowi", ir.I8, []ir.Attribute{i8(3), i8(5)}, "-13 : i8"},
		{"math.ipowi", ir.I8, []ir.Attribute{i8(0), i8(-1)}, ""},
		{"math.ipowi", ir.I8, []ir.Attribute{i8(-1), i8(-3)}, "-1 : i8"},
		{"math.ipowi", ir.I8, []ir.Attribute{i8(2), i8(-3)}, "0 : i8"},
	}
	for _, c := range cases {
		got := foldOne(t, c.op, c.typ, c.args...)
		gotS := ""
		if got != nil {
			gotS = got.String()
		}
		if gotS != c.want {
			t.Errorf("%s%v: got %q, want %q", c.op, c.args, gotS, c.want)
		}
	}
}
