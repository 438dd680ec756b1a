// irc run --backend cpu lowers the program to the loop level, compiles its
// kernels for this CPU (opt, llc and the system linker; cached) and gives
// the interpreter's results: these ops are exact, so the summaries
// (sums and hashes of the bytes) are equal.
// REQUIRES: llc, opt
// RUN: irc run %s --random-inputs 1 > %t.interp
// RUN: irc run %s --random-inputs 1 --backend cpu > %t.cpu
// RUN: diff %t.interp %t.cpu
// RUN: irc run %s --random-inputs 1 --backend cpu --repeat 3 2>&1 >/dev/null | FileCheck %s --check-prefix=REPEAT
// REPEAT: repeat: 3 calls, median {{[0-9.]+}} ms, min {{[0-9.]+}} ms

// Without the tools (and nothing cached) it says so, and the interpreter
// runs the lowered program.
// RUN: env STRATA_LLVM_BIN=%T/none STRATA_CACHE_DIR=%T/empty-cache irc run %s --random-inputs 1 --backend cpu > %t.none 2> %t.err
// RUN: diff %t.interp %t.none
// RUN: FileCheck %s --check-prefix=NOTOOLS < %t.err
// NOTOOLS: irc: run: note: cpu target: compiler tools missing: opt, llc not found in STRATA_LLVM_BIN={{.*}}; running in the interpreter

// A program the cpu target does not compile (scalar arithmetic outside
// any kernel) runs in the interpreter, with a note that names the op.
// RUN: irc run %S/../../examples/hello.mlir --random-inputs 1 > %t.hello.interp
// RUN: irc run %S/../../examples/hello.mlir --random-inputs 1 --backend cpu > %t.hello.cpu 2> %t.hello.err
// RUN: diff %t.hello.interp %t.hello.cpu
// RUN: FileCheck %s --check-prefix=UNSUPPORTED < %t.hello.err
// UNSUPPORTED: note: the cpu backend cannot compile this program ({{.*}}hello.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'arith.mulf' is not supported at the top level of a function by the cpu target

func.func @main(%x: tensor<37x129xf32>, %y: tensor<129xf32>, %i: tensor<37x129xi32>) -> (tensor<37x129xf32>, tensor<37xf32>, tensor<37x129xi32>) {
  %0 = "graph.add"(%x, %y) : (tensor<37x129xf32>, tensor<129xf32>) -> tensor<37x129xf32>
  %1 = "graph.relu"(%0) : (tensor<37x129xf32>) -> tensor<37x129xf32>
  %2 = "graph.max"(%1, %x) : (tensor<37x129xf32>, tensor<37x129xf32>) -> tensor<37x129xf32>
  %3 = "graph.reduce_max"(%2) <{axes = [1], keepdims = false}> : (tensor<37x129xf32>) -> tensor<37xf32>
  %4 = "graph.mul"(%i, %i) : (tensor<37x129xi32>, tensor<37x129xi32>) -> tensor<37x129xi32>
  return %2, %3, %4 : tensor<37x129xf32>, tensor<37xf32>, tensor<37x129xi32>
}
