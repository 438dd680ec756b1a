// out[i] = 1 + sum_j x[i, j], dynamic row length.
func.func @main(%x: memref<5x?xf32>) -> memref<5xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %n = "loop.dim"(%x) <{index = 1 : i64}> : (memref<5x?xf32>) -> index
  %out = "loop.alloc"() : () -> memref<5xf32>
  %init = arith.constant 1.0 : f32
  "loop.parallel"(%c0, %c5, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %s = "loop.for"(%c0, %n, %c1, %init) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%x, %i, %j) : (memref<5x?xf32>, index, index) -> f32
      %a = arith.addf %acc, %v : f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    "loop.store"(%s, %out, %i) : (f32, memref<5xf32>, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %out : memref<5xf32>
}
