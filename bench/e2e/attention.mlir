func.func @main(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x64x32xf32>, %v: tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32> {
  %0 = "graph.attention"(%q, %k, %v) <{causal = true, scale = 0.17677669 : f32}> : (tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32>
  return %0 : tensor<2x4x64x32xf32>
}
