// RUN: irc %s --pass-pipeline='builtin.module(func.func(canonicalize))' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(func.func(canonicalize{max-iterations=10 top-down=false}))' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(func.func(canonicalize))' | mlir-opt | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(func.func(canonicalize{test-convergence=true}))' | FileCheck %s

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

// Division by a power of two whose reciprocal the type holds exactly is a
// multiplication (the same real number, rounded once); fastmath flags stay.
// Other divisors, and 2^-24 in f16 (2^24 overflows), stay divisions.
// CHECK-LABEL: func.func @divf_pow2(
// CHECK-DAG:     %[[H:.*]] = arith.constant 5.96{{.*}}e-08 : f16
// CHECK-DAG:     %[[THREE:.*]] = arith.constant 3.0{{.*}} : f32
// CHECK-DAG:     %[[EIGHTH:.*]] = arith.constant dense<1.25{{0*}}e-01> : tensor<4xbf16>
// CHECK-DAG:     %[[M2:.*]] = arith.constant -2.0{{.*}} : f32
// CHECK-DAG:     %[[INV:.*]] = arith.constant 2.44140625{{[eE]}}-{{0*}}4 : f32
// CHECK:         %[[A:.*]] = arith.mulf %arg0, %[[INV]] : f32
// CHECK-NEXT:    %[[B:.*]] = arith.mulf %arg0, %[[M2]] fastmath<nnan> : f32
// CHECK-NEXT:    %[[C:.*]] = arith.mulf %arg1, %[[EIGHTH]] : tensor<4xbf16>
// CHECK-NEXT:    %[[D:.*]] = arith.divf %arg0, %[[THREE]] : f32
// CHECK-NEXT:    %[[E:.*]] = arith.divf %arg2, %[[H]] : f16
func.func @divf_pow2(%x: f32, %t: tensor<4xbf16>, %h: f16) -> (f32, f32, tensor<4xbf16>, f32, f16) {
  %c4096 = arith.constant 4096.0 : f32
  %a = arith.divf %x, %c4096 : f32
  %cm = arith.constant -0.5 : f32
  %b = arith.divf %x, %cm fastmath<nnan> : f32
  %ct = arith.constant dense<8.0> : tensor<4xbf16>
  %c = arith.divf %t, %ct : tensor<4xbf16>
  %c3 = arith.constant 3.0 : f32
  %d = arith.divf %x, %c3 : f32
  %ch = arith.constant 5.9604644775390625E-8 : f16
  %e = arith.divf %h, %ch : f16
  return %a, %b, %c, %d, %e : f32, f32, tensor<4xbf16>, f32, f16
}
