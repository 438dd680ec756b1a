// Package graph defines the graph dialect: value-semantics ops on ranked
// tensors (elementwise math with NumPy broadcasting, reductions, shape ops,
// matmul and convolution, composites such as softmax and attention, and the
// fusion region op). It is where programs enter Strata.
//
// Every op is one row of the table in ops.go: its name, operands, traits,
// attribute schema, shape rule and docs. The OpDefs of Dialect are generated
// from that table, so an op's verifier, type inference (InferTypes), builder
// (Build) and reference docs all come from the same row.
//
// Shape rules follow NumPy: a "?" size is unknown until run time, broadcasts
// with anything, and yields "?" unless the other size is a static size other
// than 1. Symbolic sizes (DESIGN §6) are carried in #graph.dims tensor
// encodings (dims.go); shape rules compute with them and report the
// constraints where sizes meet.
package graph

import (
	"fmt"
	"strings"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// Name is the dialect's name, the prefix of its op names.
const Name = "graph"

// Dialect is the graph dialect, ready to load into an ir.Context.
var Dialect = newDialect()

// operand describes one operand of an op: its name, the element types it
// accepts, and its doc.
type operand struct {
	name  string
	class elemClass
	doc   string
}

// shapeRule computes an op's result types from its operand types and
// validated attributes. declared holds the result types written in the IR
// (nil when inferring for a builder); rules for ops whose result cannot be
// derived from operands and attributes (cast, iota, full) read it. Rules
// compute with symbolic sizes (DimsOf) and add to cs the constraints the
// sizes must meet at run time, such as s0 == s1 where two broadcast dims
// meet; cs may be nil.
type shapeRule func(in []*ir.TensorType, a attrView, declared []ir.Type, cs *sym.Constraints) ([]ir.Type, error)

// opSpec is one row of the op table.
type opSpec struct {
	name        string // without the "graph." prefix
	summary     string
	description string
	operands    []operand
	// optional counts trailing operands that may be left out; variadic lets
	// the last operand repeat.
	optional int
	variadic bool
	results  []ir.ArgDoc
	traits   ir.Trait
	attrs    []attrSpec
	rule     shapeRule
	// verify checks what the shape rule cannot see (regions, parents).
	verify  func(op *ir.Operation) error
	fold    func(op *ir.Operation, operands []ir.Attribute) []ir.FoldResult
	canon   []*ir.Pattern
	example string
	// class is what the op is to graph-fuse and the lowering (see Class).
	class Class
}

func (s *opSpec) fullName() string { return Name + "." + s.name }

// checkArity checks the operand count.
func (s *opSpec) checkArity(n int) error {
	lo, hi := len(s.operands)-s.optional, len(s.operands)
	switch {
	case s.variadic && n < lo:
		return fmt.Errorf("expects at least %d operands, got %d", lo, n)
	case !s.variadic && (n < lo || n > hi):
		if lo == hi {
			return fmt.Errorf("expects %d operands, got %d", lo, n)
		}
		return fmt.Errorf("expects %d to %d operands, got %d", lo, hi, n)
	}
	return nil
}

// operandTypes checks each operand type against the spec.
func (s *opSpec) operandTypes(ts []ir.Type) ([]*ir.TensorType, error) {
	out := make([]*ir.TensorType, len(ts))
	for i, t := range ts {
		o := s.operands[min(i, len(s.operands)-1)]
		tt, err := asTensor(t, fmt.Sprintf("operand #%d (%s)", i, o.name), o.class)
		if err != nil {
			return nil, err
		}
		out[i] = tt
	}
	return out, nil
}

// infer runs every check that does not need the op itself and returns the
// result types the op must have.
func (s *opSpec) infer(operandTypes []ir.Type, props, discardable ir.DictAttr, declared []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	if err := s.checkArity(len(operandTypes)); err != nil {
		return nil, err
	}
	in, err := s.operandTypes(operandTypes)
	if err != nil {
		return nil, err
	}
	if err := s.checkAttrs(props, discardable); err != nil {
		return nil, err
	}
	return s.rule(in, attrView{props}, declared, cs)
}

// verifyOp is the OpDef.Verify of every graph op.
func (s *opSpec) verifyOp(op *ir.Operation) error {
	for i, t := range op.OperandTypes() {
		if tt, ok := t.(*ir.TensorType); ok {
			if err := CheckDims(tt); err != nil {
				return fmt.Errorf("operand #%d: %w", i, err)
			}
		}
	}
	for i, t := range op.ResultTypes() {
		if tt, ok := t.(*ir.TensorType); ok {
			if err := CheckDims(tt); err != nil {
				return fmt.Errorf("result #%d: %w", i, err)
			}
		}
	}
	props, rest := s.inherentView(op)
	declared := op.ResultTypes()
	want, err := s.infer(op.OperandTypes(), props, rest, declared, nil)
	if err != nil {
		return err
	}
	if len(want) != len(declared) {
		return fmt.Errorf("expects %d results, got %d", len(want), len(declared))
	}
	for i, t := range declared {
		if !sameShapeAndElem(t, want[i]) || !sameSymbolicDims(t, want[i]) {
			return fmt.Errorf("result #%d has type %s, but the operands and attributes give %s", i, t, want[i])
		}
	}
	if s.verify != nil {
		return s.verify(op)
	}
	return nil
}

// inferTypes is the OpDef.InferTypes of every graph op.
func (s *opSpec) inferTypes(operands []ir.Type, props ir.DictAttr, loc ir.Location) ([]ir.Type, error) {
	ts, err := s.infer(operands, props, nil, nil, nil)
	if err != nil {
		return nil, ir.Errorf(loc, "'%s' op %s", s.fullName(), err)
	}
	return ts, nil
}

// InferSymbolic computes the result types of the graph op op from its
// operands' current types, with symbolic sizes, and the constraints on
// sizes that must hold for them (s0 == s1 where two broadcast dims meet,
// s0*4 == s2 for a reshape). Ops whose results come from their region
// (graph.fusion) keep their declared types.
func InferSymbolic(op *ir.Operation) ([]ir.Type, []sym.Constraint, error) {
	s, ok := specs[op.Name()]
	if !ok {
		return nil, nil, fmt.Errorf("%s is not a graph op", op.Name())
	}
	props, rest := s.inherentView(op)
	var cs sym.Constraints
	ts, err := s.infer(op.OperandTypes(), props, rest, op.ResultTypes(), &cs)
	if err != nil {
		return nil, nil, ir.Errorf(op.Loc(), "'%s' op %s", s.fullName(), err)
	}
	return ts, cs.List(), nil
}

// ReinferSymbolic re-infers, in order, the result types of every graph op
// of b and of the graph.fusion bodies in it (a fusion's block arguments
// take its operands' types and its results its yield's), as InferSymbolic
// does, and hands each op's size constraints to check, whose error stops
// the walk. It is how new argument types, with symbolic or with concrete
// sizes, reach the rest of a graph function.
func ReinferSymbolic(b *ir.Block, check func(op *ir.Operation, cs []sym.Constraint) error) error {
	for _, op := range b.Ops() {
		switch {
		case op.Name() == Name+".fusion":
			inner := op.Region(0).Front()
			for i, a := range inner.Arguments() {
				a.SetType(op.Operand(i).Type())
			}
			if err := ReinferSymbolic(inner, check); err != nil {
				return err
			}
			if y := inner.Last(); y != nil {
				for i, v := range y.Operands() {
					op.Result(i).SetType(v.Type())
				}
			}
		case op.Name() == Name+".yield" || !strings.HasPrefix(op.Name(), Name+"."):
		default:
			ts, cs, err := InferSymbolic(op)
			if err != nil {
				return err
			}
			for i, t := range ts {
				op.Result(i).SetType(t)
			}
			if err := check(op, cs); err != nil {
				return err
			}
		}
	}
	return nil
}

// def turns the row into an OpDef.
func (s *opSpec) def() *ir.OpDef {
	d := &ir.OpDef{
		Name:         s.fullName(),
		Summary:      s.summary,
		Description:  s.description,
		Traits:       s.traits,
		Results:      s.results,
		Example:      s.example,
		Verify:       s.verifyOp,
		InferTypes:   s.inferTypes,
		Fold:         s.fold,
		Canonicalize: s.canon,
	}
	for i, o := range s.operands {
		doc := o.doc
		switch {
		case s.variadic && i == len(s.operands)-1:
			doc += " (variadic)"
		case i >= len(s.operands)-s.optional:
			doc += " (optional)"
		}
		d.Operands = append(d.Operands, ir.ArgDoc{Name: o.name, Doc: doc})
	}
	for _, a := range s.attrs {
		doc := a.doc
		if !a.required {
			doc += " (optional)"
		}
		d.Attrs = append(d.Attrs, ir.ArgDoc{Name: a.name, Doc: doc})
		d.Inherent = append(d.Inherent, a.name)
	}
	return d
}

// specs indexes the op table by full op name.
var specs = map[string]*opSpec{}

func newDialect() *ir.Dialect {
	d := &ir.Dialect{
		Name:    Name,
		Summary: "Tensor-level ops with value semantics and NumPy broadcasting.",
		Description: "The graph dialect holds programs as dataflow over ranked tensors of " +
			"f64, f32, f16, bf16, i64, i32 and i1. Composites (softmax, layer_norm, attention…) " +
			"are decomposed into primitives by graph-decompose; graph-fuse groups ops into " +
			"graph.fusion regions, one per future kernel.",
		MaterializeConstant: materializeConstant,
	}
	for _, s := range opTable() {
		specs[s.fullName()] = s
		d.Ops = append(d.Ops, s.def())
	}
	return d
}

// materializeConstant builds a graph.constant of type t holding a: a dense
// attribute of that type, or a scalar splatted over a static shape.
func materializeConstant(b *ir.Builder, a ir.Attribute, t ir.Type, loc ir.Location) *ir.Operation {
	tt, ok := t.(*ir.TensorType)
	if !ok || !tt.Ranked() || numElements(tt.Shape()) < 0 {
		return nil
	}
	var dense ir.DenseAttr
	switch a := a.(type) {
	case ir.DenseAttr:
		if !sameShapeAndElem(a.Type, t) {
			return nil
		}
		dense = a
	case ir.IntegerAttr, ir.FloatAttr:
		if ir.ElementTypeOf(t) != attrType(a) {
			return nil
		}
		var err error
		if dense, err = ir.DenseSplat(tt, a); err != nil {
			return nil
		}
	default:
		return nil
	}
	return b.Create(ir.OperationState{
		Name: Name + ".constant", Loc: loc, ResultTypes: []ir.Type{t},
		Properties: ir.Dict(ir.NamedAttr{Name: "value", Value: dense}),
	})
}

// attrType is the type of a scalar attribute.
func attrType(a ir.Attribute) ir.Type {
	switch a := a.(type) {
	case ir.IntegerAttr:
		return a.Type
	case ir.FloatAttr:
		return a.Type
	}
	return nil
}
