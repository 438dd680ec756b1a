// The examples the README runs keep working.
// RUN: irc run %S/../../examples/hello.mlir --random-inputs 1 | FileCheck %s --check-prefix=HELLO
// HELLO:      result 0: shape () dtype float32 sum {{.*}} hash {{[0-9a-f]+}} values [{{.*}}]
// HELLO-NEXT: result 1: shape () dtype float32 sum {{.*}} hash {{[0-9a-f]+}} values [{{.*}}]
// RUN: irc run %S/../../examples/hello.mlir --input %S/Inputs/x.npy --input %S/Inputs/w.npy --input %S/Inputs/b.npy \
// RUN:   | FileCheck %s --check-prefix=HELLO-NPY
// HELLO-NPY: result 0: shape () dtype float32 sum 0.5 hash

// RUN: irc %S/../../examples/redundant.mlir \
// RUN:   --pass-pipeline='builtin.module(func.func(canonicalize{max-iterations=10},cse),symbol-dce)' | FileCheck %s
// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[X:[^:]*]]: i32, %[[Y:[^:]*]]: i32, %[[F:[^:]*]]: f32
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : i32
// CHECK-DAG:     %[[P:.*]] = arith.muli %[[X]], %[[Y]] : i32
// CHECK:         %[[S:.*]] = arith.addi %[[P]], %[[P]] : i32
// CHECK-NEXT:    %[[R:.*]] = arith.addi %[[S]], %[[C5]] : i32
// CHECK-NEXT:    %[[H:.*]] = call @helper(%[[X]]) : (i32) -> i32
// CHECK-NEXT:    %[[G:.*]] = arith.mulf %[[F]], %[[F]] : f32
// CHECK-NEXT:    %[[GG:.*]] = arith.addf %[[G]], %[[G]] : f32
// CHECK-NEXT:    return %[[R]], %[[H]], %[[GG]] : i32, i32, f32
// CHECK:       func.func private @helper(%[[V:.*]]: i32) -> i32
// CHECK-NEXT:    return %[[V]] : i32
// CHECK-NOT:   @unused
