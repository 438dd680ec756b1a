module {
  func.func @main(%arg0: memref<20x30xf32>, %arg1: memref<10x32xf32>, %arg2: memref<5xi64>) -> (memref<21x32xf32>, memref<30x32xf32>, memref<5x32xf32>) {
    %0 = loop.alloc() : memref<21x32xf32>
    %1 = arith.constant 21 : index
    %2 = arith.constant 32 : index
    %3 = arith.constant 0 : index
    %4 = arith.constant 1 : index
    "loop.parallel"(%3, %3, %1, %2, %4, %4) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
    ^bb0(%arg3: index, %arg4: index):
      %22 = arith.constant 7.000000e+00 : f32
      %23 = arith.constant 1 : index
      %24 = arith.subi %arg3, %23 : index
      %25 = arith.constant 21 : index
      %26 = arith.cmpi sge, %arg3, %23 : index
      %27 = arith.cmpi slt, %arg3, %25 : index
      %28 = arith.andi %26, %27 : i1
      %29 = arith.constant 0 : index
      %30 = arith.constant 30 : index
      %31 = arith.cmpi sge, %arg4, %29 : index
      %32 = arith.cmpi slt, %arg4, %30 : index
      %33 = arith.andi %31, %32 : i1
      %34 = arith.andi %28, %33 : i1
      %35 = "loop.if"(%34) ({
        %51 = loop.load %arg0[%24, %arg4] : memref<20x30xf32>
        loop.yield %51 : f32
      }, {
        loop.yield %22 : f32
      }) : (i1) -> f32
      loop.store %35, %0[%arg3, %arg4] : memref<21x32xf32>
      "loop.reduce"() : () -> ()
    }) : (index, index, index, index, index, index) -> ()
    %5 = loop.alloc() : memref<31x32xf32>
    %6 = arith.constant 31 : index
    %7 = arith.constant 32 : index
    %8 = arith.constant 0 : index
    %9 = arith.constant 1 : index
    %10 = arith.constant 21 : index
    "loop.parallel"(%8, %8, %6, %7, %9, %9) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
    ^bb0(%arg5: index, %arg6: index):
      %36 = arith.constant 0 : index
      %37 = arith.constant 21 : index
      %38 = arith.cmpi slt, %arg5, %37 : index
      %39 = "loop.if"(%38) ({
        %52 = loop.load %0[%arg5, %arg6] : memref<21x32xf32>
        loop.yield %52 : f32
      }, {
        %53 = arith.subi %arg5, %37 : index
        %54 = loop.load %arg1[%53, %arg6] : memref<10x32xf32>
        loop.yield %54 : f32
      }) : (i1) -> f32
      loop.store %39, %5[%arg5, %arg6] : memref<31x32xf32>
      "loop.reduce"() : () -> ()
    }) : (index, index, index, index, index, index) -> ()
    %11 = loop.alloc() : memref<30x32xf32>
    %12 = arith.constant 30 : index
    %13 = arith.constant 32 : index
    %14 = arith.constant 0 : index
    %15 = arith.constant 1 : index
    "loop.parallel"(%14, %14, %12, %13, %15, %15) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
    ^bb0(%arg7: index, %arg8: index):
      %40 = arith.constant 1 : index
      %41 = arith.addi %arg7, %40 : index
      %42 = arith.constant 0 : index
      %43 = loop.load %5[%41, %arg8] : memref<31x32xf32>
      loop.store %43, %11[%arg7, %arg8] : memref<30x32xf32>
      "loop.reduce"() : () -> ()
    }) : (index, index, index, index, index, index) -> ()
    loop.dealloc %5 : memref<31x32xf32>
    %16 = loop.alloc() : memref<5x32xf32>
    %17 = arith.constant 5 : index
    %18 = arith.constant 32 : index
    %19 = arith.constant 0 : index
    %20 = arith.constant 1 : index
    %21 = arith.constant 10 : index
    "loop.parallel"(%19, %19, %17, %18, %20, %20) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
    ^bb0(%arg9: index, %arg10: index):
      %44 = loop.load %arg2[%arg9] : memref<5xi64>
      %45 = arith.index_cast %44 : i64 to index
      %46 = arith.constant 0 : index
      %47 = arith.cmpi slt, %45, %46 : index
      %48 = arith.addi %45, %21 : index
      %49 = arith.select %47, %48, %45 : index
      %50 = loop.load %arg1[%49, %arg10] : memref<10x32xf32>
      loop.store %50, %16[%arg9, %arg10] : memref<5x32xf32>
      "loop.reduce"() : () -> ()
    }) : (index, index, index, index, index, index) -> ()
    return %0, %11, %16 : memref<21x32xf32>, memref<30x32xf32>, memref<5x32xf32>
  }
}

