// Nests over static extents of 0, as hand-written loop IR may hold them
// (convert-graph-to-loop makes none for empty outputs): a pointwise nest
// over [3, 0, 5] (an empty middle dim, taken apart by the flattened
// index), a softmax over no rows of 512, one over 4 rows of no columns
// (max -inf, sum 0, nothing written), a row sum over 4 rows of no columns
// (zeros), and a 2-D row nest over [2, 0] rows.
func.func @main(%x: memref<3x0x5xf32>, %y: memref<0x512xf32>, %z: memref<4x0xf32>) -> (memref<3x0x5xf32>, memref<0x512xf32>, memref<4xf32>, memref<4xf32>, memref<2x0xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %n = arith.constant 512 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %a = "loop.alloc"() : () -> memref<3x0x5xf32>
  "loop.parallel"(%c0, %c0, %c0, %c3, %c0, %c5, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%i: index, %j: index, %k: index):
    %v = "loop.load"(%x, %i, %j, %k) : (memref<3x0x5xf32>, index, index, index) -> f32
    %e = math.exp %v : f32
    "loop.store"(%e, %a, %i, %j, %k) : (f32, memref<3x0x5xf32>, index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  %b = "loop.alloc"() : () -> memref<0x512xf32>
  "loop.parallel"(%c0, %c0, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %mx = "loop.for"(%c0, %n, %c1, %ninf) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%y, %i, %j) : (memref<0x512xf32>, index, index) -> f32
      %m = arith.maximumf %v, %acc : f32
      "loop.yield"(%m) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %sum = "loop.for"(%c0, %n, %c1, %zero) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%y, %i, %j) : (memref<0x512xf32>, index, index) -> f32
      %d = arith.subf %v, %mx : f32
      %e = math.exp %d : f32
      %s = arith.addf %acc, %e : f32
      "loop.yield"(%s) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    "loop.for"(%c0, %n, %c1) ({
    ^bb0(%j: index):
      %v = "loop.load"(%y, %i, %j) : (memref<0x512xf32>, index, index) -> f32
      %d = arith.subf %v, %mx : f32
      %e = math.exp %d : f32
      %p = arith.divf %e, %sum : f32
      "loop.store"(%p, %b, %i, %j) : (f32, memref<0x512xf32>, index, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  %c = "loop.alloc"() : () -> memref<4xf32>
  "loop.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %mx = "loop.for"(%c0, %c0, %c1, %ninf) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%z, %i, %j) : (memref<4x0xf32>, index, index) -> f32
      %m = arith.maximumf %v, %acc : f32
      "loop.yield"(%m) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %sum = "loop.for"(%c0, %c0, %c1, %zero) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%z, %i, %j) : (memref<4x0xf32>, index, index) -> f32
      %d = arith.subf %v, %mx : f32
      %e = math.exp %d : f32
      %s = arith.addf %acc, %e : f32
      "loop.yield"(%s) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %l = math.log %sum : f32
    %r = arith.addf %l, %mx : f32
    "loop.store"(%r, %c, %i) : (f32, memref<4xf32>, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  %d = "loop.alloc"() : () -> memref<4xf32>
  "loop.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = "loop.for"(%c0, %c0, %c1, %one) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%z, %i, %j) : (memref<4x0xf32>, index, index) -> f32
      %s = arith.addf %acc, %v : f32
      "loop.yield"(%s) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    "loop.store"(%sum, %d, %i) : (f32, memref<4xf32>, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  %e = "loop.alloc"() : () -> memref<2x0xf32>
  "loop.parallel"(%c0, %c0, %c2, %c0, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %sum = "loop.for"(%c0, %c4, %c1, %zero) ({
    ^bb0(%k: index, %acc: f32):
      %v = "loop.load"(%z, %k, %j) : (memref<4x0xf32>, index, index) -> f32
      %s = arith.addf %acc, %v : f32
      "loop.yield"(%s) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    "loop.store"(%sum, %e, %i, %j) : (f32, memref<2x0xf32>, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  return %a, %b, %c, %d, %e : memref<3x0x5xf32>, memref<0x512xf32>, memref<4xf32>, memref<4xf32>, memref<2x0xf32>
}
