// What a newcomer meets first: irc --help lists the subcommands, irc help
// describes the topics, misspellings get a suggestion, and irc npy makes
// the .npy inputs irc run needs (no NumPy).
// RUN: irc --help | FileCheck %s --check-prefix=HELP
// HELP:      usage: irc [flags] [file|-]
// HELP:      commands:
// HELP-NEXT:   run FILE [flags]
// HELP-NEXT:   import MODEL.onnx
// HELP-NEXT:   npy make|show|compare
// HELP-NEXT:   devices
// HELP-NEXT:   help [TOPIC]
// HELP-NEXT:   version
// HELP:      -pass-pipeline
// RUN: irc devices --help | FileCheck %s --check-prefix=DEVICES
// DEVICES: usage: irc devices
// RUN: irc help logs | FileCheck %s --check-prefix=LOGS
// LOGS: fusion{{ +}}graph-fuse's decisions
// LOGS: graph_breaks
// RUN: irc help backends | FileCheck %s --check-prefix=BACKENDS
// BACKENDS: Backends of irc run --backend:
// BACKENDS: nvptx
// BACKENDS: Backends of frontend.Compile
// BACKENDS: aot_eager
// RUN: irc help modes | FileCheck %s --check-prefix=MODES
// MODES: reduce-overhead
// RUN: irc help passes | FileCheck %s --check-prefix=PASSES
// PASSES: graph-decompose
// RUN: irc help run | FileCheck %s --check-prefix=RUNHELP
// RUNHELP: -repeat N
// RUNHELP: -save-inputs dir

// Mistakes: exit status 2 and a message that helps.
// RUN: not irc %s --logs=bogus 2> %t.err; FileCheck %s --check-prefix=BADLOG < %t.err
// BADLOG: irc: --logs: unknown log topic "bogus"; the known topics are all, autotune, {{.*}}fusion, graph_breaks, {{.*}} (irc help logs describes them)
// RUN: STRATA_LOGS=graph_break not irc %s 2> %t.err; FileCheck %s --check-prefix=BADENV < %t.err
// BADENV: irc: STRATA_LOGS: unknown log topic "graph_break" (did you mean "graph_breaks"?); the known topics are
// RUN: not irc %s --pass-pipline=x 2> %t.err; FileCheck %s --check-prefix=BADFLAG < %t.err
// BADFLAG: irc: flag provided but not defined: -pass-pipline; did you mean --pass-pipeline?
// RUN: not irc run %s --random-input 1 2> %t.err; FileCheck %s --check-prefix=BADRUNFLAG < %t.err
// BADRUNFLAG: did you mean --random-inputs?
// RUN: not irc help flgs 2> %t.err; FileCheck %s --check-prefix=BADTOPIC < %t.err
// BADTOPIC: irc: help: unknown topic "flgs" (did you mean "flags"?); the topics are flags, passes, logs,

// The README's irc run line, with inputs from irc npy.
// RUN: rm -rf %t.d && mkdir %t.d
// RUN: irc npy make %t.d/x.npy 0.5 && irc npy make %t.d/w.npy 2 && irc npy make %t.d/b.npy ones
// RUN: irc run %s --input %t.d/x.npy --input %t.d/w.npy --input %t.d/b.npy --output %t.d/y.npy --output %t.d/c.npy --repeat 3 2> %t.err
// RUN: FileCheck %s --check-prefix=REPEAT < %t.err
// REPEAT: repeat: 3 calls, median {{[0-9]+\.[0-9]+}} ms, min {{[0-9]+\.[0-9]+}} ms
// RUN: irc npy show %t.d/y.npy | FileCheck %s --check-prefix=SHOW
// sigmoid(2*0.5 + 1) = 0.8808
// SHOW:      y.npy: shape () dtype float32
// SHOW-NEXT: 0.880797{{[0-9]*$}}
// RUN: irc npy make %t.d/want.npy 0.880797 && irc npy compare %t.d/y.npy %t.d/want.npy --rtol 1e-5 | FileCheck %s --check-prefix=SAME
// SAME: equal within rtol=1e-05 atol=1e-08: 1 element
// RUN: not irc npy compare %t.d/y.npy %t.d/x.npy | FileCheck %s --check-prefix=DIFF
// DIFF: not equal within rtol=1e-05 atol=1e-08: 1 of 1 element differ, max |a-b| 0.38{{[0-9]*}}; first at []: 0.88{{[0-9]*}} vs 0.5

// --save-inputs writes what --random-inputs drew; run on them, the same results.
// RUN: irc run %s --random-inputs 7 --save-inputs %t.d/in > %t.r1
// RUN: irc run %s --input %t.d/in/arg0.npy --input %t.d/in/arg1.npy --input %t.d/in/arg2.npy > %t.r2
// RUN: diff %t.r1 %t.r2

// A composite that reaches convert-graph-to-loop names the pass that removes it.
// RUN: not irc %S/Inputs/softmax-composite.mlir --pass-pipeline='builtin.module(convert-graph-to-loop)' 2>&1 | FileCheck %s --check-prefix=COMPOSITE
// COMPOSITE: error: convert-graph-to-loop: cannot lower 'graph.softmax', a composite: run graph-decompose first (lower-to-loop does)

func.func @main(%x: f32, %w: f32, %b: f32) -> (f32, f32) {
  %wx = arith.mulf %w, %x : f32
  %z = arith.addf %wx, %b : f32
  %0 = arith.negf %z : f32
  %1 = math.exp %0 : f32
  %one = arith.constant 1.0 : f32
  %2 = arith.addf %one, %1 : f32
  %y = arith.divf %one, %2 : f32
  %c = arith.mulf %y, %x : f32
  return %y, %c : f32, f32
}
