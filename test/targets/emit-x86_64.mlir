// irc --emit=llvm --target=x86_64 lowers a graph-level program with
// lower-to-loop and writes the host kernels of every function
// (docs/cpu-backend.md): one C-ABI function per loop.parallel nest taking
// its buffers, sizes and a [lo, hi) range, a _packed entry reading them
// from an array of words, vectorization hints on inner loops, reassociable
// reductions, and for a matmul a packing kernel and a register-blocked
// kernel on vectors. llc compiles it to an object for the host.
// RUN: irc %s --emit=llvm --target=x86_64 > %t.ll
// RUN: FileCheck %s < %t.ll
// RUN: llc -O3 -mtriple=x86_64-pc-linux-gnu -filetype=obj %t.ll -o %t.o
// RUN: not irc %s --emit=ptx --target=x86_64 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: not irc %s --emit=llvm --target=arm64 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: sed 's|return %%s : f32|%%e = math.exp %%s : f32\n  return %%e : f32|' %s | not irc - --emit=llvm --target=x86_64 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: target triple = "x86_64-pc-linux-gnu"
// CHECK-LABEL: define void @softmax_kernel_0(i64 %a0, float* noalias %a1, i64 %a1_d0, float* noalias %a2, i64 %a2_d0, i64 %lo, i64 %hi)
// CHECK: call float @llvm.maximum.f32(
// CHECK: fadd reassoc contract float
// CHECK: fdiv arcp float
// CHECK: !llvm.loop
// CHECK-LABEL: define void @softmax_kernel_0_packed(i64* %args, i64 %lo, i64 %hi)
// CHECK: inttoptr i64 {{.*}} to float*
// CHECK-LABEL: define void @mm_kernel_0(float* noalias %scratch, i64 %group, i64 %kc, float* noalias %a0, float* noalias %a1, float* noalias %a2, float* noalias %a3, i64 %lo, i64 %hi)
// CHECK: call <{{[0-9]+}} x float> @llvm.fmuladd.v{{[0-9]+}}f32(
// CHECK-LABEL: define void @mm_kernel_0_pack(
// CHECK: !{!"llvm.loop.vectorize.enable", i1 true}

// PTX: --emit=ptx is for --target=nvptx64
// TARGET: unknown --target "arm64" (want nvptx64 or x86_64)
// BAD: <stdin>:{{[0-9]+}}:8: error: 'math.exp' is not supported at the top level of a function by the cpu target

func.func @softmax(%x: tensor<?x64xf32, #graph.dims<[s0, 64]>>) -> tensor<?x64xf32, #graph.dims<[s0, 64]>> {
  %0 = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<?x64xf32, #graph.dims<[s0, 64]>>) -> tensor<?x64xf32, #graph.dims<[s0, 64]>>
  return %0 : tensor<?x64xf32, #graph.dims<[s0, 64]>>
}

func.func @mm(%a: tensor<20x30xf32>, %b: tensor<30x40xf32>, %c: tensor<40xf32>) -> tensor<20x40xf32> {
  %0 = "graph.matmul"(%a, %b) : (tensor<20x30xf32>, tensor<30x40xf32>) -> tensor<20x40xf32>
  %1 = "graph.add"(%0, %c) : (tensor<20x40xf32>, tensor<40xf32>) -> tensor<20x40xf32>
  return %1 : tensor<20x40xf32>
}

// A scalar function has no kernel and translates to nothing; with math on
// its scalars at the top level it is refused with the op's location.
func.func @scalar(%s: f32) -> f32 {
  return %s : f32
}
