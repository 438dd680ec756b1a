func.func @main(%x: tensor<1024x300xf64>) -> (tensor<1024x300xf64>, tensor<1024x300xf64>, tensor<1024x300xf64>, tensor<1024x300xf64>, tensor<1024x300xf64>, tensor<1024x300xf32>) {
  %c = "graph.full"() <{fill = 6.0 : f64}> : () -> tensor<f64>
  %w = "graph.mul"(%x, %c) : (tensor<1024x300xf64>, tensor<f64>) -> tensor<1024x300xf64>
  %k = "graph.full"() <{fill = 1000.0 : f64}> : () -> tensor<f64>
  %big = "graph.mul"(%x, %k) : (tensor<1024x300xf64>, tensor<f64>) -> tensor<1024x300xf64>
  %0 = "graph.softmax"(%w) <{axis = 1 : i64}> : (tensor<1024x300xf64>) -> tensor<1024x300xf64>
  %1 = "graph.tanh"(%w) : (tensor<1024x300xf64>) -> tensor<1024x300xf64>
  %2 = "graph.erf"(%w) : (tensor<1024x300xf64>) -> tensor<1024x300xf64>
  %3 = "graph.sin"(%big) : (tensor<1024x300xf64>) -> tensor<1024x300xf64>
  %a = "graph.abs"(%w) : (tensor<1024x300xf64>) -> tensor<1024x300xf64>
  %4 = "graph.pow"(%a, %x) : (tensor<1024x300xf64>, tensor<1024x300xf64>) -> tensor<1024x300xf64>
  %a32 = "graph.cast"(%a) : (tensor<1024x300xf64>) -> tensor<1024x300xf32>
  %x32 = "graph.cast"(%x) : (tensor<1024x300xf64>) -> tensor<1024x300xf32>
  %5 = "graph.pow"(%a32, %x32) : (tensor<1024x300xf32>, tensor<1024x300xf32>) -> tensor<1024x300xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<1024x300xf64>, tensor<1024x300xf64>, tensor<1024x300xf64>, tensor<1024x300xf64>, tensor<1024x300xf64>, tensor<1024x300xf32>
}
