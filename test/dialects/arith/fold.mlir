// Folding evaluates constants the way the interpreter does.
// RUN: irc %s --pass-pipeline='builtin.module(func.func(canonicalize))' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(func.func(canonicalize{test-convergence=true}))' | FileCheck %s

// CHECK-LABEL: func.func @int_folds(
// CHECK-DAG:     arith.constant 7 : i32
// CHECK-DAG:     arith.constant -128 : i8
// CHECK-DAG:     arith.constant true
// CHECK-NOT:     arith.addi
// CHECK-NOT:     arith.muli
// CHECK-NOT:     arith.cmpi
func.func @int_folds() -> (i32, i8, i1) {
  %c3 = arith.constant 3 : i32
  %c4 = arith.constant 4 : i32
  %0 = arith.addi %c3, %c4 : i32
  // 127 + 1 wraps in i8.
  %c127 = arith.constant 127 : i8
  %c1 = arith.constant 1 : i8
  %1 = arith.addi %c127, %c1 : i8
  %2 = arith.cmpi slt, %c3, %c4 : i32
  return %0, %1, %2 : i32, i8, i1
}

// CHECK-LABEL: func.func @float_folds(
// CHECK:         arith.constant 3.500000e+00 : f32
// CHECK-NOT:     arith.addf
func.func @float_folds() -> f32 {
  %a = arith.constant 1.5 : f32
  %b = arith.constant 2.0 : f32
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}

// Division by zero is not folded: it is undefined behaviour to be kept.
// CHECK-LABEL: func.func @no_div_by_zero(
// CHECK:         arith.divsi
func.func @no_div_by_zero(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c5 = arith.constant 5 : i32
  %0 = arith.divsi %c5, %c0 : i32
  return %0 : i32
}
