module {
  func.func @loss_grad(%arg0: tensor<8192x4096xbf16>, %arg1: tensor<4096x16384xbf16>, %arg2: tensor<16384x4096xbf16>, %arg3: tensor<f32>) -> (tensor<4096x16384xbf16>, tensor<16384x4096xbf16>) {
    %0 = "graph.matmul"(%arg0, %arg1) : (tensor<8192x4096xbf16>, tensor<4096x16384xbf16>) -> tensor<8192x16384xbf16>
    %1 = "graph.gelu"(%0) <{approximate = "tanh"}> : (tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %2 = "graph.matmul"(%1, %arg2) : (tensor<8192x16384xbf16>, tensor<16384x4096xbf16>) -> tensor<8192x4096xbf16>
    %3 = "graph.cast"(%2) : (tensor<8192x4096xbf16>) -> tensor<8192x4096xf32>
    %4 = "graph.reshape"(%arg3) <{shape = [1, 1]}> : (tensor<f32>) -> tensor<1x1xf32>
    %5 = "graph.broadcast_to"(%4) <{shape = [8192, 4096]}> : (tensor<1x1xf32>) -> tensor<8192x4096xf32>
    %6 = "graph.constant"() <{value = dense<2.98023224E-8> : tensor<f32>}> : () -> tensor<f32>
    %7 = "graph.mul"(%5, %6) : (tensor<8192x4096xf32>, tensor<f32>) -> tensor<8192x4096xf32>
    %8 = "graph.mul"(%7, %3) : (tensor<8192x4096xf32>, tensor<8192x4096xf32>) -> tensor<8192x4096xf32>
    %9 = "graph.mul"(%7, %3) : (tensor<8192x4096xf32>, tensor<8192x4096xf32>) -> tensor<8192x4096xf32>
    %10 = "graph.add"(%8, %9) : (tensor<8192x4096xf32>, tensor<8192x4096xf32>) -> tensor<8192x4096xf32>
    %11 = "graph.cast"(%10) : (tensor<8192x4096xf32>) -> tensor<8192x4096xbf16>
    %12 = "graph.transpose"(%arg2) <{perm = [1, 0]}> : (tensor<16384x4096xbf16>) -> tensor<4096x16384xbf16>
    %13 = "graph.matmul"(%11, %12) : (tensor<8192x4096xbf16>, tensor<4096x16384xbf16>) -> tensor<8192x16384xbf16>
    %14 = "graph.transpose"(%1) <{perm = [1, 0]}> : (tensor<8192x16384xbf16>) -> tensor<16384x8192xbf16>
    %15 = "graph.matmul"(%14, %11) : (tensor<16384x8192xbf16>, tensor<8192x4096xbf16>) -> tensor<16384x4096xbf16>
    %16 = "graph.constant"() <{value = dense<5.000000e-01> : tensor<bf16>}> : () -> tensor<bf16>
    %17 = "graph.constant"() <{value = dense<1.000000e+00> : tensor<bf16>}> : () -> tensor<bf16>
    %18 = "graph.mul"(%0, %0) : (tensor<8192x16384xbf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %19 = "graph.mul"(%18, %0) : (tensor<8192x16384xbf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %20 = "graph.constant"() <{value = dense<4.467770e-02> : tensor<bf16>}> : () -> tensor<bf16>
    %21 = "graph.mul"(%19, %20) : (tensor<8192x16384xbf16>, tensor<bf16>) -> tensor<8192x16384xbf16>
    %22 = "graph.add"(%0, %21) : (tensor<8192x16384xbf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %23 = "graph.constant"() <{value = dense<7.968750e-01> : tensor<bf16>}> : () -> tensor<bf16>
    %24 = "graph.mul"(%22, %23) : (tensor<8192x16384xbf16>, tensor<bf16>) -> tensor<8192x16384xbf16>
    %25 = "graph.tanh"(%24) : (tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %26 = "graph.add"(%17, %25) : (tensor<bf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %27 = "graph.mul"(%16, %26) : (tensor<bf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %28 = "graph.mul"(%25, %25) : (tensor<8192x16384xbf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %29 = "graph.sub"(%17, %28) : (tensor<bf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %30 = "graph.constant"() <{value = dense<1.337890e-01> : tensor<bf16>}> : () -> tensor<bf16>
    %31 = "graph.mul"(%18, %30) : (tensor<8192x16384xbf16>, tensor<bf16>) -> tensor<8192x16384xbf16>
    %32 = "graph.add"(%17, %31) : (tensor<bf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %33 = "graph.constant"() <{value = dense<7.968750e-01> : tensor<bf16>}> : () -> tensor<bf16>
    %34 = "graph.mul"(%32, %33) : (tensor<8192x16384xbf16>, tensor<bf16>) -> tensor<8192x16384xbf16>
    %35 = "graph.mul"(%29, %34) : (tensor<8192x16384xbf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %36 = "graph.mul"(%16, %0) : (tensor<bf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %37 = "graph.mul"(%36, %35) : (tensor<8192x16384xbf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %38 = "graph.add"(%27, %37) : (tensor<8192x16384xbf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %39 = "graph.mul"(%13, %38) : (tensor<8192x16384xbf16>, tensor<8192x16384xbf16>) -> tensor<8192x16384xbf16>
    %40 = "graph.transpose"(%arg0) <{perm = [1, 0]}> : (tensor<8192x4096xbf16>) -> tensor<4096x8192xbf16>
    %41 = "graph.matmul"(%40, %39) : (tensor<4096x8192xbf16>, tensor<8192x16384xbf16>) -> tensor<4096x16384xbf16>
    return %41, %15 : tensor<4096x16384xbf16>, tensor<16384x4096xbf16>
  }
}
