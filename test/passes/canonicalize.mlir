// RUN: irc %s --pass-pipeline='builtin.module(func.func(canonicalize))' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(func.func(canonicalize{max-iterations=10 top-down=false}))' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(func.func(canonicalize))' | mlir-opt | FileCheck %s

// Constants fold, identities disappear.
// CHECK-LABEL: func.func @fold(
// CHECK-SAME:    %[[X:.*]]: i32
// CHECK-NEXT:    %[[C:.*]] = arith.constant 5 : i32
// CHECK-NEXT:    %[[R:.*]] = arith.addi %[[X]], %[[C]] : i32
// CHECK-NEXT:    return %[[R]] : i32
func.func @fold(%x: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %five = arith.addi %c2, %c3 : i32
  %a = arith.addi %x, %c0 : i32
  %b = arith.muli %a, %c1 : i32
  %r = arith.addi %b, %five : i32
  return %r : i32
}

// x - x folds to 0 for integers...
// CHECK-LABEL: func.func @sub_self_int(
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    return %[[Z]] : i32
func.func @sub_self_int(%x: i32) -> i32 {
  %0 = arith.subi %x, %x : i32
  return %0 : i32
}

// ...but not for floats (NaN - NaN is NaN, inf - inf too).
// CHECK-LABEL: func.func @sub_self_float(
// CHECK-NEXT:    arith.subf
// CHECK-NEXT:    return
func.func @sub_self_float(%x: f32) -> f32 {
  %0 = arith.subf %x, %x : f32
  return %0 : f32
}

// Dead pure ops are erased.
// CHECK-LABEL: func.func @dead(
// CHECK-NOT:     arith.muli
// CHECK:         return
func.func @dead(%x: i32) -> i32 {
  %0 = arith.muli %x, %x : i32
  return %x : i32
}
