// An f16 matmul whose sizes are multiples of nothing (K = 37, N = 45: rows
// that do not start on 4 bytes, copied by plain loads) with a bias + relu
// epilogue still runs on the tensor cores, by both backends.
// REQUIRES: ptxas, llc
// RUN: irc %s --emit=ptx > %t.ptx && FileCheck %s < %t.ptx
// RUN: ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: irc %s --emit=ptx --ptx-backend=llc > %t2.ptx && FileCheck %s < %t2.ptx
// RUN: ptxas -arch=sm_90 %t2.ptx -o %t2.cubin
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-NOT: cp.async.c{{[ag]}}.shared
// CHECK-NOT: .extern

func.func @main(%x: tensor<77x37xf16>, %w: tensor<37x45xf16>, %b: tensor<45xf16>) -> tensor<77x45xf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<77x37xf16>, tensor<37x45xf16>) -> tensor<77x45xf16>
  %1 = "graph.add"(%0, %b) : (tensor<77x45xf16>, tensor<45xf16>) -> tensor<77x45xf16>
  %2 = "graph.relu"(%1) : (tensor<77x45xf16>) -> tensor<77x45xf16>
  return %2 : tensor<77x45xf16>
}
