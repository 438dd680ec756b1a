// RUN: irc %s | irc | FileCheck %s
// RUN: irc %s --print-op-generic | FileCheck %s --check-prefix=GENERIC

// Every graph op round-trips through the printer and parser.

// CHECK-LABEL: func.func @elementwise
// GENERIC-LABEL: sym_name = "elementwise"
func.func @elementwise(%a: tensor<4x3xf32>, %b: tensor<3xf32>, %c: tensor<4x1xi1>) -> tensor<4x3xf32> {
  // CHECK: "graph.add"(%{{.*}}, %{{.*}}) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %0 = "graph.add"(%a, %b) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // CHECK: "graph.gelu"(%{{.*}}) <{approximate = "tanh"}>
  // GENERIC: "graph.gelu"(%{{.*}}) <{approximate = "tanh"}> : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = "graph.gelu"(%0) {approximate = "tanh"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  // CHECK: "graph.cmp"(%{{.*}}, %{{.*}}) <{predicate = "gt"}> : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xi1>
  %2 = "graph.cmp"(%1, %b) {predicate = "gt"} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xi1>
  // CHECK: "graph.select"
  %3 = "graph.select"(%2, %1, %b) : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // CHECK: "graph.cast"(%{{.*}}) : (tensor<4x3xf32>) -> tensor<4x3xbf16>
  %4 = "graph.cast"(%3) : (tensor<4x3xf32>) -> tensor<4x3xbf16>
  %5 = "graph.cast"(%4) : (tensor<4x3xbf16>) -> tensor<4x3xf32>
  return %5 : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%a: tensor<2x3x4xf32>, %i: tensor<5xi64>) -> tensor<4x2x3xf32> {
  // CHECK: "graph.reduce_sum"(%{{.*}}) <{axes = [1], keepdims = true}> : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %0 = "graph.reduce_sum"(%a) {axes = [1], keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  // CHECK: "graph.argmax"(%{{.*}}) <{axis = -1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
  %1 = "graph.argmax"(%a) {axis = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
  // CHECK: "graph.reshape"(%{{.*}}) <{shape = [6, -1]}> : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %2 = "graph.reshape"(%a) {shape = [6, -1]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK: "graph.gather"
  %3 = "graph.gather"(%2, %i) {axis = 0 : i64} : (tensor<6x4xf32>, tensor<5xi64>) -> tensor<5x4xf32>
  // CHECK: "graph.slice"(%{{.*}}) <{limits = [5, 4], starts = [1, 0], strides = [2, 1]}> : (tensor<5x4xf32>) -> tensor<2x4xf32>
  %4 = "graph.slice"(%3) {starts = [1, 0], limits = [5, 4], strides = [2, 1]} : (tensor<5x4xf32>) -> tensor<2x4xf32>
  // CHECK: "graph.pad"(%{{.*}}) <{high = [1, 0], low = [1, 0], value = 0.000000e+00 : f32}> : (tensor<2x4xf32>) -> tensor<4x4xf32>
  %5 = "graph.pad"(%4) {low = [1, 0], high = [1, 0], value = 0.0 : f32} : (tensor<2x4xf32>) -> tensor<4x4xf32>
  // CHECK: "graph.concat"
  %6 = "graph.concat"(%5, %4) {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2x4xf32>) -> tensor<6x4xf32>
  // CHECK: "graph.broadcast_to"(%{{.*}}) <{shape = [2, 6, 4]}>
  %7 = "graph.broadcast_to"(%6) {shape = [2, 6, 4]} : (tensor<6x4xf32>) -> tensor<2x6x4xf32>
  %8 = "graph.reshape"(%7) : (tensor<2x6x4xf32>) -> tensor<2x3x8xf32>
  %9 = "graph.slice"(%8) {starts = [0, 0, 0], limits = [2, 3, 4]} : (tensor<2x3x8xf32>) -> tensor<2x3x4xf32>
  // CHECK: "graph.transpose"(%{{.*}}) <{perm = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %10 = "graph.transpose"(%9) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %10 : tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @linalg
func.func @linalg(%q: tensor<2x16x8xbf16>, %x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %ln: tensor<8xbf16>) -> (tensor<2x16x8xbf16>, tensor<1x4x8x8xf32>) {
  // CHECK: "graph.matmul"(%{{.*}}, %{{.*}}) : (tensor<2x16x8xbf16>, tensor<8xbf16>) -> tensor<2x16xbf16>
  %0 = "graph.matmul"(%q, %ln) : (tensor<2x16x8xbf16>, tensor<8xbf16>) -> tensor<2x16xbf16>
  // CHECK: "graph.attention"(%{{.*}}, %{{.*}}, %{{.*}}) <{causal = true, scale = 1.250000e-01 : f32}>
  %1 = "graph.attention"(%q, %q, %q) {causal = true, scale = 0.125 : f32} : (tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>) -> tensor<2x16x8xbf16>
  // CHECK: "graph.layer_norm"(%{{.*}}, %{{.*}}, %{{.*}}) <{axis = -1 : i64, epsilon = 9.99999974E-6 : f32}>
  %2 = "graph.layer_norm"(%1, %ln, %ln) {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x16x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<2x16x8xbf16>
  %3 = "graph.softmax"(%2) {axis = -1 : i64} : (tensor<2x16x8xbf16>) -> tensor<2x16x8xbf16>
  // CHECK: "graph.conv2d"(%{{.*}}, %{{.*}}) <{padding = [1, 1]}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %4 = "graph.conv2d"(%x, %w) {padding = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "graph.fusion"(%{{.*}}) ({
  // CHECK: "graph.yield"
  %5 = "graph.fusion"(%4) ({
  ^bb0(%y: tensor<1x4x8x8xf32>):
    %r = "graph.relu"(%y) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    "graph.yield"(%r) : (tensor<1x4x8x8xf32>) -> ()
  }) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %3, %5 : tensor<2x16x8xbf16>, tensor<1x4x8x8xf32>
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<2x3xi64>, tensor<2xf32>, tensor<2x2xi1>) {
  // CHECK: "graph.iota"() <{axis = 1 : i64}> : () -> tensor<2x3xi64>
  %0 = "graph.iota"() {axis = 1 : i64} : () -> tensor<2x3xi64>
  // CHECK: "graph.constant"() <{value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %1 = "graph.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  // CHECK: "graph.full"() <{fill = true}> : () -> tensor<2x2xi1>
  %2 = "graph.full"() {fill = true} : () -> tensor<2x2xi1>
  return %0, %1, %2 : tensor<2x3xi64>, tensor<2xf32>, tensor<2x2xi1>
}
