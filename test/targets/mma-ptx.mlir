// A graph-level bf16 matmul with a bias + relu epilogue lowers to PTX with
// tensor-core instructions that ptxas accepts, by both backends.
// REQUIRES: ptxas, llc
// RUN: irc %s --emit=ptx > %t.ptx && FileCheck %s < %t.ptx
// RUN: ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: irc %s --emit=ptx --ptx-backend=llc > %t2.ptx && FileCheck %s < %t2.ptx
// RUN: ptxas -arch=sm_90 %t2.ptx -o %t2.cubin
// CHECK: cp.async.cg.shared.global
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: .extern

func.func @main(%x: tensor<200x64xbf16>, %w: tensor<64x136xbf16>, %b: tensor<136xbf16>) -> tensor<200x136xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<200x64xbf16>, tensor<64x136xbf16>) -> tensor<200x136xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<200x136xbf16>, tensor<136xbf16>) -> tensor<200x136xbf16>
  %2 = "graph.relu"(%1) : (tensor<200x136xbf16>) -> tensor<200x136xbf16>
  return %2 : tensor<200x136xbf16>
}
