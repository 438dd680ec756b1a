// Every decision and refusal is logged, by --logs=fusion or STRATA_LOGS=fusion.
// RUN: irc %s --pass-pipeline='builtin.module(func.func(graph-fuse))' --logs=fusion -o /dev/null 2>&1 | FileCheck %s
// RUN: env STRATA_LOGS=fusion irc %s --pass-pipeline='builtin.module(func.func(graph-fuse))' -o /dev/null 2>&1 | FileCheck %s
// Fusion keeps the results.
// RUN: irc run %s --random-inputs 5 > %t.plain
// RUN: irc run %s --random-inputs 5 --pass-pipeline='builtin.module(func.func(graph-fuse))' > %t.fused
// RUN: diff %t.plain %t.fused

// CHECK: fusion: func @f: 4 computing ops in 2 groups
// CHECK: fusion: group 1 = 'graph.exp' at {{.*}}graph-fuse-log.mlir:18:8: pointwise
// CHECK: fusion: group 2 = 'graph.matmul' at {{.*}}:19:8: matmul
// CHECK: fusion: refuse 'graph.matmul' at {{.*}}:19:8 into group 1: matmul starts its own group: producers are not fused into a template
// CHECK: fusion: group 3 = 'graph.add' at {{.*}}:20:8: pointwise
// CHECK: fusion: refuse 'graph.add' at {{.*}}:20:8 into group 1: a path between them goes through another kernel (fusing would make a cycle)
// CHECK: fusion: group 2 <- 'graph.add' at {{.*}}:20:8: epilogue (pointwise consumer of the matmul of group 2)
// CHECK: fusion: group 2 <- 'graph.relu' at {{.*}}:21:8: epilogue (pointwise consumer of the matmul of group 2)
func.func @f(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = "graph.exp"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = "graph.matmul"(%a, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = "graph.add"(%a, %m) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = "graph.relu"(%c) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
