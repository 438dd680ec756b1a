package gpu

import (
	"strconv"

	"github.com/strata-ir/strata/ir"
)

// The custom syntax, as mlir-opt 19 prints it, spacing included (its
// generated printers leave two spaces where an empty optional group was).

// --- gpu.module ---

// parseModule reads `@name [attributes {...}] { body }` and adds the
// implicit gpu.module_end.
func parseModule(p *ir.Parser, st *ir.OperationState) error {
	name, err := p.ParseSymbolName()
	if err != nil {
		return err
	}
	st.Properties = st.Properties.With(ir.SymNameAttr, ir.Str(name))
	if p.Is("[") {
		pos := p.Pos()
		a, err := p.ParseAttribute(nil)
		if err != nil {
			return err
		}
		if _, ok := a.(ir.ArrayAttr); !ok {
			return p.ErrorAt(pos, "expected an array of target attributes")
		}
		st.Properties = st.Properties.With(TargetsAttr, a)
	}
	if st.Attributes, err = p.ParseOptionalAttrDictWithKeyword(); err != nil {
		return err
	}
	if a := st.Attributes.Get(ir.SymNameAttr); a != nil {
		st.Properties, st.Attributes = st.Properties.With(ir.SymNameAttr, a), st.Attributes.With(ir.SymNameAttr, nil)
	}
	r, err := p.ParseRegion(nil, true)
	if err != nil {
		return err
	}
	if r.Empty() {
		r.Append(ir.NewBlock())
	}
	if body := r.Front(); body.Empty() || body.Last().Name() != ModuleEndOp {
		body.Append(ir.NewBuilder(p.Ctx()).Create(ir.OperationState{Name: ModuleEndOp, Loc: p.Loc()}))
	}
	st.Regions = []*ir.Region{r}
	return nil
}

func printModule(p *ir.Printer, op *ir.Operation) {
	p.Write(" ")
	p.PrintSymbolName(ir.SymbolName(op))
	if t, ok := op.Properties().Get(TargetsAttr).(ir.ArrayAttr); ok {
		// Two spaces after the list, as upstream: its empty offloading
		// handler leaves one.
		p.Write(" " + t.String() + " ")
	}
	p.PrintAttrDictWithKeyword(op.Attributes(), ir.SymNameAttr)
	p.Write(" ")
	p.PrintRegion(op.Region(0), false, false)
}

// --- gpu.func ---

// funcInherent are gpu.func's properties; sym_name and
// workgroup_attributions are discardable attributes, as upstream.
var funcInherent = []string{FunctionTypeAttr, "arg_attrs", "res_attrs", "workgroup_attrib_attrs", "private_attrib_attrs"}

// funcElided are the names the custom syntax writes in its own way.
var funcElided = []string{ir.SymNameAttr, FunctionTypeAttr, KernelAttr, WorkgroupAttributionsAttr, "arg_attrs", "res_attrs"}

// parseFunc reads
//
//	@name(%a: t {attrs}, ...) [-> (t, ...)] [workgroup(%w : t, ...)] [private(%p : t, ...)]
//	    [kernel] [attributes {...}] { body }
func parseFunc(p *ir.Parser, st *ir.OperationState) error {
	name, err := p.ParseSymbolName()
	if err != nil {
		return err
	}
	args, err := parseArgList(p)
	if err != nil {
		return err
	}
	var results []ir.Type
	if p.ConsumeIf("->") {
		if results, err = p.ParseResultTypes(); err != nil {
			return err
		}
	}
	var workgroup []ir.RegionArg
	if p.Is("workgroup") {
		if _, err := p.ParseKeyword(); err != nil {
			return err
		}
		if workgroup, err = parseArgList(p); err != nil {
			return err
		}
	}
	var private []ir.RegionArg
	if p.Is("private") {
		if _, err := p.ParseKeyword(); err != nil {
			return err
		}
		if private, err = parseArgList(p); err != nil {
			return err
		}
	}
	kernel := false
	if p.Is("kernel") {
		if _, err := p.ParseKeyword(); err != nil {
			return err
		}
		kernel = true
	}
	attrs, err := p.ParseOptionalAttrDictWithKeyword()
	if err != nil {
		return err
	}
	props := st.Properties
	for _, n := range funcInherent {
		if a := attrs.Get(n); a != nil {
			props, attrs = props.With(n, a), attrs.With(n, nil)
		}
	}
	inputs := make([]ir.Type, len(args))
	argAttrs := make(ir.ArrayAttr, len(args))
	anyArgAttrs := false
	for i, a := range args {
		inputs[i] = a.Type
		argAttrs[i] = a.Attrs
		if a.Attrs == nil {
			argAttrs[i] = ir.DictAttr{}
		}
		anyArgAttrs = anyArgAttrs || len(a.Attrs) > 0
	}
	props = props.With(FunctionTypeAttr, ir.TypeAttr{Type: ir.FunctionOf(inputs, results)})
	if anyArgAttrs {
		props = props.With("arg_attrs", argAttrs)
	}
	attrs = attrs.With(ir.SymNameAttr, ir.Str(name))
	attrs = attrs.With(WorkgroupAttributionsAttr, ir.Int(int64(len(workgroup)), ir.I64))
	if kernel {
		attrs = attrs.With(KernelAttr, ir.UnitAttr{})
	}
	st.Properties, st.Attributes = props, attrs
	r, err := p.ParseRegion(append(append(args, workgroup...), private...), true)
	if err != nil {
		return err
	}
	st.Regions = []*ir.Region{r}
	return nil
}

// parseArgList reads `(%a: t {attrs}, ...)`.
func parseArgList(p *ir.Parser) ([]ir.RegionArg, error) {
	if err := p.Expect("("); err != nil {
		return nil, err
	}
	var args []ir.RegionArg
	if p.ConsumeIf(")") {
		return nil, nil
	}
	for {
		a, err := p.ParseArgument()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		if !p.ConsumeIf(",") {
			break
		}
	}
	return args, p.Expect(")")
}

// argAttrsAt returns entry i of an arg_attrs array, or nil.
func argAttrsAt(a ir.Attribute, i int) ir.DictAttr {
	if arr, ok := a.(ir.ArrayAttr); ok && i < len(arr) {
		d, _ := arr[i].(ir.DictAttr)
		return d
	}
	return nil
}

func printFunc(p *ir.Printer, op *ir.Operation) {
	ft := FuncType(op)
	if ft == nil {
		ft = ir.FunctionOf(nil, nil)
	}
	entry := Body(op)
	p.Write(" ")
	p.PrintSymbolName(ir.SymbolName(op))
	p.Write("(")
	argAttrs := op.Attr("arg_attrs")
	for i, t := range ft.Inputs {
		if i > 0 {
			p.Write(", ")
		}
		if entry != nil && i < entry.NumArguments() {
			p.PrintArgument(entry.Argument(i), argAttrsAt(argAttrs, i))
		} else {
			p.PrintType(t)
		}
	}
	p.Write(")")
	if len(ft.Results) > 0 {
		p.Write(" -> ")
		p.PrintResultTypes(ft.Results)
	}
	printAttributions(p, "workgroup", WorkgroupBuffers(op))
	printAttributions(p, "private", PrivateBuffers(op))
	if IsKernel(op) {
		p.Write(" kernel")
	}
	p.PrintAttrDictWithKeyword(op.Attributes(), funcElided...)
	if entry != nil {
		p.Write(" ")
		p.PrintRegion(op.Region(0), false, true)
	}
}

// printAttributions prints ` keyword(%a : t, ...)`, nothing for no buffers.
func printAttributions(p *ir.Printer, keyword string, bufs []*ir.Value) {
	if len(bufs) == 0 {
		return
	}
	p.Write(" " + keyword + "(")
	for i, v := range bufs {
		if i > 0 {
			p.Write(", ")
		}
		p.PrintOperand(v)
		p.Write(" : ")
		p.PrintType(v.Type())
	}
	p.Write(")")
}

// --- gpu.return ---

// --- ids ---

// parseEnumKeyword reads one of the keywords and returns it.
func parseEnumKeyword(p *ir.Parser, what string, keywords []string) (string, error) {
	pos := p.Pos()
	k, err := p.ParseKeyword()
	if err != nil {
		return "", err
	}
	for _, w := range keywords {
		if w == k {
			return k, nil
		}
	}
	return "", p.ErrorAt(pos, "expected %s (one of %v), found '%s'", what, keywords, k)
}

// parseID reads `x [attr-dict]`.
func parseID(p *ir.Parser, st *ir.OperationState) error {
	d, err := parseEnumKeyword(p, "dimension", Dims[:])
	if err != nil {
		return err
	}
	st.Properties = st.Properties.With(DimensionAttr, DimAttr(d))
	if p.ConsumeIf(UpperBoundAttr) {
		n, err := p.ParseInteger()
		if err != nil {
			return err
		}
		st.Properties = st.Properties.With(UpperBoundAttr, ir.IntegerAttr{Value: n, Type: ir.Index})
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	st.ResultTypes = []ir.Type{ir.Index}
	return nil
}

func printID(p *ir.Printer, op *ir.Operation) {
	p.Write("  " + Dimension(op))
	if b, ok := op.Properties().Get(UpperBoundAttr).(ir.IntegerAttr); ok {
		p.Write(" " + UpperBoundAttr + " " + strconv.FormatInt(b.Value, 10))
	}
	p.PrintAttrDict(op.Attributes())
}

// --- gpu.barrier ---

func parseAttrDictOnly(p *ir.Parser, st *ir.OperationState) error {
	var err error
	st.Attributes, err = p.ParseOptionalAttrDict()
	return err
}

func printAttrDictOnly(p *ir.Printer, op *ir.Operation) { p.PrintAttrDict(op.Attributes()) }

// --- gpu.shuffle ---

// parseShuffle reads `mode %value, %offset, %width [attr-dict] : type`.
func parseShuffle(p *ir.Parser, st *ir.OperationState) error {
	mode, err := parseEnumKeyword(p, "shuffle mode", ShuffleModes)
	if err != nil {
		return err
	}
	st.Properties = st.Properties.With(ModeAttr, ShuffleModeAttr(mode))
	pos := p.Pos()
	operands, err := p.ParseOperandList()
	if err != nil {
		return err
	}
	if len(operands) != 3 {
		return p.ErrorAt(pos, "expected 3 operands (value, offset, width), found %d", len(operands))
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	t, err := p.ParseColonType()
	if err != nil {
		return err
	}
	st.Operands, err = p.ResolveAll(operands, []ir.Type{t, ir.I32, ir.I32}, pos)
	st.ResultTypes = []ir.Type{t, ir.I1}
	return err
}

func printShuffle(p *ir.Printer, op *ir.Operation) {
	p.Write("  " + ShuffleMode(op) + " ")
	p.PrintOperands(op.Operands())
	p.PrintAttrDict(op.Attributes())
	p.Write(" : ")
	p.PrintType(op.Operand(0).Type())
}

// --- gpu.launch_func ---

// parseSizes reads `kw in (%x, %y, %z)`.
func parseSizes(p *ir.Parser, kw string) ([]ir.UnresolvedOperand, error) {
	if err := p.Expect(kw); err != nil {
		return nil, err
	}
	if err := p.Expect("in"); err != nil {
		return nil, err
	}
	if err := p.Expect("("); err != nil {
		return nil, err
	}
	pos := p.Pos()
	ops, err := p.ParseOperandList()
	if err != nil {
		return nil, err
	}
	if len(ops) != 3 {
		return nil, p.ErrorAt(pos, "expected 3 sizes (x, y, z), found %d", len(ops))
	}
	return ops, p.Expect(")")
}

// parseLaunchFunc reads
//
//	@mod::@k blocks in (%x, %y, %z) threads in (%x, %y, %z) [: type]
//	    [dynamic_shared_memory_size %s] [args(%a : t, ...)] [attr-dict]
func parseLaunchFunc(p *ir.Parser, st *ir.OperationState) error {
	if p.Is("async") || p.Is("[") || p.Is("<") {
		return p.Errorf("async gpu.launch_func is not supported")
	}
	pos := p.Pos()
	ref, err := p.ParseAttribute(nil)
	if err != nil {
		return err
	}
	kernel, ok := ref.(ir.SymbolRefAttr)
	if !ok {
		return p.ErrorAt(pos, "expected a kernel symbol reference @module::@kernel")
	}
	if p.Is("clusters") {
		return p.Errorf("gpu.launch_func clusters are not supported")
	}
	sizePos := p.Pos()
	grid, err := parseSizes(p, "blocks")
	if err != nil {
		return err
	}
	block, err := parseSizes(p, "threads")
	if err != nil {
		return err
	}
	var sizeType ir.Type = ir.Index
	if p.ConsumeIf(":") {
		if sizeType, err = p.ParseType(); err != nil {
			return err
		}
	}
	sizes, err := p.ResolveAll(append(grid, block...), []ir.Type{sizeType, sizeType, sizeType, sizeType, sizeType, sizeType}, sizePos)
	if err != nil {
		return err
	}
	seg := make([]int64, numSegments)
	for i := range 3 {
		seg[segGrid+i], seg[segBlock+i] = 1, 1
	}
	st.Operands = sizes
	if p.Is("dynamic_shared_memory_size") {
		if _, err := p.ParseKeyword(); err != nil {
			return err
		}
		o, err := p.ParseOperand()
		if err != nil {
			return err
		}
		v, err := p.Resolve(o, ir.I32)
		if err != nil {
			return err
		}
		st.Operands = append(st.Operands, v)
		seg[segShared] = 1
	}
	if p.Is("args") {
		if _, err := p.ParseKeyword(); err != nil {
			return err
		}
		args, err := parseTypedOperands(p)
		if err != nil {
			return err
		}
		st.Operands = append(st.Operands, args...)
		seg[segArgs] = int64(len(args))
	}
	if st.Attributes, err = p.ParseOptionalAttrDict(); err != nil {
		return err
	}
	st.Properties = st.Properties.
		With(KernelRefAttr, kernel).
		With(SegmentsAttr, ir.DenseArrayAttr{Elem: ir.I32, Values: seg})
	return nil
}

// parseTypedOperands reads `(%a : t, ...)`.
func parseTypedOperands(p *ir.Parser) ([]*ir.Value, error) {
	if err := p.Expect("("); err != nil {
		return nil, err
	}
	var vs []*ir.Value
	if p.ConsumeIf(")") {
		return nil, nil
	}
	for {
		o, err := p.ParseOperand()
		if err != nil {
			return nil, err
		}
		t, err := p.ParseColonType()
		if err != nil {
			return nil, err
		}
		v, err := p.Resolve(o, t)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
		if !p.ConsumeIf(",") {
			break
		}
	}
	return vs, p.Expect(")")
}

func printLaunchFunc(p *ir.Printer, op *ir.Operation) {
	l, ok := LaunchOf(op)
	if !ok {
		// Not printable in the custom syntax: the verifier reports why.
		p.Write(" <malformed>")
		return
	}
	p.Write("  ")
	p.PrintAttr(l.Kernel)
	p.Write(" blocks in (")
	p.PrintOperands(l.Grid[:])
	p.Write(") threads in (")
	p.PrintOperands(l.Block[:])
	p.Write(") ")
	if t := l.Grid[0].Type(); t != ir.Index {
		p.Write(": " + t.String())
	}
	p.Write(" ")
	if l.DynamicSharedBytes != nil {
		p.Write("dynamic_shared_memory_size ")
		p.PrintOperand(l.DynamicSharedBytes)
		p.Write(" ")
	}
	if len(l.Args) > 0 {
		p.Write("args(")
		for i, a := range l.Args {
			if i > 0 {
				p.Write(", ")
			}
			p.PrintOperand(a)
			p.Write(" : ")
			p.PrintType(a.Type())
		}
		p.Write(")")
	}
	p.PrintAttrDict(op.Attributes(), KernelRefAttr, SegmentsAttr)
}
