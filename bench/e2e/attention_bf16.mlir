func.func @main(%q: tensor<2x4x64x32xbf16>, %k: tensor<2x4x64x32xbf16>, %v: tensor<2x4x64x32xbf16>) -> tensor<2x4x64x32xf32> {
  %0 = "graph.attention"(%q, %k, %v) <{causal = false, scale = 0.17677669 : f32}> : (tensor<2x4x64x32xbf16>, tensor<2x4x64x32xbf16>, tensor<2x4x64x32xbf16>) -> tensor<2x4x64x32xbf16>
  %1 = "graph.cast"(%0) : (tensor<2x4x64x32xbf16>) -> tensor<2x4x64x32xf32>
  return %1 : tensor<2x4x64x32xf32>
}
