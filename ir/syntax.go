package ir

// ParseReturnLike reads the custom syntax `[attr-dict] [%a, %b : t1, t2]`
// that return- and yield-like terminators share.
func ParseReturnLike(p *Parser, st *OperationState) error {
	var err error
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	operands, err := p.ParseOperandList()
	if err != nil || len(operands) == 0 {
		return err
	}
	pos := p.Pos()
	types, err := p.ParseColonTypeList()
	if err != nil {
		return err
	}
	st.Operands, err = p.ResolveAll(operands, types, pos)
	return err
}

// PrintReturnLike writes the syntax ParseReturnLike reads.
func PrintReturnLike(p *Printer, op *Operation) {
	p.PrintAttrDict(op.Attributes())
	if op.NumOperands() > 0 {
		p.Write(" ")
		p.PrintOperands(op.Operands())
		p.Write(" : ")
		p.PrintTypes(op.OperandTypes())
	}
}
