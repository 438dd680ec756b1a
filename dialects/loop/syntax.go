package loop

import (
	"strconv"

	"github.com/strata-ir/strata/ir"
)

// The custom syntax of the buffer ops, modelled on upstream memref's:
//
//	%m = loop.alloc(%n) {alignment = 64 : i64} : memref<4x?xf32>
//	loop.dealloc %m : memref<4x?xf32>
//	%v = loop.load %m[%i, %j] : memref<4x?xf32>
//	loop.store %v, %m[%i, %j] : memref<4x?xf32>
//	%d = loop.dim %m, 1 : memref<4x?xf32>
//	loop.yield %a, %b : f32, index
//
// Properties are written in the attribute dictionary, as upstream does.

// splitInherent moves the entries named names from the parsed attribute
// dictionary into st's properties.
func splitInherent(st *ir.OperationState, attrs ir.DictAttr, names ...string) {
	for _, n := range names {
		if a := attrs.Get(n); a != nil {
			st.Properties, attrs = st.Properties.With(n, a), attrs.With(n, nil)
		}
	}
	st.Attributes = attrs
}

// printAttrs prints op's properties and attributes as one dictionary.
func printAttrs(p *ir.Printer, op *ir.Operation) {
	d := op.Attributes()
	for _, na := range op.Properties() {
		d = d.With(na.Name, na.Value)
	}
	p.PrintAttrDict(d)
}

// parseIndexList reads "[%i, %j]" and resolves the operands as index.
func parseIndexList(p *ir.Parser) ([]*ir.Value, error) {
	if err := p.Expect("["); err != nil {
		return nil, err
	}
	pos := p.Pos()
	os, err := p.ParseOperandList()
	if err != nil {
		return nil, err
	}
	if err := p.Expect("]"); err != nil {
		return nil, err
	}
	return p.ResolveAll(os, repeat(ir.Index, len(os)), pos)
}

func repeat(t ir.Type, n int) []ir.Type {
	ts := make([]ir.Type, n)
	for i := range ts {
		ts[i] = t
	}
	return ts
}

// parseMemRefType reads ": memref<...>".
func parseMemRefType(p *ir.Parser) (*ir.MemRefType, error) {
	pos := p.Pos()
	t, err := p.ParseColonType()
	if err != nil {
		return nil, err
	}
	m, ok := t.(*ir.MemRefType)
	if !ok {
		return nil, p.ErrorAt(pos, "expected a memref type, found '%s'", t)
	}
	return m, nil
}

func parseAlloc(p *ir.Parser, st *ir.OperationState) error {
	if err := p.Expect("("); err != nil {
		return err
	}
	pos := p.Pos()
	os, err := p.ParseOperandList()
	if err != nil {
		return err
	}
	if err := p.Expect(")"); err != nil {
		return err
	}
	attrs, err := p.ParseOptionalAttrDict()
	if err != nil {
		return err
	}
	splitInherent(st, attrs, AlignmentAttr)
	m, err := parseMemRefType(p)
	if err != nil {
		return err
	}
	st.ResultTypes = []ir.Type{m}
	st.Operands, err = p.ResolveAll(os, repeat(ir.Index, len(os)), pos)
	return err
}

func printAlloc(p *ir.Printer, op *ir.Operation) {
	p.Write("(")
	p.PrintOperands(op.Operands())
	p.Write(")")
	printAttrs(p, op)
	p.Write(" : ")
	p.PrintTypes(op.ResultTypes())
}

func parseDealloc(p *ir.Parser, st *ir.OperationState) error {
	o, err := p.ParseOperand()
	if err != nil {
		return err
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	m, err := parseMemRefType(p)
	if err != nil {
		return err
	}
	v, err := p.Resolve(o, m)
	st.Operands = []*ir.Value{v}
	return err
}

func printDealloc(p *ir.Printer, op *ir.Operation) {
	p.Write(" ")
	p.PrintOperands(op.Operands())
	printAttrs(p, op)
	p.Write(" : ")
	p.PrintTypes(op.OperandTypes())
}

// parseAccess reads "%m[%i, ...] {attrs} : memref<...>" and returns the
// memref type with the operands (memref first).
func parseAccess(p *ir.Parser, st *ir.OperationState) (*ir.MemRefType, []*ir.Value, error) {
	mo, err := p.ParseOperand()
	if err != nil {
		return nil, nil, err
	}
	idx, err := parseIndexList(p)
	if err != nil {
		return nil, nil, err
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return nil, nil, err
	}
	m, err := parseMemRefType(p)
	if err != nil {
		return nil, nil, err
	}
	mv, err := p.Resolve(mo, m)
	if err != nil {
		return nil, nil, err
	}
	return m, append([]*ir.Value{mv}, idx...), nil
}

// printAccess prints "%m[%i, ...] {attrs} : memref<...>" from op's operands
// starting at the memref's position at.
func printAccess(p *ir.Printer, op *ir.Operation, at int) {
	ops := op.Operands()
	p.PrintOperand(ops[at])
	p.Write("[")
	p.PrintOperands(ops[at+1:])
	p.Write("]")
	printAttrs(p, op)
	p.Write(" : ")
	p.PrintType(ops[at].Type())
}

func parseLoad(p *ir.Parser, st *ir.OperationState) error {
	m, ops, err := parseAccess(p, st)
	if err != nil {
		return err
	}
	st.Operands, st.ResultTypes = ops, []ir.Type{m.ElementType()}
	return nil
}

func printLoad(p *ir.Printer, op *ir.Operation) {
	if op.NumOperands() == 0 {
		return
	}
	p.Write(" ")
	printAccess(p, op, 0)
}

func parseStore(p *ir.Parser, st *ir.OperationState) error {
	vo, err := p.ParseOperand()
	if err != nil {
		return err
	}
	if err := p.Expect(","); err != nil {
		return err
	}
	m, ops, err := parseAccess(p, st)
	if err != nil {
		return err
	}
	v, err := p.Resolve(vo, m.ElementType())
	st.Operands = append([]*ir.Value{v}, ops...)
	return err
}

func printStore(p *ir.Printer, op *ir.Operation) {
	if op.NumOperands() < 2 {
		return
	}
	p.Write(" ")
	p.PrintOperand(op.Operand(0))
	p.Write(", ")
	printAccess(p, op, 1)
}

func parseDim(p *ir.Parser, st *ir.OperationState) error {
	o, err := p.ParseOperand()
	if err != nil {
		return err
	}
	if err := p.Expect(","); err != nil {
		return err
	}
	i, err := p.ParseInteger()
	if err != nil {
		return err
	}
	attrs, err := p.ParseOptionalAttrDict()
	if err != nil {
		return err
	}
	splitInherent(st, attrs)
	st.Properties = st.Properties.With(IndexAttr, ir.Int(i, ir.I64))
	m, err := parseMemRefType(p)
	if err != nil {
		return err
	}
	v, err := p.Resolve(o, m)
	st.Operands, st.ResultTypes = []*ir.Value{v}, []ir.Type{ir.Index}
	return err
}

func printDim(p *ir.Printer, op *ir.Operation) {
	p.Write(" ")
	p.PrintOperands(op.Operands())
	p.Write(", ")
	i, _ := op.Attr(IndexAttr).(ir.IntegerAttr)
	p.Write(strconv.FormatInt(i.Value, 10))
	p.PrintAttrDict(op.Attributes())
	p.Write(" : ")
	p.PrintTypes(op.OperandTypes())
}
