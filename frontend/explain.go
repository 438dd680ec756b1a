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
// It fails when the function cannot be compiled or run. Breaks that come
// from a backend's unsupported ops show with that backend only: use
// ExplainWith or Compiled.Explain.
func Explain(fn any, inputs ...*Tensor) (*Explanation, error) {
	args := make([]any, len(inputs))
	for i, t := range inputs {
		args[i] = t
	}
	return ExplainWith(Options{Backend: EagerBackend}, fn, args...)
}

// ExplainWith is Explain with the options (the backend) of a Compile
// call, and arguments as Invoke takes them.
func ExplainWith(opts Options, fn any, args ...any) (*Explanation, error) {
	c, err := Compile(fn, opts)
	if err != nil {
		return nil, err
	}
	return c.Explain(args...)
}

// Explain runs c once on args (as Invoke does) and reports the graphs
// that call recorded and the graph breaks between them, with c's backend.
// A call that replayed a recorded one reports that call's single graph.
func (c *Compiled) Explain(args ...any) (*Explanation, error) {
	if _, err := c.Invoke(args...); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
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
