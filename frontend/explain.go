package frontend

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Break is one graph break: why the graph ended and where.
type Break struct {
	Reason string
	// Loc is the file:line of the code that caused it.
	Loc string
	// Graph is the number of graphs that ended before it.
	Graph int
}

// GraphInfo describes one captured graph.
type GraphInfo struct {
	Index           int
	Ops             int
	OpCounts        map[string]int // ops by name
	Inputs, Outputs int
}

// Explanation is what Explain found (torch._dynamo.explain).
type Explanation struct {
	GraphCount, BreakCount int
	Graphs                 []GraphInfo
	Breaks                 []Break
}

// Explain runs fn once on inputs, as Compile would with the eager backend,
// and reports the graphs it captured and the graph breaks between them.
// It fails when the function cannot be compiled or run.
func Explain(fn any, inputs ...*Tensor) (*Explanation, error) {
	c, err := Compile(fn, Options{Backend: EagerBackend})
	if err != nil {
		return nil, err
	}
	if _, err := c.Call(inputs...); err != nil {
		return nil, err
	}
	s := c.last
	return &Explanation{
		GraphCount: len(s.graphs), BreakCount: len(s.breaks),
		Graphs: slices.Clone(s.graphs), Breaks: slices.Clone(s.breaks),
	}, nil
}

// String prints the explanation: counts, then each break and each graph.
func (e *Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "graphs: %d\ngraph breaks: %d\n", e.GraphCount, e.BreakCount)
	for i, br := range e.Breaks {
		fmt.Fprintf(&b, "  break %d (after graph %d) at %s: %s\n", i+1, br.Graph, br.Loc, br.Reason)
	}
	for _, g := range e.Graphs {
		fmt.Fprintf(&b, "  graph %d: %d ops, %d inputs, %d outputs", g.Index, g.Ops, g.Inputs, g.Outputs)
		names := slices.Sorted(maps.Keys(g.OpCounts))
		if len(names) > 0 {
			parts := make([]string, len(names))
			for i, n := range names {
				parts[i] = fmt.Sprintf("%s×%d", n, g.OpCounts[n])
			}
			fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}
