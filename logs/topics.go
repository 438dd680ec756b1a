package logs

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strata-ir/strata/internal/spelling"
)

// Topic describes one log topic: its name, as given to STRATA_LOGS and
// irc --logs, and what it logs.
type Topic struct {
	Name string
	Doc  string
}

// builtin lists the topics Strata's own packages write. A package that
// adds a topic adds it here (TestTopicsAreKnown checks that every topic
// the repository logs under is listed).
var builtin = []Topic{
	{"all", "every topic"},
	{"autotune", "max-autotune's search: each candidate's time, the budget, the choice (runtime/autotune)"},
	{"data_parallel", "graph-data-parallel's gradient buckets: each bucket's gradients, bytes, issue point and overlap (passes/dataparallel)"},
	{"compile", "each graph the nvptx backend compiles: its passes, code generation, driver load and wait for the device, in ms, its kernels and its longest driver compiles (frontend); the first run of each graph and the libraries' start-up (runtime/exec)"},
	{"cudagraphs", "CUDA graph capture and replay, and why a plan was not captured (runtime/exec)"},
	{"fusion", "graph-fuse's decisions: each merge and each refusal, with its reason (passes/fusion)"},
	{"graph_breaks", "where frontend tracing stopped a graph, and why (frontend)"},
	{"guards", "the guards a compiled graph checks before it is reused (frontend)"},
	{"pass_timing", "the time of each pass of the nvptx backend's lowering pipeline, per graph, as mlir-opt --mlir-timing (frontend)"},
	{"partition", "graph-partition's split of a joint graph into forward and backward (autodiff)"},
	{"perf_hints", "choices that cost speed: interpreter fallbacks, ptxas refusals, nests left off the fast kernels"},
	{"recompiles", "why a compiled function was compiled again: the guard that failed (frontend)"},
	{TimeTopic, "no lines of its own: every line of the topics on begins with the ms since the process started (not turned on by all)"},
}

var (
	regMu sync.Mutex
	extra []Topic // registered by Register
)

// Register adds topics written by code outside Strata (an out-of-tree
// pass, say), so that Check and irc --logs accept them. Registering a
// name twice is a no-op.
func Register(name, doc string) {
	regMu.Lock()
	defer regMu.Unlock()
	if known(name) {
		return
	}
	extra = append(extra, Topic{name, doc})
}

// Topics returns every known topic, sorted by name.
func Topics() []Topic {
	regMu.Lock()
	out := append(slices.Clone(builtin), extra...)
	regMu.Unlock()
	slices.SortFunc(out, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// known reports whether name is a topic; regMu is held.
func known(name string) bool {
	for _, ts := range [][]Topic{builtin, extra} {
		for _, t := range ts {
			if t.Name == name {
				return true
			}
		}
	}
	return false
}

// Check returns an error naming each of names that is not a known topic,
// with the closest known name where one is close, and listing the known
// topics.
func Check(names []string) error {
	regMu.Lock()
	var bad []string
	for _, n := range names {
		if !known(n) {
			bad = append(bad, n)
		}
	}
	regMu.Unlock()
	if len(bad) == 0 {
		return nil
	}
	var names2 []string
	for _, t := range Topics() {
		names2 = append(names2, t.Name)
	}
	var b strings.Builder
	for i, n := range bad {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", n)
		if s := spelling.Likely(n, names2); s != "" {
			fmt.Fprintf(&b, " (did you mean %q?)", s)
		}
	}
	word := "topic"
	if len(bad) > 1 {
		word = "topics"
	}
	return fmt.Errorf("unknown log %s %s; the known topics are %s", word, b.String(), strings.Join(names2, ", "))
}

// envErr is what Check found wrong in STRATA_LOGS when the process
// started; envWarn is set until it has been reported.
var (
	envErr  error
	envWarn atomic.Bool
)

// EnvError returns what is wrong with STRATA_LOGS (unknown topics, which
// are ignored), or nil, and takes over reporting it: a command such as irc
// refuses to run with it. Otherwise the first Enabled call prints it once
// on the log output as a warning, so library users hear of it too.
func EnvError() error {
	envWarn.Store(false)
	return envErr
}

// warnEnv prints the STRATA_LOGS error once, unless EnvError took it.
func warnEnv() {
	if !envWarn.Swap(false) {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(out, "strata: warning: %v\n", envErr)
}

func init() {
	names := Parse(os.Getenv(EnvVar))
	if err := Check(names); err != nil {
		envErr = fmt.Errorf("%s: %w", EnvVar, err)
		envWarn.Store(true)
	}
	Enable(names...)
}
