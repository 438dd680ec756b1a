func.func @main(%x: tensor<32x64xf32>, %w1: tensor<64x128xf32>, %b1: tensor<128xf32>, %w2: tensor<128x16xf32>) -> tensor<32x16xf32> {
  %0 = "graph.matmul"(%x, %w1) : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
  %1 = "graph.add"(%0, %b1) : (tensor<32x128xf32>, tensor<128xf32>) -> tensor<32x128xf32>
  %2 = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<32x128xf32>) -> tensor<32x128xf32>
  %3 = "graph.matmul"(%2, %w2) : (tensor<32x128xf32>, tensor<128x16xf32>) -> tensor<32x16xf32>
  return %3 : tensor<32x16xf32>
}
