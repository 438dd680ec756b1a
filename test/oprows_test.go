package test

import (
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/autodiff"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/decompose"
	_ "github.com/strata-ir/strata/passes/fusion"
	"github.com/strata-ir/strata/passes/lower"
	_ "github.com/strata-ir/strata/passes/symbolize"
	_ "github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// opRules are the questions the completeness test asks of one graph op,
// one per table that each op must have a row in.
type opRules struct {
	interp        func(name string) bool
	vjp           func(name string) bool
	notDiff       func(name string) bool
	class         func(name string) graph.Class
	lowers        func(name string) bool
	decomposed    func(name string) bool
	isStructureOp func(name string) bool
}

// missingRules lists what the op named name lacks, each naming the table
// to add it to.
func missingRules(name string, r opRules) []string {
	var miss []string
	if !r.interp(name) {
		miss = append(miss, "an interpreter rule (runtime/interp, graph.go's table)")
	}
	if !r.vjp(name) && !r.notDiff(name) {
		miss = append(miss, "a VJP (autodiff/rules.go) or a notDifferentiable mark with the reason")
	}
	c := r.class(name)
	if c == graph.ClassNone {
		miss = append(miss, "a fusion class (the class field of its row in dialects/graph/ops.go)")
	}
	switch {
	case r.decomposed(name) != (c == graph.ClassComposite):
		miss = append(miss, "agreement between its class ("+c.String()+") and graph-decompose's expansions (passes/decompose)")
	case r.decomposed(name), r.isStructureOp(name), r.lowers(name):
	default:
		miss = append(miss, "a lowering (passes/lower: compute's rule set, Lowers) or a decomposition (passes/decompose)")
	}
	return miss
}

var realRules = opRules{
	interp:        interp.HasRule,
	vjp:           autodiff.Differentiable,
	notDiff:       func(n string) bool { _, ok := autodiff.NotDifferentiable(n); return ok },
	class:         graph.ClassOf,
	lowers:        lower.Lowers,
	decomposed:    func(n string) bool { return slices.Contains(decompose.Composites(), n) },
	isStructureOp: func(n string) bool { return graph.ClassOf(n) == graph.ClassStructure },
}

// TestEveryGraphOpHasItsRules checks that every op of the graph dialect has
// a row in each table that a new op needs: an interpreter rule, a VJP (or a
// reason it has none), a fusion class, and a lowering (or a decomposition).
// TestEveryGraphOpRunsOnTheGPU (passes/lower) then checks that the lowering
// works; this test names what a new op lacks before anything runs.
func TestEveryGraphOpHasItsRules(t *testing.T) {
	for _, def := range graph.Dialect.Ops {
		for _, m := range missingRules(def.Name, realRules) {
			t.Errorf("%s has no %s", def.Name, m)
		}
	}
	t.Run("reports a synthetic op without rules", func(t *testing.T) {
		got := missingRules("graph.synthetic_op", realRules)
		for _, want := range []string{"an interpreter rule", "a VJP", "a fusion class", "a lowering"} {
			if !slices.ContainsFunc(got, func(m string) bool { return strings.HasPrefix(m, want) }) {
				t.Errorf("missingRules(graph.synthetic_op) = %q, want it to report %q", got, want)
			}
		}
	})
	t.Run("reports a composite that graph-decompose does not expand", func(t *testing.T) {
		r := realRules
		r.decomposed = func(string) bool { return false }
		got := missingRules(graph.OpSoftmax, r)
		if len(got) != 1 || !strings.Contains(got[0], "graph-decompose") {
			t.Errorf("missingRules(softmax, no expansions) = %q, want one report of the disagreement", got)
		}
	})
	t.Run("reports a lost VJP", func(t *testing.T) {
		r := realRules
		r.vjp = func(n string) bool { return n != graph.OpExp }
		if got := missingRules(graph.OpExp, r); len(got) != 1 || !strings.HasPrefix(got[0], "a VJP") {
			t.Errorf("missingRules(exp, no VJP) = %q, want the VJP reported", got)
		}
	})
}

// TestPassOrdersNameRegisteredPasses checks that every ordering constraint
// (PassInfo.After, Before) names a registered pass, so that a renamed pass
// does not silently drop a constraint.
func TestPassOrdersNameRegisteredPasses(t *testing.T) {
	n := 0
	for _, p := range passes.All() {
		for _, o := range append(slices.Clone(p.After), p.Before...) {
			n++
			if passes.Lookup(o.Pass) == nil {
				t.Errorf("pass %s: ordering constraint names %q, which is not a registered pass", p.Name, o.Pass)
			}
			if o.Reason == "" {
				t.Errorf("pass %s: ordering constraint on %s gives no reason", p.Name, o.Pass)
			}
		}
	}
	if n == 0 {
		t.Error("no pass declares an ordering constraint")
	}
}
