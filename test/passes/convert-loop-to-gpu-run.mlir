// The gpu level gives the loop level's results in the interpreter, which
// simulates the launches (exact here: pointwise ops and an integer maximum).
// RUN: irc run %s --random-inputs 5 --shape arg0=9x40 --shape arg1=9x40 > %t
// RUN: irc %s --pass-pipeline='builtin.module(convert-loop-to-gpu,canonicalize,cse)' -o %t.gpu.mlir
// RUN: irc run %t.gpu.mlir --random-inputs 5 --shape arg0=9x40 --shape arg1=9x40 >> %t
// RUN: irc %s --pass-pipeline='builtin.module(convert-loop-to-gpu{block=64 vector=2 rows-per-block=1 max-blocks=2})' -o %t.small.mlir
// RUN: irc run %t.small.mlir --random-inputs 5 --shape arg0=9x40 --shape arg1=9x40 >> %t
// RUN: FileCheck %s < %t
// CHECK:      result 0: shape (9, 40) dtype float32 sum [[S0:[^ ]+]] hash [[H0:[0-9a-f]+]]
// CHECK-NEXT: result 1: shape (9,) dtype int32 sum [[S1:[^ ]+]] hash [[H1:[0-9a-f]+]]
// CHECK-NEXT: result 0: shape (9, 40) dtype float32 sum [[S0]] hash [[H0]]
// CHECK-NEXT: result 1: shape (9,) dtype int32 sum [[S1]] hash [[H1]]
// CHECK-NEXT: result 0: shape (9, 40) dtype float32 sum [[S0]] hash [[H0]]
// CHECK-NEXT: result 1: shape (9,) dtype int32 sum [[S1]] hash [[H1]]

func.func @main(%x: memref<?x?xf32>, %k: memref<?x?xi32>) -> (memref<?x?xf32>, memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = "loop.dim"(%x) <{index = 0 : i64}> : (memref<?x?xf32>) -> index
  %n = "loop.dim"(%x) <{index = 1 : i64}> : (memref<?x?xf32>) -> index
  %out = "loop.alloc"(%m, %n) : (index, index) -> memref<?x?xf32>
  %half = arith.constant 0.5 : f32
  "loop.parallel"(%c0, %c0, %m, %n, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %a = "loop.load"(%x, %i, %j) : (memref<?x?xf32>, index, index) -> f32
    %b = arith.mulf %a, %half : f32
    %c = arith.maximumf %b, %a : f32
    "loop.store"(%c, %out, %i, %j) : (f32, memref<?x?xf32>, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  %mx = "loop.alloc"(%m) : (index) -> memref<?xi32>
  %lo = arith.constant -1000 : i32
  "loop.parallel"(%c0, %m, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %r = "loop.for"(%c0, %n, %c1, %lo) ({
    ^bb0(%j: index, %acc: i32):
      %v = "loop.load"(%k, %i, %j) : (memref<?x?xi32>, index, index) -> i32
      %w = arith.maxsi %v, %acc : i32
      "loop.yield"(%w) : (i32) -> ()
    }) : (index, index, index, i32) -> i32
    "loop.store"(%r, %mx, %i) : (i32, memref<?xi32>, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %out, %mx : memref<?x?xf32>, memref<?xi32>
}
