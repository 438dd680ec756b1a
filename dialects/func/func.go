// Package funcs defines MLIR's func dialect: functions (func.func), returns,
// direct and indirect calls, and function constants, with upstream MLIR's
// syntax and verification rules. The package lives in dialects/func; it is
// named funcs because func is a Go keyword.
package funcs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// Op names.
const (
	FuncOp         = OpFunc
	ReturnOp       = OpReturn
	CallOp         = OpCall
	CallIndirectOp = OpCallIndirect
	ConstantOp     = OpConstant
)

// Names of func.func's properties (besides sym_name and sym_visibility).
const (
	FunctionTypeAttr = "function_type"
	ArgAttrsAttr     = "arg_attrs"
	ResAttrsAttr     = "res_attrs"
	// CalleeAttr is func.call's callee symbol.
	CalleeAttr = "callee"
)

// Dialect is the func dialect.
var Dialect = &ir.Dialect{
	Name:    "func",
	Summary: "Functions, calls and returns.",
	Description: "The func dialect holds function definitions and the ops that call " +
		"and return from them, with the syntax and rules of upstream MLIR's func dialect.",
	Ops: []*ir.OpDef{funcDef, returnDef, callDef, callIndirectDef, constantDef},
}

var funcInherent = []string{ir.SymNameAttr, FunctionTypeAttr, ir.SymVisibilityAttr, ArgAttrsAttr, ResAttrsAttr}

var funcDef = &ir.OpDef{
	Name:    FuncOp,
	Summary: "An operation with a name containing a single SSACFG region",
	Description: "Defines a function: a symbol named `sym_name` whose type is " +
		"`function_type`. A function with a body holds one region whose entry block " +
		"takes the function's arguments; an external function has no body and must " +
		"not be public. Argument and result attributes are kept in `arg_attrs` and " +
		"`res_attrs`, one dictionary per argument or result. Ops in the body may omit " +
		"the `func.` prefix in the custom syntax (`return`, `call`).",
	Traits:   ir.IsolatedFromAbove | ir.Symbol,
	Inherent: funcInherent,
	Attrs: []ir.ArgDoc{
		{Name: "sym_name", Doc: "the function's name (StringAttr)"},
		{Name: "function_type", Doc: "the function's type (TypeAttr of a function type)"},
		{Name: "sym_visibility", Doc: "optional \"public\" (the default), \"private\" or \"nested\""},
		{Name: "arg_attrs", Doc: "optional array with one dictionary of attributes per argument"},
		{Name: "res_attrs", Doc: "optional array with one dictionary of attributes per result"},
	},
	Example: "func.func private @ext(f32) -> f32\n" +
		"func.func @f(%arg0: f32 {graph.name = \"x\"}) -> f32 {\n" +
		"  %0 = call @ext(%arg0) : (f32) -> f32\n" +
		"  return %0 : f32\n" +
		"}",
	DefaultDialect: "func",
	Verify:         verifyFunc,
	Parse:          parseFunc,
	Print:          printFunc,
}

var returnDef = &ir.OpDef{
	Name:    ReturnOp,
	Summary: "Function return operation",
	Description: "Ends the body of a func.func, returning its operands, whose number " +
		"and types must match the function's results.",
	Traits:   ir.Pure | ir.Terminator | ir.ReturnLike,
	Operands: []ir.ArgDoc{{Name: "operands", Doc: "the values returned, one per function result"}},
	Example:  "func.func @f(%arg0: f32, %arg1: i32) -> (f32, i32) {\n  return %arg0, %arg1 : f32, i32\n}",
	Verify:   verifyReturn,
	Parse:    ir.ParseReturnLike,
	Print:    ir.PrintReturnLike,
}

var callDef = &ir.OpDef{
	Name:    CallOp,
	Summary: "Call operation",
	Description: "Calls the func.func named by `callee`, found in the nearest enclosing " +
		"symbol table, with the operands; operand and result types must match the " +
		"callee's type.",
	Inherent: []string{CalleeAttr},
	Operands: []ir.ArgDoc{{Name: "operands", Doc: "the arguments, one per callee input"}},
	Results:  []ir.ArgDoc{{Name: "results", Doc: "the callee's results"}},
	Attrs:    []ir.ArgDoc{{Name: "callee", Doc: "the function called (FlatSymbolRefAttr)"}},
	Example:  "%0:2 = func.call @f(%a, %b) : (f32, i32) -> (f32, i32)",
	Verify:   verifyCall,
	Parse:    parseCall,
	Print:    printCall,
}

var callIndirectDef = &ir.OpDef{
	Name:    CallIndirectOp,
	Summary: "Indirect call operation",
	Description: "Calls the function value given as the first operand with the other " +
		"operands, whose types, like the results', must match the callee's type.",
	Operands: []ir.ArgDoc{
		{Name: "callee", Doc: "a value of function type"},
		{Name: "callee_operands", Doc: "the arguments, one per callee input"},
	},
	Results: []ir.ArgDoc{{Name: "results", Doc: "the callee's results"}},
	Example: "%f = func.constant @g : (f32) -> f32\n%0 = func.call_indirect %f(%a) : (f32) -> f32",
	Verify:  verifyCallIndirect,
	Parse:   parseCallIndirect,
	Print:   printCallIndirect,
}

var constantDef = &ir.OpDef{
	Name:    ConstantOp,
	Summary: "Constant",
	Description: "Produces a value of function type referring to the func.func named " +
		"by `value`, whose type must be the result type.",
	Traits:   ir.Pure | ir.ConstantLike,
	Inherent: []string{"value"},
	Results:  []ir.ArgDoc{{Name: "result", Doc: "the function, as a value of its type"}},
	Attrs:    []ir.ArgDoc{{Name: "value", Doc: "the function referred to (FlatSymbolRefAttr)"}},
	Example:  "%f = func.constant @g : (f32) -> f32",
	Verify:   verifyConstant,
	Parse:    parseConstant,
	Print:    printConstant,
	Fold: func(op *ir.Operation, _ []ir.Attribute) []ir.FoldResult {
		return []ir.FoldResult{{Attr: op.Attr("value")}}
	},
}

// Type returns the function_type of a func.func, or nil when it has none.
func Type(op *ir.Operation) *ir.FunctionType {
	if ta, ok := op.Attr(FunctionTypeAttr).(ir.TypeAttr); ok {
		ft, _ := ta.Type.(*ir.FunctionType)
		return ft
	}
	return nil
}

// UpdateType sets the function_type of the func.func op from its entry
// block's argument types and the types its return passes (the results it
// has when the body does not end in a return), as a property or, where
// the op keeps it so, an attribute.
func UpdateType(op *ir.Operation) error {
	ft, body := Type(op), Body(op)
	if ft == nil || body == nil {
		return fmt.Errorf("%s @%s has no function_type or no body", op.Name(), ir.SymbolName(op))
	}
	ins := make([]ir.Type, body.NumArguments())
	for i, a := range body.Arguments() {
		ins[i] = a.Type()
	}
	results := ft.Results
	if ret := body.Terminator(); ret != nil && ret.HasTrait(ir.ReturnLike) {
		results = ret.OperandTypes()
	}
	t := ir.TypeAttr{Type: ir.FunctionOf(ins, results)}
	set := func(name string, a ir.Attribute) {
		if op.Properties().Get(name) != nil {
			op.SetProperty(name, a)
		} else {
			op.SetAttr(name, a)
		}
	}
	set(FunctionTypeAttr, t)
	// Arguments and results appended to the function (weights lifted
	// to arguments: onnx.LiftWeights) get empty attribute dictionaries,
	// so that arg_attrs and res_attrs (JAX's exports carry them) keep one
	// entry each.
	for _, a := range []struct {
		name string
		n    int
	}{{ArgAttrsAttr, len(ins)}, {ResAttrsAttr, len(results)}} {
		if arr, ok := op.Attr(a.name).(ir.ArrayAttr); ok && len(arr) < a.n {
			grown := slices.Clone(arr)
			for len(grown) < a.n {
				grown = append(grown, ir.Dict())
			}
			set(a.name, grown)
		}
	}
	return nil
}

// Body returns the entry block of a func.func, or nil for an external function.
func Body(op *ir.Operation) *ir.Block {
	if op.NumRegions() == 0 {
		return nil
	}
	return op.Region(0).Front()
}

// IsExternal reports whether a func.func is a declaration without a body.
func IsExternal(op *ir.Operation) bool { return op.NumRegions() == 0 || op.Region(0).Empty() }

// NewFunc inserts a func.func named name of type ft at b's insertion point
// and returns it with its entry block, whose arguments are ft's inputs.
func NewFunc(b *ir.Builder, name string, ft *ir.FunctionType, loc ir.Location) (*ir.Operation, *ir.Block) {
	entry := ir.NewBlock(ft.Inputs...)
	r := ir.NewRegion()
	r.Append(entry)
	op := b.Create(ir.OperationState{
		Name: FuncOp,
		Loc:  loc,
		Properties: ir.Dict(
			ir.NamedAttr{Name: ir.SymNameAttr, Value: ir.Str(name)},
			ir.NamedAttr{Name: FunctionTypeAttr, Value: ir.TypeAttr{Type: ft}},
		),
		Regions: []*ir.Region{r},
	})
	return op, entry
}

// NewExternalFunc inserts a private func.func declaration (no body).
func NewExternalFunc(b *ir.Builder, name string, ft *ir.FunctionType, loc ir.Location) *ir.Operation {
	return b.Create(ir.OperationState{
		Name: FuncOp,
		Loc:  loc,
		Properties: ir.Dict(
			ir.NamedAttr{Name: ir.SymNameAttr, Value: ir.Str(name)},
			ir.NamedAttr{Name: FunctionTypeAttr, Value: ir.TypeAttr{Type: ft}},
			ir.NamedAttr{Name: ir.SymVisibilityAttr, Value: ir.Str("private")},
		),
		Regions: []*ir.Region{ir.NewRegion()},
	})
}

// Return inserts func.return of vals.
func Return(b *ir.Builder, loc ir.Location, vals ...*ir.Value) *ir.Operation {
	return b.Op(ReturnOp, loc, vals, nil)
}

// Call inserts a func.call of the function named callee, whose results have
// the given types.
func Call(b *ir.Builder, loc ir.Location, callee string, results []ir.Type, args ...*ir.Value) *ir.Operation {
	return b.Op(CallOp, loc, args, results, ir.NamedAttr{Name: CalleeAttr, Value: ir.SymbolRef(callee)})
}

// CallFunc inserts a func.call of the func.func fn.
func CallFunc(b *ir.Builder, loc ir.Location, fn *ir.Operation, args ...*ir.Value) *ir.Operation {
	return Call(b, loc, ir.SymbolName(fn), Type(fn).Results, args...)
}

// --- func.func ---

func verifyFunc(op *ir.Operation) error {
	ta, ok := op.Attr(FunctionTypeAttr).(ir.TypeAttr)
	if op.Attr(FunctionTypeAttr) == nil {
		return fmt.Errorf("requires attribute 'function_type'")
	}
	ft, isFn := ta.Type.(*ir.FunctionType)
	if !ok || !isFn {
		return fmt.Errorf("attribute 'function_type' failed to satisfy constraint: type attribute of function type")
	}
	if op.NumRegions() != 1 {
		return fmt.Errorf("requires one region")
	}
	vis := "public"
	if a := op.Attr(ir.SymVisibilityAttr); a != nil {
		s, ok := a.(ir.StringAttr)
		if !ok || (s.Value != "public" && s.Value != "private" && s.Value != "nested") {
			return fmt.Errorf(`visibility expected to be one of ["public", "private", "nested"], but got %s`, a)
		}
		vis = s.Value
	}
	if err := verifyArgAttrs(op, ArgAttrsAttr, "argument", len(ft.Inputs)); err != nil {
		return err
	}
	if err := verifyArgAttrs(op, ResAttrsAttr, "result", len(ft.Results)); err != nil {
		return err
	}
	if IsExternal(op) {
		if vis == "public" {
			return fmt.Errorf("symbol declaration cannot have public visibility")
		}
		return nil
	}
	entry := op.Region(0).Front()
	if entry.NumArguments() != len(ft.Inputs) {
		return fmt.Errorf("entry block must have %d arguments to match function signature", len(ft.Inputs))
	}
	for i, a := range entry.Arguments() {
		if a.Type() != ft.Inputs[i] {
			return fmt.Errorf("type of entry block argument #%d('%s') must match the type of the corresponding argument in function signature('%s')", i, a.Type(), ft.Inputs[i])
		}
	}
	return nil
}

// verifyArgAttrs checks arg_attrs or res_attrs: absent, or an array of n
// dictionaries whose entries are all dialect attributes.
func verifyArgAttrs(op *ir.Operation, name, what string, n int) error {
	a := op.Attr(name)
	if a == nil {
		return nil
	}
	arr, ok := a.(ir.ArrayAttr)
	if !ok {
		return fmt.Errorf("attribute '%s' failed to satisfy constraint: Array of dictionary attributes", name)
	}
	if len(arr) != n {
		return fmt.Errorf("expects %s attribute array to have the same number of elements as the number of function %ss, got %d, but expected %d", what, what, len(arr), n)
	}
	for _, e := range arr {
		d, ok := e.(ir.DictAttr)
		if !ok {
			return fmt.Errorf("attribute '%s' failed to satisfy constraint: Array of dictionary attributes", name)
		}
		for _, na := range d {
			if !strings.Contains(na.Name, ".") {
				return fmt.Errorf("%ss may only have dialect attributes", what)
			}
		}
	}
	return nil
}

// parseFunc reads
//
//	func.func [visibility] @name(%arg0: t {attrs}, ...) [-> (t {attrs}, ...)] [attributes {...}] [{ body }]
//
// where the arguments may be bare types instead: then the body, if any,
// names them in its entry block's header (^bb0(%a: t, ...):).
func parseFunc(p *ir.Parser, st *ir.OperationState) error {
	props := ir.DictAttr{}
	if p.IsKeyword() {
		vis, err := p.ParseKeyword()
		if err != nil {
			return err
		}
		props = props.With(ir.SymVisibilityAttr, ir.Str(vis))
	}
	name, err := p.ParseSymbolName()
	if err != nil {
		return err
	}
	props = props.With(ir.SymNameAttr, ir.Str(name))

	// Arguments: all named (%x: t) or, for declarations, all bare types.
	if err := p.Expect("("); err != nil {
		return err
	}
	var args []ir.RegionArg
	named := p.IsOperand()
	if !p.Is(")") {
		for {
			var a ir.RegionArg
			if named {
				if a, err = p.ParseArgument(); err != nil {
					return err
				}
			} else {
				a.Pos = p.Pos()
				if p.IsOperand() {
					return p.ErrorAt(a.Pos, "expected type instead of SSA identifier")
				}
				if a.Type, err = p.ParseType(); err != nil {
					return err
				}
				if a.Attrs, err = p.ParseOptionalAttrDict(); err != nil {
					return err
				}
			}
			args = append(args, a)
			if !p.ConsumeIf(",") {
				break
			}
		}
	}
	if err := p.Expect(")"); err != nil {
		return err
	}
	var results []ir.Type
	var resAttrs []ir.DictAttr
	if p.ConsumeIf("->") {
		if results, resAttrs, err = parseResultList(p); err != nil {
			return err
		}
	}
	inputs := make([]ir.Type, len(args))
	argAttrs := make([]ir.DictAttr, len(args))
	for i, a := range args {
		inputs[i], argAttrs[i] = a.Type, a.Attrs
	}
	props = props.With(FunctionTypeAttr, ir.TypeAttr{Type: ir.FunctionOf(inputs, results)})
	props = props.With(ArgAttrsAttr, attrArray(argAttrs))
	props = props.With(ResAttrsAttr, attrArray(resAttrs))

	attrsPos := p.Pos()
	attrs, err := p.ParseOptionalAttrDictWithKeyword()
	if err != nil {
		return err
	}
	for _, n := range []string{ir.SymNameAttr, FunctionTypeAttr, ir.SymVisibilityAttr} {
		if attrs.Get(n) != nil {
			return p.ErrorAt(attrsPos, "'%s' is an inferred attribute and should not be specified in the explicit attribute dictionary", n)
		}
	}
	for _, n := range funcInherent {
		if a := attrs.Get(n); a != nil {
			props, attrs = props.With(n, a), attrs.With(n, nil)
		}
	}
	st.Properties, st.Attributes = props, attrs

	bodyPos := p.Pos()
	if !p.IsRegion() {
		st.Regions = []*ir.Region{ir.NewRegion()}
		return nil
	}
	if !named {
		// Bare argument types: the body spells its entry block's
		// arguments itself (the verifier compares them with the types).
		args = nil
	}
	r, err := p.ParseRegion(args, true)
	if err != nil {
		return err
	}
	if r.Empty() || (r.Front() == r.Back() && r.Front().Empty()) {
		return p.ErrorAt(bodyPos, "expected non-empty function body")
	}
	st.Regions = []*ir.Region{r}
	return nil
}

// parseResultList reads a function's results after "->": one type, or a
// parenthesised list of types each with optional attributes.
func parseResultList(p *ir.Parser) ([]ir.Type, []ir.DictAttr, error) {
	if !p.ConsumeIf("(") {
		t, err := p.ParseType()
		return []ir.Type{t}, nil, err
	}
	var ts []ir.Type
	var attrs []ir.DictAttr
	if p.ConsumeIf(")") {
		return nil, nil, nil
	}
	for {
		t, err := p.ParseType()
		if err != nil {
			return nil, nil, err
		}
		d, err := p.ParseOptionalAttrDict()
		if err != nil {
			return nil, nil, err
		}
		ts, attrs = append(ts, t), append(attrs, d)
		if !p.ConsumeIf(",") {
			break
		}
	}
	return ts, attrs, p.Expect(")")
}

// attrArray returns the dictionaries as an array attribute, or nil (no
// property) when they are all empty, as MLIR stores them.
func attrArray(ds []ir.DictAttr) ir.Attribute {
	arr := make(ir.ArrayAttr, len(ds))
	empty := true
	for i, d := range ds {
		if d == nil {
			d = ir.DictAttr{}
		}
		arr[i] = d
		empty = empty && len(d) == 0
	}
	if empty {
		return nil
	}
	return arr
}

// attrsAt returns entry i of an arg_attrs/res_attrs array, or nil.
func attrsAt(a ir.Attribute, i int) ir.DictAttr {
	if arr, ok := a.(ir.ArrayAttr); ok && i < len(arr) {
		d, _ := arr[i].(ir.DictAttr)
		return d
	}
	return nil
}

func printFunc(p *ir.Printer, op *ir.Operation) {
	ft := Type(op)
	if ft == nil {
		// Not verifiable as a function: print what the custom syntax can.
		ft = ir.FunctionOf(nil, nil)
	}
	p.Write(" ")
	if vis, ok := op.Attr(ir.SymVisibilityAttr).(ir.StringAttr); ok {
		p.Write(vis.Value + " ")
	}
	p.PrintSymbolName(ir.SymbolName(op))
	p.Write("(")
	argAttrs := op.Attr(ArgAttrsAttr)
	entry := Body(op)
	for i, t := range ft.Inputs {
		if i > 0 {
			p.Write(", ")
		}
		if entry != nil && i < entry.NumArguments() {
			p.PrintArgument(entry.Argument(i), attrsAt(argAttrs, i))
			continue
		}
		p.PrintType(t)
		p.PrintAttrDict(attrsAt(argAttrs, i))
	}
	p.Write(")")
	if len(ft.Results) > 0 {
		p.Write(" -> ")
		resAttrs := op.Attr(ResAttrsAttr)
		if resAttrs == nil {
			p.PrintResultTypes(ft.Results)
		} else {
			p.Write("(")
			for i, t := range ft.Results {
				if i > 0 {
					p.Write(", ")
				}
				p.PrintType(t)
				p.PrintAttrDict(attrsAt(resAttrs, i))
			}
			p.Write(")")
		}
	}
	p.PrintAttrDictWithKeyword(op.Attributes(), funcInherent...)
	if entry != nil {
		p.Write(" ")
		p.PrintRegion(op.Region(0), false, true)
	}
}

// --- func.return ---

func verifyReturn(op *ir.Operation) error {
	fn := op.ParentOp()
	if fn == nil || fn.Name() != FuncOp {
		return fmt.Errorf("expects parent op '%s'", FuncOp)
	}
	ft := Type(fn)
	if ft == nil {
		return nil // the function's own verifier reports it
	}
	if op.NumOperands() != len(ft.Results) {
		return fmt.Errorf("has %d operands, but enclosing function (@%s) returns %d", op.NumOperands(), ir.SymbolName(fn), len(ft.Results))
	}
	for i, v := range op.Operands() {
		if v.Type() != ft.Results[i] {
			return ir.Errorf(op.Loc(), "type of return operand %d ('%s') doesn't match function result type ('%s') in function @%s", i, v.Type(), ft.Results[i], ir.SymbolName(fn))
		}
	}
	return nil
}

// --- func.call ---

func verifyCall(op *ir.Operation) error {
	ref, ok := op.Attr(CalleeAttr).(ir.SymbolRefAttr)
	if !ok || len(ref.Nested) > 0 {
		return fmt.Errorf("requires a 'callee' symbol reference attribute")
	}
	fn := ir.LookupSymbol(op, ref)
	if fn == nil || fn.Name() != FuncOp {
		return fmt.Errorf("'%s' does not reference a valid function", ref.Root)
	}
	ft := Type(fn)
	if ft == nil {
		return nil // the callee's own verifier reports it
	}
	if len(ft.Inputs) != op.NumOperands() {
		return fmt.Errorf("incorrect number of operands for callee")
	}
	for i, v := range op.Operands() {
		if v.Type() != ft.Inputs[i] {
			return fmt.Errorf("operand type mismatch: expected operand type '%s', but provided '%s' for operand number %d", ft.Inputs[i], v.Type(), i)
		}
	}
	if len(ft.Results) != op.NumResults() {
		return fmt.Errorf("incorrect number of results for callee")
	}
	for i, r := range op.Results() {
		if r.Type() != ft.Results[i] {
			d := ir.Errorf(op.Loc(), "'%s' op result type mismatch at index %d", CallOp, i)
			d.Note(op.Loc(), "      op result types: %s", quotedTypes(op.ResultTypes()))
			d.Note(op.Loc(), "function result types: %s", quotedTypes(ft.Results))
			return d
		}
	}
	return nil
}

// quotedTypes formats types as MLIR's diagnostics do: 'a', 'b'.
func quotedTypes(ts []ir.Type) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = "'" + t.String() + "'"
	}
	return strings.Join(parts, ", ")
}

// parseCall reads `@callee(%a, %b) [attr-dict] : (t1, t2) -> results`.
func parseCall(p *ir.Parser, st *ir.OperationState) error {
	callee, err := p.ParseSymbolName()
	if err != nil {
		return err
	}
	operands, err := parseParenOperands(p)
	if err != nil {
		return err
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	st.Properties = st.Properties.With(CalleeAttr, ir.SymbolRef(callee))
	return resolveCallType(p, st, operands)
}

func parseParenOperands(p *ir.Parser) ([]ir.UnresolvedOperand, error) {
	if err := p.Expect("("); err != nil {
		return nil, err
	}
	operands, err := p.ParseOperandList()
	if err != nil {
		return nil, err
	}
	return operands, p.Expect(")")
}

// resolveCallType reads ": (inputs) -> results" and resolves operands
// against the inputs.
func resolveCallType(p *ir.Parser, st *ir.OperationState, operands []ir.UnresolvedOperand) error {
	ft, pos, err := parseColonFunctionType(p)
	if err != nil {
		return err
	}
	vs, err := p.ResolveAll(operands, ft.Inputs, pos)
	if err != nil {
		return err
	}
	st.Operands = append(st.Operands, vs...)
	st.ResultTypes = ft.Results
	return nil
}

// parseColonFunctionType reads ": (inputs) -> results", returning the type
// and where it starts, for locating operand mismatches.
func parseColonFunctionType(p *ir.Parser) (*ir.FunctionType, int, error) {
	if err := p.Expect(":"); err != nil {
		return nil, 0, err
	}
	pos := p.Pos()
	t, err := p.ParseType()
	if err != nil {
		return nil, 0, err
	}
	ft, ok := t.(*ir.FunctionType)
	if !ok {
		return nil, 0, p.ErrorAt(pos, "expected function type, found '%s'", t)
	}
	return ft, pos, nil
}

func printCall(p *ir.Printer, op *ir.Operation) {
	p.Write(" ")
	if ref, ok := op.Attr(CalleeAttr).(ir.SymbolRefAttr); ok {
		p.PrintAttr(ref)
	}
	p.Write("(")
	p.PrintOperands(op.Operands())
	p.Write(")")
	p.PrintAttrDict(op.Attributes(), CalleeAttr)
	p.Write(" : ")
	p.PrintType(ir.FunctionOf(op.OperandTypes(), op.ResultTypes()))
}

// --- func.call_indirect ---

func verifyCallIndirect(op *ir.Operation) error {
	if op.NumOperands() == 0 {
		return fmt.Errorf("requires a callee operand")
	}
	ft, ok := op.Operand(0).Type().(*ir.FunctionType)
	if !ok {
		return fmt.Errorf("operand #0 must be function type, but got '%s'", op.Operand(0).Type())
	}
	args := op.OperandTypes()[1:]
	if !slices.Equal(args, ft.Inputs) {
		return fmt.Errorf("failed to verify that callee input types match argument types")
	}
	if !slices.Equal(op.ResultTypes(), ft.Results) {
		return fmt.Errorf("failed to verify that callee result types match result types")
	}
	return nil
}

// parseCallIndirect reads `%f(%a, %b) [attr-dict] : (t1, t2) -> results`.
func parseCallIndirect(p *ir.Parser, st *ir.OperationState) error {
	callee, err := p.ParseOperand()
	if err != nil {
		return err
	}
	operands, err := parseParenOperands(p)
	if err != nil {
		return err
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	ft, pos, err := parseColonFunctionType(p)
	if err != nil {
		return err
	}
	cv, err := p.Resolve(callee, ft)
	if err != nil {
		return err
	}
	vs, err := p.ResolveAll(operands, ft.Inputs, pos)
	if err != nil {
		return err
	}
	st.Operands = append([]*ir.Value{cv}, vs...)
	st.ResultTypes = ft.Results
	return nil
}

func printCallIndirect(p *ir.Printer, op *ir.Operation) {
	p.Write(" ")
	p.PrintOperand(op.Operand(0))
	p.Write("(")
	p.PrintOperands(op.Operands()[1:])
	p.Write(")")
	p.PrintAttrDict(op.Attributes())
	p.Write(" : ")
	p.PrintType(op.Operand(0).Type())
}

// --- func.constant ---

func verifyConstant(op *ir.Operation) error {
	ref, ok := op.Attr("value").(ir.SymbolRefAttr)
	if !ok || len(ref.Nested) > 0 {
		return fmt.Errorf("requires attribute 'value'")
	}
	if op.NumResults() != 1 {
		return fmt.Errorf("requires one result")
	}
	fn := ir.LookupSymbol(op, ref)
	if fn == nil || fn.Name() != FuncOp {
		return fmt.Errorf("reference to undefined function '%s'", ref.Root)
	}
	if ft := Type(fn); ft != nil && ir.Type(ft) != op.Result(0).Type() {
		return fmt.Errorf("reference to function with mismatched type")
	}
	return nil
}

// parseConstant reads `@f [attr-dict] : type`.
func parseConstant(p *ir.Parser, st *ir.OperationState) error {
	if !p.IsSymbol() {
		// Any other attribute is the wrong kind: say so where it is.
		pos := p.Pos()
		if _, err := p.ParseAttribute(nil); err != nil {
			return err
		}
		return p.ErrorAt(pos, "invalid kind of attribute specified: func.constant takes a symbol reference (@f)")
	}
	name, err := p.ParseSymbolName()
	if err != nil {
		return err
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	t, err := p.ParseColonType()
	if err != nil {
		return err
	}
	st.Properties = st.Properties.With("value", ir.SymbolRef(name))
	st.ResultTypes = []ir.Type{t}
	return nil
}

func printConstant(p *ir.Printer, op *ir.Operation) {
	p.Write(" ")
	p.PrintAttr(op.Attr("value"))
	p.PrintAttrDict(op.Attributes(), "value")
	p.Write(" : ")
	p.PrintType(op.Result(0).Type())
}
