package fusion

import (
	"strings"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// class is what an op is to the fusion planner: the graph dialect's
// row fact (graph.Class). Ops of other dialects (func.return, arith,
// unregistered ops), existing fusions and collectives (each its own step of
// the launch plan) are other: never grouped, their operands and results
// cross group boundaries.
type class = graph.Class

// The planner's names for the classes (see graph.Class).
const (
	other     = graph.ClassNone
	constant  = graph.ClassConstant
	view      = graph.ClassView
	pointwise = graph.ClassPointwise
	reduction = graph.ClassReduction
	template  = graph.ClassTemplate
	scatter   = graph.ClassScatter
	composite = graph.ClassComposite
)

func classify(op *ir.Operation) class {
	if c := graph.ClassOf(op.Name()); c != graph.ClassStructure && c != graph.ClassCollective {
		return c
	}
	return other
}

// computes reports whether op does run-time work and so must sit in a
// fusion (views and constants need not).
func computes(op *ir.Operation) bool {
	c := classify(op)
	return c >= pointwise
}

// shapeOf returns the shape of a ranked tensor value, or nil.
func shapeOf(v *ir.Value) []int64 {
	if t, ok := v.Type().(*ir.TensorType); ok && t.Ranked() {
		return t.Shape()
	}
	return nil
}

// bytesOf estimates the bytes of a tensor value (0 when dynamic): the
// memory traffic saved when producer and consumer share a kernel.
func bytesOf(v *ir.Value) int64 {
	n := ir.NumElements(shapeOf(v))
	if n < 0 {
		return 0
	}
	switch e := ir.ElementTypeOf(v.Type()).(type) {
	case *ir.FloatType:
		return n * int64(max(e.Width/8, 1))
	case *ir.IntegerType:
		return n * int64(max(e.Width/8, 1))
	}
	return n
}

// cloneLimit is the element count up to which a non-splat graph.constant
// is cloned into the groups that read it; larger ones are passed in as
// operands so their data is not duplicated in every kernel.
const cloneLimit = 64

// cloneable reports whether a constant op is cloned into its readers.
func cloneable(op *ir.Operation) bool {
	if op.Name() != graph.OpConstant {
		return true // iota and full are index formulas
	}
	d, ok := op.Attr("value").(ir.DenseAttr)
	return ok && (d.Splat || d.Len() <= cloneLimit)
}

// intList reads an integer-list attribute (an array of integers or a
// dense array).
func intList(a ir.Attribute) []int64 {
	switch a := a.(type) {
	case ir.ArrayAttr:
		out := make([]int64, 0, len(a))
		for _, e := range a {
			if v, ok := e.(ir.IntegerAttr); ok {
				out = append(out, v.Value)
			}
		}
		return out
	case ir.DenseArrayAttr:
		return a.Values
	}
	return nil
}

// reducedAxes returns the axes a reduction folds, normalized and sorted.
func reducedAxes(op *ir.Operation) []int64 {
	rank := int64(len(shapeOf(op.Operand(0))))
	var axes []int64
	if op.Name() == graph.OpArgmax {
		axes = []int64{graph.Axis(op)}
	} else if a := op.Attr("axes"); a != nil {
		axes = intList(a)
	} else {
		for i := range rank {
			axes = append(axes, i)
		}
	}
	seen := make([]bool, rank)
	for _, a := range axes {
		if a < 0 {
			a += rank
		}
		if a >= 0 && a < rank {
			seen[a] = true
		}
	}
	axes = axes[:0:0]
	for i, s := range seen {
		if s {
			axes = append(axes, int64(i))
		}
	}
	return axes
}

// innerExtent returns the number of elements a reduction folds per row
// when its axes are the innermost ones and static, else -1: only such
// reductions can keep a row in one kernel and broadcast the result back.
func innerExtent(op *ir.Operation) int64 {
	in := shapeOf(op.Operand(0))
	axes := reducedAxes(op)
	if len(axes) == 0 {
		return -1
	}
	for i, a := range axes {
		if a != int64(len(in)-len(axes)+i) {
			return -1
		}
	}
	return ir.NumElements(in[len(in)-len(axes):])
}

// sameSpace reports whether two iteration spaces have the same points:
// equal element counts when static (a reshape or transpose between them
// is index remapping), identical shapes when dynamic (a `?` is assumed
// equal to the `?` at the same place).
func sameSpace(a, b []int64) bool {
	na, nb := ir.NumElements(a), ir.NumElements(b)
	if na >= 0 && nb >= 0 {
		return na == nb
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// smaller reports whether space a is statically smaller than b.
func smaller(a, b []int64) bool {
	na, nb := ir.NumElements(a), ir.NumElements(b)
	return na >= 0 && nb >= 0 && na < nb
}

// trailing reports whether a shape's innermost dims hold exactly inner
// elements: a pointwise op over such a shape walks a reduction's rows.
func trailing(shape []int64, inner int64) bool {
	p := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] < 0 {
			return false
		}
		p *= shape[i]
		if p == inner {
			return true
		}
		if p > inner {
			return false
		}
	}
	return inner == 1
}

// described formats an op as describe does, when printed: log arguments
// cost nothing when the log is off.
type described struct{ op *ir.Operation }

func (d described) String() string { return describe(d.op) }

// describe names an op for the log: 'graph.exp' at file:12:5.
func describe(op *ir.Operation) string {
	loc := op.Loc().String()
	loc = strings.ReplaceAll(loc, `"`, "")
	return "'" + op.Name() + "' at " + loc
}
