package frontend

import (
	"fmt"
	"strings"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/symbolize"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/sym"
)

// cached is a compiled graph with the guards a call's inputs must pass to
// run it (DESIGN §6: rank, dtype and size predicates over symbols).
type cached struct {
	exe    Executable
	guards sym.Guards
	// ready, while not nil, is closed when a compile ahead
	// (Compiled.Precompile) has set exe or err; the lookup that first
	// finds it closed clears it (under Compiled.mu).
	ready chan struct{}
	err   error
}

// guard prepares g for compilation and returns its guards. A graph whose
// argument types have dynamic dims ("?", chosen by the dynamic policy)
// runs through graph-symbolize-shapes with exactly those dims, which
// turns them into symbols s0, s1, … (types with #graph.dims encodings),
// unifies sizes the shape rules equate, and stores graph.guards on the
// function; those are the guards. A static graph, or a dynamic one whose
// shapes fn read while tracing (it holds for those sizes only), is
// guarded on every input's exact rank, sizes and dtype.
func (s *session) guard(g *graphTrace) (sym.Guards, error) {
	dims := dynamicDims(g)
	if len(dims) > 0 && g.specialized {
		if err := specializeTypes(g); err != nil {
			return nil, fmt.Errorf("frontend: specializing graph %d to its input sizes: %w", g.index, err)
		}
		return staticGuards(g.inputs), nil
	}
	if len(dims) == 0 {
		return staticGuards(g.inputs), nil
	}
	refs := make([]string, len(dims))
	for i, d := range dims {
		refs[i] = d.String()
	}
	pipeline := "builtin.module(graph-symbolize-shapes{dims=" + strings.Join(refs, ",") + "})"
	var gs sym.Guards
	err := (&Graph{times: &s.times}).Time(PhasePasses, func() error {
		pm, err := passes.Parse(pipeline)
		if err != nil {
			return err
		}
		pm.Instr.VerifyEach = false // the traced graph was verified as it was built
		if err := pm.Run(irContext(), g.module); err != nil {
			return err
		}
		var ok bool
		gs, ok, err = symbolize.Guards(g.fn)
		if err == nil && !ok {
			err = fmt.Errorf("graph-symbolize-shapes left no %s on %s", symbolize.GuardsAttr, ir.SymbolName(g.fn))
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("frontend: symbolizing graph %d: %w", g.index, err)
	}
	return gs, nil
}

// specializeTypes gives a specialized graph (its code read the sizes of
// dynamic inputs, so it holds for those sizes only and is guarded on them)
// the static types of its inputs, and infers every op's result types
// again, so that the backend compiles it as the static graph it is: no
// dynamic extents, whose 64-bit division by a register the driver's JIT
// pays for (the transformer example's second graph took twice its first
// one's JIT with "?" sizes).
func specializeTypes(g *graphTrace) error {
	body := funcs.Body(g.fn)
	if body == nil || body.NumArguments() != len(g.inputs) {
		return fmt.Errorf("graph function has %d arguments for %d inputs", body.NumArguments(), len(g.inputs))
	}
	for i, a := range body.Arguments() {
		if t, ok := a.Type().(*ir.TensorType); ok && t.Ranked() {
			a.SetType(ir.TensorOf(g.inputs[i].Shape(), t.ElementType()))
		}
	}
	err := graph.ReinferSymbolic(body, func(op *ir.Operation, cs []sym.Constraint) error {
		for _, c := range cs {
			if holds, err := c.Eval(nil); err != nil || !holds {
				return ir.Errorf(op.Loc(), "'%s' op needs %s at the traced sizes", op.Name(), c)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return funcs.UpdateType(g.fn)
}

// dynamicDims lists the "?" dims of g's argument types.
func dynamicDims(g *graphTrace) []sym.DimRef {
	var out []sym.DimRef
	for i, a := range g.entry.Arguments() {
		t, ok := a.Type().(*ir.TensorType)
		if !ok || !t.Ranked() {
			continue
		}
		for d, size := range t.Shape() {
			if size == ir.Dynamic {
				out = append(out, sym.DimRef{Arg: i, Dim: d})
			}
		}
	}
	return out
}

// staticGuards guards on the exact rank, sizes and dtype of every input.
func staticGuards(inputs []tensorData) sym.Guards {
	var gs sym.Guards
	for i, v := range inputs {
		gs = append(gs, sym.RankGuard(i, len(v.Shape())))
		for d, size := range v.Shape() {
			gs = append(gs, sym.DimGuard(i, d, sym.Const(size)))
		}
		gs = append(gs, sym.DtypeGuard(i, v.ElemType().String()))
	}
	return gs
}

// shapeDtype is what guards see of v.
func shapeDtype(v interp.Value) sym.ShapeDtype {
	return sym.ShapeDtype{Shape: v.Shape(), Dtype: v.ElemType().String()}
}

func shapeDtypes(vs []tensorData) []sym.ShapeDtype {
	out := make([]sym.ShapeDtype, len(vs))
	for i, v := range vs {
		out[i] = shapeDtype(v)
	}
	return out
}

// indent prefixes every line of s with two spaces, for multi-line logs.
func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
