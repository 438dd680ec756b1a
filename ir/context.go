package ir

import (
	"sort"
	"strings"
	"sync"
)

// Trait is a set of static properties of an op, as in MLIR's op traits.
type Trait uint32

// Op traits. They are bits so an OpDef lists them as one value.
const (
	// Pure ops have no side effects and can be removed when unused, hoisted and CSE'd.
	Pure Trait = 1 << iota
	// Commutative ops give the same result for any order of their operands.
	Commutative
	// Terminator ops end a block.
	Terminator
	// ReturnLike terminators return control to the parent op.
	ReturnLike
	// SameOperandsAndResultType ops have every operand and result of one type.
	SameOperandsAndResultType
	// IsolatedFromAbove ops' regions do not use values defined outside them.
	IsolatedFromAbove
	// NoTerminator ops' blocks need not end with a terminator.
	NoTerminator
	// SingleBlock ops' regions hold at most one block.
	SingleBlock
	// SymbolTable ops hold symbols whose names are unique among their children.
	SymbolTable
	// Symbol ops define a symbol with the sym_name attribute.
	Symbol
	// ConstantLike ops produce a constant given by their "value" attribute.
	ConstantLike
	// Idempotent ops satisfy f(f(x)) = f(x).
	Idempotent
	// Involution ops satisfy f(f(x)) = x.
	Involution
	// RecursiveEffects ops have the effects of the ops nested in them.
	RecursiveEffects
	// GraphRegion ops' regions allow uses before definitions (no dominance).
	GraphRegion
)

var traitNames = []string{
	"Pure", "Commutative", "Terminator", "ReturnLike", "SameOperandsAndResultType",
	"IsolatedFromAbove", "NoTerminator", "SingleBlock", "SymbolTable", "Symbol",
	"ConstantLike", "Idempotent", "Involution", "RecursiveEffects", "GraphRegion",
}

// String lists the traits by name, separated by ", ".
func (t Trait) String() string {
	var names []string
	for i, n := range traitNames {
		if t&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

// ArgDoc documents an operand, result or attribute of an op.
type ArgDoc struct {
	Name string
	Doc  string
}

// FoldResult is what folding produced for one result: a constant or an
// existing value.
type FoldResult struct {
	Attr  Attribute
	Value *Value
}

// OpDef is the definition of an op: everything Strata knows about it,
// registered once and looked up by name.
type OpDef struct {
	// Name is the full op name, "dialect.op".
	Name string
	// Summary is one line; Description may be longer (Markdown).
	Summary, Description string
	Traits               Trait
	// Operands, Results and Attrs document the op's signature for the docs.
	Operands, Results, Attrs []ArgDoc
	// Inherent names the attributes kept as properties (<{...}>). When parsing
	// the generic form, these names found among the discardable attributes
	// move into the properties, as MLIR does.
	Inherent []string
	// Example is a snippet of IR shown in the docs.
	Example string

	// Verify checks the op's own rules (arity, types, attributes). Structure,
	// traits and nested ops are checked by the verifier itself.
	Verify func(op *Operation) error
	// Fold, given the constant value of each operand (nil if unknown), returns
	// one FoldResult per result, or nil when the op does not fold.
	Fold func(op *Operation, operands []Attribute) []FoldResult
	// Canonicalize lists the op's canonicalization patterns.
	Canonicalize []*Pattern
	// InferTypes computes result types from operand types and properties.
	InferTypes func(operands []Type, props DictAttr, loc Location) ([]Type, error)

	// Parse and Print implement the op's custom (pretty) syntax. Print is
	// called after the printer wrote the result names and the op name.
	Parse func(p *Parser, st *OperationState) error
	Print func(p *Printer, op *Operation)
	// DefaultDialect lets ops nested in this op's regions omit that dialect's
	// prefix in the custom syntax ("return" for "func.return" in func.func).
	DefaultDialect string

	dialect *Dialect
	// unknown marks the stand-in definition of an op whose dialect is loaded
	// but has no op of that name (arith.addff built in Go): the op is
	// unregistered, and the verifier rejects it unless the context allowed
	// unregistered ops when it was created (see unknownOpDef).
	unknown bool
}

// unknownOpDef returns the stand-in definition newOperation gives an op
// named name that ctx's loaded dialect does not define, or nil when ctx
// has no such dialect or accepts unregistered ops.
func unknownOpDef(ctx *Context, name string) *OpDef {
	if ctx == nil || ctx.AllowUnregistered {
		return nil
	}
	d := ctx.Dialect(DialectOf(name))
	if d == nil {
		return nil
	}
	return &OpDef{Name: name, dialect: d, unknown: true}
}

// Dialect returns the dialect the op belongs to.
func (d *OpDef) Dialect() *Dialect { return d.dialect }

// Dialect is a named group of ops.
type Dialect struct {
	Name        string
	Summary     string
	Description string
	Ops         []*OpDef
	// MaterializeConstant builds an op producing the constant a of type t,
	// used by folding; nil if the dialect cannot.
	MaterializeConstant func(b *Builder, a Attribute, t Type, loc Location) *Operation
}

// Context holds the dialects and ops known to a compilation.
type Context struct {
	dialects map[string]*Dialect
	ops      map[string]*OpDef
	// AllowUnregistered accepts ops of unknown names (--allow-unregistered-dialect).
	AllowUnregistered bool
}

// NewContext returns a context with the given dialects loaded.
func NewContext(dialects ...*Dialect) *Context {
	c := &Context{dialects: map[string]*Dialect{}, ops: map[string]*OpDef{}}
	for _, d := range dialects {
		c.Load(d)
	}
	return c
}

// Load registers a dialect and its ops. Loading a dialect twice is harmless.
func (c *Context) Load(d *Dialect) {
	c.dialects[d.Name] = d
	bindOps(d)
	for _, op := range d.Ops {
		c.ops[op.Name] = op
	}
}

// bindMu orders the one-time binding of ops to their dialect: dialects are
// package-level values shared by every context, and contexts are made
// concurrently (tests, the autotuner's candidates).
var bindMu sync.Mutex

// bindOps points d's ops at d. An op is written only the first time, so
// a context made later reads it without a lock (the mutex orders that
// read after the write).
func bindOps(d *Dialect) {
	bindMu.Lock()
	defer bindMu.Unlock()
	for _, op := range d.Ops {
		if op.dialect != d {
			op.dialect = d
		}
	}
}

// OpDef returns the definition of the op named name, or nil.
func (c *Context) OpDef(name string) *OpDef {
	if c == nil {
		return nil
	}
	return c.ops[name]
}

// Dialect returns the loaded dialect named name, or nil.
func (c *Context) Dialect(name string) *Dialect { return c.dialects[name] }

// Dialects returns the loaded dialects sorted by name.
func (c *Context) Dialects() []*Dialect {
	ds := make([]*Dialect, 0, len(c.dialects))
	for _, d := range c.dialects {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name })
	return ds
}

// DialectOf returns the dialect prefix of an op name ("arith" for "arith.addf").
func DialectOf(opName string) string {
	if i := strings.IndexByte(opName, '.'); i >= 0 {
		return opName[:i]
	}
	return ""
}
