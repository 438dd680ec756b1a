// A decoding step's attention softmax: scores [2, 3, 1, 200] (one query a
// sequence and head) masked by the cache's positions ≤ pos. The query
// dimension has size 1, so its loads index it by the constant 0, not the
// nest's variable: the scores and the positions then each miss induction
// variables of the nest, which is still a row reduction (a block a row),
// not a matmul-like nest (a thread a row, each walking 3 × 200 elements).
func.func @main(%s: memref<2x3x1x200xbf16>, %pos: memref<200xi64>, %at: memref<i64>) -> memref<2x3x1x200xbf16> {
  %out = loop.alloc() : memref<2x3x1x200xbf16>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c200 = arith.constant 200 : index
  "loop.parallel"(%c0, %c0, %c0, %c2, %c3, %c1, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%i: index, %h: index, %q: index):
    %p = loop.load %at[] : memref<i64>
    %scale = arith.constant 1.250000e-01 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %m = "loop.for"(%c0, %c200, %c1, %ninf) ({
    ^bb0(%k: index, %acc: f32):
      %kp = loop.load %pos[%k] : memref<200xi64>
      %keep = arith.cmpi sle, %kp, %p : i64
      %x = loop.load %s[%i, %h, %c0, %k] : memref<2x3x1x200xbf16>
      %xf = arith.extf %x : bf16 to f32
      %xs = arith.mulf %xf, %scale : f32
      %v = arith.select %keep, %xs, %ninf : f32
      %gt = arith.cmpf ogt, %v, %acc : f32
      %nan = arith.cmpf uno, %v, %v : f32
      %take = arith.ori %gt, %nan : i1
      %r = arith.select %take, %v, %acc : f32
      loop.yield %r : f32
    }) : (index, index, index, f32) -> f32
    %zero = arith.constant 0.000000e+00 : f32
    %sum = "loop.for"(%c0, %c200, %c1, %zero) ({
    ^bb0(%k: index, %acc: f32):
      %kp = loop.load %pos[%k] : memref<200xi64>
      %keep = arith.cmpi sle, %kp, %p : i64
      %x = loop.load %s[%i, %h, %c0, %k] : memref<2x3x1x200xbf16>
      %xf = arith.extf %x : bf16 to f32
      %xs = arith.mulf %xf, %scale : f32
      %v = arith.select %keep, %xs, %ninf : f32
      %d = arith.subf %v, %m : f32
      %e = math.exp %d : f32
      %n = arith.addf %acc, %e : f32
      loop.yield %n : f32
    }) : (index, index, index, f32) -> f32
    "loop.for"(%c0, %c200, %c1) ({
    ^bb0(%k: index):
      %kp = loop.load %pos[%k] : memref<200xi64>
      %keep = arith.cmpi sle, %kp, %p : i64
      %x = loop.load %s[%i, %h, %c0, %k] : memref<2x3x1x200xbf16>
      %xf = arith.extf %x : bf16 to f32
      %xs = arith.mulf %xf, %scale : f32
      %v = arith.select %keep, %xs, %ninf : f32
      %d = arith.subf %v, %m : f32
      %e = math.exp %d : f32
      %y = arith.divf %e, %sum : f32
      %yb = arith.truncf %y : f32 to bf16
      loop.store %yb, %out[%i, %h, %q, %k] : memref<2x3x1x200xbf16>
      loop.yield
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  return %out : memref<2x3x1x200xbf16>
}
