package graph

import (
	"fmt"
	"regexp"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// This file holds the collective ops: communication among the processes
// (ranks) of a named process group, one program running on every rank
// (SPMD). docs/distributed.md describes their semantics, their gradients
// and how they run.

// WorldGroup is the process group of every rank, the default of the
// collectives' group attribute.
const WorldGroup = "world"

// ReduceKinds are the values of the reduce attribute of all_reduce and
// reduce_scatter.
var ReduceKinds = []string{"sum", "max", "avg"}

// groupName is the spelling of a process group's name.
var groupName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

var (
	groupAttr  = attrSpec{name: "group", kind: kindString, def: WorldGroup, doc: `the process group (default "world", every rank)`}
	reduceAttr = attrSpec{name: "reduce", kind: kindEnum, enum: ReduceKinds, def: "sum",
		doc: `how the ranks' values combine: "sum" (the default), "max" or "avg" (the sum divided by the group's size; floats only)`}
	collectiveNote = " It is a collective: every rank of the group must run it, in the same order " +
		"as its other collectives on the group, on operands of the same type. It is never fused: " +
		"lowered, it is a host step of the launch plan (a library call such as NCCL's), not a kernel."
	sumOrderNote = " Sums add the ranks' values in rank order, in the element type (f16 and bf16 in float32, rounded once)."
)

// collectiveOps are the rows of the collectives.
func collectiveOps() []*opSpec {
	return []*opSpec{
		{
			name:    "all_reduce",
			summary: "combines a tensor across the ranks of a group",
			description: "Every rank receives the combination (`reduce`) of the operand over the ranks of " +
				"`group`: the elementwise sum, maximum, or average. The result has the operand's type." +
				sumOrderNote + collectiveNote,
			operands: []operand{{"x", numericElem, "this rank's contribution"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{reduceAttr, groupAttr},
			rule:     ruleAllReduce,
			class:    ClassCollective,
			verify:   verifyGroup,
			example:  `%1 = "graph.all_reduce"(%0) <{group = "world", reduce = "sum"}> : (tensor<4x3xf32>) -> tensor<4x3xf32>`,
		},
		{
			name:    "all_gather",
			summary: "concatenates the ranks' tensors along an axis",
			description: "Every rank receives the concatenation, in rank order along `axis`, of the operands of " +
				"the ranks of `group`. The result type is declared: it is the operand's type with the axis " +
				"multiplied by the group's size, which the run checks." + collectiveNote,
			operands: []operand{{"x", anyElem, "this rank's part"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{{name: "axis", kind: kindInt, def: int64(0), doc: "the axis to concatenate along (default 0)"}, groupAttr},
			rule:     ruleAllGather,
			class:    ClassCollective,
			verify:   verifyGroup,
			example:  `%1 = "graph.all_gather"(%0) <{axis = 0 : i64, group = "world"}> : (tensor<2x3xf32>) -> tensor<4x3xf32>`,
		},
		{
			name:    "reduce_scatter",
			summary: "combines tensors across ranks and gives each rank one slice",
			description: "Combines the operands of the ranks of `group` as all_reduce does (`reduce`), cuts the " +
				"combination along `axis` into as many equal slices as the group has ranks, and gives rank r " +
				"slice r. The result type is declared: the operand's type with the axis divided by the " +
				"group's size, which the run checks." + sumOrderNote + collectiveNote,
			operands: []operand{{"x", numericElem, "this rank's contribution (the whole tensor)"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{{name: "axis", kind: kindInt, def: int64(0), doc: "the axis to scatter along (default 0)"}, reduceAttr, groupAttr},
			rule:     ruleReduceScatter,
			class:    ClassCollective,
			verify:   verifyGroup,
			example:  `%1 = "graph.reduce_scatter"(%0) <{axis = 0 : i64, group = "world", reduce = "sum"}> : (tensor<4x3xf32>) -> tensor<2x3xf32>`,
		},
		{
			name:    "broadcast",
			summary: "every rank receives the root rank's tensor",
			description: "Every rank of `group` receives the operand of rank `root` (the others' operands are " +
				"only read for their type). The result has the operand's type." + collectiveNote,
			operands: []operand{{"x", anyElem, "the value, read on the root"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{rootAttr, groupAttr},
			rule:     ruleRooted,
			class:    ClassCollective,
			verify:   verifyGroup,
			example:  `%1 = "graph.broadcast"(%0) <{group = "world", root = 0 : i64}> : (tensor<8xf32>) -> tensor<8xf32>`,
		},
		{
			name:    "reduce_to",
			summary: "sums the ranks' tensors on the root rank",
			description: "Rank `root` of `group` receives the elementwise sum of the operands of every rank; the " +
				"other ranks receive zeros. It is the gradient of graph.broadcast (NCCL's reduce)." +
				sumOrderNote + collectiveNote,
			operands: []operand{{"x", numericElem, "this rank's contribution"}},
			results:  resultDoc,
			traits:   pure,
			attrs:    []attrSpec{rootAttr, groupAttr},
			rule:     ruleRooted,
			class:    ClassCollective,
			verify:   verifyGroup,
			example:  `%1 = "graph.reduce_to"(%0) <{group = "world", root = 0 : i64}> : (tensor<8xf32>) -> tensor<8xf32>`,
		},
	}
}

var rootAttr = attrSpec{name: "root", kind: kindInt, def: int64(0), doc: "the root rank, ≥ 0 (default 0)"}

// verifyGroup checks the spelling of the group name and a root that is
// not negative.
func verifyGroup(op *ir.Operation) error {
	if g := Group(op); !groupName.MatchString(g) {
		return fmt.Errorf("attribute 'group' must name a process group (a letter or '_', then letters, digits, '_', '.', '-'), got %q", g)
	}
	if r := IntAttr(op, "root"); r < 0 {
		return fmt.Errorf("attribute 'root' must be a rank ≥ 0, got %d", r)
	}
	return nil
}

func ruleAllReduce(in []*ir.TensorType, a attrView, _ []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	if a.str("reduce", "sum") == "avg" && !ir.IsFloat(in[0].ElementType()) {
		return nil, fmt.Errorf(`reduce = "avg" needs a float tensor, got %s`, in[0])
	}
	return one(in[0]), nil
}

func ruleRooted(in []*ir.TensorType, _ attrView, _ []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	return one(in[0]), nil
}

// ruleAllGather checks a declared result that is the operand with the axis
// multiplied by a whole factor (the group's size).
func ruleAllGather(in []*ir.TensorType, a attrView, declared []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	return scaledAxis(in[0], a.int("axis", 0), declared, anyElem, false)
}

// ruleReduceScatter checks a declared result that is the operand with the
// axis divided by a whole factor.
func ruleReduceScatter(in []*ir.TensorType, a attrView, declared []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	if a.str("reduce", "sum") == "avg" && !ir.IsFloat(in[0].ElementType()) {
		return nil, fmt.Errorf(`reduce = "avg" needs a float tensor, got %s`, in[0])
	}
	return scaledAxis(in[0], a.int("axis", 0), declared, numericElem, true)
}

// scaledAxis checks that the declared result has x's element type and
// shape except along axis, where result = k·x (or x = k·result when
// divide) for a whole k ≥ 1; a dynamic size there is checked at run time.
func scaledAxis(x *ir.TensorType, axis int64, declared []ir.Type, class elemClass, divide bool) ([]ir.Type, error) {
	rank := len(x.Shape())
	ax, err := normAxis("axis", axis, rank)
	if err != nil {
		return nil, err
	}
	if rank == 0 {
		return nil, fmt.Errorf("needs an operand of rank ≥ 1, got %s", x)
	}
	r, err := declaredResult(declared, class)
	if err != nil {
		return nil, err
	}
	if r.ElementType() != x.ElementType() || len(r.Shape()) != rank {
		return nil, fmt.Errorf("result type %s must have the operand's element type and rank (%s)", r, x)
	}
	for d, n := range x.Shape() {
		m := r.Shape()[d]
		if d != ax {
			if n != m && n != ir.Dynamic && m != ir.Dynamic {
				return nil, fmt.Errorf("result dim %d is %d, but the operand's is %d (only the axis %d changes)", d, m, n, ax)
			}
			continue
		}
		whole, part := m, n
		if divide {
			whole, part = n, m
		}
		if whole == ir.Dynamic || part == ir.Dynamic {
			continue
		}
		if part == 0 && whole != 0 || part != 0 && (whole%part != 0 || whole < part) {
			if divide {
				return nil, fmt.Errorf("along axis %d the operand's size %d must be a multiple of the result's %d (by the group's size)", ax, n, m)
			}
			return nil, fmt.Errorf("along axis %d the result's size %d must be a multiple of the operand's %d (by the group's size)", ax, m, n)
		}
	}
	return one(r), nil
}

// Group returns a collective's process group ("world" when absent).
func Group(op *ir.Operation) string { return StringAttr(op, "group") }

// ReduceKind returns the reduce attribute of all_reduce and reduce_scatter
// ("sum" when absent).
func ReduceKind(op *ir.Operation) string { return StringAttr(op, "reduce") }

// Root returns the root rank of broadcast and reduce_to (0 when absent).
func Root(op *ir.Operation) int64 { return IntAttr(op, "root") }

// IsCollective reports whether the graph op named name communicates among
// ranks (its class is ClassCollective).
func IsCollective(name string) bool { return ClassOf(name) == ClassCollective }
