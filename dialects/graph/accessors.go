package graph

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// Class is what an op is to graph-fuse and the lowering: a fact of its row
// in the op table, read by the fusion planner (passes/fusion) and checked
// for every op by the completeness tests.
type Class uint8

// The classes, in the order the fusion planner relies on: every class from
// ClassPointwise on does run-time work and must sit in a fusion.
const (
	// ClassNone is no class: not a graph op (or a row missing its class,
	// which the completeness tests report).
	ClassNone Class = iota
	// ClassStructure ops are structure no kernel computes: graph.fusion and
	// graph.yield.
	ClassStructure
	// ClassConstant ops compute nothing at run time (constant, iota, full):
	// they are cloned into the groups that read them.
	ClassConstant
	// ClassView ops (reshape, transpose, broadcast_to, slice) only remap
	// indices.
	ClassView
	// ClassPointwise ops compute each output element from a fixed set of
	// input elements: elementwise math, and the injective concat, pad and
	// gather.
	ClassPointwise
	// ClassReduction ops fold one or more axes.
	ClassReduction
	// ClassTemplate ops (matmul, conv2d) have their own kernel schedule.
	ClassTemplate
	// ClassScatter ops (scatter_add) accumulate into positions their
	// data names: a kernel of their own, after which the result is read.
	ClassScatter
	// ClassComposite ops are expanded into primitives by graph-decompose.
	ClassComposite
	// ClassCollective ops (all_reduce, all_gather, reduce_scatter,
	// broadcast, reduce_to) communicate among ranks: never fused, each is
	// its own step of the launch plan, run by a communication library on
	// the host's side rather than as a kernel.
	ClassCollective
)

var classNamesByClass = [...]string{"none", "structure", "constant", "view", "pointwise", "reduction", "template", "scatter", "composite", "collective"}

func (c Class) String() string {
	if int(c) < len(classNamesByClass) {
		return classNamesByClass[c]
	}
	return fmt.Sprintf("Class(%d)", c)
}

// ClassOf returns the class of the graph op named name (ClassNone for a
// name that is not a graph op).
func ClassOf(name string) Class {
	if s, ok := specs[name]; ok {
		return s.class
	}
	return ClassNone
}

// IsComposite reports whether graph-decompose expands the op named name
// into primitives (softmax, layer_norm, attention…).
func IsComposite(name string) bool { return ClassOf(name) == ClassComposite }

// Default returns the value the row of op name declares for its absent
// attribute attr (an int64, float64, bool or string), and whether it
// declares one.
func Default(name, attr string) (any, bool) {
	s, ok := specs[name]
	if !ok {
		return nil, false
	}
	a, ok := s.attr(attr)
	if !ok || a.def == nil {
		return nil, false
	}
	return a.def, true
}

// IntAttr returns op's integer attribute name, or the row's default when it
// is absent (0 when the row declares none).
func IntAttr(op *ir.Operation, name string) int64 {
	if v, ok := op.Attr(name).(ir.IntegerAttr); ok {
		return v.Value
	}
	d, _ := Default(op.Name(), name)
	v, _ := d.(int64)
	return v
}

// FloatAttr returns op's float attribute name, or the row's default when it
// is absent (0 when the row declares none).
func FloatAttr(op *ir.Operation, name string) float64 {
	if v, ok := op.Attr(name).(ir.FloatAttr); ok {
		return v.Value()
	}
	d, _ := Default(op.Name(), name)
	v, _ := d.(float64)
	return v
}

// BoolAttr returns op's boolean attribute name, or the row's default when
// it is absent (false when the row declares none).
func BoolAttr(op *ir.Operation, name string) bool {
	if v, ok := op.Attr(name).(ir.IntegerAttr); ok {
		return v.Value != 0
	}
	d, _ := Default(op.Name(), name)
	v, _ := d.(bool)
	return v
}

// StringAttr returns op's string attribute name, or the row's default when
// it is absent ("" when the row declares none).
func StringAttr(op *ir.Operation, name string) string {
	if v, ok := op.Attr(name).(ir.StringAttr); ok {
		return v.Value
	}
	d, _ := Default(op.Name(), name)
	v, _ := d.(string)
	return v
}

// Axis returns the axis of iota, argmax, concat, gather, scatter_add, softmax,
// log_softmax, logsumexp, layer_norm and rms_norm as written (it may be negative),
// with the row's default (-1 for the composites) when absent.
func Axis(op *ir.Operation) int64 { return IntAttr(op, "axis") }

// Epsilon returns the epsilon of layer_norm and rms_norm (default 1e-5).
func Epsilon(op *ir.Operation) float64 { return FloatAttr(op, "epsilon") }

// KeepDims returns the keepdims flag of a reduction, argmax or logsumexp (default
// false).
func KeepDims(op *ir.Operation) bool { return BoolAttr(op, "keepdims") }

// Groups returns conv2d's channel groups (default 1).
func Groups(op *ir.Operation) int64 { return IntAttr(op, "groups") }

// Approximate returns gelu's approximation, "none" (the default) or
// "tanh".
func Approximate(op *ir.Operation) string { return StringAttr(op, "approximate") }

// Predicate returns graph.cmp's predicate.
func Predicate(op *ir.Operation) string { return StringAttr(op, "predicate") }

// Causal reports whether graph.attention applies a causal mask (default
// false).
func Causal(op *ir.Operation) bool { return BoolAttr(op, "causal") }

// Scale returns graph.attention's explicit score scale, and false when it
// is absent (the scale is then 1/√D, D being q's last dim).
func Scale(op *ir.Operation) (float64, bool) {
	v, ok := op.Attr("scale").(ir.FloatAttr)
	if !ok {
		return 0, false
	}
	return v.Value(), true
}

// Conv2DParamsOf reads graph.conv2d's attributes, with their defaults
// (strides and dilations 1, no padding, one group), as its shape rule does.
func Conv2DParamsOf(op *ir.Operation) (Conv2DParams, error) {
	s, ok := specs[op.Name()]
	if !ok || op.Name() != OpConv2D {
		return Conv2DParams{}, fmt.Errorf("%s is not %s", op.Name(), OpConv2D)
	}
	props, _ := s.inherentView(op)
	return conv2dParams(attrView{props})
}
