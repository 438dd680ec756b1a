// RUN: irc %s --pass-pipeline='builtin.module(graph-autodiff{wrt=0,2})' | FileCheck %s

// @f_grad follows @f; it takes f's arguments and one cotangent per result,
// and returns one gradient per wrt argument, in order. The broadcast bias
// gets the gradient summed over the broadcast dim; @f is unchanged.
// CHECK-LABEL: func.func @f(
// CHECK:         return
// CHECK-LABEL: func.func @f_grad(%arg0: tensor<4x3xf32>, %arg1: tensor<3x5xf32>, %arg2: tensor<5xf32>, %arg3: tensor<4x5xf32>, %arg4: tensor<f32>) -> (tensor<4x3xf32>, tensor<5xf32>)
// CHECK:         %[[MM:.*]] = "graph.matmul"(%arg0, %arg1)
// CHECK:         %[[PRE:.*]] = "graph.add"(%[[MM]], %arg2)
// The relu's result is used twice (returned and summed): its gradients add up.
// CHECK:         %[[CT:.*]] = "graph.broadcast_to"(%{{.*}}) <{shape = [4, 5]}>
// CHECK:         %[[ACC:.*]] = "graph.add"(%arg3, %[[CT]])
// CHECK:         %[[ZERO:.*]] = "graph.constant"() <{value = dense<0.000000e+00> : tensor<f32>}>
// CHECK:         %[[POS:.*]] = "graph.cmp"(%[[PRE]], %[[ZERO]]) <{predicate = "gt"}>
// CHECK:         %[[G:.*]] = "graph.select"(%[[POS]], %[[ACC]], %[[ZERO]])
// CHECK-DAG:     %[[GB:.*]] = "graph.reduce_sum"(%[[G]]) <{axes = [0], keepdims = false}> : (tensor<4x5xf32>) -> tensor<5xf32>
// CHECK-DAG:     %[[WT:.*]] = "graph.transpose"(%arg1) <{perm = [1, 0]}>
// CHECK:         %[[GX:.*]] = "graph.matmul"(%[[G]], %[[WT]]) : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
// CHECK:         return %[[GX]], %[[GB]] : tensor<4x3xf32>, tensor<5xf32>
func.func @f(%x: tensor<4x3xf32>, %w: tensor<3x5xf32>, %b: tensor<5xf32>) -> (tensor<4x5xf32>, tensor<f32>) {
  %0 = "graph.matmul"(%x, %w) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %1 = "graph.add"(%0, %b) : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %2 = "graph.relu"(%1) : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %3 = "graph.reduce_sum"(%2) <{axes = [0, 1], keepdims = false}> : (tensor<4x5xf32>) -> tensor<f32>
  return %2, %3 : tensor<4x5xf32>, tensor<f32>
}

// Private functions are left alone.
// CHECK-NOT: @helper_grad
func.func private @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
