// irc run executes loop-level programs: memref arguments and results are
// buffers, read from and written to .npy like tensors.
// RUN: irc run %s | FileCheck %s
// m[i, j] = 3i + j; row sums by loop.for; the total by loop.parallel;
// loop.if picks the larger of the two row sums.
// CHECK:      result 0: shape (2, 3) dtype float32 sum 15 hash {{[0-9a-f]+}} values [0 1 2 3 4 5]
// CHECK-NEXT: result 1: shape (2,) dtype float32 sum 15 hash {{[0-9a-f]+}} values [3 12]
// CHECK-NEXT: result 2: shape () dtype float32 sum 15 hash {{[0-9a-f]+}} values [15]
// CHECK-NEXT: result 3: shape () dtype float32 sum 12 hash {{[0-9a-f]+}} values [12]

// RUN: irc run %s --func=double --random-inputs 3 | FileCheck %s --check-prefix=ARG
// ARG: result 0: shape (4,) dtype float32

// RUN: not irc run %s --func=oob --random-inputs 1 2>&1 | FileCheck %s --check-prefix=OOB
// OOB: error: 'loop.load' op index 4 is out of bounds for dimension 0 of size 4

func.func @main() -> (memref<2x3xf32>, memref<2xf32>, f32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0.0 : f32
  %m = loop.alloc() : memref<2x3xf32>
  %rows = loop.alloc() : memref<2xf32>
  "loop.parallel"(%c0, %c0, %c2, %c3, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %i3 = arith.muli %i, %c3 : index
    %k = arith.addi %i3, %j : index
    %ki = arith.index_cast %k : index to i64
    %v = arith.sitofp %ki : i64 to f32
    loop.store %v, %m[%i, %j] : memref<2x3xf32>
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  "loop.parallel"(%c0, %c2, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %n = loop.dim %m, 1 : memref<2x3xf32>
    %s = "loop.for"(%c0, %n, %c1, %z) ({
    ^bb0(%j: index, %acc: f32):
      %x = loop.load %m[%i, %j] : memref<2x3xf32>
      %y = arith.addf %acc, %x : f32
      loop.yield %y : f32
    }) : (index, index, index, f32) -> f32
    loop.store %s, %rows[%i] : memref<2xf32>
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  %total = "loop.parallel"(%c0, %c0, %c2, %c3, %c1, %c1, %z) <{operandSegmentSizes = array<i32: 2, 2, 2, 1>}> ({
  ^bb0(%i: index, %j: index):
    %x = loop.load %m[%i, %j] : memref<2x3xf32>
    "loop.reduce"(%x) ({
    ^bb0(%l: f32, %r: f32):
      %t = arith.addf %l, %r : f32
      loop.yield %t : f32
    }) : (f32) -> ()
  }) : (index, index, index, index, index, index, f32) -> f32
  %r0 = loop.load %rows[%c0] : memref<2xf32>
  %r1 = loop.load %rows[%c1] : memref<2xf32>
  %gt = arith.cmpf ogt, %r0, %r1 : f32
  %max = "loop.if"(%gt) ({
    loop.yield %r0 : f32
  }, {
    loop.yield %r1 : f32
  }) : (i1) -> f32
  return %m, %rows, %total, %max : memref<2x3xf32>, memref<2xf32>, f32, f32
}

func.func @double(%a: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "loop.for"(%c0, %c4, %c1) ({
  ^bb0(%i: index):
    %x = loop.load %a[%i] : memref<4xf32>
    %y = arith.addf %x, %x : f32
    loop.store %y, %a[%i] : memref<4xf32>
    loop.yield
  }) : (index, index, index) -> ()
  return %a : memref<4xf32>
}

func.func @oob(%a: memref<4xf32>) -> f32 {
  %c4 = arith.constant 4 : index
  %x = loop.load %a[%c4] : memref<4xf32>
  return %x : f32
}
