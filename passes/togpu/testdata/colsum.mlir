// A column sum split in two (as graph-split-reductions splits one: [128,
// 256] summed over its rows, viewed as [32, 4, 256]): the first nest sums
// each run of 4 rows into one of 32 partial rows, 8192 points reading
// columns;
// the second nest does the same through a linear index taken apart by a
// division and a remainder (as views lower); the third sums the 32
// partials of the first.
func.func @main(%x: memref<128x256xf32>) -> (memref<256xf32>, memref<32x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.000000e+00 : f32
  %part = loop.alloc() : memref<32x256xf32>
  "loop.parallel"(%c0, %c0, %c32, %c256, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%p: index, %c: index):
    %first = arith.muli %p, %c4 : index
    %s = "loop.for"(%c0, %c4, %c1, %zero) ({
    ^bb0(%q: index, %acc: f32):
      %r = arith.addi %first, %q : index
      %v = loop.load %x[%r, %c] : memref<128x256xf32>
      %a = arith.addf %acc, %v : f32
      loop.yield %a : f32
    }) : (index, index, index, f32) -> f32
    loop.store %s, %part[%p, %c] : memref<32x256xf32>
    "loop.reduce"() : () -> ()
  }) {loop.nest = "reduction"} : (index, index, index, index, index, index) -> ()
  %viewed = loop.alloc() : memref<32x256xf32>
  "loop.parallel"(%c0, %c0, %c32, %c256, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%p: index, %c: index):
    %first = arith.muli %p, %c4 : index
    %s = "loop.for"(%c0, %c4, %c1, %zero) ({
    ^bb0(%q: index, %acc: f32):
      %r = arith.addi %first, %q : index
      %rr = arith.muli %r, %c256 : index
      %lin = arith.addi %rr, %c : index
      %row = arith.divui %lin, %c256 : index
      %col = arith.remui %lin, %c256 : index
      %v = loop.load %x[%row, %col] : memref<128x256xf32>
      %a = arith.addf %acc, %v : f32
      loop.yield %a : f32
    }) : (index, index, index, f32) -> f32
    loop.store %s, %viewed[%p, %c] : memref<32x256xf32>
    "loop.reduce"() : () -> ()
  }) {loop.nest = "reduction"} : (index, index, index, index, index, index) -> ()
  %out = loop.alloc() : memref<256xf32>
  "loop.parallel"(%c0, %c256, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%c: index):
    %s = "loop.for"(%c0, %c32, %c1, %zero) ({
    ^bb0(%p: index, %acc: f32):
      %v = loop.load %part[%p, %c] : memref<32x256xf32>
      %a = arith.addf %acc, %v : f32
      loop.yield %a : f32
    }) : (index, index, index, f32) -> f32
    loop.store %s, %out[%c] : memref<256xf32>
    "loop.reduce"() : () -> ()
  }) {loop.nest = "reduction"} : (index, index, index) -> ()
  loop.dealloc %part : memref<32x256xf32>
  return %out, %viewed : memref<256xf32>, memref<32x256xf32>
}
