package arith

import (
	"strconv"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// This file implements upstream's custom (pretty) syntax of the arith ops.
// Each printer writes exactly what mlir-opt 19 prints after the op name.

// parseElementwise returns the parser of "%a, %b [flags] attr-dict : type"
// for an op of n operands.
func parseElementwise(n int, flags *bitEnum) func(*ir.Parser, *ir.OperationState) error {
	return func(p *ir.Parser, st *ir.OperationState) error {
		t, err := parseUniformOperands(p, st, n, flags)
		if err != nil {
			return err
		}
		st.ResultTypes = []ir.Type{t}
		return nil
	}
}

// parseUniformOperands parses "%a, %b [flags] attr-dict : type", resolving
// all n operands to that one type, which it returns.
func parseUniformOperands(p *ir.Parser, st *ir.OperationState, n int, flags *bitEnum) (ir.Type, error) {
	pos := p.Pos()
	// Exactly n operands: a missing one is "expected SSA operand", an extra
	// one is found where the ':' should be.
	ops := make([]ir.UnresolvedOperand, n)
	for i := range ops {
		if i > 0 {
			if err := p.Expect(","); err != nil {
				return nil, err
			}
		}
		o, err := p.ParseOperand()
		if err != nil {
			return nil, err
		}
		ops[i] = o
	}
	var err error
	if flags != nil {
		if err := flags.parse(p, st, true); err != nil {
			return nil, err
		}
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return nil, err
	}
	t, err := p.ParseColonType()
	if err != nil {
		return nil, err
	}
	ts := make([]ir.Type, n)
	for i := range ts {
		ts[i] = t
	}
	if st.Operands, err = p.ResolveAll(ops, ts, pos); err != nil {
		return nil, err
	}
	return t, nil
}

func printElementwise(flags *bitEnum) func(*ir.Printer, *ir.Operation) {
	return func(p *ir.Printer, op *ir.Operation) {
		p.Write(" ")
		p.PrintOperands(op.Operands())
		if flags != nil {
			flags.print(p, op)
		}
		p.PrintAttrDict(op.Attributes())
		p.Write(" : ")
		p.PrintType(op.Operand(0).Type())
	}
}

// parseCmp parses "pred, %a, %b [fastmath<...>] attr-dict : type"; the result
// is i1 of the operands' shape.
func parseCmp(names []string, class typeClass, flags *bitEnum) func(*ir.Parser, *ir.OperationState) error {
	return func(p *ir.Parser, st *ir.OperationState) error {
		pos := p.Pos()
		var kw string
		var err error
		switch {
		case p.IsKeyword():
			kw, err = p.ParseKeyword()
		case p.IsString(): // "eq" is the predicate's string form
			kw, err = p.ParseString()
		}
		if err != nil {
			return err
		}
		pred := indexOf(names, kw)
		if pred < 0 {
			return p.ErrorAt(pos, "expected string or keyword containing one of the following enum values for attribute 'predicate' [%s]", strings.Join(names, ", "))
		}
		st.Properties = st.Properties.With("predicate", ir.IntegerAttr{Value: int64(pred), Type: ir.I64})
		if err := p.Expect(","); err != nil {
			return err
		}
		if err := parseCmpOperands(p, st, flags); err != nil {
			return err
		}
		// The result type is inferred from the operands', which must
		// then be of the class (checked here, as the inference does).
		if t := st.Operands[0].Type(); !class.matches(t) {
			return ir.Errorf(st.Loc, "custom op '%s' 'lhs' must be %s, but got '%s'", st.Name, class.name, t)
		}
		return nil
	}
}

// parseCmpOperands parses what follows the predicate of a cmp op.
func parseCmpOperands(p *ir.Parser, st *ir.OperationState, flags *bitEnum) error {
	t, err := parseUniformOperands(p, st, 2, flags)
	if err != nil {
		return err
	}
	st.ResultTypes = []ir.Type{withElem(t, ir.I1)}
	return nil
}

func printCmp(names []string, flags *bitEnum) func(*ir.Printer, *ir.Operation) {
	return func(p *ir.Printer, op *ir.Operation) {
		pred, _ := op.Properties().Get("predicate").(ir.IntegerAttr)
		if pred.Value >= 0 && pred.Value < int64(len(names)) {
			p.Write(" " + names[pred.Value] + ",")
		} else {
			p.Write(" " + strconv.FormatInt(pred.Value, 10) + ",")
		}
		printElementwise(flags)(p, op)
	}
}

// parseSelect parses "%c, %a, %b attr-dict : [cond-type,] type".
func parseSelect(p *ir.Parser, st *ir.OperationState) error {
	pos := p.Pos()
	ops, err := p.ParseOperandList()
	if err != nil {
		return err
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	ts, err := p.ParseColonTypeList()
	if err != nil {
		return err
	}
	cond, t := ir.Type(ir.I1), ts[len(ts)-1]
	switch len(ts) {
	case 1:
	case 2:
		cond = ts[0]
	default:
		return p.ErrorAt(pos, "expected a result type, optionally preceded by the condition type")
	}
	if st.Operands, err = p.ResolveAll(ops, []ir.Type{cond, t, t}, pos); err != nil {
		return err
	}
	st.ResultTypes = []ir.Type{t}
	return nil
}

func printSelect(p *ir.Printer, op *ir.Operation) {
	p.Write(" ")
	p.PrintOperands(op.Operands())
	p.PrintAttrDict(op.Attributes())
	p.Write(" : ")
	if c := op.Operand(0).Type(); c != ir.I1 {
		p.PrintType(c)
		p.Write(", ")
	}
	p.PrintType(op.Result(0).Type())
}

// parseCast returns the parser of "%x [roundingmode] [fastmath<...>]
// attr-dict : from to to".
func parseCast(c castOp) func(*ir.Parser, *ir.OperationState) error {
	return func(p *ir.Parser, st *ir.OperationState) error {
		pos := p.Pos()
		x, err := p.ParseOperand()
		if err != nil {
			return err
		}
		if c.rounding && p.IsKeyword() && !p.Is(fastMath.keyword) {
			kpos := p.Pos()
			kw, _ := p.ParseKeyword()
			mode := indexOf(roundingModes, kw)
			if mode < 0 {
				return p.ErrorAt(kpos, "invalid rounding mode '%s'", kw)
			}
			st.Properties = st.Properties.With("roundingmode", ir.IntegerAttr{Value: int64(mode), Type: ir.I32})
		}
		if c.fastmath {
			if err := fastMath.parse(p, st, false); err != nil {
				return err
			}
		}
		if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
			return err
		}
		from, err := p.ParseColonType()
		if err != nil {
			return err
		}
		if err := p.Expect("to"); err != nil {
			return err
		}
		to, err := p.ParseType()
		if err != nil {
			return err
		}
		v, err := p.Resolve(x, from)
		if err != nil {
			return p.ErrorAt(pos, "%v", err)
		}
		st.Operands, st.ResultTypes = []*ir.Value{v}, []ir.Type{to}
		return nil
	}
}

func printCast(c castOp) func(*ir.Printer, *ir.Operation) {
	return func(p *ir.Printer, op *ir.Operation) {
		p.Write(" ")
		p.PrintOperand(op.Operand(0))
		if m, ok := op.Properties().Get("roundingmode").(ir.IntegerAttr); ok && c.rounding {
			if m.Value >= 0 && m.Value < int64(len(roundingModes)) {
				p.Write(" " + roundingModes[m.Value])
			}
		}
		if c.fastmath {
			fastMath.print(p, op)
		}
		p.PrintAttrDict(op.Attributes())
		p.Write(" : ")
		p.PrintType(op.Operand(0).Type())
		p.Write(" to ")
		p.PrintType(op.Result(0).Type())
	}
}

// parseConstant parses "attr-dict value", the result type being the value's.
func parseConstant(p *ir.Parser, st *ir.OperationState) error {
	var err error
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	pos := p.Pos()
	v, err := p.ParseAttribute(nil)
	if err != nil {
		return err
	}
	t := typeOfAttr(v)
	if t == nil {
		return p.ErrorAt(pos, "value must be an integer, float, or elements attribute, but got %s", v)
	}
	st.Properties = st.Properties.With("value", v)
	st.ResultTypes = []ir.Type{t}
	return nil
}

func printConstant(p *ir.Printer, op *ir.Operation) {
	p.PrintAttrDict(op.Attributes())
	p.Write(" ")
	if v := op.Properties().Get("value"); v != nil {
		p.PrintAttr(v)
	}
}

// typeOfAttr returns the type of a typed constant attribute, or nil.
func typeOfAttr(a ir.Attribute) ir.Type {
	switch a := a.(type) {
	case ir.IntegerAttr:
		return a.Type
	case ir.FloatAttr:
		return a.Type
	case ir.DenseAttr:
		return a.Type
	case ir.WideAttr:
		return a.Type
	}
	return nil
}
