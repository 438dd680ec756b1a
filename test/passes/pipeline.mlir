// The pipeline of the issue, on examples/redundant.mlir: it removes at
// least what mlir-opt's passes of the same names remove, mlir-opt accepts
// the result, and the results of @main do not change.
// RUN: irc %S/../../examples/redundant.mlir \
// RUN:   --pass-pipeline='builtin.module(func.func(canonicalize{max-iterations=10},cse),symbol-dce)' > %t.irc
// RUN: FileCheck %s < %t.irc
// RUN: mlir-opt %t.irc > /dev/null
// RUN: mlir-opt %S/../../examples/redundant.mlir \
// RUN:   --pass-pipeline='builtin.module(func.func(canonicalize{max-iterations=10},cse),symbol-dce)' > %t.mlir
// RUN: test $(grep -c ' = \| return\| call' %t.irc) -le $(grep -c ' = \| return\| call' %t.mlir)
// RUN: irc run %S/../../examples/redundant.mlir --random-inputs 5 > %t.before
// RUN: irc run %t.irc --random-inputs 5 > %t.after
// RUN: diff %t.before %t.after

// CHECK-LABEL: func.func @main(
// CHECK-DAG:     arith.constant 5 : i32
// CHECK-DAG:     arith.muli
// CHECK-NOT:     arith.muli
// CHECK:         return
// CHECK-NOT:   @unused

// The anchor may be left out, and nesting follows the op names.
// RUN: irc %s --pass-pipeline='func.func(cse)' | FileCheck %s --check-prefix=NESTED
// NESTED: func.func @g
// NESTED-COUNT-1: arith.addi
// NESTED-NOT: arith.addi
func.func @g(%a: i32) -> (i32, i32) {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  return %0, %1 : i32, i32
}
