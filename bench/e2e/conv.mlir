func.func @main(%x: tensor<8x32x28x28xf32>, %w1: tensor<64x32x3x3xf32>, %b1: tensor<64xf32>, %w2: tensor<64x16x3x3xf32>) -> tensor<8x64x14x14xf32> {
  %0 = "graph.conv2d"(%x, %w1, %b1) <{padding = [1, 1]}> : (tensor<8x32x28x28xf32>, tensor<64x32x3x3xf32>, tensor<64xf32>) -> tensor<8x64x28x28xf32>
  %1 = "graph.relu"(%0) : (tensor<8x64x28x28xf32>) -> tensor<8x64x28x28xf32>
  %2 = "graph.conv2d"(%1, %w2) <{padding = [0, 0, 1, 1], strides = [2, 2], dilations = [1, 1], groups = 4 : i64}> : (tensor<8x64x28x28xf32>, tensor<64x16x3x3xf32>) -> tensor<8x64x14x14xf32>
  return %2 : tensor<8x64x14x14xf32>
}
