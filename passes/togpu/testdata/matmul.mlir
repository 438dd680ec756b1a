// c = a @ b with a dynamic M, then a pointwise nest of 13 columns (not a
// multiple of the vector width) and a 0-d result written by a 1-point nest.
func.func @main(%a: memref<?x16xf32>, %b: memref<16x13xf32>) -> (memref<?x13xf32>, memref<f32>) {
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
