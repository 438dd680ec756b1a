// RUN: irc %s --pass-pipeline='builtin.module(inline)' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(inline)' | mlir-opt | FileCheck %s

// Calls to functions with a body are replaced by the body; the private
// callee, now unused, is removed.
// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[X:.*]]: i32
// CHECK-NOT:     call
// CHECK:         %[[S:.*]] = arith.muli %[[X]], %[[X]] : i32
// CHECK-NEXT:    %[[T:.*]] = arith.addi %[[S]], %[[X]] : i32
// CHECK-NEXT:    return %[[T]] : i32
// CHECK-NOT:   func.func private @square
func.func @main(%x: i32) -> i32 {
  %0 = call @square(%x) : (i32) -> i32
  %1 = arith.addi %0, %x : i32
  return %1 : i32
}
func.func private @square(%v: i32) -> i32 {
  %0 = arith.muli %v, %v : i32
  return %0 : i32
}

// Declarations cannot be inlined.
// CHECK-LABEL: func.func @external(
// CHECK:         call @decl
func.func @external() -> i32 {
  %0 = call @decl() : () -> i32
  return %0 : i32
}
func.func private @decl() -> i32
