// out = tanh(x) on f64: PTX has no f64 tanh, so the kernel needs
// lower-to-gpu's expand-math after convert-loop-to-gpu.
func.func @main(%x: memref<1000xf64>) -> memref<1000xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1000 : index
  %out = "loop.alloc"() : () -> memref<1000xf64>
  "loop.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %a = "loop.load"(%x, %i) : (memref<1000xf64>, index) -> f64
    %t = math.tanh %a : f64
    "loop.store"(%t, %out, %i) : (f64, memref<1000xf64>, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %out : memref<1000xf64>
}
