package frontend

import (
	"fmt"
	"os"

	"github.com/strata-ir/strata/logs"
)

// The log topics the frontend writes (STRATA_LOGS=graph_breaks,…).
const (
	topicGraphBreaks = "graph_breaks"
	topicRecompiles  = "recompiles"
	topicGuards      = "guards"
	// topicCompile is each graph's compile phases on the nvptx backend.
	topicCompile = "compile"
	// topicPassTiming is the nvptx backend's lowering pipeline's time
	// report for each graph (passes' Instr.Timing, as mlir-opt
	// --mlir-timing).
	topicPassTiming = "pass_timing"
	// topicPerfHints is for choices that cost speed, such as running the
	// default backend's graphs in the interpreter for want of a GPU.
	topicPerfHints = "perf_hints"
)

// warnf logs a warning under topic, or to standard error when the topic
// is off: warnings are rare and always worth seeing.
func warnf(topic, format string, args ...any) {
	if logs.Enabled(topic) {
		logs.Printf(topic, "warning: "+format, args...)
		return
	}
	fmt.Fprintf(os.Stderr, "strata: warning: "+format+"\n", args...)
}
