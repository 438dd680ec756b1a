func.func @main(%x: tensor<16x24x8xf32>) -> (tensor<8x16xf32>, tensor<24xi64>) {
  %0 = "graph.transpose"(%x) <{perm = [2, 0, 1]}> : (tensor<16x24x8xf32>) -> tensor<8x16x24xf32>
  %1 = "graph.mul"(%0, %0) : (tensor<8x16x24xf32>, tensor<8x16x24xf32>) -> tensor<8x16x24xf32>
  %2 = "graph.reduce_sum"(%1) <{axes = [2], keepdims = false}> : (tensor<8x16x24xf32>) -> tensor<8x16xf32>
  %4 = "graph.reduce_mean"(%x) <{axes = [0, 2], keepdims = false}> : (tensor<16x24x8xf32>) -> tensor<24xf32>
  %5 = "graph.cast"(%4) : (tensor<24xf32>) -> tensor<24xi64>
  return %2, %5 : tensor<8x16xf32>, tensor<24xi64>
}
