func.func @graph0_bwd(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2x1x5x5xf32>, %arg3: tensor<2xf32>, %arg4: tensor<2xf32>, %arg5: tensor<1x2x1x1xf32>, %arg6: tensor<2x1x1x1xf32>, %arg7: tensor<3x2x1x1xf32>, %arg8: tensor<3xf32>, %arg9: tensor<1x3x3x3xf32>, %arg10: tensor<1xf32>, %arg11: tensor<1xf32>, %arg12: tensor<1x1x3x3xf32>, %arg13: tensor<1xf32>, %arg14: tensor<1x3x1x1xf32>, %arg15: tensor<1xf32>, %arg16: tensor<2x2xf32>, %arg17: tensor<2xf32>, %arg18: tensor<2xf32>, %arg19: tensor<3xf32>, %arg20: tensor<1xf32>, %arg21: tensor<1xf32>, %arg22: tensor<1xf32>, %arg23: tensor<f32>, %arg24: tensor<f32>, %arg25: tensor<1x1x9x6xf32>, %arg26: tensor<1x2x9x6xf32>, %arg27: tensor<2xf32>, %arg28: tensor<1x2x9x6xf32>, %arg29: tensor<1x2x5x3xf32>, %arg30: tensor<2xf32>, %arg31: tensor<1x2x1x1xf32>, %arg32: tensor<1x1x1x1xf32>, %arg33: tensor<1x2x1x1xf32>, %arg34: tensor<1x2x5x3xf32>, %arg35: tensor<1x3x5x3xf32>, %arg36: tensor<3xf32>, %arg37: tensor<1x3x5x3xf32>, %arg38: tensor<1x1x3x2xf32>, %arg39: tensor<1xf32>, %arg40: tensor<1x1x3x2xf32>, %arg41: tensor<1x1x3x2xf32>, %arg42: tensor<1xf32>, %arg43: tensor<1x1x3x2xf32>, %arg44: tensor<1xf32>, %arg45: tensor<1x1x2x1xf32>, %arg46: tensor<1x2xi1>, %arg47: tensor<1xi1>, %arg48: tensor<1xi1>, %arg49: tensor<1x2xf32>, %arg50: tensor<1x1x3x2xi1>, %arg51: tensor<1x1x1x1xi1>, %arg52: tensor<f32>, %arg53: tensor<1x2xf32>) -> (tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x1x5x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<1x2x1x1xf32>, tensor<1xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x3x3x3xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1x3x1x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<2x2xf32>, tensor<2xf32>) attributes {autodiff.saved = 52 : i64} {
  %0 = "graph.constant"() <{value = dense<4> : tensor<5xi64>}> : () -> tensor<5xi64>
  %1 = "graph.constant"() <{value = dense<0.0666666701> : tensor<f32>}> : () -> tensor<f32>
  %2 = "graph.constant"() <{value = dense<5.000000e-01> : tensor<f32>}> : () -> tensor<f32>
  %3 = "graph.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %4 = "graph.constant"() <{value = dense<2> : tensor<3xi64>}> : () -> tensor<3xi64>
  %5 = "graph.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %6 = "graph.constant"() <{value = dense<2.500000e-01> : tensor<f32>}> : () -> tensor<f32>
  %7 = "graph.rsqrt"(%arg27) : (tensor<2xf32>) -> tensor<2xf32>
  %8 = "graph.mul"(%7, %arg0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %9 = "graph.mul"(%arg17, %8) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %10 = "graph.sub"(%arg1, %9) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %11 = "graph.reshape"(%8) <{shape = [1, 2, 1, 1]}> : (tensor<2xf32>) -> tensor<1x2x1x1xf32>
  %12 = "graph.mul"(%arg26, %11) : (tensor<1x2x9x6xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x9x6xf32>
  %13 = "graph.reshape"(%10) <{shape = [1, 2, 1, 1]}> : (tensor<2xf32>) -> tensor<1x2x1x1xf32>
  %14 = "graph.add"(%12, %13) : (tensor<1x2x9x6xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x9x6xf32>
  %15 = "graph.sigmoid"(%14) : (tensor<1x2x9x6xf32>) -> tensor<1x2x9x6xf32>
  %16 = "graph.rsqrt"(%arg30) : (tensor<2xf32>) -> tensor<2xf32>
  %17 = "graph.mul"(%16, %arg3) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %18 = "graph.mul"(%arg18, %17) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %19 = "graph.sub"(%arg4, %18) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %20 = "graph.reshape"(%17) <{shape = [1, 2, 1, 1]}> : (tensor<2xf32>) -> tensor<1x2x1x1xf32>
  %21 = "graph.mul"(%arg29, %20) : (tensor<1x2x5x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x5x3xf32>
  %22 = "graph.reshape"(%19) <{shape = [1, 2, 1, 1]}> : (tensor<2xf32>) -> tensor<1x2x1x1xf32>
  %23 = "graph.add"(%21, %22) : (tensor<1x2x5x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x5x3xf32>
  %24 = "graph.sigmoid"(%23) : (tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %25 = "graph.mul"(%23, %24) : (tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %26 = "graph.relu"(%arg33) : (tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32>
  %27 = "graph.min"(%26, %arg23) : (tensor<1x2x1x1xf32>, tensor<f32>) -> tensor<1x2x1x1xf32>
  %28 = "graph.div"(%27, %arg23) : (tensor<1x2x1x1xf32>, tensor<f32>) -> tensor<1x2x1x1xf32>
  %29 = "graph.rsqrt"(%arg36) : (tensor<3xf32>) -> tensor<3xf32>
  %30 = "graph.mul"(%29, %arg8) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %31 = "graph.reshape"(%30) <{shape = [1, 3, 1, 1]}> : (tensor<3xf32>) -> tensor<1x3x1x1xf32>
  %32 = "graph.rsqrt"(%arg39) : (tensor<1xf32>) -> tensor<1xf32>
  %33 = "graph.mul"(%32, %arg10) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %34 = "graph.mul"(%arg20, %33) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %35 = "graph.sub"(%arg11, %34) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %36 = "graph.reshape"(%33) <{shape = [1, 1, 1, 1]}> : (tensor<1xf32>) -> tensor<1x1x1x1xf32>
  %37 = "graph.mul"(%arg38, %36) : (tensor<1x1x3x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x2xf32>
  %38 = "graph.reshape"(%35) <{shape = [1, 1, 1, 1]}> : (tensor<1xf32>) -> tensor<1x1x1x1xf32>
  %39 = "graph.add"(%37, %38) : (tensor<1x1x3x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x2xf32>
  %40 = "graph.rsqrt"(%arg42) : (tensor<1xf32>) -> tensor<1xf32>
  %41 = "graph.mul"(%40, %arg13) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %42 = "graph.reshape"(%41) <{shape = [1, 1, 1, 1]}> : (tensor<1xf32>) -> tensor<1x1x1x1xf32>
  %43 = "graph.rsqrt"(%arg44) : (tensor<1xf32>) -> tensor<1xf32>
  %44 = "graph.mul"(%43, %arg15) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %45 = "graph.reshape"(%44) <{shape = [1, 1, 1, 1]}> : (tensor<1xf32>) -> tensor<1x1x1x1xf32>
  %46 = "graph.cast"(%arg46) : (tensor<1x2xi1>) -> tensor<1x2xf32>
  %47 = "graph.cast"(%arg47) : (tensor<1xi1>) -> tensor<1xf32>
  %48 = "graph.cast"(%arg48) : (tensor<1xi1>) -> tensor<1xf32>
  %49 = "graph.mul"(%47, %48) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %50 = "graph.mul"(%arg52, %arg24) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %51 = "graph.reshape"(%50) <{shape = [1]}> : (tensor<f32>) -> tensor<1xf32>
  %52 = "graph.neg"(%51) : (tensor<1xf32>) -> tensor<1xf32>
  %53 = "graph.reshape"(%52) <{shape = [1, 1]}> : (tensor<1xf32>) -> tensor<1x1xf32>
  %54 = "graph.broadcast_to"(%53) <{shape = [1, 2]}> : (tensor<1x1xf32>) -> tensor<1x2xf32>
  %55 = "graph.mul"(%54, %46) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  %56 = "graph.add"(%arg53, %55) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  %57 = "graph.mul"(%51, %49) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %58 = "graph.reshape"(%57) <{shape = [1, 1]}> : (tensor<1xf32>) -> tensor<1x1xf32>
  %59 = "graph.broadcast_to"(%58) <{shape = [1, 2]}> : (tensor<1x1xf32>) -> tensor<1x2xf32>
  %60 = "graph.exp"(%arg49) : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %61 = "graph.mul"(%59, %60) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  %62 = "graph.add"(%56, %61) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  %63 = "graph.reduce_sum"(%62) <{axes = [0], keepdims = false}> : (tensor<1x2xf32>) -> tensor<2xf32>
  %64 = "graph.transpose"(%arg16) <{perm = [1, 0]}> : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %65 = "graph.matmul"(%62, %64) : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %66 = "graph.reshape"(%arg45) <{shape = [2, 1]}> : (tensor<1x1x2x1xf32>) -> tensor<2x1xf32>
  %67 = "graph.matmul"(%66, %62) : (tensor<2x1xf32>, tensor<1x2xf32>) -> tensor<2x2xf32>
  %68 = "graph.reshape"(%65) <{shape = [1, 1, 2, 1]}> : (tensor<1x2xf32>) -> tensor<1x1x2x1xf32>
  %69 = "graph.slice"(%68) <{limits = [1, 1, 1, 1], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (tensor<1x1x2x1xf32>) -> tensor<1x1x1x1xf32>
  %70 = "graph.slice"(%68) <{limits = [1, 1, 2, 1], starts = [0, 0, 1, 0], strides = [1, 1, 1, 1]}> : (tensor<1x1x2x1xf32>) -> tensor<1x1x1x1xf32>
  %71 = "graph.slice"(%70) <{limits = [1, 1, 1, 1], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %72 = "graph.broadcast_to"(%71) <{shape = [1, 1, 2, 2]}> : (tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %73 = "graph.mul"(%72, %6) : (tensor<1x1x2x2xf32>, tensor<f32>) -> tensor<1x1x2x2xf32>
  %74 = "graph.pad"(%73) <{high = [0, 0, 0, 0], low = [0, 0, 1, 0]}> : (tensor<1x1x2x2xf32>) -> tensor<1x1x3x2xf32>
  %75 = "graph.slice"(%69) <{limits = [1, 1, 1, 1], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %76 = "graph.broadcast_to"(%75) <{shape = [1, 1, 2, 2]}> : (tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %77 = "graph.mul"(%76, %6) : (tensor<1x1x2x2xf32>, tensor<f32>) -> tensor<1x1x2x2xf32>
  %78 = "graph.pad"(%77) <{high = [0, 0, 1, 0], low = [0, 0, 0, 0]}> : (tensor<1x1x2x2xf32>) -> tensor<1x1x3x2xf32>
  %79 = "graph.add"(%74, %78) : (tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32>
  %80 = "graph.select"(%arg50, %79, %5) : (tensor<1x1x3x2xi1>, tensor<1x1x3x2xf32>, tensor<f32>) -> tensor<1x1x3x2xf32>
  %81 = "graph.reshape"(%80) <{shape = [1, 1, 6]}> : (tensor<1x1x3x2xf32>) -> tensor<1x1x6xf32>
  %82 = "graph.reduce_sum"(%81) <{axes = [2], keepdims = false}> : (tensor<1x1x6xf32>) -> tensor<1x1xf32>
  %83 = "graph.reshape"(%82) <{shape = [1]}> : (tensor<1x1xf32>) -> tensor<1xf32>
  %84 = "graph.mul"(%80, %45) : (tensor<1x1x3x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x2xf32>
  %85 = "graph.mul"(%80, %arg43) : (tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32>
  %86 = "graph.reshape"(%85) <{shape = [1, 1, 6]}> : (tensor<1x1x3x2xf32>) -> tensor<1x1x6xf32>
  %87 = "graph.reduce_sum"(%86) <{axes = [2], keepdims = false}> : (tensor<1x1x6xf32>) -> tensor<1x1xf32>
  %88 = "graph.reshape"(%87) <{shape = [1]}> : (tensor<1x1xf32>) -> tensor<1xf32>
  %89 = "graph.neg"(%83) : (tensor<1xf32>) -> tensor<1xf32>
  %90 = "graph.mul"(%89, %arg22) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %91 = "graph.add"(%88, %90) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %92 = "graph.mul"(%91, %43) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %93 = "graph.reshape"(%84) <{shape = [1, 1, 3, 1, 2]}> : (tensor<1x1x3x2xf32>) -> tensor<1x1x3x1x2xf32>
  %94 = "graph.pad"(%93) <{high = [0, 0, 0, 1, 0], low = [0, 0, 0, 0, 0]}> : (tensor<1x1x3x1x2xf32>) -> tensor<1x1x3x2x2xf32>
  %95 = "graph.reshape"(%94) <{shape = [1, 1, 6, 2]}> : (tensor<1x1x3x2x2xf32>) -> tensor<1x1x6x2xf32>
  %96 = "graph.slice"(%95) <{limits = [1, 1, 5, 2], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (tensor<1x1x6x2xf32>) -> tensor<1x1x5x2xf32>
  %97 = "graph.reshape"(%96) <{shape = [1, 1, 5, 2, 1]}> : (tensor<1x1x5x2xf32>) -> tensor<1x1x5x2x1xf32>
  %98 = "graph.pad"(%97) <{high = [0, 0, 0, 0, 1], low = [0, 0, 0, 0, 0]}> : (tensor<1x1x5x2x1xf32>) -> tensor<1x1x5x2x2xf32>
  %99 = "graph.reshape"(%98) <{shape = [1, 1, 5, 4]}> : (tensor<1x1x5x2x2xf32>) -> tensor<1x1x5x4xf32>
  %100 = "graph.slice"(%99) <{limits = [1, 1, 5, 3], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (tensor<1x1x5x4xf32>) -> tensor<1x1x5x3xf32>
  %101 = "graph.reshape"(%arg14) <{shape = [3, 1, 1, 1]}> : (tensor<1x3x1x1xf32>) -> tensor<3x1x1x1xf32>
  %102 = "graph.conv2d"(%100, %101) <{dilations = [1, 1], groups = 1 : i64, padding = [0, 0, 0, 0], strides = [1, 1]}> : (tensor<1x1x5x3xf32>, tensor<3x1x1x1xf32>) -> tensor<1x3x5x3xf32>
  %103 = "graph.reshape"(%arg37) <{shape = [3, 1, 5, 3]}> : (tensor<1x3x5x3xf32>) -> tensor<3x1x5x3xf32>
  %104 = "graph.conv2d"(%103, %84) <{dilations = [2, 2], groups = 1 : i64, padding = [0, 0, 0, 0], strides = [1, 1]}> : (tensor<3x1x5x3xf32>, tensor<1x1x3x2xf32>) -> tensor<3x1x1x1xf32>
  %105 = "graph.reshape"(%104) <{shape = [1, 3, 1, 1]}> : (tensor<3x1x1x1xf32>) -> tensor<1x3x1x1xf32>
  %106 = "graph.mul"(%80, %42) : (tensor<1x1x3x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x2xf32>
  %107 = "graph.mul"(%80, %arg41) : (tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32>
  %108 = "graph.reshape"(%107) <{shape = [1, 1, 6]}> : (tensor<1x1x3x2xf32>) -> tensor<1x1x6xf32>
  %109 = "graph.reduce_sum"(%108) <{axes = [2], keepdims = false}> : (tensor<1x1x6xf32>) -> tensor<1x1xf32>
  %110 = "graph.reshape"(%109) <{shape = [1]}> : (tensor<1x1xf32>) -> tensor<1xf32>
  %111 = "graph.mul"(%89, %arg21) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %112 = "graph.add"(%110, %111) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %113 = "graph.mul"(%112, %40) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %114 = "graph.iota"() <{axis = 0 : i64}> : () -> tensor<3xi64>
  %115 = "graph.sub"(%4, %114) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %116 = "graph.gather"(%arg12, %115) <{axis = 2 : i64}> : (tensor<1x1x3x3xf32>, tensor<3xi64>) -> tensor<1x1x3x3xf32>
  %117 = "graph.gather"(%116, %115) <{axis = 3 : i64}> : (tensor<1x1x3x3xf32>, tensor<3xi64>) -> tensor<1x1x3x3xf32>
  %118 = "graph.conv2d"(%106, %117) <{dilations = [1, 1], groups = 1 : i64, padding = [1, 1, 1, 1], strides = [1, 1]}> : (tensor<1x1x3x2xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x2xf32>
  %119 = "graph.conv2d"(%arg40, %106) <{dilations = [1, 1], groups = 1 : i64, padding = [1, 1, 1, 1], strides = [1, 1]}> : (tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x1x3x3xf32>
  %120 = "graph.cmp"(%39, %5) <{predicate = "gt"}> : (tensor<1x1x3x2xf32>, tensor<f32>) -> tensor<1x1x3x2xi1>
  %121 = "graph.select"(%120, %118, %5) : (tensor<1x1x3x2xi1>, tensor<1x1x3x2xf32>, tensor<f32>) -> tensor<1x1x3x2xf32>
  %122 = "graph.reshape"(%121) <{shape = [1, 1, 6]}> : (tensor<1x1x3x2xf32>) -> tensor<1x1x6xf32>
  %123 = "graph.reduce_sum"(%122) <{axes = [2], keepdims = false}> : (tensor<1x1x6xf32>) -> tensor<1x1xf32>
  %124 = "graph.reshape"(%123) <{shape = [1]}> : (tensor<1x1xf32>) -> tensor<1xf32>
  %125 = "graph.mul"(%121, %36) : (tensor<1x1x3x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x2xf32>
  %126 = "graph.mul"(%121, %arg38) : (tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32>
  %127 = "graph.reshape"(%126) <{shape = [1, 1, 6]}> : (tensor<1x1x3x2xf32>) -> tensor<1x1x6xf32>
  %128 = "graph.reduce_sum"(%127) <{axes = [2], keepdims = false}> : (tensor<1x1x6xf32>) -> tensor<1x1xf32>
  %129 = "graph.reshape"(%128) <{shape = [1]}> : (tensor<1x1xf32>) -> tensor<1xf32>
  %130 = "graph.neg"(%124) : (tensor<1xf32>) -> tensor<1xf32>
  %131 = "graph.mul"(%130, %arg20) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %132 = "graph.add"(%129, %131) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %133 = "graph.mul"(%132, %32) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %134 = "graph.reshape"(%125) <{shape = [1, 1, 3, 1, 2]}> : (tensor<1x1x3x2xf32>) -> tensor<1x1x3x1x2xf32>
  %135 = "graph.pad"(%134) <{high = [0, 0, 0, 1, 0], low = [0, 0, 0, 0, 0]}> : (tensor<1x1x3x1x2xf32>) -> tensor<1x1x3x2x2xf32>
  %136 = "graph.reshape"(%135) <{shape = [1, 1, 6, 2]}> : (tensor<1x1x3x2x2xf32>) -> tensor<1x1x6x2xf32>
  %137 = "graph.slice"(%136) <{limits = [1, 1, 5, 2], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (tensor<1x1x6x2xf32>) -> tensor<1x1x5x2xf32>
  %138 = "graph.reshape"(%137) <{shape = [1, 1, 5, 2, 1]}> : (tensor<1x1x5x2xf32>) -> tensor<1x1x5x2x1xf32>
  %139 = "graph.pad"(%138) <{high = [0, 0, 0, 0, 1], low = [0, 0, 0, 0, 0]}> : (tensor<1x1x5x2x1xf32>) -> tensor<1x1x5x2x2xf32>
  %140 = "graph.reshape"(%139) <{shape = [1, 1, 5, 4]}> : (tensor<1x1x5x2x2xf32>) -> tensor<1x1x5x4xf32>
  %141 = "graph.slice"(%140) <{limits = [1, 1, 5, 3], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (tensor<1x1x5x4xf32>) -> tensor<1x1x5x3xf32>
  %142 = "graph.reshape"(%arg9) <{shape = [3, 1, 3, 3]}> : (tensor<1x3x3x3xf32>) -> tensor<3x1x3x3xf32>
  %143 = "graph.gather"(%142, %115) <{axis = 2 : i64}> : (tensor<3x1x3x3xf32>, tensor<3xi64>) -> tensor<3x1x3x3xf32>
  %144 = "graph.gather"(%143, %115) <{axis = 3 : i64}> : (tensor<3x1x3x3xf32>, tensor<3xi64>) -> tensor<3x1x3x3xf32>
  %145 = "graph.conv2d"(%141, %144) <{dilations = [1, 1], groups = 1 : i64, padding = [1, 1, 1, 1], strides = [1, 1]}> : (tensor<1x1x5x3xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x5x3xf32>
  %146 = "graph.conv2d"(%103, %125) <{dilations = [2, 2], groups = 1 : i64, padding = [1, 1, 1, 1], strides = [1, 1]}> : (tensor<3x1x5x3xf32>, tensor<1x1x3x2xf32>) -> tensor<3x1x3x3xf32>
  %147 = "graph.reshape"(%146) <{shape = [1, 3, 3, 3]}> : (tensor<3x1x3x3xf32>) -> tensor<1x3x3x3xf32>
  %148 = "graph.add"(%102, %145) : (tensor<1x3x5x3xf32>, tensor<1x3x5x3xf32>) -> tensor<1x3x5x3xf32>
  %149 = "graph.reshape"(%148) <{shape = [1, 3, 15]}> : (tensor<1x3x5x3xf32>) -> tensor<1x3x15xf32>
  %150 = "graph.reduce_sum"(%149) <{axes = [2], keepdims = false}> : (tensor<1x3x15xf32>) -> tensor<1x3xf32>
  %151 = "graph.reshape"(%150) <{shape = [3]}> : (tensor<1x3xf32>) -> tensor<3xf32>
  %152 = "graph.mul"(%148, %31) : (tensor<1x3x5x3xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x5x3xf32>
  %153 = "graph.mul"(%148, %arg35) : (tensor<1x3x5x3xf32>, tensor<1x3x5x3xf32>) -> tensor<1x3x5x3xf32>
  %154 = "graph.reshape"(%153) <{shape = [1, 3, 15]}> : (tensor<1x3x5x3xf32>) -> tensor<1x3x15xf32>
  %155 = "graph.reduce_sum"(%154) <{axes = [2], keepdims = false}> : (tensor<1x3x15xf32>) -> tensor<1x3xf32>
  %156 = "graph.reshape"(%155) <{shape = [3]}> : (tensor<1x3xf32>) -> tensor<3xf32>
  %157 = "graph.neg"(%151) : (tensor<3xf32>) -> tensor<3xf32>
  %158 = "graph.mul"(%157, %arg19) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %159 = "graph.add"(%156, %158) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %160 = "graph.mul"(%159, %29) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %161 = "graph.reshape"(%arg7) <{shape = [1, 3, 2, 1, 1]}> : (tensor<3x2x1x1xf32>) -> tensor<1x3x2x1x1xf32>
  %162 = "graph.transpose"(%161) <{perm = [0, 2, 1, 3, 4]}> : (tensor<1x3x2x1x1xf32>) -> tensor<1x2x3x1x1xf32>
  %163 = "graph.reshape"(%162) <{shape = [2, 3, 1, 1]}> : (tensor<1x2x3x1x1xf32>) -> tensor<2x3x1x1xf32>
  %164 = "graph.conv2d"(%152, %163) <{dilations = [1, 1], groups = 1 : i64, padding = [0, 0, 0, 0], strides = [1, 1]}> : (tensor<1x3x5x3xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x5x3xf32>
  %165 = "graph.reshape"(%arg34) <{shape = [2, 1, 5, 3]}> : (tensor<1x2x5x3xf32>) -> tensor<2x1x5x3xf32>
  %166 = "graph.reshape"(%152) <{shape = [3, 1, 5, 3]}> : (tensor<1x3x5x3xf32>) -> tensor<3x1x5x3xf32>
  %167 = "graph.conv2d"(%165, %166) <{dilations = [1, 1], groups = 1 : i64, padding = [0, 0, 0, 0], strides = [1, 1]}> : (tensor<2x1x5x3xf32>, tensor<3x1x5x3xf32>) -> tensor<2x3x1x1xf32>
  %168 = "graph.transpose"(%167) <{perm = [1, 0, 2, 3]}> : (tensor<2x3x1x1xf32>) -> tensor<3x2x1x1xf32>
  %169 = "graph.mul"(%164, %28) : (tensor<1x2x5x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x5x3xf32>
  %170 = "graph.mul"(%164, %25) : (tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %171 = "graph.reshape"(%170) <{shape = [1, 2, 15]}> : (tensor<1x2x5x3xf32>) -> tensor<1x2x15xf32>
  %172 = "graph.reduce_sum"(%171) <{axes = [2], keepdims = false}> : (tensor<1x2x15xf32>) -> tensor<1x2xf32>
  %173 = "graph.reshape"(%172) <{shape = [1, 2, 1, 1]}> : (tensor<1x2xf32>) -> tensor<1x2x1x1xf32>
  %174 = "graph.div"(%173, %arg23) : (tensor<1x2x1x1xf32>, tensor<f32>) -> tensor<1x2x1x1xf32>
  %175 = "graph.cmp"(%26, %arg23) <{predicate = "eq"}> : (tensor<1x2x1x1xf32>, tensor<f32>) -> tensor<1x2x1x1xi1>
  %176 = "graph.select"(%175, %2, %5) : (tensor<1x2x1x1xi1>, tensor<f32>, tensor<f32>) -> tensor<1x2x1x1xf32>
  %177 = "graph.cmp"(%26, %arg23) <{predicate = "lt"}> : (tensor<1x2x1x1xf32>, tensor<f32>) -> tensor<1x2x1x1xi1>
  %178 = "graph.select"(%177, %3, %176) : (tensor<1x2x1x1xi1>, tensor<f32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32>
  %179 = "graph.mul"(%174, %178) : (tensor<1x2x1x1xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32>
  %180 = "graph.cmp"(%arg33, %5) <{predicate = "gt"}> : (tensor<1x2x1x1xf32>, tensor<f32>) -> tensor<1x2x1x1xi1>
  %181 = "graph.select"(%180, %179, %5) : (tensor<1x2x1x1xi1>, tensor<1x2x1x1xf32>, tensor<f32>) -> tensor<1x2x1x1xf32>
  %182 = "graph.reshape"(%arg6) <{shape = [1, 2, 1, 1]}> : (tensor<2x1x1x1xf32>) -> tensor<1x2x1x1xf32>
  %183 = "graph.conv2d"(%181, %182) <{dilations = [1, 1], groups = 1 : i64, padding = [0, 0, 0, 0], strides = [1, 1]}> : (tensor<1x2x1x1xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x1x1xf32>
  %184 = "graph.reshape"(%181) <{shape = [2, 1, 1, 1]}> : (tensor<1x2x1x1xf32>) -> tensor<2x1x1x1xf32>
  %185 = "graph.conv2d"(%arg32, %184) <{dilations = [1, 1], groups = 1 : i64, padding = [0, 0, 0, 0], strides = [1, 1]}> : (tensor<1x1x1x1xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x1x1xf32>
  %186 = "graph.reshape"(%185) <{shape = [2, 1, 1, 1]}> : (tensor<1x2x1x1xf32>) -> tensor<2x1x1x1xf32>
  %187 = "graph.reduce_sum"(%181) <{axes = [0, 2, 3], keepdims = false}> : (tensor<1x2x1x1xf32>) -> tensor<2xf32>
  %188 = "graph.select"(%arg51, %183, %5) : (tensor<1x1x1x1xi1>, tensor<1x1x1x1xf32>, tensor<f32>) -> tensor<1x1x1x1xf32>
  %189 = "graph.reshape"(%arg5) <{shape = [2, 1, 1, 1]}> : (tensor<1x2x1x1xf32>) -> tensor<2x1x1x1xf32>
  %190 = "graph.conv2d"(%188, %189) <{dilations = [1, 1], groups = 1 : i64, padding = [0, 0, 0, 0], strides = [1, 1]}> : (tensor<1x1x1x1xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x1x1xf32>
  %191 = "graph.reshape"(%arg31) <{shape = [2, 1, 1, 1]}> : (tensor<1x2x1x1xf32>) -> tensor<2x1x1x1xf32>
  %192 = "graph.conv2d"(%191, %188) <{dilations = [1, 1], groups = 1 : i64, padding = [0, 0, 0, 0], strides = [1, 1]}> : (tensor<2x1x1x1xf32>, tensor<1x1x1x1xf32>) -> tensor<2x1x1x1xf32>
  %193 = "graph.reshape"(%192) <{shape = [1, 2, 1, 1]}> : (tensor<2x1x1x1xf32>) -> tensor<1x2x1x1xf32>
  %194 = "graph.reduce_sum"(%188) <{axes = [0, 2, 3], keepdims = false}> : (tensor<1x1x1x1xf32>) -> tensor<1xf32>
  %195 = "graph.broadcast_to"(%190) <{shape = [1, 2, 5, 3]}> : (tensor<1x2x1x1xf32>) -> tensor<1x2x5x3xf32>
  %196 = "graph.mul"(%195, %1) : (tensor<1x2x5x3xf32>, tensor<f32>) -> tensor<1x2x5x3xf32>
  %197 = "graph.add"(%169, %196) : (tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %198 = "graph.mul"(%197, %24) : (tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %199 = "graph.mul"(%197, %23) : (tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %200 = "graph.sub"(%3, %24) : (tensor<f32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %201 = "graph.mul"(%24, %200) : (tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %202 = "graph.mul"(%199, %201) : (tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %203 = "graph.add"(%198, %202) : (tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %204 = "graph.reshape"(%203) <{shape = [1, 2, 15]}> : (tensor<1x2x5x3xf32>) -> tensor<1x2x15xf32>
  %205 = "graph.reduce_sum"(%204) <{axes = [2], keepdims = false}> : (tensor<1x2x15xf32>) -> tensor<1x2xf32>
  %206 = "graph.reshape"(%205) <{shape = [2]}> : (tensor<1x2xf32>) -> tensor<2xf32>
  %207 = "graph.mul"(%203, %20) : (tensor<1x2x5x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x5x3xf32>
  %208 = "graph.mul"(%203, %arg29) : (tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %209 = "graph.reshape"(%208) <{shape = [1, 2, 15]}> : (tensor<1x2x5x3xf32>) -> tensor<1x2x15xf32>
  %210 = "graph.reduce_sum"(%209) <{axes = [2], keepdims = false}> : (tensor<1x2x15xf32>) -> tensor<1x2xf32>
  %211 = "graph.reshape"(%210) <{shape = [2]}> : (tensor<1x2xf32>) -> tensor<2xf32>
  %212 = "graph.neg"(%206) : (tensor<2xf32>) -> tensor<2xf32>
  %213 = "graph.mul"(%212, %arg18) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %214 = "graph.add"(%211, %213) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %215 = "graph.mul"(%214, %16) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %216 = "graph.reshape"(%207) <{shape = [1, 2, 5, 1, 3]}> : (tensor<1x2x5x3xf32>) -> tensor<1x2x5x1x3xf32>
  %217 = "graph.pad"(%216) <{high = [0, 0, 0, 1, 0], low = [0, 0, 0, 0, 0]}> : (tensor<1x2x5x1x3xf32>) -> tensor<1x2x5x2x3xf32>
  %218 = "graph.reshape"(%217) <{shape = [1, 2, 10, 3]}> : (tensor<1x2x5x2x3xf32>) -> tensor<1x2x10x3xf32>
  %219 = "graph.slice"(%218) <{limits = [1, 2, 9, 3], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (tensor<1x2x10x3xf32>) -> tensor<1x2x9x3xf32>
  %220 = "graph.reshape"(%219) <{shape = [1, 2, 9, 3, 1]}> : (tensor<1x2x9x3xf32>) -> tensor<1x2x9x3x1xf32>
  %221 = "graph.pad"(%220) <{high = [0, 0, 0, 0, 1], low = [0, 0, 0, 0, 0]}> : (tensor<1x2x9x3x1xf32>) -> tensor<1x2x9x3x2xf32>
  %222 = "graph.reshape"(%221) <{shape = [1, 2, 9, 6]}> : (tensor<1x2x9x3x2xf32>) -> tensor<1x2x9x6xf32>
  %223 = "graph.slice"(%222) <{limits = [1, 2, 9, 5], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (tensor<1x2x9x6xf32>) -> tensor<1x2x9x5xf32>
  %224 = "graph.iota"() <{axis = 0 : i64}> : () -> tensor<5xi64>
  %225 = "graph.sub"(%0, %224) : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %226 = "graph.gather"(%arg2, %225) <{axis = 2 : i64}> : (tensor<2x1x5x5xf32>, tensor<5xi64>) -> tensor<2x1x5x5xf32>
  %227 = "graph.gather"(%226, %225) <{axis = 3 : i64}> : (tensor<2x1x5x5xf32>, tensor<5xi64>) -> tensor<2x1x5x5xf32>
  %228 = "graph.conv2d"(%223, %227) <{dilations = [1, 1], groups = 2 : i64, padding = [4, 4, 4, 4], strides = [1, 1]}> : (tensor<1x2x9x5xf32>, tensor<2x1x5x5xf32>) -> tensor<1x2x13x9xf32>
  %229 = "graph.slice"(%228) <{limits = [1, 2, 11, 8], starts = [0, 0, 2, 2], strides = [1, 1, 1, 1]}> : (tensor<1x2x13x9xf32>) -> tensor<1x2x9x6xf32>
  %230 = "graph.reshape"(%207) <{shape = [2, 1, 5, 3]}> : (tensor<1x2x5x3xf32>) -> tensor<2x1x5x3xf32>
  %231 = "graph.conv2d"(%arg28, %230) <{dilations = [2, 2], groups = 2 : i64, padding = [2, 2, 2, 2], strides = [1, 1]}> : (tensor<1x2x9x6xf32>, tensor<2x1x5x3xf32>) -> tensor<1x2x5x6xf32>
  %232 = "graph.slice"(%231) <{limits = [1, 2, 5, 5], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (tensor<1x2x5x6xf32>) -> tensor<1x2x5x5xf32>
  %233 = "graph.reshape"(%232) <{shape = [2, 1, 5, 5]}> : (tensor<1x2x5x5xf32>) -> tensor<2x1x5x5xf32>
  %234 = "graph.mul"(%229, %15) : (tensor<1x2x9x6xf32>, tensor<1x2x9x6xf32>) -> tensor<1x2x9x6xf32>
  %235 = "graph.mul"(%229, %14) : (tensor<1x2x9x6xf32>, tensor<1x2x9x6xf32>) -> tensor<1x2x9x6xf32>
  %236 = "graph.sub"(%3, %15) : (tensor<f32>, tensor<1x2x9x6xf32>) -> tensor<1x2x9x6xf32>
  %237 = "graph.mul"(%15, %236) : (tensor<1x2x9x6xf32>, tensor<1x2x9x6xf32>) -> tensor<1x2x9x6xf32>
  %238 = "graph.mul"(%235, %237) : (tensor<1x2x9x6xf32>, tensor<1x2x9x6xf32>) -> tensor<1x2x9x6xf32>
  %239 = "graph.add"(%234, %238) : (tensor<1x2x9x6xf32>, tensor<1x2x9x6xf32>) -> tensor<1x2x9x6xf32>
  %240 = "graph.reshape"(%239) <{shape = [1, 2, 54]}> : (tensor<1x2x9x6xf32>) -> tensor<1x2x54xf32>
  %241 = "graph.reduce_sum"(%240) <{axes = [2], keepdims = false}> : (tensor<1x2x54xf32>) -> tensor<1x2xf32>
  %242 = "graph.reshape"(%241) <{shape = [2]}> : (tensor<1x2xf32>) -> tensor<2xf32>
  %243 = "graph.mul"(%239, %11) : (tensor<1x2x9x6xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x9x6xf32>
  %244 = "graph.mul"(%239, %arg26) : (tensor<1x2x9x6xf32>, tensor<1x2x9x6xf32>) -> tensor<1x2x9x6xf32>
  %245 = "graph.reshape"(%244) <{shape = [1, 2, 54]}> : (tensor<1x2x9x6xf32>) -> tensor<1x2x54xf32>
  %246 = "graph.reduce_sum"(%245) <{axes = [2], keepdims = false}> : (tensor<1x2x54xf32>) -> tensor<1x2xf32>
  %247 = "graph.reshape"(%246) <{shape = [2]}> : (tensor<1x2xf32>) -> tensor<2xf32>
  %248 = "graph.neg"(%242) : (tensor<2xf32>) -> tensor<2xf32>
  %249 = "graph.mul"(%248, %arg17) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %250 = "graph.add"(%247, %249) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %251 = "graph.mul"(%250, %7) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %252 = "graph.reshape"(%243) <{shape = [2, 1, 9, 6]}> : (tensor<1x2x9x6xf32>) -> tensor<2x1x9x6xf32>
  %253 = "graph.conv2d"(%arg25, %252) <{dilations = [1, 1], groups = 1 : i64, padding = [0, 0, 0, 0], strides = [1, 1]}> : (tensor<1x1x9x6xf32>, tensor<2x1x9x6xf32>) -> tensor<1x2x1x1xf32>
  %254 = "graph.reshape"(%253) <{shape = [2, 1, 1, 1]}> : (tensor<1x2x1x1xf32>) -> tensor<2x1x1x1xf32>
  return %254, %251, %242, %233, %215, %206, %193, %194, %186, %187, %168, %160, %151, %147, %133, %124, %119, %113, %83, %105, %92, %83, %67, %63 : tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x1x5x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<1x2x1x1xf32>, tensor<1xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x3x3x3xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1x3x1x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<2x2xf32>, tensor<2xf32>
}
