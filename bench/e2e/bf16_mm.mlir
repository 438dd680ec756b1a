func.func @main(%x: tensor<100x40xbf16>, %w: tensor<40x72xbf16>, %b: tensor<72xbf16>) -> tensor<100x72xf32> {
  %0 = "graph.matmul"(%x, %w) : (tensor<100x40xbf16>, tensor<40x72xbf16>) -> tensor<100x72xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<100x72xbf16>, tensor<72xbf16>) -> tensor<100x72xbf16>
  %2 = "graph.relu"(%1) : (tensor<100x72xbf16>) -> tensor<100x72xbf16>
  %3 = "graph.cast"(%2) : (tensor<100x72xbf16>) -> tensor<100x72xf32>
  return %3 : tensor<100x72xf32>
}
