// Row kernels (a warp per row with shuffles; a block per row with workgroup
// memory and barriers) and pointwise kernels, through LLVM IR to PTX by both
// backends, assembled by ptxas.
// RUN: irc %s --pass-pipeline='builtin.module(convert-loop-to-gpu,canonicalize,cse)' -o %t.mlir
// RUN: irc %t.mlir --emit=llvm | FileCheck %s
// RUN: irc %t.mlir --emit=ptx > %t.ptx && ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: irc %t.mlir --emit=ptx --ptx-backend=llc > %t2.ptx && ptxas -arch=sm_90 %t2.ptx -o %t2.cubin
// RUN: irc %s --pass-pipeline='builtin.module(convert-loop-to-gpu{rows-per-block=1 block=512},canonicalize,cse)' -o %t.block.mlir
// RUN: irc %t.block.mlir --emit=llvm | FileCheck %s --check-prefix=BLOCK
// RUN: irc %t.block.mlir --emit=ptx > %t3.ptx && ptxas -arch=sm_90 %t3.ptx -o %t3.cubin
// RUN: irc %t.block.mlir --emit=ptx --ptx-backend=llc > %t4.ptx && ptxas -arch=sm_90 %t4.ptx -o %t4.cubin
// REQUIRES: ptxas, llc
// CHECK: define void @main_kernel_0(
// CHECK: call float @llvm.nvvm.shfl.sync.bfly.f32
// CHECK: define void @main_kernel_1(
// BLOCK: @main_kernel_0_wg0 = {{.*}}addrspace(3) global [16 x float]
// BLOCK: define void @main_kernel_0(
// BLOCK: call void @llvm.nvvm.barrier0()

func.func @main(%x: memref<?x48xf32>, %g: memref<48xf32>, %k: memref<?x48xi32>) -> (memref<?x48xf32>, memref<?xf32>, memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c48 = arith.constant 48 : index
  %m = "loop.dim"(%x) <{index = 0 : i64}> : (memref<?x48xf32>) -> index
  %out = "loop.alloc"(%m) : (index) -> memref<?x48xf32>
  %means = "loop.alloc"(%m) : (index) -> memref<?xf32>
  %maxes = "loop.alloc"(%m) : (index) -> memref<?xi32>
  %zero = arith.constant 0.0 : f32
  %nf = arith.constant 48.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %imin = arith.constant -100 : i32
  "loop.parallel"(%c0, %m, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %s = "loop.parallel"(%c0, %c48, %c1, %zero) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
    ^bb0(%j: index):
      %v = "loop.load"(%x, %i, %j) : (memref<?x48xf32>, index, index) -> f32
      "loop.reduce"(%v) ({
      ^bb0(%l: f32, %r: f32):
        %a = arith.addf %l, %r : f32
        "loop.yield"(%a) : (f32) -> ()
      }) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %mean = arith.divf %s, %nf : f32
    "loop.store"(%mean, %means, %i) : (f32, memref<?xf32>, index) -> ()
    %ss = "loop.parallel"(%c0, %c48, %c1, %zero) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
    ^bb0(%j: index):
      %v = "loop.load"(%x, %i, %j) : (memref<?x48xf32>, index, index) -> f32
      %d = arith.subf %v, %mean : f32
      %q = arith.mulf %d, %d : f32
      "loop.reduce"(%q) ({
      ^bb0(%l: f32, %r: f32):
        %a = arith.addf %l, %r : f32
        "loop.yield"(%a) : (f32) -> ()
      }) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %var = arith.divf %ss, %nf : f32
    %ve = arith.addf %var, %eps : f32
    %rs = math.rsqrt %ve : f32
    %mx = "loop.for"(%c0, %c48, %c1, %imin) ({
    ^bb0(%j: index, %acc: i32):
      %v = "loop.load"(%k, %i, %j) : (memref<?x48xi32>, index, index) -> i32
      %a = arith.maxsi %acc, %v : i32
      "loop.yield"(%a) : (i32) -> ()
    }) : (index, index, index, i32) -> i32
    "loop.store"(%mx, %maxes, %i) : (i32, memref<?xi32>, index) -> ()
    "loop.for"(%c0, %c48, %c1) ({
    ^bb0(%j: index):
      %v = "loop.load"(%x, %i, %j) : (memref<?x48xf32>, index, index) -> f32
      %w = "loop.load"(%g, %j) : (memref<48xf32>, index) -> f32
      %d = arith.subf %v, %mean : f32
      %n = arith.mulf %d, %rs : f32
      %y = arith.mulf %n, %w : f32
      "loop.store"(%y, %out, %i, %j) : (f32, memref<?x48xf32>, index, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  %c2 = arith.constant 2 : index
  "loop.parallel"(%c0, %c0, %m, %c48, %c1, %c2) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %v = "loop.load"(%out, %i, %j) : (memref<?x48xf32>, index, index) -> f32
    %t = math.tanh %v : f32
    "loop.store"(%t, %out, %i, %j) : (f32, memref<?x48xf32>, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  return %out, %means, %maxes : memref<?x48xf32>, memref<?xf32>, memref<?xi32>
}
