// Column blocks of 16 rows ([512, 256] summed into [32, 256] partials):
// 8192 points each walking 16 elements. With blocks of 1024 threads, four
// lanes a thread would leave 65536 elements of x a block
// (togpu.NarrowPerBlock), so the nest takes two; blocks of 256 take four.
func.func @main(%x: memref<512x256xf32>) -> memref<32x256xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.000000e+00 : f32
  %part = loop.alloc() : memref<32x256xf32>
  "loop.parallel"(%c0, %c0, %c32, %c256, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%p: index, %c: index):
    %first = arith.muli %p, %c16 : index
    %s = "loop.for"(%c0, %c16, %c1, %zero) ({
    ^bb0(%q: index, %acc: f32):
      %r = arith.addi %first, %q : index
      %v = loop.load %x[%r, %c] : memref<512x256xf32>
      %a = arith.addf %acc, %v : f32
      loop.yield %a : f32
    }) : (index, index, index, f32) -> f32
    loop.store %s, %part[%p, %c] : memref<32x256xf32>
    "loop.reduce"() : () -> ()
  }) {loop.nest = "reduction"} : (index, index, index, index, index, index) -> ()
  return %part : memref<32x256xf32>
}
