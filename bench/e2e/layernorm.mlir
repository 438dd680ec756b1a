func.func @main(%x: tensor<64x768xf32>, %w: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<64x768xf32> {
  %0 = "graph.layer_norm"(%x, %w, %b) <{axis = 1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<64x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<64x768xf32>
  return %0 : tensor<64x768xf32>
}
