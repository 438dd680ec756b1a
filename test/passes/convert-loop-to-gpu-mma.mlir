// A bf16 matmul with a fused bias + gelu + cast epilogue at sizes that are
// not multiples of the 128×128×32 tile (M = 100, K = 40, N = 72) becomes a
// tensor-core kernel (mapping "mma": cp.async, ldmatrix, mma.sync) whose
// interpreted result is the loop level's, bit for bit here; the SIMT
// mapping (tensor-cores=0) too. Its PTX from both backends passes ptxas.
// RUN: irc run %s --random-inputs 3 > %t
// RUN: irc %s --pass-pipeline='builtin.module(lower-to-gpu)' -o %t.gpu.mlir
// RUN: irc run %t.gpu.mlir --random-inputs 3 >> %t
// RUN: irc %s --pass-pipeline='builtin.module(lower-to-loop,convert-loop-to-gpu{tensor-cores=0})' -o %t.simt.mlir
// RUN: irc run %t.simt.mlir --random-inputs 3 >> %t
// RUN: FileCheck %s < %t
// RUN: FileCheck %s --check-prefix=GPU < %t.gpu.mlir
// CHECK:      result 0: shape (100, 72) dtype float32 sum [[S:[^ ]+]] hash [[H:[0-9a-f]+]]
// CHECK-NEXT: result 0: shape (100, 72) dtype float32 sum [[S]] hash [[H]]
// CHECK-NEXT: result 0: shape (100, 72) dtype float32 sum [[S]] hash [[H]]
// GPU: mapping = "mma"
// GPU: gpu.cp_async
// GPU: gpu.ldmatrix
// GPU: gpu.mma_sync
// GPU: gpu.cp_async_wait

func.func @main(%x: tensor<100x40xbf16>, %w: tensor<40x72xbf16>, %b: tensor<72xbf16>) -> tensor<100x72xf32> {
  %0 = "graph.matmul"(%x, %w) : (tensor<100x40xbf16>, tensor<40x72xbf16>) -> tensor<100x72xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<100x72xbf16>, tensor<72xbf16>) -> tensor<100x72xbf16>
  %2 = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<100x72xbf16>) -> tensor<100x72xbf16>
  %3 = "graph.cast"(%2) : (tensor<100x72xbf16>) -> tensor<100x72xf32>
  return %3 : tensor<100x72xf32>
}
