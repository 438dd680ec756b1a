// Package builtin defines MLIR's builtin dialect: builtin.module, the
// top-level container of every program, and builtin.unrealized_conversion_cast,
// the placeholder that partial dialect conversions leave between type systems.
package builtin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// Op names.
const (
	ModuleOp = OpModule
	CastOp   = OpUnrealizedConversionCast
)

// Dialect is the builtin dialect.
var Dialect = &ir.Dialect{
	Name:    "builtin",
	Summary: "The module container and the conversion cast.",
	Description: "The builtin dialect holds the ops every program needs whatever its other " +
		"dialects: `module`, the top-level symbol table, and `unrealized_conversion_cast`, " +
		"which bridges values between type systems while a lowering is under way. " +
		"Its ops print without the `builtin.` prefix at the top level.",
	Ops: []*ir.OpDef{moduleDef, castDef},
}

// moduleInherent are the properties of builtin.module.
var moduleInherent = []string{ir.SymNameAttr, ir.SymVisibilityAttr}

var moduleDef = &ir.OpDef{
	Name:    ModuleOp,
	Summary: "A top-level container of operations",
	Description: "A module holds one block of ops, usually functions and other symbols; " +
		"it is a symbol table and is isolated from above, and its block needs no " +
		"terminator. It may have a name, usable as a symbol by enclosing modules. " +
		"Its discardable attributes must be dialect-prefixed (`gpu.container_module`).",
	Traits:   ir.IsolatedFromAbove | ir.NoTerminator | ir.SymbolTable | ir.SingleBlock,
	Inherent: moduleInherent,
	Attrs: []ir.ArgDoc{
		{Name: "sym_name", Doc: "optional name of the module (StringAttr)"},
		{Name: "sym_visibility", Doc: "optional visibility: \"public\", \"private\" or \"nested\""},
	},
	Example: "module @kernels attributes {gpu.container_module} {\n" +
		"  func.func private @f()\n" +
		"}",
	// Ops in a module print without the builtin prefix (nested modules).
	DefaultDialect: "builtin",
	Verify:         verifyModule,
	Parse:          parseModule,
	Print:          printModule,
}

var castDef = &ir.OpDef{
	Name:    CastOp,
	Summary: "A cast between types that a conversion has not resolved yet",
	Description: "Turns any number of values of some types into values of other types, " +
		"with no defined semantics: it only marks, during a dialect conversion, where " +
		"values still cross between the source and target type systems. A finished " +
		"lowering leaves none behind. With no operands it materialises a value of the " +
		"result type out of nothing.",
	Traits:   ir.Pure,
	Operands: []ir.ArgDoc{{Name: "inputs", Doc: "any number of values of any type"}},
	Results:  []ir.ArgDoc{{Name: "outputs", Doc: "any number of values of any type"}},
	Example:  "%0 = builtin.unrealized_conversion_cast %a, %b : f32, i32 to i64\n%1 = builtin.unrealized_conversion_cast to i32",
	Parse:    parseCast,
	Print:    printCast,
	Fold:     foldCast,
	Verify: func(op *ir.Operation) error {
		if op.NumResults() == 0 {
			return fmt.Errorf("expected at least one result for cast operation")
		}
		return nil
	},
}

// ctx registers the ops this package creates without a caller's context.
var ctx = ir.NewContext(Dialect)

// NewModule returns a detached, unnamed module with an empty body block.
func NewModule(loc ir.Location) *ir.Operation {
	r := ir.NewRegion()
	r.Append(ir.NewBlock())
	return ir.NewOperation(ctx, ir.OperationState{Name: ModuleOp, Loc: loc, Regions: []*ir.Region{r}})
}

// ModuleBody returns m's body block, creating it when m's region is empty.
func ModuleBody(m *ir.Operation) *ir.Block {
	r := m.Region(0)
	if r.Empty() {
		r.Append(ir.NewBlock())
	}
	return r.Front()
}

func verifyModule(op *ir.Operation) error {
	if op.NumOperands() != 0 || op.NumResults() != 0 {
		return fmt.Errorf("requires zero operands and results")
	}
	if op.NumRegions() != 1 {
		return fmt.Errorf("requires one region")
	}
	r := op.Region(0)
	if b := r.Front(); b == nil || b != r.Back() {
		return fmt.Errorf("region #0 ('bodyRegion') failed to verify constraint: region with 1 blocks")
	} else if b.NumArguments() != 0 {
		return fmt.Errorf("region should have no arguments")
	}
	for _, name := range []string{ir.SymNameAttr, ir.SymVisibilityAttr} {
		if a := op.Attr(name); a != nil {
			if _, ok := a.(ir.StringAttr); !ok {
				return fmt.Errorf("attribute '%s' failed to satisfy constraint: string attribute", name)
			}
		}
	}
	// Module attributes belong to the dialects that interpret them.
	for _, na := range op.Attributes() {
		if !strings.Contains(na.Name, ".") {
			return fmt.Errorf("can only contain attributes with dialect-prefixed names, found: '%s'", na.Name)
		}
	}
	return nil
}

// parseModule reads `module [@name] [attributes {...}] { ... }`.
func parseModule(p *ir.Parser, st *ir.OperationState) error {
	if p.IsSymbol() {
		name, err := p.ParseSymbolName()
		if err != nil {
			return err
		}
		st.Properties = st.Properties.With(ir.SymNameAttr, ir.Str(name))
	}
	attrs, err := p.ParseOptionalAttrDictWithKeyword()
	if err != nil {
		return err
	}
	st.Attributes = attrs
	// Properties spelled in the attribute dictionary are still properties.
	for _, name := range moduleInherent {
		if a := st.Attributes.Get(name); a != nil {
			st.Properties = st.Properties.With(name, a)
			st.Attributes = st.Attributes.With(name, nil)
		}
	}
	r, err := p.ParseRegion(nil, true)
	if err != nil {
		return err
	}
	if r.Empty() {
		r.Append(ir.NewBlock())
	}
	st.Regions = []*ir.Region{r}
	return nil
}

func printModule(p *ir.Printer, op *ir.Operation) {
	if name, ok := op.Properties().Get(ir.SymNameAttr).(ir.StringAttr); ok {
		p.Write(" ")
		p.PrintSymbolName(name.Value)
	}
	// The declarative syntax prints the remaining properties with the
	// discardable attributes.
	attrs := op.Attributes()
	for _, na := range op.Properties() {
		if na.Name != ir.SymNameAttr {
			attrs = attrs.With(na.Name, na.Value)
		}
	}
	p.PrintAttrDictWithKeyword(attrs)
	p.Write(" ")
	p.PrintRegion(op.Region(0), false, false)
}

// parseCast reads `[%a, %b : f32, i32] to i64 [attr-dict]`.
func parseCast(p *ir.Parser, st *ir.OperationState) error {
	operands, err := p.ParseOperandList()
	if err != nil {
		return err
	}
	var inTypes []ir.Type
	pos := p.Pos()
	if len(operands) > 0 {
		if inTypes, err = p.ParseColonTypeList(); err != nil {
			return err
		}
	}
	if err := p.Expect("to"); err != nil {
		return err
	}
	if st.ResultTypes, err = p.ParseTypeList(); err != nil {
		return err
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	st.Operands, err = p.ResolveAll(operands, inTypes, pos)
	return err
}

func printCast(p *ir.Printer, op *ir.Operation) {
	if op.NumOperands() > 0 {
		p.Write(" ")
		p.PrintOperands(op.Operands())
		p.Write(" : ")
		p.PrintTypes(op.OperandTypes())
	}
	p.Write(" to ")
	p.PrintTypes(op.ResultTypes())
	p.PrintAttrDict(op.Attributes())
}

// foldCast folds a cast whose input types are its result types to its
// inputs, and a cast undoing another, cast(cast(x : A to B) : B to A), to x.
func foldCast(op *ir.Operation, _ []ir.Attribute) []ir.FoldResult {
	if op.NumResults() == 0 {
		return nil
	}
	src := op.Operands()
	if !slices.Equal(op.OperandTypes(), op.ResultTypes()) {
		if len(src) == 0 {
			return nil
		}
		in := src[0].DefiningOp()
		if in == nil || in.Name() != CastOp || !slices.Equal(in.Results(), src) {
			return nil
		}
		src = in.Operands()
	}
	if !slices.Equal(valueTypes(src), op.ResultTypes()) {
		return nil
	}
	out := make([]ir.FoldResult, len(src))
	for i, v := range src {
		out[i] = ir.FoldResult{Value: v}
	}
	return out
}

func valueTypes(vs []*ir.Value) []ir.Type {
	ts := make([]ir.Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type()
	}
	return ts
}
