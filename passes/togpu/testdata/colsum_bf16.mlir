// A bias gradient's column blocks with the elementwise work of their rows
// (a GELU gradient's kernel): each point [block, column] walks 4 rows,
// stores a bf16 result per element and sums those results into an f32
// partial; the loop carries a second value (a count) too. Vectorized, one
// loop runs every lane's rows.
func.func @main(%x: memref<128x256xbf16>) -> (memref<128x256xbf16>, memref<32x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %y = loop.alloc() : memref<128x256xbf16>
  %part = loop.alloc() : memref<32x256xf32>
  "loop.parallel"(%c0, %c0, %c32, %c256, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%p: index, %c: index):
    %first = arith.muli %p, %c4 : index
    %s:2 = "loop.for"(%c0, %c4, %c1, %zero, %zero) ({
    ^bb0(%q: index, %acc: f32, %n: f32):
      %r = arith.addi %first, %q : index
      %v = loop.load %x[%r, %c] : memref<128x256xbf16>
      %w = arith.extf %v : bf16 to f32
      %sq = arith.mulf %w, %w : f32
      %t = arith.truncf %sq : f32 to bf16
      loop.store %t, %y[%r, %c] : memref<128x256xbf16>
      %te = arith.extf %t : bf16 to f32
      %a = arith.addf %acc, %te : f32
      %n1 = arith.addf %n, %one : f32
      loop.yield %a, %n1 : f32, f32
    }) : (index, index, index, f32, f32) -> (f32, f32)
    %m = arith.mulf %s#0, %s#1 : f32
    loop.store %m, %part[%p, %c] : memref<32x256xf32>
    "loop.reduce"() : () -> ()
  }) {loop.nest = "reduction"} : (index, index, index, index, index, index) -> ()
  return %y, %part : memref<128x256xbf16>, memref<32x256xf32>
}
