// Kernels of every mapping, through LLVM IR to PTX by both backends,
// assembled by ptxas.
// RUN: irc %s --pass-pipeline='builtin.module(convert-loop-to-gpu,canonicalize,cse)' -o %t.mlir
// RUN: irc %t.mlir --emit=llvm | FileCheck %s
// RUN: irc %t.mlir --emit=ptx > %t.ptx && ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: irc %t.mlir --emit=ptx --ptx-backend=llc > %t2.ptx && ptxas -arch=sm_90 %t2.ptx -o %t2.cubin
// REQUIRES: ptxas, llc
// CHECK-DAG: define void @main_kernel_0(
// CHECK-DAG: define void @main_kernel_1(
// CHECK-DAG: define void @softmax_kernel_0(
// CHECK-DAG: define void @matmul_kernel_0(
// CHECK-DAG: @softmax_kernel_0_wg0 = {{.*}}addrspace(3)

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
  return %out, %means, %maxes : memref<?x48xf32>, memref<?xf32>, memref<?xi32>
}
func.func @softmax(%x: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = "loop.dim"(%x) <{index = 0 : i64}> : (memref<?x?xf32>) -> index
  %n = "loop.dim"(%x) <{index = 1 : i64}> : (memref<?x?xf32>) -> index
  %tmp = "loop.alloc"(%m, %n) : (index, index) -> memref<?x?xf32>
  %out = "loop.alloc"(%m, %n) : (index, index) -> memref<?x?xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  "loop.parallel"(%c0, %m, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %mx = "loop.for"(%c0, %n, %c1, %ninf) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%x, %i, %j) : (memref<?x?xf32>, index, index) -> f32
      %a = arith.maximumf %v, %acc : f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %sum = "loop.for"(%c0, %n, %c1, %zero) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%x, %i, %j) : (memref<?x?xf32>, index, index) -> f32
      %d = arith.subf %v, %mx : f32
      %e = math.exp %d : f32
      "loop.store"(%e, %tmp, %i, %j) : (f32, memref<?x?xf32>, index, index) -> ()
      %a = arith.addf %acc, %e : f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %one = arith.constant 1.0 : f32
    %r = arith.divf %one, %sum : f32
    "loop.for"(%c0, %n, %c1) ({
    ^bb0(%j: index):
      %nm1 = arith.subi %n, %c1 : index
      %jr = arith.subi %nm1, %j : index
      %e = "loop.load"(%tmp, %i, %jr) : (memref<?x?xf32>, index, index) -> f32
      %p = arith.mulf %e, %r : f32
      "loop.store"(%p, %out, %i, %jr) : (f32, memref<?x?xf32>, index, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  "loop.dealloc"(%tmp) : (memref<?x?xf32>) -> ()
  return %out : memref<?x?xf32>
}
func.func @matmul(%a: memref<?x16xf32>, %b: memref<16x13xf32>) -> (memref<?x13xf32>, memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  %c16 = arith.constant 16 : index
  %m = "loop.dim"(%a) <{index = 0 : i64}> : (memref<?x16xf32>) -> index
  %c = "loop.alloc"(%m) : (index) -> memref<?x13xf32>
  %zero = arith.constant 0.0 : f32
  "loop.parallel"(%c0, %c0, %m, %c13, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %s = "loop.for"(%c0, %c16, %c1, %zero) ({
    ^bb0(%k: index, %acc: f32):
      %x = "loop.load"(%a, %i, %k) : (memref<?x16xf32>, index, index) -> f32
      %y = "loop.load"(%b, %k, %j) : (memref<16x13xf32>, index, index) -> f32
      %p = arith.mulf %x, %y : f32
      %t = arith.addf %acc, %p : f32
      "loop.yield"(%t) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    "loop.store"(%s, %c, %i, %j) : (f32, memref<?x13xf32>, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  "loop.parallel"(%c0, %c0, %m, %c13, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %v = "loop.load"(%c, %i, %j) : (memref<?x13xf32>, index, index) -> f32
    %t = math.tanh %v : f32
    "loop.store"(%t, %c, %i, %j) : (f32, memref<?x13xf32>, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  %r = "loop.alloc"() : () -> memref<f32>
  "loop.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %v = "loop.load"(%c, %c0, %c1) : (memref<?x13xf32>, index, index) -> f32
    "loop.store"(%v, %r) : (f32, memref<f32>) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %c, %r : memref<?x13xf32>, memref<f32>
}
