func.func @main(%x: tensor<300x24xf32>) -> tensor<300x24xf32> {
  %0 = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<300x24xf32>) -> tensor<300x24xf32>
  return %0 : tensor<300x24xf32>
}
