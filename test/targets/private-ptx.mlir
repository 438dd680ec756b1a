// RUN: irc --emit=llvm %s | FileCheck %s --check-prefix=LLVM
// RUN: irc --emit=ptx --ptx-backend=llc %s > %t.ptx && ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: not irc --emit=ptx %s 2>&1 | FileCheck %s --check-prefix=NATIVE
// RUN: irc --print-op-generic %s | mlir-opt --allow-unregistered-dialect --mlir-print-op-generic > /dev/null
// REQUIRES: ptxas, llc

// A private attribution is a per-thread array on the stack (PTX local
// memory), addressed as addrspace(5), its memref's memory space. The
// native PTX backend has no stack yet and says so.

// LLVM: define void @rev(float addrspace(1)* %arg0, float addrspace(1)* %arg1)
// LLVM-NEXT: entry:
// LLVM-NEXT: %0 = alloca [4 x float], align 16
// LLVM: addrspacecast float* %{{.*}} to float addrspace(5)*
// LLVM: store float %{{.*}}, float addrspace(5)* %{{.*}}
// LLVM: load float, float addrspace(5)* %{{.*}}

// PTX: .local .align 16 .b8 __local_depot0[16];
// PTX: st.local.f32
// PTX: ld.local.f32

// NATIVE: error: native PTX backend: kernel @rev: {{.*}} alloca {{.*}} not supported by the native PTX backend

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @rev(%in: memref<?xf32>, %out: memref<?xf32>) private(%tmp : memref<4xf32, 5>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %base = arith.muli %tid, %c4 : index
      "loop.for"(%c0, %c4, %c1) ({
      ^bb0(%i: index):
        %j = arith.addi %base, %i : index
        %x = loop.load %in[%j] : memref<?xf32>
        loop.store %x, %tmp[%i] : memref<4xf32, 5>
        loop.yield
      }) : (index, index, index) -> ()
      "loop.for"(%c0, %c4, %c1) ({
      ^bb0(%i: index):
        %r = arith.subi %c3, %i : index
        %x = loop.load %tmp[%r] : memref<4xf32, 5>
        %j = arith.addi %base, %i : index
        loop.store %x, %out[%j] : memref<?xf32>
        loop.yield
      }) : (index, index, index) -> ()
      gpu.return
    }
  }
}
