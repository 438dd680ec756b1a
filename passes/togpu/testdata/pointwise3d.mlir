// A 3-D pointwise nest with a non-zero lower bound and a step of 2 on the
// outer dim, broadcasting b over the middle one.
func.func @main(%a: memref<?x5x8xf32>, %b: memref<8x8xf32>) -> memref<?x5x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %n = "loop.dim"(%a) <{index = 0 : i64}> : (memref<?x5x8xf32>) -> index
  %out = "loop.alloc"(%n) : (index) -> memref<?x5x8xf32>
  "loop.parallel"(%c0, %c1, %c0, %n, %c5, %c8, %c1, %c2, %c1) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%i: index, %j: index, %k: index):
    %x = "loop.load"(%a, %i, %j, %k) : (memref<?x5x8xf32>, index, index, index) -> f32
    %y = "loop.load"(%b, %j, %k) : (memref<8x8xf32>, index, index) -> f32
    %s = arith.subf %x, %y : f32
    "loop.store"(%s, %out, %i, %j, %k) : (f32, memref<?x5x8xf32>, index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  return %out : memref<?x5x8xf32>
}
