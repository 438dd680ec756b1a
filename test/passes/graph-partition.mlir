// graph-autodiff{joint=true} then graph-partition: @f_fwd saves the matmul
// output and the operands the weight gradient needs; @f_bwd recomputes
// tanh from the saved matmul instead of having it saved.
// RUN: irc %s --pass-pipeline='builtin.module(graph-autodiff{joint=true},graph-partition)' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(graph-autodiff{joint=true},graph-partition)' --logs=partition -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOG
// The joint function returns f's result then the gradients.
// RUN: irc %s --pass-pipeline='builtin.module(graph-autodiff{joint=true})' | FileCheck %s --check-prefix=JOINT

// CHECK-LABEL: func.func @f(
// CHECK-NOT:   @f_joint
// CHECK-LABEL: func.func @f_fwd(%arg0: tensor<4x3xf32>, %arg1: tensor<3x5xf32>) -> (tensor<4x5xf32>, tensor<4x3xf32>, tensor<3x5xf32>, tensor<4x5xf32>) attributes {autodiff.saved = 3 : i64}
// CHECK:         %[[M:.*]] = "graph.matmul"(%arg0, %arg1)
// CHECK:         %[[Y:.*]] = "graph.tanh"(%[[M]])
// CHECK:         return %[[Y]], %arg0, %arg1, %[[M]]
// CHECK-LABEL: func.func @f_bwd(%arg0: tensor<4x3xf32>, %arg1: tensor<3x5xf32>, %arg2: tensor<4x5xf32>, %arg3: tensor<4x5xf32>) -> (tensor<4x3xf32>, tensor<3x5xf32>) attributes {autodiff.saved = 3 : i64}
// CHECK:         "graph.tanh"(%arg2)
// CHECK-NOT:     "graph.matmul"(%arg0, %arg1)
// CHECK:         return

// LOG: partition: @f_joint: saves 3 values, 188 bytes (saving everything the backward reads: 188 bytes, 100%); the backward recomputes {{[0-9]+}} ops
// LOG-NEXT: partition:   saved 0: argument 0 : tensor<4x3xf32>, 48 bytes
// LOG-NEXT: partition:   saved 1: argument 1 : tensor<3x5xf32>, 60 bytes
// LOG-NEXT: partition:   saved 2: 'graph.matmul' at {{.*}}graph-partition.mlir:{{[0-9]+}}:8 : tensor<4x5xf32>, 80 bytes

// JOINT-LABEL: func.func @f_joint(%arg0: tensor<4x3xf32>, %arg1: tensor<3x5xf32>, %arg2: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x3xf32>, tensor<3x5xf32>) attributes {autodiff.primals = 2 : i64}
// JOINT:         %[[Y:.*]] = "graph.tanh"
// JOINT:         return %[[Y]], %{{.*}}, %{{.*}} :
func.func @f(%x: tensor<4x3xf32>, %w: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %0 = "graph.matmul"(%x, %w) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %1 = "graph.tanh"(%0) : (tensor<4x5xf32>) -> tensor<4x5xf32>
  return %1 : tensor<4x5xf32>
}
