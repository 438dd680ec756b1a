// lower-to-loop computes what the graph program computes: irc run prints
// each result's shape, dtype, sum and a hash of its bytes, and the loops
// reproduce every graph rule bit for bit (f32 accumulation for bf16).
// RUN: irc run %s --random-inputs 7 > %t.graph
// RUN: irc run %s --random-inputs 7 --pass-pipeline=lower-to-loop > %t.loop
// RUN: diff %t.graph %t.loop
// RUN: irc %s --pass-pipeline=lower-to-loop | FileCheck %s
// CHECK-NOT: graph.
// CHECK-NOT: tensor<
// CHECK: func.func @main(
func.func @main(%x: tensor<4x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>,
                %a: tensor<4x16xbf16>, %m: tensor<16x8xbf16>, %bias: tensor<8xbf16>,
                %q: tensor<2x5x8xf32>, %i: tensor<4x16xi32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<2x5x8xf32>,
        tensor<16xf32>, tensor<4xi64>, tensor<4x16xi32>, tensor<4x16xf16>, tensor<4x1xf32>) {
  %sm = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %ln = "graph.layer_norm"(%x, %w, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %mm = "graph.matmul"(%a, %m) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %mb = "graph.add"(%mm, %bias) : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %mg = "graph.gelu"(%mb) <{approximate = "tanh"}> : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %mf = "graph.cast"(%mg) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %at = "graph.attention"(%q, %q, %q) <{causal = true}> : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %t = "graph.transpose"(%x) <{perm = [1, 0]}> : (tensor<4x16xf32>) -> tensor<16x4xf32>
  %sq = "graph.mul"(%t, %t) : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  %rs = "graph.reduce_sum"(%sq) <{axes = [1], keepdims = false}> : (tensor<16x4xf32>) -> tensor<16xf32>
  %am = "graph.argmax"(%x) <{axis = 1 : i64, keepdims = false}> : (tensor<4x16xf32>) -> tensor<4xi64>
  %s100 = "graph.full"() <{fill = 3.0e+09 : f32}> : () -> tensor<f32>
  %big = "graph.mul"(%x, %s100) : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %c8 = "graph.cast"(%big) : (tensor<4x16xf32>) -> tensor<4x16xi32>
  %ci = "graph.cast"(%i) : (tensor<4x16xi32>) -> tensor<4x16xf16>
  %dv = "graph.div"(%i, %i) : (tensor<4x16xi32>, tensor<4x16xi32>) -> tensor<4x16xi32>
  %cd = "graph.cast"(%dv) : (tensor<4x16xi32>) -> tensor<4x16xf16>
  %cs = "graph.add"(%ci, %cd) : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  %mx = "graph.reduce_max"(%x) <{axes = [1], keepdims = true}> : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %mn = "graph.reduce_mean"(%x) <{axes = [1], keepdims = true}> : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %mm2 = "graph.sub"(%mx, %mn) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  return %sm, %ln, %mf, %at, %rs, %am, %c8, %cs, %mm2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<2x5x8xf32>, tensor<16xf32>, tensor<4xi64>, tensor<4x16xi32>, tensor<4x16xf16>, tensor<4x1xf32>
}
