// RUN: irc %s --pass-pipeline='builtin.module(func.func(graph-decompose))' | FileCheck %s
// RUN: irc %s --pass-pipeline='builtin.module(func.func(graph-decompose))' | FileCheck %s --check-prefix=NONE

// No composite survives.
// NONE-NOT: graph.softmax
// NONE-NOT: graph.log_softmax
// NONE-NOT: graph.layer_norm
// NONE-NOT: graph.rms_norm
// NONE-NOT: graph.attention

// Softmax subtracts the maximum before exponentiating.
// CHECK-LABEL: func.func @softmax(
// CHECK:         %[[M:.*]] = "graph.reduce_max"(%arg0) <{axes = [1], keepdims = true}>
// CHECK-NEXT:    %[[D:.*]] = "graph.sub"(%arg0, %[[M]])
// CHECK-NEXT:    %[[E:.*]] = "graph.exp"(%[[D]])
// CHECK-NEXT:    %[[S:.*]] = "graph.reduce_sum"(%[[E]]) <{axes = [1], keepdims = true}>
// CHECK-NEXT:    %[[R:.*]] = "graph.div"(%[[E]], %[[S]])
// CHECK-NEXT:    return %[[R]]
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @log_softmax(
// CHECK:         %[[M:.*]] = "graph.reduce_max"(%arg0) <{axes = [0], keepdims = true}>
// CHECK-NEXT:    %[[D:.*]] = "graph.sub"(%arg0, %[[M]])
// CHECK-NEXT:    %[[E:.*]] = "graph.exp"(%[[D]])
// CHECK-NEXT:    %[[S:.*]] = "graph.reduce_sum"(%[[E]]) <{axes = [0], keepdims = true}>
// CHECK-NEXT:    %[[L:.*]] = "graph.log"(%[[S]])
// CHECK-NEXT:    %[[R:.*]] = "graph.sub"(%[[D]], %[[L]])
// CHECK-NEXT:    return %[[R]]
func.func @log_softmax(%x: tensor<2x8xf64>) -> tensor<2x8xf64> {
  %0 = "graph.log_softmax"(%x) <{axis = 0 : i64}> : (tensor<2x8xf64>) -> tensor<2x8xf64>
  return %0 : tensor<2x8xf64>
}

// Two passes: the variance is the mean of the centred squares. A bf16
// layer_norm computes in f32 between casts, as PyTorch does: x, w and b are
// widened, epsilon becomes a rank-0 f32 constant, and the result is rounded
// to bf16 once.
// CHECK-LABEL: func.func @layer_norm(
// CHECK:         %[[X:.*]] = "graph.cast"(%arg0) : (tensor<2x3x4xbf16>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[WF:.*]] = "graph.cast"(%arg1) : (tensor<3x4xbf16>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[MEAN:.*]] = "graph.reduce_mean"(%[[X]]) <{axes = [1, 2], keepdims = true}>
// CHECK-NEXT:    %[[C:.*]] = "graph.sub"(%[[X]], %[[MEAN]])
// CHECK-NEXT:    %[[SQ:.*]] = "graph.mul"(%[[C]], %[[C]])
// CHECK-NEXT:    %[[VAR:.*]] = "graph.reduce_mean"(%[[SQ]]) <{axes = [1, 2], keepdims = true}>
// CHECK-NEXT:    %[[EPS:.*]] = "graph.constant"() <{value = dense<{{.*}}> : tensor<f32>}>
// CHECK-NEXT:    %[[VE:.*]] = "graph.add"(%[[VAR]], %[[EPS]])
// CHECK-NEXT:    %[[SD:.*]] = "graph.sqrt"(%[[VE]])
// CHECK-NEXT:    %[[INV:.*]] = "graph.reciprocal"(%[[SD]])
// CHECK-NEXT:    %[[N:.*]] = "graph.mul"(%[[C]], %[[INV]])
// CHECK-NEXT:    %[[W:.*]] = "graph.mul"(%[[N]], %[[WF]]) : (tensor<2x3x4xf32>, tensor<3x4xf32>)
// CHECK-NEXT:    %[[BF:.*]] = "graph.cast"(%arg2) : (tensor<3x4xbf16>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[B:.*]] = "graph.add"(%[[W]], %[[BF]])
// CHECK-NEXT:    %[[R:.*]] = "graph.cast"(%[[B]]) : (tensor<2x3x4xf32>) -> tensor<2x3x4xbf16>
// CHECK-NEXT:    return %[[R]]
func.func @layer_norm(%x: tensor<2x3x4xbf16>, %w: tensor<3x4xbf16>, %b: tensor<3x4xbf16>) -> tensor<2x3x4xbf16> {
  %0 = "graph.layer_norm"(%x, %w, %b) <{axis = 1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<2x3x4xbf16>, tensor<3x4xbf16>, tensor<3x4xbf16>) -> tensor<2x3x4xbf16>
  return %0 : tensor<2x3x4xbf16>
}

// CHECK-LABEL: func.func @rms_norm(
// CHECK:         %[[SQ:.*]] = "graph.mul"(%arg0, %arg0)
// CHECK-NEXT:    %[[MS:.*]] = "graph.reduce_mean"(%[[SQ]]) <{axes = [1], keepdims = true}>
// CHECK-NEXT:    %[[EPS:.*]] = "graph.constant"() <{value = dense<9.99999997E-7> : tensor<f32>}>
// CHECK-NEXT:    %[[VE:.*]] = "graph.add"(%[[MS]], %[[EPS]])
// CHECK-NEXT:    %[[SD:.*]] = "graph.sqrt"(%[[VE]])
// CHECK-NEXT:    %[[INV:.*]] = "graph.reciprocal"(%[[SD]])
// CHECK-NEXT:    %[[N:.*]] = "graph.mul"(%arg0, %[[INV]])
// CHECK-NEXT:    %[[R:.*]] = "graph.mul"(%[[N]], %arg1)
// CHECK-NEXT:    return %[[R]]
func.func @rms_norm(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = "graph.rms_norm"(%x, %w) <{axis = -1 : i64, epsilon = 1.0e-06 : f32}> : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// Attention: q·kᵀ, the default scale 1/√8, the causal mask from two iotas,
// softmax along the last axis, then ·v.
// CHECK-LABEL: func.func @attention(
// CHECK:         %[[KT:.*]] = "graph.transpose"(%arg1) <{perm = [0, 2, 1]}> : (tensor<2x6x8xf32>) -> tensor<2x8x6xf32>
// CHECK-NEXT:    %[[QK:.*]] = "graph.matmul"(%arg0, %[[KT]]) : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT:    %[[SC:.*]] = "graph.constant"() <{value = dense<0.353553385> : tensor<f32>}>
// CHECK-NEXT:    %[[S:.*]] = "graph.mul"(%[[QK]], %[[SC]])
// CHECK-NEXT:    %[[ROW:.*]] = "graph.iota"() <{axis = 0 : i64}> : () -> tensor<4x6xi64>
// CHECK-NEXT:    %[[COL:.*]] = "graph.iota"() <{axis = 1 : i64}> : () -> tensor<4x6xi64>
// CHECK-NEXT:    %[[KEEP:.*]] = "graph.cmp"(%[[COL]], %[[ROW]]) <{predicate = "le"}>
// CHECK-NEXT:    %[[NINF:.*]] = "graph.constant"() <{value = dense<0xFF800000> : tensor<f32>}>
// CHECK-NEXT:    %[[MASKED:.*]] = "graph.select"(%[[KEEP]], %[[S]], %[[NINF]])
// CHECK-NEXT:    "graph.reduce_max"(%[[MASKED]]) <{axes = [-1], keepdims = true}>
// CHECK:         %[[P:.*]] = "graph.div"
// CHECK-NEXT:    %[[O:.*]] = "graph.matmul"(%[[P]], %arg2) : (tensor<2x4x6xf32>, tensor<2x6x3xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    return %[[O]]
func.func @attention(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x3xf32>) -> tensor<2x4x3xf32> {
  %0 = "graph.attention"(%q, %k, %v) <{causal = true}> : (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x3xf32>) -> tensor<2x4x3xf32>
  return %0 : tensor<2x4x3xf32>
}

// An i1 mask selects -inf where it is false; a float mask is added. In f16
// the scores are the product of q and k widened to f32 (never rounded to
// f16) and the probabilities rounded to f16 before ·v.
// CHECK-LABEL: func.func @masked(
// CHECK:         %[[WQ:.*]] = "graph.cast"(%arg0) : (tensor<4x2xf16>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[WK:.*]] = "graph.cast"(%arg1) : (tensor<4x2xf16>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[KT:.*]] = "graph.transpose"(%[[WK]]) <{perm = [1, 0]}>
// CHECK-NEXT:    %[[S:.*]] = "graph.matmul"(%[[WQ]], %[[KT]]) : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
// CHECK:         %[[NINF:.*]] = "graph.constant"() <{value = dense<0xFF800000> : tensor<f32>}>
// CHECK-NEXT:    "graph.select"(%arg3, %{{.*}}, %[[NINF]])
// CHECK:         %[[P:.*]] = "graph.div"
// CHECK-NEXT:    %[[PH:.*]] = "graph.cast"(%[[P]]) : (tensor<4x4xf32>) -> tensor<4x4xf16>
// CHECK-NEXT:    "graph.matmul"(%[[PH]], %arg2) : (tensor<4x4xf16>, tensor<4x2xf16>)
// CHECK:         %[[A:.*]] = "graph.cast"(%arg4) : (tensor<4x4xf16>) -> tensor<4x4xf32>
// CHECK-NEXT:    "graph.add"(%{{.*}}, %[[A]]) : (tensor<4x4xf32>, tensor<4x4xf32>)
func.func @masked(%q: tensor<4x2xf16>, %k: tensor<4x2xf16>, %v: tensor<4x2xf16>, %m: tensor<4x4xi1>, %a: tensor<4x4xf16>) -> (tensor<4x2xf16>, tensor<4x2xf16>) {
  %0 = "graph.attention"(%q, %k, %v, %m) <{scale = 5.0e-01 : f32}> : (tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xi1>) -> tensor<4x2xf16>
  %1 = "graph.attention"(%q, %k, %v, %a) : (tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x2xf16>, tensor<4x4xf16>) -> tensor<4x2xf16>
  return %0, %1 : tensor<4x2xf16>, tensor<4x2xf16>
}
