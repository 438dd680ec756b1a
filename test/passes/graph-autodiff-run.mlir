// @f_grad computes what the hand-written VJP @expected computes, bit for
// bit: the same f64 ops in the same order, on the same random inputs (the
// arguments of both are x, w and a cotangent of f's result).
// RUN: irc run %s --func f_grad --random-inputs 7 --pass-pipeline='builtin.module(graph-autodiff{func=f})' > %t.grad
// RUN: irc run %s --func expected --random-inputs 7 > %t.expected
// RUN: diff %t.grad %t.expected
// The gradient also survives the usual clean-up pipeline.
// RUN: irc run %s --func f_grad --random-inputs 7 --pass-pipeline='builtin.module(graph-autodiff{func=f},func.func(canonicalize,cse))' > %t.clean
// RUN: diff %t.clean %t.expected
func.func @f(%x: tensor<4x3xf64>, %w: tensor<3x5xf64>) -> tensor<4x5xf64> {
  %0 = "graph.matmul"(%x, %w) : (tensor<4x3xf64>, tensor<3x5xf64>) -> tensor<4x5xf64>
  %1 = "graph.tanh"(%0) : (tensor<4x5xf64>) -> tensor<4x5xf64>
  return %1 : tensor<4x5xf64>
}
func.func @expected(%x: tensor<4x3xf64>, %w: tensor<3x5xf64>, %ct: tensor<4x5xf64>) -> (tensor<4x3xf64>, tensor<3x5xf64>) {
  %0 = "graph.matmul"(%x, %w) : (tensor<4x3xf64>, tensor<3x5xf64>) -> tensor<4x5xf64>
  %y = "graph.tanh"(%0) : (tensor<4x5xf64>) -> tensor<4x5xf64>
  %one = "graph.constant"() <{value = dense<1.0> : tensor<f64>}> : () -> tensor<f64>
  %yy = "graph.mul"(%y, %y) : (tensor<4x5xf64>, tensor<4x5xf64>) -> tensor<4x5xf64>
  %s = "graph.sub"(%one, %yy) : (tensor<f64>, tensor<4x5xf64>) -> tensor<4x5xf64>
  %d = "graph.mul"(%ct, %s) : (tensor<4x5xf64>, tensor<4x5xf64>) -> tensor<4x5xf64>
  %wt = "graph.transpose"(%w) <{perm = [1, 0]}> : (tensor<3x5xf64>) -> tensor<5x3xf64>
  %gx = "graph.matmul"(%d, %wt) : (tensor<4x5xf64>, tensor<5x3xf64>) -> tensor<4x3xf64>
  %xt = "graph.transpose"(%x) <{perm = [1, 0]}> : (tensor<4x3xf64>) -> tensor<3x4xf64>
  %gw = "graph.matmul"(%xt, %d) : (tensor<3x4xf64>, tensor<4x5xf64>) -> tensor<3x5xf64>
  return %gx, %gw : tensor<4x3xf64>, tensor<3x5xf64>
}
