package ir

import (
	"strings"
	"testing"
)

// The conversion tests lower a "src" dialect on i64 to the test dialect on
// i32: i64 converts to i32, and src.add becomes test.add.

var srcDialect = &Dialect{Name: "src", Ops: []*OpDef{
	{Name: "src.add", Traits: Pure},
	{Name: "src.keep"},
	{Name: "src.stuck"},
}}

func narrowConverter() *TypeConverter {
	tc := &TypeConverter{}
	tc.AddConversion(func(t Type) (Type, bool) { return t, true })
	tc.AddConversion(func(t Type) (Type, bool) {
		if t == I64 {
			return I32, true
		}
		return nil, false
	})
	return tc
}

func narrowTarget(ctx *Context, tc *TypeConverter) *ConversionTarget {
	target := NewConversionTarget(ctx)
	target.AddLegalDialect("builtin")
	target.AddDynamicallyLegalDialect(tc.IsLegalOp, "test")
	target.AddDynamicallyLegalOp(func(op *Operation) bool {
		ft, ok := op.Attr("function_type").(TypeAttr)
		return ok && tc.IsLegal(ft.Type) && tc.IsLegalOp(op)
	}, "test.func")
	target.AddIllegalOp("src.add")
	return target
}

var narrowPatterns = []*ConversionPattern{
	{Name: "src-add", Root: "src.add", Rewrite: func(r *ConversionRewriter, op *Operation, operands []*Value) error {
		t, _ := r.TypeConverter().Convert(op.Result(0).Type())
		add := r.Op("test.add", op.Loc(), operands, []Type{t})
		r.ReplaceOp(op, add.Results())
		return nil
	}},
	{Name: "func-signature", Root: "test.func", Rewrite: func(r *ConversionRewriter, op *Operation, _ []*Value) error {
		ft := op.Attr("function_type").(TypeAttr).Type.(*FunctionType)
		in, err := r.TypeConverter().ConvertTypes(ft.Inputs)
		if err != nil {
			return err
		}
		out, err := r.TypeConverter().ConvertTypes(ft.Results)
		if err != nil {
			return err
		}
		if err := r.ConvertRegionTypes(op.Region(0), nil); err != nil {
			return err
		}
		r.ModifyInPlace(op, func() { op.SetProperty("function_type", TypeAttr{FunctionOf(in, out)}) })
		return nil
	}},
	{Name: "retype", Rewrite: func(r *ConversionRewriter, op *Operation, operands []*Value) error {
		// Any test op: rebuild it on the converted operands and types.
		if DialectOf(op.Name()) != "test" || op.NumRegions() > 0 {
			return ErrNoMatch
		}
		results, err := r.TypeConverter().ConvertTypes(op.ResultTypes())
		if err != nil {
			return err
		}
		n := r.Create(OperationState{Name: op.Name(), Loc: op.Loc(), Operands: operands, ResultTypes: results,
			Properties: op.Properties(), Attributes: op.Attributes(), Successors: op.Successors()})
		r.ReplaceOp(op, n.Results())
		return nil
	}},
}

const narrowSrc = `
"test.func"() <{sym_name = "f", function_type = (i64, i64) -> i64}> ({
^bb0(%a: i64, %b: i64):
  %0 = "src.add"(%a, %b) : (i64, i64) -> i64
  "test.cond_br"(%0)[^bb1, ^bb2] : (i64) -> ()
^bb1:
  %1 = "test.mul"(%0, %a) : (i64, i64) -> i64
  "test.return"(%1) : (i64) -> ()
^bb2:
  "test.return"(%b) : (i64) -> ()
}) : () -> ()
`

func runConversion(t *testing.T, src string, full bool) (before, after string, err error) {
	t.Helper()
	ctx := NewContext(testBuiltin, testDialect, srcDialect)
	m := mustParse(t, ctx, src)
	tc := narrowConverter()
	before = Sprint(m, PrintOptions{Generic: true})
	if full {
		err = ApplyFullConversion(m, narrowTarget(ctx, tc), narrowPatterns, tc)
	} else {
		err = ApplyPartialConversion(m, narrowTarget(ctx, tc), narrowPatterns, tc)
	}
	if verr := Verify(m); verr != nil {
		t.Fatalf("invalid IR after conversion (err %v): %v\n%s", err, verr, Sprint(m, PrintOptions{Generic: true}))
	}
	return before, Sprint(m, PrintOptions{Generic: true}), err
}

func TestFullConversion(t *testing.T) {
	_, got, err := runConversion(t, narrowSrc, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `"builtin.module"() ({
  "test.func"() <{function_type = (i32, i32) -> i32, sym_name = "f"}> ({
  ^bb0(%arg0: i32, %arg1: i32):
    %0 = "test.add"(%arg0, %arg1) : (i32, i32) -> i32
    "test.cond_br"(%0)[^bb1, ^bb2] : (i32) -> ()
  ^bb1:  // pred: ^bb0
    %1 = "test.mul"(%0, %arg0) : (i32, i32) -> i32
    "test.return"(%1) : (i32) -> ()
  ^bb2:  // pred: ^bb0
    "test.return"(%arg1) : (i32) -> ()
  }) : () -> ()
}) : () -> ()
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestFullConversionFailure(t *testing.T) {
	src := strings.Replace(narrowSrc, `"test.return"(%b) : (i64) -> ()`, `%s = "src.stuck"(%b) : (i64) -> i64
  "test.return"(%s) : (i64) -> ()`, 1)
	before, after, err := runConversion(t, src, true)
	want := "in.mlir:10:8: error: failed to legalize operation 'src.stuck'"
	if got := diagStrings(err); len(got) != 1 || got[0] != want {
		t.Errorf("err = %q, want %q", got, want)
	}
	if after != before {
		t.Errorf("IR changed by a failed conversion:\n%s", after)
	}
}

func TestPartialConversion(t *testing.T) {
	src := strings.Replace(narrowSrc, `"test.return"(%b) : (i64) -> ()`, `%s = "src.keep"(%b) : (i64) -> i64
  "test.return"(%s) : (i64) -> ()`, 1)
	_, got, err := runConversion(t, src, false)
	if err != nil {
		t.Fatal(err)
	}
	// src.keep is unknown to the target: it stays, reading and producing
	// i64 through casts.
	for _, want := range []string{
		`%0 = "builtin.unrealized_conversion_cast"(%arg1) : (i32) -> i64`,
		`%3 = "src.keep"(%0) : (i64) -> i64`,
		`%4 = "builtin.unrealized_conversion_cast"(%3) : (i64) -> i32`,
		`"test.return"(%4) : (i32) -> ()`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in:\n%s", want, got)
		}
	}
	if strings.Count(got, "unrealized_conversion_cast") != 2 {
		t.Errorf("want exactly two casts left:\n%s", got)
	}

	// The same IR fails a full conversion: src.keep is not legal.
	_, _, err = runConversion(t, src, true)
	if got := diagStrings(err); len(got) != 1 || !strings.Contains(got[0], "failed to legalize operation 'src.keep'") {
		t.Errorf("full conversion: %q", got)
	}
}

func TestPartialConversionIllegal(t *testing.T) {
	ctx := NewContext(testBuiltin, testDialect, srcDialect)
	m := mustParse(t, ctx, `%0 = "src.add"() : () -> i64`)
	target := NewConversionTarget(ctx)
	target.AddIllegalOp("src.add")
	before := Sprint(m, PrintOptions{Generic: true})
	err := ApplyPartialConversion(m, target, nil, nil)
	want := "in.mlir:1:6: error: failed to legalize operation 'src.add' that was explicitly marked illegal"
	if got := diagStrings(err); len(got) != 1 || got[0] != want {
		t.Errorf("err = %q, want %q", got, want)
	}
	if after := Sprint(m, PrintOptions{Generic: true}); after != before {
		t.Errorf("IR changed:\n%s", after)
	}
}

// TestConversionPatternsDoNotRecurse checks that a pattern is not applied
// to the ops it built, which would loop forever.
func TestConversionPatternsDoNotRecurse(t *testing.T) {
	ctx := NewContext(testBuiltin, testDialect, srcDialect)
	m := mustParse(t, ctx, `%0 = "src.stuck"() : () -> i64`)
	target := NewConversionTarget(ctx)
	target.AddIllegalOp("src.stuck")
	again := &ConversionPattern{Name: "again", Root: "src.stuck", Rewrite: func(r *ConversionRewriter, op *Operation, _ []*Value) error {
		n := r.Op("src.stuck", op.Loc(), nil, op.ResultTypes())
		r.ReplaceOp(op, n.Results())
		return nil
	}}
	err := ApplyPartialConversion(m, target, []*ConversionPattern{again}, nil)
	if got := diagStrings(err); len(got) != 1 || !strings.Contains(got[0], "failed to legalize operation 'src.stuck'") {
		t.Errorf("err = %q", got)
	}
}

func TestConversionTargetLegality(t *testing.T) {
	ctx := newTestContext()
	target := NewConversionTarget(ctx)
	target.AddLegalDialect("test")
	target.AddIllegalOp("test.neg")
	target.AddDynamicallyLegalOp(func(op *Operation) bool { return op.NumOperands() == 0 }, "test.print")
	op := func(name string, n int) *Operation {
		vals := make([]*Value, n)
		for i := range vals {
			vals[i] = NewBlock(I32).Argument(0)
		}
		return NewOperation(ctx, OperationState{Name: name, Operands: vals})
	}
	for _, tc := range []struct {
		op   *Operation
		want Legality
	}{
		{op("test.add", 0), Legal},
		{op("test.neg", 0), Illegal},
		{op("test.print", 0), Legal},
		{op("test.print", 1), Illegal},
		{op("other.op", 0), Unknown},
	} {
		if got := target.Legality(tc.op); got != tc.want {
			t.Errorf("Legality(%s with %d operands) = %v, want %v", tc.op.Name(), tc.op.NumOperands(), got, tc.want)
		}
	}
	target.MarkUnknownOpDynamicallyLegal(func(*Operation) bool { return true })
	if got := target.Legality(op("other.op", 0)); got != Legal {
		t.Errorf("unknown op with a fallback: %v", got)
	}
}
