// A bf16 softmax as graph-decompose now writes it (cast to f32, softmax in
// f32, one rounding back to bf16), lowered: the reductions accumulate in f32
// from extended loads and the result is truncated once before the store.
func.func @main(%arg0: memref<2x3x4x96xbf16>) -> memref<2x3x4x96xbf16> {
  %0 = loop.alloc() : memref<2x3x4x96xbf16>
  %1 = arith.constant 2 : index
  %2 = arith.constant 3 : index
  %3 = arith.constant 4 : index
  %4 = arith.constant 0 : index
  %5 = arith.constant 1 : index
  %6 = arith.constant 96 : index
  %7 = arith.constant 96 : index
  "loop.parallel"(%4, %4, %4, %1, %2, %3, %5, %5, %5) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%arg1: index, %arg2: index, %arg3: index):
    %8 = arith.constant 96 : index
    %9 = arith.constant 0 : index
    %10 = arith.constant 1 : index
    %11 = arith.constant 0xFF800000 : f32
    %12 = "loop.for"(%9, %6, %10, %11) ({
    ^bb0(%arg4: index, %arg5: f32):
      %15 = loop.load %arg0[%arg1, %arg2, %arg3, %arg4] : memref<2x3x4x96xbf16>
      %16 = arith.extf %15 : bf16 to f32
      %17 = arith.cmpf ogt, %16, %arg5 : f32
      %18 = arith.cmpf uno, %16, %16 : f32
      %19 = arith.ori %17, %18 : i1
      %20 = arith.select %19, %16, %arg5 : f32
      loop.yield %20 : f32
    }) : (index, index, index, f32) -> f32
    %13 = arith.constant 0.000000e+00 : f32
    %14 = "loop.for"(%9, %7, %10, %13) ({
    ^bb0(%arg6: index, %arg7: f32):
      %21 = loop.load %arg0[%arg1, %arg2, %arg3, %arg6] : memref<2x3x4x96xbf16>
      %22 = arith.extf %21 : bf16 to f32
      %23 = arith.subf %22, %12 : f32
      %24 = math.exp %23 : f32
      %25 = arith.addf %arg7, %24 : f32
      loop.yield %25 : f32
    }) : (index, index, index, f32) -> f32
    "loop.for"(%9, %8, %10) ({
    ^bb0(%arg8: index):
      %26 = loop.load %arg0[%arg1, %arg2, %arg3, %arg8] : memref<2x3x4x96xbf16>
      %27 = arith.extf %26 : bf16 to f32
      %28 = arith.subf %27, %12 : f32
      %29 = math.exp %28 : f32
      %30 = arith.divf %29, %14 : f32
      %31 = arith.truncf %30 : f32 to bf16
      loop.store %31, %0[%arg1, %arg2, %arg3, %arg8] : memref<2x3x4x96xbf16>
      loop.yield
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  return %0 : memref<2x3x4x96xbf16>
}
