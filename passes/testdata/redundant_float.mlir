// Floating-point redundancy that is safe to remove, and some that is not.
func.func @floats(%x: f32, %y: f32) -> (f32, f32) {
  %c0 = arith.constant 0.0 : f32
  %c1 = arith.constant 1.0 : f32
  %m0 = arith.constant -0.0 : f32
  %0 = arith.mulf %x, %c1 : f32
  %1 = arith.addf %0, %m0 : f32
  %2 = arith.addf %x, %y : f32
  %3 = arith.addf %x, %y : f32
  %4 = arith.mulf %2, %3 : f32
  %5 = arith.negf %4 : f32
  %6 = arith.negf %5 : f32
  %7 = arith.addf %6, %c0 : f32
  %8 = arith.divf %1, %c1 : f32
  return %7, %8 : f32, f32
}
