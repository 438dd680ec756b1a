package ir

import (
	"fmt"
	"strings"
	"testing"
)

// This file defines a small dialect used by the tests of the verifier, the
// symbol tables and the rewrite drivers, so that they do not depend on the
// real dialects (which import this package).

// testBuiltin stands in for dialects/builtin.
var testBuiltin = &Dialect{Name: "builtin", Ops: []*OpDef{
	{Name: "builtin.module", Traits: SymbolTable | NoTerminator | SingleBlock | IsolatedFromAbove},
	{Name: "builtin.unrealized_conversion_cast", Traits: Pure},
}}

// testDialectOps is the "test" dialect: data, one row per op.
var testDialectOps = []*OpDef{
	{Name: "test.module", Traits: SymbolTable | NoTerminator | SingleBlock, Inherent: []string{"sym_name"}},
	{Name: "test.func", Traits: IsolatedFromAbove | Symbol, Inherent: []string{"sym_name", "function_type", "sym_visibility"}},
	{Name: "test.return", Traits: Terminator | ReturnLike | Pure, Verify: verifyTestReturn},
	{Name: "test.constant", Traits: ConstantLike | Pure, Inherent: []string{"value"},
		Fold: func(op *Operation, _ []Attribute) []FoldResult { return []FoldResult{{Attr: op.Attr("value")}} }},
	{Name: "test.add", Traits: Pure | Commutative | SameOperandsAndResultType, Fold: foldTestAdd},
	{Name: "test.mul", Traits: Pure | Commutative | SameOperandsAndResultType, Fold: foldTestMul},
	{Name: "test.neg", Traits: Pure | SameOperandsAndResultType | Involution},
	{Name: "test.print", Traits: 0},
	{Name: "test.br", Traits: Terminator},
	{Name: "test.cond_br", Traits: Terminator},
	{Name: "test.graph", Traits: GraphRegion | NoTerminator},
	{Name: "test.single", Traits: SingleBlock | NoTerminator},
	{Name: "test.region", Traits: 0},
	{Name: "test.yield", Traits: Terminator | ReturnLike | Pure},
	{Name: "test.noterm", Traits: NoTerminator},
	{Name: "test.use", Traits: 0, Inherent: []string{"callee"}},
	{Name: "test.bad", Traits: Pure, Verify: func(op *Operation) error {
		return fmt.Errorf("is always bad")
	}},
	{Name: "test.located", Verify: func(op *Operation) error {
		return Errorf(FileLineColLoc{File: "elsewhere", Line: 7, Col: 1}, "custom located error")
	}},
}

var testDialect = &Dialect{
	Name: "test",
	Ops:  testDialectOps,
	MaterializeConstant: func(b *Builder, a Attribute, t Type, loc Location) *Operation {
		if _, ok := a.(IntegerAttr); !ok {
			return nil
		}
		return b.Op("test.constant", loc, nil, []Type{t}, NamedAttr{Name: "value", Value: a})
	},
}

// verifyTestReturn checks the operand count against the enclosing test.func.
func verifyTestReturn(op *Operation) error {
	fn := op.ParentOp()
	if fn == nil || fn.Name() != "test.func" {
		return nil
	}
	ft, ok := fn.Attr("function_type").(TypeAttr)
	if !ok {
		return nil
	}
	want := len(ft.Type.(*FunctionType).Results)
	if op.NumOperands() != want {
		return fmt.Errorf("has %d operands, but enclosing function returns %d", op.NumOperands(), want)
	}
	return nil
}

func intOperands(operands []Attribute) ([]IntegerAttr, bool) {
	out := make([]IntegerAttr, len(operands))
	for i, a := range operands {
		ia, ok := a.(IntegerAttr)
		if !ok {
			return nil, false
		}
		out[i] = ia
	}
	return out, true
}

// foldTestAdd folds c1+c2 to a constant and x+0 to x.
func foldTestAdd(op *Operation, operands []Attribute) []FoldResult {
	if c, ok := intOperands(operands); ok {
		return []FoldResult{{Attr: Int(c[0].Value+c[1].Value, c[0].Type)}}
	}
	for i, a := range operands {
		if ia, ok := a.(IntegerAttr); ok && ia.Value == 0 {
			return []FoldResult{{Value: op.Operand(1 - i)}}
		}
	}
	return nil
}

// foldTestMul folds c1*c2 to a constant.
func foldTestMul(op *Operation, operands []Attribute) []FoldResult {
	if c, ok := intOperands(operands); ok {
		return []FoldResult{{Attr: Int(c[0].Value*c[1].Value, c[0].Type)}}
	}
	return nil
}

// newTestContext returns a context with the test and builtin dialects.
func newTestContext() *Context {
	return NewContext(testBuiltin, testDialect)
}

// mustParse parses src in ctx, failing the test on error.
func mustParse(t testing.TB, ctx *Context, src string) *Operation {
	t.Helper()
	m, err := Parse(ctx, src, ParseOptions{Filename: "in.mlir"})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return m
}

// diagStrings renders err's diagnostics one per element, notes included.
func diagStrings(err error) []string {
	var out []string
	for _, d := range Diagnostics(err) {
		out = append(out, strings.ReplaceAll(d.Error(), "\n", " | "))
	}
	return out
}
