// A row softmax over the last dim of a 4-D tensor with a dynamic batch, as
// convert-graph-to-loop writes it: the nest runs over the three leading dims
// (delinearized from the row index), its loops over the row of 300.
func.func @main(%arg0: memref<?x3x5x300xf32>) -> memref<?x3x5x300xf32> {
  %0 = loop.dim %arg0, 0 : memref<?x3x5x300xf32>
  %1 = loop.alloc(%0) : memref<?x3x5x300xf32>
  %2 = loop.dim %arg0, 0 : memref<?x3x5x300xf32>
  %3 = arith.constant 3 : index
  %4 = arith.constant 5 : index
  %5 = arith.constant 0 : index
  %6 = arith.constant 1 : index
  %7 = loop.dim %arg0, 0 : memref<?x3x5x300xf32>
  %8 = loop.dim %arg0, 0 : memref<?x3x5x300xf32>
  %9 = loop.dim %arg0, 0 : memref<?x3x5x300xf32>
  %10 = loop.dim %arg0, 0 : memref<?x3x5x300xf32>
  %11 = arith.constant 300 : index
  %12 = loop.dim %arg0, 0 : memref<?x3x5x300xf32>
  %13 = arith.constant 300 : index
  %14 = loop.dim %arg0, 0 : memref<?x3x5x300xf32>
  %15 = loop.dim %arg0, 0 : memref<?x3x5x300xf32>
  %16 = loop.dim %arg0, 0 : memref<?x3x5x300xf32>
  %17 = arith.constant 300 : index
  "loop.parallel"(%5, %5, %5, %2, %3, %4, %6, %6, %6) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%arg1: index, %arg2: index, %arg3: index):
    %18 = arith.constant 300 : index
    %19 = arith.constant 0 : index
    %20 = arith.constant 1 : index
    %21 = arith.cmpi eq, %7, %20 : index
    %22 = arith.select %21, %19, %arg1 : index
    %23 = arith.cmpi eq, %8, %20 : index
    %24 = arith.select %23, %19, %22 : index
    %25 = arith.cmpi eq, %9, %20 : index
    %26 = arith.select %25, %19, %24 : index
    %27 = arith.cmpi eq, %10, %20 : index
    %28 = arith.select %27, %19, %24 : index
    %29 = arith.constant 0xFF800000 : f32
    %30 = "loop.for"(%19, %11, %20, %29) ({
    ^bb0(%arg4: index, %arg5: f32):
      %42 = loop.load %arg0[%28, %arg2, %arg3, %arg4] : memref<?x3x5x300xf32>
      %43 = arith.cmpf ogt, %42, %arg5 : f32
      %44 = arith.cmpf uno, %42, %42 : f32
      %45 = arith.ori %43, %44 : i1
      %46 = arith.select %45, %42, %arg5 : f32
      loop.yield %46 : f32
    }) : (index, index, index, f32) -> f32
    %31 = arith.cmpi eq, %12, %20 : index
    %32 = arith.select %31, %19, %arg1 : index
    %33 = arith.constant 0.000000e+00 : f32
    %34 = arith.cmpi eq, %14, %20 : index
    %35 = arith.select %34, %19, %32 : index
    %36 = arith.cmpi eq, %15, %20 : index
    %37 = arith.select %36, %19, %35 : index
    %38 = arith.cmpi eq, %16, %20 : index
    %39 = arith.select %38, %19, %35 : index
    %40 = "loop.for"(%19, %17, %20, %29) ({
    ^bb0(%arg6: index, %arg7: f32):
      %47 = loop.load %arg0[%39, %arg2, %arg3, %arg6] : memref<?x3x5x300xf32>
      %48 = arith.cmpf ogt, %47, %arg7 : f32
      %49 = arith.cmpf uno, %47, %47 : f32
      %50 = arith.ori %48, %49 : i1
      %51 = arith.select %50, %47, %arg7 : f32
      loop.yield %51 : f32
    }) : (index, index, index, f32) -> f32
    %41 = "loop.for"(%19, %13, %20, %33) ({
    ^bb0(%arg8: index, %arg9: f32):
      %52 = loop.load %arg0[%37, %arg2, %arg3, %arg8] : memref<?x3x5x300xf32>
      %53 = arith.subf %52, %40 : f32
      %54 = math.exp %53 : f32
      %55 = arith.addf %arg9, %54 : f32
      loop.yield %55 : f32
    }) : (index, index, index, f32) -> f32
    "loop.for"(%19, %18, %20) ({
    ^bb0(%arg10: index):
      %56 = loop.load %arg0[%26, %arg2, %arg3, %arg10] : memref<?x3x5x300xf32>
      %57 = arith.subf %56, %30 : f32
      %58 = math.exp %57 : f32
      %59 = arith.divf %58, %41 : f32
      loop.store %59, %1[%arg1, %arg2, %arg3, %arg10] : memref<?x3x5x300xf32>
      loop.yield
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  return %1 : memref<?x3x5x300xf32>
}
