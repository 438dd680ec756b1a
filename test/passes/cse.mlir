// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse))' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse))' | mlir-opt | FileCheck %s

// Identical pure ops merge into the first.
// CHECK-LABEL: func.func @simple(
// CHECK-SAME:    %[[X:[^:]*]]: i32, %[[Y:[^:]*]]: i32
// CHECK-NEXT:    %[[M:.*]] = arith.muli %[[X]], %[[Y]] : i32
// CHECK-NEXT:    %[[S:.*]] = arith.addi %[[M]], %[[M]] : i32
// CHECK-NEXT:    return %[[S]] : i32
func.func @simple(%x: i32, %y: i32) -> i32 {
  %0 = arith.muli %x, %y : i32
  %1 = arith.muli %x, %y : i32
  %2 = arith.addi %0, %1 : i32
  return %2 : i32
}

// Constants are ops like any other.
// CHECK-LABEL: func.func @constants(
// CHECK-COUNT-1: arith.constant 7 : i32
// CHECK-NOT:     arith.constant
// CHECK:         return
func.func @constants() -> (i32, i32) {
  %0 = arith.constant 7 : i32
  %1 = arith.constant 7 : i32
  return %0, %1 : i32, i32
}

// Different operands, or different attributes, are different ops.
// CHECK-LABEL: func.func @different(
// CHECK:         arith.cmpi slt
// CHECK:         arith.cmpi sgt
// CHECK:         arith.addf
// CHECK:         arith.addf {{.*}} fastmath<fast>
func.func @different(%x: i32, %y: i32, %f: f32) -> (i1, i1, f32, f32) {
  %0 = arith.cmpi slt, %x, %y : i32
  %1 = arith.cmpi sgt, %x, %y : i32
  %2 = arith.addf %f, %f : f32
  %3 = arith.addf %f, %f fastmath<fast> : f32
  return %0, %1, %2, %3 : i1, i1, f32, f32
}

// Calls may have side effects: they are never merged.
// CHECK-LABEL: func.func @calls(
// CHECK:         call @effect
// CHECK-NEXT:    call @effect
func.func @calls() {
  call @effect() : () -> ()
  call @effect() : () -> ()
  return
}
func.func private @effect()
