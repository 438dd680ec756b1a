// A softmax written in bf16 primitives: the maximum accumulates in bf16
// (exact in any order, so the row mapping shuffles it widened to f32), the
// sum in f32, and every other step rounds to bf16.
func.func @main(%arg0: memref<2x3x4x200xbf16>) -> memref<2x3x4x200xbf16> {
  %0 = loop.alloc() : memref<2x3x4x200xbf16>
  %1 = arith.constant 2 : index
  %2 = arith.constant 3 : index
  %3 = arith.constant 4 : index
  %4 = arith.constant 0 : index
  %5 = arith.constant 1 : index
  %6 = arith.constant 200 : index
  %7 = arith.constant 200 : index
  "loop.parallel"(%4, %4, %4, %1, %2, %3, %5, %5, %5) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%arg1: index, %arg2: index, %arg3: index):
    %8 = arith.constant 200 : index
    %9 = arith.constant 0 : index
    %10 = arith.constant 1 : index
    %11 = arith.constant 0xFF80 : bf16
    %12 = "loop.for"(%9, %6, %10, %11) ({
    ^bb0(%arg4: index, %arg5: bf16):
      %16 = loop.load %arg0[%arg1, %arg2, %arg3, %arg4] : memref<2x3x4x200xbf16>
      %17 = arith.cmpf ogt, %16, %arg5 : bf16
      %18 = arith.cmpf uno, %16, %16 : bf16
      %19 = arith.ori %17, %18 : i1
      %20 = arith.select %19, %16, %arg5 : bf16
      loop.yield %20 : bf16
    }) : (index, index, index, bf16) -> bf16
    %13 = arith.constant 0.000000e+00 : f32
    %14 = "loop.for"(%9, %7, %10, %13) ({
    ^bb0(%arg6: index, %arg7: f32):
      %21 = loop.load %arg0[%arg1, %arg2, %arg3, %arg6] : memref<2x3x4x200xbf16>
      %22 = arith.subf %21, %12 : bf16
      %23 = math.exp %22 : bf16
      %24 = arith.extf %23 : bf16 to f32
      %25 = arith.addf %arg7, %24 : f32
      loop.yield %25 : f32
    }) : (index, index, index, f32) -> f32
    %15 = arith.truncf %14 : f32 to bf16
    "loop.for"(%9, %8, %10) ({
    ^bb0(%arg8: index):
      %26 = loop.load %arg0[%arg1, %arg2, %arg3, %arg8] : memref<2x3x4x200xbf16>
      %27 = arith.subf %26, %12 : bf16
      %28 = math.exp %27 : bf16
      %29 = arith.divf %28, %15 : bf16
      loop.store %29, %0[%arg1, %arg2, %arg3, %arg8] : memref<2x3x4x200xbf16>
      loop.yield
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  return %0 : memref<2x3x4x200xbf16>
}
