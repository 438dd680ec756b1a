// RUN: irc %s | FileCheck %s
// RUN: irc %s | mlir-opt | FileCheck %s
// RUN: irc %s --print-op-generic | mlir-opt | FileCheck %s

// CHECK-LABEL: func.func @unary(
func.func @unary(%x: f32) -> f32 {
  // CHECK: math.exp %{{.*}} : f32
  %0 = math.exp %x : f32
  // CHECK: math.exp2
  %1 = math.exp2 %0 : f32
  // CHECK: math.log
  %2 = math.log %1 : f32
  // CHECK: math.log2
  %3 = math.log2 %2 : f32
  // CHECK: math.sqrt
  %4 = math.sqrt %3 : f32
  // CHECK: math.rsqrt
  %5 = math.rsqrt %4 : f32
  // CHECK: math.tanh
  %6 = math.tanh %5 : f32
  // CHECK: math.erf
  %7 = math.erf %6 : f32
  // CHECK: math.sin
  %8 = math.sin %7 : f32
  // CHECK: math.cos
  %9 = math.cos %8 : f32
  // CHECK: math.absf %{{.*}} fastmath<fast> : f32
  %10 = math.absf %9 fastmath<fast> : f32
  return %10 : f32
}

// CHECK-LABEL: func.func @binary(
func.func @binary(%x: f64, %y: f64, %t: tensor<4xf32>) -> (f64, f64, tensor<4xf32>) {
  // CHECK: math.powf %{{.*}}, %{{.*}} : f64
  %0 = math.powf %x, %y : f64
  // CHECK: math.fma %{{.*}}, %{{.*}}, %{{.*}} : f64
  %1 = math.fma %x, %y, %0 : f64
  // CHECK: math.tanh %{{.*}} : tensor<4xf32>
  %2 = math.tanh %t : tensor<4xf32>
  return %0, %1, %2 : f64, f64, tensor<4xf32>
}
