func.func @main(%x: tensor<129x3001xf32>) -> (tensor<129xf32>, tensor<129xf32>) {
  %0 = "graph.reduce_sum"(%x) <{axes = [1], keepdims = false}> : (tensor<129x3001xf32>) -> tensor<129xf32>
  %1 = "graph.reduce_max"(%x) <{axes = [1], keepdims = false}> : (tensor<129x3001xf32>) -> tensor<129xf32>
  return %0, %1 : tensor<129xf32>, tensor<129xf32>
}
