package passes

import (
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/strata-ir/strata/ir"
)

// Pass transforms the op it is anchored on and everything nested in it.
//
// Run may be called concurrently on different ops (the functions of a
// module run in parallel), so a pass keeps per-run state in locals, not in
// its fields. It returns nil on success or an error, preferably located
// diagnostics (*ir.Diagnostic, ir.DiagnosticList); after an error the IR may
// be half rewritten and the pass manager stops.
type Pass interface {
	// Name is the pass's pipeline name, such as "cse".
	Name() string
	Run(op *ir.Operation, st *State) error
}

// State is what the pass manager hands a pass for one run: the context, a
// way to count statistics and to declare that nothing changed, and where to
// log rewrites.
type State struct {
	// Ctx is the context of the IR being transformed.
	Ctx *ir.Context
	// DebugRewrites, when not nil, receives a log of the rewrites that
	// pattern-driven passes apply (irc --debug-rewrites).
	DebugRewrites io.Writer

	stats     *statSet
	unchanged bool
}

// Stat returns the statistic called name of the running pass, creating it
// with description desc on first use. Counts from parallel runs of the same
// pass are summed.
func (s *State) Stat(name, desc string) *Statistic { return s.stats.get(name, desc) }

// MarkUnchanged declares that the run left the IR as it found it, which
// spares the verifier run after the pass (--verify-each) and
// --print-ir-after-change's comparison of the IR.
func (s *State) MarkUnchanged() { s.unchanged = true }

// Statistic is a named counter a pass reports (--pass-statistics).
type Statistic struct {
	Name, Description string
	value             atomic.Int64
}

// Add adds n to the counter.
func (s *Statistic) Add(n int64) { s.value.Add(n) }

// Value returns the counter's value.
func (s *Statistic) Value() int64 { return s.value.Load() }

// statSet holds the statistics of one pass in a pipeline.
type statSet struct {
	mu    sync.Mutex
	stats map[string]*Statistic
}

func (ss *statSet) get(name, desc string) *Statistic {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stats == nil {
		ss.stats = map[string]*Statistic{}
	}
	st := ss.stats[name]
	if st == nil {
		st = &Statistic{Name: name, Description: desc}
		ss.stats[name] = st
	}
	return st
}

// sorted returns the statistics sorted by name.
func (ss *statSet) sorted() []*Statistic {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]*Statistic, 0, len(ss.stats))
	for _, s := range ss.stats {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// FuncPass adapts a function to the Pass interface, for passes without
// options and for tests.
type FuncPass struct {
	PassName string
	Fn       func(op *ir.Operation, st *State) error
}

// Name returns p.PassName.
func (p FuncPass) Name() string { return p.PassName }

// Run calls p.Fn.
func (p FuncPass) Run(op *ir.Operation, st *State) error { return p.Fn(op, st) }
