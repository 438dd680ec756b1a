// RUN: irc %s | FileCheck %s
// RUN: irc %s | irc | FileCheck %s
// RUN: irc %s | mlir-opt | FileCheck %s
// RUN: irc %s --print-op-generic | mlir-opt | FileCheck %s

// CHECK: module attributes {gpu.container_module}
module attributes {gpu.container_module} {
  // CHECK-LABEL: gpu.module @kernels {
  gpu.module @kernels {
    // CHECK: gpu.func @reduce(%{{.*}}: memref<?xf32>, %{{.*}}: index) workgroup(%[[BUF:.*]] : memref<32xf32, 3>) kernel {
    gpu.func @reduce(%in: memref<?xf32>, %n: index) workgroup(%buf : memref<32xf32, 3>) kernel {
      // CHECK: gpu.thread_id  x
      %tid = gpu.thread_id x
      // CHECK: gpu.block_id  y
      %bid = gpu.block_id y
      // CHECK: gpu.block_dim  z
      %bdim = gpu.block_dim z
      // CHECK: gpu.grid_dim  x
      %gdim = gpu.grid_dim x
      %one = arith.constant 1 : i32
      %width = arith.constant 32 : i32
      %v = arith.constant 2.0 : f32
      // CHECK: gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : f32
      %r0, %ok0 = gpu.shuffle xor %v, %one, %width : f32
      // CHECK: gpu.shuffle  down %{{.*}}, %{{.*}}, %{{.*}} : f32
      %r1, %ok1 = gpu.shuffle down %v, %one, %width : f32
      // CHECK: gpu.shuffle  up %{{.*}}, %{{.*}}, %{{.*}} : i32
      %r2, %ok2 = gpu.shuffle up %one, %one, %width : i32
      // CHECK: gpu.shuffle  idx %{{.*}}, %{{.*}}, %{{.*}} : f32
      %r3, %ok3 = gpu.shuffle idx %v, %one, %width : f32
      // CHECK: gpu.barrier
      gpu.barrier
      // CHECK: gpu.return
      gpu.return
    }
    // Private attributions come after the workgroup ones, as upstream.
    // CHECK: gpu.func @scratch(%{{.*}}: f32) workgroup(%{{.*}} : memref<8xf32, 3>) private(%{{.*}} : memref<2xf32, 5>, %{{.*}} : memref<1xi32, 5>) kernel {
    gpu.func @scratch(%x: f32) workgroup(%w : memref<8xf32, 3>) private(%p : memref<2xf32, 5>, %q : memref<1xi32, 5>) kernel {
      gpu.return
    }
    // CHECK: gpu.func @only_private() private(%{{.*}} : memref<4xf32, 5>) {
    gpu.func @only_private() private(%p : memref<4xf32, 5>) {
      gpu.return
    }
    // CHECK: gpu.func @helper(%[[X:.*]]: f32) -> f32 {
    gpu.func @helper(%x: f32) -> f32 {
      // CHECK: gpu.return %[[X]] : f32
      gpu.return %x : f32
    }
    // CHECK-NOT: gpu.module_end
  }

  // CHECK-LABEL: func.func @host(
  func.func @host(%a: memref<?xf32>, %n: index, %bytes: i32) {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    // CHECK: gpu.launch_func  @kernels::@reduce blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}})  args(%{{.*}} : memref<?xf32>, %{{.*}} : index)
    gpu.launch_func @kernels::@reduce blocks in (%n, %c1, %c1) threads in (%c32, %c1, %c1) args(%a : memref<?xf32>, %n : index)
    // CHECK: gpu.launch_func  @kernels::@reduce blocks in ({{.*}}) threads in ({{.*}})  dynamic_shared_memory_size %{{.*}} args(
    gpu.launch_func @kernels::@reduce blocks in (%n, %c1, %c1) threads in (%c32, %c1, %c1) dynamic_shared_memory_size %bytes args(%a : memref<?xf32>, %n : index)
    return
  }
}
