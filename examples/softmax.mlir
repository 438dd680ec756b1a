// softmax.mlir: a graph-level program, from tensors to fused GPU kernels.
//
//   go run ./tools/irc run examples/softmax.mlir --random-inputs 1                     # reference interpreter
//   go run ./tools/irc run examples/softmax.mlir --random-inputs 1 --backend nvptx     # on an NVIDIA GPU
//   go run ./tools/irc examples/softmax.mlir --emit=ptx                                # the PTX it runs
//
// The leading dimension is symbolic (s0): one compiled kernel serves every
// row count (--shape arg0=1000x4096 picks one for --random-inputs).
func.func @main(%x: tensor<?x4096xf32, #graph.dims<[s0, 4096]>>, %w: tensor<4096xf32>, %b: tensor<4096xf32>)
    -> (tensor<?x4096xf32, #graph.dims<[s0, 4096]>>, tensor<?x4096xf32, #graph.dims<[s0, 4096]>>) {
  %p = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<?x4096xf32, #graph.dims<[s0, 4096]>>) -> tensor<?x4096xf32, #graph.dims<[s0, 4096]>>
  %n = "graph.layer_norm"(%x, %w, %b) <{axis = 1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<?x4096xf32, #graph.dims<[s0, 4096]>>, tensor<4096xf32>, tensor<4096xf32>) -> tensor<?x4096xf32, #graph.dims<[s0, 4096]>>
  return %p, %n : tensor<?x4096xf32, #graph.dims<[s0, 4096]>>, tensor<?x4096xf32, #graph.dims<[s0, 4096]>>
}
