// Package passes runs transformations over Strata IR: the Pass interface, a
// declarative registry of passes and named pipelines, a pass manager that
// reads and prints MLIR's textual pipeline grammar, instrumentation (IR
// printing, verification, timing, traces, statistics, crash reproducers) and
// the generic passes canonicalize, cse, dce, symbol-dce and inline.
//
// # Pipelines
//
// A pipeline is written as in mlir-opt:
//
//	builtin.module(func.func(canonicalize{max-iterations=10},cse),symbol-dce)
//
// An element is either a pass, with options in braces separated by spaces,
// or an op name followed by a parenthesised pipeline that runs on every op of
// that name directly nested in the current op. The anchor "any" matches every
// directly nested op that is isolated from above. Parse accepts the pipeline
// with or without its outer builtin.module(...) and String always prints it
// with the anchor and every option spelled out.
//
// Nested pipelines over isolated ops (the functions of a module, say) run in
// parallel goroutines, at most GOMAXPROCS at a time. Their diagnostics and
// instrumentation output are gathered per op and emitted in op order, so the
// output does not depend on scheduling.
//
// # Failure contract
//
// When a pass fails, or the verifier rejects its output, Run returns the
// error and the IR may be half rewritten. Callers must not print or use it as
// if it were valid: irc prints the diagnostics and no module. The IR as it was
// before the pipeline is available through Instrumentation.Reproducer and
// --print-ir-after-failure shows the op labelled as failed.
package passes
