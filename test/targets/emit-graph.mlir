// --emit lowers a graph-level program with lower-to-gpu first, and writes the
// kernels of every function as one PTX module that ptxas accepts.
// REQUIRES: ptxas, llc
// RUN: irc %s --emit=ptx > %t.native.ptx
// RUN: ptxas -arch=sm_90 %t.native.ptx -o %t.native.cubin
// RUN: irc %s --emit=ptx --ptx-backend=llc > %t.llc.ptx
// RUN: ptxas -arch=sm_90 %t.llc.ptx -o %t.llc.cubin
// RUN: FileCheck %s < %t.native.ptx
// RUN: irc %s --emit=llvm | FileCheck %s --check-prefix=LLVM

// CHECK: .version 7.8
// CHECK: .target sm_90
// CHECK: .entry a_kernel_0
// CHECK: .entry b_kernel_0
// CHECK-NOT: .extern
// LLVM: target triple = "nvptx64-nvidia-cuda"
// LLVM: define {{.*}}void @a_kernel_0(
// LLVM: define {{.*}}void @b_kernel_0(

func.func @a(%x: tensor<64xf32>) -> tensor<64xf32> {
  %0 = "graph.exp"(%x) : (tensor<64xf32>) -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

func.func @b(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %0 = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}
