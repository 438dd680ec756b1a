// out = x * 2 + y (broadcast of y over rows), dynamic rows.
func.func @main(%x: memref<?x12xf32>, %y: memref<12xf32>) -> memref<?x12xf32> {
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
  return %out : memref<?x12xf32>
}
