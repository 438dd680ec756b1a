package arith_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/ir"
)

// syntaxCases exercise every op's pretty syntax, with and without flags
// and extra attributes, on scalars, vectors and tensors.
const syntaxCases = `
func.func @f(%a: i32, %b: i32, %x: f32, %y: f32, %v: vector<4xf32>, %c: i1, %t: tensor<2xi32>,
             %i: index, %cv: vector<4xi1>, %va: vector<4xi32>, %h: f16, %tf: tensor<?xf32>) {
  %0 = arith.addi %a, %b : i32
  %1 = arith.addi %a, %b overflow<nsw> : i32
  %2 = arith.subi %a, %b overflow<nsw, nuw> : i32
  %3 = arith.muli %a, %b overflow<nuw> : i32
  %4 = arith.shli %a, %b overflow<nsw, nuw> : i32
  %5 = arith.divsi %a, %b : i32
  %6 = arith.divui %a, %b : i32
  %7 = arith.remsi %a, %b : i32
  %8 = arith.remui %a, %b : i32
  %9 = arith.ceildivsi %a, %b : i32
  %10 = arith.ceildivui %a, %b : i32
  %11 = arith.floordivsi %a, %b : i32
  %12 = arith.maxsi %a, %b : i32
  %13 = arith.maxui %a, %b : i32
  %14 = arith.minsi %a, %b : i32
  %15 = arith.minui %a, %b : i32
  %16 = arith.andi %a, %b {foo = 1} : i32
  %17 = arith.ori %a, %b : i32
  %18 = arith.xori %a, %b : i32
  %19 = arith.shrsi %a, %b : i32
  %20 = arith.shrui %a, %b : i32
  %21 = arith.addf %x, %y : f32
  %22 = arith.subf %x, %y fastmath<fast> : f32
  %23 = arith.mulf %x, %y fastmath<nnan,ninf> : f32
  %24 = arith.divf %v, %v fastmath<reassoc,contract> {foo} : vector<4xf32>
  %25 = arith.remf %x, %y : f32
  %26 = arith.maximumf %x, %y : f32
  %27 = arith.minimumf %x, %y : f32
  %28 = arith.maxnumf %x, %y : f32
  %29 = arith.minnumf %tf, %tf : tensor<?xf32>
  %30 = arith.negf %x fastmath<nsz> : f32
  %31 = arith.cmpi slt, %a, %b : i32
  %32 = arith.cmpi uge, %t, %t : tensor<2xi32>
  %33 = arith.cmpf olt, %x, %y : f32
  %34 = arith.cmpf uno, %v, %v fastmath<fast> : vector<4xf32>
  %35 = arith.select %c, %a, %b : i32
  %36 = arith.select %cv, %va, %va : vector<4xi1>, vector<4xi32>
  %37 = arith.select %c, %t, %t : tensor<2xi32>
  %38 = arith.extsi %a : i32 to i64
  %39 = arith.extui %va : vector<4xi32> to vector<4xi64>
  %40 = arith.trunci %a {foo} : i32 to i8
  %41 = arith.extf %x fastmath<fast> : f32 to f64
  %42 = arith.truncf %x : f32 to f16
  %43 = arith.truncf %x toward_zero fastmath<fast> : f32 to bf16
  %44 = arith.sitofp %a : i32 to f32
  %45 = arith.uitofp %a : i32 to f16
  %46 = arith.fptosi %x : f32 to i64
  %47 = arith.fptoui %h : f16 to i8
  %48 = arith.index_cast %a : i32 to index
  %49 = arith.index_castui %i : index to i64
  %50 = arith.bitcast %x : f32 to i32
  %51 = arith.constant 1.5 : f32
  %52 = arith.constant -7 : i32
  %53 = arith.constant true
  %54 = arith.constant dense<[1, 2]> : tensor<2xi32>
  %55 = arith.constant {foo} 3 : index
  %56 = arith.constant dense<1.0> : vector<4xf32>
  %57 = arith.constant 0x7FC00000 : f32
  %58 = arith.constant -0.0 : f16
  %59 = arith.constant dense<[[true, false]]> : tensor<1x2xi1>
  %60 = arith.constant dense<[(1.0, 2.0), (3.0, -4.5)]> : tensor<2xcomplex<f32>>
  %61 = arith.constant dense<(1, -2)> : tensor<2x2xcomplex<i16>>
  return
}
`

// TestSyntaxMatchesMLIR checks that our generic form of the pretty input is
// mlir-opt's, and that our pretty form reads back to the same generic form.
func TestSyntaxMatchesMLIR(t *testing.T) {
	ctx := newContext()
	m := parse(t, ctx, syntaxCases)
	if err := ir.Verify(m); err != nil {
		t.Fatalf("verify: %v", err)
	}
	got := ir.Sprint(m, ir.PrintOptions{Generic: true})
	want := mlirOpt(t, syntaxCases, "--mlir-print-op-generic")
	if got != want {
		t.Errorf("generic form differs from mlir-opt's\n%s", lineDiff(got, want))
	}
	pretty := ir.Sprint(m, ir.PrintOptions{})
	again := ir.Sprint(parse(t, ctx, pretty), ir.PrintOptions{Generic: true})
	if again != got {
		t.Errorf("pretty form does not read back\n%s", lineDiff(again, got))
	}
	// mlir-opt reads our pretty form and prints the same generic form.
	if theirs := mlirOpt(t, pretty, "--mlir-print-op-generic"); theirs != want {
		t.Errorf("mlir-opt reads our pretty form differently\n%s", lineDiff(theirs, want))
	}
	// Our pretty form is mlir-opt's, but for the names of constants' results.
	theirPretty := mlirOpt(t, syntaxCases)
	if a, b := stripNames(pretty), stripNames(theirPretty); a != b {
		t.Errorf("pretty form differs from mlir-opt's\n%s", lineDiff(a, b))
	}
}

// stripNames removes "%name = " prefixes, which differ only in spelling.
func stripNames(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, " = "); i >= 0 && strings.HasPrefix(strings.TrimSpace(l), "%") {
			l = l[i+3:]
		}
		if strings.Contains(l, "func.func") || strings.TrimSpace(l) == "" {
			continue
		}
		out = append(out, strings.TrimSpace(l))
	}
	return strings.Join(out, "\n")
}

func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			b.WriteString("got:  " + gl + "\nwant: " + wl + "\n")
		}
	}
	return b.String()
}

// TestGenericWithoutDefaults checks that ops read in generic form without
// their default flags print in pretty form as upstream does.
func TestGenericWithoutDefaults(t *testing.T) {
	src := `"test.f"() ({
^bb0(%x: f32, %a: i32):
  %0 = "arith.addf"(%x, %x) : (f32, f32) -> f32
  %1 = "arith.addi"(%a, %a) {overflowFlags = #arith.overflow<nuw>} : (i32, i32) -> i32
  "test.use"(%0, %1) : (f32, i32) -> ()
}) : () -> ()
`
	ctx := newContext()
	ctx.AllowUnregistered = true
	m := parse(t, ctx, src)
	got := ir.Sprint(m, ir.PrintOptions{})
	for _, want := range []string{"arith.addf %arg0, %arg0 : f32", "arith.addi %arg1, %arg1 overflow<nuw> : i32"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{`%0 = arith.cmpi foo, %a, %a : i32`, "expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, slt"},
		{`%0 = arith.cmpi %a, %a : i32`, "one of the following enum values"},
		{`%0 = arith.addf %x, %x fastmath<slow> : f32`, "unknown fastmath flag 'slow'"},
		{`%0 = arith.addi %a, %a overflow<nsz> : i32`, "unknown overflow flag 'nsz'"},
		{`%0 = arith.truncf %x sideways : f32 to f16`, "invalid rounding mode 'sideways'"},
		{`%0 = arith.constant "s"`, "value must be an integer, float, or elements attribute"},
		{`%0 = arith.select %a, %a, %a : i32, i32, i32`, "expected a result type"},
	}
	for _, c := range cases {
		src := "func.func @f(%a: i32, %x: f32) {\n  " + c.src + "\n  return\n}\n"
		_, err := ir.ParseString(newContext(), src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want %q", c.src, err, c.want)
		}
	}
}

func TestFastMath(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{nil, "#arith.fastmath<none>"},
		{[]string{"contract", "nnan"}, "#arith.fastmath<nnan,contract>"},
		{[]string{"nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"}, "#arith.fastmath<fast>"},
		{[]string{"none", "afn"}, "#arith.fastmath<afn>"},
	} {
		got, err := arith.FastMath(c.flags...)
		if err != nil || got.Text != c.want {
			t.Errorf("FastMath(%v) = %v, %v; want %s", c.flags, got, err, c.want)
		}
	}
	if _, err := arith.FastMath("quick"); err == nil {
		t.Error("FastMath accepted an unknown flag")
	}
}

func TestHasFastMath(t *testing.T) {
	src := `func.func @f(%x: f32) -> f32 {
  %0 = arith.addf %x, %x fastmath<afn> : f32
  %1 = arith.addf %0, %x fastmath<nnan,contract> : f32
  %2 = arith.addf %1, %x fastmath<fast> : f32
  %3 = arith.addf %2, %x : f32
  return %3 : f32
}`
	m, err := ir.Parse(newContext(), src, ir.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var adds []*ir.Operation
	m.Walk(func(o *ir.Operation) bool {
		if o.Name() == "arith.addf" {
			adds = append(adds, o)
		}
		return true
	})
	for _, c := range []struct {
		op   int
		flag string
		want bool
	}{
		{0, "afn", true}, {1, "afn", false}, {1, "nnan", true}, {2, "afn", true}, {3, "afn", false},
		{0, "none", false}, {0, "quick", false},
	} {
		if got := arith.HasFastMath(adds[c.op], c.flag); got != c.want {
			t.Errorf("HasFastMath(%s, %q) = %v, want %v", adds[c.op].Attr(arith.FastMathAttr), c.flag, got, c.want)
		}
	}
}
