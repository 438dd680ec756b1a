func.func @main(%x: tensor<100003xf32>, %a: tensor<100003xf32>, %b: tensor<100003xf32>) -> tensor<100003xf32> {
  %0 = "graph.mul"(%x, %a) : (tensor<100003xf32>, tensor<100003xf32>) -> tensor<100003xf32>
  %1 = "graph.add"(%0, %b) : (tensor<100003xf32>, tensor<100003xf32>) -> tensor<100003xf32>
  %2 = "graph.relu"(%1) : (tensor<100003xf32>) -> tensor<100003xf32>
  %3 = "graph.sigmoid"(%x) : (tensor<100003xf32>) -> tensor<100003xf32>
  %4 = "graph.mul"(%2, %3) : (tensor<100003xf32>, tensor<100003xf32>) -> tensor<100003xf32>
  return %4 : tensor<100003xf32>
}
