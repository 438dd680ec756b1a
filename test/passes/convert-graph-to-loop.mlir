// RUN: irc %s --pass-pipeline='builtin.module(func.func(graph-decompose,graph-fuse),convert-graph-to-loop)' | FileCheck %s

// A pointwise chain is one loop.parallel over the output; the broadcast
// operand is read at the remapped index and the result buffer is returned.
// CHECK-LABEL: func.func @chain(%arg0: memref<4x8xf32>, %arg1: memref<8xf32>) -> memref<4x8xf32>
// CHECK:         %[[OUT:.*]] = loop.alloc() : memref<4x8xf32>
// CHECK:         "loop.parallel"
// CHECK-NEXT:    ^bb0(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK:           loop.load %arg0[%[[I]], %[[J]]]
// CHECK:           math.exp
// CHECK:           loop.load %arg1[%[[J]]]
// CHECK:           arith.addf
// CHECK:           arith.negf
// CHECK:           loop.store {{.*}}, %[[OUT]][%[[I]], %[[J]]]
// CHECK-NOT:     loop.parallel
// CHECK:         return %[[OUT]]
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "graph.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "graph.add"(%0, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "graph.neg"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// Softmax is one persistent-row kernel: a parallel over the rows with a max
// pass, an exp-sum pass and a write pass.
// CHECK-LABEL: func.func @softmax(
// CHECK:         "loop.parallel"
// CHECK:           %[[MAX:.*]] = "loop.for"
// CHECK:             arith.cmpf ogt
// CHECK:           %[[SUM:.*]] = "loop.for"
// CHECK:             arith.subf %{{.*}}, %[[MAX]]
// CHECK:             math.exp
// CHECK:           "loop.for"
// CHECK:             arith.divf %{{.*}}, %[[SUM]]
// CHECK:             loop.store
// CHECK-NOT:     loop.parallel
// CHECK:         return
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// A bf16 matmul accumulates in f32 over K; the epilogue applies to the
// rounded product before the one store.
// CHECK-LABEL: func.func @matmul(
// CHECK:         "loop.parallel"
// CHECK:           %[[ACC:.*]] = "loop.for"
// CHECK:             arith.extf {{.*}} : bf16 to f32
// CHECK:             arith.mulf {{.*}} : f32
// CHECK:             arith.addf {{.*}} : f32
// CHECK:           arith.truncf %[[ACC]] : f32 to bf16
// CHECK:           math.tanh
// CHECK:           loop.store
// CHECK-NOT:     loop.parallel
// CHECK:         return
func.func @matmul(%a: tensor<4x16xbf16>, %b: tensor<16x8xbf16>) -> tensor<4x8xbf16> {
  %0 = "graph.matmul"(%a, %b) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %1 = "graph.tanh"(%0) : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %1 : tensor<4x8xbf16>
}

// Integer division guards x / 0 and MIN / -1 before arith.divsi.
// CHECK-LABEL: func.func @div(
// CHECK:         arith.cmpi eq
// CHECK:         arith.divsi
// CHECK:         arith.select
func.func @div(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "graph.div"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// No graph op and no tensor is left.
// CHECK-NOT: graph.
// CHECK-NOT: tensor<
