// Each row is written to a scratch buffer, then read back reversed by a
// second pass: threads read what other threads wrote, so the block must
// synchronize between the passes.
func.func @main(%x: memref<4x?xf32>) -> memref<4x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = "loop.dim"(%x) <{index = 1 : i64}> : (memref<4x?xf32>) -> index
  %tmp = "loop.alloc"(%n) : (index) -> memref<4x?xf32>
  %out = "loop.alloc"(%n) : (index) -> memref<4x?xf32>
  "loop.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    "loop.for"(%c0, %n, %c1) ({
    ^bb0(%j: index):
      %v = "loop.load"(%x, %i, %j) : (memref<4x?xf32>, index, index) -> f32
      %e = math.exp %v : f32
      "loop.store"(%e, %tmp, %i, %j) : (f32, memref<4x?xf32>, index, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.for"(%c0, %n, %c1) ({
    ^bb0(%j: index):
      %nm1 = arith.subi %n, %c1 : index
      %jr = arith.subi %nm1, %j : index
      %e = "loop.load"(%tmp, %i, %jr) : (memref<4x?xf32>, index, index) -> f32
      "loop.store"(%e, %out, %i, %j) : (f32, memref<4x?xf32>, index, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %out : memref<4x?xf32>
}
