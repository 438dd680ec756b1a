// RUN: irc %s --pass-pipeline='builtin.module(func.func(graph-decompose,graph-fuse))' | FileCheck %s
// Fusing fused IR changes nothing.
// RUN: irc %s --pass-pipeline='builtin.module(func.func(graph-decompose,graph-fuse))' | irc --pass-pipeline='builtin.module(func.func(graph-fuse))' | FileCheck %s

// A pointwise chain is one kernel; the broadcast operand is an input.
// CHECK-LABEL: func.func @chain(
// CHECK:         %[[F:.*]] = "graph.fusion"(%arg0, %arg1) <{kind = "pointwise"}> ({
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>):
// CHECK-NEXT:      %[[E:.*]] = "graph.exp"(%[[X]])
// CHECK-NEXT:      %[[A:.*]] = "graph.add"(%[[E]], %[[B]])
// CHECK-NEXT:      %[[N:.*]] = "graph.neg"(%[[A]])
// CHECK-NEXT:      "graph.yield"(%[[N]])
// CHECK-NEXT:    })
// CHECK-NEXT:    return %[[F]]
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "graph.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "graph.add"(%0, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "graph.neg"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// Views are index remapping inside the kernel; the small splat is cloned.
// CHECK-LABEL: func.func @sum_of_squares(
// CHECK:         "graph.fusion"(%arg0) <{kind = "reduction"}> ({
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      "graph.transpose"(%[[X]])
// CHECK-NEXT:      "graph.reshape"
// CHECK-NEXT:      "graph.constant"()
// CHECK-NEXT:      "graph.pow"
// CHECK-NEXT:      "graph.reduce_sum"
// CHECK-NEXT:      "graph.yield"
// CHECK-NOT:     "graph.fusion"
// CHECK:         return
func.func @sum_of_squares(%x: tensor<4x8xf32>) -> tensor<f32> {
  %c = "graph.constant"() <{value = dense<2.0> : tensor<f32>}> : () -> tensor<f32>
  %0 = "graph.transpose"(%x) <{perm = [1, 0]}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = "graph.reshape"(%0) <{shape = [32]}> : (tensor<8x4xf32>) -> tensor<32xf32>
  %2 = "graph.pow"(%1, %c) : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
  %3 = "graph.reduce_sum"(%2) <{axes = [0], keepdims = false}> : (tensor<32xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// Softmax is one persistent row kernel.
// CHECK-LABEL: func.func @softmax(
// CHECK:         "graph.fusion"(%arg0) <{kind = "persistent_row"}> ({
// CHECK:           "graph.reduce_max"
// CHECK:           "graph.exp"
// CHECK:           "graph.reduce_sum"
// CHECK:           "graph.div"
// CHECK-NOT:     "graph.fusion"
// CHECK:         return
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// layer_norm: mean and variance of the same rows in one kernel.
// CHECK-LABEL: func.func @layer_norm(
// CHECK:         "graph.fusion"(%arg0, %arg1, %arg2) <{kind = "persistent_row"}> ({
// CHECK-COUNT-2:   "graph.reduce_mean"
// CHECK-NOT:     "graph.fusion"
// CHECK:         return
func.func @layer_norm(%x: tensor<3x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<3x16xf32> {
  %0 = "graph.layer_norm"(%x, %w, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<3x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}

// MLP: two matmul templates, each with its bias and activation as epilogue.
// CHECK-LABEL: func.func @mlp(
// CHECK:         %[[H:.*]] = "graph.fusion"(%arg0, %arg1, %arg2) <{kind = "matmul"}> ({
// CHECK:           "graph.matmul"
// CHECK-NEXT:      "graph.add"
// CHECK-NEXT:      "graph.gelu"
// CHECK-NEXT:      "graph.yield"
// CHECK:         %[[O:.*]] = "graph.fusion"(%[[H]], %arg3, %arg4) <{kind = "matmul"}> ({
// CHECK:           "graph.matmul"
// CHECK-NEXT:      "graph.add"
// CHECK-NEXT:      "graph.yield"
// CHECK:         return %[[O]]
func.func @mlp(%x: tensor<4x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x8xf32>, %b2: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "graph.matmul"(%x, %w1) : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %1 = "graph.add"(%0, %b1) : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %2 = "graph.gelu"(%1) : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %3 = "graph.matmul"(%2, %w2) : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
  %4 = "graph.add"(%3, %b2) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// Siblings reading x share a kernel with two results.
// CHECK-LABEL: func.func @siblings(
// CHECK:         %[[F:.*]]:2 = "graph.fusion"(%arg0) <{kind = "pointwise"}>
// CHECK:         return %[[F]]#0, %[[F]]#1
func.func @siblings(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = "graph.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "graph.log"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// A returned view is materialized by a copy kernel.
// CHECK-LABEL: func.func @copy(
// CHECK:         %[[C:.*]] = "graph.fusion"(%arg0) <{kind = "copy"}>
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      %[[T:.*]] = "graph.transpose"(%[[X]])
// CHECK-NEXT:      "graph.yield"(%[[T]])
// CHECK:         return %[[C]]
func.func @copy(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = "graph.transpose"(%x) <{perm = [1, 0]}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
