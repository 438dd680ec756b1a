func.func @main(%x: tensor<?x128xf32, #graph.dims<[s0, 128]>>) -> tensor<?x128xf32, #graph.dims<[s0, 128]>> {
  %0 = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<?x128xf32, #graph.dims<[s0, 128]>>) -> tensor<?x128xf32, #graph.dims<[s0, 128]>>
  %1 = "graph.tanh"(%0) : (tensor<?x128xf32, #graph.dims<[s0, 128]>>) -> tensor<?x128xf32, #graph.dims<[s0, 128]>>
  return %1 : tensor<?x128xf32, #graph.dims<[s0, 128]>>
}
