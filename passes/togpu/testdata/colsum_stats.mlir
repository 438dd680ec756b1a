// The first half of a layer norm's weight gradient split as
// graph-split-reductions splits it: Σ over each run of 4 rows of
// g·(x − mean[r])·rstd[r], [128, 256] into [32, 256] partial sums. The
// per-row statistics are the same element for every column, so the loop
// still reads columns (a thread a column, not a warp whose lanes load
// rows apart).
func.func @main(%g: memref<128x256xf32>, %x: memref<128x256xf32>, %mean: memref<128xf32>, %rstd: memref<128xf32>) -> memref<32x256xf32> {
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
      %gv = loop.load %g[%r, %c] : memref<128x256xf32>
      %xv = loop.load %x[%r, %c] : memref<128x256xf32>
      %m = loop.load %mean[%r] : memref<128xf32>
      %k = loop.load %rstd[%r] : memref<128xf32>
      %d = arith.subf %xv, %m : f32
      %n = arith.mulf %d, %k : f32
      %t = arith.mulf %gv, %n : f32
      %a = arith.addf %acc, %t : f32
      loop.yield %a : f32
    }) : (index, index, index, f32) -> f32
    loop.store %s, %part[%p, %c] : memref<32x256xf32>
    "loop.reduce"() : () -> ()
  }) {loop.nest = "reduction"} : (index, index, index, index, index, index) -> ()
  return %part : memref<32x256xf32>
}
