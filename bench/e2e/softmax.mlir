func.func @main(%x: tensor<37x1000xf32>) -> tensor<37x1000xf32> {
  %0 = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<37x1000xf32>) -> tensor<37x1000xf32>
  return %0 : tensor<37x1000xf32>
}
