// Row softmax in three passes over each row: max, sum of exp (stored in a
// scratch buffer), normalize reading the scratch buffer back in reverse
// order (so that threads read what others wrote: the block synchronizes).
func.func @main(%x: memref<?x?xf32>) -> memref<?x?xf32> {
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
