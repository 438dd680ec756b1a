// The decomposition computes what the composites compute: irc run prints
// each result's shape, dtype, sum and a hash of its bytes, and for f32 the
// primitives round exactly as the interpreter's composite rules do.
// RUN: irc run %s --random-inputs 3 > %t.composite
// RUN: irc run %s --random-inputs 3 --pass-pipeline='builtin.module(func.func(graph-decompose))' > %t.decomposed
// RUN: diff %t.composite %t.decomposed
// RUN: irc %s --pass-pipeline='builtin.module(func.func(graph-decompose))' | FileCheck %s
// CHECK-NOT: graph.softmax
// CHECK-NOT: graph.layer_norm
// CHECK-NOT: graph.attention
// CHECK: return
func.func @main(%x: tensor<3x7xf32>, %w: tensor<7xf32>, %b: tensor<7xf32>, %q: tensor<2x5x4xf32>) -> (tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<2x5x4xf32>) {
  %0 = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<3x7xf32>) -> tensor<3x7xf32>
  %1 = "graph.log_softmax"(%x) <{axis = 0 : i64}> : (tensor<3x7xf32>) -> tensor<3x7xf32>
  %2 = "graph.layer_norm"(%x, %w, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<3x7xf32>, tensor<7xf32>, tensor<7xf32>) -> tensor<3x7xf32>
  %3 = "graph.attention"(%q, %q, %q) <{causal = true}> : (tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  return %0, %1, %2, %3 : tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<2x5x4xf32>
}
