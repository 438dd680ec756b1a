// The commands the README and the examples' headers show keep working.
// RUN: irc run %S/../../examples/hello.mlir --random-inputs 1 | FileCheck %s --check-prefix=HELLO
// RUN: irc run %S/../../examples/softmax.mlir --random-inputs 1 --shape arg0=3x4096 | FileCheck %s --check-prefix=SOFTMAX
// RUN: irc %S/../../examples/softmax.mlir --emit=llvm | FileCheck %s --check-prefix=LLVM
// RUN: irc %S/../../examples/redundant.mlir --pass-pipeline='builtin.module(func.func(canonicalize{max-iterations=10},cse),symbol-dce)' | FileCheck %s --check-prefix=REDUNDANT

// HELLO: result 0: shape () dtype float32
// HELLO: result 1: shape () dtype float32
// SOFTMAX: result 0: shape (3, 4096) dtype float32 sum 3.0
// SOFTMAX: result 1: shape (3, 4096) dtype float32
// LLVM: define void @main_kernel_0(
// REDUNDANT-LABEL: func.func @main(
// REDUNDANT-NOT: func.func private @unused
