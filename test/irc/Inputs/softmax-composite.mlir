func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
