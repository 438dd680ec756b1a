// RUN: irc %s --pass-pipeline='builtin.module(convert-loop-to-gpu,canonicalize,cse)' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(convert-loop-to-gpu{block=128 vector=1 rows-per-block=1})' | FileCheck %s --check-prefix=OPTS

// One kernel per top-level nest, launched from the host in the nest's
// place; kernels see 1-D buffers and their dynamic sizes as index params.

// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @main
// CHECK-NOT: loop.parallel
// CHECK: %[[N:.*]] = loop.dim %arg0, 0 : memref<?x12xf32>
// CHECK: %[[X:.*]] = "loop.view"(%arg0) : (memref<?x12xf32>) -> memref<?xf32>
// CHECK: %[[OUT:.*]] = "loop.view"(%{{.*}}) : (memref<?x12xf32>) -> memref<?xf32>
// CHECK: gpu.launch_func @main_kernels::@main_kernel_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[X]] : memref<?xf32>, %[[N]] : index, %arg1 : memref<12xf32>, %[[OUT]] : memref<?xf32>)
// CHECK-NOT: loop.parallel
// CHECK: gpu.launch_func @main_kernels::@main_kernel_1
// CHECK-NOT: loop.parallel
// CHECK: return
// CHECK: gpu.module @main_kernels
// CHECK: gpu.func @main_kernel_0(%{{.*}}: memref<?xf32>, %{{.*}}: index, %{{.*}}: memref<12xf32>, %{{.*}}: memref<?xf32>) kernel
// CHECK-SAME: strata.launch = {block = 256 : i64, mapping = "pointwise", rows_per_block = 0 : i64, vector = 4 : i64}
// CHECK-NOT: loop.dim
// CHECK: gpu.thread_id x
// CHECK: gpu.grid_dim x
// CHECK: gpu.return
// Rows of 12: a warp per row, 8 rows per block, shuffles only.
// CHECK: gpu.func @main_kernel_1(
// CHECK-SAME: mapping = "row", rows_per_block = 8
// CHECK-NOT: gpu.barrier
// CHECK: gpu.shuffle xor
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
// CHECK-NOT: gpu.func

// A block of 128 per row: warps combine through workgroup memory.
// OPTS: strata.launch = {block = 128 : i64, mapping = "pointwise", rows_per_block = 0 : i64, vector = 1 : i64}
// OPTS: gpu.func @main_kernel_1({{.*}}) workgroup(%{{.*}} : memref<4xf32, 3>) kernel attributes {strata.launch = {block = 128 : i64, mapping = "row", rows_per_block = 1 : i64, vector = 1 : i64}}
// OPTS-COUNT-5: gpu.shuffle xor
// OPTS: gpu.barrier

func.func @main(%x: memref<?x12xf32>, %y: memref<12xf32>) -> (memref<?x12xf32>, memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %n = "loop.dim"(%x) <{index = 0 : i64}> : (memref<?x12xf32>) -> index
  %out = "loop.alloc"(%n) : (index) -> memref<?x12xf32>
  %two = arith.constant 2.0 : f32
  "loop.parallel"(%c0, %c0, %n, %c12, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %a = "loop.load"(%x, %i, %j) : (memref<?x12xf32>, index, index) -> f32
    %b = "loop.load"(%y, %j) : (memref<12xf32>, index) -> f32
    %m = arith.mulf %a, %two : f32
    %s = arith.addf %m, %b : f32
    "loop.store"(%s, %out, %i, %j) : (f32, memref<?x12xf32>, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  %sums = "loop.alloc"(%n) : (index) -> memref<?xf32>
  %zero = arith.constant 0.0 : f32
  "loop.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %s = "loop.for"(%c0, %c12, %c1, %zero) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%out, %i, %j) : (memref<?x12xf32>, index, index) -> f32
      %a = arith.addf %acc, %v : f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    "loop.store"(%s, %sums, %i) : (f32, memref<?xf32>, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %out, %sums : memref<?x12xf32>, memref<?xf32>
}
