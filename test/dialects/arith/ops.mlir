// Round trip of arith's custom syntax: irc prints what it reads, and
// mlir-opt reads irc's output in both forms.
// RUN: irc %s | FileCheck %s
// RUN: irc %s | irc | FileCheck %s
// RUN: irc %s | mlir-opt | FileCheck %s
// RUN: irc %s --print-op-generic | mlir-opt | FileCheck %s

// CHECK-LABEL: func.func @ints(
// CHECK-SAME:    %[[A:[^:]*]]: i32, %[[B:[^:]*]]: i32
func.func @ints(%a: i32, %b: i32) -> i32 {
  // CHECK: arith.addi %[[A]], %[[B]] : i32
  %0 = arith.addi %a, %b : i32
  // CHECK: arith.subi
  %1 = arith.subi %0, %b : i32
  // CHECK: arith.muli
  %2 = arith.muli %1, %a : i32
  // CHECK: arith.divsi
  %3 = arith.divsi %2, %b : i32
  // CHECK: arith.remui
  %4 = arith.remui %3, %b : i32
  // CHECK: arith.andi
  %5 = arith.andi %4, %a : i32
  // CHECK: arith.ori
  %6 = arith.ori %5, %a : i32
  // CHECK: arith.xori
  %7 = arith.xori %6, %a : i32
  // CHECK: arith.shli
  %8 = arith.shli %7, %b : i32
  // CHECK: arith.shrsi
  %9 = arith.shrsi %8, %b : i32
  // CHECK: arith.maxsi
  %10 = arith.maxsi %9, %a : i32
  // CHECK: arith.minui
  %11 = arith.minui %10, %a : i32
  return %11 : i32
}

// CHECK-LABEL: func.func @floats(
func.func @floats(%x: f32, %y: f32) -> f32 {
  // CHECK: arith.addf %{{.*}}, %{{.*}} : f32
  %0 = arith.addf %x, %y : f32
  // CHECK: arith.subf %{{.*}}, %{{.*}} fastmath<fast> : f32
  %1 = arith.subf %0, %y fastmath<fast> : f32
  // CHECK: arith.mulf
  %2 = arith.mulf %1, %x : f32
  // CHECK: arith.divf
  %3 = arith.divf %2, %y : f32
  // CHECK: arith.negf
  %4 = arith.negf %3 : f32
  // CHECK: arith.maximumf
  %5 = arith.maximumf %4, %x : f32
  // CHECK: arith.minnumf
  %6 = arith.minnumf %5, %x : f32
  return %6 : f32
}

// CHECK-LABEL: func.func @compare_select(
func.func @compare_select(%a: i32, %b: i32, %x: f64, %y: f64) -> (i32, f64) {
  // CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i32
  %c = arith.cmpi slt, %a, %b : i32
  // CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : i32
  %s = arith.select %c, %a, %b : i32
  // CHECK: arith.cmpf oge, %{{.*}}, %{{.*}} : f64
  %d = arith.cmpf oge, %x, %y : f64
  %t = arith.select %d, %x, %y : f64
  return %s, %t : i32, f64
}

// CHECK-LABEL: func.func @casts(
func.func @casts(%a: i32, %x: f32, %i: index) -> (i64, i16, f64, f16, f32, i32, index, i32, f32) {
  // CHECK: arith.extsi %{{.*}} : i32 to i64
  %0 = arith.extsi %a : i32 to i64
  // CHECK: arith.trunci %{{.*}} : i32 to i16
  %1 = arith.trunci %a : i32 to i16
  // CHECK: arith.extf %{{.*}} : f32 to f64
  %2 = arith.extf %x : f32 to f64
  // CHECK: arith.truncf %{{.*}} : f32 to f16
  %3 = arith.truncf %x : f32 to f16
  // CHECK: arith.sitofp %{{.*}} : i32 to f32
  %4 = arith.sitofp %a : i32 to f32
  // CHECK: arith.fptosi %{{.*}} : f32 to i32
  %5 = arith.fptosi %x : f32 to i32
  // CHECK: arith.index_cast %{{.*}} : i32 to index
  %6 = arith.index_cast %a : i32 to index
  // CHECK: arith.bitcast %{{.*}} : f32 to i32
  %7 = arith.bitcast %x : f32 to i32
  // CHECK: arith.uitofp %{{.*}} : i32 to f32
  %8 = arith.uitofp %a : i32 to f32
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : i64, i16, f64, f16, f32, i32, index, i32, f32
}

// CHECK-LABEL: func.func @constants(
func.func @constants() -> (i32, f32, index, i1, tensor<2xf32>) {
  // CHECK: arith.constant 42 : i32
  %0 = arith.constant 42 : i32
  // CHECK: arith.constant 1.500000e+00 : f32
  %1 = arith.constant 1.5 : f32
  // CHECK: arith.constant 3 : index
  %2 = arith.constant 3 : index
  // CHECK: arith.constant true
  %3 = arith.constant true
  // CHECK: arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %4 = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %0, %1, %2, %3, %4 : i32, f32, index, i1, tensor<2xf32>
}

// Elementwise on tensors.
// CHECK-LABEL: func.func @tensors(
// CHECK: arith.addf %{{.*}}, %{{.*}} : tensor<4x?xf32>
func.func @tensors(%t: tensor<4x?xf32>) -> tensor<4x?xf32> {
  %0 = arith.addf %t, %t : tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}
