// Package symbolize provides the graph-symbolize-shapes pass (DESIGN §6):
// it turns chosen static dims of a function's inputs into symbols,
// propagates them through the graph ops' symbolic shape rules, unifies
// sizes that must be equal, and records on the function the constraints
// met (graph.constraints) and the guards a call's inputs must pass
// (graph.guards). Importing the package registers the pass.
package symbolize

import (
	"fmt"
	"strconv"
	"strings"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/sym"
)

// The attributes the pass sets on a func.func, each an array of strings.
const (
	GuardsAttr      = "graph.guards"
	ConstraintsAttr = "graph.constraints"
)

// The values of the specialize option.
const (
	SpecializeNone    = "none"
	SpecializeZeroOne = "zero-one"
)

func init() {
	passes.Register(&passes.PassInfo{
		Name:    "graph-symbolize-shapes",
		Summary: "Turn static input dims into symbolic sizes, with guards",
		Description: "For every func.func: replaces the chosen dims of its inputs by symbols s0, s1, … " +
			"(types become `tensor<?x128xf32, #graph.dims<[s0, 128]>>`), re-infers every graph op's result " +
			"type with the symbolic shape rules, unifies sizes that must be equal (add of s0x4 and s1x4 " +
			"makes s1 := s0; a size that must equal a constant is specialised back to it) and records " +
			"`graph.constraints` (what the shape rules required) and `graph.guards` (predicates over the " +
			"inputs' shapes and dtypes that `irc run` checks). With specialize=zero-one (the default, as " +
			"in PyTorch) a chosen dim of size 0 or 1 stays static, because broadcasting and empty tensors " +
			"behave differently there, and every symbol is guarded >= 1; with specialize=none every chosen " +
			"dim becomes a symbol, which may be 0. Either way a symbol that meets another size in " +
			"broadcasting is unified with it, so a call where it is 1 fails a guard instead of " +
			"broadcasting silently. See " +
			"docs/dynamic-shapes.md.",
		Anchor: passes.AnyOp,
		Options: []passes.OptionDef{
			{Name: "dims", Type: passes.StringList, Default: []string{},
				Doc: `the dims to make symbolic, as "arg:dim" (e.g. 0:0,1:0); default: dim 0 of every input of rank >= 1`},
			{Name: "specialize", Type: passes.String, Default: SpecializeZeroOne, Enum: []string{SpecializeNone, SpecializeZeroOne},
				Doc: "keep sizes 0 and 1 static and guard symbols >= 1 (zero-one), or symbolize them too (none)"},
		},
		New: func(o passes.Options) (passes.Pass, error) {
			refs, err := parseDims(o.Strings("dims"))
			if err != nil {
				return nil, err
			}
			return &pass{dims: refs, zeroOne: o.String("specialize") == SpecializeZeroOne}, nil
		},
	})
}

// parseDims reads "arg:dim" entries.
func parseDims(texts []string) ([]sym.DimRef, error) {
	var out []sym.DimRef
	for _, t := range texts {
		a, d, ok := strings.Cut(t, ":")
		arg, err1 := strconv.Atoi(a)
		dim, err2 := strconv.Atoi(d)
		if !ok || err1 != nil || err2 != nil || arg < 0 || dim < 0 {
			return nil, fmt.Errorf("graph-symbolize-shapes: dims entry %q must be \"arg:dim\" with non-negative integers", t)
		}
		out = append(out, sym.DimRef{Arg: arg, Dim: dim})
	}
	return out, nil
}

type pass struct {
	dims    []sym.DimRef // nil: the leading dim of every input
	zeroOne bool
}

func (*pass) Name() string { return "graph-symbolize-shapes" }

// Run symbolizes every function with a body nested in op.
func (p *pass) Run(op *ir.Operation, st *passes.State) error {
	var fns []*ir.Operation
	op.Walk(func(o *ir.Operation) bool {
		if o.Name() == funcs.OpFunc && !funcs.IsExternal(o) {
			fns = append(fns, o)
		}
		return true
	})
	var errs ir.DiagnosticList
	for _, fn := range fns {
		if err := p.symbolize(fn, st); err != nil {
			errs = append(errs, asDiagnostic(fn, err)...)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func asDiagnostic(fn *ir.Operation, err error) ir.DiagnosticList {
	switch e := err.(type) {
	case *ir.Diagnostic:
		return ir.DiagnosticList{e}
	case ir.DiagnosticList:
		return e
	}
	return ir.DiagnosticList{ir.Errorf(fn.Loc(), "graph-symbolize-shapes: %v", err)}
}

// symbolize runs the pass on one function.
func (p *pass) symbolize(fn *ir.Operation, st *passes.State) error {
	body := funcs.Body(fn)
	inputs, err := p.inputDims(body)
	if err != nil {
		return err
	}
	facts := &sym.Facts{AllowZero: !p.zeroOne}
	if p.zeroOne {
		for _, dims := range inputs {
			for _, d := range dims {
				for _, n := range d.Symbols() {
					if !graph.IsUnknown(sym.Sym(n)) {
						facts.SetMin(n, 1)
					}
				}
			}
		}
	}
	// Propagate, then eliminate one symbol per solvable equality and
	// propagate again, until only unsolvable constraints remain.
	var met sym.Constraints
	var rest []sym.Constraint
	for {
		cons, err := propagate(body, inputs)
		if err != nil {
			return err
		}
		rest = rest[:0]
		var solved bool
		for _, c := range cons {
			holds, known := facts.Decide(c.c)
			switch {
			case known && holds:
				continue
			case known:
				return ir.Errorf(c.op.Loc(), "graph-symbolize-shapes: '%s' op needs %s, which cannot hold", c.op.Name(), c.c)
			}
			met.Add(c.c)
			if name, value, ok := c.c.Solve(); ok && !solved && !graph.IsUnknown(sym.Sym(name)) {
				if v, isConst := value.IsConst(); isConst && v < facts.MinOf(name) {
					return ir.Errorf(c.op.Loc(), "graph-symbolize-shapes: '%s' op needs %s, but %s >= %d", c.op.Name(), c.c, name, facts.MinOf(name))
				}
				substitute(inputs, facts, name, value)
				solved = true
				continue
			}
			rest = append(rest, c.c)
		}
		if !solved {
			break
		}
	}
	guards := p.guards(body, inputs, facts, rest)
	fn.SetAttr(GuardsAttr, strings2Attr(guards.Strings()))
	fn.SetAttr(ConstraintsAttr, strings2Attr(met.Strings()))
	st.Stat("num-symbols", "Number of symbols left after unification").Add(int64(len(symbolsOf(inputs))))
	return funcs.UpdateType(fn)
}

// inputDims returns the sizes of the function's tensor inputs with the
// chosen dims made symbolic (nil for inputs that are not ranked tensors).
func (p *pass) inputDims(body *ir.Block) ([][]sym.Expr, error) {
	inputs := make([][]sym.Expr, body.NumArguments())
	used := map[string]bool{}
	for i, a := range body.Arguments() {
		if t, ok := a.Type().(*ir.TensorType); ok && t.Ranked() {
			inputs[i] = graph.DimsOf(t)
			for _, d := range inputs[i] {
				for _, n := range d.Symbols() {
					used[n] = true
				}
			}
		}
	}
	refs := p.dims
	if refs == nil {
		for i, dims := range inputs {
			if len(dims) > 0 {
				refs = append(refs, sym.DimRef{Arg: i, Dim: 0})
			}
		}
	}
	next := 0
	for _, r := range refs {
		if r.Arg >= len(inputs) || inputs[r.Arg] == nil || r.Dim >= len(inputs[r.Arg]) {
			return nil, fmt.Errorf("dims entry %s names no dim of a tensor input", r)
		}
		d := inputs[r.Arg][r.Dim]
		c, static := d.IsConst()
		if !static && !graph.IsUnknown(d) {
			continue // already symbolic
		}
		if static && p.zeroOne && (c == 0 || c == 1) {
			continue // specialised: broadcasting treats 1 differently
		}
		for used["s"+strconv.Itoa(next)] {
			next++
		}
		name := "s" + strconv.Itoa(next)
		used[name] = true
		inputs[r.Arg][r.Dim] = sym.Sym(name)
	}
	return inputs, nil
}

// located is a constraint with the op that required it.
type located struct {
	c  sym.Constraint
	op *ir.Operation
}

// propagate gives the arguments their symbolic types and re-infers every
// graph op's results in order, returning the constraints met.
func propagate(body *ir.Block, inputs [][]sym.Expr) ([]located, error) {
	for i, a := range body.Arguments() {
		if inputs[i] != nil {
			a.SetType(graph.TensorWithDims(inputs[i], a.Type().(*ir.TensorType).ElementType()))
		}
	}
	var out []located
	err := graph.ReinferSymbolic(body, func(op *ir.Operation, cs []sym.Constraint) error {
		for _, c := range cs {
			out = append(out, located{c, op})
		}
		return nil
	})
	return out, err
}

// substitute replaces name by value in every input size.
func substitute(inputs [][]sym.Expr, facts *sym.Facts, name string, value sym.Expr) {
	m := map[string]sym.Expr{name: value}
	for _, dims := range inputs {
		for j, d := range dims {
			dims[j] = facts.Subst(d, m)
		}
	}
}

func symbolsOf(inputs [][]sym.Expr) []string {
	var out []string
	seen := map[string]bool{}
	for _, dims := range inputs {
		for _, d := range dims {
			for _, n := range d.Symbols() {
				if !seen[n] && !graph.IsUnknown(sym.Sym(n)) {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// guards lists what a call's inputs must satisfy: each tensor input's
// rank, dtype and sizes (binding the symbols), each symbol's lower bound
// under the 0/1 policy, and the constraints unification could not solve.
func (p *pass) guards(body *ir.Block, inputs [][]sym.Expr, facts *sym.Facts, rest []sym.Constraint) sym.Guards {
	var gs sym.Guards
	for i, dims := range inputs {
		if dims == nil {
			continue
		}
		gs = append(gs, sym.RankGuard(i, len(dims)))
		for d, e := range dims {
			if !graph.IsUnknown(e) {
				gs = append(gs, sym.DimGuard(i, d, e))
			}
		}
		gs = append(gs, sym.DtypeGuard(i, body.Argument(i).Type().(*ir.TensorType).ElementType().String()))
	}
	if p.zeroOne {
		for _, n := range symbolsOf(inputs) {
			gs = append(gs, sym.RelGuard(sym.Constraint{L: sym.Sym(n), Rel: sym.GE, R: sym.Const(facts.MinOf(n))}))
		}
	}
	for _, c := range rest {
		gs = append(gs, sym.RelGuard(c))
	}
	return gs
}

func strings2Attr(ss []string) ir.ArrayAttr {
	out := make(ir.ArrayAttr, len(ss))
	for i, s := range ss {
		out[i] = ir.StringAttr{Value: s}
	}
	return out
}

// Guards reads the guards graph-symbolize-shapes stored on fn; ok is false
// when it has none.
func Guards(fn *ir.Operation) (gs sym.Guards, ok bool, err error) {
	arr, isArr := fn.Attr(GuardsAttr).(ir.ArrayAttr)
	if !isArr {
		return nil, false, nil
	}
	texts := make([]string, len(arr))
	for i, a := range arr {
		s, isStr := a.(ir.StringAttr)
		if !isStr {
			return nil, true, fmt.Errorf("%s entry %d is %s, not a string", GuardsAttr, i, a)
		}
		texts[i] = s.Value
	}
	gs, err = sym.ParseGuards(texts)
	return gs, true, err
}
