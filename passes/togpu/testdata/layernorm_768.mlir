// Layer norm over rows of 768 (GPT-2's width): 768 is no multiple of 4 ×
// 256 threads, so a block of 256 would run three scalar loops a row, each
// reading the row again; the row mapping takes 192 threads of 4 adjacent
// columns, the row held in registers and read once.
func.func @main(%x: memref<4x768xf32>, %g: memref<768xf32>) -> memref<4x768xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c768 = arith.constant 768 : index
  %out = loop.alloc() : memref<4x768xf32>
  %zero = arith.constant 0.0 : f32
  %nf = arith.constant 768.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  "loop.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %s = "loop.for"(%c0, %c768, %c1, %zero) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%x, %i, %j) : (memref<4x768xf32>, index, index) -> f32
      %a = arith.addf %acc, %v : f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %mean = arith.divf %s, %nf : f32
    %ss = "loop.for"(%c0, %c768, %c1, %zero) ({
    ^bb0(%j: index, %acc: f32):
      %v = "loop.load"(%x, %i, %j) : (memref<4x768xf32>, index, index) -> f32
      %d = arith.subf %v, %mean : f32
      %q = arith.mulf %d, %d : f32
      %a = arith.addf %acc, %q : f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %var = arith.divf %ss, %nf : f32
    %ve = arith.addf %var, %eps : f32
    %rs = math.rsqrt %ve : f32
    "loop.for"(%c0, %c768, %c1) ({
    ^bb0(%j: index):
      %v = "loop.load"(%x, %i, %j) : (memref<4x768xf32>, index, index) -> f32
      %w = "loop.load"(%g, %j) : (memref<768xf32>, index) -> f32
      %d = arith.subf %v, %mean : f32
      %n = arith.mulf %d, %rs : f32
      %y = arith.mulf %n, %w : f32
      "loop.store"(%y, %out, %i, %j) : (f32, memref<4x768xf32>, index, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %out : memref<4x768xf32>
}
