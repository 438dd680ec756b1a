// graph-symbolize-shapes makes the leading dim of each input symbolic,
// unifies sizes that must be equal and records constraints and guards.
// RUN: irc %s --pass-pipeline='builtin.module(graph-symbolize-shapes)' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(graph-symbolize-shapes)' | mlir-opt --allow-unregistered-dialect | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(graph-symbolize-shapes{dims=0:1,2:1 specialize=none})' | FileCheck %s --check-prefix=DIMS

// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: tensor<?x128xf32, #graph.dims<[s0, 128]>>, %{{.*}}: tensor<?x128xf32, #graph.dims<[s0, 128]>>, %{{.*}}: tensor<128x64xf32>) -> tensor<?x64xf32, #graph.dims<[s0, 64]>>
// CHECK-SAME: graph.constraints = ["s0 == s1", "s2 == 128"]
// CHECK-SAME: graph.guards = ["arg0.rank == 2", "arg0.shape[0] == s0", "arg0.shape[1] == 128", "arg0.dtype == f32", "arg1.rank == 2", "arg1.shape[0] == s0", {{.*}}, "s0 >= 1"]
// CHECK: graph.add{{.*}} -> tensor<?x128xf32, #graph.dims<[s0, 128]>>
// CHECK: graph.matmul{{.*}} -> tensor<?x64xf32, #graph.dims<[s0, 64]>>
// CHECK: return %{{.*}} : tensor<?x64xf32, #graph.dims<[s0, 64]>>
// Explicit dims: a symbol that must equal a static size is specialised back.
// DIMS-LABEL: func.func @mlp(
// DIMS-SAME: tensor<8x128xf32>, %{{.*}}: tensor<8x128xf32>, %{{.*}}: tensor<128x?xf32, #graph.dims<[128, s1]>>) -> tensor<8x?xf32, #graph.dims<[8, s1]>>
// DIMS-SAME: graph.constraints = ["s0 == 128"]
// DIMS-NOT: s1 >=
func.func @mlp(%x: tensor<8x128xf32>, %y: tensor<8x128xf32>, %w: tensor<128x64xf32>) -> tensor<8x64xf32> {
  %0 = "graph.add"(%x, %y) : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<8x128xf32>
  %1 = "graph.matmul"(%0, %w) : (tensor<8x128xf32>, tensor<128x64xf32>) -> tensor<8x64xf32>
  return %1 : tensor<8x64xf32>
}

// Derived sizes: a reshape multiplies, a concat adds, a reduction drops.
// A dim of size 1 is not made symbolic (the 0/1 policy).
// CHECK-LABEL: func.func @derived(
// CHECK-SAME: %{{.*}}: tensor<?x4xf32, #graph.dims<[s0, 4]>>, %{{.*}}: tensor<1x4xf32>, %{{.*}}: tensor<?x4xf32, #graph.dims<[s1, 4]>>)
// CHECK: graph.reshape{{.*}} -> tensor<?xf32, #graph.dims<[s0*4]>>
// CHECK: graph.concat{{.*}} -> tensor<?x4xf32, #graph.dims<[s0 + s1, 4]>>
// CHECK: graph.reduce_sum{{.*}} -> tensor<4xf32>
// CHECK: graph.add{{.*}} -> tensor<?x4xf32, #graph.dims<[s0, 4]>>
func.func @derived(%x: tensor<6x4xf32>, %b: tensor<1x4xf32>, %z: tensor<5x4xf32>) -> (tensor<24xf32>, tensor<11x4xf32>, tensor<4xf32>, tensor<6x4xf32>) {
  %0 = "graph.reshape"(%x) <{shape = [-1]}> : (tensor<6x4xf32>) -> tensor<24xf32>
  %1 = "graph.concat"(%x, %z) <{axis = 0 : i64}> : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<11x4xf32>
  %2 = "graph.reduce_sum"(%1) <{axes = [0], keepdims = false}> : (tensor<11x4xf32>) -> tensor<4xf32>
  %3 = "graph.add"(%x, %b) : (tensor<6x4xf32>, tensor<1x4xf32>) -> tensor<6x4xf32>
  return %0, %1, %2, %3 : tensor<24xf32>, tensor<11x4xf32>, tensor<4xf32>, tensor<6x4xf32>
}
