package arith

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// binaryOp is one row of the table of elementwise binary (and unary) ops.
type binaryOp struct {
	name, summary, detail string
	class                 typeClass
	traits                ir.Trait // beyond Pure and SameOperandsAndResultType
	flags                 *bitEnum // the op's flag property, or nil
	unary                 bool
}

var binaryOps = []binaryOp{
	{name: "addi", summary: "integer addition", class: signlessIntLike, traits: ir.Commutative, flags: overflow,
		detail: "Wraps around on overflow (two's complement); with `nsw`/`nuw`, signed/unsigned overflow is poison."},
	{name: "subi", summary: "integer subtraction", class: signlessIntLike, flags: overflow,
		detail: "Wraps around on overflow (two's complement)."},
	{name: "muli", summary: "integer multiplication", class: signlessIntLike, traits: ir.Commutative, flags: overflow,
		detail: "Keeps the low bits of the product."},
	{name: "divsi", summary: "signed integer division", class: signlessIntLike,
		detail: "Rounds toward zero. Division by zero and MIN / -1 are undefined behaviour."},
	{name: "divui", summary: "unsigned integer division", class: signlessIntLike,
		detail: "Treats the operands as unsigned. Division by zero is undefined behaviour."},
	{name: "remsi", summary: "signed integer remainder", class: signlessIntLike,
		detail: "The remainder takes the sign of the dividend. Remainder by zero is undefined behaviour."},
	{name: "remui", summary: "unsigned integer remainder", class: signlessIntLike,
		detail: "Treats the operands as unsigned. Remainder by zero is undefined behaviour."},
	{name: "ceildivsi", summary: "signed ceiling integer division", class: signlessIntLike,
		detail: "Rounds toward positive infinity. Division by zero and MIN / -1 are undefined behaviour."},
	{name: "ceildivui", summary: "unsigned ceiling integer division", class: signlessIntLike,
		detail: "Rounds toward positive infinity. Division by zero is undefined behaviour."},
	{name: "floordivsi", summary: "signed floor integer division", class: signlessIntLike,
		detail: "Rounds toward negative infinity. Division by zero and MIN / -1 are undefined behaviour."},
	{name: "maxsi", summary: "signed integer maximum", class: signlessIntLike, traits: ir.Commutative},
	{name: "maxui", summary: "unsigned integer maximum", class: signlessIntLike, traits: ir.Commutative},
	{name: "minsi", summary: "signed integer minimum", class: signlessIntLike, traits: ir.Commutative},
	{name: "minui", summary: "unsigned integer minimum", class: signlessIntLike, traits: ir.Commutative},
	{name: "andi", summary: "integer bitwise and", class: signlessIntLike, traits: ir.Commutative | ir.Idempotent},
	{name: "ori", summary: "integer bitwise or", class: signlessIntLike, traits: ir.Commutative | ir.Idempotent},
	{name: "xori", summary: "integer bitwise exclusive or", class: signlessIntLike, traits: ir.Commutative},
	{name: "shli", summary: "integer left shift", class: signlessIntLike, flags: overflow,
		detail: "Shifting by the bit width or more is poison."},
	{name: "shrsi", summary: "signed (arithmetic) integer right shift", class: signlessIntLike,
		detail: "Fills with the sign bit. Shifting by the bit width or more is poison."},
	{name: "shrui", summary: "unsigned (logical) integer right shift", class: signlessIntLike,
		detail: "Fills with zeros. Shifting by the bit width or more is poison."},
	{name: "addf", summary: "floating-point addition", class: floatLike, traits: ir.Commutative, flags: fastMath},
	{name: "subf", summary: "floating-point subtraction", class: floatLike, flags: fastMath},
	{name: "mulf", summary: "floating-point multiplication", class: floatLike, traits: ir.Commutative, flags: fastMath},
	{name: "divf", summary: "floating-point division", class: floatLike, flags: fastMath},
	{name: "remf", summary: "floating-point remainder", class: floatLike, flags: fastMath,
		detail: "C's fmod: the remainder has the sign of the dividend."},
	{name: "maximumf", summary: "floating-point maximum", class: floatLike, traits: ir.Commutative, flags: fastMath,
		detail: "IEEE 754-2019 maximum: NaN if either operand is NaN, and -0.0 < +0.0."},
	{name: "minimumf", summary: "floating-point minimum", class: floatLike, traits: ir.Commutative, flags: fastMath,
		detail: "IEEE 754-2019 minimum: NaN if either operand is NaN, and -0.0 < +0.0."},
	{name: "maxnumf", summary: "floating-point maximum number", class: floatLike, traits: ir.Commutative, flags: fastMath,
		detail: "IEEE 754-2008 maxNum: a NaN operand is ignored."},
	{name: "minnumf", summary: "floating-point minimum number", class: floatLike, traits: ir.Commutative, flags: fastMath,
		detail: "IEEE 754-2008 minNum: a NaN operand is ignored."},
	{name: "negf", summary: "floating-point negation", class: floatLike, traits: ir.Involution, flags: fastMath, unary: true,
		detail: "Flips the sign bit."},
}

// castOp is one row of the table of cast ops.
type castOp struct {
	name, summary string
	from, to      typeClass
	// widths reports whether the element types' widths are compatible.
	widths   func(from, to ir.Type) bool
	fastmath bool // has the optional fastmath property
	rounding bool // has the optional roundingmode property
}

func wider(from, to ir.Type) bool    { return bitWidth(to) > bitWidth(from) }
func narrower(from, to ir.Type) bool { return bitWidth(to) < bitWidth(from) }
func anyWidth(from, to ir.Type) bool { return true }

// oneIndex accepts index ↔ integer casts only.
func oneIndex(from, to ir.Type) bool { return (from == ir.Index) != (to == ir.Index) }

var castOps = []castOp{
	{name: "extsi", summary: "integer sign extension", from: signlessIntOnlyLike, to: signlessIntOnlyLike, widths: wider},
	{name: "extui", summary: "integer zero extension", from: signlessIntOnlyLike, to: signlessIntOnlyLike, widths: wider},
	{name: "trunci", summary: "integer truncation", from: signlessIntOnlyLike, to: signlessIntOnlyLike, widths: narrower},
	{name: "extf", summary: "floating-point extension", from: floatLike, to: floatLike, widths: wider, fastmath: true},
	{name: "truncf", summary: "floating-point truncation", from: floatLike, to: floatLike, widths: narrower, fastmath: true, rounding: true},
	{name: "sitofp", summary: "signed integer to floating-point conversion", from: signlessIntOnlyLike, to: floatLike, widths: anyWidth},
	{name: "uitofp", summary: "unsigned integer to floating-point conversion", from: signlessIntOnlyLike, to: floatLike, widths: anyWidth},
	{name: "fptosi", summary: "floating-point to signed integer conversion", from: floatLike, to: signlessIntOnlyLike, widths: anyWidth},
	{name: "fptoui", summary: "floating-point to unsigned integer conversion", from: floatLike, to: signlessIntOnlyLike, widths: anyWidth},
	{name: "index_cast", summary: "sign-extending or truncating cast between index and integers", from: indexOrIntLike, to: indexOrIntLike, widths: oneIndex},
	{name: "index_castui", summary: "zero-extending or truncating cast between index and integers", from: indexOrIntLike, to: indexOrIntLike, widths: oneIndex},
	{name: "bitcast", summary: "bit-preserving cast between integers and floats of one width", from: intOrFloatLike, to: intOrFloatLike,
		widths: func(from, to ir.Type) bool { return bitWidth(from) == bitWidth(to) }},
}

// castDetails documents the cast ops beyond their summaries.
var castDetails = map[string]string{
	"extsi":        "The result type must be strictly wider than the operand type.",
	"extui":        "The result type must be strictly wider than the operand type.",
	"trunci":       "Keeps the low bits. The result type must be strictly narrower than the operand type.",
	"extf":         "Exact. The result type must be strictly wider than the operand type.",
	"truncf":       "Rounds to nearest even unless `roundingmode` says otherwise. The result type must be strictly narrower.",
	"sitofp":       "Reads the operand as signed and rounds to nearest even.",
	"uitofp":       "Reads the operand as unsigned and rounds to nearest even.",
	"fptosi":       "Rounds toward zero; a NaN or out-of-range value gives poison.",
	"fptoui":       "Rounds toward zero; a NaN or out-of-range value gives poison.",
	"index_cast":   "Sign-extends when widening, truncates when narrowing. One side must be `index`.",
	"index_castui": "Zero-extends when widening, truncates when narrowing. One side must be `index`.",
	"bitcast":      "Reinterprets the bits; both element types have the same width.",
}

// Dialect is the arith dialect: integer and floating-point arithmetic,
// comparisons, select and casts on scalars, vectors and tensors, with
// upstream MLIR's names, properties, syntax, folders and canonicalizations.
var Dialect = &ir.Dialect{
	Name:    "arith",
	Summary: "Basic integer and floating-point arithmetic (upstream MLIR compatible)",
	Description: "Elementwise arithmetic on signless integers, index and floats, taken as scalars or " +
		"as the elements of vectors and tensors. Integer ops wrap around at the type's width; " +
		"float ops round to nearest even. The ops, their properties and their pretty syntax are " +
		"those of upstream MLIR 19, so mlir-opt reads what Strata prints and vice versa.",
	MaterializeConstant: materializeConstant,
}

// opDefs indexes Dialect.Ops by name.
var opDefs = map[string]*ir.OpDef{}

func init() {
	Dialect.Ops = append(Dialect.Ops, constantDef())
	for _, b := range binaryOps {
		Dialect.Ops = append(Dialect.Ops, binaryDef(b))
	}
	Dialect.Ops = append(Dialect.Ops, cmpIDef(), cmpFDef(), selectDef())
	for _, c := range castOps {
		Dialect.Ops = append(Dialect.Ops, castDef(c))
	}
	for _, d := range Dialect.Ops {
		opDefs[d.Name] = d
		d.Fold = folders[d.Name]
		d.Canonicalize = patterns[d.Name]
	}
}

func constantDef() *ir.OpDef {
	return &ir.OpDef{
		Name:    OpConstant,
		Summary: "integer, float or elements constant",
		Description: "Produces the constant `value`, whose type is the result type: an integer, index or " +
			"float attribute, or a dense elements attribute of a vector or tensor type.",
		Traits:   ir.Pure | ir.ConstantLike,
		Results:  []ir.ArgDoc{{Name: "result", Doc: "signless integer, index, float, or a vector or tensor of them"}},
		Attrs:    []ir.ArgDoc{{Name: "value", Doc: "the constant; its type is the result type"}},
		Inherent: []string{"value"},
		Example:  "%c = arith.constant 1.5 : f32\n%i = arith.constant 4 : index\n%t = arith.constant dense<[1, 2]> : tensor<2xi32>",
		Verify:   verifyConstant,
		Parse:    parseConstant,
		Print:    printConstant,
	}
}

// isComplexElements reports whether v is a dense tensor or vector of
// complex numbers: MLIR's arith.constant takes any elements attribute, and
// these are the ones irc's type classes leave out. Nothing in arith
// computes on them; the interpreter refuses them with a located error.
func isComplexElements(v ir.Attribute) bool {
	d, ok := v.(ir.DenseAttr)
	if !ok {
		return false
	}
	switch d.Type.(type) {
	case *ir.TensorType, *ir.VectorType:
	default:
		return false
	}
	_, complex := d.Type.ElementType().(*ir.ComplexType)
	return complex
}

func verifyConstant(op *ir.Operation) error {
	if op.NumOperands() != 0 || op.NumResults() != 1 {
		return fmt.Errorf("expected 0 operands and 1 result, got %d and %d", op.NumOperands(), op.NumResults())
	}
	v := op.Properties().Get("value")
	if v == nil {
		return nil // ir.Verify reports the missing value of a ConstantLike op
	}
	t := op.Result(0).Type()
	if typeOfAttr(v) != t {
		return fmt.Errorf("failed to verify that all of {value, result} have same type")
	}
	if ir.IsInteger(ir.ElementTypeOf(t)) && !isSignlessInt(ir.ElementTypeOf(t)) {
		return fmt.Errorf("integer return type must be signless")
	}
	if !intOrFloatLike.matches(t) && !signlessIntLike.matches(t) && !isComplexElements(v) {
		return fmt.Errorf("value must be an integer, float, or elements attribute")
	}
	if vt, ok := t.(*ir.VectorType); ok && vt.Scalable != nil {
		// A scalable vector's length is known only at run time: only a
		// splat says what every element is.
		if d, ok := v.(ir.DenseAttr); ok && !d.Splat {
			for i := int64(1); i < d.Len(); i++ {
				if d.At(i) != d.At(0) {
					// (upstream's message, spelling included)
					return fmt.Errorf("intializing scalable vectors with elements attribute is not supported unless it's a vector splat")
				}
			}
		}
	}
	return nil
}

func binaryDef(b binaryOp) *ir.OpDef {
	name := "arith." + b.name
	d := &ir.OpDef{
		Name:    name,
		Summary: b.summary,
		Traits:  ir.Pure | ir.SameOperandsAndResultType | b.traits,
		Results: []ir.ArgDoc{{Name: "result", Doc: b.class.name + " (the operands' type)"}},
	}
	n := 2
	kind := "integers"
	if b.class.name == floatLike.name {
		kind = "floats"
	}
	d.Description = fmt.Sprintf("Computes the %s of two %s elementwise on scalars, vectors or tensors.", b.summary, kind)
	d.Operands = []ir.ArgDoc{{Name: "lhs", Doc: b.class.name}, {Name: "rhs", Doc: b.class.name}}
	d.Example = fmt.Sprintf("%%r = %s %%a, %%b : %s", name, map[bool]string{true: "f32", false: "i32"}[kind == "floats"])
	if b.unary {
		n = 1
		d.Description = fmt.Sprintf("Computes the %s of floats elementwise on scalars, vectors or tensors.", b.summary)
		d.Operands = []ir.ArgDoc{{Name: "operand", Doc: b.class.name}}
		d.Example = fmt.Sprintf("%%r = %s %%a : f32", name)
	}
	if b.detail != "" {
		d.Description += " " + b.detail
	}
	if b.flags != nil {
		d.Inherent = []string{b.flags.prop}
		d.Attrs = []ir.ArgDoc{flagsDoc(b.flags)}
		d.Example = strings.Replace(d.Example, " :", " "+b.flags.keyword+"<"+b.flags.flags[0]+"> :", 1) + "\n" + d.Example
	}
	d.Verify = func(op *ir.Operation) error {
		if err := arity(op, n, 1); err != nil {
			return err
		}
		for i, v := range op.Operands() {
			if err := b.class.check("operand", i, v.Type()); err != nil {
				return err
			}
		}
		if err := b.class.check("result", 0, op.Result(0).Type()); err != nil {
			return err
		}
		if b.flags != nil {
			return b.flags.verify(op)
		}
		return nil
	}
	d.Parse = parseElementwise(n, b.flags)
	d.Print = printElementwise(b.flags)
	return d
}

func flagsDoc(e *bitEnum) ir.ArgDoc {
	return ir.ArgDoc{Name: e.prop, Doc: fmt.Sprintf("`%s<...>` flags (%s); default `%s`",
		e.mnemonic, strings.Join(e.flags, ", "), e.attr(0))}
}

// arity checks the numbers of operands and results.
func arity(op *ir.Operation, operands, results int) error {
	if op.NumOperands() != operands {
		return fmt.Errorf("expected %d operands, but found %d", operands, op.NumOperands())
	}
	if op.NumResults() != results {
		return fmt.Errorf("expected %d results, but found %d", results, op.NumResults())
	}
	return nil
}

func cmpIDef() *ir.OpDef {
	return &ir.OpDef{
		Name:    OpCmpI,
		Summary: "integer comparison",
		Description: "Compares two integers elementwise with `predicate` and returns i1 (of the operands' " +
			"shape). The predicate is an i64 in upstream's encoding: " + predicateList(CmpIPredicateNames[:]) + ".",
		Traits:   ir.Pure,
		Operands: []ir.ArgDoc{{Name: "lhs", Doc: signlessIntLike.name}, {Name: "rhs", Doc: signlessIntLike.name}},
		Results:  []ir.ArgDoc{{Name: "result", Doc: "bool-like, shaped like the operands"}},
		Attrs:    []ir.ArgDoc{{Name: "predicate", Doc: "i64 predicate: " + predicateList(CmpIPredicateNames[:])}},
		Inherent: []string{"predicate"},
		Example:  "%lt = arith.cmpi slt, %a, %b : i32",
		Verify: func(op *ir.Operation) error {
			return verifyCmp(op, signlessIntLike, len(CmpIPredicateNames), nil)
		},
		Parse: parseCmp(CmpIPredicateNames[:], signlessIntLike, nil),
		Print: printCmp(CmpIPredicateNames[:], nil),
	}
}

func cmpFDef() *ir.OpDef {
	return &ir.OpDef{
		Name:    OpCmpF,
		Summary: "floating-point comparison",
		Description: "Compares two floats elementwise with `predicate` and returns i1 (of the operands' " +
			"shape). Ordered predicates (o…) are false and unordered ones (u…) true when an operand is NaN. " +
			"The predicate is an i64 in upstream's encoding: " + predicateList(CmpFPredicateNames[:]) + ".",
		Traits:   ir.Pure,
		Operands: []ir.ArgDoc{{Name: "lhs", Doc: floatLike.name}, {Name: "rhs", Doc: floatLike.name}},
		Results:  []ir.ArgDoc{{Name: "result", Doc: "bool-like, shaped like the operands"}},
		Attrs: []ir.ArgDoc{{Name: "predicate", Doc: "i64 predicate: " + predicateList(CmpFPredicateNames[:])},
			flagsDoc(fastMath)},
		Inherent: []string{"predicate", "fastmath"},
		Example:  "%lt = arith.cmpf olt, %a, %b : f32",
		Verify: func(op *ir.Operation) error {
			return verifyCmp(op, floatLike, len(CmpFPredicateNames), fastMath)
		},
		Parse: parseCmp(CmpFPredicateNames[:], floatLike, fastMath),
		Print: printCmp(CmpFPredicateNames[:], fastMath),
	}
}

func predicateList(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%d", n, i)
	}
	return strings.Join(parts, ", ")
}

func verifyCmp(op *ir.Operation, class typeClass, npred int, flags *bitEnum) error {
	if err := arity(op, 2, 1); err != nil {
		return err
	}
	// Attributes first, then operands and results, as ODS verifies them.
	switch pred, ok := op.Properties().Get("predicate").(ir.IntegerAttr); {
	case op.Properties().Get("predicate") == nil:
		return fmt.Errorf("requires attribute 'predicate'")
	case !ok || pred.Type != ir.I64 || pred.Value < 0 || pred.Value >= int64(npred):
		cases := make([]string, npred)
		for i := range cases {
			cases[i] = strconv.Itoa(i)
		}
		return fmt.Errorf("attribute 'predicate' failed to satisfy constraint: allowed 64-bit signless integer cases: %s", strings.Join(cases, ", "))
	}
	for i, v := range op.Operands() {
		if err := class.check("operand", i, v.Type()); err != nil {
			return err
		}
	}
	if op.Operand(0).Type() != op.Operand(1).Type() {
		return fmt.Errorf("requires all operands to have the same type")
	}
	if err := boolLike.check("result", 0, op.Result(0).Type()); err != nil {
		return err
	}
	if want := withElem(op.Operand(0).Type(), ir.I1); op.Result(0).Type() != want {
		return fmt.Errorf("failed to verify that result type has i1 element type and same shape as operands: expected '%s', but got '%s'", want, op.Result(0).Type())
	}
	if flags != nil {
		return flags.verify(op)
	}
	return nil
}

func selectDef() *ir.OpDef {
	return &ir.OpDef{
		Name:    OpSelect,
		Summary: "select between two values on a condition",
		Description: "Returns `true_value` where `condition` is true and `false_value` elsewhere. The condition " +
			"is i1, or (for vectors and tensors) i1 elements of the result's shape choosing elementwise.",
		Traits: ir.Pure,
		Operands: []ir.ArgDoc{{Name: "condition", Doc: "bool-like"}, {Name: "true_value", Doc: "any type"},
			{Name: "false_value", Doc: "the type of true_value"}},
		Results: []ir.ArgDoc{{Name: "result", Doc: "the type of true_value"}},
		Example: "%m = arith.select %c, %a, %b : i32\n%v = arith.select %cv, %x, %y : vector<4xi1>, vector<4xf32>",
		Verify:  verifySelect,
		Parse:   parseSelect,
		Print:   printSelect,
	}
}

func verifySelect(op *ir.Operation) error {
	if err := arity(op, 3, 1); err != nil {
		return err
	}
	c, t, f, r := op.Operand(0).Type(), op.Operand(1).Type(), op.Operand(2).Type(), op.Result(0).Type()
	if err := boolLike.check("operand", 0, c); err != nil {
		return err
	}
	if t != f || t != r {
		return fmt.Errorf("failed to verify that all of {true_value, false_value, result} have same type")
	}
	if c != ir.I1 && !sameShape(c, r) {
		return fmt.Errorf("failed to verify that condition is signless i1 or has matching shape")
	}
	if c != ir.I1 && withElem(r, ir.I1) != c {
		return fmt.Errorf("expected condition type to have the same shape as the result type, expected '%s', but got '%s'", withElem(r, ir.I1), c)
	}
	return nil
}

func castDef(c castOp) *ir.OpDef {
	name := "arith." + c.name
	d := &ir.OpDef{
		Name:        name,
		Summary:     c.summary,
		Description: "Converts each element of a scalar, vector or tensor; the shapes of operand and result agree. " + castDetails[c.name],
		Traits:      ir.Pure,
		Operands:    []ir.ArgDoc{{Name: "in", Doc: c.from.name}},
		Results:     []ir.ArgDoc{{Name: "out", Doc: c.to.name}},
		Example:     fmt.Sprintf("%%r = %s %%x : %s", name, castExamples[c.name]),
		Parse:       parseCast(c),
		Print:       printCast(c),
	}
	if c.fastmath {
		d.Inherent = append(d.Inherent, "fastmath")
		d.Attrs = append(d.Attrs, flagsDoc(fastMath))
	}
	if c.rounding {
		d.Inherent = append(d.Inherent, "roundingmode")
		d.Attrs = append(d.Attrs, ir.ArgDoc{Name: "roundingmode", Doc: "optional i32 rounding mode: " + predicateList(roundingModes)})
	}
	d.Verify = func(op *ir.Operation) error {
		if err := arity(op, 1, 1); err != nil {
			return err
		}
		from, to := op.Operand(0).Type(), op.Result(0).Type()
		if err := c.from.check("operand", 0, from); err != nil {
			return err
		}
		if err := c.to.check("result", 0, to); err != nil {
			return err
		}
		if !sameTensorDims(from, to) {
			return fmt.Errorf("failed to verify that input and output have the same tensor dimensions")
		}
		if !sameShape(from, to) {
			return fmt.Errorf("requires the same shape for all operands and results")
		}
		if !c.widths(ir.ElementTypeOf(from), ir.ElementTypeOf(to)) || !ir.AttrEqual(encoding(from), encoding(to)) {
			return fmt.Errorf("operand type '%s' and result type '%s' are cast incompatible", from, to)
		}
		if m, ok := op.Properties().Get("roundingmode").(ir.IntegerAttr); c.rounding && op.Properties().Get("roundingmode") != nil &&
			(!ok || m.Type != ir.I32 || m.Value < 0 || m.Value >= int64(len(roundingModes))) {
			return fmt.Errorf("requires property 'roundingmode' to be an i32 in [0, %d)", len(roundingModes))
		}
		if c.fastmath {
			return fastMath.verify(op)
		}
		return nil
	}
	return d
}

var castExamples = map[string]string{
	"extsi": "i8 to i32", "extui": "i8 to i32", "trunci": "i32 to i8",
	"extf": "f16 to f32", "truncf": "f32 to f16",
	"sitofp": "i32 to f32", "uitofp": "i32 to f32", "fptosi": "f32 to i32", "fptoui": "f32 to i32",
	"index_cast": "index to i64", "index_castui": "i32 to index", "bitcast": "f32 to i32",
}
