// Centers each static row of 512 in place (x -= max), then writes
// exp(x) of the centered row: the third pass loads what the second
// stored, so a register row must load it again instead of reusing the
// loads of the first pass.
func.func @main(%x: memref<4x512xf32>) -> memref<4x512xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = arith.constant 512 : index
  %out = "loop.alloc"() : () -> memref<4x512xf32>
  %ninf = arith.constant 0xFF800000 : f32
  "loop.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %mx = "loop.for"(%c0, %n, %c1, %ninf) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%x, %i, %j) : (memref<4x512xf32>, index, index) -> f32
      %a = arith.maximumf %v, %acc : f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    "loop.for"(%c0, %n, %c1) ({
    ^bb0(%j: index):
      %v = "loop.load"(%x, %i, %j) : (memref<4x512xf32>, index, index) -> f32
      %d = arith.subf %v, %mx : f32
      "loop.store"(%d, %x, %i, %j) : (f32, memref<4x512xf32>, index, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.for"(%c0, %n, %c1) ({
    ^bb0(%j: index):
      %v = "loop.load"(%x, %i, %j) : (memref<4x512xf32>, index, index) -> f32
      %e = math.exp %v : f32
      "loop.store"(%e, %out, %i, %j) : (f32, memref<4x512xf32>, index, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %out : memref<4x512xf32>
}
