// RUN: irc %s --pass-pipeline=lower-to-loop --print-memory-plan 2>&1 | FileCheck %s

// Three kernels in a chain: the first intermediate is dead when the third
// kernel allocates, so the third reuses its buffer; intermediates are freed
// after their last use, the result is returned.
// CHECK:      memory plan of @main:
// CHECK-NEXT:   buffer 0: memref<64x64xf32>, 16384 bytes, live ops {{[0-9]+}}..{{[0-9]+}}, slot 0
// CHECK-NEXT:   buffer 1: memref<64x64xf32>, 16384 bytes, live ops {{[0-9]+}}..{{[0-9]+}}, slot 1
// CHECK-NEXT:   buffer 2: memref<64x64xf32>, 16384 bytes, live ops {{[0-9]+}}..{{[0-9]+}}, slot 0
// CHECK-NEXT:   buffer 3: memref<64x64xf32>, 16384 bytes, live ops {{[0-9]+}}..end (escapes), slot 3
// CHECK-NEXT:   peak: 32768 bytes without reuse, 32768 bytes with reuse
// CHECK:      func.func @main
// CHECK:        loop.dealloc
// CHECK:        return
func.func @main(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = "graph.matmul"(%x, %x) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = "graph.matmul"(%0, %x) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %2 = "graph.matmul"(%1, %x) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %3 = "graph.matmul"(%2, %x) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %3 : tensor<64x64xf32>
}
