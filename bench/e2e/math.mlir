func.func @main(%x: tensor<4096x260xf32>) -> (tensor<4096x260xf32>, tensor<4096x260xf32>, tensor<4096x260xf32>) {
  %c = "graph.full"() <{fill = 6.0 : f32}> : () -> tensor<f32>
  %w = "graph.mul"(%x, %c) : (tensor<4096x260xf32>, tensor<f32>) -> tensor<4096x260xf32>
  %0 = "graph.tanh"(%w) : (tensor<4096x260xf32>) -> tensor<4096x260xf32>
  %1 = "graph.erf"(%w) : (tensor<4096x260xf32>) -> tensor<4096x260xf32>
  %2 = "graph.gelu"(%w) : (tensor<4096x260xf32>) -> tensor<4096x260xf32>
  return %0, %1, %2 : tensor<4096x260xf32>, tensor<4096x260xf32>, tensor<4096x260xf32>
}
