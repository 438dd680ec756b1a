// Row softmax over static rows of 512: max, sum of exp, then each element
// divided by the sum. Rows this short run unrolled from registers: each
// thread loads its elements of the row once for all three passes, and the
// division becomes a multiplication by the row's reciprocal.
func.func @main(%x: memref<6x512xf32>) -> memref<6x512xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %n = arith.constant 512 : index
  %out = "loop.alloc"() : () -> memref<6x512xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  "loop.parallel"(%c0, %c6, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %mx = "loop.for"(%c0, %n, %c1, %ninf) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%x, %i, %j) : (memref<6x512xf32>, index, index) -> f32
      %a = arith.maximumf %v, %acc : f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %sum = "loop.for"(%c0, %n, %c1, %zero) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%x, %i, %j) : (memref<6x512xf32>, index, index) -> f32
      %d = arith.subf %v, %mx : f32
      %e = math.exp %d : f32
      %a = arith.addf %acc, %e : f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    "loop.for"(%c0, %n, %c1) ({
    ^bb0(%j: index):
      %v = "loop.load"(%x, %i, %j) : (memref<6x512xf32>, index, index) -> f32
      %d = arith.subf %v, %mx : f32
      %e = math.exp %d : f32
      %p = arith.divf %e, %sum : f32
      "loop.store"(%p, %out, %i, %j) : (f32, memref<6x512xf32>, index, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %out : memref<6x512xf32>
}
